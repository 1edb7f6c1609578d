// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale="mode=magic" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale="mode=static:-3" 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale="backoff-factor=2" 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not tgc-opt %s --tg-loss-scale 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer --tg-loss-scale -o /dev/null
// MODE: error: tg-loss-scale: mode must be dynamic, static:<value> or none, found 'magic'
// STATIC: error: tg-loss-scale: a static scale must be a positive number that is finite in f32, found '-3'
// FACTORS: error: tg-loss-scale: needs init-scale > 0 (finite in f32), a finite growth-factor > 1, backoff-factor in (0, 1) and growth-interval >= 1
// ORDER: error: tg-loss-scale found no function marked tg.train_step; run it after tg-autodiff

func.func @m(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
