// RUN: tgc-opt %s --tg-fold-casts | FileCheck %s

// A bf16 gradient widened for the update alone: the update reads it as it
// is, and the cast is gone.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xbf16>
// CHECK-NOT: tg.cast
// CHECK: tg.adamw_update %[[P]], %[[G]],
// CHECK-SAME: (tensor<4x8xf32>, tensor<4x8xbf16>,
func.func @widened(%p: tensor<4x8xf32>, %g: tensor<4x8xbf16>,
                   %m: tensor<4x8xf32>, %v: tensor<4x8xf32>,
                   %lr: tensor<f32>, %s: tensor<i64>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g32 = tg.cast %g : tensor<4x8xbf16> -> tensor<4x8xf32>
  %0:3 = tg.adamw_update %p, %g32, %m, %v, %lr, %s
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// SGD's and the 8-bit updates read any float gradient too.
// CHECK-LABEL: func.func @sgd
// CHECK-NOT: tg.cast
// CHECK: tg.sgd_update %{{[^,]+}}, %arg1,
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf16>, %lr: tensor<f32>,
               %s: tensor<i64>) -> tensor<8xf32> {
  %g32 = tg.cast %g : tensor<8xf16> -> tensor<8xf32>
  %0 = tg.sgd_update %p, %g32, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Kept: a cast another op reads too (the update reads the 16-bit gradient
// all the same), and a narrowing cast before an update (it rounds).
// CHECK-LABEL: func.func @kept
// CHECK: %[[W:.+]] = tg.cast %arg1 : tensor<8xbf16> -> tensor<8xf32>
// CHECK: tg.sgd_update %arg0, %arg1,
// CHECK: %[[N:.+]] = tg.cast %arg4 : tensor<8xf32> -> tensor<8xbf16>
// CHECK: tg.sgd_update %arg3, %[[N]],
// CHECK: return %{{.+}}, %[[W]],
func.func @kept(%p: tensor<8xf32>, %g: tensor<8xbf16>, %lr: tensor<f32>,
                %q: tensor<8xbf16>, %h: tensor<8xf32>, %s: tensor<i64>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>) {
  %g32 = tg.cast %g : tensor<8xbf16> -> tensor<8xf32>
  %0 = tg.sgd_update %p, %g32, %lr, %s
      : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<8xf32>
  %h16 = tg.cast %h : tensor<8xf32> -> tensor<8xbf16>
  %1 = tg.sgd_update %q, %h16, %lr, %s
      : (tensor<8xbf16>, tensor<8xbf16>, tensor<f32>, tensor<i64>) -> tensor<8xbf16>
  return %0, %g32, %1 : tensor<8xf32>, tensor<8xf32>, tensor<8xbf16>
}

// The residual add after a bf16 linear layer reads its output as it is;
// the norm after it writes the bf16 its readers cast to; the backward
// norm reads the bf16 gradient.
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[Y:[^:]+]]: tensor<2x4x8xbf16>
// CHECK-NOT: tg.cast
// CHECK: %[[R:.+]] = tg.add %[[X]], %[[Y]] : (tensor<2x4x8xf32>, tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[N:.+]] = tg.layer_norm %[[R]], %{{.+}}, %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: tg.layer_norm_grad %[[R]], %{{.+}}, %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>)
// CHECK-NEXT: %[[S:.+]] = tg.rms_norm %[[R]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf16>
// CHECK-NEXT: tg.rms_norm_grad %[[R]], %{{.+}}, %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf16>)
// CHECK-NEXT: return %[[N]], %[[N]], %{{[^,]+}}, %[[S]],
func.func @block(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xbf16>,
                 %w: tensor<8xf32>, %b: tensor<8xf32>, %g: tensor<2x4x8xbf16>,
                 %h: tensor<2x4x8xf16>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xf32>,
        tensor<2x4x8xf16>, tensor<2x4x8xf32>) {
  %y32 = tg.cast %y : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %r = tg.add %x, %y32 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = tg.layer_norm %r, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %n0 = tg.cast %n : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %n1 = tg.cast %n : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %g32 = tg.cast %g : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %d:3 = tg.layer_norm_grad %r, %w, %g32 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %s = tg.rms_norm %r, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %s16 = tg.cast %s : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  %h32 = tg.cast %h : tensor<2x4x8xf16> -> tensor<2x4x8xf32>
  %e:2 = tg.rms_norm_grad %r, %w, %h32 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return %n0, %n1, %d#0, %s16, %e#0 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf16>, tensor<2x4x8xf32>
}

// Kept: one of two widened operands of a binary op (its result stays f32),
// and the casts of a norm whose result an f32 reader needs or whose casts
// disagree.
// CHECK-LABEL: func.func @unfolded
// CHECK-NOT: tg.cast %arg0
// CHECK: %[[B:.+]] = tg.cast %arg1
// CHECK-NEXT: tg.mul %arg0, %[[B]] : (tensor<8xbf16>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: tg.layer_norm %arg2, %arg3, %arg3 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: tg.cast
// CHECK: tg.rms_norm %arg2, %arg3 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: tg.cast {{.+}} -> tensor<4x8xbf16>
// CHECK: tg.cast {{.+}} -> tensor<4x8xf16>
func.func @unfolded(%a: tensor<8xbf16>, %b: tensor<8xbf16>,
                    %x: tensor<4x8xf32>, %w: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xbf16>,
        tensor<4x8xf16>) {
  %a32 = tg.cast %a : tensor<8xbf16> -> tensor<8xf32>
  %b32 = tg.cast %b : tensor<8xbf16> -> tensor<8xf32>
  %m = tg.mul %a32, %b32 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = tg.layer_norm %x, %w, %w : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %n16 = tg.cast %n : tensor<4x8xf32> -> tensor<4x8xbf16>
  %s = tg.rms_norm %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s0 = tg.cast %s : tensor<4x8xf32> -> tensor<4x8xbf16>
  %s1 = tg.cast %s : tensor<4x8xf32> -> tensor<4x8xf16>
  return %m, %n, %n16, %s0, %s1 : tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf16>
}

// After tg-fuse-residuals: the norm's residual addend (a bf16 linear
// output widened beside the f32 stream) is read as it is; the norm
// gradients store the 16-bit copy their input gradient's readers cast it
// to beside the f32 gradient the residual stream goes on reading (an
// output mask gains an entry for it); a cast to another 16-bit type stays.
// CHECK-LABEL: func.func @fused_block
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x8xf32>, %[[Y:[^:]+]]: tensor<2x4x8xbf16>
// CHECK: %[[N:[^ ]+]], %[[R:[^ ]+]] = tg.layer_norm %[[X]], %{{.+}}, %{{.+}} plus %[[Y]] : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>)
// CHECK-NEXT: %[[D:[^ ]+]], %{{[^ ]+}}, %[[DB:[^ ]+]], %[[D16:[^ ]+]] = tg.layer_norm_grad %[[R]], %{{.+}}, %[[Y]] plus %[[X]] {output_mask = array<i1: true, false, true, true>} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>)
// CHECK-NEXT: %[[E:[^ ]+]], %{{[^ ]+}}, %[[E16:[^ ]+]] = tg.rms_norm_grad %[[R]], %{{.+}}, %[[Y]] : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf16>)
// CHECK-NEXT: %[[EB:.+]] = tg.cast %[[E]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT: return %[[N]], %[[D]], %[[D16]], %[[D16]], %[[DB]], %[[E16]], %[[EB]]
func.func @fused_block(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xbf16>,
                       %w: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>,
        tensor<2x4x8xbf16>, tensor<8xf32>, tensor<2x4x8xf16>,
        tensor<2x4x8xbf16>) {
  %y32 = tg.cast %y : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %n:2 = tg.layer_norm %x, %w, %b plus %y32 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %n16 = tg.cast %n#0 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %d:3 = tg.layer_norm_grad %n#1, %w, %y32 plus %x {output_mask = array<i1: true, false, true>} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %d0 = tg.cast %d#0 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %d1 = tg.cast %d#0 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %e:2 = tg.rms_norm_grad %n#1, %w, %y32 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %e16 = tg.cast %e#0 : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  %eb = tg.cast %e#0 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  return %n16, %d#0, %d0, %d1, %d#2, %e16, %eb
      : tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>,
        tensor<2x4x8xbf16>, tensor<8xf32>, tensor<2x4x8xf16>,
        tensor<2x4x8xbf16>
}

// Mixed precision's rotary embedding of bf16 heads (and its inverse on
// their gradients): the rope between a widening cast and a cast back to
// bf16 rotates the bf16 heads itself. Kept: a rope whose result an f32
// reader reads too, and one cast back to another type.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x8x16xbf16>, %[[F:[^:]+]]: tensor<8xf32>
// CHECK-NEXT: %[[W:.+]] = tg.cast %[[Q]] : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
// CHECK-NEXT: %[[R:.+]] = tg.rope %[[Q]], %[[F]] : (tensor<2x4x8x16xbf16>, tensor<8xf32>) -> tensor<2x4x8x16xbf16>
// CHECK-NEXT: %[[I:.+]] = tg.rope %[[Q]], %[[F]] {inverse = true} : (tensor<2x4x8x16xbf16>, tensor<8xf32>) -> tensor<2x4x8x16xbf16>
// CHECK-NEXT: %[[K:.+]] = tg.rope %[[W]], %[[F]] : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: %[[KB:.+]] = tg.cast %[[K]] : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
// CHECK-NEXT: %[[H:.+]] = tg.rope %[[W]], %[[F]] : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: %[[HB:.+]] = tg.cast %[[H]] : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf16>
// CHECK-NEXT: return %[[R]], %[[R]], %[[I]], %[[KB]], %[[K]], %[[HB]]
func.func @rope(%q: tensor<2x4x8x16xbf16>, %f: tensor<8xf32>)
    -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>,
        tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf16>) {
  %q32 = tg.cast %q : tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xf32>
  %r = tg.rope %q32, %f : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
  %r0 = tg.cast %r : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %r1 = tg.cast %r : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %i = tg.rope %q32, %f {inverse = true} : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
  %i16 = tg.cast %i : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %k = tg.rope %q32, %f : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
  %k16 = tg.cast %k : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  %h = tg.rope %q32, %f : (tensor<2x4x8x16xf32>, tensor<8xf32>) -> tensor<2x4x8x16xf32>
  %h16 = tg.cast %h : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf16>
  return %r0, %r1, %i16, %k16, %k, %h16
      : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>,
        tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf16>
}
