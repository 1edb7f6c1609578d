// RUN: tgc-opt %s --tg-freeze="freeze=layers.0.*" | FileCheck %s --check-prefix=FREEZE
// RUN: tgc-opt %s --tg-freeze="train-only=layers.2.* print=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-freeze="train-only=layers.2.*" | FileCheck %s --check-prefix=TRAIN-ONLY
// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight,layers.1.bias" | FileCheck %s --check-prefix=CLASS
// RUN: tgc-opt %s --tg-freeze="freeze=layers.0.*" --tg-autodiff --tg-optimizer | FileCheck %s --check-prefix=STEP
// RUN: tgc-opt %s --tg-freeze="freeze=layers.0.* frozen-dtype=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tgc-opt %s --tgc-train-pipeline="freeze=layers.0.* frozen-dtype=bf16 amp=bf16" | FileCheck %s --check-prefix=BF16-AMP
// RUN: tgc-opt %s --tgc-train-pipeline="train-only=layers.2.*" --tg-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A 3-layer MLP with Hugging Face-style parameter names.
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

// FREEZE-LABEL: func.func @mlp
// FREEZE-SAME: %arg2: tensor<32x16xf32> {tg.frozen, tg.param = "layers.0.weight"}
// FREEZE-SAME: %arg3: tensor<32xf32> {tg.frozen, tg.param = "layers.0.bias"}
// FREEZE-SAME: %arg4: tensor<32x32xf32> {tg.param = "layers.1.weight"}

// SUMMARY: tg-freeze: @mlp: 4 of 6 parameters frozen (1600 of 1732 elements)

// TRAIN-ONLY-LABEL: func.func @mlp
// TRAIN-ONLY-SAME: {tg.frozen, tg.param = "layers.0.weight"}
// TRAIN-ONLY-SAME: {tg.frozen, tg.param = "layers.0.bias"}
// TRAIN-ONLY-SAME: {tg.frozen, tg.param = "layers.1.weight"}
// TRAIN-ONLY-SAME: {tg.frozen, tg.param = "layers.1.bias"}
// TRAIN-ONLY-SAME: %arg6: tensor<4x32xf32> {tg.param = "layers.2.weight"}
// TRAIN-ONLY-SAME: %arg7: tensor<4xf32> {tg.param = "layers.2.bias"}

// Character classes and lists.
// CLASS-LABEL: func.func @mlp
// CLASS-SAME: {tg.frozen, tg.param = "layers.0.weight"}
// CLASS-SAME: %arg3: tensor<32xf32> {tg.param = "layers.0.bias"}
// CLASS-SAME: {tg.frozen, tg.param = "layers.1.weight"}
// CLASS-SAME: {tg.frozen, tg.param = "layers.1.bias"}
// CLASS-SAME: %arg6: tensor<4x32xf32> {tg.param = "layers.2.weight"}

// Frozen layer 0: no gradient, state or update for it, and the backward
// pass stops at layer 1 (no gradient of layer 1's input, so no relu_grad
// of layer 0 and no matmul with w1 to reach it).
// STEP-LABEL: func.func @mlp_train_step
// STEP-NOT: layers.0.weight.exp_avg
// STEP-NOT: layers.0.bias.exp_avg
// STEP: tg.loss_seed
// STEP-COUNT-1: tg.relu_grad
// STEP-NOT: tg.relu_grad
// STEP-NOT: tg.matmul %{{[0-9]+}}, %arg4 :
// STEP-COUNT-4: tg.adamw_update
// STEP-NOT: tg.adamw_update
// STEP: return

// frozen-dtype=bf16: the frozen weights are stored in bf16 and widened
// once where the model reads them; under amp=bf16 the matmul reads the
// stored bf16 weight directly (the cast round trip folds away).
// BF16-LABEL: func.func @mlp
// BF16-SAME: %arg2: tensor<32x16xbf16> {tg.frozen, tg.param = "layers.0.weight"}
// BF16-SAME: %arg3: tensor<32xbf16> {tg.frozen, tg.param = "layers.0.bias"}
// BF16-SAME: %arg4: tensor<32x32xf32> {tg.param = "layers.1.weight"}
// BF16: %[[W0:.*]] = tg.cast %arg2 : tensor<32x16xbf16> -> tensor<32x16xf32>
// BF16: tg.matmul %arg0, %[[W0]]
// BF16-AMP-LABEL: func.func @mlp_train_step
// BF16-AMP-SAME: %arg2: tensor<32x16xbf16> {tg.frozen
// BF16-AMP-NOT: tg.cast %arg2
// BF16-AMP: tg.matmul %{{.*}}, %arg2 {transpose_rhs = true} : (tensor<64x16xbf16>, tensor<32x16xbf16>)

// The memory report shows the frozen parameters apart.
// REPORT: persistent:
// REPORT-NEXT: params 528 B
// REPORT-NEXT: frozen_params 6.25 KiB
// REPORT-NEXT: optimizer_state
