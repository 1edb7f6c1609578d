// RUN: tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --verify-diagnostics
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="momentum=0.9" 2>&1 | FileCheck %s --check-prefix=MOM
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="beta1=1.0" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR

// OPT: error: tg-optimizer: unknown optimizer 'lamb' (expected adamw or sgd)
// MOM: error: tg-optimizer: momentum, dampening and nesterov apply to sgd, not adamw
// NESTEROV: error: tg-optimizer: nesterov needs momentum > 0 and dampening 0
// BETA: error: tg-optimizer: beta1 and beta2 must be in [0, 1)
// CLIP: error: tg-optimizer: clip-grad-norm must be non-negative (0 disables it), found -1
// LR: error: tg-optimizer: lr must be a finite non-negative number, found -1

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
