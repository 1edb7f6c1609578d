// RUN: tgc-opt %s --split-input-file --tg-fuse-residuals | FileCheck %s

// A pre-norm block's input gradient: the layer norm's input gradient plus
// the residual's. The add joins the norm gradient as its addend; the
// parameter gradients are the norm gradient's as before.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<4x8xbf16>, %[[R:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.add
// CHECK: %[[D:[^ ]+]], %[[DW:[^ ]+]], %[[DB:[^ ]+]] = tg.layer_norm_grad %[[X]], %[[W]], %[[G]] plus %[[R]]
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: tg.add
// CHECK: return %[[D]], %[[DW]], %[[DB]]
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>,
                      %g: tensor<4x8xbf16>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %d:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %s = tg.add %r, %d#0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %d#1, %d#2 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The residual's gradient computed after the norm gradient: the fused op
// goes where the add was (the weight gradient is read after it).
// CHECK-LABEL: func.func @rms_norm_later_addend
// CHECK: %[[R:.+]] = tg.mul
// CHECK-NEXT: %[[D:[^ ]+]], %[[DW:[^ ]+]] = tg.rms_norm_grad %arg0, %arg1, %arg2 plus %[[R]]
// CHECK-NEXT: return %[[D]], %[[DW]]
func.func @rms_norm_later_addend(%x: tensor<4x8xf32>, %w: tensor<8xf32>,
                                 %g: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>) {
  %d:2 = tg.rms_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  %r = tg.mul %g, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = tg.add %d#0, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %d#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Left alone: an input gradient with another reader, a broadcast addend,
// and a later addend whose weight gradient is read before the add.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: plus
// CHECK-COUNT-3: tg.add
func.func @not_fused(%x: tensor<4x8xf32>, %w: tensor<8xf32>,
                     %g: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>,
        tensor<4x8xf32>) {
  %d:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %s = tg.add %d#0, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %t = tg.add %e#0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %f:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %u = tg.mul %f#1, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r = tg.mul %g, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = tg.add %f#0, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %t, %v, %u, %d#0 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
}
