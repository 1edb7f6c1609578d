// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale="mode=static:1024" | FileCheck %s --check-prefix=STATIC
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="clip-grad-norm=1.0" --tg-loss-scale="init-scale=256 growth-interval=10" | FileCheck %s --check-prefix=CLIP
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-loss-scale="mode=none" | FileCheck %s --check-prefix=NONE

func.func @net(%x: tensor<4x3xf16> {tg.input = "x"},
               %t: tensor<4xi64> {tg.input = "t"},
               %w: tensor<3x5xf32> {tg.param = "w"},
               %v: tensor<3x5xf32> {tg.param = "v", tg.frozen}) -> tensor<f32> attributes {tg.model} {
  %wl = tg.cast %w : tensor<3x5xf32> -> tensor<3x5xf16>
  %0 = tg.matmul %x, %wl : (tensor<4x3xf16>, tensor<3x5xf16>) -> tensor<4x5xf16>
  %1 = tg.cast %0 : tensor<4x5xf16> -> tensor<4x5xf32>
  %2 = tg.cross_entropy %1, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}

// The scale and its growth tracker are step state, updated in place.
// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x5xf32> {tg.param = "w"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {tg.state = "optimizer.step"}
// CHECK-SAME: %[[S:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(6.553600e+04)>, tg.state = "amp.loss_scale"}
// CHECK-SAME: %[[TRACK:[^:]*]]: tensor<i64> {tg.state = "amp.growth_tracker"}
// CHECK-SAME: tensor<f32> {tg.update = "amp.loss_scale"}, tensor<i64> {tg.update = "amp.growth_tracker"})
// The backward pass starts from S, not 1.
// CHECK: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CHECK-NOT: tg.loss_seed
// CHECK: %[[SEED:.*]] = tg.scale_loss %[[ONE]], %[[S]]
// CHECK: tg.cross_entropy_grad %{{.*}}, %{{.*}}, %[[SEED]]
// The gradient is unscaled in f32 where it is complete.
// CHECK: %[[G:.*]] = tg.cast %{{.*}} : tensor<3x5xf16> -> tensor<3x5xf32>
// CHECK: %[[U:.*]] = tg.unscale %[[G]], %[[S]] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK: %[[OK:.*]] = tg.all_finite %[[U]] : (tensor<3x5xf32>) -> tensor<i1>
// The step counter advances only when the update applies.
// CHECK: %[[INC:.*]] = tg.cast %[[OK]] : tensor<i1> -> tensor<i64>
// CHECK: %[[STEP1:.*]] = tg.add %[[STEP]], %[[INC]]
// CHECK: tg.adamw_update %[[W]], %[[U]], %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP1]] if %[[OK]] :
// CHECK: tg.update_loss_scale %[[S]], %[[TRACK]], %[[OK]] : (tensor<f32>, tensor<i64>, tensor<i1>)
// CHECK-NOT: growth_interval

// A static scale is a constant; non-finite steps are still skipped.
// STATIC-LABEL: func.func @net_train_step(
// STATIC-NOT: amp.loss_scale
// STATIC: %[[S:.*]] = tg.fill 1.024000e+03 : tensor<f32>
// STATIC: tg.scale_loss %{{.*}}, %[[S]]
// STATIC: tg.unscale %{{.*}}, %[[S]]
// STATIC: tg.adamw_update {{.*}} if
// STATIC-NOT: tg.update_loss_scale

// With clipping, gradients are unscaled before the norm is taken (as
// GradScaler.unscale_ before clip_grad_norm_).
// CLIP-LABEL: func.func @net_train_step(
// CLIP-SAME: tg.init = #tg.init<constant(2.560000e+02)>
// CLIP: %[[U:.*]] = tg.unscale
// CLIP: tg.global_norm %[[U]]
// CLIP: tg.update_loss_scale {{.*}} {growth_interval = 10 : i64}

// NONE-LABEL: func.func @net_train_step(
// NONE-NOT: tg.scale_loss
// NONE-NOT: tg.unscale
