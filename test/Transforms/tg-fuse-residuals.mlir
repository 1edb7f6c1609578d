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

// -----

// Forward: the residual stream x + f (a 16-bit branch beside the f32
// stream) entering a layer norm. The norm takes f as its addend and returns
// the sum, which the stream's later reader reads; it goes where the add
// was.
// CHECK-LABEL: func.func @forward_layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[F:[^:]+]]: tensor<4x8xbf16>, %[[W:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tg.add
// CHECK: %[[Y:[^ ]+]], %[[S:[^ ]+]] = tg.layer_norm %[[X]], %[[W]], %[[B]] plus %[[F]] {epsilon = {{.*}} : f64, test.mark = 1 : i64}
// CHECK-SAME: (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xf32>)
// CHECK-NEXT: %[[T:[^ ]+]] = tg.mul %[[S]], %[[S]]
// CHECK-NEXT: return %[[Y]], %[[T]]
func.func @forward_layer_norm(%x: tensor<4x8xf32>, %f: tensor<4x8xbf16>,
                              %w: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xbf16>, tensor<4x8xf32>) {
  %s = tg.add %x, %f : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  %t = tg.mul %s, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = tg.layer_norm %s, %w, %b {epsilon = 1.0e-6, test.mark = 1}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
  return %y, %t : tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// An RMS norm whose weight is computed after the add: the fused op goes
// where the norm was (nothing reads the sum before it).
// CHECK-LABEL: func.func @forward_rms_norm_later_weight
// CHECK: %[[W:.+]] = tg.mul %arg2, %arg2
// CHECK-NEXT: %[[Y:[^ ]+]], %[[S:[^ ]+]] = tg.rms_norm %arg0, %[[W]] plus %arg1
// CHECK-NEXT: return %[[Y]], %[[S]]
func.func @forward_rms_norm_later_weight(%x: tensor<4x8xf32>,
                                         %f: tensor<4x8xf32>,
                                         %v: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = tg.add %x, %f : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %w = tg.mul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = tg.rms_norm %s, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left alone: a broadcast add (the position embedding), a norm whose
// weight is computed after a reader of the sum, and a sum a norm reads as
// its weight rather than its input.
// CHECK-LABEL: func.func @forward_not_fused
// CHECK-NOT: plus
// CHECK-COUNT-3: tg.add
func.func @forward_not_fused(%x: tensor<4x8xf32>, %p: tensor<8xf32>,
                             %v: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = tg.add %x, %p : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y = tg.layer_norm %s, %v, %v : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %t = tg.add %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = tg.mul %t, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %w = tg.mul %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %z = tg.rms_norm %t, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %u = tg.add %v, %v : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = tg.rms_norm %x, %u : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y, %m, %z, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
