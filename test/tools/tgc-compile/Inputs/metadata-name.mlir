// Parameter names that a checkpoint cannot hold.
func.func @net(%w: tensor<4xf32> {tg.param = "__metadata__"}) -> tensor<f32>
    attributes {tg.model} {
  %s = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @net(%w: tensor<4xf32> {tg.param = "a\"b"}) -> tensor<f32>
    attributes {tg.model} {
  %s = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
