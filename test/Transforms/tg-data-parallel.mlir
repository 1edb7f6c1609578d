// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-data-parallel="mode=ddp world-size=2" | FileCheck %s --check-prefix=DDP
// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-data-parallel="mode=ddp world-size=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=SMALL
// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-data-parallel="mode=zero1 world-size=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=ZERO1
// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-data-parallel="mode=zero2 world-size=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=ZERO2
// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-data-parallel="mode=zero2 world-size=2" | FileCheck %s --check-prefix=PACKED
// RUN: tgc-opt %s --split-input-file --tg-optimizer --tg-quantize-optimizer-state="block-size=4 min-size=1" --tg-data-parallel="mode=zero1 world-size=2" | FileCheck %s --check-prefix=Q8
// RUN: tgc-opt %s --split-input-file --tg-optimizer="clip-grad-norm=1.0" --tg-loss-scale="mode=dynamic" --tg-data-parallel="mode=zero2 world-size=2" | FileCheck %s --check-prefix=SCALED

// A gradient step as tg-autodiff leaves it: dv is complete early in the
// backward pass, dw at its end.
func.func @net_train_step(%x: tensor<4x3xf32> {tg.input = "x"},
                          %w: tensor<3x3xf32> {tg.param = "w"},
                          %v: tensor<5xf32> {tg.param = "v"})
    -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.grad = "w"},
        tensor<5xf32> {tg.grad = "v"}) attributes {tg.train_step} {
  %loss = tg.fill 1.0 : tensor<f32>
  %seed = tg.fill 1.0 {tg.loss_seed} : tensor<f32>
  %e = tg.exp %v : tensor<5xf32>
  %dv = tg.mul %e, %seed : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  %t = tg.exp %x : tensor<4x3xf32>
  %dw = tg.matmul %t, %t {transpose_lhs = true} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
  return %loss, %dw, %dv : tensor<f32>, tensor<3x3xf32>, tensor<5xf32>
}

// With ddp both gradients fit one bucket: flattened, concatenated in the order
// the backward pass completes them, averaged by one all-reduce after the
// last, split back; the updates read the averages, and the loss is the
// mean over ranks, taken where the loss is computed (the forward pass ends
// there for tg-remat and the memory plan).
// DDP-LABEL: func.func @net_train_step(
// DDP-SAME: attributes {tg.data_parallel = {mode = "ddp", world_size = 2 : i64}, tg.train_step}
// DDP: %[[ONE:.*]] = tg.fill 1.0{{.*}} : tensor<f32>
// DDP-NEXT: %[[LOSS:.*]] = tg.all_reduce mean %[[ONE]] {world_size = 2 : i64} : tensor<f32>
// DDP: %[[DV:.*]] = tg.exp %arg2
// DDP: %[[DW:.*]] = tg.matmul
// DDP: %[[FLAT:.*]] = tg.reshape %[[DW]] : tensor<3x3xf32> -> tensor<9xf32>
// DDP: %[[PACK:.*]] = tg.concat %[[DV]], %[[FLAT]] {axis = 0 : i64} : (tensor<5xf32>, tensor<9xf32>) -> tensor<14xf32>
// DDP: %[[MEAN:.*]] = tg.all_reduce mean %[[PACK]] {world_size = 2 : i64} : tensor<14xf32>
// DDP: %[[PARTS:.*]]:2 = tg.split %[[MEAN]] {axis = 0 : i64} : tensor<14xf32> -> tensor<5xf32>, tensor<9xf32>
// DDP: %[[GW:.*]] = tg.reshape %[[PARTS]]#1 : tensor<9xf32> -> tensor<3x3xf32>
// DDP: tg.adamw_update %{{.*}}, %[[GW]],
// DDP: %[[GV:.*]] = tg.mul %[[PARTS]]#0,
// DDP: tg.adamw_update %{{.*}}, %[[GV]],
// DDP: return %[[LOSS]],

// Buckets of one gradient each: each all-reduce right where its gradient
// is complete, the first before the rest of the backward pass.
// SMALL-LABEL: func.func @net_train_step(
// SMALL: %[[DV:.*]] = tg.exp %arg2
// SMALL-NEXT: tg.all_reduce mean %[[DV]] {world_size = 2 : i64} : tensor<5xf32>
// SMALL-NEXT: tg.mul
// SMALL-NEXT: tg.exp %arg0
// SMALL-NEXT: %[[DW:.*]] = tg.matmul
// SMALL-NEXT: tg.all_reduce mean %[[DW]] {world_size = 2 : i64} : tensor<3x3xf32>

