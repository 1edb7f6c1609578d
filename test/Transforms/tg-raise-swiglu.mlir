// RUN: tgc-opt %s --tg-raise-swiglu | FileCheck %s

// Llama's MLP as tgc-import traces it: act_fn(gate_proj(x)) * up_proj(x).
// CHECK-LABEL: func.func @llama_mlp(
// CHECK-SAME: %[[G:[^:]*]]: tensor<2x4x16xbf16>, %[[U:[^:]*]]: tensor<2x4x16xbf16>)
// CHECK-NEXT: %[[H:.*]] = tg.swiglu %[[G]], %[[U]] : tensor<2x4x16xbf16>
// CHECK-NEXT: return %[[H]]
func.func @llama_mlp(%g: tensor<2x4x16xbf16>, %u: tensor<2x4x16xbf16>)
    -> tensor<2x4x16xbf16> {
  %s = tg.silu %g : tensor<2x4x16xbf16>
  %h = tg.mul %s, %u : (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  return %h : tensor<2x4x16xbf16>
}

// The product in the other order (Phi-3's up * silu(gate)).
// CHECK-LABEL: func.func @up_first(
// CHECK-SAME: %[[G:[^:]*]]: tensor<4x16xf32>, %[[U:[^:]*]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[H:.*]] = tg.swiglu %[[G]], %[[U]] : tensor<4x16xf32>
// CHECK-NEXT: return %[[H]]
func.func @up_first(%g: tensor<4x16xf32>, %u: tensor<4x16xf32>)
    -> tensor<4x16xf32> {
  %s = tg.silu %g : tensor<4x16xf32>
  %h = tg.mul %u, %s : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// Left alone: silu(gate) read by something else too, a product that
// broadcasts.
// CHECK-LABEL: func.func @left(
// CHECK-NOT: tg.swiglu
// CHECK: return
func.func @left(%g: tensor<4x16xf32>, %u: tensor<4x16xf32>,
                %r: tensor<16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %s = tg.silu %g : tensor<4x16xf32>
  %h = tg.mul %s, %u : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = tg.silu %r : tensor<16xf32>
  %b = tg.mul %u, %t : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %h, %s, %b : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
