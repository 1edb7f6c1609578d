// RUN: tgc-opt %s --tg-quantize-optimizer-state="print=true" 2>&1 | FileCheck %s
// RUN: tgc-opt %s --tg-quantize-optimizer-state="block-size=2048 min-size=100" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: tgc-opt %s --tg-quantize-optimizer-state="format=f32" | FileCheck %s --check-prefix=F32
// RUN: tgc-opt %s --tg-quantize-optimizer-state="format=4bit min-size=5001 print=true" 2>&1 | FileCheck %s --check-prefix=FOUR
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="format=4bit" 2>&1 | FileCheck %s --check-prefix=FOUR-SGD
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="format=4bit block-size=1" 2>&1 | FileCheck %s --check-prefix=FOUR-BLOCK
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="format=2bit" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="block-size=100" 2>&1 | FileCheck %s --check-prefix=POW2
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="block-size=-2" 2>&1 | FileCheck %s --check-prefix=POW2-NEGATIVE
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="block-size=8192" 2>&1 | FileCheck %s --check-prefix=POW2-BIG
// RUN: not tgc-opt %s --tg-quantize-optimizer-state="min-size=-1" 2>&1 | FileCheck %s --check-prefix=MIN

// The step tg-optimizer makes for AdamW: w (64x80 = 5120 elements) is over
// the 4096 threshold, v (10x10) under it; u uses SGD with momentum (5000).
func.func @step(%w: tensor<64x80xf32> {tg.param = "w"},
                %v: tensor<10x10xf32> {tg.param = "v"},
                %u: tensor<5000xf32> {tg.param = "u"},
                %t: tensor<i64> {tg.state = "optimizer.step"},
                %lr: tensor<f32> {tg.state = "optimizer.lr", tg.init = #tg.init<constant(1.0e-3)>},
                %wm: tensor<64x80xf32> {tg.state = "w.exp_avg"},
                %wv: tensor<64x80xf32> {tg.state = "w.exp_avg_sq"},
                %vm: tensor<10x10xf32> {tg.state = "v.exp_avg"},
                %vv: tensor<10x10xf32> {tg.state = "v.exp_avg_sq"},
                %ub: tensor<5000xf32> {tg.state = "u.momentum_buffer"})
    -> (tensor<f32> {tg.loss},
        tensor<64x80xf32> {tg.update = "w"}, tensor<64x80xf32> {tg.update = "w.exp_avg"}, tensor<64x80xf32> {tg.update = "w.exp_avg_sq"},
        tensor<10x10xf32> {tg.update = "v"}, tensor<10x10xf32> {tg.update = "v.exp_avg"}, tensor<10x10xf32> {tg.update = "v.exp_avg_sq"},
        tensor<5000xf32> {tg.update = "u"}, tensor<5000xf32> {tg.update = "u.momentum_buffer"},
        tensor<i64> {tg.update = "optimizer.step"}) attributes {tg.train_step} {
  %loss = tg.fill 1.0 : tensor<f32>
  %dw = tg.fill 2.0 : tensor<64x80xf32>
  %dv = tg.fill 3.0 : tensor<10x10xf32>
  %du = tg.fill 4.0 : tensor<5000xf32>
  %one = tg.fill 1.0 : tensor<i64>
  %t1 = tg.add %t, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %w1, %wm1, %wv1 = tg.adamw_update %w, %dw, %wm, %wv, %lr, %t1 : (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<f32>, tensor<i64>) -> (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>)
  %v1, %vm1, %vv1 = tg.adamw_update %v, %dv, %vm, %vv, %lr, %t1 : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<f32>, tensor<i64>) -> (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>)
  %u1, %ub1 = tg.sgd_update %u, %du, %lr, %t1, %ub {momentum = 0.9 : f64} : (tensor<5000xf32>, tensor<5000xf32>, tensor<f32>, tensor<i64>, tensor<5000xf32>) -> (tensor<5000xf32>, tensor<5000xf32>)
  return %loss, %w1, %wm1, %wv1, %v1, %vm1, %vv1, %u1, %ub1, %t1 : tensor<f32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<5000xf32>, tensor<5000xf32>, tensor<i64>
}

