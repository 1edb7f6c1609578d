// RUN: tgc-opt %s --split-input-file --tg-autodiff --verify-diagnostics

// An op without a gradient rule (here a gradient op: tgc has no second
// derivatives) on the path from a parameter to the loss.
func.func @no_rule(%w: tensor<4xf32> {tg.param = "w"},
                   %x: tensor<4xf32> {tg.input = "x"}) -> tensor<f32> attributes {tg.model} {
  // expected-error @+1 {{'tg.relu_grad' op has no gradient rule, but the loss depends on it through a trainable parameter}}
  %0 = tg.relu_grad %w, %x : tensor<4xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// The same op is fine where no parameter reaches it.
func.func @no_rule_needed(%w: tensor<4xf32> {tg.param = "w"},
                          %x: tensor<4xf32> {tg.input = "x"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.relu_grad %x, %x : tensor<4xf32>
  %1 = tg.mul %0, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = tg.reduce_sum %1 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// expected-error @+1 {{tg-autodiff found no function marked tg.model to differentiate}}
module {
  func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'func.func' op cannot create the training step: a symbol named 'clash_train_step' already exists}}
func.func @clash(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @clash_train_step() {
  return
}

// -----

// A norm with a residual addend (what tg-fuse-residuals makes of the
// finished step) has no gradient rule of its own.
func.func @norm_with_addend(%w: tensor<4xf32> {tg.param = "w"},
                            %x: tensor<2x4xf32> {tg.input = "x"}) -> tensor<f32> attributes {tg.model} {
  // expected-error @+1 {{'tg.rms_norm' op has no gradient with an addend: tg-fuse-residuals adds it to the finished step}}
  %0:2 = tg.rms_norm %x, %w plus %x : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %1 = tg.reduce_sum %0#0 {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A loss that computes its own gradient (what tg-fuse-loss makes of the
// finished step) has no gradient rule.
func.func @loss_with_grad(%w: tensor<4x8xf32> {tg.param = "w"},
                          %t: tensor<4xi64> {tg.input = "t"}) -> tensor<f32> attributes {tg.model} {
  %s = tg.fill 1.0 : tensor<f32>
  // expected-error @+1 {{'tg.cross_entropy' op has no gradient with grad: tg-fuse-loss runs on the finished step}}
  %0:2 = tg.cross_entropy %w, %t grad %s : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>)
  return %0#0 : tensor<f32>
}
