// Round-trip (custom and generic syntax) of every tg op and of the tg.model convention.
// RUN: tgc-opt %s | FileCheck %s
// RUN: tgc-opt %s | tgc-opt | FileCheck %s
// RUN: tgc-opt %s --mlir-print-op-generic | tgc-opt | FileCheck %s

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_4bit(
func.func @matmul_4bit(%x: tensor<4x16x48xf32>, %dy: tensor<4x16x64xbf16>,
                       %codes: tensor<1536xui8>, %q: tensor<48xui8>,
                       %absmax: tensor<48xf32>, %map: tensor<16xf32>,
                       %nested: tensor<1xf32>, %dynamic: tensor<256xf32>,
                       %offset: tensor<f32>)
    -> (tensor<4x16x64xf32>, tensor<4x16x48xbf16>) {
  // CHECK: tg.matmul_4bit %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {cols = 48 : i64, rows = 64 : i64} : (tensor<4x16x48xf32>, tensor<1536xui8>, tensor<48xui8>, tensor<16xf32>, tensor<1xf32>, tensor<256xf32>, tensor<f32>) -> tensor<4x16x64xf32>
  %0 = tg.matmul_4bit %x, %codes, %q, %map, %nested, %dynamic, %offset
      {rows = 64 : i64, cols = 48 : i64}
      : (tensor<4x16x48xf32>, tensor<1536xui8>, tensor<48xui8>, tensor<16xf32>,
         tensor<1xf32>, tensor<256xf32>, tensor<f32>) -> tensor<4x16x64xf32>
  // CHECK: tg.matmul_4bit %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {cols = 48 : i64, rows = 64 : i64, transpose_rhs = false} : (tensor<4x16x64xbf16>, tensor<1536xui8>, tensor<48xf32>, tensor<16xf32>) -> tensor<4x16x48xbf16>
  %1 = tg.matmul_4bit %dy, %codes, %absmax, %map
      {rows = 64 : i64, cols = 48 : i64, transpose_rhs = false}
      : (tensor<4x16x64xbf16>, tensor<1536xui8>, tensor<48xf32>, tensor<16xf32>)
      -> tensor<4x16x48xbf16>
  return %0, %1 : tensor<4x16x64xf32>, tensor<4x16x48xbf16>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8x16xf32>, %[[BT:[^:]*]]: tensor<16x8xf32>, %[[AT:[^:]*]]: tensor<8x4xf32>)
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bt: tensor<16x8xf32>,
                  %at: tensor<8x4xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  // CHECK: %[[R0:.*]] = tg.matmul %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[R1:.*]] = tg.matmul %[[A]], %[[BT]] {transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = tg.matmul %a, %bt {transpose_rhs = true}
      : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: %[[R2:.*]] = tg.matmul %[[AT]], %[[B]] {transpose_lhs = true} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %2 = tg.matmul %at, %b {transpose_lhs = true}
      : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // CHECK: %[[R3:.*]] = tg.matmul %[[AT]], %[[BT]] {transpose_lhs = true, transpose_rhs = true} : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %3 = tg.matmul %at, %bt {transpose_lhs = true, transpose_rhs = true}
      : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
  return %0, %1, %2, %3
      : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @matmul_bias_grad(
func.func @matmul_bias_grad(%x: tensor<8x16xbf16>, %dy: tensor<8x4xbf16>)
    -> (tensor<16x4xbf16>, tensor<4xbf16>, tensor<16x4xbf16>, tensor<16xbf16>) {
  // CHECK: tg.matmul_bias_grad %{{.*}}, %{{.*}} : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xbf16>, tensor<4xbf16>)
  %p, %b = tg.matmul_bias_grad %x, %dy
      : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xbf16>, tensor<4xbf16>)
  // CHECK: tg.matmul_bias_grad %{{.*}}, %{{.*}} {bias_of_lhs = true}
  %q, %c = tg.matmul_bias_grad %x, %dy {bias_of_lhs = true}
      : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xbf16>, tensor<16xbf16>)
  return %p, %b, %q, %c : tensor<16x4xbf16>, tensor<4xbf16>, tensor<16x4xbf16>, tensor<16xbf16>
}

