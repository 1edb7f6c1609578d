// RUN: tgc-opt %s --split-input-file --tg-fuse-loss | FileCheck %s

// The loss and its gradient seeded by a constant: one op, the seed moved
// before it.
// CHECK-LABEL: func.func @seeded
// CHECK: %[[S:[^ ]+]] = tg.fill 1.000000e+00 {tg.loss_seed} : tensor<f32>
// CHECK-NEXT: %[[L:[^ ,]+]], %[[G:[^ ]+]] = tg.cross_entropy %arg0, %arg1 grad %[[S]] {ignore_index = 0 : i64}
// CHECK-SAME: -> (tensor<f32>, tensor<4x8xbf16>)
// CHECK-NOT: tg.cross_entropy_grad
// CHECK: return %[[L]], %[[G]]
func.func @seeded(%logits: tensor<4x8xbf16>, %targets: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x8xbf16>) {
  %loss = tg.cross_entropy %logits, %targets {ignore_index = 0 : i64}
      : (tensor<4x8xbf16>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.fill 1.0 {tg.loss_seed} : tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %seed {ignore_index = 0 : i64}
      : (tensor<4x8xbf16>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xbf16>
  return %loss, %grad : tensor<f32>, tensor<4x8xbf16>
}

// -----

// Loss scaling and accumulation's weight: the scalar chain from the step's
// arguments moves before the loss, in order.
// CHECK-LABEL: func.func @scaled
// CHECK: tg.fill
// CHECK-NEXT: tg.scale_loss %{{[^ ]+}}, %arg2
// CHECK-NEXT: tg.target_count %arg1
// CHECK-NEXT: %[[W:[^ ]+]] = tg.mul
// CHECK-NEXT: tg.cross_entropy %arg0, %arg1 grad %[[W]]
// CHECK-NOT: tg.cross_entropy_grad
func.func @scaled(%logits: tensor<4x8xf16>, %targets: tensor<4xi64>,
                  %scale: tensor<f32>) -> (tensor<f32>, tensor<4x8xf16>) {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf16>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.fill 1.0 {tg.loss_seed} : tensor<f32>
  %scaled = tg.scale_loss %seed, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %count = tg.target_count %targets : (tensor<4xi64>) -> tensor<f32>
  %weighted = tg.mul %scaled, %count : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %weighted
      : (tensor<4x8xf16>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf16>
  return %loss, %grad : tensor<f32>, tensor<4x8xf16>
}

// -----

// The seed depends on the loss itself: left alone.
// CHECK-LABEL: func.func @seed_from_loss
// CHECK: tg.cross_entropy %arg0, %arg1 :
// CHECK: tg.cross_entropy_grad
func.func @seed_from_loss(%logits: tensor<4x8xf32>, %targets: tensor<4xi64>)
    -> tensor<4x8xf32> {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.mul %loss, %loss : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %seed
      : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  return %grad : tensor<4x8xf32>
}

// -----

// The seed comes from a tensor op after the loss: left alone (only scalar
// ops move).
// CHECK-LABEL: func.func @seed_from_tensor
// CHECK: tg.cross_entropy %arg0, %arg1 :
// CHECK: tg.cross_entropy_grad
func.func @seed_from_tensor(%logits: tensor<4x8xf32>, %targets: tensor<4xi64>,
                            %x: tensor<16xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %e = tg.exp %x : tensor<16xf32>
  %seed = tg.reduce_sum %e {axes = array<i64: 0>} : tensor<16xf32> -> tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %seed
      : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  return %loss, %grad : tensor<f32>, tensor<4x8xf32>
}

// -----

// Something else reads the logits (the gradient could not be written over
// them): left alone.
// CHECK-LABEL: func.func @logits_read_again
// CHECK: tg.cross_entropy %arg0, %arg1 :
// CHECK: tg.cross_entropy_grad
func.func @logits_read_again(%logits: tensor<4x8xf32>, %targets: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.fill 1.0 : tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %seed
      : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  %p = tg.softmax %logits {axis = 1 : i64} : tensor<4x8xf32>
  return %loss, %grad, %p : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Other targets: not the loss's gradient, left alone.
// CHECK-LABEL: func.func @other_targets
// CHECK: tg.cross_entropy %arg0, %arg1 :
// CHECK: tg.cross_entropy_grad %arg0, %arg2
func.func @other_targets(%logits: tensor<4x8xf32>, %targets: tensor<4xi64>,
                         %other: tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>) {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.fill 1.0 : tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %other, %seed
      : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  return %loss, %grad : tensor<f32>, tensor<4x8xf32>
}

// -----

// Another ignore_index: left alone.
// CHECK-LABEL: func.func @other_ignore_index
// CHECK: tg.cross_entropy %arg0, %arg1 :
// CHECK: tg.cross_entropy_grad %arg0, %arg1, %{{[^ ]+}} {ignore_index = 3 : i64}
func.func @other_ignore_index(%logits: tensor<4x8xf32>, %targets: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x8xf32>) {
  %loss = tg.cross_entropy %logits, %targets
      : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %seed = tg.fill 1.0 : tensor<f32>
  %grad = tg.cross_entropy_grad %logits, %targets, %seed {ignore_index = 3 : i64}
      : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  return %loss, %grad : tensor<f32>, tensor<4x8xf32>
}
