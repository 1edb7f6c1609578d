// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=4 | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=4 --tg-optimizer="clip-grad-norm=1.0" --tg-loss-scale | FileCheck %s --check-prefix=SCALED
// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=4 --tg-optimizer --tg-loss-scale="mode=static:8" | FileCheck %s --check-prefix=STATIC
// RUN: tgc-opt %s --tg-autodiff --tg-grad-accum=steps=2 --tg-optimizer --tg-plan-memory 2>&1 | FileCheck %s --check-prefix=PLAN

func.func @net(%x: tensor<4x3xf16> {tg.input = "x"},
               %t: tensor<4xi64> {tg.input = "t"},
               %w: tensor<3x5xf32> {tg.param = "w"},
               %b: tensor<5xf32> {tg.param = "b"},
               %v: tensor<3x5xf32> {tg.param = "v", tg.frozen}) -> tensor<f32> attributes {tg.model} {
  %wl = tg.cast %w : tensor<3x5xf32> -> tensor<3x5xf16>
  %0 = tg.matmul %x, %wl : (tensor<4x3xf16>, tensor<3x5xf16>) -> tensor<4x5xf16>
  %1 = tg.cast %0 : tensor<4x5xf16> -> tensor<4x5xf32>
  %2 = tg.add %1, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %3 = tg.cross_entropy %2, %t {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}

// The training step applies the update: it reads the sums, not a batch.
// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x5xf32> {tg.param = "w"}
// CHECK-SAME: %[[SUM:[^:]*]]: tensor<f32> {tg.state = "grad_accum.loss_sum"}
// CHECK-SAME: %[[COUNT:[^:]*]]: tensor<f32> {tg.state = "grad_accum.target_count"}
// CHECK-SAME: %[[GW:[^:]*]]: tensor<3x5xf32> {tg.state = "grad_accum.w"}
// CHECK-SAME: %[[GB:[^:]*]]: tensor<5xf32> {tg.state = "grad_accum.b"}
// CHECK-SAME: (tensor<f32> {tg.loss}, tensor<3x5xf32> {tg.grad = "w"}, tensor<5xf32> {tg.grad = "b"}, tensor<f32> {tg.update = "grad_accum.loss_sum"}, tensor<f32> {tg.update = "grad_accum.target_count"}, tensor<3x5xf32> {tg.update = "grad_accum.w"}, tensor<5xf32> {tg.update = "grad_accum.b"})
// CHECK-SAME: tg.grad_accum = {grad_step = @net_grad_step, steps = 4 : i64}
// CHECK-NEXT: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[N:.*]] = tg.maximum %[[COUNT]], %[[ONE]]
// CHECK-NEXT: %[[LOSS:.*]] = tg.div %[[SUM]], %[[N]]
// CHECK-NEXT: %[[DW:.*]] = tg.div %[[GW]], %[[N]] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[DB:.*]] = tg.div %[[GB]], %[[N]]
// CHECK-COUNT-4: tg.fill 0.000000e+00
// CHECK-NEXT: return %[[LOSS]], %[[DW]], %[[DB]],

// The micro-step: forward and backward on one micro-batch, the seed
// weighted by its counted targets, each gradient added into its f32 sum
// where it is complete.
// CHECK-LABEL: func.func @net_grad_step(
// CHECK-SAME: %[[T:[^:]*]]: tensor<4xi64> {tg.input = "t"}
// CHECK-SAME: %[[SUM:[^:]*]]: tensor<f32> {tg.state = "grad_accum.loss_sum"}
// CHECK-SAME: %[[COUNT:[^:]*]]: tensor<f32> {tg.state = "grad_accum.target_count"}
// CHECK-SAME: %[[GW:[^:]*]]: tensor<3x5xf32> {tg.state = "grad_accum.w"}
// CHECK-SAME: %[[GB:[^:]*]]: tensor<5xf32> {tg.state = "grad_accum.b"}
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<f32> {tg.update = "grad_accum.loss_sum"}, tensor<f32> {tg.update = "grad_accum.target_count"}, tensor<3x5xf32> {tg.update = "grad_accum.w"}, tensor<5xf32> {tg.update = "grad_accum.b"})
// CHECK-SAME: attributes {tg.grad_step}
// CHECK: %[[LOSS:.*]] = tg.cross_entropy %{{.*}}, %[[T]] {ignore_index = -1 : i64}
// CHECK-NEXT: %[[N:.*]] = tg.target_count %[[T]] {ignore_index = -1 : i64} : (tensor<4xi64>) -> tensor<f32>
// CHECK-DAG: %[[WEIGHTED:.*]] = tg.mul %[[LOSS]], %[[N]]
// CHECK-DAG: %[[NEWSUM:.*]] = tg.add %[[SUM]], %[[WEIGHTED]]
// CHECK-DAG: %[[NEWCOUNT:.*]] = tg.add %[[COUNT]], %[[N]]
// CHECK: %[[SEED:.*]] = tg.fill 1.000000e+00 {tg.loss_seed} : tensor<f32>
// CHECK-NEXT: %[[SEEDN:.*]] = tg.mul %[[SEED]], %[[N]]
// CHECK-NEXT: %[[DLOGITS:.*]] = tg.cross_entropy_grad %{{.*}}, %[[T]], %[[SEEDN]]
// CHECK: %[[DB:.*]] = tg.sum_to %[[DLOGITS]]
// CHECK-NEXT: %[[NEWB:.*]] = tg.add %[[GB]], %[[DB]]
// CHECK: %[[DW16:.*]] = tg.matmul {{.*}} -> tensor<3x5xf16>
// CHECK-NEXT: %[[DW:.*]] = tg.cast %[[DW16]] : tensor<3x5xf16> -> tensor<3x5xf32>
// CHECK-NEXT: %[[NEWW:.*]] = tg.add %[[GW]], %[[DW]]
// CHECK-NEXT: return %[[LOSS]], %[[NEWSUM]], %[[NEWCOUNT]], %[[NEWW]], %[[NEWB]]

