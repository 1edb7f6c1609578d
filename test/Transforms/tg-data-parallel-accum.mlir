// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=2 --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2" | FileCheck %s --check-prefix=ZERO3
// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=2 --tg-optimizer --tg-data-parallel="mode=ddp world-size=2" | FileCheck %s --check-prefix=DDP
// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=2 --tg-optimizer="clip-grad-norm=1.0" --tg-data-parallel="mode=zero2 world-size=4 shard-group=2" | FileCheck %s --check-prefix=HYBRID

// Gradient accumulation under data parallelism: the apply step divides
// sums over the job by the job's count of targets (each rank's count and
// summed loss summed over the ranks), so every mode trains as one process
// on the concatenated micro-batches. w: 9 elements, 5 a rank; v: 6, 3.
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

// zero3: the accumulators are this rank's parts, like the parameters; the
// apply step sums the counts and losses over the ranks, divides the parts
// and updates them (no collective on the gradients: the micro-steps
// reduce-scattered them already).
// ZERO3-LABEL: func.func @net_train_step(
// ZERO3-SAME: %[[LOSS:[^:]*]]: tensor<f32> {tg.state = "grad_accum.loss_sum"}
// ZERO3-SAME: %[[COUNT:[^:]*]]: tensor<f32> {tg.state = "grad_accum.target_count"}
// ZERO3-SAME: %[[ACCW:[^:]*]]: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "grad_accum.w"}
// ZERO3-SAME: %[[ACCV:[^:]*]]: tensor<3xf32> {tg.shard_of = array<i64: 3, 2>, tg.state = "grad_accum.v"}
// ZERO3: %[[TOTAL:.*]] = tg.all_reduce sum %[[COUNT]] {world_size = 2 : i64}
// ZERO3: %[[SUM:.*]] = tg.all_reduce sum %[[LOSS]] {world_size = 2 : i64}
// ZERO3: %[[DEN:.*]] = tg.maximum %[[TOTAL]]
// ZERO3: %[[MEAN:.*]] = tg.div %[[SUM]], %[[DEN]]
// ZERO3: %[[GW:.*]] = tg.div %[[ACCW]], %[[DEN]] : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
// ZERO3-NOT: tg.reduce_scatter
// ZERO3-NOT: tg.all_reduce
// ZERO3: tg.adamw_update %{{[^,]*}}, %[[GW]],
// ZERO3: %[[ZW:.*]] = tg.fill 0.000000e+00 : tensor<5xf32>
// ZERO3: return %[[MEAN]], %{{[^,]*}}, %{{[^,]*}}, %[[ZW]],
// The micro-step gathers the parameters for each pass, sums its gradients
// over the ranks in one bucket (v's part then w's, the order the backward
// pass completes them) and adds this rank's parts.
// ZERO3-LABEL: func.func @net_grad_step(
// ZERO3-SAME: %[[W:[^:]*]]: tensor<5xf32> {tg.param = "w", tg.shard_of = array<i64: 3, 3>}
// ZERO3-SAME: %[[ACCW:[^:]*]]: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "grad_accum.w"}
// ZERO3-SAME: %[[ACCV:[^:]*]]: tensor<3xf32> {tg.shard_of = array<i64: 3, 2>, tg.state = "grad_accum.v"}
// ZERO3-SAME: -> (tensor<f32> {tg.loss}, tensor<f32> {tg.update = "grad_accum.loss_sum"}, tensor<f32> {tg.update = "grad_accum.target_count"}, tensor<5xf32> {tg.update = "grad_accum.w"}, tensor<3xf32> {tg.update = "grad_accum.v"})
// ZERO3: tg.all_gather {{.*}} : tensor<10xf32> -> tensor<20xf32>
// ZERO3: tg.cross_entropy_grad
// ZERO3: tg.all_gather {{.*}} : tensor<8xf32> -> tensor<16xf32>
// ZERO3: %[[PARTS:.*]] = tg.reduce_scatter sum %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// ZERO3: %[[PV:.*]]:2 = tg.split %[[PARTS]] {axis = 0 : i64} : tensor<8xf32> -> tensor<3xf32>, tensor<5xf32>
// ZERO3: %[[NV:.*]] = tg.add %[[ACCV]], %[[PV]]#0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// ZERO3: %[[NW:.*]] = tg.add %[[ACCW]], %[[PV]]#1 : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// ZERO3: return %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[NW]], %[[NV]] :

// ddp: whole accumulators on each rank, summed over the ranks once a step
// after the division by the job's count; the loss is the job's already
// (not averaged again). The micro-step has no collective.
// DDP-LABEL: func.func @net_train_step(
// DDP: %[[TOTAL:.*]] = tg.all_reduce sum %{{.*}} {world_size = 2 : i64} : tensor<f32>
// DDP: tg.div %{{.*}} : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
// DDP: tg.all_reduce sum %{{.*}} {world_size = 2 : i64} : tensor<15xf32>
// DDP-NOT: tg.all_reduce
// DDP: return
// DDP-LABEL: func.func @net_grad_step(
// DDP-NOT: tg.all_reduce
// DDP-NOT: tg.reduce_scatter
// DDP: return

// Hybrid zero2 (4 ranks in groups of 2): the micro-step sums each part
// within the group, then across the replicas holding it; the clipping
// norm's squares are summed within the group, the counts over the job.
// HYBRID-LABEL: func.func @net_train_step(
// HYBRID: tg.all_reduce sum %{{.*}} {world_size = 4 : i64} : tensor<f32>
// HYBRID: tg.all_reduce sum %{{.*}} {world_size = 4 : i64} : tensor<f32>
// HYBRID: tg.global_norm
// HYBRID: tg.all_reduce sum %{{.*}} {world_size = 2 : i64} : tensor<f32>
// HYBRID-NOT: tg.reduce_scatter
// HYBRID: tg.all_gather %{{.*}} {world_size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// HYBRID-LABEL: func.func @net_grad_step(
// HYBRID-SAME: tensor<5xf32> {tg.shard_of = array<i64: 3, 3>, tg.state = "grad_accum.w"}
// HYBRID: %[[PARTS:.*]] = tg.reduce_scatter sum %{{.*}} {world_size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// HYBRID: tg.all_reduce sum %[[PARTS]] {rank_stride = 2 : i64, world_size = 2 : i64} : tensor<8xf32>