// CHECK-LABEL: func.func @matmul_gelu_grad(
func.func @matmul_gelu_grad(%dy: tensor<2x8x4xf32>, %w: tensor<16x4xf32>,
                            %pre: tensor<2x8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<16xf32>) {
  // CHECK: tg.matmul_gelu_grad %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
  %r, %b = tg.matmul_gelu_grad %dy, %w, %pre {transpose_rhs = true}
      : (tensor<2x8x4xf32>, tensor<16x4xf32>, tensor<2x8x16xf32>)
      -> (tensor<2x8x16xf32>, tensor<16xf32>)
  return %r, %b : tensor<2x8x16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @matmul_add(
func.func @matmul_add(%g: tensor<8x4xbf16>, %x: tensor<8x16xbf16>,
                      %acc: tensor<4x16xbf16>) -> tensor<4x16xbf16> {
  // CHECK: tg.matmul_add %{{.*}}, %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<8x4xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %0 = tg.matmul_add %g, %x, %acc {transpose_lhs = true}
      : (tensor<8x4xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// A default-valued attribute written explicitly is not printed.
// CHECK-LABEL: func.func @matmul_default_attrs(
func.func @matmul_default_attrs(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>)
    -> tensor<4x16xf32> {
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %0 = tg.matmul %a, %b {transpose_lhs = false, transpose_rhs = false}
      : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @matmul_batched(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4x8xf32>, %[[W3:[^:]*]]: tensor<3x8x16xf32>, %[[Y:[^:]*]]: tensor<2x1x4x8xf32>, %[[W5:[^:]*]]: tensor<5x16x8xf32>, %[[Z:[^:]*]]: tensor<6x4x8xbf16>, %[[WB:[^:]*]]: tensor<8x16xbf16>, %[[H:[^:]*]]: tensor<3x8x4xf16>, %[[WH:[^:]*]]: tensor<8x16xf16>)
func.func @matmul_batched(%x: tensor<2x3x4x8xf32>, %w3: tensor<3x8x16xf32>,
                          %y: tensor<2x1x4x8xf32>, %w5: tensor<5x16x8xf32>,
                          %z: tensor<6x4x8xbf16>, %wb: tensor<8x16xbf16>,
                          %h: tensor<3x8x4xf16>, %wh: tensor<8x16xf16>)
    -> (tensor<2x3x4x16xf32>, tensor<2x5x4x16xf32>, tensor<6x4x16xbf16>,
        tensor<3x4x16xf16>) {
  // Batch dims [2, 3] and [3] broadcast to [2, 3].
  // CHECK: %[[R0:.*]] = tg.matmul %[[X]], %[[W3]] : (tensor<2x3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x3x4x16xf32>
  %0 = tg.matmul %x, %w3
      : (tensor<2x3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x3x4x16xf32>
  // Batch dims [2, 1] and [5] broadcast to [2, 5].
  // CHECK: %[[R1:.*]] = tg.matmul %[[Y]], %[[W5]] {transpose_rhs = true} : (tensor<2x1x4x8xf32>, tensor<5x16x8xf32>) -> tensor<2x5x4x16xf32>
  %1 = tg.matmul %y, %w5 {transpose_rhs = true}
      : (tensor<2x1x4x8xf32>, tensor<5x16x8xf32>) -> tensor<2x5x4x16xf32>
  // A rank-2 rhs is shared by every batch.
  // CHECK: %[[R2:.*]] = tg.matmul %[[Z]], %[[WB]] : (tensor<6x4x8xbf16>, tensor<8x16xbf16>) -> tensor<6x4x16xbf16>
  %2 = tg.matmul %z, %wb
      : (tensor<6x4x8xbf16>, tensor<8x16xbf16>) -> tensor<6x4x16xbf16>
  // CHECK: %[[R3:.*]] = tg.matmul %[[H]], %[[WH]] {transpose_lhs = true} : (tensor<3x8x4xf16>, tensor<8x16xf16>) -> tensor<3x4x16xf16>
  %3 = tg.matmul %h, %wh {transpose_lhs = true}
      : (tensor<3x8x4xf16>, tensor<8x16xf16>) -> tensor<3x4x16xf16>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
  return %0, %1, %2, %3 : tensor<2x3x4x16xf32>, tensor<2x5x4x16xf32>,
      tensor<6x4x16xbf16>, tensor<3x4x16xf16>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary(
// CHECK-SAME: %[[M:[^:]*]]: tensor<4x8xf32>, %[[ROW:[^:]*]]: tensor<8xf32>, %[[COL:[^:]*]]: tensor<4x1xf32>, %[[S:[^:]*]]: tensor<f32>, %[[H:[^:]*]]: tensor<2x4x8xf16>, %[[HR:[^:]*]]: tensor<1x8xf16>, %[[B:[^:]*]]: tensor<4x8xbf16>, %[[BS:[^:]*]]: tensor<bf16>)
func.func @binary(%m: tensor<4x8xf32>, %row: tensor<8xf32>, %col: tensor<4x1xf32>,
                  %s: tensor<f32>, %h: tensor<2x4x8xf16>, %hr: tensor<1x8xf16>,
                  %b: tensor<4x8xbf16>, %bs: tensor<bf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf16>, tensor<4x8xbf16>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[ADD:.*]] = tg.add %[[M]], %[[ROW]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %add = tg.add %m, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[SUB:.*]] = tg.sub %[[COL]], %[[ROW]] : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %sub = tg.sub %col, %row : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[MUL:.*]] = tg.mul %[[H]], %[[HR]] : (tensor<2x4x8xf16>, tensor<1x8xf16>) -> tensor<2x4x8xf16>
  %mul = tg.mul %h, %hr : (tensor<2x4x8xf16>, tensor<1x8xf16>) -> tensor<2x4x8xf16>
  // CHECK: %[[DIV:.*]] = tg.div %[[B]], %[[BS]] : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %div = tg.div %b, %bs : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  // CHECK: %[[MAX:.*]] = tg.maximum %[[S]], %[[M]] : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %max = tg.maximum %s, %m : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[MIN:.*]] = tg.minimum %[[M]], %[[M]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %min = tg.minimum %m, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[OUTER:.*]] = tg.mul %[[COL]], %[[ROW]] : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %outer = tg.mul %col, %row : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: return %[[ADD]], %[[SUB]], %[[MUL]], %[[DIV]], %[[MAX]], %[[MIN]], %[[OUTER]]
  return %add, %sub, %mul, %div, %max, %min, %outer
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf16>, tensor<4x8xbf16>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[H:[^:]*]]: tensor<4x8xf16>, %[[B:[^:]*]]: tensor<2x3xbf16>)
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %b: tensor<2x3xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>,
        tensor<2x3xbf16>, tensor<4x8xf16>, tensor<2x3xbf16>, tensor<4x8xf32>) {
  // CHECK: %[[NEG:.*]] = tg.neg %[[X]] : tensor<4x8xf32>
  %neg = tg.neg %x : tensor<4x8xf32>
  // CHECK: %[[EXP:.*]] = tg.exp %[[X]] : tensor<4x8xf32>
  %exp = tg.exp %x : tensor<4x8xf32>
  // CHECK: %[[LOG:.*]] = tg.log %[[H]] : tensor<4x8xf16>
  %log = tg.log %h : tensor<4x8xf16>
  // CHECK: %[[SQRT:.*]] = tg.sqrt %[[X]] : tensor<4x8xf32>
  %sqrt = tg.sqrt %x : tensor<4x8xf32>
  // CHECK: %[[RSQRT:.*]] = tg.rsqrt %[[B]] : tensor<2x3xbf16>
  %rsqrt = tg.rsqrt %b : tensor<2x3xbf16>
  // CHECK: %[[TANH:.*]] = tg.tanh %[[H]] : tensor<4x8xf16>
  %tanh = tg.tanh %h : tensor<4x8xf16>
  // CHECK: %[[RELU:.*]] = tg.relu %[[B]] : tensor<2x3xbf16>
  %relu = tg.relu %b : tensor<2x3xbf16>
  // CHECK: %[[GELU:.*]] = tg.gelu %[[X]] : tensor<4x8xf32>
  %gelu = tg.gelu %x : tensor<4x8xf32>
  // CHECK: return %[[NEG]], %[[EXP]], %[[LOG]], %[[SQRT]], %[[RSQRT]], %[[TANH]], %[[RELU]], %[[GELU]]
  return %neg, %exp, %log, %sqrt, %rsqrt, %tanh, %relu, %gelu
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>,
        tensor<2x3xbf16>, tensor<4x8xf16>, tensor<2x3xbf16>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @where(
// CHECK-SAME: %[[C:[^:]*]]: tensor<4x1xi1>, %[[L:[^:]*]]: tensor<4x8xf32>, %[[R:[^:]*]]: tensor<f32>, %[[CB:[^:]*]]: tensor<2x3xi1>, %[[LB:[^:]*]]: tensor<3xbf16>, %[[RB:[^:]*]]: tensor<2x1xbf16>)
func.func @where(%c: tensor<4x1xi1>, %l: tensor<4x8xf32>, %r: tensor<f32>,
                 %cb: tensor<2x3xi1>, %lb: tensor<3xbf16>, %rb: tensor<2x1xbf16>)
    -> (tensor<4x8xf32>, tensor<2x3xbf16>) {
  // CHECK: %[[W0:.*]] = tg.where %[[C]], %[[L]], %[[R]] : (tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %0 = tg.where %c, %l, %r
      : (tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: %[[W1:.*]] = tg.where %[[CB]], %[[LB]], %[[RB]] : (tensor<2x3xi1>, tensor<3xbf16>, tensor<2x1xbf16>) -> tensor<2x3xbf16>
  %1 = tg.where %cb, %lb, %rb
      : (tensor<2x3xi1>, tensor<3xbf16>, tensor<2x1xbf16>) -> tensor<2x3xbf16>
  // CHECK: return %[[W0]], %[[W1]]
  return %0, %1 : tensor<4x8xf32>, tensor<2x3xbf16>
}

// CHECK-LABEL: func.func @cumsum(
// CHECK-SAME: %[[M:[^:]*]]: tensor<4x32xi32>, %[[H:[^:]*]]: tensor<2x8xbf16>)
func.func @cumsum(%m: tensor<4x32xi32>, %h: tensor<2x8xbf16>)
    -> (tensor<4x32xi32>, tensor<2x8xbf16>) {
  // CHECK: %[[C0:.*]] = tg.cumsum %[[M]] {axis = 1 : i64} : tensor<4x32xi32>
  %0 = tg.cumsum %m {axis = 1 : i64} : tensor<4x32xi32>
  // CHECK: %[[C1:.*]] = tg.cumsum %[[H]] {axis = -2 : i64, reverse = true} : tensor<2x8xbf16>
  %1 = tg.cumsum %h {axis = -2 : i64, reverse = true} : tensor<2x8xbf16>
  // CHECK: return %[[C0]], %[[C1]]
  return %0, %1 : tensor<4x32xi32>, tensor<2x8xbf16>
}

// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %[[S:[^:]*]]: tensor<16x32x64xf32>, %[[P:[^:]*]]: tensor<32x32xi64>, %[[G:[^:]*]]: tensor<16x32x32xf32>)
func.func @gather(%s: tensor<16x32x64xf32>, %p: tensor<32x32xi64>,
                  %g: tensor<16x32x32xf32>)
    -> (tensor<16x32x32xf32>, tensor<16x32x64xf32>) {
  // CHECK: %[[R:.*]] = tg.gather %[[S]], %[[P]] {axis = 2 : i64} : (tensor<16x32x64xf32>, tensor<32x32xi64>) -> tensor<16x32x32xf32>
  %0 = tg.gather %s, %p {axis = 2 : i64}
      : (tensor<16x32x64xf32>, tensor<32x32xi64>) -> tensor<16x32x32xf32>
  // CHECK: %[[D:.*]] = tg.gather_grad %[[G]], %[[P]] {axis = -1 : i64} : (tensor<16x32x32xf32>, tensor<32x32xi64>) -> tensor<16x32x64xf32>
  %1 = tg.gather_grad %g, %p {axis = -1 : i64}
      : (tensor<16x32x32xf32>, tensor<32x32xi64>) -> tensor<16x32x64xf32>
  // CHECK: return %[[R]], %[[D]]
  return %0, %1 : tensor<16x32x32xf32>, tensor<16x32x64xf32>
}

// CHECK-LABEL: func.func @experts(
func.func @experts(%probs: tensor<64x8xf32>, %x: tensor<64x32xbf16>,
                   %w0: tensor<96x32xbf16>, %w1: tensor<96x32xbf16>,
                   %d0: tensor<96x32xbf16>, %d1: tensor<96x32xbf16>)
    -> (tensor<128x32xbf16>, tensor<96x32xbf16>, tensor<96x32xbf16>) {
  // CHECK: %[[C:.*]] = tg.top_k %{{.*}} {k = 2 : i64} : (tensor<64x8xf32>) -> tensor<64x2xi64>
  %c = tg.top_k %probs {k = 2 : i64} : (tensor<64x8xf32>) -> tensor<64x2xi64>
  // CHECK: %rows, %positions, %offsets = tg.moe_route %[[C]] : (tensor<64x2xi64>) -> (tensor<128x1xi64>, tensor<64x2xi64>, tensor<9xi64>)
  %rows, %positions, %offsets = tg.moe_route %c
      : (tensor<64x2xi64>) -> (tensor<128x1xi64>, tensor<64x2xi64>, tensor<9xi64>)
  %xs = tg.gather %x, %rows {axis = 0 : i64}
      : (tensor<64x32xbf16>, tensor<128x1xi64>) -> tensor<128x32xbf16>
  // Two experts' rows of the nine offsets' eight: only the types matter here.
  %o = tg.slice %offsets {offsets = array<i64: 0>} : tensor<9xi64> -> tensor<3xi64>
  // CHECK: %[[H:.*]] = tg.expert_linear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<128x32xbf16>, tensor<3xi64>, tensor<96x32xbf16>, tensor<96x32xbf16>) -> tensor<128x96xbf16>
  %h = tg.expert_linear %xs, %o, %w0, %w1 {transpose_weight = true}
      : (tensor<128x32xbf16>, tensor<3xi64>, tensor<96x32xbf16>, tensor<96x32xbf16>)
      -> tensor<128x96xbf16>
  // CHECK: %[[Y:.*]] = tg.expert_linear %[[H]], %{{.*}}, %{{.*}}, %{{.*}} : (tensor<128x96xbf16>, tensor<3xi64>, tensor<96x32xbf16>, tensor<96x32xbf16>) -> tensor<128x32xbf16>
  %y = tg.expert_linear %h, %o, %d0, %d1
      : (tensor<128x96xbf16>, tensor<3xi64>, tensor<96x32xbf16>, tensor<96x32xbf16>)
      -> tensor<128x32xbf16>
  // CHECK: %[[G:.*]]:2 = tg.expert_linear_weight_grad %[[H]], %{{.*}}, %{{.*}} : (tensor<128x96xbf16>, tensor<128x32xbf16>, tensor<3xi64>) -> (tensor<96x32xbf16>, tensor<96x32xbf16>)
  %g:2 = tg.expert_linear_weight_grad %h, %xs, %o
      : (tensor<128x96xbf16>, tensor<128x32xbf16>, tensor<3xi64>)
      -> (tensor<96x32xbf16>, tensor<96x32xbf16>)
  return %y, %g#0, %g#1 : tensor<128x32xbf16>, tensor<96x32xbf16>, tensor<96x32xbf16>
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[H:[^:]*]]: tensor<4x8xf16>)
func.func @softmax(%x: tensor<2x4x8xf32>, %h: tensor<4x8xf16>)
    -> (tensor<2x4x8xf32>, tensor<4x8xf16>) {
  // CHECK: %[[S0:.*]] = tg.softmax %[[X]] {axis = -1 : i64} : tensor<2x4x8xf32>
  %0 = tg.softmax %x {axis = -1 : i64} : tensor<2x4x8xf32>
  // CHECK: %[[S1:.*]] = tg.softmax %[[H]] {axis = 0 : i64} : tensor<4x8xf16>
  %1 = tg.softmax %h {axis = 0 : i64} : tensor<4x8xf16>
  // CHECK: return %[[S0]], %[[S1]]
  return %0, %1 : tensor<2x4x8xf32>, tensor<4x8xf16>
}

// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[XB:[^:]*]]: tensor<16xbf16>, %[[WB:[^:]*]]: tensor<16xbf16>)
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>,
                      %xb: tensor<16xbf16>, %wb: tensor<16xbf16>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<16xbf16>) {
  // The default epsilon (1e-5) is not printed.
  // CHECK: %[[N0:.*]] = tg.layer_norm %[[X]], %[[W]], %[[B]] : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %0 = tg.layer_norm %x, %w, %b
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[N1:.*]] = tg.layer_norm %[[X]], %[[W]], %[[B]] {epsilon = 9.99{{[0-9]*}}E-7 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %1 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-6}
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: %[[N2:.*]] = tg.layer_norm %[[XB]], %[[WB]], %[[WB]] {epsilon = 0.000000e+00 : f64} : (tensor<16xbf16>, tensor<16xbf16>, tensor<16xbf16>) -> tensor<16xbf16>
  %2 = tg.layer_norm %xb, %wb, %wb {epsilon = 0.0}
      : (tensor<16xbf16>, tensor<16xbf16>, tensor<16xbf16>) -> tensor<16xbf16>
  // CHECK: return %[[N0]], %[[N1]], %[[N2]]
  return %0, %1, %2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<16xbf16>
}

// A residual add in the norm: a 16-bit addend beside an f32 input, the f32
// sum returned beside the (here bf16) normalized result.
// CHECK-LABEL: func.func @norms_with_addend(
func.func @norms_with_addend(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>,
                             %r: tensor<2x4x8xbf16>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf32>,
        tensor<2x4x8xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tg.layer_norm %{{.*}}, %{{.*}}, %{{.*}} plus %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>)
  %0:2 = tg.layer_norm %x, %w, %w plus %r
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>)
      -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>)
  // CHECK: %{{.*}}, %{{.*}} = tg.rms_norm %{{.*}}, %{{.*}} plus %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %1:2 = tg.rms_norm %x, %w plus %x {epsilon = 1.0e-5}
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return %0#0, %0#1, %1#0, %1#1
      : tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @rms_norm_and_rope(
func.func @rms_norm_and_rope(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>,
                             %g: tensor<2x4x8xf32>, %f: tensor<4xf32>,
                             %hb: tensor<2x3x5x8xbf16>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>,
        tensor<2x3x5x8xbf16>, tensor<2x4x8xf32>) {
  // The default epsilon (1e-6, Llama's) is not printed.
  // CHECK: tg.rms_norm %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %0 = tg.rms_norm %x, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: tg.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %1:2 = tg.rms_norm_grad %x, %w, %g {epsilon = 1.0e-5}
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<8xf32>)
  // CHECK: tg.rope %{{.*}}, %{{.*}} : (tensor<2x3x5x8xbf16>, tensor<4xf32>) -> tensor<2x3x5x8xbf16>
  %2 = tg.rope %hb, %f : (tensor<2x3x5x8xbf16>, tensor<4xf32>) -> tensor<2x3x5x8xbf16>
  // CHECK: tg.rope %{{.*}}, %{{.*}} {inverse = true} : (tensor<2x4x8xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  %3 = tg.rope %x, %f {inverse = true} : (tensor<2x4x8xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return %0, %1#0, %1#1, %2, %3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>,
      tensor<8xf32>, tensor<2x3x5x8xbf16>, tensor<2x4x8xf32>
}

// Grouped-query attention: two key/value heads for six query heads.
// CHECK-LABEL: func.func @grouped_attention(
func.func @grouped_attention(%q: tensor<2x6x8x16xf32>, %kv: tensor<2x2x8x16xf32>)
    -> tensor<2x6x8x16xf32> {
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true} : (tensor<2x6x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x6x8x16xf32>
  %0 = tg.attention %q, %kv, %kv {causal = true}
      : (tensor<2x6x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x6x8x16xf32>
  return %0 : tensor<2x6x8x16xf32>
}

// The bshd layout: [B, T, H, D] heads (8 positions, six query heads and
// two key/value heads), the result in the same layout.
// CHECK-LABEL: func.func @bshd_attention(
func.func @bshd_attention(%q: tensor<2x8x6x16xf32>, %kv: tensor<2x8x2x16xf32>)
    -> tensor<2x8x6x16xf32> {
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {bshd = true, causal = true} : (tensor<2x8x6x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> tensor<2x8x6x16xf32>
  %0 = tg.attention %q, %kv, %kv {bshd = true, causal = true}
      : (tensor<2x8x6x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> tensor<2x8x6x16xf32>
  return %0 : tensor<2x8x6x16xf32>
}

// Mistral's sliding window: each query sees its last 4 keys.
// CHECK-LABEL: func.func @windowed_attention(
func.func @windowed_attention(%q: tensor<2x6x8x16xf32>, %kv: tensor<2x2x8x16xf32>)
    -> tensor<2x6x8x16xf32> {
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, window = 4 : i64}
  %0 = tg.attention %q, %kv, %kv {causal = true, window = 4}
      : (tensor<2x6x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x6x8x16xf32>
  return %0 : tensor<2x6x8x16xf32>
}

// Packed examples: segment ids in the key mask, rotary positions that
// restart per example.
// CHECK-LABEL: func.func @packed_attention(
func.func @packed_attention(%q: tensor<2x6x8x16xf32>, %kv: tensor<2x2x8x16xf32>,
                            %ids: tensor<2x8xi64>, %pos: tensor<2x8xi32>,
                            %f: tensor<8xf32>)
    -> (tensor<2x6x8x16xf32>, tensor<2x6x8x16xf32>) {
  // CHECK: tg.rope %{{.*}}, %{{.*}} positions %{{.*}} : (tensor<2x6x8x16xf32>, tensor<8xf32>, tensor<2x8xi32>) -> tensor<2x6x8x16xf32>
  %0 = tg.rope %q, %f positions %pos : (tensor<2x6x8x16xf32>, tensor<8xf32>, tensor<2x8xi32>) -> tensor<2x6x8x16xf32>
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {causal = true, segments = true}
  %1 = tg.attention %0, %kv, %kv mask %ids {causal = true, segments = true}
      : (tensor<2x6x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8xi64>) -> tensor<2x6x8x16xf32>
  return %0, %1 : tensor<2x6x8x16xf32>, tensor<2x6x8x16xf32>
}

// Gemma 2's soft-capped scores (and its grouped heads and window).
// CHECK-LABEL: func.func @softcapped_attention(
func.func @softcapped_attention(%q: tensor<2x6x8x16xbf16>, %kv: tensor<2x2x8x16xbf16>)
    -> tensor<2x6x8x16xbf16> {
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, softcap = 5.000000e+01 : f64, window = 4 : i64}
  %0 = tg.attention %q, %kv, %kv {causal = true, window = 4, softcap = 50.0 : f64}
      : (tensor<2x6x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>) -> tensor<2x6x8x16xbf16>
  return %0 : tensor<2x6x8x16xbf16>
}

// A 16-bit table's rows read as f32 (a frozen table stored in bf16).
// CHECK-LABEL: func.func @embedding_widening(
// CHECK: tg.embedding %{{.*}}, %{{.*}} : (tensor<100x16xbf16>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
func.func @embedding_widening(%t: tensor<100x16xbf16>, %i: tensor<2x8xi64>)
    -> tensor<2x8x16xf32> {
  %0 = tg.embedding %t, %i
      : (tensor<100x16xbf16>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @embedding(
// CHECK-SAME: %[[T:[^:]*]]: tensor<100x16xf32>, %[[I64:[^:]*]]: tensor<2x8xi64>, %[[TH:[^:]*]]: tensor<50x4xf16>, %[[I32:[^:]*]]: tensor<3xi32>, %[[I0:[^:]*]]: tensor<i64>)
func.func @embedding(%t: tensor<100x16xf32>, %i64: tensor<2x8xi64>,
                     %th: tensor<50x4xf16>, %i32: tensor<3xi32>, %i0: tensor<i64>)
    -> (tensor<2x8x16xf32>, tensor<3x4xf16>, tensor<16xf32>) {
  // CHECK: %[[E0:.*]] = tg.embedding %[[T]], %[[I64]] : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %0 = tg.embedding %t, %i64
      : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: %[[E1:.*]] = tg.embedding %[[TH]], %[[I32]] : (tensor<50x4xf16>, tensor<3xi32>) -> tensor<3x4xf16>
  %1 = tg.embedding %th, %i32 : (tensor<50x4xf16>, tensor<3xi32>) -> tensor<3x4xf16>
  // CHECK: %[[E2:.*]] = tg.embedding %[[T]], %[[I0]] : (tensor<100x16xf32>, tensor<i64>) -> tensor<16xf32>
  %2 = tg.embedding %t, %i0 : (tensor<100x16xf32>, tensor<i64>) -> tensor<16xf32>
  // CHECK: return %[[E0]], %[[E1]], %[[E2]]
  return %0, %1, %2 : tensor<2x8x16xf32>, tensor<3x4xf16>, tensor<16xf32>
}

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x4x8x16xf32>, %[[K:[^:]*]]: tensor<2x4x8x16xf32>, %[[V:[^:]*]]: tensor<2x4x8x32xf32>, %[[Q2:[^:]*]]: tensor<6x16xbf16>, %[[K2:[^:]*]]: tensor<10x16xbf16>, %[[V2:[^:]*]]: tensor<10x8xbf16>)
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                     %v: tensor<2x4x8x32xf32>, %q2: tensor<6x16xbf16>,
                     %k2: tensor<10x16xbf16>, %v2: tensor<10x8xbf16>)
    -> (tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>, tensor<6x8xbf16>,
        tensor<2x4x8x32xf32>) {
  // CHECK: %[[A0:.*]] = tg.attention %[[Q]], %[[K]], %[[V]] : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x32xf32>
  %0 = tg.attention %q, %k, %v
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>)
      -> tensor<2x4x8x32xf32>
  // CHECK: %[[A1:.*]] = tg.attention %[[Q]], %[[K]], %[[V]] {causal = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x32xf32>
  %1 = tg.attention %q, %k, %v {causal = true}
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>)
      -> tensor<2x4x8x32xf32>
  // Cross-attention: query and key lengths differ, explicit scale.
  // CHECK: %[[A2:.*]] = tg.attention %[[Q2]], %[[K2]], %[[V2]] {scale = 1.250000e-01 : f64} : (tensor<6x16xbf16>, tensor<10x16xbf16>, tensor<10x8xbf16>) -> tensor<6x8xbf16>
  %2 = tg.attention %q2, %k2, %v2 {scale = 0.125}
      : (tensor<6x16xbf16>, tensor<10x16xbf16>, tensor<10x8xbf16>)
      -> tensor<6x8xbf16>
  // CHECK: %[[A3:.*]] = tg.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x32xf32>
  %3 = tg.attention %q, %k, %v {causal = true, scale = 0.5}
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>)
      -> tensor<2x4x8x32xf32>
  // CHECK: return %[[A0]], %[[A1]], %[[A2]], %[[A3]]
  return %0, %1, %2, %3 : tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>,
      tensor<6x8xbf16>, tensor<2x4x8x32xf32>
}

// CHECK-LABEL: func.func @cross_entropy(
// CHECK-SAME: %[[L:[^:]*]]: tensor<8x10xf32>, %[[T:[^:]*]]: tensor<8xi64>, %[[L3:[^:]*]]: tensor<2x4x10xf16>, %[[T3:[^:]*]]: tensor<2x4xi32>, %[[L1:[^:]*]]: tensor<10xbf16>, %[[T0:[^:]*]]: tensor<i64>)
func.func @cross_entropy(%l: tensor<8x10xf32>, %t: tensor<8xi64>,
                         %l3: tensor<2x4x10xf16>, %t3: tensor<2x4xi32>,
                         %l1: tensor<10xbf16>, %t0: tensor<i64>)
    -> (tensor<f32>, tensor<f32>, tensor<f16>, tensor<bf16>) {
  // CHECK: %[[C0:.*]] = tg.cross_entropy %[[L]], %[[T]] : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %0 = tg.cross_entropy %l, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  // CHECK: %[[C1:.*]] = tg.cross_entropy %[[L]], %[[T]] {ignore_index = 0 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %1 = tg.cross_entropy %l, %t {ignore_index = 0 : i64}
      : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  // CHECK: %[[C2:.*]] = tg.cross_entropy %[[L3]], %[[T3]] {ignore_index = -1 : i64} : (tensor<2x4x10xf16>, tensor<2x4xi32>) -> tensor<f16>
  %2 = tg.cross_entropy %l3, %t3 {ignore_index = -1 : i64}
      : (tensor<2x4x10xf16>, tensor<2x4xi32>) -> tensor<f16>
  // CHECK: %[[C3:.*]] = tg.cross_entropy %[[L1]], %[[T0]] : (tensor<10xbf16>, tensor<i64>) -> tensor<bf16>
  %3 = tg.cross_entropy %l1, %t0 : (tensor<10xbf16>, tensor<i64>) -> tensor<bf16>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]]
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<f16>, tensor<bf16>
}

