// RUN: tgc-opt %s --split-input-file --tg-pack-qkv | FileCheck %s

// GPT-2's attention: the fused projection's output split into Q, K and V
// (2 heads of 16 each), bshd attention and its gradient, the gradients
// concatenated. Both read the output packed, the gradient writes one
// tensor, and the split and concat are gone.
// CHECK-LABEL: func.func @gpt2
// CHECK: %[[P:[^ ]+]] = tg.reshape %arg0 : tensor<2x16x96xbf16> -> tensor<2x16x6x16xbf16>
// CHECK-NOT: tg.split
// CHECK: %[[O:[^ ,]+]], %[[L:[^ ]+]] = tg.attention %[[P]], %[[P]], %[[P]] {bshd = true, causal = true, packed = true}
// CHECK-SAME: -> (tensor<2x16x2x16xbf16>, tensor<2x16x2xf32>)
// CHECK: %[[G:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ]+}} = tg.attention_grad %[[P]], %[[P]], %[[P]], %[[O]], %arg1 lse %[[L]] {bshd = true, causal = true, output_mask = array<i1: true, false, false>, packed = true}
// CHECK-SAME: -> (tensor<2x16x6x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>)
// CHECK-NOT: tg.concat
// CHECK: %[[J:[^ ]+]] = tg.reshape %[[G]] : tensor<2x16x6x16xbf16> -> tensor<2x16x96xbf16>
// CHECK: return %[[O]], %[[J]]
func.func @gpt2(%x: tensor<2x16x96xbf16>, %g: tensor<2x16x2x16xbf16>)
    -> (tensor<2x16x2x16xbf16>, tensor<2x16x96xbf16>) {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<2x16x96xbf16> -> tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16>
  %q = tg.reshape %s#0 : tensor<2x16x32xbf16> -> tensor<2x16x2x16xbf16>
  %k = tg.reshape %s#1 : tensor<2x16x32xbf16> -> tensor<2x16x2x16xbf16>
  %v = tg.reshape %s#2 : tensor<2x16x32xbf16> -> tensor<2x16x2x16xbf16>
  %o, %lse = tg.attention %q, %k, %v {bshd = true, causal = true}
      : (tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>)
      -> (tensor<2x16x2x16xbf16>, tensor<2x16x2xf32>)
  %dq, %dk, %dv = tg.attention_grad %q, %k, %v, %o, %g lse %lse {bshd = true, causal = true}
      : (tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2xf32>)
      -> (tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>, tensor<2x16x2x16xbf16>)
  %rq = tg.reshape %dq : tensor<2x16x2x16xbf16> -> tensor<2x16x32xbf16>
  %rk = tg.reshape %dk : tensor<2x16x2x16xbf16> -> tensor<2x16x32xbf16>
  %rv = tg.reshape %dv : tensor<2x16x2x16xbf16> -> tensor<2x16x32xbf16>
  %c = tg.concat %rq, %rk, %rv {axis = 2 : i64}
      : (tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16>) -> tensor<2x16x96xbf16>
  return %o, %c : tensor<2x16x2x16xbf16>, tensor<2x16x96xbf16>
}

// -----

// Grouped-query heads (4 query heads, 2 key/value heads of 16), an
// evaluation step's attention without a gradient: packed as [B, T, 8, 16].
// CHECK-LABEL: func.func @grouped_forward
// CHECK: %[[P:[^ ]+]] = tg.reshape %arg0 : tensor<1x8x128xf16> -> tensor<1x8x8x16xf16>
// CHECK: tg.attention %[[P]], %[[P]], %[[P]] {bshd = true, causal = true, packed = true}
// CHECK-NOT: tg.split
func.func @grouped_forward(%x: tensor<1x8x128xf16>) -> tensor<1x8x4x16xf16> {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<1x8x128xf16> -> tensor<1x8x64xf16>, tensor<1x8x32xf16>, tensor<1x8x32xf16>
  %q = tg.reshape %s#0 : tensor<1x8x64xf16> -> tensor<1x8x4x16xf16>
  %k = tg.reshape %s#1 : tensor<1x8x32xf16> -> tensor<1x8x2x16xf16>
  %v = tg.reshape %s#2 : tensor<1x8x32xf16> -> tensor<1x8x2x16xf16>
  %o = tg.attention %q, %k, %v {bshd = true, causal = true}
      : (tensor<1x8x4x16xf16>, tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>) -> tensor<1x8x4x16xf16>
  return %o : tensor<1x8x4x16xf16>
}

// -----

// f32 heads run on the GEMM path, which would copy them apart again: left
// alone.
// CHECK-LABEL: func.func @f32_left_alone
// CHECK: tg.split
// CHECK-NOT: packed
func.func @f32_left_alone(%x: tensor<1x8x96xf32>) -> tensor<1x8x2x16xf32> {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<1x8x96xf32> -> tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>
  %q = tg.reshape %s#0 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  %k = tg.reshape %s#1 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  %v = tg.reshape %s#2 : tensor<1x8x32xf32> -> tensor<1x8x2x16xf32>
  %o = tg.attention %q, %k, %v {bshd = true}
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

// A piece read by something else (here returned): the split stays, and so
// do the attention's operands (packing would keep both alive).
// CHECK-LABEL: func.func @piece_read_elsewhere
// CHECK: tg.split
// CHECK-NOT: packed
func.func @piece_read_elsewhere(%x: tensor<1x8x96xbf16>)
    -> (tensor<1x8x2x16xbf16>, tensor<1x8x32xbf16>) {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<1x8x96xbf16> -> tensor<1x8x32xbf16>, tensor<1x8x32xbf16>, tensor<1x8x32xbf16>
  %q = tg.reshape %s#0 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %k = tg.reshape %s#1 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %v = tg.reshape %s#2 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %o = tg.attention %q, %k, %v {bshd = true}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>) -> tensor<1x8x2x16xbf16>
  return %o, %s#2 : tensor<1x8x2x16xbf16>, tensor<1x8x32xbf16>
}

// -----

// A gradient whose key and value gradients are not concatenated with the
// query's: neither it nor the forward attention is packed.
// CHECK-LABEL: func.func @gradients_not_joined
// CHECK: tg.split
// CHECK-NOT: packed
func.func @gradients_not_joined(%x: tensor<1x8x96xbf16>, %g: tensor<1x8x2x16xbf16>)
    -> (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>) {
  %s:3 = tg.split %x {axis = 2 : i64} : tensor<1x8x96xbf16> -> tensor<1x8x32xbf16>, tensor<1x8x32xbf16>, tensor<1x8x32xbf16>
  %q = tg.reshape %s#0 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %k = tg.reshape %s#1 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %v = tg.reshape %s#2 : tensor<1x8x32xbf16> -> tensor<1x8x2x16xbf16>
  %o = tg.attention %q, %k, %v {bshd = true}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>) -> tensor<1x8x2x16xbf16>
  %dq, %dk, %dv = tg.attention_grad %q, %k, %v, %o, %g {bshd = true}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>)
      -> (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>)
  return %dq, %dk, %dv : tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>
}
