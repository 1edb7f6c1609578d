// Tensor types whose byte counts overflow 64 bits.
func.func @net(%x: tensor<9223372036854775807x8xf32> {tg.input = "x"},
               %w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32>
    attributes {tg.model} {
  %s = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @op(%w: tensor<4xf32>) -> tensor<f32> {
  %b = tg.fill 1.0 : tensor<4611686018427387904x4xf32>
  %s = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
