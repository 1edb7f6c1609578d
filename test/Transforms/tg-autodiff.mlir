// RUN: tgc-opt %s --split-input-file --tg-autodiff | FileCheck %s
// (The optimizer that consumes the gradients: tg-optimizer.mlir.)

// A two-layer MLP with a frozen bias and a weight used twice.

func.func @net(%x: tensor<4x3xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %w: tensor<3x3xf32> {tg.param = "w"},
               %b: tensor<3xf32> {tg.param = "b", tg.frozen},
               %v: tensor<3x2xf32> {tg.param = "v"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %1 = tg.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = tg.tanh %1 : tensor<4x3xf32>
  %3 = tg.matmul %2, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %4 = tg.matmul %3, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %5 = tg.cross_entropy %4, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// The model stays; the step is added after it.
// CHECK-LABEL: func.func @net(
// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x3xf32> {tg.input = "x"}
// CHECK-SAME: %[[Y:[^:]*]]: tensor<4xi64> {tg.input = "y"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x3xf32> {tg.param = "w"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<3xf32> {tg.frozen, tg.param = "b"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<3x2xf32> {tg.param = "v"})
// The frozen bias has no gradient.
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.grad = "w"}, tensor<3x2xf32> {tg.grad = "v"}) attributes {tg.train_step}
// CHECK: %[[H1:.*]] = tg.add
// CHECK: %[[T:.*]] = tg.tanh %[[H1]]
// CHECK: %[[H3:.*]] = tg.matmul %[[T]], %[[W]]
// CHECK: %[[LOGITS:.*]] = tg.matmul %[[H3]], %[[V]]
// CHECK: %[[LOSS:.*]] = tg.cross_entropy %[[LOGITS]], %[[Y]]
// The seed of the backward pass is marked for loss scaling.
// CHECK: %[[SEED:.*]] = tg.fill 1.000000e+00 {tg.loss_seed} : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = tg.cross_entropy_grad %[[LOGITS]], %[[Y]], %[[SEED]]
// CHECK-DAG: %[[DH3:.*]] = tg.matmul %[[DLOGITS]], %[[V]] {transpose_rhs = true}
// CHECK-DAG: %[[DV:.*]] = tg.matmul %[[H3]], %[[DLOGITS]] {transpose_lhs = true}
// CHECK-DAG: %[[DT:.*]] = tg.matmul %[[DH3]], %[[W]] {transpose_rhs = true}
// CHECK-DAG: %[[DW2:.*]] = tg.matmul %[[T]], %[[DH3]] {transpose_lhs = true}
// CHECK: %[[DH1:.*]] = tg.tanh_grad %[[T]], %[[DT]]
// The bias is frozen and x is an input: no sum_to for the bias, no dx.
// CHECK-NOT: tg.sum_to
// CHECK-NOT: tg.matmul %[[DH1]], %[[W]]
// CHECK: %[[DW1:.*]] = tg.matmul %[[X]], %[[DH1]] {transpose_lhs = true}
// The two uses of w have their cotangents summed.
// CHECK: %[[DW:.*]] = tg.add %[[DW2]], %[[DW1]]
// CHECK: return %[[LOSS]], %[[DW]], %[[DV]] :

// -----

// Broadcast operands get their cotangent summed back; slices scatter back;
// split pieces that do not reach the loss contribute zeros.