// Gemma 2's final logits, soft-capped by the loss.
// CHECK-LABEL: func.func @cross_entropy_softcap(
// CHECK: tg.cross_entropy %{{.*}}, %{{.*}} {softcap = 3.000000e+01 : f64} : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK: tg.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {softcap = 3.000000e+01 : f64} : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xbf16>
func.func @cross_entropy_softcap(%l: tensor<8x10xbf16>, %t: tensor<8xi64>, %g: tensor<f32>)
    -> (tensor<f32>, tensor<8x10xbf16>) {
  %0 = tg.cross_entropy %l, %t {softcap = 30.0 : f64} : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f32>
  %1 = tg.cross_entropy_grad %l, %t, %g {softcap = 30.0 : f64}
      : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xbf16>
  return %0, %1 : tensor<f32>, tensor<8x10xbf16>
}

// With its gradient (tg-fuse-loss).
// CHECK-LABEL: func.func @cross_entropy_with_grad(
// CHECK: %{{[^ ,]+}}, %{{[^ ]+}} = tg.cross_entropy %arg0, %arg1 grad %arg2 {ignore_index = 0 : i64} : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> (tensor<f32>, tensor<8x10xbf16>)
func.func @cross_entropy_with_grad(%l: tensor<8x10xbf16>, %t: tensor<8xi64>,
                                   %g: tensor<f32>) -> tensor<8x10xbf16> {
  %0, %1 = tg.cross_entropy %l, %t grad %g {ignore_index = 0 : i64}
      : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> (tensor<f32>, tensor<8x10xbf16>)
  return %1 : tensor<8x10xbf16>
}

