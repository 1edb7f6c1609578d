// RUN: tgc-opt %s --split-input-file --verify-diagnostics

// The verifiers of the collectives: a world size of at least 1, and a
// leading dimension that the world size divides (tg-data-parallel pads
// what it splits to a multiple first).

func.func @no_ranks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs a world size of at least 1, found 0}}
  %0 = tg.all_reduce sum %x {world_size = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @indivisible(%x: tensor<10xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{leading dimension 10 is not divisible by the world size 3 (pad it to a multiple first)}}
  %0 = tg.reduce_scatter mean %x {world_size = 3 : i64} : tensor<10xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @wrong_part(%x: tensor<12xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{leading dimension of 'tensor<6xf32>' must be 12 / 3 = 4}}
  %0 = tg.shard %x {world_size = 3 : i64} : tensor<12xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @gather_shape(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{operand and result must have the same rank (at least 1) and agree after the leading dimension}}
  %0 = tg.all_gather %x {world_size = 2 : i64} : tensor<2x3xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @gather_type(%x: tensor<2xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{operand and result element types differ}}
  %0 = tg.all_gather %x {world_size = 2 : i64} : tensor<2xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @scalar_scatter(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{operand and result must have the same rank (at least 1)}}
  %0 = tg.reduce_scatter sum %x {world_size = 1 : i64} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @bad_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected}}
  %0 = tg.all_reduce product %x {world_size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tg.data_parallel' must be {mode = "ddp" | "zero1" | "zero2" | "zero3", world_size = N (>= 1)[, shard_group = K (a ZeRO mode, K dividing N)]}}}
func.func @bad_mode() attributes {tg.train_step, tg.data_parallel = {mode = "zero4", world_size = 2 : i64}} {
  return
}

// -----

// A shard group must divide the job.
// expected-error @+1 {{'tg.data_parallel' must be}}
func.func @bad_shard_group() attributes {tg.train_step, tg.data_parallel = {mode = "zero3", shard_group = 3 : i64, world_size = 4 : i64}} {
  return
}

// -----

// ddp splits nothing, so it has no shard group.
// expected-error @+1 {{'tg.data_parallel' must be}}
func.func @ddp_shard_group() attributes {tg.train_step, tg.data_parallel = {mode = "ddp", shard_group = 2 : i64, world_size = 4 : i64}} {
  return
}

// -----

func.func @no_stride(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs a rank stride of at least 1, found 0}}
  %0 = tg.all_reduce sum %x {rank_stride = 0 : i64, world_size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tg.shard_of' is only valid on a 1-D parameter or state ('tg.param', 'tg.state')}}
func.func @shard_of_param(%w: tensor<2x2xf32> {tg.param = "w", tg.shard_of = array<i64: 4, 2>}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}
