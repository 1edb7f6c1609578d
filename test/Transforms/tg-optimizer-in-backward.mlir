// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-optimizer-in-backward -o - 2>&1 | FileCheck %s
// Global-norm clipping needs every gradient before any update: nothing
// moves, and the summary says what the updates wait for.
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer=clip-grad-norm=1.0 --tg-optimizer-in-backward -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLIP
// Only the order changes: the plan of the reordered step holds fewer
// gradients at once (the 3-layer MLP's peak moves from the start of the
// backward pass, 43008 bytes, to its first gradient, 42752 bytes).
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-optimizer-in-backward=print=false --tg-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// Without an optimizer there is nothing to schedule: an error naming the
// pass to run first.
// RUN: not tgc-opt %s --tg-optimizer-in-backward -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTEP
// Under zero3 with 16-bit masters an update writes the part its
// parameter's gather reads.
// RUN: tgc-opt %s --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2 bucket-mb=0.0001" --tg-optimizer-in-backward=print=false -o - | FileCheck %s --check-prefix=ZERO3

func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "layers.0.weight"}, %b0: tensor<32xf32> {tg.param = "layers.0.bias"},
               %w1: tensor<32x32xf32> {tg.param = "layers.1.weight"}, %b1: tensor<32xf32> {tg.param = "layers.1.bias"},
               %w2: tensor<4x32xf32> {tg.param = "layers.2.weight"}, %b2: tensor<4xf32> {tg.param = "layers.2.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32> loc("layers.0")
  %1 = tg.add %0, %b0 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.0")
  %2 = tg.relu %1 : tensor<64x32xf32> loc("layers.0")
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %4 = tg.add %3, %b1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %5 = tg.relu %4 : tensor<64x32xf32> loc("layers.1")
  %6 = tg.matmul %5, %w2 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<64x4xf32> loc("layers.2")
  %7 = tg.add %6, %b2 : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32> loc("layers.2")
  %8 = tg.cross_entropy %7, %y : (tensor<64x4xf32>, tensor<64xi64>) -> tensor<f32> loc("loss")
  return %8 : tensor<f32>
}

// The last layer's bias is updated as soon as its gradient (a row sum of
// the loss's gradient) exists, with the step count it shares with every
// update; the weight of layer 2 once the input gradient of layer 2, which
// reads it, has run; each layer's updates before the backward pass of the
// layer below. The step count is still returned as the counter's update.
// CHECK: tg-optimizer-in-backward: 4 of 6 updates run inside the backward pass
// CHECK-LABEL: func.func @mlp_train_step
// CHECK: %[[DLOGITS:.*]] = tg.cross_entropy_grad
// CHECK-NEXT: %[[DB2:.*]] = tg.sum_to %[[DLOGITS]]
// CHECK-NEXT: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<i64>
// CHECK-NEXT: %[[STEP:.*]] = tg.add %arg8, %[[ONE]]
// CHECK-NEXT: %[[B2:.*]], %{{.*}}, %{{.*}} = tg.adamw_update %arg7, %[[DB2]], {{.*}}, %[[STEP]]
// CHECK-NEXT: %[[DH:.*]] = tg.matmul %[[DLOGITS]], %arg6 :
// CHECK-NEXT: %[[DW2:.*]] = tg.matmul %[[DLOGITS]], %{{.*}} {transpose_lhs = true}
// CHECK-NEXT: %[[W2:.*]], %{{.*}}, %{{.*}} = tg.adamw_update %arg6, %[[DW2]]
// CHECK-NEXT: tg.relu_grad %{{.*}}, %[[DH]]
// CHECK: tg.adamw_update %arg5
// CHECK: tg.adamw_update %arg4
// CHECK-NEXT: tg.relu_grad
// CHECK: tg.adamw_update %arg2
// CHECK: tg.adamw_update %arg3
// CHECK-NEXT: return %{{.*}}, %[[B2]], {{.*}}, %[[STEP]] :

// CLIP: tg-optimizer-in-backward: 0 of 6 updates run inside the backward pass; every update waits for tg.matmul (loc("layers.0")): what they read needs every gradient (global-norm clipping, a loss-scale overflow check)

// BEFORE: peak of live transient bytes: 42.00 KiB (43008 bytes)
// AFTER: peak of live transient bytes: 41.75 KiB (42752 bytes)

// The backward pass's first gather (layer 2's weight, issued at its
// reader, the input gradient) travels with the weight's update, which
// moves before that reader: to just before the update, after the weight
// gradient's reduce-scatter, so the gathered copy is not live beside the
// weight gradient. Layer 1's weight is gathered a layer ahead, as it was.
// ZERO3: %[[DLOGITS:.*]] = tg.cross_entropy_grad
// ZERO3-NEXT: %[[DW2:.*]] = tg.matmul %[[DLOGITS]], %{{.*}} {transpose_lhs = true}
// ZERO3-NEXT: %[[FLAT:.*]] = tg.reshape %[[DW2]]
// ZERO3-NEXT: %[[PART:.*]] = tg.reduce_scatter mean %[[FLAT]]
// ZERO3: %[[W2:.*]] = tg.all_gather %arg6
// ZERO3-NEXT: tg.adamw_update %arg6, %[[PART]]
// ZERO3: %[[W2M:.*]] = tg.reshape %[[W2]]
// ZERO3-NEXT: %[[W1:.*]] = tg.all_gather %arg4
// ZERO3: tg.matmul %[[DLOGITS]], %[[W2M]] :
// ZERO3: tg.adamw_update %arg4

// NOSTEP: tg-optimizer-in-backward found no function marked tg.train_step; run it after tg-optimizer