//===----------------------------------------------------------------------===//
// Shape ops, casts and constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape_transpose(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4xf32>, %[[I:[^:]*]]: tensor<6xi64>)
func.func @reshape_transpose(%x: tensor<2x3x4xf32>, %i: tensor<6xi64>)
    -> (tensor<6x4xf32>, tensor<2x3xi64>, tensor<24xf32>, tensor<4x2x3xf32>,
        tensor<2x3x4xf32>) {
  // CHECK: %[[R0:.*]] = tg.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: %[[R1:.*]] = tg.reshape %[[I]] : tensor<6xi64> -> tensor<2x3xi64>
  %1 = tg.reshape %i : tensor<6xi64> -> tensor<2x3xi64>
  // CHECK: %[[R2:.*]] = tg.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
  %2 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  // CHECK: %[[T0:.*]] = tg.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %3 = tg.transpose %x {permutation = array<i64: 2, 0, 1>}
      : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: %[[T1:.*]] = tg.transpose %[[X]] {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %4 = tg.transpose %x {permutation = array<i64: 0, 1, 2>}
      : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[T0]], %[[T1]]
  return %0, %1, %2, %3, %4 : tensor<6x4xf32>, tensor<2x3xi64>, tensor<24xf32>,
      tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @reshape_scalar(
func.func @reshape_scalar(%x: tensor<1x1xf16>) -> tensor<f16> {
  // CHECK: tg.reshape %{{.*}} : tensor<1x1xf16> -> tensor<f16>
  %0 = tg.reshape %x : tensor<1x1xf16> -> tensor<f16>
  return %0 : tensor<f16>
}

// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x16xf32>, %[[I:[^:]*]]: tensor<10xi32>)
func.func @slice(%x: tensor<8x16xf32>, %i: tensor<10xi32>)
    -> (tensor<4x16xf32>, tensor<2x3xf32>, tensor<5xi32>) {
  // CHECK: %[[S0:.*]] = tg.slice %[[X]] {offsets = array<i64: 4, 0>} : tensor<8x16xf32> -> tensor<4x16xf32>
  %0 = tg.slice %x {offsets = array<i64: 4, 0>} : tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK: %[[S1:.*]] = tg.slice %[[X]] {offsets = array<i64: 1, 13>} : tensor<8x16xf32> -> tensor<2x3xf32>
  %1 = tg.slice %x {offsets = array<i64: 1, 13>} : tensor<8x16xf32> -> tensor<2x3xf32>
  // CHECK: %[[S2:.*]] = tg.slice %[[I]] {offsets = array<i64: 5>} : tensor<10xi32> -> tensor<5xi32>
  %2 = tg.slice %i {offsets = array<i64: 5>} : tensor<10xi32> -> tensor<5xi32>
  // CHECK: return %[[S0]], %[[S1]], %[[S2]]
  return %0, %1, %2 : tensor<4x16xf32>, tensor<2x3xf32>, tensor<5xi32>
}

// CHECK-LABEL: func.func @split_concat(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x12xf32>, %[[H:[^:]*]]: tensor<6x2xf16>)
func.func @split_concat(%x: tensor<4x12xf32>, %h: tensor<6x2xf16>)
    -> (tensor<4x12xf32>, tensor<6x2xf16>, tensor<6x2xf16>) {
  // CHECK: %[[P:.*]]:3 = tg.split %[[X]] {axis = 1 : i64} : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  %p:3 = tg.split %x {axis = 1 : i64}
      : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: %[[Q:.*]]:2 = tg.split %[[H]] {axis = -2 : i64} : tensor<6x2xf16> -> tensor<1x2xf16>, tensor<5x2xf16>
  %q:2 = tg.split %h {axis = -2 : i64}
      : tensor<6x2xf16> -> tensor<1x2xf16>, tensor<5x2xf16>
  // CHECK: %[[C0:.*]] = tg.concat %[[P]]#2, %[[P]]#0, %[[P]]#1 {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x12xf32>
  %c0 = tg.concat %p#2, %p#0, %p#1 {axis = 1 : i64}
      : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x12xf32>
  // CHECK: %[[C1:.*]] = tg.concat %[[Q]]#0, %[[Q]]#1 {axis = 0 : i64} : (tensor<1x2xf16>, tensor<5x2xf16>) -> tensor<6x2xf16>
  %c1 = tg.concat %q#0, %q#1 {axis = 0 : i64}
      : (tensor<1x2xf16>, tensor<5x2xf16>) -> tensor<6x2xf16>
  // A single piece.
  // CHECK: %[[C2:.*]] = tg.concat %[[H]] {axis = -1 : i64} : (tensor<6x2xf16>) -> tensor<6x2xf16>
  %c2 = tg.concat %h {axis = -1 : i64} : (tensor<6x2xf16>) -> tensor<6x2xf16>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]]
  return %c0, %c1, %c2 : tensor<4x12xf32>, tensor<6x2xf16>, tensor<6x2xf16>
}

// CHECK-LABEL: func.func @reductions(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4xf32>, %[[H:[^:]*]]: tensor<4x8xbf16>)
func.func @reductions(%x: tensor<2x3x4xf32>, %h: tensor<4x8xbf16>)
    -> (tensor<2x4xf32>, tensor<2x1x4xf32>, tensor<f32>, tensor<1x1x4xf32>,
        tensor<4xbf16>, tensor<4x1xbf16>) {
  // CHECK: %[[R0:.*]] = tg.reduce_sum %[[X]] {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %0 = tg.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  // CHECK: %[[R1:.*]] = tg.reduce_sum %[[X]] {axes = array<i64: 1>, keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %1 = tg.reduce_sum %x {axes = array<i64: 1>, keep_dims = true}
      : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: %[[R2:.*]] = tg.reduce_mean %[[X]] {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  %2 = tg.reduce_mean %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK: %[[R3:.*]] = tg.reduce_mean %[[X]] {axes = array<i64: 0, 1>, keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x1x4xf32>
  %3 = tg.reduce_mean %x {axes = array<i64: 0, 1>, keep_dims = true}
      : tensor<2x3x4xf32> -> tensor<1x1x4xf32>
  // CHECK: %[[R4:.*]] = tg.reduce_max %[[H]] {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4xbf16>
  %4 = tg.reduce_max %h {axes = array<i64: 1>, keep_dims = false}
      : tensor<4x8xbf16> -> tensor<4xbf16>
  // CHECK: %[[R5:.*]] = tg.reduce_max %[[H]] {axes = array<i64: 1>, keep_dims = true} : tensor<4x8xbf16> -> tensor<4x1xbf16>
  %5 = tg.reduce_max %h {axes = array<i64: 1>, keep_dims = true}
      : tensor<4x8xbf16> -> tensor<4x1xbf16>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]]
  return %0, %1, %2, %3, %4, %5 : tensor<2x4xf32>, tensor<2x1x4xf32>, tensor<f32>,
      tensor<1x1x4xf32>, tensor<4xbf16>, tensor<4x1xbf16>
}

