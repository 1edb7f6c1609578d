// RUN: tgc-opt %s --tg-chunk-loss=chunks=3 -o - | FileCheck %s
// Each chunk's product is recomputed for its gradient even without a
// rematerialization policy: one chunk's logits live at a time.
// RUN: tgc-opt %s --tg-chunk-loss=chunks=3 --tg-autodiff --tg-optimizer --tg-remat=policy=none -o - | FileCheck %s --check-prefix=REMAT
// RUN: tgc-opt %s --tg-chunk-loss=chunks=1 -o - | FileCheck %s --check-prefix=WHOLE
// RUN: not tgc-opt %s --tg-chunk-loss=chunks=0 -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tgc-opt %s --tg-chunk-loss --tg-chunk-loss -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE

// A language model's head: hidden states [2, 5, 8] by the vocabulary's
// weights [16, 8], and the mean cross-entropy over the 10 positions.
func.func @lm(%h: tensor<2x5x8xf32> {tg.input = "inputs"}, %y: tensor<2x5xi64> {tg.input = "targets"},
              %w: tensor<16x8xf32> {tg.param = "lm_head.weight"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %h, %w {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<16x8xf32>) -> tensor<2x5x16xf32> loc("lm_head")
  %1 = tg.cross_entropy %0, %y : (tensor<2x5x16xf32>, tensor<2x5xi64>) -> tensor<f32> loc("loss")
  return %1 : tensor<f32>
}

// Ten rows in pieces of 4, 3 and 3; each piece's mean weighted by its
// count of targets, the sum over the total count (at least 1).
// CHECK-LABEL: func.func @lm
// CHECK: %[[H:.*]] = tg.reshape %arg0 : tensor<2x5x8xf32> -> tensor<10x8xf32>
// CHECK: %[[Y:.*]] = tg.reshape %arg1 : tensor<2x5xi64> -> tensor<10xi64>
// CHECK: %[[HS:.*]]:3 = tg.split %[[H]] {axis = 0 : i64} : tensor<10x8xf32> -> tensor<4x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
// CHECK: %[[YS:.*]]:3 = tg.split %[[Y]] {axis = 0 : i64} : tensor<10xi64> -> tensor<4xi64>, tensor<3xi64>, tensor<3xi64>
// CHECK: %[[L0:.*]] = tg.matmul %[[HS]]#0, %arg2 {tg.recompute, transpose_rhs = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[C0:.*]] = tg.cross_entropy %[[L0]], %[[YS]]#0
// CHECK: %[[N0:.*]] = tg.target_count %[[YS]]#0
// CHECK: %[[S0:.*]] = tg.mul %[[C0]], %[[N0]]
// CHECK-COUNT-2: tg.matmul {{.*}} {tg.recompute, transpose_rhs = true} : (tensor<3x8xf32>
// CHECK: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CHECK: %[[DEN:.*]] = tg.maximum %{{.*}}, %[[ONE]]
// CHECK: %[[LOSS:.*]] = tg.div %{{.*}}, %[[DEN]]
// CHECK: return %[[LOSS]]

// REMAT-LABEL: func.func @lm_train_step
// REMAT-COUNT-3: tg.matmul {{.*}} {tg.recompute, tg.remat, transpose_rhs = true}

// WHOLE: tg.cross_entropy %0, %arg1 : (tensor<2x5x16xf32>

// ZERO: tg-chunk-loss: chunks must be at least 1, found 0
// NONE: tg-chunk-loss: @lm has no tg.cross_entropy of a tg.matmul by a matrix (the classifier) to split into chunks
