// RUN: tgc-opt %s --tg-raise-gelu | FileCheck %s

// GPT-2's gelu_new as tgc-import traces it, with f32 constants.
// CHECK-LABEL: func.func @gelu_new(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[G:.*]] = tg.gelu %[[X]] : tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_new(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %hx = tg.mul %x, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq = tg.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube = tg.mul %sq, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = tg.constant dense<4.471500e-02> : tensor<f32>
  %kc = tg.mul %cube, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sum = tg.add %x, %kc : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %sum, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = tg.tanh %arg : tensor<4x16xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %t1 = tg.add %t, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %y = tg.mul %hx, %t1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// Left alone: another coefficient (not GELU), and the tanh read elsewhere.
// CHECK-LABEL: func.func @not_gelu(
// CHECK-NOT: tg.gelu
func.func @not_gelu(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %hx = tg.mul %x, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq = tg.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube = tg.mul %sq, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = tg.constant dense<5.000000e-02> : tensor<f32>
  %kc = tg.mul %cube, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sum = tg.add %x, %kc : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %sum, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = tg.tanh %arg : tensor<4x16xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %t1 = tg.add %t, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %y = tg.mul %hx, %t1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @shared_tanh(
// CHECK-NOT: tg.gelu
func.func @shared_tanh(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %hx = tg.mul %x, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq = tg.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube = tg.mul %sq, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = tg.constant dense<4.471500e-02> : tensor<f32>
  %kc = tg.mul %cube, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sum = tg.add %x, %kc : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %sum, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = tg.tanh %arg : tensor<4x16xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %t1 = tg.add %t, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %y = tg.mul %hx, %t1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %t : tensor<4x16xf32>, tensor<4x16xf32>
}
