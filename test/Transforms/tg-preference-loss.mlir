// RUN: tgc-opt %s --tg-lora="rank=2 targets=layers.0" --tg-preference-loss=loss=dpo -o - | FileCheck %s --check-prefix=DPO
// RUN: tgc-opt %s --tg-lora="rank=2 targets=layers.0" --tg-preference-loss="loss=dpo recompute-logits" --tg-autodiff -o - | FileCheck %s --check-prefix=STEP
// RUN: tgc-opt %s --tg-preference-loss="loss=simpo gamma=0.25" -o - | FileCheck %s --check-prefix=SIMPO
// RUN: tgc-opt %s --tg-preference-loss="loss=orpo beta=0.2" -o - | FileCheck %s --check-prefix=ORPO
// RUN: tgc-opt %s --tg-preference-loss -o - | FileCheck %s --check-prefix=NONE
// RUN: tgc-opt %s --tg-preference-loss=loss=dpo -o - | FileCheck %s --check-prefix=FULL

// A causal LM: one adapted layer, the classifier, the mean cross-entropy;
// 4 rows, so 2 pairs (rows 0 and 1 chosen, 2 and 3 rejected).
func.func @lm(%x: tensor<4x3x8xf32> {tg.input = "inputs"}, %y: tensor<4x3xi64> {tg.input = "targets"},
              %w0: tensor<8x8xf32> {tg.param = "layers.0.weight"},
              %w: tensor<16x8xf32> {tg.param = "lm_head.weight"}) -> tensor<f32> attributes {tg.model, tg.task = "causal-lm"} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<4x3x8xf32>, tensor<8x8xf32>) -> tensor<4x3x8xf32> loc("layers.0")
  %1 = tg.tanh %0 : tensor<4x3x8xf32> loc("act")
  %2 = tg.matmul %1, %w {transpose_rhs = true} : (tensor<4x3x8xf32>, tensor<16x8xf32>) -> tensor<4x3x16xf32> loc("lm_head")
  %3 = tg.cross_entropy %2, %y : (tensor<4x3x16xf32>, tensor<4x3xi64>) -> tensor<f32> loc("loss")
  return %3 : tensor<f32>
}

// The policy: each row's classifier product and cross-entropy; the row's
// summed log-probability is minus its mean times its count of targets.
// DPO-LABEL: func.func @lm
// DPO-SAME: -> (tensor<f32>, tensor<f32> {tg.metric = "rewards/chosen"}, tensor<f32> {tg.metric = "rewards/rejected"}, tensor<f32> {tg.metric = "rewards/accuracies"}, tensor<f32> {tg.metric = "rewards/margins"}, tensor<f32> {tg.metric = "logps/chosen"}, tensor<f32> {tg.metric = "logps/rejected"}, tensor<f32> {tg.metric = "logps/ref_chosen"}, tensor<f32> {tg.metric = "logps/ref_rejected"})
// DPO: %[[BASE:.*]] = tg.matmul %arg0, %arg2
// DPO: %[[SUM:.*]] = tg.add %[[BASE]],
// DPO: %[[ACT:.*]] = tg.tanh %[[SUM]]
// DPO: %[[H:.*]] = tg.reshape %[[ACT]] : tensor<4x3x8xf32> -> tensor<12x8xf32>
// DPO: %[[ROWS:.*]]:4 = tg.split %[[H]] {axis = 0 : i64} : tensor<12x8xf32> -> tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
// DPO: %[[Y:.*]]:4 = tg.split %{{.*}} {axis = 0 : i64} : tensor<12xi64> -> tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>
// DPO: %[[L0:.*]] = tg.matmul %[[ROWS]]#0, %arg3 {transpose_rhs = true} : (tensor<3x8xf32>, tensor<16x8xf32>) -> tensor<3x16xf32>
// DPO: %[[C0:.*]] = tg.cross_entropy %[[L0]], %[[Y]]#0
// DPO: %[[N0:.*]] = tg.target_count %[[Y]]#0
// DPO: tg.mul %[[C0]], %[[N0]]
// DPO-COUNT-3: tg.cross_entropy
// DPO: %[[LOSSES:.*]] = tg.concat {{.*}} -> tensor<4xf32>
// DPO: %[[POLICY:.*]] = tg.neg %[[LOSSES]] : tensor<4xf32>
// The reference: the adapter's sum is its base's product, which the clone
// reads as it is (computed from the input and a frozen weight alone); the
// target rows are shared.
// DPO: %[[REFACT:.*]] = tg.tanh %[[BASE]]
// DPO: %[[REFH:.*]] = tg.reshape %[[REFACT]]
// DPO: %[[REFROWS:.*]]:4 = tg.split %[[REFH]]
// DPO: tg.matmul %[[REFROWS]]#0, %arg3
// DPO: tg.cross_entropy %{{.*}}, %[[Y]]#0
// DPO-COUNT-3: tg.cross_entropy
// DPO: %[[REF:.*]] = tg.neg %{{.*}} : tensor<4xf32>
// z = (pi_c - pi_r) - (ref_c - ref_r); the loss softplus(-beta z).
// DPO: %[[P:.*]]:2 = tg.split %[[POLICY]] {axis = 0 : i64} : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>
// DPO: %[[R:.*]]:2 = tg.split %[[REF]] {axis = 0 : i64} : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>
// DPO: %[[PD:.*]] = tg.sub %[[P]]#0, %[[P]]#1
// DPO: %[[RD:.*]] = tg.sub %[[R]]#0, %[[R]]#1
// DPO: %[[Z:.*]] = tg.sub %[[PD]], %[[RD]]
// DPO: %[[BETA:.*]] = tg.fill 1.000000e-01 : tensor<f32>
// DPO: %[[BZ:.*]] = tg.mul %[[Z]], %[[BETA]]
// DPO: %[[NBZ:.*]] = tg.neg %[[BZ]]
// DPO: %[[LOSS:.*]] = tg.reduce_mean %{{.*}} {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
// DPO-NOT: tg.cross_entropy
// DPO: return %[[LOSS]],
// DPO-NOT: lora_A

