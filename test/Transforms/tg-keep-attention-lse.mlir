// RUN: tgc-opt %s --split-input-file --tg-keep-attention-lse | FileCheck %s

// A bf16 attention (heads of 16, run fused) and its gradient: the
// attention returns its row log-sum-exp ([B, H, T], f32) and the gradient
// reads it.
// CHECK-LABEL: func.func @kept
// CHECK: %[[O:[^ ,]+]], %[[L:[^ ]+]] = tg.attention %arg0, %arg1, %arg2 {causal = true}
// CHECK-SAME: -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>)
// CHECK: tg.attention_grad %arg0, %arg1, %arg2, %[[O]], %arg3 lse %[[L]] {causal = true}
func.func @kept(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xbf16>,
                %v: tensor<2x4x8x16xbf16>, %g: tensor<2x4x8x16xbf16>)
    -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) {
  %o = tg.attention %q, %k, %v {causal = true}
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %dq, %dk, %dv = tg.attention_grad %q, %k, %v, %o, %g {causal = true}
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
      -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
}

// -----

// bshd heads with a key mask: the statistic is [B, T, H].
// CHECK-LABEL: func.func @bshd_masked
// CHECK: tg.attention %arg0, %arg0, %arg0 mask %arg2 {bshd = true}
// CHECK-SAME: -> (tensor<2x8x4x16xf16>, tensor<2x8x4xf32>)
// CHECK: tg.attention_grad {{.*}} mask %arg2 lse %{{[^ ]+}} {bshd = true}
func.func @bshd_masked(%x: tensor<2x8x4x16xf16>, %g: tensor<2x8x4x16xf16>,
                       %m: tensor<2x8xi64>) -> tensor<2x8x4x16xf16> {
  %o = tg.attention %x, %x, %x mask %m {bshd = true}
      : (tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8xi64>) -> tensor<2x8x4x16xf16>
  %dq, %dk, %dv = tg.attention_grad %x, %x, %x, %o, %g mask %m {bshd = true}
      : (tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8xi64>)
      -> (tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>, tensor<2x8x4x16xf16>)
  return %dq : tensor<2x8x4x16xf16>
}

// -----

// Grouped-query heads run fused too (each query head reads its group's
// key/value head): the attention keeps its [B, H, T] log-sum-exp.
// CHECK-LABEL: func.func @grouped_kept
// CHECK: %[[O:[^ ]+]], %[[L:[^ ]+]] = tg.attention {{.*}} -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>)
// CHECK: tg.attention_grad {{.*}}, %[[O]], %{{[^ ]+}} lse %[[L]] {causal = true}
func.func @grouped_kept(%qh: tensor<2x4x8x16xbf16>, %kv: tensor<2x2x8x16xbf16>,
                        %gh: tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xbf16> {
  %o = tg.attention %qh, %kv, %kv {causal = true}
      : (tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %eq, %ek, %ev = tg.attention_grad %qh, %kv, %kv, %o, %gh {causal = true}
      : (tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
      -> (tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>)
  return %eq : tensor<2x4x8x16xbf16>
}

// -----

// Left alone: f32 heads and 16-bit heads of 8 elements (the GEMM path,
// which recomputes the probabilities whole), and a gradient whose
// attributes differ from the attention's.
// CHECK-LABEL: func.func @not_kept
// CHECK-NOT: lse
func.func @not_kept(%q: tensor<2x4x8x16xf32>, %g: tensor<2x4x8x16xf32>,
                    %qh: tensor<2x4x8x16xbf16>, %q8: tensor<2x4x8x8xbf16>,
                    %gh: tensor<2x4x8x16xbf16>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8x8xbf16>, tensor<2x4x8x16xbf16>) {
  %o = tg.attention %q, %q, %q {causal = true}
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %dq, %dk, %dv = tg.attention_grad %q, %q, %q, %o, %g {causal = true}
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
      -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  %o2 = tg.attention %q8, %q8, %q8 {causal = true}
      : (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) -> tensor<2x4x8x8xbf16>
  %eq, %ek, %ev = tg.attention_grad %q8, %q8, %q8, %o2, %o2 {causal = true}
      : (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>)
      -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>)
  %o3 = tg.attention %qh, %qh, %qh {causal = true}
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %fq, %fk, %fv = tg.attention_grad %qh, %qh, %qh, %o3, %gh
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
      -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  return %dq, %eq, %fq : tensor<2x4x8x16xf32>, tensor<2x4x8x8xbf16>, tensor<2x4x8x16xbf16>
}