// CHECK-LABEL: func.func @reduce_no_axes(
func.func @reduce_no_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: tg.reduce_sum %{{.*}} {axes = array<i64>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = tg.reduce_sum %x {axes = array<i64>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @broadcast_to(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8xf32>, %[[C:[^:]*]]: tensor<4x1xi1>, %[[S:[^:]*]]: tensor<bf16>)
func.func @broadcast_to(%x: tensor<8xf32>, %c: tensor<4x1xi1>, %s: tensor<bf16>)
    -> (tensor<2x4x8xf32>, tensor<3x4x5xi1>, tensor<2x2xbf16>) {
  // CHECK: %[[B0:.*]] = tg.broadcast_to %[[X]] : tensor<8xf32> -> tensor<2x4x8xf32>
  %0 = tg.broadcast_to %x : tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: %[[B1:.*]] = tg.broadcast_to %[[C]] : tensor<4x1xi1> -> tensor<3x4x5xi1>
  %1 = tg.broadcast_to %c : tensor<4x1xi1> -> tensor<3x4x5xi1>
  // CHECK: %[[B2:.*]] = tg.broadcast_to %[[S]] : tensor<bf16> -> tensor<2x2xbf16>
  %2 = tg.broadcast_to %s : tensor<bf16> -> tensor<2x2xbf16>
  // CHECK: return %[[B0]], %[[B1]], %[[B2]]
  return %0, %1, %2 : tensor<2x4x8xf32>, tensor<3x4x5xi1>, tensor<2x2xbf16>
}

// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %[[F:[^:]*]]: tensor<4x8xf32>, %[[I:[^:]*]]: tensor<4xi64>, %[[P:[^:]*]]: tensor<4x8xi1>, %[[B:[^:]*]]: tensor<4x8xbf16>)
func.func @cast(%f: tensor<4x8xf32>, %i: tensor<4xi64>, %p: tensor<4x8xi1>,
                %b: tensor<4x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4xi32>, tensor<4x8xi8>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>, tensor<4xf32>) {
  // CHECK: %[[C0:.*]] = tg.cast %[[F]] : tensor<4x8xf32> -> tensor<4x8xbf16>
  %0 = tg.cast %f : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: %[[C1:.*]] = tg.cast %[[F]] : tensor<4x8xf32> -> tensor<4x8xf16>
  %1 = tg.cast %f : tensor<4x8xf32> -> tensor<4x8xf16>
  // CHECK: %[[C2:.*]] = tg.cast %[[I]] : tensor<4xi64> -> tensor<4xi32>
  %2 = tg.cast %i : tensor<4xi64> -> tensor<4xi32>
  // CHECK: %[[C3:.*]] = tg.cast %[[F]] : tensor<4x8xf32> -> tensor<4x8xi8>
  %3 = tg.cast %f : tensor<4x8xf32> -> tensor<4x8xi8>
  // CHECK: %[[C4:.*]] = tg.cast %[[P]] : tensor<4x8xi1> -> tensor<4x8xf32>
  %4 = tg.cast %p : tensor<4x8xi1> -> tensor<4x8xf32>
  // CHECK: %[[C5:.*]] = tg.cast %[[B]] : tensor<4x8xbf16> -> tensor<4x8xf32>
  %5 = tg.cast %b : tensor<4x8xbf16> -> tensor<4x8xf32>
  // CHECK: %[[C6:.*]] = tg.cast %[[F]] : tensor<4x8xf32> -> tensor<4x8xi1>
  %6 = tg.cast %f : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: %[[C7:.*]] = tg.cast %[[I]] : tensor<4xi64> -> tensor<4xf32>
  %7 = tg.cast %i : tensor<4xi64> -> tensor<4xf32>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[C4]], %[[C5]], %[[C6]], %[[C7]]
  return %0, %1, %2, %3, %4, %5, %6, %7
      : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4xi32>, tensor<4x8xi8>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi1>, tensor<4xf32>
}

// CHECK-LABEL: func.func @constant_fill(
func.func @constant_fill()
    -> (tensor<2x2xf32>, tensor<3xi64>, tensor<4x8xbf16>, tensor<f32>,
        tensor<4x8xf16>, tensor<2xi32>, tensor<i1>) {
  // CHECK: %[[K0:.*]] = tg.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: %[[K1:.*]] = tg.constant dense<[0, 1, 2]> : tensor<3xi64>
  %1 = tg.constant dense<[0, 1, 2]> : tensor<3xi64>
  // CHECK: %[[K2:.*]] = tg.constant dense<5.000000e-01> : tensor<4x8xbf16>
  %2 = tg.constant dense<0.5> : tensor<4x8xbf16>
  // CHECK: %[[K3:.*]] = tg.constant dense<0.000000e+00> : tensor<f32>
  %3 = tg.constant dense<0.0> : tensor<f32>
  // CHECK: %[[F0:.*]] = tg.fill 1.000000e+00 : tensor<4x8xf16>
  %4 = tg.fill 1.0 : tensor<4x8xf16>
  // CHECK: %[[F1:.*]] = tg.fill -1.000000e+02 : tensor<2xi32>
  %5 = tg.fill -100.0 : tensor<2xi32>
  // CHECK: %[[F2:.*]] = tg.fill 1.000000e+00 : tensor<i1>
  %6 = tg.fill 1.0 : tensor<i1>
  // CHECK: return %[[K0]], %[[K1]], %[[K2]], %[[K3]], %[[F0]], %[[F1]], %[[F2]]
  return %0, %1, %2, %3, %4, %5, %6
      : tensor<2x2xf32>, tensor<3xi64>, tensor<4x8xbf16>, tensor<f32>,
        tensor<4x8xf16>, tensor<2xi32>, tensor<i1>
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sum_to(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[H:[^:]*]]: tensor<4x8xf16>)
func.func @sum_to(%x: tensor<2x4x8xf32>, %h: tensor<4x8xf16>)
    -> (tensor<8xf32>, tensor<1x4x1xf32>, tensor<f16>, tensor<2x4x8xf32>) {
  // CHECK: %[[S0:.*]] = tg.sum_to %[[X]] : tensor<2x4x8xf32> -> tensor<8xf32>
  %0 = tg.sum_to %x : tensor<2x4x8xf32> -> tensor<8xf32>
  // CHECK: %[[S1:.*]] = tg.sum_to %[[X]] : tensor<2x4x8xf32> -> tensor<1x4x1xf32>
  %1 = tg.sum_to %x : tensor<2x4x8xf32> -> tensor<1x4x1xf32>
  // CHECK: %[[S2:.*]] = tg.sum_to %[[H]] : tensor<4x8xf16> -> tensor<f16>
  %2 = tg.sum_to %h : tensor<4x8xf16> -> tensor<f16>
  // CHECK: %[[S3:.*]] = tg.sum_to %[[X]] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %3 = tg.sum_to %x : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  // CHECK: return %[[S0]], %[[S1]], %[[S2]], %[[S3]]
  return %0, %1, %2, %3
      : tensor<8xf32>, tensor<1x4x1xf32>, tensor<f16>, tensor<2x4x8xf32>
}

// The activations of Kernels.def's TGC_ACTIVATION lines and their gradients.
// CHECK-LABEL: func.func @table_activations(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[G:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<16xbf16>)
func.func @table_activations(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>,
                             %b: tensor<16xbf16>)
    -> (tensor<4x8xf32>, tensor<16xbf16>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[S:.*]] = tg.sigmoid %[[X]] : tensor<4x8xf32>
  %0 = tg.sigmoid %x : tensor<4x8xf32>
  // CHECK: %[[SI:.*]] = tg.silu %[[B]] : tensor<16xbf16>
  %1 = tg.silu %b : tensor<16xbf16>
  // CHECK: %[[SG:.*]] = tg.sigmoid_grad %[[X]], %[[G]] : tensor<4x8xf32>
  %2 = tg.sigmoid_grad %x, %g : tensor<4x8xf32>
  // CHECK: %[[SIG:.*]] = tg.silu_grad %[[X]], %[[G]] : tensor<4x8xf32>
  %3 = tg.silu_grad %x, %g : tensor<4x8xf32>
  // CHECK: %[[SP:.*]] = tg.softplus %[[X]] : tensor<4x8xf32>
  %4 = tg.softplus %x : tensor<4x8xf32>
  // CHECK: %[[SPG:.*]] = tg.softplus_grad %[[X]], %[[G]] : tensor<4x8xf32>
  %5 = tg.softplus_grad %x, %g : tensor<4x8xf32>
  // CHECK: return %[[S]], %[[SI]], %[[SG]], %[[SIG]], %[[SP]], %[[SPG]]
  return %0, %1, %2, %3, %4, %5
      : tensor<4x8xf32>, tensor<16xbf16>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>
}

// SwiGLU and its gradient (two results).
// CHECK-LABEL: func.func @swiglu(
// CHECK-SAME: %[[G:[^:]*]]: tensor<2x8xbf16>, %[[U:[^:]*]]: tensor<2x8xbf16>, %[[D:[^:]*]]: tensor<2x8xbf16>)
func.func @swiglu(%g: tensor<2x8xbf16>, %u: tensor<2x8xbf16>,
                  %d: tensor<2x8xbf16>)
    -> (tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x8xbf16>) {
  // CHECK: %[[H:.*]] = tg.swiglu %[[G]], %[[U]] : tensor<2x8xbf16>
  %0 = tg.swiglu %g, %u : tensor<2x8xbf16>
  // CHECK: %[[DG:.*]], %[[DU:.*]] = tg.swiglu_grad %[[G]], %[[U]], %[[D]] : tensor<2x8xbf16>
  %1:2 = tg.swiglu_grad %g, %u, %d : tensor<2x8xbf16>
  // CHECK: return %[[H]], %[[DG]], %[[DU]]
  return %0, %1#0, %1#1
      : tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x8xbf16>
}

