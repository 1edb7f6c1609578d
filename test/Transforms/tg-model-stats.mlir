// RUN: tgc-opt %s --tg-model-stats -o /dev/null 2>&1 | FileCheck %s
// RUN: tgc-opt %s --tg-model-stats=per-op=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=COST
// RUN: tgc-opt %s --tg-model-stats | FileCheck %s --check-prefix=IR

// The pass reports parameters (trainable and frozen), inputs, op counts and
// the cost of one execution; per-op prints each op's FLOPs and bytes, whose
// expected values below are worked out by hand from the conventions of
// CostOpInterface (a multiply-add is 2 FLOPs, data movement 0).

// CHECK-LABEL: model @tiny
// CHECK-NEXT: parameters: 60 in 3 tensors (240 B)
// CHECK-NEXT: trainable: 55, frozen: 5
// CHECK-NEXT: inputs: 2 (96 B per step)
// CHECK-NEXT: ops: 7
// CHECK-NEXT: func.return 1
// CHECK-NEXT: tg.add 1
// CHECK-NEXT: tg.cross_entropy 1
// CHECK-NEXT: tg.embedding 1
// CHECK-NEXT: tg.layer_norm 1
// CHECK-NEXT: tg.matmul 1
// CHECK-NEXT: tg.slice 1
// 30 + 210 + 240 + 108 FLOPs; bytes are the sums of the per-op figures.
// CHECK-NEXT: cost of one execution: 588 FLOPs, 892 bytes read, 540 bytes written
// CHECK-NOT: model @helper

// COST-LABEL: op costs of @tiny
// Embedding reads the 6 i64 indices and 6 rows of 5 f32: 48 + 120 bytes.
// COST-NEXT: #0 tg.embedding flops=0 read=168 written=120
// COST-NEXT: #1 tg.add flops=30 read=140 written=120
// COST-NEXT: #2 tg.layer_norm flops=210 read=160 written=120
// A slice reads only its box: 4 x 5 f32.
// COST-NEXT: #3 tg.slice flops=0 read=80 written=80
// [2,3,5] x [4,5]^T: 24 outputs, K = 5, 2 * 24 * 5 FLOPs.
// COST-NEXT: #4 tg.matmul flops=240 read=200 written=96
// 4 FLOPs per logit (24) and 2 per row (6); reads 96 + 48 bytes.
// COST-NEXT: #5 tg.cross_entropy flops=108 read=144 written=4

// IR: func.func @tiny
// IR: tg.matmul

func.func @tiny(%tokens: tensor<2x3xi64> {tg.input = "tokens"},
                %targets: tensor<2x3xi64> {tg.input = "targets"},
                %wte: tensor<10x5xf32> {tg.param = "wte"},
                %bias: tensor<5xf32> {tg.param = "bias", tg.frozen},
                %ln: tensor<5xf32> {tg.param = "ln"}) -> tensor<f32>
    attributes {tg.model} {
  %x = tg.embedding %wte, %tokens : (tensor<10x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
  %y = tg.add %x, %bias : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %z = tg.layer_norm %y, %ln, %bias : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %w = tg.slice %wte {offsets = array<i64: 0, 0>} : tensor<10x5xf32> -> tensor<4x5xf32>
  %logits = tg.matmul %z, %w {transpose_rhs = true} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
  %loss = tg.cross_entropy %logits, %targets : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// A function without tg.model is not reported.
func.func @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
