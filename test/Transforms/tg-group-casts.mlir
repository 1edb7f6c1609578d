// RUN: tgc-opt %s --tg-group-casts | FileCheck %s

// The forward pass's casts of parameters that the backward pass reads
// again, and a small one it does not (a bias), become one tg.multi_cast at
// the first one's place; a large cast whose value dies in the forward pass
// (the backward pass recomputes it) and the backward pass's own casts
// stay.
// CHECK-LABEL: func.func @step
// CHECK-NEXT: %[[M:.+]]:3 = tg.multi_cast %arg0, %arg1, %arg2 : (tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> (tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>)
// CHECK-NEXT: tg.matmul %arg4, %[[M]]#0
// CHECK-NEXT: tg.add %{{.+}}, %[[M]]#1
// CHECK-NEXT: %[[BIG:.+]] = tg.cast %arg3 : tensor<256x256xf32> -> tensor<256x256xbf16>
// CHECK-NEXT: tg.reduce_sum %[[BIG]]
// CHECK-NEXT: tg.matmul %{{.+}}, %[[M]]#2
// CHECK-NEXT: tg.fill 1.000000e+00 {tg.loss_seed}
// CHECK-NEXT: tg.matmul %{{.+}}, %[[M]]#0
// CHECK-NEXT: tg.matmul %{{.+}}, %[[M]]#2
// CHECK-NEXT: %[[AGAIN:.+]] = tg.cast %arg3
// CHECK-NEXT: tg.reduce_sum %[[AGAIN]]
func.func @step(%w0: tensor<8x8xf32>, %b0: tensor<8xf32>, %w1: tensor<8x8xf32>,
                %big: tensor<256x256xf32>, %x: tensor<4x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<bf16>, tensor<f32>, tensor<4x8xbf16>,
        tensor<bf16>) {
  %c0 = tg.cast %w0 : tensor<8x8xf32> -> tensor<8x8xbf16>
  %h = tg.matmul %x, %c0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %cb = tg.cast %b0 : tensor<8xf32> -> tensor<8xbf16>
  %hb = tg.add %h, %cb : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %cbig = tg.cast %big : tensor<256x256xf32> -> tensor<256x256xbf16>
  %s = tg.reduce_sum %cbig {axes = array<i64: 0, 1>} : tensor<256x256xbf16> -> tensor<bf16>
  %c1 = tg.cast %w1 : tensor<8x8xf32> -> tensor<8x8xbf16>
  %y = tg.matmul %hb, %c1 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %seed = tg.fill 1.0 {tg.loss_seed} : tensor<f32>
  %d0 = tg.matmul %y, %c0 {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %d1 = tg.matmul %d0, %c1 {transpose_rhs = true} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %cbig2 = tg.cast %big : tensor<256x256xf32> -> tensor<256x256xbf16>
  %s2 = tg.reduce_sum %cbig2 {axes = array<i64: 0, 1>} : tensor<256x256xbf16> -> tensor<bf16>
  return %y, %s, %seed, %d1, %s2 : tensor<4x8xbf16>, tensor<bf16>, tensor<f32>, tensor<4x8xbf16>, tensor<bf16>
}

// An evaluation step (no seed): the casts read after the last of them
// group; one cast alone stays as it is.
// CHECK-LABEL: func.func @eval
// CHECK-NEXT: %[[E:.+]]:2 = tg.multi_cast %arg0, %arg1
// CHECK-LABEL: func.func @single
// CHECK-NEXT: tg.cast %arg0
func.func @eval(%w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %x: tensor<4x8xbf16>)
    -> tensor<4x8xbf16> {
  %c0 = tg.cast %w0 : tensor<8x8xf32> -> tensor<8x8xbf16>
  %h = tg.matmul %x, %c0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %c1 = tg.cast %w1 : tensor<8x8xf32> -> tensor<8x8xbf16>
  %y = tg.matmul %h, %c1 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}
func.func @single(%w0: tensor<8x8xf32>, %x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %c0 = tg.cast %w0 : tensor<8x8xf32> -> tensor<8x8xbf16>
  %h = tg.matmul %x, %c0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %h : tensor<4x8xbf16>
}
