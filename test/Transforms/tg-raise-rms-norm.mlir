// RUN: tgc-opt %s --tg-raise-rms-norm | FileCheck %s

// Hugging Face's LlamaRMSNorm as tgc-import traces it: the epsilon is the
// f32 constant's shortest decimal.
// CHECK-LABEL: func.func @llama(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.*]] = tg.rms_norm %[[X]], %[[W]] {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @llama(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %sq = tg.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %var = tg.reduce_mean %sq {axes = array<i64: 2>, keep_dims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps = tg.constant dense<9.99999974E-6> : tensor<f32>
  %ve = tg.add %var, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %r = tg.rsqrt %ve : tensor<2x4x1xf32>
  %n = tg.mul %x, %r : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %y = tg.mul %w, %n : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Gemma's weight is 1 + w: the sum is the weight (its epsilon 1e-6 is
// tg.rms_norm's default).
// CHECK-LABEL: func.func @gemma(
// CHECK: %[[ONE_W:.*]] = tg.add
// CHECK-NEXT: tg.rms_norm %{{.*}}, %[[ONE_W]] : (tensor<2x4x8xf32>, tensor<8xf32>)
func.func @gemma(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %sq = tg.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %var = tg.reduce_mean %sq {axes = array<i64: 2>, keep_dims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps = tg.constant dense<9.99999997E-7> : tensor<f32>
  %ve = tg.add %var, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %r = tg.rsqrt %ve : tensor<2x4x1xf32>
  %n = tg.mul %x, %r : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %w1 = tg.add %w, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = tg.mul %n, %w1 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Left alone: the mean over another axis, and a normalised value that
// something else also reads.
// CHECK-LABEL: func.func @other_axis(
// CHECK-NOT: tg.rms_norm
func.func @other_axis(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %sq = tg.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %var = tg.reduce_mean %sq {axes = array<i64: 1>, keep_dims = true} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %eps = tg.constant dense<1.0E-5> : tensor<f32>
  %ve = tg.add %var, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %r = tg.rsqrt %ve : tensor<2x1x8xf32>
  %n = tg.mul %x, %r : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %y = tg.mul %w, %n : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @shared(
// CHECK-NOT: tg.rms_norm
func.func @shared(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %sq = tg.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %var = tg.reduce_mean %sq {axes = array<i64: 2>, keep_dims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps = tg.constant dense<1.0E-5> : tensor<f32>
  %ve = tg.add %var, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %r = tg.rsqrt %ve : tensor<2x4x1xf32>
  %n = tg.mul %x, %r : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %y = tg.mul %w, %n : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y, %n : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
