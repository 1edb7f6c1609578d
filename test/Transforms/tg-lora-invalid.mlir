// RUN: not tgc-opt %s --tg-lora="targets=attn" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tgc-opt %s --tg-lora="rank=0 targets=layers.0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tgc-opt %s --tg-lora="alpha=-1 targets=layers.0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tgc-opt %s --tg-lora -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not tgc-opt %s --tg-lora="rank=2 targets=tied" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARED
// RUN: not tgc-opt %s --tg-lora="rank=3 targets=layers.1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOBIG

// NOMATCH: error: tg-lora: target 'attn' matches no matmul weight of @mlp
// RANK: error: tg-lora: rank and alpha must be positive
// NONE: error: tg-lora: no target modules (targets=c_attn,c_proj)
// TOOBIG: error: 'tg.matmul' op tg-lora: rank 3 is above the size of 'layers.1' (2 x 4): B A cannot have a rank above 2; choose a lower rank, or train the weight itself
// SHARED: error: 'tg.matmul' op tg-lora: 'tied' is used by several matmuls; LoRA adapts a weight used once

func.func @mlp(%x: tensor<8x4xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w0: tensor<4x4xf32> {tg.param = "layers.0.weight"},
               %t: tensor<4x4xf32> {tg.param = "tied.weight"},
               %w1: tensor<2x4xf32> {tg.param = "layers.1.weight"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = tg.matmul %0, %t {transpose_rhs = true} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %2 = tg.matmul %1, %t {transpose_rhs = true} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<8x2xf32>
  %4 = tg.cross_entropy %3, %y : (tensor<8x2xf32>, tensor<8xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}
