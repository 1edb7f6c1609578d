// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload-activations="min-bytes=1024 min-idle-ops=4" -o - | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload-activations="min-bytes=1024 min-idle-ops=4 print=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload-activations -o - | FileCheck %s --check-prefix=SMALL
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload-activations="min-bytes=1024 min-idle-ops=4" --tg-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload-activations="min-bytes=1024 min-idle-ops=4" --tg-estimate="device=h100" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EST
// RUN: not tgc-opt %s --tg-offload-activations -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTEP

// Three layers: the first layer's output h1 (8x64 f32, 2 KiB) waits from
// the forward pass's second layer to the first layer's gradient, and so
// does the input to the third layer; the last layer's output is read right
// after the loss, too soon to be worth the trip.
func.func @net(%x: tensor<8x64xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w1: tensor<64x64xf32> {tg.param = "l1.weight"},
               %w2: tensor<64x64xf32> {tg.param = "l2.weight"},
               %w3: tensor<64x8xf32> {tg.param = "l3.weight"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %1 = tg.tanh %0 : tensor<8x64xf32>
  %2 = tg.matmul %1, %w2 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %3 = tg.tanh %2 : tensor<8x64xf32>
  %4 = tg.matmul %3, %w3 : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %5 = tg.cross_entropy %4, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// CHECK-LABEL: func.func @net_train_step
// CHECK-SAME: %[[H0:[^:]*]]: tensor<8x64xf32> {tg.host, tg.state = "offload.net_train_step.0"}
// CHECK-SAME: %[[H1:[^:]*]]: tensor<8x64xf32> {tg.host, tg.state = "offload.net_train_step.1"}
// CHECK-SAME: {tg.update = "offload.net_train_step.0"}
// CHECK-SAME: {tg.update = "offload.net_train_step.1"}
// CHECK: %[[T1:.*]] = tg.tanh
// CHECK-NEXT: %[[S1:.*]] = tg.offload %[[T1]], %[[H0]]
// CHECK: %[[T2:.*]] = tg.tanh
// CHECK-NEXT: %[[S2:.*]] = tg.offload %[[T2]], %[[H1]]
// CHECK: tg.loss_seed
// The backward pass reads the copies back, each just before its first read.
// CHECK: %[[R2:.*]] = tg.reload %[[S2]]
// CHECK-NEXT: tg.matmul %[[R2]], {{.*}} {transpose_lhs = true}
// CHECK: tg.tanh_grad %[[R2]]
// CHECK: %[[R1:.*]] = tg.reload %[[S1]]
// CHECK-NEXT: tg.matmul %[[R1]], {{.*}} {transpose_lhs = true}
// CHECK: tg.tanh_grad %[[R1]]
// CHECK: return {{.*}}, %[[S1]], %[[S2]]

// SUMMARY: tg-offload-activations: 2 activations (4.00 KiB) wait for the backward pass in host memory

// Below the default 1 MiB nothing moves.
// SMALL-NOT: tg.offload

// PLAN: persistent: {{.*}} (device {{.*}}, host memory 4.00 KiB)
// PLAN: host_activations 4.00 KiB
// PLAN: (and in host memory, not counted: 4.00 KiB of offloaded activations)

// The estimate counts the copies (each at the host link's bandwidth).
// EST: net_train_step
// EST-DAG: tg.offload 2 0
// EST-DAG: tg.reload 2 0

// NOSTEP: tg-offload-activations found no function marked tg.train_step