// CHECK-LABEL: func.func @activation_grads(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[G:[^:]*]]: tensor<4x8xf32>, %[[XB:[^:]*]]: tensor<16xbf16>, %[[GB:[^:]*]]: tensor<16xbf16>, %[[XH:[^:]*]]: tensor<2x8xf16>, %[[GH:[^:]*]]: tensor<2x8xf16>)
func.func @activation_grads(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>,
                            %xb: tensor<16xbf16>, %gb: tensor<16xbf16>,
                            %xh: tensor<2x8xf16>, %gh: tensor<2x8xf16>)
    -> (tensor<4x8xf32>, tensor<16xbf16>, tensor<2x8xf16>, tensor<4x8xf32>,
        tensor<2x8xf16>) {
  // CHECK: %[[R:.*]] = tg.relu_grad %[[X]], %[[G]] : tensor<4x8xf32>
  %0 = tg.relu_grad %x, %g : tensor<4x8xf32>
  // CHECK: %[[GE:.*]] = tg.gelu_grad %[[XB]], %[[GB]] : tensor<16xbf16>
  %1 = tg.gelu_grad %xb, %gb : tensor<16xbf16>
  // CHECK: %[[T:.*]] = tg.tanh_grad %[[XH]], %[[GH]] : tensor<2x8xf16>
  %2 = tg.tanh_grad %xh, %gh : tensor<2x8xf16>
  // CHECK: %[[S0:.*]] = tg.softmax_grad %[[X]], %[[G]] {axis = -1 : i64} : tensor<4x8xf32>
  %3 = tg.softmax_grad %x, %g {axis = -1 : i64} : tensor<4x8xf32>
  // CHECK: %[[S1:.*]] = tg.softmax_grad %[[XH]], %[[GH]] {axis = 0 : i64} : tensor<2x8xf16>
  %4 = tg.softmax_grad %xh, %gh {axis = 0 : i64} : tensor<2x8xf16>
  // CHECK: return %[[R]], %[[GE]], %[[T]], %[[S0]], %[[S1]]
  return %0, %1, %2, %3, %4 : tensor<4x8xf32>, tensor<16xbf16>, tensor<2x8xf16>,
      tensor<4x8xf32>, tensor<2x8xf16>
}

// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>, %[[G:[^:]*]]: tensor<2x4x8xf32>, %[[XB:[^:]*]]: tensor<3x16xbf16>, %[[WB:[^:]*]]: tensor<16xbf16>)
func.func @layer_norm_grad(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>,
                           %g: tensor<2x4x8xf32>, %xb: tensor<3x16xbf16>,
                           %wb: tensor<16xbf16>)
    -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<3x16xbf16>,
        tensor<16xbf16>, tensor<16xbf16>) {
  // CHECK: %[[IG:[^ ,]+]], %[[WG:[^ ,]+]], %[[BG:[^ ,]+]] = tg.layer_norm_grad %[[X]], %[[W]], %[[G]] : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %0:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: %[[IG2:[^ ,]+]], %[[WG2:[^ ,]+]], %[[BG2:[^ ,]+]] = tg.layer_norm_grad %[[XB]], %[[WB]], %[[XB]] {epsilon = 1.000000e-03 : f64} : (tensor<3x16xbf16>, tensor<16xbf16>, tensor<3x16xbf16>) -> (tensor<3x16xbf16>, tensor<16xbf16>, tensor<16xbf16>)
  %1:3 = tg.layer_norm_grad %xb, %wb, %xb {epsilon = 1.0e-3}
      : (tensor<3x16xbf16>, tensor<16xbf16>, tensor<3x16xbf16>)
      -> (tensor<3x16xbf16>, tensor<16xbf16>, tensor<16xbf16>)
  // CHECK: return %[[IG]], %[[WG]], %[[BG]], %[[IG2]], %[[WG2]], %[[BG2]]
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2
      : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<3x16xbf16>,
        tensor<16xbf16>, tensor<16xbf16>
}

// A tied table's gradient with the classifier's (bf16) as its addend.
// CHECK-LABEL: func.func @embedding_grad_addend(
// CHECK: tg.embedding_grad %{{.*}}, %{{.*}} addend %{{.*}} {padding_idx = 0 : i64} : (tensor<2x8xi64>, tensor<2x8x16xf32>, tensor<100x16xbf16>) -> tensor<100x16xf32>
func.func @embedding_grad_addend(%i: tensor<2x8xi64>, %g: tensor<2x8x16xf32>,
                                 %acc: tensor<100x16xbf16>)
    -> tensor<100x16xf32> {
  %0 = tg.embedding_grad %i, %g addend %acc {padding_idx = 0 : i64}
      : (tensor<2x8xi64>, tensor<2x8x16xf32>, tensor<100x16xbf16>) -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}

// CHECK-LABEL: func.func @embedding_grad(
// CHECK-SAME: %[[I:[^:]*]]: tensor<2x8xi64>, %[[G:[^:]*]]: tensor<2x8x16xf32>, %[[I32:[^:]*]]: tensor<5xi32>, %[[GB:[^:]*]]: tensor<5x4xbf16>)
func.func @embedding_grad(%i: tensor<2x8xi64>, %g: tensor<2x8x16xf32>,
                          %i32: tensor<5xi32>, %gb: tensor<5x4xbf16>)
    -> (tensor<100x16xf32>, tensor<7x4xbf16>) {
  // CHECK: %[[E0:.*]] = tg.embedding_grad %[[I]], %[[G]] : (tensor<2x8xi64>, tensor<2x8x16xf32>) -> tensor<100x16xf32>
  %0 = tg.embedding_grad %i, %g
      : (tensor<2x8xi64>, tensor<2x8x16xf32>) -> tensor<100x16xf32>
  // CHECK: %[[E1:.*]] = tg.embedding_grad %[[I32]], %[[GB]] : (tensor<5xi32>, tensor<5x4xbf16>) -> tensor<7x4xbf16>
  %1 = tg.embedding_grad %i32, %gb
      : (tensor<5xi32>, tensor<5x4xbf16>) -> tensor<7x4xbf16>
  // CHECK: return %[[E0]], %[[E1]]
  return %0, %1 : tensor<100x16xf32>, tensor<7x4xbf16>
}

// Packed heads (tg-pack-qkv): 2 query heads and 1 key/value head of 16.
// CHECK-LABEL: func.func @attention_packed(
// CHECK: tg.attention %arg0, %arg0, %arg0 {bshd = true, packed = true} : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> tensor<2x8x2x16xbf16>
// CHECK: tg.attention_grad %arg0, %arg0, %arg0, %{{[^ ,]+}}, %{{[^ ]+}} {bshd = true, output_mask = array<i1: true, false, false>, packed = true} : ({{.*}}) -> (tensor<2x8x4x16xbf16>, tensor<2x8x1x16xbf16>, tensor<2x8x1x16xbf16>)
func.func @attention_packed(%x: tensor<2x8x4x16xbf16>) -> tensor<2x8x4x16xbf16> {
  %o = tg.attention %x, %x, %x {bshd = true, packed = true}
      : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>) -> tensor<2x8x2x16xbf16>
  %g:3 = tg.attention_grad %x, %x, %x, %o, %o {bshd = true, output_mask = array<i1: true, false, false>, packed = true}
      : (tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>)
      -> (tensor<2x8x4x16xbf16>, tensor<2x8x1x16xbf16>, tensor<2x8x1x16xbf16>)
  return %g#0 : tensor<2x8x4x16xbf16>
}

// CHECK-LABEL: func.func @attention_grad(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x8x16xf32>, %[[K:[^:]*]]: tensor<2x8x16xf32>, %[[V:[^:]*]]: tensor<2x8x32xf32>, %[[O:[^:]*]]: tensor<2x8x32xf32>, %[[G:[^:]*]]: tensor<2x8x32xf32>, %[[QH:[^:]*]]: tensor<6x16xf16>, %[[KH:[^:]*]]: tensor<10x16xf16>, %[[VH:[^:]*]]: tensor<10x8xf16>, %[[OH:[^:]*]]: tensor<6x8xf16>)
func.func @attention_grad(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>,
                          %v: tensor<2x8x32xf32>, %o: tensor<2x8x32xf32>,
                          %g: tensor<2x8x32xf32>, %qh: tensor<6x16xf16>,
                          %kh: tensor<10x16xf16>, %vh: tensor<10x8xf16>,
                          %oh: tensor<6x8xf16>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>,
        tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>) {
  // CHECK: %[[DQ:[^ ,]+]], %[[DK:[^ ,]+]], %[[DV:[^ ,]+]] = tg.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[G]] {causal = true} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>)
  %0:3 = tg.attention_grad %q, %k, %v, %o, %g {causal = true}
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>,
         tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>)
  // CHECK: %[[DQH:[^ ,]+]], %[[DKH:[^ ,]+]], %[[DVH:[^ ,]+]] = tg.attention_grad %[[QH]], %[[KH]], %[[VH]], %[[OH]], %[[OH]] {scale = 2.500000e-01 : f64} : (tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>, tensor<6x8xf16>, tensor<6x8xf16>) -> (tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>)
  %1:3 = tg.attention_grad %qh, %kh, %vh, %oh, %oh {scale = 0.25}
      : (tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>, tensor<6x8xf16>,
         tensor<6x8xf16>)
      -> (tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>)
  // CHECK: return %[[DQ]], %[[DK]], %[[DV]], %[[DQH]], %[[DKH]], %[[DVH]]
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2
      : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>,
        tensor<6x16xf16>, tensor<10x16xf16>, tensor<10x8xf16>
}

// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME: %[[L:[^:]*]]: tensor<8x10xf32>, %[[T:[^:]*]]: tensor<8xi64>, %[[G:[^:]*]]: tensor<f32>, %[[LB:[^:]*]]: tensor<2x4x10xbf16>, %[[TB:[^:]*]]: tensor<2x4xi32>, %[[GB:[^:]*]]: tensor<bf16>)
func.func @cross_entropy_grad(%l: tensor<8x10xf32>, %t: tensor<8xi64>,
                              %g: tensor<f32>, %lb: tensor<2x4x10xbf16>,
                              %tb: tensor<2x4xi32>, %gb: tensor<bf16>)
    -> (tensor<8x10xf32>, tensor<2x4x10xbf16>) {
  // CHECK: %[[R0:.*]] = tg.cross_entropy_grad %[[L]], %[[T]], %[[G]] : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %0 = tg.cross_entropy_grad %l, %t, %g
      : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  // CHECK: %[[R1:.*]] = tg.cross_entropy_grad %[[LB]], %[[TB]], %[[GB]] {ignore_index = 0 : i64} : (tensor<2x4x10xbf16>, tensor<2x4xi32>, tensor<bf16>) -> tensor<2x4x10xbf16>
  %1 = tg.cross_entropy_grad %lb, %tb, %gb {ignore_index = 0 : i64}
      : (tensor<2x4x10xbf16>, tensor<2x4xi32>, tensor<bf16>) -> tensor<2x4x10xbf16>
  // CHECK: return %[[R0]], %[[R1]]
  return %0, %1 : tensor<8x10xf32>, tensor<2x4x10xbf16>
}

