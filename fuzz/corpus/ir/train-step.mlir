// RUN: tgc-opt %s --tg-optimizer | FileCheck %s
// RUN: tgc-opt %s --tg-optimizer="optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=SGD
// RUN: tgc-opt %s --tg-optimizer="optimizer=sgd momentum=0.9 nesterov=true weight-decay=0.1" | FileCheck %s --check-prefix=MOM
// RUN: tgc-opt %s --tg-optimizer="clip-grad-norm=1.0" | FileCheck %s --check-prefix=CLIP
// RUN: tgc-opt %s --tg-optimizer="optimizer=adafactor warmup-init=true" | FileCheck %s --check-prefix=ADAFACTOR
// RUN: not tgc-opt %s --tg-optimizer --tg-optimizer 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not tgc-opt %s --tg-optimizer="optimizer=adafactor decay-rate=0.5" 2>&1 | FileCheck %s --check-prefix=DECAY

// The gradient step tg-autodiff makes: a loss and one gradient per
// trainable parameter; the frozen b has none.
func.func @net_train_step(%x: tensor<4x3xf32> {tg.input = "x"},
                          %w: tensor<3x3xf32> {tg.param = "w"},
                          %b: tensor<3xf32> {tg.param = "b", tg.frozen},
                          %v: tensor<3x2xf32> {tg.param = "v"})
    -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.grad = "w"},
        tensor<3x2xf32> {tg.grad = "v"}) attributes {tg.train_step} {
  %loss = tg.fill 1.0 : tensor<f32>
  %dw = tg.fill 2.0 : tensor<3x3xf32>
  %dv = tg.fill 3.0 : tensor<3x2xf32>
  return %loss, %dw, %dv : tensor<f32>, tensor<3x3xf32>, tensor<3x2xf32>
}

// AdamW: two moments per trainable parameter, named as torch.optim names
// them; the learning rate and the step are persistent inputs of every
// update; the counter advances by one.
// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x3xf32> {tg.param = "w"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<3x2xf32> {tg.param = "v"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<i64> {tg.state = "optimizer.step"}
// CHECK-SAME: %[[LR:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(1.000000e-03)>, tg.state = "optimizer.lr"}
// CHECK-SAME: %[[WM:[^:]*]]: tensor<3x3xf32> {tg.state = "w.exp_avg"}
// CHECK-SAME: %[[WV:[^:]*]]: tensor<3x3xf32> {tg.state = "w.exp_avg_sq"}
// CHECK-SAME: %[[VM:[^:]*]]: tensor<3x2xf32> {tg.state = "v.exp_avg"}
// CHECK-SAME: %[[VV:[^:]*]]: tensor<3x2xf32> {tg.state = "v.exp_avg_sq"})
// CHECK-NOT: b.exp_avg
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<3x3xf32> {tg.update = "w"}, tensor<3x3xf32> {tg.update = "w.exp_avg"}, tensor<3x3xf32> {tg.update = "w.exp_avg_sq"}, tensor<3x2xf32> {tg.update = "v"}, tensor<3x2xf32> {tg.update = "v.exp_avg"}, tensor<3x2xf32> {tg.update = "v.exp_avg_sq"}, tensor<i64> {tg.update = "optimizer.step"}) attributes {tg.train_step}
// CHECK: %[[LOSS:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CHECK: %[[DW:.*]] = tg.fill 2.000000e+00
// CHECK: %[[DV:.*]] = tg.fill 3.000000e+00
// CHECK: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<i64>
// CHECK: %[[T1:.*]] = tg.add %[[STEP]], %[[ONE]] : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: %[[NW:.*]], %[[NWM:.*]], %[[NWV:.*]] = tg.adamw_update %[[W]], %[[DW]], %[[WM]], %[[WV]], %[[LR]], %[[T1]] :
// CHECK: tg.adamw_update %[[V]], %[[DV]], %[[VM]], %[[VV]], %[[LR]], %[[T1]]
// CHECK: return %[[LOSS]], %[[NW]], %[[NWM]], %[[NWV]],

