// RUN: tgc-opt %s --tg-lora="rank=2 alpha=8 targets=layers.0,layers.2" | FileCheck %s
// RUN: tgc-opt %s --tg-lora="rank=2 targets=layers.2 train-only=layers.1.*" | FileCheck %s --check-prefix=TRAIN
// RUN: tgc-opt %s --tgc-train-pipeline="lora-targets=layers.0 lora-rank=2" | FileCheck %s --check-prefix=STEP

// An MLP in nn.Linear's layout (weights [out, in], transpose_rhs).
func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "layers.0.weight"}, %b0: tensor<32xf32> {tg.param = "layers.0.bias"},
               %w1: tensor<32x32xf32> {tg.param = "layers.1.weight"}, %b1: tensor<32xf32> {tg.param = "layers.1.bias"},
               %w2: tensor<4x32xf32> {tg.param = "layers.2.weight"}, %b2: tensor<4xf32> {tg.param = "layers.2.bias"})
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

// The base parameters are frozen; A is [rank, in] with PEFT's
// Kaiming-uniform bound 1/sqrt(in), B is [out, rank] of zeros and names
// the weight it adapts, the scale alpha/rank and the weight's layout.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: {tg.frozen, tg.param = "layers.0.weight"}
// CHECK-SAME: {tg.frozen, tg.param = "layers.2.bias"}
// CHECK-SAME: %[[A0:.*]]: tensor<2x16xf32> {tg.init = #tg.init<uniform(-2.500000e-01, 2.500000e-01)>, tg.param = "layers.0.lora_A.weight"}
// CHECK-SAME: %[[B0:.*]]: tensor<32x2xf32> {tg.init = #tg.init<zeros>, tg.lora = {base = "layers.0.weight", fan_in_fan_out = false, scale = 4.000000e+00 : f64}, tg.param = "layers.0.lora_B.weight"}
// CHECK-SAME: tensor<2x32xf32> {{.*}}tg.param = "layers.2.lora_A.weight"}
// CHECK-SAME: tensor<4x2xf32> {tg.init = #tg.init<zeros>, tg.lora = {{.*}}, tg.param = "layers.2.lora_B.weight"}
// y = x W^T + (alpha / rank) (x A^T) B^T, before the bias.
// CHECK: %[[BASE:.*]] = tg.matmul %arg0, %arg2 {transpose_rhs = true}
// CHECK-NEXT: %[[LOW:.*]] = tg.matmul %arg0, %[[A0]] {transpose_rhs = true} : (tensor<64x16xf32>, tensor<2x16xf32>) -> tensor<64x2xf32>
// CHECK-NEXT: %[[UP:.*]] = tg.matmul %[[LOW]], %[[B0]] {transpose_rhs = true} : (tensor<64x2xf32>, tensor<32x2xf32>) -> tensor<64x32xf32>
// CHECK-NEXT: %[[S:.*]] = tg.fill 4.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[SCALED:.*]] = tg.mul %[[UP]], %[[S]]
// CHECK-NEXT: %[[SUM:.*]] = tg.add %[[BASE]], %[[SCALED]]
// CHECK-NEXT: tg.add %[[SUM]], %arg3
// Layer 1 is not a target.
// CHECK: tg.matmul %{{.*}}, %arg4 {transpose_rhs = true}
// CHECK-NEXT: tg.add

// train-only keeps base parameters trainable beside the adapters.
// TRAIN-LABEL: func.func @mlp
// TRAIN-SAME: {tg.frozen, tg.param = "layers.0.bias"}
// TRAIN-SAME: %arg4: tensor<32x32xf32> {tg.param = "layers.1.weight"}
// TRAIN-SAME: %arg5: tensor<32xf32> {tg.param = "layers.1.bias"}
// TRAIN-SAME: {tg.frozen, tg.param = "layers.2.weight"}

// The step trains only the adapters: two AdamW updates.
// STEP-LABEL: func.func @mlp_train_step
// STEP-NOT: layers.0.weight.exp_avg
// STEP: tg.state = "layers.0.lora_A.weight.exp_avg"
// STEP-COUNT-2: tg.adamw_update
// STEP-NOT: tg.adamw_update