// CHECK-LABEL: func.func @reduce_max_grad(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4xf32>, %[[O:[^:]*]]: tensor<2x4xf32>, %[[OK:[^:]*]]: tensor<2x1x1xf32>)
func.func @reduce_max_grad(%x: tensor<2x3x4xf32>, %o: tensor<2x4xf32>,
                           %ok: tensor<2x1x1xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  // CHECK: %[[G0:.*]] = tg.reduce_max_grad %[[X]], %[[O]], %[[O]] {axes = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  %0 = tg.reduce_max_grad %x, %o, %o {axes = array<i64: 1>}
      : (tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: %[[G1:.*]] = tg.reduce_max_grad %[[X]], %[[OK]], %[[OK]] {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %1 = tg.reduce_max_grad %x, %ok, %ok {axes = array<i64: 1, 2>, keep_dims = true}
      : (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
      -> tensor<2x3x4xf32>
  // CHECK: return %[[G0]], %[[G1]]
  return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @slice_grad(
// CHECK-SAME: %[[G:[^:]*]]: tensor<2x3xf32>, %[[GH:[^:]*]]: tensor<4xf16>)
func.func @slice_grad(%g: tensor<2x3xf32>, %gh: tensor<4xf16>)
    -> (tensor<8x16xf32>, tensor<4xf16>) {
  // CHECK: %[[S0:.*]] = tg.slice_grad %[[G]] {offsets = array<i64: 1, 13>} : tensor<2x3xf32> -> tensor<8x16xf32>
  %0 = tg.slice_grad %g {offsets = array<i64: 1, 13>} : tensor<2x3xf32> -> tensor<8x16xf32>
  // CHECK: %[[S1:.*]] = tg.slice_grad %[[GH]] {offsets = array<i64: 0>} : tensor<4xf16> -> tensor<4xf16>
  %1 = tg.slice_grad %gh {offsets = array<i64: 0>} : tensor<4xf16> -> tensor<4xf16>
  // CHECK: return %[[S0]], %[[S1]]
  return %0, %1 : tensor<8x16xf32>, tensor<4xf16>
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sgd_update(
// CHECK-SAME: %[[P:[^:]*]]: tensor<4x8xf32>, %[[G:[^:]*]]: tensor<4x8xf32>, %[[LR:[^:]*]]: tensor<f32>, %[[STEP:[^:]*]]: tensor<i64>, %[[BUF:[^:]*]]: tensor<4x8xf32>, %[[PH:[^:]*]]: tensor<16xbf16>, %[[GH:[^:]*]]: tensor<16xbf16>)
func.func @sgd_update(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %lr: tensor<f32>,
                      %step: tensor<i64>, %buf: tensor<4x8xf32>,
                      %ph: tensor<16xbf16>, %gh: tensor<16xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<16xbf16>) {
  // Plain SGD: no buffer operand, one result.
  // CHECK: %[[N0:.*]] = tg.sgd_update %[[P]], %[[G]], %[[LR]], %[[STEP]] : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>) -> tensor<4x8xf32>
  %0 = tg.sgd_update %p, %g, %lr, %step
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>)
      -> tensor<4x8xf32>
  // Momentum with dampening and weight decay.
  // CHECK: %[[N1:[^ ,]+]], %[[B1:[^ ,]+]] = tg.sgd_update %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[BUF]] {dampening = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 5.000000e-04 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %1:2 = tg.sgd_update %p, %g, %lr, %step, %buf
      {momentum = 0.9, dampening = 0.1, weight_decay = 5.0e-4}
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // Nesterov momentum.
  // CHECK: %[[N2:[^ ,]+]], %[[B2:[^ ,]+]] = tg.sgd_update %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[BUF]] {momentum = 9.000000e-01 : f64, nesterov = true} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %2:2 = tg.sgd_update %p, %g, %lr, %step, %buf {momentum = 0.9, nesterov = true}
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // bf16 parameter, no momentum, weight decay.
  // CHECK: %[[N3:.*]] = tg.sgd_update %[[PH]], %[[GH]], %[[LR]], %[[STEP]] {weight_decay = 1.000000e-02 : f64} : (tensor<16xbf16>, tensor<16xbf16>, tensor<f32>, tensor<i64>) -> tensor<16xbf16>
  %3 = tg.sgd_update %ph, %gh, %lr, %step {weight_decay = 0.01}
      : (tensor<16xbf16>, tensor<16xbf16>, tensor<f32>, tensor<i64>)
      -> tensor<16xbf16>
  // CHECK: return %[[N0]], %[[N1]], %[[B1]], %[[N2]], %[[B2]], %[[N3]]
  return %0, %1#0, %1#1, %2#0, %2#1, %3
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<16xbf16>
}

// CHECK-LABEL: func.func @adamw_update(
// CHECK-SAME: %[[P:[^:]*]]: tensor<4x8xf32>, %[[G:[^:]*]]: tensor<4x8xf32>, %[[M:[^:]*]]: tensor<4x8xf32>, %[[V:[^:]*]]: tensor<4x8xf32>, %[[LR:[^:]*]]: tensor<f32>, %[[STEP:[^:]*]]: tensor<i64>, %[[GH:[^:]*]]: tensor<4x8xbf16>)
func.func @adamw_update(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>,
                        %m: tensor<4x8xf32>, %v: tensor<4x8xf32>,
                        %lr: tensor<f32>, %step: tensor<i64>,
                        %gh: tensor<4x8xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[NP0:[^ ,]+]], %[[NM0:[^ ,]+]], %[[NV0:[^ ,]+]] = tg.adamw_update %[[P]], %[[G]], %[[M]], %[[V]], %[[LR]], %[[STEP]] : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %0:3 = tg.adamw_update %p, %g, %m, %v, %lr, %step
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
         tensor<f32>, tensor<i64>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  // A bf16 gradient of an f32 master parameter, non-default hyper-parameters.
  // CHECK: %[[NP1:[^ ,]+]], %[[NM1:[^ ,]+]], %[[NV1:[^ ,]+]] = tg.adamw_update %[[P]], %[[GH]], %[[M]], %[[V]], %[[LR]], %[[STEP]] {beta1 = 8.000000e-01 : f64, beta2 = 0.94999{{[0-9]*}} : f64, eps = 9.99{{[0-9]*}}E-7 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %1:3 = tg.adamw_update %p, %gh, %m, %v, %lr, %step
      {beta1 = 0.8, beta2 = 0.95, eps = 1.0e-6, weight_decay = 0.0}
      : (tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>,
         tensor<f32>, tensor<i64>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: return %[[NP0]], %[[NM0]], %[[NV0]], %[[NP1]], %[[NM1]], %[[NV1]]
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @multi_adamw_update(
// CHECK: %{{.+}}:6 = tg.multi_adamw_update(%arg0, %arg4), (%arg1, %arg5), (%arg2, %arg6), (%arg3, %arg7), %arg8, %arg9 if %arg10 {weight_decay = 0.000000e+00 : f64} : (tensor<4x8xf32>, tensor<2xbf16>, tensor<4x8xbf16>, tensor<2xbf16>, tensor<4x8xf32>, tensor<2xf32>, tensor<4x8xf32>, tensor<2xf32>, tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<4x8xf32>, tensor<2xbf16>, tensor<4x8xf32>, tensor<2xf32>, tensor<4x8xf32>, tensor<2xf32>)
func.func @multi_adamw_update(%p0: tensor<4x8xf32>, %g0: tensor<4x8xbf16>,
                              %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>,
                              %p1: tensor<2xbf16>, %g1: tensor<2xbf16>,
                              %m1: tensor<2xf32>, %v1: tensor<2xf32>,
                              %lr: tensor<f32>, %step: tensor<i64>,
                              %apply: tensor<i1>) {
  %0:6 = tg.multi_adamw_update (%p0, %p1), (%g0, %g1), (%m0, %m1), (%v0, %v1),
      %lr, %step if %apply {weight_decay = 0.0}
      : (tensor<4x8xf32>, tensor<2xbf16>, tensor<4x8xbf16>, tensor<2xbf16>,
         tensor<4x8xf32>, tensor<2xf32>, tensor<4x8xf32>, tensor<2xf32>,
         tensor<f32>, tensor<i64>, tensor<i1>)
      -> (tensor<4x8xf32>, tensor<2xbf16>, tensor<4x8xf32>, tensor<2xf32>,
          tensor<4x8xf32>, tensor<2xf32>)
  return
}

// CHECK-LABEL: func.func @global_norm(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xbf16>, %[[C:[^:]*]]: tensor<f16>)
func.func @global_norm(%a: tensor<4x8xf32>, %b: tensor<8xbf16>, %c: tensor<f16>)
    -> (tensor<f32>, tensor<f32>) {
  // CHECK: %[[N0:.*]] = tg.global_norm %[[A]], %[[B]], %[[C]] : (tensor<4x8xf32>, tensor<8xbf16>, tensor<f16>) -> tensor<f32>
  %0 = tg.global_norm %a, %b, %c
      : (tensor<4x8xf32>, tensor<8xbf16>, tensor<f16>) -> tensor<f32>
  // CHECK: %[[N1:.*]] = tg.global_norm %[[A]] : (tensor<4x8xf32>) -> tensor<f32>
  %1 = tg.global_norm %a : (tensor<4x8xf32>) -> tensor<f32>
  // CHECK: return %[[N0]], %[[N1]]
  return %0, %1 : tensor<f32>, tensor<f32>
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mixed_precision(
// CHECK-SAME: %[[LOSS:[^:]*]]: tensor<bf16>, %[[SCALE:[^:]*]]: tensor<f32>, %[[GH:[^:]*]]: tensor<4x8xf16>, %[[G:[^:]*]]: tensor<8xf32>, %[[TRACK:[^:]*]]: tensor<i64>)
func.func @mixed_precision(%loss: tensor<bf16>, %scale: tensor<f32>,
                           %gh: tensor<4x8xf16>, %g: tensor<8xf32>,
                           %track: tensor<i64>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<i1>, tensor<f32>,
        tensor<i64>, tensor<f32>, tensor<i64>) {
  // CHECK: %[[SL:.*]] = tg.scale_loss %[[LOSS]], %[[SCALE]] : (tensor<bf16>, tensor<f32>) -> tensor<f32>
  %sl = tg.scale_loss %loss, %scale : (tensor<bf16>, tensor<f32>) -> tensor<f32>
  // A low-precision gradient unscaled into an f32 master gradient.
  // CHECK: %[[U0:.*]] = tg.unscale %[[GH]], %[[SCALE]] : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf32>
  %u0 = tg.unscale %gh, %scale : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: %[[U1:.*]] = tg.unscale %[[G]], %[[SCALE]] : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %u1 = tg.unscale %g, %scale : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  // CHECK: %[[OK:.*]] = tg.all_finite %[[GH]], %[[G]] : (tensor<4x8xf16>, tensor<8xf32>) -> tensor<i1>
  %ok = tg.all_finite %gh, %g : (tensor<4x8xf16>, tensor<8xf32>) -> tensor<i1>
  // CHECK: %[[NS0:[^ ,]+]], %[[NT0:[^ ,]+]] = tg.update_loss_scale %[[SCALE]], %[[TRACK]], %[[OK]] : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  %s0:2 = tg.update_loss_scale %scale, %track, %ok
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  // CHECK: %[[NS1:[^ ,]+]], %[[NT1:[^ ,]+]] = tg.update_loss_scale %[[SCALE]], %[[TRACK]], %[[OK]] {backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 100 : i64} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  %s1:2 = tg.update_loss_scale %scale, %track, %ok
      {growth_factor = 4.0, backoff_factor = 0.25, growth_interval = 100}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  // CHECK: return %[[SL]], %[[U0]], %[[U1]], %[[OK]], %[[NS0]], %[[NT0]], %[[NS1]], %[[NT1]]
  return %sl, %u0, %u1, %ok, %s0#0, %s0#1, %s1#0, %s1#1
      : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<i1>, tensor<f32>,
        tensor<i64>, tensor<f32>, tensor<i64>
}

//===----------------------------------------------------------------------===//
// The model convention
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @model(
// CHECK-SAME: %[[EMB:[^:]*]]: tensor<100x16xf32> {tg.frozen, tg.init = #tg.init<uniform(-1.000000e-01, 1.000000e-01)>, tg.param = "wte"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<16x10xf32> {tg.init = #tg.init<normal(0.000000e+00, 2.000000e-02)>, tg.param = "head.weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.param = "head.bias"}
// CHECK-SAME: %[[LNW:[^:]*]]: tensor<16xbf16> {tg.init = #tg.init<ones>, tg.param = "ln.weight"}
// CHECK-SAME: %[[LNB:[^:]*]]: tensor<16xbf16> {tg.param = "ln.bias"}
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<4xi64> {tg.input = "tokens"}
// CHECK-SAME: %[[LAB:[^:]*]]: tensor<4xi32> {tg.input = "labels"}
// CHECK-SAME: -> tensor<f32> attributes {tg.model}
func.func @model(
    %emb: tensor<100x16xf32> {tg.param = "wte", tg.frozen,
                              tg.init = #tg.init<uniform(-0.1, 0.1)>},
    %w: tensor<16x10xf32> {tg.param = "head.weight",
                           tg.init = #tg.init<normal(0.0, 0.02)>},
    %b: tensor<10xf32> {tg.param = "head.bias", tg.init = #tg.init<zeros>},
    %lnw: tensor<16xbf16> {tg.param = "ln.weight", tg.init = #tg.init<ones>},
    %lnb: tensor<16xbf16> {tg.param = "ln.bias"},
    %tokens: tensor<4xi64> {tg.input = "tokens"},
    %labels: tensor<4xi32> {tg.input = "labels"}) -> tensor<f32>
    attributes {tg.model} {
  // CHECK: %[[X:.*]] = tg.embedding %[[EMB]], %[[TOK]]
  %x = tg.embedding %emb, %tokens
      : (tensor<100x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  // CHECK: %[[XB:.*]] = tg.cast %[[X]] : tensor<4x16xf32> -> tensor<4x16xbf16>
  %xb = tg.cast %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  // CHECK: %[[N:.*]] = tg.layer_norm %[[XB]], %[[LNW]], %[[LNB]]
  %n = tg.layer_norm %xb, %lnw, %lnb
      : (tensor<4x16xbf16>, tensor<16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  // CHECK: %[[NF:.*]] = tg.cast %[[N]] : tensor<4x16xbf16> -> tensor<4x16xf32>
  %nf = tg.cast %n : tensor<4x16xbf16> -> tensor<4x16xf32>
  // CHECK: %[[H:.*]] = tg.matmul %[[NF]], %[[W]]
  %h = tg.matmul %nf, %w : (tensor<4x16xf32>, tensor<16x10xf32>) -> tensor<4x10xf32>
  // CHECK: %[[LOGITS:.*]] = tg.add %[[H]], %[[B]]
  %logits = tg.add %h, %b : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  // CHECK: %[[LOSS:.*]] = tg.cross_entropy %[[LOGITS]], %[[LAB]] : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  %loss = tg.cross_entropy %logits, %labels
      : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  // CHECK: return %[[LOSS]] : tensor<f32>
  return %loss : tensor<f32>
}

// A model without parameters and with a bf16 loss.
// CHECK-LABEL: func.func @model_inputs_only(
// CHECK-SAME: %{{.*}}: tensor<4x10xbf16> {tg.input = "logits"}, %{{.*}}: tensor<4xi64> {tg.input = "labels"}) -> tensor<bf16> attributes {tg.model}
func.func @model_inputs_only(%logits: tensor<4x10xbf16> {tg.input = "logits"},
                             %labels: tensor<4xi64> {tg.input = "labels"})
    -> tensor<bf16> attributes {tg.model} {
  %loss = tg.cross_entropy %logits, %labels
      : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<bf16>
  return %loss : tensor<bf16>
}

// Parameter attributes are also allowed on a function that is not a model.
// CHECK-LABEL: func.func @not_a_model(
// CHECK-SAME: %{{.*}}: tensor<8xf16> {tg.param = "p"}, %{{.*}}: tensor<8xi1> {tg.input = "mask"}) -> tensor<8xf16> {
func.func @not_a_model(%p: tensor<8xf16> {tg.param = "p"},
                       %mask: tensor<8xi1> {tg.input = "mask"}) -> tensor<8xf16> {
  return %p : tensor<8xf16>
}

// Integer arithmetic, for counters such as the optimizer step.
// CHECK-LABEL: func.func @integer_arithmetic(
func.func @integer_arithmetic(%a: tensor<i64>, %b: tensor<4xi32>) -> (tensor<i64>, tensor<4xi32>) {
  // CHECK: tg.add %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %0 = tg.add %a, %a : (tensor<i64>, tensor<i64>) -> tensor<i64>
  // CHECK: tg.div %{{.*}}, %{{.*}} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = tg.div %b, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<i64>, tensor<4xi32>
}

// The training-step convention: state arguments, the loss result and
// in-place updates.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{.*}}: tensor<4xf32> {tg.param = "w"}, %{{.*}}: tensor<4xf32> {tg.init = #tg.init<constant(5.000000e-01)>, tg.state = "w.momentum_buffer"}, %{{.*}}: tensor<i64> {tg.state = "optimizer.step"}, %{{.*}}: tensor<4xf32> {tg.input = "x"})
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.update = "w.momentum_buffer"}, tensor<i64> {tg.update = "optimizer.step"}) attributes {tg.train_step}
func.func @step(%w: tensor<4xf32> {tg.param = "w"},
                %buf: tensor<4xf32> {tg.state = "w.momentum_buffer",
                                     tg.init = #tg.init<constant(0.5)>},
                %t: tensor<i64> {tg.state = "optimizer.step"},
                %x: tensor<4xf32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"},
        tensor<4xf32> {tg.update = "w.momentum_buffer"},
        tensor<i64> {tg.update = "optimizer.step"}) attributes {tg.train_step} {
  %loss = tg.global_norm %x : (tensor<4xf32>) -> tensor<f32>
  %one = tg.fill 1.0 : tensor<i64>
  %t1 = tg.add %t, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %lr = tg.fill 0.1 : tensor<f32>
  %w1, %buf1 = tg.sgd_update %w, %x, %lr, %t1, %buf {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %loss, %w1, %buf1, %t1 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
}

// Optimizer updates predicated on an apply flag (a step skipped by loss
// scaling leaves everything unchanged).
// CHECK-LABEL: func.func @predicated_updates(
func.func @predicated_updates(%p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>,
                              %s: tensor<i64>, %ok: tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: tg.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} if %{{.*}} :
  %a:3 = tg.adamw_update %p, %g, %p, %p, %lr, %s if %ok
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: tg.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} if %{{.*}} {momentum = 9.000000e-01 : f64}
  %b:2 = tg.sgd_update %p, %g, %lr, %s, %p if %ok {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: tg.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} if %{{.*}} :
  %c = tg.sgd_update %p, %g, %lr, %s if %ok
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<i1>) -> tensor<4xf32>
  return %a#0, %b#0, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// 16-bit values beside f32 computations (what tg-fold-casts makes): a
// binary op's operand, a norm's result, a norm gradient's incoming
// gradient; the binary op's type is inferred as f32.
// CHECK-LABEL: func.func @folded_casts(
// CHECK: tg.add %arg0, %arg1 : (tensor<2x8xf32>, tensor<2x8xbf16>) -> tensor<2x8xf32>
// CHECK: tg.mul %arg1, %arg0 : (tensor<2x8xbf16>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: tg.layer_norm %{{.+}} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xbf16>
// CHECK: tg.rms_norm %{{.+}} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
// CHECK: tg.layer_norm_grad %{{.+}} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xbf16>)
// CHECK: tg.rms_norm_grad %{{.+}} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf16>)
func.func @folded_casts(%x: tensor<2x8xf32>, %h: tensor<2x8xbf16>,
                           %w: tensor<8xf32>, %f: tensor<2x8xf16>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf16>,
        tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = tg.add %x, %h : (tensor<2x8xf32>, tensor<2x8xbf16>) -> tensor<2x8xf32>
  %1 = tg.mul %h, %x : (tensor<2x8xbf16>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = tg.layer_norm %x, %w, %w : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xbf16>
  %3 = tg.rms_norm %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  %4:3 = tg.layer_norm_grad %x, %w, %h : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %5:2 = tg.rms_norm_grad %x, %w, %f : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf16>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return %0, %1, %2, %3, %4#0, %5#0 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf16>, tensor<2x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL: func.func @multi_cast(
// CHECK: %{{.+}}:2 = tg.multi_cast %arg0, %arg1 : (tensor<4x8xf32>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>)
func.func @multi_cast(%a: tensor<4x8xf32>, %b: tensor<8xbf16>)
    -> (tensor<4x8xbf16>, tensor<8xf32>) {
  %0:2 = tg.multi_cast %a, %b : (tensor<4x8xf32>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<8xf32>)
  return %0#0, %0#1 : tensor<4x8xbf16>, tensor<8xf32>
}
