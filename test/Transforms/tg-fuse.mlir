// RUN: tgc-opt %s --split-input-file --tg-fuse | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tg-fuse --tg-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: tgc-opt %s --split-input-file --tg-amp --tg-fuse | FileCheck %s --check-prefix=AMP

// A GPT-2 MLP: matmul + bias + gelu becomes one tg.linear returning the
// pre-activation too; the second matmul + bias (no activation) another.
func.func @mlp(%x: tensor<2x3x4xf32> {tg.input = "x"},
               %w1: tensor<4x8xf32> {tg.param = "w1"},
               %b1: tensor<8xf32> {tg.param = "b1"},
               %w2: tensor<8x4xf32> {tg.param = "w2"},
               %b2: tensor<4xf32> {tg.param = "b2"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w1 : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
  %1 = tg.add %0, %b1 : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %2 = tg.gelu %1 : tensor<2x3x8xf32>
  %3 = tg.matmul %2, %w2 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  %4 = tg.add %b2, %3 : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = tg.reduce_sum %4 {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  return %5 : tensor<f32>
}
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4xf32> {tg.input = "x"}, %[[W1:[^:]*]]: tensor<4x8xf32> {tg.param = "w1"}, %[[B1:[^:]*]]: tensor<8xf32> {tg.param = "b1"}, %[[W2:[^:]*]]: tensor<8x4xf32> {tg.param = "w2"}, %[[B2:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[H:.*]], %{{.*}} = tg.linear %[[X]], %[[W1]], %[[B1]] {gelu = true} : (tensor<2x3x4xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
// The bias may be either operand of the add.
// CHECK-NEXT: %[[Y:.*]] = tg.linear %[[H]], %[[W2]], %[[B2]] : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: tg.reduce_sum %[[Y]]
// CHECK-NOT: tg.matmul
// CHECK-NOT: tg.gelu

// The gradient: GELU's from the saved pre-activation, the bias's as a row
// sum, the products' as two matmuls.
// GRAD-LABEL: func.func @mlp_train_step(
// GRAD: %{{.*}}, %[[PRE:.*]] = tg.linear {{.*}} {gelu = true}
// GRAD: %[[DA:.*]] = tg.gelu_grad %[[PRE]], %{{.*}} : tensor<2x3x8xf32>
// GRAD-DAG: tg.sum_to %[[DA]] : tensor<2x3x8xf32> -> tensor<8xf32>
// GRAD-DAG: tg.matmul {{.*}} {transpose_lhs = true} : (tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
// The input needs no gradient: no matmul computes it.
// GRAD-NOT: -> tensor<2x3x4xf32>
// GRAD: return

// Under mixed precision tg-amp keeps a bias added to a bf16 product in
// bf16, as autocast's linear layer: the fused layer is bf16 throughout.
// AMP-LABEL: func.func @mlp(
// AMP: tg.linear %{{.*}}, %{{.*}}, %{{.*}} {gelu = true} : (tensor<2x3x4xbf16>, tensor<4x8xbf16>, tensor<8xbf16>) -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>)

// -----

// A bf16 product widened before an f32 bias that is not a parameter (so
// tg-amp leaves the add in f32): the cast joins the fusion, and tg.linear
// reads bf16 and returns f32.
func.func @widened(%x: tensor<3x4xbf16> {tg.input = "x"},
                   %w: tensor<4x8xbf16> {tg.param = "w"},
                   %b: tensor<8xf32> {tg.input = "b"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<3x4xbf16>, tensor<4x8xbf16>) -> tensor<3x8xbf16>
  %1 = tg.cast %0 : tensor<3x8xbf16> -> tensor<3x8xf32>
  %2 = tg.add %1, %b : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %3 = tg.reduce_sum %2 {axes = array<i64: 0, 1>} : tensor<3x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
// CHECK-LABEL: func.func @widened(
// CHECK-NEXT: %[[Y:.*]] = tg.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x4xbf16>, tensor<4x8xbf16>, tensor<8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: tg.reduce_sum %[[Y]]
// The f32 gradient is rounded to bf16 for the weight's product, as the
// unfused cast's gradient would be.
// GRAD-LABEL: func.func @widened_train_step(
// GRAD: %[[G:.*]] = tg.cast %{{.*}} : tensor<3x8xf32> -> tensor<3x8xbf16>
// GRAD: tg.matmul %{{.*}}, %[[G]] {transpose_lhs = true} : (tensor<3x4xbf16>, tensor<3x8xbf16>) -> tensor<4x8xbf16>

// -----

// Not fused: a transposed weight, a product with another user, a sum that
// is not a bias (both operands full), and a bias of the wrong shape.
func.func @unfused(%x: tensor<3x4xf32> {tg.input = "x"},
                   %w: tensor<5x4xf32> {tg.param = "w"},
                   %v: tensor<4x5xf32> {tg.param = "v"},
                   %b: tensor<5xf32> {tg.param = "b"},
                   %c: tensor<3x5xf32> {tg.param = "c"},
                   %d: tensor<1x5xf32> {tg.param = "d"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w {transpose_rhs = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  %1 = tg.add %0, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %2 = tg.matmul %x, %v : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %3 = tg.add %2, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %4 = tg.mul %2, %3 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %5 = tg.matmul %x, %v : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %6 = tg.add %5, %c : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %7 = tg.matmul %x, %v : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %8 = tg.add %7, %d : (tensor<3x5xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
  %9 = tg.add %1, %4 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %10 = tg.add %9, %6 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %11 = tg.add %10, %8 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %12 = tg.reduce_sum %11 {axes = array<i64: 0, 1>} : tensor<3x5xf32> -> tensor<f32>
  return %12 : tensor<f32>
}
// CHECK-LABEL: func.func @unfused(
// CHECK-NOT: tg.linear
// CHECK: return

// -----

// The erf GELU (BERT's) is not what the epilogues compute: the bias still
// fuses, the activation stays apart, and its gradient keeps the erf form.
func.func @erf(%x: tensor<2x4xf32> {tg.input = "x"},
               %w: tensor<4x8xf32> {tg.param = "w"},
               %b: tensor<8xf32> {tg.param = "b"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %1 = tg.add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = tg.gelu %1 {exact = true} : tensor<2x8xf32>
  %3 = tg.reduce_sum %2 {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
// CHECK-LABEL: func.func @erf(
// CHECK: %[[L:.*]] = tg.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: tg.gelu %[[L]] {exact = true}
// GRAD-LABEL: func.func @erf_train_step(
// GRAD: tg.gelu_grad %{{.*}}, %{{.*}} {exact = true} : tensor<2x8xf32>
