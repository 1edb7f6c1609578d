// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload -o - | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd momentum=0.9" --tg-offload -o - | FileCheck %s --check-prefix=SGD
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload=what=none -o - | FileCheck %s --check-prefix=NONE
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-offload --tg-plan-memory="memory-report=%t.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: %python -c "import json,sys; r=json.load(open(sys.argv[1])); h=[t for t in r['persistent'] if t.get('host')]; d=[t for t in r['persistent'] if not t.get('host')]; assert min(t['offset'] for t in h) >= max(t['offset'] + t['bytes'] for t in d); print('host part', r['host_bytes'], 'of', r['persistent_bytes'], 'optimizer_state at peak', r['peak']['breakdown']['optimizer_state'])" %t.json | FileCheck %s --check-prefix=JSON
// RUN: not tgc-opt %s --tg-offload -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: not tgc-opt %S/Inputs/offload-invalid.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY

func.func @net(%x: tensor<8x16xf32> {tg.input = "inputs"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w: tensor<16x4xf32> {tg.param = "proj.weight"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tg.cross_entropy %0, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}

// AdamW's moments move to host memory; the step count and the learning
// rate, scalars every update reads, stay on the device.
// CHECK-LABEL: func.func @net_train_step
// CHECK-SAME: {tg.host, tg.state = "proj.weight.exp_avg"}
// CHECK-SAME: {tg.host, tg.state = "proj.weight.exp_avg_sq"}
// CHECK-NOT: tg.host
// CHECK: tg.adamw_update
// SUMMARY: tg-offload: 2 optimizer state tensors (512 B) in host memory; 2 state tensors stay on the device

// SGD's momentum buffer too.
// SGD: {tg.host, tg.state = "proj.weight.momentum_buffer"}

// NONE-NOT: tg.host

// The plan puts the host tensors after the device ones and counts them
// apart: the device holds the parameter, step and learning rate only.
// PLAN: persistent: {{.*}} (device {{.*}}, host memory 512 B)
// PLAN: total: {{.*}} (device {{.*}}, host memory 512 B)
// PLAN: (and in host memory, not counted: 512 B of optimizer state)

// NOSTEP: tg-offload found no function marked tg.train_step

// JSON: host part 512 of 2048 optimizer_state at peak 12

// A parameter cannot live in host memory (Inputs/offload-invalid.mlir).
// VERIFY: 'tg.host' is only valid on optimizer state ('tg.state', not an accumulator)
