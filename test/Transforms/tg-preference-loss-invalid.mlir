// RUN: not tgc-opt %s --tg-preference-loss=loss=kto -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tgc-opt %s --tg-preference-loss="loss=dpo beta=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not tgc-opt %s --tg-preference-loss="loss=dpo label-smoothing=0.5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMOOTH
// RUN: not tgc-opt %s --tg-preference-loss=loss=dpo -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOREF
// RUN: not tgc-opt %s --split-input-file --tg-preference-loss=loss=simpo -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHAPES
// RUN: not tgc-opt %s --split-input-file --tg-preference-loss=loss=dpo -o /dev/null 2>&1 | FileCheck %s --check-prefix=ADAPTER

// UNKNOWN: error: tg-preference-loss: unknown loss 'kto' (none, dpo, ipo, simpo or orpo)
// BETA: error: tg-preference-loss: beta must be positive
// SMOOTH: error: tg-preference-loss: the label smoothing must be in [0, 0.5)
// NOREF: error: tg-preference-loss: --loss=dpo trains @lm, which has no trainable parameter

// A causal LM with nothing to train.
func.func @lm(%x: tensor<4x3x8xf32> {tg.input = "inputs"}, %y: tensor<4x3xi64> {tg.input = "targets"},
              %w: tensor<16x8xf32> {tg.param = "lm_head.weight", tg.frozen}) -> tensor<f32> attributes {tg.model, tg.task = "causal-lm"} {
  %0 = tg.matmul %x, %w {transpose_rhs = true} : (tensor<4x3x8xf32>, tensor<16x8xf32>) -> tensor<4x3x16xf32>
  %1 = tg.cross_entropy %0, %y : (tensor<4x3x16xf32>, tensor<4x3xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// SHAPES: error: 'tg.cross_entropy' op tg-preference-loss: the batch holds pairs of answers, the chosen ones first: it needs an even number of rows, found 3
func.func @odd(%x: tensor<3x2x16xf32> {tg.input = "inputs"}, %y: tensor<3x2xi64> {tg.input = "targets"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.cross_entropy %x, %y : (tensor<3x2x16xf32>, tensor<3x2xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// SHAPES: error: 'tg.cross_entropy' op tg-preference-loss: needs the targets by row, [rows, T], and their logits, found 'tensor<8xi64>' and 'tensor<8x16xf32>'
func.func @flat(%x: tensor<8x16xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.cross_entropy %x, %y : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// SHAPES: error: tg-preference-loss: --loss=simpo tunes a causal language model; @cls is a 'sequence-classification' model
func.func @cls(%x: tensor<4x2x16xf32> {tg.input = "inputs"}, %y: tensor<4x2xi64> {tg.input = "targets"}) -> tensor<f32> attributes {tg.model, tg.task = "sequence-classification"} {
  %0 = tg.cross_entropy %x, %y : (tensor<4x2x16xf32>, tensor<4x2xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// SHAPES: error: tg-preference-loss: @two has 2 tg.cross_entropy ops; a preference loss replaces one (the language model's)
func.func @two(%x: tensor<4x2x16xf32> {tg.input = "inputs"}, %y: tensor<4x2xi64> {tg.input = "targets"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.cross_entropy %x, %y : (tensor<4x2x16xf32>, tensor<4x2xi64>) -> tensor<f32>
  %1 = tg.cross_entropy %x, %y : (tensor<4x2x16xf32>, tensor<4x2xi64>) -> tensor<f32>
  %2 = tg.add %0, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// An adapter's product that scales the activations instead of being added
// to its base's product: the model without it cannot be formed.
// ADAPTER: error: tg-preference-loss: the LoRA adapters of @scaled reach the classifier otherwise than added to their base's product; the model with its adapters off cannot be formed
func.func @scaled(%x: tensor<4x3x8xf32> {tg.input = "inputs"}, %y: tensor<4x3xi64> {tg.input = "targets"},
                  %a: tensor<8xf32> {tg.param = "layers.0.lora_A.weight"},
                  %w: tensor<16x8xf32> {tg.param = "lm_head.weight"}) -> tensor<f32> attributes {tg.model, tg.task = "causal-lm"} {
  %0 = tg.mul %x, %a : (tensor<4x3x8xf32>, tensor<8xf32>) -> tensor<4x3x8xf32>
  %1 = tg.matmul %0, %w {transpose_rhs = true} : (tensor<4x3x8xf32>, tensor<16x8xf32>) -> tensor<4x3x16xf32>
  %2 = tg.cross_entropy %1, %y : (tensor<4x3x16xf32>, tensor<4x3xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
