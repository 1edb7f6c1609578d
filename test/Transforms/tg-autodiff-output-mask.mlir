// RUN: tgc-opt %s --split-input-file --tg-autodiff --tg-optimizer | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tgc-train-pipeline= --tg-plan-memory=print=false -o /dev/null

// The fused gradient ops compute only the operand gradients the step
// needs (output_mask), and the planner gives the others no memory (the
// second RUN plans and verifies every step).

// Frozen layer-norm parameters, trained input: only input_grad.
// CHECK-LABEL: func.func @ln_frozen_params_train_step
// CHECK: %[[G:[a-z_0-9]+]], %{{.*}}, %{{.*}} = tg.layer_norm_grad {{.*}} {output_mask = array<i1: true, false, false>}
// CHECK: tg.matmul %arg0, %[[G]] {transpose_lhs = true}
func.func @ln_frozen_params(%x: tensor<4x8xf32> {tg.input = "inputs"},
                            %w0: tensor<8x8xf32> {tg.param = "proj.weight"},
                            %g: tensor<8xf32> {tg.frozen, tg.param = "ln.weight"},
                            %b: tensor<8xf32> {tg.frozen, tg.param = "ln.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.layer_norm %0, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tg.reduce_sum %1 {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Trained layer-norm parameters on an input: no input_grad.
// CHECK-LABEL: func.func @ln_on_input_train_step
// CHECK: tg.layer_norm_grad {{.*}} {output_mask = array<i1: false, true, true>}
func.func @ln_on_input(%x: tensor<4x8xf32> {tg.input = "inputs"},
                       %g: tensor<8xf32> {tg.param = "ln.weight"},
                       %b: tensor<8xf32> {tg.param = "ln.bias"})
    -> tensor<f32> attributes {tg.model} {
  %1 = tg.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tg.reduce_sum %1 {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Attention whose query alone depends on a trained parameter.
// CHECK-LABEL: func.func @attention_query_only_train_step
// CHECK: tg.attention_grad {{.*}}output_mask = array<i1: true, false, false>
// Everything needed: no mask.
// CHECK-LABEL: func.func @attention_all_train_step
// CHECK: tg.attention_grad %[[Q:[0-9]+]], %[[Q]], %[[Q]], %{{result[0-9_]*}}, %{{[0-9]+}} {causal = true} :
func.func @attention_query_only(%x: tensor<1x4x8xf32> {tg.input = "inputs"},
                                %kv: tensor<1x4x8xf32> {tg.input = "memory"},
                                %s: tensor<1x4x8xf32> {tg.param = "query.scale"})
    -> tensor<f32> attributes {tg.model} {
  %q = tg.mul %x, %s : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %0 = tg.attention %q, %kv, %kv {causal = true} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0, 1, 2>} : tensor<1x4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

func.func @attention_all(%x: tensor<1x4x8xf32> {tg.input = "inputs"},
                         %s: tensor<1x4x8xf32> {tg.param = "scale"})
    -> tensor<f32> attributes {tg.model} {
  %q = tg.mul %x, %s : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %0 = tg.attention %q, %q, %q {causal = true} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0, 1, 2>} : tensor<1x4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