// Loss scaling: the micro-step scales its seed by the scale it reads; the
// training step unscales the accumulated gradients, clips them and checks
// them once.
// SCALED-LABEL: func.func @net_train_step(
// SCALED-SAME: %[[S:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(6.553600e+04)>, tg.state = "amp.loss_scale"}
// SCALED: %[[DW:.*]] = tg.div {{.*}} -> tensor<3x5xf32>
// SCALED-NEXT: %[[UW:.*]] = tg.unscale %[[DW]], %[[S]]
// SCALED: %[[OK:.*]] = tg.all_finite %[[UW]], %{{.*}}
// SCALED: tg.global_norm %[[UW]], %{{.*}}
// SCALED: tg.adamw_update {{.*}} if %[[OK]]
// SCALED: tg.update_loss_scale %[[S]], %{{.*}}, %[[OK]]
// SCALED-LABEL: func.func @net_grad_step(
// SCALED-SAME: %[[S:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(6.553600e+04)>, tg.state = "amp.loss_scale"})
// SCALED-NOT: tg.update = "amp.loss_scale"
// SCALED: %[[SEED:.*]] = tg.scale_loss %{{.*}}, %[[S]]
// SCALED-NEXT: tg.mul %[[SEED]], %{{.*}}
// SCALED-NOT: tg.unscale
// SCALED-NOT: tg.all_finite
// SCALED: return

// STATIC-LABEL: func.func @net_grad_step(
// STATIC: %[[S:.*]] = tg.fill 8.000000e+00 : tensor<f32>
// STATIC: tg.scale_loss %{{.*}}, %[[S]]

// Both are planned, the sums as persistent gradient accumulators.
// PLAN: memory plan of @net_train_step
// PLAN: grad_accumulators 88 B
// PLAN: memory plan of @net_grad_step
// PLAN: grad_accumulators 88 B
