// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-grad-accum=steps=1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-grad-accum=steps=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tgc-opt %s --split-input-file --tg-grad-accum=steps=4 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-grad-accum=steps=4 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-grad-accum=steps=4 --tg-grad-accum=steps=2 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-grad-accum=steps=4 2>&1 | FileCheck %s --check-prefix=FROZEN
// ONE: error: tg-grad-accum: steps must be from 2 to 1048576 (1 is no accumulation), found 1
// ZERO: error: tg-grad-accum: steps must be from 2 to 1048576 (1 is no accumulation), found 0
// ORDER: error: tg-grad-accum found no function marked tg.train_step; run it after tg-autodiff
// AFTER: error: 'func.func' op result #1 is not the loss or a gradient; run tg-grad-accum on the output of tg-autodiff, before tg-optimizer
// TWICE: error: 'func.func' op already accumulates gradients; run tg-grad-accum once

func.func @m(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// FROZEN: error: 'func.func' op has no parameter gradients to accumulate (no trainable parameter reaches the loss)
func.func @frozen(%w: tensor<4xf32> {tg.param = "w", tg.frozen}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
