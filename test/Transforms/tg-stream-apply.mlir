// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=2 --tg-optimizer="clip-grad-norm=1.0" --tg-loss-scale="mode=dynamic" --tg-stream-apply | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="clip-grad-norm=1.0" --tg-stream-apply | FileCheck %s --check-prefix=PLAIN

// Gradient accumulation's apply step one gradient at a time: each
// accumulator's chain (division by the count, unscale) computed and
// reduced (norm, finiteness) before the next one's, the reductions
// combined (sqrt of the sum of squared norms; the least check), and each
// update reading its own copy of the chain computed right before it, the
// accumulator's zeros written over it right after its last read.
func.func @net(%x: tensor<4x3xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %w: tensor<3x3xf32> {tg.param = "w"},
               %v: tensor<3x2xf32> {tg.param = "v"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %1 = tg.tanh %0 : tensor<4x3xf32>
  %2 = tg.matmul %1, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %3 = tg.cross_entropy %2, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}

// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[ACCW:[^:]*]]: tensor<3x3xf32> {tg.state = "grad_accum.w"}
// CHECK-SAME: %[[ACCV:[^:]*]]: tensor<3x2xf32> {tg.state = "grad_accum.v"}
// CHECK-SAME: %[[SCALE:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(6.553600e+04)>, tg.state = "amp.loss_scale"}
// CHECK: %[[DEN:.*]] = tg.maximum
// CHECK: %[[DW:.*]] = tg.div %[[ACCW]], %[[DEN]]
// CHECK-NEXT: %[[UW:.*]] = tg.unscale %[[DW]], %[[SCALE]]
// CHECK-NEXT: %[[NW:.*]] = tg.global_norm %[[UW]] : (tensor<3x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[FW:.*]] = tg.all_finite %[[UW]] : (tensor<3x3xf32>) -> tensor<i1>
// CHECK-NEXT: %[[DV:.*]] = tg.div %[[ACCV]], %[[DEN]]
// CHECK-NEXT: %[[UV:.*]] = tg.unscale %[[DV]], %[[SCALE]]
// CHECK-NEXT: %[[NV:.*]] = tg.global_norm %[[UV]] : (tensor<3x2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[FV:.*]] = tg.all_finite %[[UV]] : (tensor<3x2xf32>) -> tensor<i1>
// CHECK-NEXT: %[[CW:.*]] = tg.cast %[[FW]] : tensor<i1> -> tensor<f32>
// CHECK-NEXT: %[[CV:.*]] = tg.cast %[[FV]] : tensor<i1> -> tensor<f32>
// CHECK-NEXT: %[[LEAST:.*]] = tg.minimum %[[CW]], %[[CV]]
// CHECK-NEXT: %[[FINITE:.*]] = tg.cast %[[LEAST]] : tensor<f32> -> tensor<i1>
// CHECK-NOT: tg.global_norm
// CHECK: %[[SW:.*]] = tg.mul %[[NW]], %[[NW]]
// CHECK-NEXT: %[[SV:.*]] = tg.mul %[[NV]], %[[NV]]
// CHECK-NEXT: %[[SUM:.*]] = tg.add %[[SW]], %[[SV]]
// CHECK-NEXT: %[[NORM:.*]] = tg.sqrt %[[SUM]]
// CHECK: %[[COEF:.*]] = tg.minimum
// CHECK: %[[DW2:.*]] = tg.div %[[ACCW]], %[[DEN]]
// CHECK-NEXT: %[[ZW:.*]] = tg.fill 0.000000e+00 : tensor<3x3xf32>
// CHECK-NEXT: %[[UW2:.*]] = tg.unscale %[[DW2]], %[[SCALE]]
// CHECK-NEXT: %[[GW:.*]] = tg.mul %[[UW2]], %[[COEF]]
// CHECK-NEXT: tg.adamw_update %{{[^,]*}}, %[[GW]], {{.*}} if %[[FINITE]]
// CHECK-NEXT: %[[DV2:.*]] = tg.div %[[ACCV]], %[[DEN]]
// CHECK-NEXT: %[[ZV:.*]] = tg.fill 0.000000e+00 : tensor<3x2xf32>
// CHECK-NEXT: %[[UV2:.*]] = tg.unscale %[[DV2]], %[[SCALE]]
// CHECK-NEXT: %[[GV:.*]] = tg.mul %[[UV2]], %[[COEF]]
// CHECK-NEXT: tg.adamw_update %{{[^,]*}}, %[[GV]], {{.*}} if %[[FINITE]]
// CHECK: return {{.*}}, %[[ZW]], %[[ZV]],

// A step without accumulation is left as it is: one norm over both
// gradients.
// PLAIN-LABEL: func.func @net_train_step(
// PLAIN: tg.global_norm %{{.*}}, %{{.*}} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<f32>