// ZeRO stage 1: the state of each parameter is this rank's part of it (w:
// 9 elements padded to 10, 5 per rank; v: 5 padded to 6, 3 per rank),
// marked with the whole shape. After the backward pass each gradient is
// padded and reduce-scattered; the rank updates its part of the parameter
// (tg.shard) with its parts of the gradient and state, and the parts are
// all-gathered and unpadded into the whole parameter.
// ZERO1-LABEL: func.func @net_train_step(
// ZERO1-SAME: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "w.exp_avg"}
// ZERO1-SAME: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "w.exp_avg_sq"}
// ZERO1-SAME: tensor<3xf32> {tg.shard_of = array<i64: 5>, tg.state = "v.exp_avg"}
// ZERO1-SAME: -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.update = "w"}, tensor<5xf32> {tg.update = "w.exp_avg"}
// ZERO1: tg.exp %arg2
// ZERO1: %[[DW:.*]] = tg.matmul
// ZERO1: %[[FW:.*]] = tg.reshape %[[DW]] : tensor<3x3xf32> -> tensor<9xf32>
// ZERO1: %[[PW:.*]] = tg.concat %[[FW]], %{{.*}} {axis = 0 : i64} : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// ZERO1: %[[GW:.*]] = tg.reduce_scatter mean %[[PW]] {world_size = 2 : i64} : tensor<10xf32> -> tensor<5xf32>
// ZERO1: tg.reduce_scatter mean %{{.*}} {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
// ZERO1: %[[W:.*]] = tg.shard %{{.*}} {world_size = 2 : i64} : tensor<10xf32> -> tensor<5xf32>
// ZERO1: %[[NW:.*]], %{{.*}}, %{{.*}} = tg.adamw_update %[[W]], %[[GW]], %{{.*}} : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<i64>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// ZERO1: %[[ALL:.*]] = tg.all_gather %[[NW]] {world_size = 2 : i64} : tensor<5xf32> -> tensor<10xf32>
// ZERO1: %[[CUT:.*]] = tg.slice %[[ALL]] {offsets = array<i64: 0>} : tensor<10xf32> -> tensor<9xf32>
// ZERO1: %[[WHOLE:.*]] = tg.reshape %[[CUT]] : tensor<9xf32> -> tensor<3x3xf32>
// ZERO1: return %{{.*}}, %[[WHOLE]],

// ZeRO stage 2: dv's bucket is reduce-scattered as soon as dv is complete,
// so the whole gradient dies before the rest of the backward pass.
// ZERO2-LABEL: func.func @net_train_step(
// ZERO2: %[[DV:.*]] = tg.exp %arg2
// ZERO2: %[[PV:.*]] = tg.concat %[[DV]], %{{.*}} {axis = 0 : i64} : (tensor<5xf32>, tensor<1xf32>) -> tensor<6xf32>
// ZERO2-NEXT: tg.reduce_scatter mean %[[PV]] {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
// ZERO2-NEXT: tg.exp %arg0
// ZERO2-NEXT: tg.matmul

// One bucket under ZeRO: rows [2, 3] and [2, 5] packed as [2, 8], so one
// reduce-scatter gives each rank its part of both, and one all-gather
// returns them.
// PACKED-LABEL: func.func @net_train_step(
// PACKED: %[[PACK:.*]] = tg.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// PACKED: %[[FLAT:.*]] = tg.reshape %[[PACK]] : tensor<2x8xf32> -> tensor<16xf32>
// PACKED: %[[MINE:.*]] = tg.reduce_scatter mean %[[FLAT]] {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// PACKED: tg.split %[[MINE]] {axis = 0 : i64} : tensor<8xf32> -> tensor<3xf32>, tensor<5xf32>
// PACKED: %[[NEW:.*]] = tg.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3xf32>, tensor<5xf32>) -> tensor<8xf32>
// PACKED: %[[ALL:.*]] = tg.all_gather %[[NEW]] {world_size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// PACKED: %[[ROWS:.*]] = tg.reshape %[[ALL]] : tensor<16xf32> -> tensor<2x8xf32>
// PACKED: tg.split %[[ROWS]] {axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x5xf32>

// 8-bit state splits at block boundaries: w's 9 elements in blocks of 4
// are padded to 16, 8 codes and 2 absmax values per rank; v's 5 to 8.
// Q8-LABEL: func.func @net_train_step(
// Q8-SAME: tensor<8xui8> {tg.shard_of = array<i64: 3, 3>, tg.state = "w.exp_avg.q8"}
// Q8-SAME: tensor<2xf32> {tg.shard_of = array<i64: 3>, tg.state = "w.exp_avg.absmax"}
// Q8-SAME: tensor<4xui8> {tg.shard_of = array<i64: 5>, tg.state = "v.exp_avg.q8"}
// Q8-SAME: tensor<1xf32> {tg.shard_of = array<i64: 2>, tg.state = "v.exp_avg.absmax"}
// Q8: tg.shard %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// Q8: tg.adamw_8bit_update {{.*}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xui8>, tensor<2xf32>, tensor<8xui8>, tensor<2xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>)

// Loss scaling and clipping on parts: unscaled on this rank's parts, the
// finiteness check combined by a minimum over ranks, the norm as the
// square root of the sum of the ranks' squared norms; the updates are
// predicated on the combined check.
// SCALED-LABEL: func.func @net_train_step(
// SCALED: %[[LOCAL:.*]] = tg.all_finite %[[A:.*]], %[[B:.*]] : (tensor<5xf32>, tensor<3xf32>) -> tensor<i1>
// SCALED-NEXT: %[[F:.*]] = tg.cast %[[LOCAL]] : tensor<i1> -> tensor<f32>
// SCALED-NEXT: %[[MIN:.*]] = tg.all_reduce min %[[F]] {world_size = 2 : i64} : tensor<f32>
// SCALED-NEXT: %[[OK:.*]] = tg.cast %[[MIN]] : tensor<f32> -> tensor<i1>
// SCALED-NEXT: %[[NORM:.*]] = tg.global_norm %[[A]], %[[B]] : (tensor<5xf32>, tensor<3xf32>) -> tensor<f32>
// SCALED-NEXT: %[[SQ:.*]] = tg.mul %[[NORM]], %[[NORM]]
// SCALED-NEXT: %[[SUM:.*]] = tg.all_reduce sum %[[SQ]] {world_size = 2 : i64} : tensor<f32>
// SCALED-NEXT: tg.sqrt %[[SUM]]
// SCALED: tg.adamw_update {{.*}} if %[[OK]]
// SCALED: tg.adamw_update {{.*}} if %[[OK]]
// SCALED: tg.update_loss_scale %{{.*}}, %{{.*}}, %[[OK]]
