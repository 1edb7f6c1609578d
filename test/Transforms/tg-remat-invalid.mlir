// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=everything -o /dev/null 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=budget=lots -o /dev/null 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=budget=-5GiB -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=budget=2.5XB -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=budget=40KiB -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLOOR
// RUN: tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=budget=57344 -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLOOR-MET
// RUN: not tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-remat=policy=blocks -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCKS

// POLICY: error: tg-remat: policy must be none, selective, blocks or budget=<size>, found 'everything'
// MALFORMED: error: tg-remat: policy budget=<size> needs a positive size such as 6GiB, 512MiB or 1000000 (bytes), found 'lots'
// NEGATIVE: error: tg-remat: policy budget=<size> needs a positive size such as 6GiB, 512MiB or 1000000 (bytes), found '-5GiB'
// UNIT: error: tg-remat: policy budget=<size> needs a positive size such as 6GiB, 512MiB or 1000000 (bytes), found '2.5XB'
// Below the floor: the error states the smallest peak and how to reach it,
// with or without name scopes (the second model has them), and that budget
// is then met.
// FLOOR: error: tg-remat: no choice of recomputation fits the budget of 40.00 KiB (40960 bytes): the smallest planned peak tgc reaches is 56.00 KiB (57344 bytes: persistent 26.75 KiB + transient 29.25 KiB), which --remat=budget=57344 reaches by recomputing 1 ops
// FLOOR: error: tg-remat: no choice of recomputation fits the budget of 40.00 KiB (40960 bytes): the smallest planned peak tgc reaches is 56.00 KiB (57344 bytes: persistent 26.75 KiB + transient 29.25 KiB), which --remat=budget=57344 reaches by recomputing 1 ops
// FLOOR-MET-COUNT-2: tg-remat: @mlp_train_step policy budget=57344: 1 ops recomputed, {{.*}} peak live 43008 -> 29952 bytes
// A model without name scopes has no blocks.
// BLOCKS: error: tg-remat: policy 'blocks' found 0 blocks; it needs repeated blocks, named by the forward ops' name scopes with an index ('layers.0', 'transformer.h.0'). Use 'selective' or 'budget=<size>'

func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "w0"}, %b0: tensor<32xf32> {tg.param = "b0"},
               %w1: tensor<32x32xf32> {tg.param = "w1"}, %b1: tensor<32xf32> {tg.param = "b1"},
               %w2: tensor<4x32xf32> {tg.param = "w2"}, %b2: tensor<4xf32> {tg.param = "b2"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32>
  %1 = tg.add %0, %b0 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %2 = tg.relu %1 : tensor<64x32xf32>
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
  %4 = tg.add %3, %b1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %5 = tg.relu %4 : tensor<64x32xf32>
  %6 = tg.matmul %5, %w2 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<64x4xf32>
  %7 = tg.add %6, %b2 : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32>
  %8 = tg.cross_entropy %7, %y : (tensor<64x4xf32>, tensor<64xi64>) -> tensor<f32>
  return %8 : tensor<f32>
}

// -----

func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "w0"}, %b0: tensor<32xf32> {tg.param = "b0"},
               %w1: tensor<32x32xf32> {tg.param = "w1"}, %b1: tensor<32xf32> {tg.param = "b1"},
               %w2: tensor<4x32xf32> {tg.param = "w2"}, %b2: tensor<4xf32> {tg.param = "b2"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32> loc("layers.0")
  %1 = tg.add %0, %b0 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.0")
  %2 = tg.relu %1 : tensor<64x32xf32> loc("layers.0")
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %4 = tg.add %3, %b1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %5 = tg.relu %4 : tensor<64x32xf32> loc("layers.1")
  %6 = tg.matmul %5, %w2 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<64x4xf32> loc("layers.2")
  %7 = tg.add %6, %b2 : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32> loc("layers.2")
  %8 = tg.cross_entropy %7, %y : (tensor<64x4xf32>, tensor<64xi64>) -> tensor<f32>
  return %8 : tensor<f32>
}
