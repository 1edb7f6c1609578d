// RUN: not tgc-opt %s --tg-amp="dtype=fp8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not tgc-opt %s --tg-amp="low-precision-ops=matmul,softmax f32-ops=softmax" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not tgc-opt %s --tg-amp="f32-ops=softmax f32-math-ops=softmax" 2>&1 | FileCheck %s --check-prefix=MATH
// RUN: not tgc-opt %S/../tools/tgc-compile/Inputs/no-model.mlir --tg-amp 2>&1 | FileCheck %s --check-prefix=NOMODEL
// DTYPE: tgc-opt: for the --dtype option: must be none, bf16 or f16, found 'fp8'
// BOTH: error: tg-amp: 'softmax' is both a low-precision and an f32 op kind
// MATH: error: tg-amp: 'softmax' is both in f32-ops and in f32-math-ops
// NOMODEL: error: tg-amp found no function marked tg.model; run it before tg-autodiff

func.func @m(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