// tg-autodiff: the step returns the metrics after the loss; the reference
// has no backward pass (one cross-entropy gradient a policy row), and each
// row's product is recomputed for its gradient (recompute-logits).
// STEP-LABEL: func.func @lm_train_step
// STEP-SAME: -> (tensor<f32> {tg.loss}, tensor<f32> {tg.metric = "rewards/chosen"},
// STEP-SAME: {tg.grad = "layers.0.lora_A.weight"}
// STEP-COUNT-4: tg.matmul {{.*}} {tg.recompute, transpose_rhs = true} : (tensor<3x8xf32>
// STEP-COUNT-4: tg.cross_entropy_grad
// STEP-NOT: tg.cross_entropy_grad

// With SimPO, no reference; averaged log-probabilities (minus each row's mean);
// softplus(-(beta (pi_c - pi_r) - gamma)), beta 2.0 by default.
// SIMPO-LABEL: func.func @lm
// SIMPO-SAME: tg.metric = "logps/rejected"})
// SIMPO-COUNT-4: tg.cross_entropy
// SIMPO-NOT: tg.cross_entropy
// SIMPO: %[[MEANS:.*]] = tg.concat {{.*}} -> tensor<4xf32>
// SIMPO: %[[PI:.*]] = tg.neg %[[MEANS]]
// SIMPO: %[[P:.*]]:2 = tg.split %[[PI]]
// SIMPO: %[[BETA:.*]] = tg.fill 2.000000e+00
// SIMPO: %[[RC:.*]] = tg.mul %[[P]]#0, %[[BETA]]
// SIMPO: %[[RR:.*]] = tg.mul %[[P]]#1,
// SIMPO: %[[M:.*]] = tg.sub %[[RC]], %[[RR]]
// SIMPO: %[[GAMMA:.*]] = tg.fill 2.500000e-01
// SIMPO: tg.sub %[[M]], %[[GAMMA]]

// With ORPO, the NLL of the chosen rows' tokens (their token losses summed over
// their count), minus beta times the mean log-sigmoid of the log odds.
// ORPO-LABEL: func.func @lm
// ORPO-SAME: tg.metric = "nll_loss"}, tensor<f32> {tg.metric = "log_odds_ratio"}, tensor<f32> {tg.metric = "log_odds_chosen"})
// ORPO: %[[NLL:.*]] = tg.div
// ORPO: %[[RATIO:.*]] = tg.reduce_mean
// ORPO: %[[BETA:.*]] = tg.fill 2.000000e-01
// ORPO: %[[TERM:.*]] = tg.mul %[[RATIO]], %[[BETA]]
// ORPO: %[[LOSS:.*]] = tg.sub %[[NLL]], %[[TERM]]
// ORPO: return %[[LOSS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NLL]], %[[RATIO]],

// NONE: tg.cross_entropy %2, %arg1 : (tensor<4x3x16xf32>, tensor<4x3xi64>) -> tensor<f32>

// Full fine-tuning: the reference reads a frozen copy of each trained
// parameter (the runtime fills it with the parameter's starting value),
// the classifier's weight too.
// FULL-LABEL: func.func @lm
// FULL-SAME: %arg4: tensor<8x8xf32> {tg.copy_of = "layers.0.weight", tg.frozen, tg.param = "reference.layers.0.weight"}, %arg5: tensor<16x8xf32> {tg.copy_of = "lm_head.weight", tg.frozen, tg.param = "reference.lm_head.weight"})
// FULL: tg.matmul %arg0, %arg2
// FULL-COUNT-4: tg.matmul %{{.*}}, %arg3
// FULL: %[[REF:.*]] = tg.matmul %arg0, %arg4
// FULL: tg.tanh %[[REF]]
// FULL-COUNT-4: tg.matmul %{{.*}}, %arg5
