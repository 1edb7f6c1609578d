// RUN: tgc-opt %s --split-input-file --tg-attention-layout | FileCheck %s
// RUN: tgc-opt %s --tg-attention-layout --tg-autodiff | FileCheck %s --check-prefix=GRAD

// GPT-2's attention: Q, K and V transposed from [B, T, H, D] and the result
// transposed back. The attention reads and writes [B, T, H, D]; no
// transpose is left.
// CHECK-LABEL: func.func @gpt2_heads
// CHECK-NOT: tg.transpose
// CHECK: %[[Q:.+]] = tg.reshape %{{.+}} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK: %[[K:.+]] = tg.reshape
// CHECK: %[[V:.+]] = tg.reshape
// CHECK: %[[O:.+]] = tg.attention %[[Q]], %[[K]], %[[V]] {bshd = true, causal = true}
// CHECK-SAME: -> tensor<2x8x4x16xf32>
// CHECK-NOT: tg.transpose
// CHECK: tg.reshape %[[O]] : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
// The gradient inherits the layout: no transpose backward either.
// GRAD-LABEL: func.func @gpt2_heads_train_step
// GRAD-NOT: tg.transpose
// GRAD: tg.attention_grad
// GRAD-SAME: bshd = true
// GRAD-SAME: -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// GRAD-NOT: tg.transpose
// GRAD: tg.concat
func.func @gpt2_heads(%x: tensor<2x8x192xf32> {tg.param = "qkv"},
                      %w: tensor<64x4xf32> {tg.param = "w"}) -> tensor<f32>
    attributes {tg.model} {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<2x8x192xf32> -> tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  %q0 = tg.reshape %s#0 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %q = tg.transpose %q0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k0 = tg.reshape %s#1 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k = tg.transpose %k0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %v0 = tg.reshape %s#2 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %v = tg.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = tg.attention %q, %k, %v {causal = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %ot = tg.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %o2 = tg.reshape %ot : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %y = tg.matmul %o2, %w : (tensor<2x8x64xf32>, tensor<64x4xf32>) -> tensor<2x8x4xf32>
  %l = tg.reduce_sum %y {axes = array<i64: 0, 1, 2>} : tensor<2x8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A reader of the [B, H, T, D] result other than a transpose back gets it
// from one transpose of the bshd result; a transpose that another op also
// reads stays for it. A key mask [B, Tk] and the scale carry over.
// CHECK-LABEL: func.func @other_readers
// CHECK-SAME: %[[Q0:[^:]+]]: tensor<2x8x4x16xf32>, %[[K0:[^:]+]]: tensor<2x8x4x16xf32>, %[[V0:[^:]+]]: tensor<2x8x4x16xf32>, %[[M:[^:]+]]: tensor<2x8xi64>
// CHECK: %[[KT:.+]] = tg.transpose %[[K0]]
// CHECK-NOT: tg.transpose
// CHECK: %[[O:.+]] = tg.attention %[[Q0]], %[[K0]], %[[V0]] mask %[[M]] {bshd = true, scale = 2.500000e-01 : f64}
// CHECK: %[[OT:.+]] = tg.transpose %[[O]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: tg.add %[[OT]], %[[KT]]
func.func @other_readers(%q0: tensor<2x8x4x16xf32>, %k0: tensor<2x8x4x16xf32>,
                         %v0: tensor<2x8x4x16xf32>, %m: tensor<2x8xi64>)
    -> tensor<2x4x8x16xf32> {
  %q = tg.transpose %q0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k = tg.transpose %k0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %v = tg.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = tg.attention %q, %k, %v mask %m {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xi64>) -> tensor<2x4x8x16xf32>
  %r = tg.add %o, %k : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// An operand that is not a transpose (here a function argument) leaves
// the attention as it is.
// CHECK-LABEL: func.func @not_transposed
// CHECK: tg.transpose
// CHECK: tg.attention
// CHECK-NOT: bshd
func.func @not_transposed(%q: tensor<2x4x8x16xf32>, %k0: tensor<2x8x4x16xf32>,
                          %v0: tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32> {
  %k = tg.transpose %k0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %v = tg.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = tg.attention %q, %k, %v {causal = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Llama's rotary queries and keys under mixed precision: a rope between
// casts after the transpose. The chain moves before it (the casts of the
// [B, T, H, D] tensors, a bshd rope); grouped-query keys and values.
// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<2x8x4x16xbf16>, %[[K0:[^:]+]]: tensor<2x8x2x16xbf16>, %[[V0:[^:]+]]: tensor<2x8x2x16xbf16>, %[[F:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tg.transpose
// CHECK: %[[QW:.+]] = tg.cast %[[Q0]] : tensor<2x8x4x16xbf16> -> tensor<2x8x4x16xf32>
// CHECK-NEXT: %[[QR:.+]] = tg.rope %[[QW]], %[[F]] {bshd = true} : (tensor<2x8x4x16xf32>, tensor<8xf32>) -> tensor<2x8x4x16xf32>
// CHECK-NEXT: %[[QN:.+]] = tg.cast %[[QR]] : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xbf16>
// CHECK-NEXT: %[[KR:.+]] = tg.rope %[[K0]], %[[F]] {bshd = true} : (tensor<2x8x2x16xbf16>, tensor<8xf32>) -> tensor<2x8x2x16xbf16>
// CHECK-NEXT: %[[O:.+]] = tg.attention %[[QN]], %[[KR]], %[[V0]] {bshd = true, causal = true}
// CHECK-SAME: -> tensor<2x8x4x16xbf16>
// CHECK-NOT: tg.transpose
// CHECK: return %[[O]]
func.func @rotary(%q0: tensor<2x8x4x16xbf16>, %k0: tensor<2x8x2x16xbf16>,
                  %v0: tensor<2x8x2x16xbf16>, %f: tensor<8xf32>)
    -> tensor<2x8x4x16xbf16> {
  %q = tg.transpose %q0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xbf16> -> tensor<2x4x8x16xbf16>
  %qw = tg.cast %q : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %qr = tg.rope %qw, %f : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
  %qn = tg.cast %qr : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %k = tg.transpose %k0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x16xbf16> -> tensor<2x2x8x16xbf16>
  %kr = tg.rope %k, %f : (tensor<2x2x8x16xbf16>, tensor<8xf32>) -> tensor<2x2x8x16xbf16>
  %v = tg.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x16xbf16> -> tensor<2x2x8x16xbf16>
  %o = tg.attention %qn, %kr, %v {causal = true} : (tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %ot = tg.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x8x16xbf16> -> tensor<2x8x4x16xbf16>
  return %ot : tensor<2x8x4x16xbf16>
}
