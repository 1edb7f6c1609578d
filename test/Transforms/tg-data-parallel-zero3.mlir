// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=ZERO3
// RUN: tgc-opt %s --tg-amp --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2" | FileCheck %s --check-prefix=AMP
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adafactor" --tg-data-parallel="mode=zero3 world-size=2" 2>&1 | FileCheck %s --check-prefix=FACTORED
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="clip-grad-norm=1.0" --tg-data-parallel="mode=zero3 world-size=4 shard-group=2" | FileCheck %s --check-prefix=HYBRID
// Buckets of 48 bytes (gathered) over parameters of 16, 64 and 32 bytes.
// RUN: tgc-opt %S/Inputs/zero3-buckets.mlir --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2 bucket-mb=4.57763671875e-05" | FileCheck %s --check-prefix=BUCKETS

// A two-layer MLP: w is read twice in the forward pass and once in the
// backward pass, v once in each, the frozen bias b in the forward pass
// only.
func.func @net(%x: tensor<4x3xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %w: tensor<3x3xf32> {tg.param = "w"},
               %b: tensor<3xf32> {tg.param = "b", tg.frozen},
               %v: tensor<3x2xf32> {tg.param = "v"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %1 = tg.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = tg.tanh %1 : tensor<4x3xf32>
  %3 = tg.matmul %2, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %4 = tg.matmul %3, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %5 = tg.cross_entropy %4, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// Every parameter, trained or frozen, is this rank's part of its flattened,
// zero-padded whole (w: 9 elements padded to 10, 5 a rank; b: 3 to 4; v:
// 6, 3 a rank), in the evaluation function as in the step. The evaluation
// function gathers each bucket (here one parameter each) before it is read,
// the bucket after it one bucket ahead: b's gather before w's first reader.
// ZERO3-LABEL: func.func @net(
// ZERO3-SAME: %[[W:[^:]*]]: tensor<5xf32> {tg.param = "w", tg.shard_of = array<i64: 3, 3>}
// ZERO3-SAME: %[[B:[^:]*]]: tensor<2xf32> {tg.frozen, tg.param = "b", tg.shard_of = array<i64: 3>}
// ZERO3-SAME: %[[V:[^:]*]]: tensor<3xf32> {tg.param = "v", tg.shard_of = array<i64: 3, 2>}
// ZERO3: %[[GW:.*]] = tg.all_gather %[[W]] {world_size = 2 : i64} : tensor<5xf32> -> tensor<10xf32>
// ZERO3-NEXT: %[[SW:.*]] = tg.slice %[[GW]] {offsets = array<i64: 0>} : tensor<10xf32> -> tensor<9xf32>
// ZERO3-NEXT: %[[WW:.*]] = tg.reshape %[[SW]] : tensor<9xf32> -> tensor<3x3xf32>
// ZERO3-NEXT: tg.all_gather %[[B]]
// ZERO3-NEXT: tg.slice
// ZERO3-NEXT: tg.matmul %{{.*}}, %[[WW]]
// ZERO3: tg.cross_entropy
// ZERO3-NEXT: return

// The step: the same gathers in the forward pass; in the backward pass, v
// and w gathered again (b is not read there), and each gradient
// reduce-scattered as it is complete. Each update reads and writes the
// parts, and the step returns the new parts: nothing gathers them.
// ZERO3-LABEL: func.func @net_train_step(
// ZERO3-SAME: %[[W:[^:]*]]: tensor<5xf32> {tg.param = "w", tg.shard_of = array<i64: 3, 3>}
// ZERO3-SAME: %[[B:[^:]*]]: tensor<2xf32> {tg.frozen, tg.param = "b", tg.shard_of = array<i64: 3>}
// ZERO3-SAME: %[[V:[^:]*]]: tensor<3xf32> {tg.param = "v", tg.shard_of = array<i64: 3, 2>}
// ZERO3-SAME: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "w.exp_avg"}
// ZERO3-SAME: -> (tensor<f32> {tg.loss}, tensor<5xf32> {tg.update = "w"},
// ZERO3-SAME: tensor<3xf32> {tg.update = "v"},
// ZERO3-SAME: tg.data_parallel = {mode = "zero3", world_size = 2 : i64}
// ZERO3: tg.all_gather %[[W]]
// ZERO3: tg.all_gather %[[B]]
// ZERO3: tg.all_gather %[[V]]
// ZERO3: tg.cross_entropy_grad
// ZERO3-NEXT: %[[GV2:.*]] = tg.all_gather %[[V]] {world_size = 2 : i64} : tensor<3xf32> -> tensor<6xf32>
// ZERO3-NEXT: %[[VV2:.*]] = tg.reshape %[[GV2]] : tensor<6xf32> -> tensor<3x2xf32>
// ZERO3-NEXT: %[[GW2:.*]] = tg.all_gather %[[W]] {world_size = 2 : i64} : tensor<5xf32> -> tensor<10xf32>
// ZERO3-NOT: tg.all_gather
// ZERO3: tg.matmul %{{.*}}, %[[VV2]] {transpose_rhs = true}
// ZERO3: %[[DV:.*]] = tg.reduce_scatter mean %{{.*}} {world_size = 2 : i64} : tensor<6xf32> -> tensor<3xf32>
// ZERO3: %[[DW:.*]] = tg.reduce_scatter mean %{{.*}} {world_size = 2 : i64} : tensor<10xf32> -> tensor<5xf32>
// ZERO3: %[[NW:new_param[_0-9]*]], {{.*}} = tg.adamw_update %[[W]], %[[DW]],
// ZERO3: %[[NV:new_param[_0-9]*]], {{.*}} = tg.adamw_update %[[V]], %[[DV]],
// ZERO3-NOT: tg.all_gather
// ZERO3: return %{{.*}}, %[[NW]], %{{.*}}, %{{.*}}, %[[NV]],

// Mixed precision: the parameters are read only through their bf16 casts,
// so the parts are cast and the bf16 values gathered (half the bytes), in
// one bucket, where the forward pass first reads them (the casts moved
// there from the top of the step); the backward pass casts and gathers
// its own, not keeping the forward pass's. The forward pass's gathers are
// marked tg.recompute: where tg-remat recomputes a forward op for the
// backward pass, it gathers again rather than keeping them.
// AMP-LABEL: func.func @net_train_step(
// AMP-SAME: %[[W:[^:]*]]: tensor<5xf32> {tg.param = "w", tg.shard_of = array<i64: 3, 3>}
// AMP-SAME: %[[B:[^:]*]]: tensor<2xf32> {tg.frozen, tg.param = "b", tg.shard_of = array<i64: 3>}
// AMP-SAME: %[[V:[^:]*]]: tensor<3xf32> {tg.param = "v", tg.shard_of = array<i64: 3, 2>}
// AMP: %[[CW:.*]] = tg.cast %[[W]] {tg.recompute} : tensor<5xf32> -> tensor<5xbf16>
// AMP-NEXT: %[[CB:.*]] = tg.cast %[[B]] {tg.recompute} : tensor<2xf32> -> tensor<2xbf16>
// AMP-NEXT: %[[CV:.*]] = tg.cast %[[V]] {tg.recompute} : tensor<3xf32> -> tensor<3xbf16>
// AMP-NEXT: %[[PACK:.*]] = tg.concat %[[CW]], %[[CB]], %[[CV]] {axis = 0 : i64, tg.recompute} : (tensor<5xbf16>, tensor<2xbf16>, tensor<3xbf16>) -> tensor<10xbf16>
// AMP-NEXT: %[[ALL:.*]] = tg.all_gather %[[PACK]] {tg.recompute, world_size = 2 : i64} : tensor<10xbf16> -> tensor<20xbf16>
// AMP-NEXT: %[[ROWS:.*]] = tg.reshape %[[ALL]] {tg.recompute} : tensor<20xbf16> -> tensor<2x10xbf16>
// AMP-NEXT: %[[COLS:.*]]:3 = tg.split %[[ROWS]] {axis = 1 : i64, tg.recompute} : tensor<2x10xbf16> -> tensor<2x5xbf16>, tensor<2x2xbf16>, tensor<2x3xbf16>
// AMP-NOT: tg.cast %[[W]]
// AMP: tg.cross_entropy_grad
// AMP-NEXT: tg.cast %[[V]] : tensor<3xf32> -> tensor<3xbf16>
// AMP-NEXT: tg.cast %[[W]] : tensor<5xf32> -> tensor<5xbf16>
// AMP-NEXT: tg.concat
// AMP-NEXT: tg.all_gather %{{.*}} {world_size = 2 : i64} : tensor<8xbf16> -> tensor<16xbf16>

// Hybrid sharding, four ranks in two groups of two: the parts are those of
// two ranks (w: 5 a rank), gathered within the group; the gradients are
// reduce-scattered within the group, then each part averaged with the
// other group's (ranks 2 apart); the clipping norm's squares are summed
// within the group only (the other group holds the same parts); the loss
// is averaged over all four.
// HYBRID-LABEL: func.func @net_train_step(
// HYBRID-SAME: tensor<5xf32> {tg.param = "w", tg.shard_of = array<i64: 3, 3>}
// HYBRID-SAME: tg.data_parallel = {mode = "zero3", shard_group = 2 : i64, world_size = 4 : i64}
// HYBRID: tg.all_gather %{{.*}} {tg.recompute, world_size = 2 : i64} : tensor<10xf32> -> tensor<20xf32>
// HYBRID: tg.all_reduce mean %{{.*}} {world_size = 4 : i64} : tensor<f32>
// HYBRID: tg.all_gather %{{.*}} {world_size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// HYBRID: %[[MINE:.*]] = tg.reduce_scatter mean %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// HYBRID-NEXT: %[[AVG:.*]] = tg.all_reduce mean %[[MINE]] {rank_stride = 2 : i64, world_size = 2 : i64} : tensor<8xf32>
// HYBRID-NEXT: tg.split %[[AVG]]
// HYBRID-NEXT: %[[NORM:.*]] = tg.global_norm
// HYBRID-NEXT: %[[SQUARE:.*]] = tg.mul %[[NORM]], %[[NORM]]
// HYBRID-NEXT: tg.all_reduce sum %[[SQUARE]] {world_size = 2 : i64} : tensor<f32>

// FACTORED: error: 'tg.adafactor_update' op cannot be split across ranks (its state is not laid out element by element with the parameter); tg-data-parallel zero3 needs an elementwise or blockwise optimizer: use ddp, or adamw or sgd

// A parameter larger than a bucket (w) is gathered alone and leaves the
// bucket open for the small ones around it: a and c, read before and
// after it, are one gather (not three gathers, each of a latency).
// BUCKETS-LABEL: func.func @net(
// BUCKETS: %[[SMALL:.*]] = tg.concat %arg2, %arg4 {axis = 0 : i64} : (tensor<2xf32>, tensor<4xf32>) -> tensor<6xf32>
// BUCKETS-NEXT: tg.all_gather %[[SMALL]] {world_size = 2 : i64} : tensor<6xf32> -> tensor<12xf32>
// BUCKETS: tg.all_gather %arg3 {world_size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// BUCKETS-NOT: tg.all_gather
// BUCKETS: return
