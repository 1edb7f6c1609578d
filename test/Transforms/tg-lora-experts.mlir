// RUN: tgc-opt %s --tg-lora="rank=2 alpha=8 targets=w1" | FileCheck %s
// RUN: not tgc-opt %s --tg-lora="rank=2 targets=experts.0.w1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PART
// RUN: not tgc-opt %s --tg-lora="rank=9 targets=w1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOBIG

// LoRA on a mixture of experts' grouped product (Mixtral's w1): an adapter
// per expert under PEFT's names, as PEFT wraps each expert's nn.Linear,
// applied as two more grouped products over the same routing (A's, rank 2,
// then B's), scaled by alpha / r = 4 and added; the experts' own weights
// are frozen. A target that matches some experts of a product and not
// others is refused.

func.func @moe(%x: tensor<6x8xf32> {tg.input = "x"},
               %c: tensor<6x1xi64> {tg.input = "choices"},
               %w0: tensor<16x8xf32> {tg.param = "layers.0.experts.0.w1.weight"},
               %w1: tensor<16x8xf32> {tg.param = "layers.0.experts.1.w1.weight"}) -> tensor<f32> attributes {tg.model} {
  %rows, %positions, %offsets = tg.moe_route %c : (tensor<6x1xi64>) -> (tensor<6x1xi64>, tensor<6x1xi64>, tensor<3xi64>)
  %xs = tg.gather %x, %rows {axis = 0 : i64} : (tensor<6x8xf32>, tensor<6x1xi64>) -> tensor<6x8xf32>
  %h = tg.expert_linear %xs, %offsets, %w0, %w1 {transpose_weight = true}
      : (tensor<6x8xf32>, tensor<3xi64>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  %l = tg.reduce_sum %h {axes = array<i64: 0, 1>} : tensor<6x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @moe(
// CHECK-SAME: %[[W0:[^:]*]]: tensor<16x8xf32> {tg.frozen, tg.param = "layers.0.experts.0.w1.weight"}
// CHECK-SAME: %[[W1:[^:]*]]: tensor<16x8xf32> {tg.frozen, tg.param = "layers.0.experts.1.w1.weight"}
// CHECK-SAME: %[[A0:[^:]*]]: tensor<2x8xf32> {tg.init = #tg.init<uniform({{.*}})>, tg.param = "layers.0.experts.0.w1.lora_A.weight"}
// CHECK-SAME: %[[B0:[^:]*]]: tensor<16x2xf32> {tg.init = #tg.init<zeros>, tg.lora = {base = "layers.0.experts.0.w1.weight", fan_in_fan_out = false, scale = 4.000000e+00 : f64}, tg.param = "layers.0.experts.0.w1.lora_B.weight"}
// CHECK-SAME: %[[A1:[^:]*]]: tensor<2x8xf32> {{.*}}tg.param = "layers.0.experts.1.w1.lora_A.weight"}
// CHECK-SAME: %[[B1:[^:]*]]: tensor<16x2xf32> {{.*}}tg.param = "layers.0.experts.1.w1.lora_B.weight"}
// CHECK: %[[H:.*]] = tg.expert_linear %[[XS:.*]], %offsets, %[[W0]], %[[W1]] {transpose_weight = true}
// CHECK-NEXT: %[[LOW:.*]] = tg.expert_linear %[[XS]], %offsets, %[[A0]], %[[A1]] {transpose_weight = true} : {{.*}} -> tensor<6x2xf32>
// CHECK-NEXT: %[[UP:.*]] = tg.expert_linear %[[LOW]], %offsets, %[[B0]], %[[B1]] {transpose_weight = true} : {{.*}} -> tensor<6x16xf32>
// CHECK-NEXT: %[[S:.*]] = tg.fill 4.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[SCALED:.*]] = tg.mul %[[UP]], %[[S]]
// CHECK-NEXT: %[[SUM:.*]] = tg.add %[[H]], %[[SCALED]]
// CHECK-NEXT: tg.reduce_sum %[[SUM]]

// PART: error: 'tg.expert_linear' op tg-lora: the targets match 1 of the 2 expert weights of this grouped product; LoRA adapts all of its experts or none
// TOOBIG: error: 'tg.expert_linear' op tg-lora: rank 9 is above the size of the experts' weights (16 x 8)
