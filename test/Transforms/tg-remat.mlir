// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=none -o - 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=blocks -o - 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=selective -o - 2>&1 | FileCheck %s --check-prefix=SELECTIVE
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=budget=60000 -o - 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=budget=70000 -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOOSE
// Recomputation survives CSE and canonicalization, and the memory report
// shows it.
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-remat=policy=blocks --cse --canonicalize --tg-plan-memory=memory-report=%t.json -o - 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON

// A 3-layer MLP (batch 64) whose ops carry the name scopes of their layers.
// Without remat the step peaks at 43008 transient bytes (plus 27392
// persistent: 68.5 KiB), at the start of the backward pass.
func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "layers.0.weight"}, %b0: tensor<32xf32> {tg.param = "layers.0.bias"},
               %w1: tensor<32x32xf32> {tg.param = "layers.1.weight"}, %b1: tensor<32xf32> {tg.param = "layers.1.bias"},
               %w2: tensor<4x32xf32> {tg.param = "layers.2.weight"}, %b2: tensor<4xf32> {tg.param = "layers.2.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32> loc("layers.0")
  %1 = tg.add %0, %b0 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.0")
  %2 = tg.relu %1 : tensor<64x32xf32> loc("layers.0")
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %4 = tg.add %3, %b1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32> loc("layers.1")
  %5 = tg.relu %4 : tensor<64x32xf32> loc("layers.1")
  %6 = tg.matmul %5, %w2 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<64x4xf32> loc("layers.2")
  %7 = tg.add %6, %b2 : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32> loc("layers.2")
  %8 = tg.cross_entropy %7, %y : (tensor<64x4xf32>, tensor<64xi64>) -> tensor<f32> loc("loss")
  return %8 : tensor<f32>
}

// NONE-NOT: tg-remat:
// NONE-LABEL: func.func @mlp_train_step
// NONE-NOT: tg.remat

// blocks: each layer's output (the relu) is kept; the pre-activation the
// relu's gradient reads is recomputed from the kept input of its layer,
// just before that gradient.
// BLOCKS: tg-remat: @mlp_train_step policy blocks: 4 ops recomputed, added FLOPs 200704 (32.51% of 617273), peak live 43008 -> 29952 bytes (persistent 27392)
// BLOCKS-LABEL: func.func @mlp_train_step
// BLOCKS: %[[H0:.*]] = tg.relu %[[P0:[0-9]+]]
// BLOCKS: %[[H1:.*]] = tg.relu %[[P1:[0-9]+]]
// BLOCKS: tg.cross_entropy_grad
// BLOCKS: %[[M1:.*]] = tg.matmul %[[H0]], %arg4 {tg.remat, transpose_rhs = true}
// BLOCKS-NEXT: %[[A1:.*]] = tg.add %[[M1]], %arg5 {tg.remat}
// BLOCKS-NEXT: tg.relu_grad %[[A1]],
// BLOCKS: %[[M0:.*]] = tg.matmul %arg0, %arg2 {tg.remat, transpose_rhs = true}
// BLOCKS-NEXT: %[[A0:.*]] = tg.add %[[M0]], %arg3 {tg.remat}
// BLOCKS-NEXT: tg.relu_grad %[[A0]],

// selective: cheap ops are recomputed from operands that stay anyway, at
// most two deep: the first relu from its input (which relu_grad reads), the
// logits from the kept second relu (the last matmul is cheap at this size).
// SELECTIVE: tg-remat: @mlp_train_step policy selective: 3 ops recomputed, added FLOPs 18688
// SELECTIVE-LABEL: func.func @mlp_train_step
// SELECTIVE: %[[PRE0:.*]] = tg.add %{{.*}}, %arg3 :
// SELECTIVE: tg.relu %[[PRE0]] :
// SELECTIVE: %[[H1:.*]] = tg.relu
// SELECTIVE: %[[OUT:.*]] = tg.matmul %[[H1]], %arg6 {tg.remat, transpose_rhs = true}
// SELECTIVE-NEXT: %[[LOGITS:.*]] = tg.add %[[OUT]], %arg7 {tg.remat}
// SELECTIVE-NEXT: tg.cross_entropy_grad %[[LOGITS]]
// SELECTIVE: tg.relu %[[PRE0]] {tg.remat}
// SELECTIVE-NOT: tg.matmul {{.*}}%arg4 {tg.remat

// budget: 60000 bytes is met at the 29952-byte peak of blocks by one cheap
// recomputation: the input gradients (the matmuls with the weights) are
// sunk to just after the weight gradients, so they are not live while the
// weight gradients read the activations.
// BUDGET: tg-remat: @mlp_train_step policy budget=60000: 1 ops recomputed, added FLOPs 2048 {{.*}} peak live 43008 -> 29952 bytes
// BUDGET-LABEL: func.func @mlp_train_step
// BUDGET: tg.cross_entropy_grad
// BUDGET: tg.matmul %{{.*}}, %5 {transpose_lhs = true}
// BUDGET-NEXT: %[[DH1:.*]] = tg.matmul %{{.*}}, %arg6 :
// BUDGET-NEXT: tg.relu_grad %4, %[[DH1]]
// BUDGET: %[[H0:.*]] = tg.relu %1 {tg.remat}
// BUDGET-NEXT: tg.matmul %{{.*}}, %[[H0]] {transpose_lhs = true}
// BUDGET-NEXT: %[[DH0:.*]] = tg.matmul %{{.*}}, %arg4 :
// BUDGET-NEXT: tg.relu_grad %1, %[[DH0]]
// BUDGET-NOT: tg.remat

// A looser budget is met by sinking alone.
// LOOSE: tg-remat: @mlp_train_step policy budget=70000: 0 ops recomputed, added FLOPs 0 {{.*}} peak live 43008 -> 38144 bytes

// REPORT: peak of live transient bytes: 29.25 KiB (29952 bytes)
// REPORT: recomputed: 4 ops, 200,704 FLOPs (32.5% of the step without them)
// REPORT-COUNT-4: {tg.remat
// JSON: "remat": {
// JSON-NEXT: "recomputed_ops": 4,
// JSON-NEXT: "recomputed_flops": 200704,
// JSON: "op": "tg.matmul (layers.1)",
