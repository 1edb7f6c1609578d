// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-accumulate-products -o - | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-accumulate-products=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-accumulate-products --tg-plan-memory="memory-report=%t.json" -o /dev/null
// RUN: %python -c "import json,sys; r=json.load(open(sys.argv[1])); g=[b['values'] for b in r['buffers'] if b['bytes'] == 16 * 4 * 4]; print('gradient buffers', len(g), 'holding', g)" %t.json | FileCheck %s --check-prefix=PLAN
// RUN: not tgc-opt %s --tg-accumulate-products -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTEP

// One weight used three times (as a classifier chunked by rows is): its
// gradient is the sum of three products, xi^T @ dyi. The first product
// starts the sum and the other two are added onto it by the GEMM.
func.func @net(%x1: tensor<8x16xf32> {tg.input = "a"}, %x2: tensor<8x16xf32> {tg.input = "b"},
               %x3: tensor<8x16xf32> {tg.input = "c"}, %y: tensor<8xi64> {tg.input = "targets"},
               %w: tensor<16x4xf32> {tg.param = "proj.weight"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x1, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tg.matmul %x2, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %2 = tg.matmul %x3, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %3 = tg.add %0, %1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %4 = tg.mul %3, %2 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %5 = tg.cross_entropy %4, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// CHECK-LABEL: func.func @net_train_step
// The forward's sum of two products is one too: the second product is
// added onto the first.
// CHECK: %[[X1:.*]] = tg.matmul %arg0, %arg4 :
// CHECK-NEXT: tg.matmul_add %arg1, %arg4, %[[X1]] : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[FIRST:.*]] = tg.matmul {{.*}} {transpose_lhs = true} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
// CHECK-NOT: tg.add {{.*}} -> tensor<16x4xf32>
// CHECK: %[[SECOND:.*]] = tg.matmul_add {{.*}}, {{.*}}, %[[FIRST]] {transpose_lhs = true} : (tensor<8x16xf32>, tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
// CHECK-NOT: tg.add {{.*}} -> tensor<16x4xf32>
// CHECK: %[[GRAD:.*]] = tg.matmul_add {{.*}}, {{.*}}, %[[SECOND]] {transpose_lhs = true}
// CHECK-NOT: tg.add {{.*}} -> tensor<16x4xf32>
// CHECK: tg.adamw_update %{{.*}}, %[[GRAD]]

// SUMMARY: tg-accumulate-products: 3 products added onto their accumulators by the GEMM (640 B of products no longer stored)

// The plan writes each sum over its accumulator: the weight gradient's
// three values (the first product and two sums) share one buffer.
// PLAN: gradient buffers 1 holding [3]

// NOSTEP: tg-accumulate-products found no function marked tg.train_step