// f32 state of w (2 x 5120 x 4 bytes) and u (5000 x 4) becomes a byte per
// element and 4 bytes per block of 256: 20 + 20 blocks for w, 20 for u.
// CHECK: tg-quantize-optimizer-state: @step: 2 updates with 8-bit state (block 256), 1 kept in f32 (< 4096 elements); their state 60960 -> 15480 bytes
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<64x80xf32> {tg.param = "w"}
// CHECK-SAME: %[[VM:[^:]*]]: tensor<10x10xf32> {tg.state = "v.exp_avg"}
// CHECK-SAME: %[[VV:[^:]*]]: tensor<10x10xf32> {tg.state = "v.exp_avg_sq"}
// CHECK-SAME: %[[WMQ:[^:]*]]: tensor<64x80xui8> {tg.state = "w.exp_avg.q8"}
// CHECK-SAME: %[[WMA:[^:]*]]: tensor<20xf32> {tg.state = "w.exp_avg.absmax"}
// CHECK-SAME: %[[WVQ:[^:]*]]: tensor<64x80xui8> {tg.state = "w.exp_avg_sq.q8"}
// CHECK-SAME: %[[WVA:[^:]*]]: tensor<20xf32> {tg.state = "w.exp_avg_sq.absmax"}
// CHECK-SAME: %[[UBQ:[^:]*]]: tensor<5000xui8> {tg.state = "u.momentum_buffer.q8"}
// CHECK-SAME: %[[UBA:[^:]*]]: tensor<20xf32> {tg.state = "u.momentum_buffer.absmax"}
// CHECK-SAME: -> (tensor<f32> {tg.loss}, tensor<64x80xf32> {tg.update = "w"}, tensor<64x80xui8> {tg.update = "w.exp_avg.q8"}, tensor<20xf32> {tg.update = "w.exp_avg.absmax"}, tensor<64x80xui8> {tg.update = "w.exp_avg_sq.q8"}, tensor<20xf32> {tg.update = "w.exp_avg_sq.absmax"}, tensor<10x10xf32> {tg.update = "v"}, tensor<10x10xf32> {tg.update = "v.exp_avg"}, tensor<10x10xf32> {tg.update = "v.exp_avg_sq"}, tensor<5000xf32> {tg.update = "u"}, tensor<5000xui8> {tg.update = "u.momentum_buffer.q8"}, tensor<20xf32> {tg.update = "u.momentum_buffer.absmax"}, tensor<i64> {tg.update = "optimizer.step"})
// The maps are constants of the step, made once.
// CHECK: %[[SIGNED:.*]] = tg.constant dense<{{.*}}> : tensor<256xf32>
// CHECK: %[[UNSIGNED:.*]] = tg.constant dense<{{.*}}> : tensor<256xf32>
// CHECK-NOT: tg.constant
// CHECK: tg.adamw_8bit_update %[[W]], %{{.*}}, %[[WMQ]], %[[WMA]], %[[WVQ]], %[[WVA]], %[[SIGNED]], %[[UNSIGNED]], %{{[^ ]*}}, %{{[^ ]*}} :
// CHECK: tg.adamw_update %{{.*}}, %{{.*}}, %[[VM]], %[[VV]],
// CHECK: tg.sgd_8bit_update %{{.*}}, %{{.*}}, %[[UBQ]], %[[UBA]], %[[SIGNED]], %{{[^ ]*}}, %{{[^ ]*}} :

// Block 2048: 3 blocks for w, 3 for u; with min-size=100, v (100) too.
// BLOCK: tensor<3xf32> {tg.state = "w.exp_avg.absmax"}
// BLOCK-SAME: tg.state = "v.exp_avg.q8"
// BLOCK: tg.adamw_8bit_update {{.*}} {block_size = 2048 : i64}
// BLOCK: tg.adamw_8bit_update {{.*}} : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xui8>, tensor<1xf32>,
// BLOCK: tg.sgd_8bit_update {{.*}} : (tensor<5000xf32>, tensor<5000xf32>, tensor<5000xui8>, tensor<3xf32>,

// F32-NOT: 8bit
// F32-NOT: ui8

// 4-bit (w only: u, under min-size, is not refused): 5120 codes packed in
// 2560 bytes a moment, a scale per block of 128 (40); 16-entry maps.
// FOUR: tg-quantize-optimizer-state: @step: 1 updates with 4-bit state (block 128), 2 kept in f32 (< 5001 elements); their state 40960 -> 5440 bytes
// FOUR-LABEL: func.func @step(
// FOUR-SAME: %[[W:[^:]*]]: tensor<64x80xf32> {tg.param = "w"}
// FOUR-SAME: %[[WMQ:[^:]*]]: tensor<2560xui8> {tg.state = "w.exp_avg.q4"}
// FOUR-SAME: %[[WMA:[^:]*]]: tensor<40xf32> {tg.state = "w.exp_avg.absmax"}
// FOUR-SAME: %[[WVQ:[^:]*]]: tensor<2560xui8> {tg.state = "w.exp_avg_sq.q4"}
// FOUR-SAME: %[[WVA:[^:]*]]: tensor<40xf32> {tg.state = "w.exp_avg_sq.absmax"}
// FOUR-SAME: tensor<2560xui8> {tg.update = "w.exp_avg.q4"}, tensor<40xf32> {tg.update = "w.exp_avg.absmax"}
// FOUR: %[[SIGNED:.*]] = tg.constant dense<[-0.887499988, {{.*}}, 0.000000e+00, {{.*}}, 1.000000e+00]> : tensor<16xf32>
// FOUR: %[[UNSIGNED:.*]] = tg.constant dense<[6.250000e-02, {{.*}}, 1.000000e+00]> : tensor<16xf32>
// FOUR: tg.adamw_4bit_update %[[W]], %{{.*}}, %[[WMQ]], %[[WMA]], %[[WVQ]], %[[WVA]], %[[SIGNED]], %[[UNSIGNED]], %{{[^ ]*}}, %{{[^ ]*}} :
// FOUR: tg.sgd_update
// FOUR-SGD: error: 'tg.sgd_update' op 4-bit optimizer state is for AdamW; keep SGD's momentum buffer in 8 bits (--optimizer-state=8bit)
// FOUR-BLOCK: error: tg-quantize-optimizer-state: block-size must be a power of two in [2, 4096] for 4-bit state, found 1

// FORMAT: tgc-opt: for the --format option: must be none, f32, 8bit or 4bit, found '2bit'
// POW2: error: tg-quantize-optimizer-state: block-size must be a power of two in [1, 4096], found 100
// POW2-NEGATIVE: error: tg-quantize-optimizer-state: block-size must be a power of two in [1, 4096], found -2
// POW2-BIG: error: tg-quantize-optimizer-state: block-size must be a power of two in [1, 4096], found 8192
// MIN: error: tg-quantize-optimizer-state: min-size must be non-negative, found -1
