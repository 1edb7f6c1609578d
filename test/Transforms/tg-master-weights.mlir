// RUN: tgc-opt %s --tg-amp --tg-master-weights -o - | FileCheck %s
// RUN: tgc-opt %s --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer -o - | FileCheck %s --check-prefix=STEP
// RUN: tgc-opt %s --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer=stochastic-rounding=false -o - | FileCheck %s --check-prefix=NEAREST
// RUN: tgc-opt %s --tg-master-weights=dtype=f32 -o - | FileCheck %s --check-prefix=F32
// RUN: tgc-opt %s --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=4 shard-group=2" -o - | FileCheck %s --check-prefix=ZERO
// RUN: tgc-opt %s --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=4 shard-group=2" -o - | grep -c "tg.shard " | FileCheck %s --check-prefix=ONESHARD
// Run twice, the second finds nothing left to narrow.
// RUN: not tgc-opt %s --tg-master-weights --tg-master-weights -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE

// A matmul (computed in bf16 under tg-amp) and a layer norm (in f32).
func.func @net(%x: tensor<8x16xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w: tensor<16x4xf32> {tg.param = "proj.weight"},
               %g: tensor<4xf32> {tg.param = "norm.weight"}, %b: tensor<4xf32> {tg.param = "norm.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tg.layer_norm %0, %g, %b : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = tg.cross_entropy %1, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}

// The parameters are bf16. The matmul reads its weight directly (tg-amp's
// working copy is gone); the layer norm reads one exact widening cast of
// each of its parameters.
// CHECK-LABEL: func.func @net
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<16x4xbf16> {tg.param = "proj.weight"}
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<4xbf16> {tg.param = "norm.weight"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4xbf16> {tg.param = "norm.bias"}
// CHECK-DAG: %[[GW:.*]] = tg.cast %[[G]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-DAG: %[[BW:.*]] = tg.cast %[[B]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NOT: tg.cast %[[W]]
// CHECK: tg.matmul %{{.*}}, %[[W]] :
// CHECK: tg.layer_norm %{{.*}}, %[[GW]], %[[BW]]

// The training step: bf16 gradients, f32 moments, and each update rounds
// stochastically with a seed of its own (FNV-1a of the name, odd).
// STEP-LABEL: func.func @net_train_step
// STEP: tg.adamw_update %{{.*}} {rounding_seed = [[S1:[0-9]+]] : i64} : (tensor<16x4xbf16>, tensor<16x4xbf16>, tensor<16x4xf32>, tensor<16x4xf32>
// STEP: tg.adamw_update %{{.*}} {rounding_seed = [[S2:[0-9]+]] : i64} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>
// NEAREST-LABEL: func.func @net_train_step
// NEAREST-NOT: rounding_seed
// NEAREST: tg.adamw_update {{.*}} : (tensor<16x4xbf16>, tensor<16x4xbf16>, tensor<16x4xf32>

// Split across a shard group of 2 (of 4 ranks), each update rounds its
// part with the bits of the whole: it takes the rank's number in the group
// (one tg.shard of [0, 1] for every update), and the runtime hashes
// part * 32 + i for element i of proj.weight's part of 32.
// ZERO-LABEL: func.func @net_train_step
// ZERO: %[[ALL:.*]] = tg.constant dense<[0, 1]> : tensor<2xi64>
// ZERO-NEXT: %[[MINE:.*]] = tg.shard %[[ALL]] {world_size = 2 : i64} : tensor<2xi64> -> tensor<1xi64>
// ZERO-NEXT: %[[PART:.*]] = tg.reshape %[[MINE]] : tensor<1xi64> -> tensor<i64>
// ZERO: tg.adamw_update {{.*}} part %[[PART]] {rounding_seed = {{[0-9]+}} : i64} : (tensor<32xbf16>,
// ZERO: tg.adamw_update {{.*}} part %[[PART]] {rounding_seed = {{[0-9]+}} : i64} : (tensor<2xbf16>,
// ZERO: tg.adamw_update {{.*}} part %[[PART]] {rounding_seed = {{[0-9]+}} : i64} : (tensor<2xbf16>,
// ONESHARD: {{^}}1{{$}}

// F32-LABEL: func.func @net
// F32-SAME: tensor<16x4xf32> {tg.param = "proj.weight"}

// NONE: error: tg-master-weights: dtype=bf16 but @net has no trainable f32 parameter

// RUN: not tgc-opt %S/Inputs/adamw-rounding-f32.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: 'tg.adamw_update' op rounds stochastically (rounding_seed 7) a parameter of type 'tensor<4xf32>'; only bf16 parameters are
// RUN: not tgc-opt %S/Inputs/adamw-part-nearest.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=NUMBERED
// NUMBERED: 'tg.adamw_update' op takes a part number, which only stochastic rounding reads, with rounding_seed 0

// A tied embedding (Inputs/tied-embedding.mlir): the lookup reads the bf16
// table itself, widening the rows it looks up (no f32 copy of the table);
// the classifier reads it directly. The lookup's gradient still sums in
// f32 and is rounded once, as through a widened copy.
// RUN: tgc-opt %S/Inputs/tied-embedding.mlir --tg-amp --tg-master-weights --tg-autodiff --tg-optimizer -o - | FileCheck %s --check-prefix=TABLE
// TABLE-LABEL: func.func @tied(
// TABLE-NOT: tg.cast %arg2
// TABLE: tg.embedding %arg2, %arg0 : (tensor<10x6xbf16>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
// TABLE-NOT: tg.cast %arg2
// TABLE: tg.matmul %{{.*}}, %arg2 {transpose_rhs = true}
// TABLE-LABEL: func.func @tied_train_step
// TABLE: %[[SUM:.*]] = tg.embedding_grad %arg0, %{{.*}} : (tensor<2x4xi64>, tensor<2x4x6xf32>) -> tensor<10x6xf32>
// TABLE-NEXT: %[[ROUNDED:.*]] = tg.cast %[[SUM]] : tensor<10x6xf32> -> tensor<10x6xbf16>
// TABLE-NEXT: %[[GRAD:.*]] = tg.add %{{.*}}, %[[ROUNDED]] : (tensor<10x6xbf16>, tensor<10x6xbf16>) -> tensor<10x6xbf16>
// TABLE: tg.adamw_update %arg2, %[[GRAD]]
