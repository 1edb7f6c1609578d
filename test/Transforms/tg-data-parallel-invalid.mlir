// RUN: not tgc-opt %s --tg-optimizer="optimizer=adafactor" --tg-data-parallel="mode=zero1 world-size=2" 2>&1 | FileCheck %s --check-prefix=FACTORED
// RUN: tgc-opt %s --tg-optimizer="optimizer=adafactor" --tg-data-parallel="mode=ddp world-size=2" | FileCheck %s --check-prefix=FACTORED-DDP
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel="mode=zero4" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel="world-size=0" 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel="bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel="mode=zero3 world-size=4 shard-group=3" 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel="mode=ddp world-size=4 shard-group=2" 2>&1 | FileCheck %s --check-prefix=GROUP-DDP
// RUN: not tgc-opt %s --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=NO-OPTIMIZER
// RUN: not tgc-opt %s --tg-optimizer --tg-data-parallel --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=TWICE

// Adafactor's factored second moment has no per-element layout to split:
// ZeRO refuses it by name, DDP (which splits nothing) takes it.
// FACTORED: error: 'tg.adafactor_update' op cannot be split across ranks (its state is not laid out element by element with the parameter); tg-data-parallel zero1 needs an elementwise or blockwise optimizer: use ddp, or adamw or sgd
// FACTORED-DDP: tg.all_reduce mean
// FACTORED-DDP: tg.adafactor_update
// MODE: tgc-opt: for the --mode option: must be none, ddp, zero1, zero2 or zero3, found 'zero4'
// RANKS: error: tg-data-parallel: world-size must be in [1, 2^20], found 0
// BUCKET: error: tg-data-parallel: bucket-mb must be a positive number of MiB, found 0
// GROUP: error: tg-data-parallel: shard-group must divide the world size 4 (0: the world size), found 3
// GROUP-DDP: error: tg-data-parallel: shard-group splits what a ZeRO mode splits; ddp splits nothing (use zero1, zero2 or zero3)
// NO-OPTIMIZER: error: 'func.func' op has no optimizer update; run tg-data-parallel after tg-optimizer
// TWICE: error: 'func.func' op is already data-parallel; run tg-data-parallel once

func.func @net_train_step(%x: tensor<4x3xf32> {tg.input = "x"},
                          %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.grad = "w"})
    attributes {tg.train_step} {
  %loss = tg.fill 1.0 : tensor<f32>
  %dw = tg.fill 2.0 : tensor<3x3xf32>
  return %loss, %dw : tensor<f32>, tensor<3x3xf32>
}
