// RUN: tgc-opt %s --tg-fold-update-casts | FileCheck %s

// A bf16 gradient widened for the update alone: the update reads it as it
// is, and the cast is gone.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xbf16>
// CHECK-NOT: tg.cast
// CHECK: tg.adamw_update %[[P]], %[[G]],
// CHECK-SAME: (tensor<4x8xf32>, tensor<4x8xbf16>,
func.func @widened(%p: tensor<4x8xf32>, %g: tensor<4x8xbf16>,
                   %m: tensor<4x8xf32>, %v: tensor<4x8xf32>,
                   %lr: tensor<f32>, %s: tensor<i64>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g32 = tg.cast %g : tensor<4x8xbf16> -> tensor<4x8xf32>
  %0:3 = tg.adamw_update %p, %g32, %m, %v, %lr, %s
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// SGD's and the 8-bit updates read any float gradient too.
// CHECK-LABEL: func.func @sgd
// CHECK-NOT: tg.cast
// CHECK: tg.sgd_update %{{[^,]+}}, %arg1,
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf16>, %lr: tensor<f32>,
               %s: tensor<i64>) -> tensor<8xf32> {
  %g32 = tg.cast %g : tensor<8xf16> -> tensor<8xf32>
  %0 = tg.sgd_update %p, %g32, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Kept: a cast another op reads too (the f32 gradient is needed anyway),
// and a narrowing cast (it rounds).
// CHECK-LABEL: func.func @kept
// CHECK: %[[W:.+]] = tg.cast %arg1 : tensor<8xbf16> -> tensor<8xf32>
// CHECK: tg.sgd_update %arg0, %[[W]],
// CHECK: %[[N:.+]] = tg.cast %arg4 : tensor<8xf32> -> tensor<8xbf16>
// CHECK: tg.sgd_update %arg3, %[[N]],
func.func @kept(%p: tensor<8xf32>, %g: tensor<8xbf16>, %lr: tensor<f32>,
                %q: tensor<8xbf16>, %h: tensor<8xf32>, %s: tensor<i64>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>) {
  %g32 = tg.cast %g : tensor<8xbf16> -> tensor<8xf32>
  %0 = tg.sgd_update %p, %g32, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<8xf32>
  %h16 = tg.cast %h : tensor<8xf32> -> tensor<8xbf16>
  %1 = tg.sgd_update %q, %h16, %lr, %s
      : (tensor<8xbf16>, tensor<8xbf16>, tensor<f32>, tensor<i64>) -> tensor<8xbf16>
  return %0, %g32, %1 : tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>
}