// Plain SGD keeps no state but the counter and the learning rate.
// SGD-LABEL: func.func @net_train_step(
// SGD-SAME: tensor<i64> {tg.state = "optimizer.step"}
// SGD-SAME: %[[LR:[^:]*]]: tensor<f32> {tg.init = #tg.init<constant(1.000000e-01)>, tg.state = "optimizer.lr"})
// SGD: tg.sgd_update %{{.*}}, %{{.*}}, %[[LR]], %{{[^ ,]*}} :
// SGD-SAME: (tensor<3x3xf32>, tensor<3x3xf32>, tensor<f32>, tensor<i64>) -> tensor<3x3xf32>
// SGD: tg.sgd_update

// With momentum each trainable parameter has a momentum buffer.
// MOM-LABEL: func.func @net_train_step(
// MOM-SAME: tg.state = "w.momentum_buffer"
// MOM-SAME: tg.state = "v.momentum_buffer"
// MOM-SAME: tg.update = "w.momentum_buffer"
// MOM: tg.sgd_update {{.*}} {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-01 : f64}

// clip_grad_norm_: coef = min(max_norm / (norm + 1e-6), 1) scales each grad.
// CLIP-LABEL: func.func @net_train_step(
// CLIP: %[[G1:.*]] = tg.fill 2.000000e+00
// CLIP: %[[G2:.*]] = tg.fill 3.000000e+00
// CLIP: %[[NORM:.*]] = tg.global_norm %[[G1]], %[[G2]] :
// CLIP: %[[EPS:.*]] = tg.fill 9.9999999999999995E-7 : tensor<f32>
// CLIP: %[[DEN:.*]] = tg.add %[[NORM]], %[[EPS]]
// CLIP: %[[MAX:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CLIP: %[[RATIO:.*]] = tg.div %[[MAX]], %[[DEN]]
// CLIP: %[[ONE:.*]] = tg.fill 1.000000e+00 : tensor<f32>
// CLIP: %[[COEF:.*]] = tg.minimum %[[RATIO]], %[[ONE]]
// CLIP: %[[C1:.*]] = tg.mul %[[G1]], %[[COEF]]
// CLIP: %[[C2:.*]] = tg.mul %[[G2]], %[[COEF]]
// CLIP: tg.adamw_update %{{.*}}, %[[C1]],
// CLIP: tg.adamw_update %{{.*}}, %[[C2]],

// Adafactor: a matrix keeps row and column second moments (3 + 3 values
// for 3x3), Hugging Face's names.
// ADAFACTOR-LABEL: func.func @net_train_step(
// ADAFACTOR-SAME: %[[W:[^:]*]]: tensor<3x3xf32> {tg.param = "w"}
// ADAFACTOR-SAME: %[[LR:[^:]*]]: tensor<f32> {{{.*}}tg.state = "optimizer.lr"}
// ADAFACTOR-SAME: %[[WR:[^:]*]]: tensor<3xf32> {tg.state = "w.exp_avg_sq_row"}
// ADAFACTOR-SAME: %[[WC:[^:]*]]: tensor<3xf32> {tg.state = "w.exp_avg_sq_col"}
// ADAFACTOR-SAME: tensor<3xf32> {tg.state = "v.exp_avg_sq_row"}
// ADAFACTOR-SAME: tensor<2xf32> {tg.state = "v.exp_avg_sq_col"}
// ADAFACTOR-SAME: tensor<3xf32> {tg.update = "w.exp_avg_sq_row"}, tensor<3xf32> {tg.update = "w.exp_avg_sq_col"}
// ADAFACTOR: tg.adafactor_update %[[W]], %{{[^ ]*}}, [%[[WR]], %[[WC]]], %[[LR]], %{{[^ ]*}} {warmup_init = true}

// DECAY: error: tg-optimizer: adafactor needs decay-rate < 0 and clip-threshold > 0
// TWICE: error: 'func.func' op already has an optimizer (a 'optimizer.step' argument); run tg-optimizer once, on the output of tg-autodiff
