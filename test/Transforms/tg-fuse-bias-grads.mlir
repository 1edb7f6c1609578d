// RUN: tgc-opt %s --split-input-file --tg-fuse-bias-grads | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tg-fuse-bias-grads=print-summary 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY

// An MLP's backward pass, as tg-autodiff writes it after tg-fuse: the
// second layer's weight gradient and bias sum become one GEMM with the
// BGRADA epilogue; its input gradient, GELU's gradient and the first
// layer's bias sum one GEMM with DGELU_BGRAD; the first layer's weight
// gradient reads that result (its bias sum is already taken).
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xbf16>, %[[H:[^:]+]]: tensor<2x4x16xbf16>, %[[PRE:[^:]+]]: tensor<2x4x16xbf16>, %[[W2:[^:]+]]: tensor<16x8xbf16>, %[[DY:[^:]+]]: tensor<2x4x8xbf16>)
// CHECK: %[[H2:.+]] = tg.reshape %[[H]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[DY2:.+]] = tg.reshape %[[DY]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CHECK: %[[DW2:[^ ,]+]], %[[DB2:[^ ]+]] = tg.matmul_bias_grad %[[H2]], %[[DY2]] : (tensor<8x16xbf16>, tensor<8x8xbf16>) -> (tensor<16x8xbf16>, tensor<8xbf16>)
// CHECK: %[[DPRE:[^ ,]+]], %[[DB1:[^ ]+]] = tg.matmul_gelu_grad %[[DY]], %[[W2]], %[[PRE]] {transpose_rhs = true} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<2x4x16xbf16>, tensor<16xbf16>)
// CHECK: %[[X2:.+]] = tg.reshape %[[X]]
// CHECK: %[[DPRE2:.+]] = tg.reshape %[[DPRE]]
// CHECK: %[[DW1:.+]] = tg.matmul %[[X2]], %[[DPRE2]] {transpose_lhs = true}
// CHECK-NOT: tg.sum_to
// CHECK-NOT: tg.gelu_grad
// CHECK: return %[[DW2]], %[[DB2]], %[[DW1]], %[[DB1]]
// SUMMARY: tg-fuse-bias-grads: 1 bias sums joined their weight gradient's GEMM, 1 GELU gradients (with their bias sums) their input gradient's GEMM
func.func @mlp(%x: tensor<2x4x8xbf16>, %h: tensor<2x4x16xbf16>,
               %pre: tensor<2x4x16xbf16>, %w2: tensor<16x8xbf16>,
               %dy: tensor<2x4x8xbf16>)
    -> (tensor<16x8xbf16>, tensor<8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) {
  %h2 = tg.reshape %h : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dy2 = tg.reshape %dy : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
  %dw2 = tg.matmul %h2, %dy2 {transpose_lhs = true}
      : (tensor<8x16xbf16>, tensor<8x8xbf16>) -> tensor<16x8xbf16>
  %db2 = tg.sum_to %dy : tensor<2x4x8xbf16> -> tensor<8xbf16>
  %dh = tg.matmul %dy, %w2 {transpose_rhs = true}
      : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
  %dpre = tg.gelu_grad %pre, %dh : tensor<2x4x16xbf16>
  %x2 = tg.reshape %x : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
  %dpre2 = tg.reshape %dpre : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw1 = tg.matmul %x2, %dpre2 {transpose_lhs = true}
      : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %db1 = tg.sum_to %dpre : tensor<2x4x16xbf16> -> tensor<16xbf16>
  return %dw2, %db2, %dw1, %db1
      : tensor<16x8xbf16>, tensor<8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>
}

// -----

// A weight stored transposed ([out, in]) has the gradient dy^T @ x: the
// bias sum is of the left operand (BGRADB). Rank-2 operands need no
// reshape.
// CHECK-LABEL: func.func @transposed_weight
// CHECK: %[[DW:[^ ,]+]], %[[DB:[^ ]+]] = tg.matmul_bias_grad %arg1, %arg0 {bias_of_lhs = true} : (tensor<8x4xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>)
// CHECK-NEXT: return %[[DW]], %[[DB]]
// SUMMARY: tg-fuse-bias-grads: 1 bias sums joined their weight gradient's GEMM, 0 GELU gradients
func.func @transposed_weight(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>)
    -> (tensor<4x16xf32>, tensor<4xf32>) {
  %dw = tg.matmul %dy, %x {transpose_lhs = true}
      : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %db = tg.sum_to %dy : tensor<8x4xf32> -> tensor<4xf32>
  return %dw, %db : tensor<4x16xf32>, tensor<4xf32>
}

// -----

// Left alone: a sum read before the GEMM (the fused op takes the GEMM's
// place), a sum over fewer dimensions, an exact (erf) GELU, and a product
// that something else reads too.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tg.matmul_bias_grad
// CHECK-NOT: tg.matmul_gelu_grad
// CHECK-COUNT-2: tg.sum_to
// CHECK: tg.gelu_grad {{.*}} {exact = true}
// CHECK: tg.gelu_grad
// SUMMARY-NOT: tg-fuse-bias-grads
func.func @left_alone(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>,
                      %dz: tensor<2x8x4xf32>, %w: tensor<16x4xf32>,
                      %pre: tensor<8x16xf32>)
    -> (tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4xf32>,
        tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %db = tg.sum_to %dy : tensor<8x4xf32> -> tensor<4xf32>
  %early = tg.mul %db, %db : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %dw = tg.matmul %x, %dy {transpose_lhs = true}
      : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %part = tg.sum_to %dz : tensor<2x8x4xf32> -> tensor<8x4xf32>
  %dh = tg.matmul %dy, %w {transpose_rhs = true}
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %exact = tg.gelu_grad %pre, %dh {exact = true} : tensor<8x16xf32>
  %dbx = tg.sum_to %exact : tensor<8x16xf32> -> tensor<16xf32>
  %dh2 = tg.matmul %dy, %w {transpose_rhs = true}
      : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %twice = tg.gelu_grad %pre, %dh2 : tensor<8x16xf32>
  %dbt = tg.sum_to %twice : tensor<8x16xf32> -> tensor<16xf32>
  return %dw, %db, %early, %part, %exact, %dbt, %twice, %dh2
      : tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4xf32>,
        tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
