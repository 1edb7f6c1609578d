// RUN: not tgc-opt %s --tg-freeze="freeze=layers.9.*" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tgc-opt %s --tg-freeze="train-only=encoder.*" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMATCH-TRAIN
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.0.* train-only=layers.0.weight" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.*" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.[0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GLOB
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.0.* frozen-dtype=f8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not tgc-opt %s --tg-freeze="frozen-dtype=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTHING

// NOMATCH: error: tg-freeze: --freeze pattern 'layers.9.*' matches no parameter of @mlp
// NOMATCH: note: parameters are named like 'layers.0.weight' and 'layers.1.bias'
// NOMATCH-TRAIN: error: tg-freeze: --train-only pattern 'encoder.*' matches no parameter of @mlp
// BOTH: error: tg-freeze: parameter 'layers.0.weight' matches both --freeze and --train-only
// ALL: error: tg-freeze: every parameter of @mlp is frozen; nothing would be trained
// GLOB: error: tg-freeze: bad freeze pattern 'layers.[0':
// DTYPE: tgc-opt: for the --frozen-dtype option: must be none, bf16 or f16, found 'f8'
// NOTHING: error: tg-freeze: frozen-dtype=bf16 but no parameter of @mlp is frozen (use freeze or train-only)

func.func @mlp(%x: tensor<8x4xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w0: tensor<4x4xf32> {tg.param = "layers.0.weight"}, %b0: tensor<4xf32> {tg.param = "layers.0.bias"},
               %w1: tensor<2x4xf32> {tg.param = "layers.1.weight"}, %b1: tensor<2xf32> {tg.param = "layers.1.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = tg.add %0, %b0 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = tg.relu %1 : tensor<8x4xf32>
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<8x2xf32>
  %4 = tg.add %3, %b1 : (tensor<8x2xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  %5 = tg.cross_entropy %4, %y : (tensor<8x2xf32>, tensor<8xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}