func.func @shapes(%t: tensor<2x2xi64> {tg.input = "t"},
                  %p: tensor<6x8xf32> {tg.param = "p"},
                  %s: tensor<8xf32> {tg.param = "s"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.slice %p {offsets = array<i64: 1, 0>} : tensor<6x8xf32> -> tensor<4x8xf32>
  %1 = tg.mul %0, %s : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %a, %b = tg.split %1 {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %2 = tg.reshape %a : tensor<4x4xf32> -> tensor<2x2x4xf32>
  %3 = tg.cross_entropy %2, %t : (tensor<2x2x4xf32>, tensor<2x2xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}
// CHECK-LABEL: func.func @shapes_train_step(
// CHECK: %[[SLICE:.*]] = tg.slice
// CHECK: %[[D2:.*]] = tg.cross_entropy_grad
// CHECK: %[[DA:.*]] = tg.reshape %[[D2]] : tensor<2x2x4xf32> -> tensor<4x4xf32>
// CHECK: %[[ZERO:.*]] = tg.fill 0.000000e+00 : tensor<4x4xf32>
// CHECK: %[[D1:.*]] = tg.concat %[[DA]], %[[ZERO]] {axis = 1 : i64}
// CHECK-DAG: %[[D0:.*]] = tg.mul %[[D1]], %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[DS_FULL:.*]] = tg.mul %[[D1]], %[[SLICE]]
// CHECK: %[[DS:.*]] = tg.sum_to %[[DS_FULL]] : tensor<4x8xf32> -> tensor<8xf32>
// CHECK: %[[DP:.*]] = tg.slice_grad %[[D0]] {offsets = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<6x8xf32>
// CHECK: return %{{.*}}, %[[DP]], %[[DS]] :

// -----

// A cumsum's cotangent is summed the other way; RoBERTa's integer cumsum
// of its padding mask (position ids) has no gradient.

func.func @prefix(%ids: tensor<2x8xi32> {tg.input = "ids"},
                  %p: tensor<2x8xf32> {tg.param = "p"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.cumsum %ids {axis = 1 : i64} : tensor<2x8xi32>
  %1 = tg.cast %0 : tensor<2x8xi32> -> tensor<2x8xf32>
  %2 = tg.cumsum %p {axis = 1 : i64} : tensor<2x8xf32>
  %3 = tg.mul %2, %1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = tg.reduce_sum %3 {axes = array<i64: 0, 1>} : tensor<2x8xf32> -> tensor<f32>
  return %4 : tensor<f32>
}
// CHECK-LABEL: func.func @prefix_train_step(
// CHECK: %[[POS:.*]] = tg.cast %{{.*}} : tensor<2x8xi32> -> tensor<2x8xf32>
// CHECK: tg.fill 1.000000e+00 {tg.loss_seed}
// CHECK: %[[D2:.*]] = tg.mul %{{.*}}, %[[POS]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[DP:.*]] = tg.cumsum %[[D2]] {axis = 1 : i64, reverse = true} : tensor<2x8xf32>
// CHECK: return %{{.*}}, %[[DP]] :

// -----

// A gather's cotangent goes back where each element was picked from
// (DeBERTa's relative-position scores); its index has none.

func.func @picked(%p: tensor<4x8x16xf32> {tg.param = "p"}) -> tensor<f32> attributes {tg.model} {
  %i = tg.constant dense<3> : tensor<8x8xi64>
  %0 = tg.gather %p, %i {axis = 2 : i64} : (tensor<4x8x16xf32>, tensor<8x8xi64>) -> tensor<4x8x8xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0, 1, 2>} : tensor<4x8x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
// CHECK-LABEL: func.func @picked_train_step(
// CHECK: %[[I:.*]] = tg.constant dense<3> : tensor<8x8xi64>
// CHECK: %[[DP:.*]] = tg.gather_grad %{{.*}}, %[[I]] {axis = 2 : i64} : (tensor<4x8x8xf32>, tensor<8x8xi64>) -> tensor<4x8x16xf32>
// CHECK: return %{{.*}}, %[[DP]] :

// -----

// A mixture of experts: the router's top-k values are a gather (their
// gradient a gather_grad); the choices and the routing have none. The
// experts' weights get theirs from one expert_linear_weight_grad, the
// tokens theirs through expert_linear with the transpose flipped.

func.func @experts(%x: tensor<6x8xf32> {tg.param = "x"},
                   %r: tensor<6x2xf32> {tg.param = "r"},
                   %w0: tensor<16x8xf32> {tg.param = "w0"},
                   %w1: tensor<16x8xf32> {tg.param = "w1"}) -> tensor<f32> attributes {tg.model} {
  %c = tg.top_k %r {k = 1 : i64} : (tensor<6x2xf32>) -> tensor<6x1xi64>
  %v = tg.gather %r, %c {axis = 1 : i64} : (tensor<6x2xf32>, tensor<6x1xi64>) -> tensor<6x1xf32>
  %rows, %pos, %off = tg.moe_route %c : (tensor<6x1xi64>) -> (tensor<6x1xi64>, tensor<6x1xi64>, tensor<3xi64>)
  %xs = tg.gather %x, %rows {axis = 0 : i64} : (tensor<6x8xf32>, tensor<6x1xi64>) -> tensor<6x8xf32>
  %h = tg.expert_linear %xs, %off, %w0, %w1 {transpose_weight = true}
      : (tensor<6x8xf32>, tensor<3xi64>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  %y = tg.gather %h, %pos {axis = 0 : i64} : (tensor<6x16xf32>, tensor<6x1xi64>) -> tensor<6x16xf32>
  %s = tg.mul %y, %v : (tensor<6x16xf32>, tensor<6x1xf32>) -> tensor<6x16xf32>
  %l = tg.reduce_sum %s {axes = array<i64: 0, 1>} : tensor<6x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @experts_train_step(
// CHECK: %rows, %positions, %offsets = tg.moe_route
// CHECK: %[[DY:.*]] = tg.gather_grad %{{.*}}, %positions {axis = 0 : i64}
// CHECK-DAG: %[[DXS:.*]] = tg.expert_linear %[[DY]], %offsets, %arg2, %arg3 : (tensor<6x16xf32>, tensor<3xi64>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
// CHECK-DAG: %[[DW:.*]]:2 = tg.expert_linear_weight_grad %[[DY]], %{{.*}}, %offsets : (tensor<6x16xf32>, tensor<6x8xf32>, tensor<3xi64>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
// CHECK-DAG: %[[DX:.*]] = tg.gather_grad %[[DXS]], %rows {axis = 0 : i64}
// CHECK-DAG: %[[DR:.*]] = tg.gather_grad %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<6x1xf32>, tensor<6x1xi64>) -> tensor<6x2xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DR]], %[[DW]]#0, %[[DW]]#1 :

// -----

// A parameter that does not reach the loss gets no gradient; a loss that
// depends on no trainable parameter has no backward pass.

func.func @unused(%x: tensor<4xf32> {tg.input = "x"},
                  %w: tensor<4xf32> {tg.param = "w", tg.frozen},
                  %u: tensor<4xf32> {tg.param = "u"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
// CHECK-LABEL: func.func @unused_train_step(
// CHECK-SAME: -> (tensor<f32> {tg.loss}) attributes {tg.train_step}
// CHECK-NOT: tg.fill 1.000000e+00 : tensor<f32>
// CHECK: return %{{.*}} : tensor<f32>

// -----

// A weight used in low precision by two matmuls (one working copy): each
// use's cotangent is widened on its own and the two are summed in f32.
func.func @mixed(%x: tensor<2x4xbf16> {tg.input = "x"},
                 %w: tensor<4x4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %wl = tg.cast %w : tensor<4x4xf32> -> tensor<4x4xbf16>
  %0 = tg.matmul %x, %wl : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %1 = tg.matmul %0, %wl : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %2 = tg.cast %1 : tensor<2x4xbf16> -> tensor<2x4xf32>
  %3 = tg.reduce_sum %2 {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
// CHECK-LABEL: func.func @mixed_train_step(
// CHECK: %[[D2:.*]] = tg.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<4x4xbf16>
// CHECK: %[[W2:.*]] = tg.cast %[[D2]] : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK: %[[D1:.*]] = tg.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<4x4xbf16>
// CHECK: %[[W1:.*]] = tg.cast %[[D1]] : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK: %[[DW:.*]] = tg.add %[[W2]], %[[W1]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[DW]] :

// -----

// Attention with a key padding mask: the gradient op reads the same mask,
// and the mask (an input of integers) gets no gradient.
func.func @masked(%m: tensor<2x8xi64> {tg.input = "attention_mask"},
                  %q: tensor<2x4x8x16xf32> {tg.param = "q"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.attention %q, %q, %q mask %m
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xi64>) -> tensor<2x4x8x16xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0, 1, 2, 3>} : tensor<2x4x8x16xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
// CHECK-LABEL: func.func @masked_train_step(
// CHECK-SAME: %[[M:[^:]*]]: tensor<2x8xi64> {tg.input = "attention_mask"}
// CHECK: %[[O:.*]] = tg.attention %[[Q:[^,]*]], %[[Q]], %[[Q]] mask %[[M]] :
// CHECK: tg.attention_grad %[[Q]], %[[Q]], %[[Q]], %[[O]], %{{.*}} mask %[[M]] : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xi64>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
