// RUN: tgc-opt %s --split-input-file --tg-raise-logit-softcap | FileCheck %s

// Gemma 2's final logits as tgc-import traces them: divided by the cap,
// tanh, multiplied by the cap, reshaped for the loss. The loss takes the
// classifier's product itself, with its softcap; the elementwise chain is
// gone.
// CHECK-LABEL: func.func @gemma2_logits(
// CHECK-SAME: %[[H:[^:]*]]: tensor<8x16xf32>, %[[W:[^:]*]]: tensor<32x16xf32>, %[[T:[^:]*]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.*]] = tg.matmul %[[H]], %[[W]] {transpose_rhs = true}
// CHECK-NEXT: %[[LOSS:.*]] = tg.cross_entropy %[[L]], %[[T]] {softcap = 3.000000e+01 : f64}
// CHECK-NEXT: return %[[LOSS]]
func.func @gemma2_logits(%h: tensor<8x16xf32>, %w: tensor<32x16xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %l = tg.matmul %h, %w {transpose_rhs = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %l3 = tg.reshape %l : tensor<8x32xf32> -> tensor<2x4x32xf32>
  %c = tg.constant dense<3.000000e+01> : tensor<f32>
  %d = tg.div %l3, %c : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
  %th = tg.tanh %d : tensor<2x4x32xf32>
  %m = tg.mul %th, %c : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
  %flat = tg.reshape %m : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %loss = tg.cross_entropy %flat, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Left alone: caps that differ, and a capped tensor something else reads.
// CHECK-LABEL: func.func @different_caps(
// CHECK: tg.tanh
// CHECK: tg.cross_entropy %{{[^ ]*}}, %{{[^ ]*}} :
func.func @different_caps(%l: tensor<8x32xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %c1 = tg.constant dense<3.000000e+01> : tensor<f32>
  %c2 = tg.constant dense<2.000000e+01> : tensor<f32>
  %d = tg.div %l, %c1 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %th = tg.tanh %d : tensor<8x32xf32>
  %m = tg.mul %th, %c2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %loss = tg.cross_entropy %m, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @capped_read_twice(
// CHECK: tg.tanh
// CHECK: tg.cross_entropy %{{[^ ]*}}, %{{[^ ]*}} :
func.func @capped_read_twice(%l: tensor<8x32xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x32xf32>) {
  %c = tg.constant dense<3.000000e+01> : tensor<f32>
  %d = tg.div %l, %c : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %th = tg.tanh %d : tensor<8x32xf32>
  %m = tg.mul %th, %c : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %loss = tg.cross_entropy %m, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss, %m : tensor<f32>, tensor<8x32xf32>
}
