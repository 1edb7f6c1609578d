// RUN: tgc-opt %s --split-input-file --tg-amp | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tg-amp="dtype=f16" | FileCheck %s --check-prefix=F16
// RUN: tgc-opt %s --split-input-file --tg-amp="low-precision-ops=matmul,gelu" | FileCheck %s --check-prefix=OVERRIDE
// RUN: tgc-opt %s --split-input-file --tg-amp="f32-ops=cross_entropy" | FileCheck %s --check-prefix=WIDEN
// RUN: tgc-opt %s --split-input-file --tg-amp --tg-autodiff | FileCheck %s --check-prefix=GRAD

// The policy: matmul and attention in bf16, softmax/layer_norm in f32,
// everything else in the widest type of its operands, except that a bias
// (a rank-1 parameter) added to a bf16 product joins it, as autocast's
// linear layer does. The weight used by two matmuls gets one bf16 working
// copy; f32 master parameters stay.

func.func @policy(%x: tensor<4x8xf32> {tg.input = "x"},
                  %t: tensor<4xi64> {tg.input = "t"},
                  %w: tensor<8x8xf32> {tg.param = "w"},
                  %b: tensor<8xf32> {tg.param = "b"},
                  %g: tensor<8xf32> {tg.param = "g"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tg.gelu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = tg.add %3, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tg.gelu %4 : tensor<4x8xf32>
  %6 = tg.layer_norm %5, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %7 = tg.softmax %6 {axis = 1 : i64} : tensor<4x8xf32>
  %8 = tg.cross_entropy %7, %t : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %8 : tensor<f32>
}
// CHECK-LABEL: func.func @policy(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {tg.input = "x"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {tg.param = "w"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<8xf32> {tg.param = "b"}
// CHECK-SAME: -> tensor<f32> attributes {tg.model}
// An argument's cast is made just before its first reader (a parameter's
// 16-bit copy does not live from the start of the step).
// CHECK: %[[XL:.*]] = tg.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[WL:.*]] = tg.cast %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK-NEXT: %[[M0:.*]] = tg.matmul %[[XL]], %[[WL]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// The bias joins the bf16 product.
// CHECK-NEXT: %[[BL:.*]] = tg.cast %[[B]] : tensor<8xf32> -> tensor<8xbf16>
// CHECK-NEXT: %[[A:.*]] = tg.add %[[M0]], %[[BL]] : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
// A follow op on bf16 alone stays bf16.
// CHECK-NEXT: %[[G:.*]] = tg.gelu %[[A]] : tensor<4x8xbf16>
// The second use of w shares the working copy.
// CHECK-NEXT: %[[M1:.*]] = tg.matmul %[[G]], %[[WL]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// An add of bf16 and an f32 that is not a bias promotes to f32.
// CHECK-NEXT: %[[M1W:.*]] = tg.cast %[[M1]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tg.add %[[M1W]], %[[X]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[G1:.*]] = tg.gelu %[[R]] : tensor<4x8xf32>
// CHECK-NEXT: tg.layer_norm %[[G1]], {{.*}} -> tensor<4x8xf32>
// CHECK: tg.softmax {{.*}} : tensor<4x8xf32>
// CHECK: tg.cross_entropy {{.*}} -> tensor<f32>

// F16-LABEL: func.func @policy(
// F16: tg.matmul {{.*}} -> tensor<4x8xf16>

// Overriding the policy: gelu joins the low-precision ops.
// OVERRIDE-LABEL: func.func @policy(
// OVERRIDE: %[[R:.*]] = tg.add {{.*}} -> tensor<4x8xf32>
// OVERRIDE: %[[RL:.*]] = tg.cast %[[R]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// OVERRIDE: tg.gelu %[[RL]] : tensor<4x8xbf16>

// -----

// Clean-up: a cast to the same type and a widening round trip fold away; a
// narrowing round trip (it rounds) stays.
func.func @chains(%x: tensor<4xbf16> {tg.param = "x"}, %y: tensor<4xf32> {tg.param = "y"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %1 = tg.cast %0 : tensor<4xf32> -> tensor<4xbf16>
  %2 = tg.cast %1 : tensor<4xbf16> -> tensor<4xbf16>
  %3 = tg.cast %y : tensor<4xf32> -> tensor<4xbf16>
  %4 = tg.cast %3 : tensor<4xbf16> -> tensor<4xf32>
  %5 = tg.cast %2 : tensor<4xbf16> -> tensor<4xf32>
  %6 = tg.mul %5, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %7 = tg.reduce_sum %6 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %7 : tensor<f32>
}
// CHECK-LABEL: func.func @chains(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xbf16> {tg.param = "x"}, %[[Y:[^:]*]]: tensor<4xf32>
// CHECK-DAG: %[[XW:.*]] = tg.cast %[[X]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-DAG: %[[YL:.*]] = tg.cast %[[Y]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK-DAG: %[[YW:.*]] = tg.cast %[[YL]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: tg.mul %[[XW]], %[[YW]]
// CHECK-NOT: tg.cast
// CHECK: return

// -----

// The fused classifier: cross_entropy's kernels read any float type and
// compute in f32 (f32-math-ops), so the bf16 logits are not widened: no f32
// copy of them lives from the loss to its gradient, which tg-autodiff
// builds in bf16 over the same logits (cross_entropy_grad may write in
// place). Listing cross_entropy in f32-ops widens them again.
func.func @classifier(%x: tensor<4x8xf32> {tg.input = "x"},
                      %t: tensor<4xi64> {tg.input = "t"},
                      %w: tensor<16x8xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = tg.cross_entropy %0, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
// CHECK-LABEL: func.func @classifier(
// CHECK: %[[L:.*]] = tg.matmul {{.*}} -> tensor<4x16xbf16>
// CHECK-NEXT: tg.cross_entropy %[[L]], %{{.*}} : (tensor<4x16xbf16>, tensor<4xi64>) -> tensor<f32>
// WIDEN-LABEL: func.func @classifier(
// WIDEN: %[[L:.*]] = tg.matmul {{.*}} -> tensor<4x16xbf16>
// WIDEN-NEXT: %[[LW:.*]] = tg.cast %[[L]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// WIDEN-NEXT: tg.cross_entropy %[[LW]], %{{.*}} : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
// GRAD-LABEL: func.func @classifier_train_step(
// GRAD: %[[L:.*]] = tg.matmul {{.*}} -> tensor<4x16xbf16>
// GRAD: tg.cross_entropy_grad %[[L]], %{{.*}}, %{{.*}} : (tensor<4x16xbf16>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xbf16>
