// RUN: tgc-opt %s --tg-group-updates | FileCheck %s

// Three adjacent updates with one learning rate, step and set of
// hyper-parameters become one multi-tensor update in their place; the
// results are the new params, then the first moments, then the second.
// CHECK-LABEL: func.func @run
// CHECK-NOT: tg.adamw_update
// CHECK: %[[R:.+]]:9 = tg.multi_adamw_update(%arg0, %arg4, %arg8), (%arg1, %arg5, %arg9), (%arg2, %arg6, %arg10), (%arg3, %arg7, %arg11), %arg12, %arg13 {beta1 = 8.000000e-01 : f64}
// CHECK-NOT: tg.adamw_update
// CHECK: return %[[R]]#0, %[[R]]#3, %[[R]]#6, %[[R]]#1, %[[R]]#4, %[[R]]#7, %[[R]]#2, %[[R]]#5, %[[R]]#8
func.func @run(%p0: tensor<4x8xf32>, %g0: tensor<4x8xbf16>, %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>,
               %p1: tensor<8xf32>, %g1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
               %p2: tensor<2xbf16>, %g2: tensor<2xbf16>, %m2: tensor<2xf32>, %v2: tensor<2xf32>,
               %lr: tensor<f32>, %s: tensor<i64>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>) {
  %0:3 = tg.adamw_update %p0, %g0, %m0, %v0, %lr, %s {beta1 = 0.8}
      : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %1:3 = tg.adamw_update %p1, %g1, %m1, %v1, %lr, %s {beta1 = 0.8}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %2:3 = tg.adamw_update %p2, %g2, %m2, %v2, %lr, %s {beta1 = 0.8}
      : (tensor<2xbf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>)
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2, %2#0, %2#1, %2#2
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<2xbf16>, tensor<2xf32>, tensor<2xf32>
}

// Not grouped: updates with other hyper-parameters, one that rounds
// stochastically, and updates an op stands between (the schedule
// --optimizer-in-backward chose).
// CHECK-LABEL: func.func @apart
// CHECK-NOT: tg.multi_adamw_update
// CHECK: tg.adamw_update
// CHECK: tg.adamw_update
// CHECK: tg.adamw_update
// CHECK: tg.neg
// CHECK: tg.adamw_update
func.func @apart(%p: tensor<8xf32>, %q: tensor<8xbf16>, %mq: tensor<8xf32>,
                 %lr: tensor<f32>, %s: tensor<i64>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>) {
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s {weight_decay = 0.0}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %1:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %2:3 = tg.adamw_update %q, %q, %mq, %mq, %lr, %s {rounding_seed = 7}
      : (tensor<8xbf16>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>)
  %n = tg.neg %p : tensor<8xf32>
  %3:3 = tg.adamw_update %p, %n, %p, %p, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %0#0, %1#0, %2#0, %3#0, %n : tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>
}
