// Option errors of tg-optimizer, reported once with the option names.
// RUN: not tgc-opt %s --tg-optimizer="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not tgc-opt %s --tg-optimizer="momentum=0.9" 2>&1 | FileCheck %s --check-prefix=MOM
// RUN: not tgc-opt %s --tg-optimizer="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not tgc-opt %s --tg-optimizer="beta1=1.0" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not tgc-opt %s --tg-optimizer="clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not tgc-opt %s --tg-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR

// OPT: tgc-opt: for the --optimizer option: must be adamw, sgd or adafactor, found 'lamb'
// MOM: error: tg-optimizer: momentum, dampening and nesterov apply to sgd, not adamw
// NESTEROV: error: tg-optimizer: nesterov needs momentum > 0 and dampening 0
// BETA: error: tg-optimizer: beta1 and beta2 must be in [0, 1)
// CLIP: error: tg-optimizer: clip-grad-norm must be non-negative (0 disables it), found -1
// LR: error: tg-optimizer: lr must be a finite non-negative number, found -1

// RUN: not tgc-opt %s --tg-optimizer="optimizer=adafactor clip-threshold=0" 2>&1 | FileCheck %s --check-prefix=CLIPT
// RUN: not tgc-opt %s --tg-optimizer="eps=inf" 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not tgc-opt %s --tg-optimizer="weight-decay=nan" 2>&1 | FileCheck %s --check-prefix=WD
// CLIPT: error: tg-optimizer: adafactor needs decay-rate < 0 and clip-threshold > 0
// EPS: error: tg-optimizer: eps must be a finite non-negative number, found INF
// WD: error: tg-optimizer: weight-decay must be non-negative, found nan

// RUN: not tgc-opt %s --split-input-file --tg-optimizer 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: tg-optimizer found no function marked tg.train_step; run it after tg-autodiff

func.func @model(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
