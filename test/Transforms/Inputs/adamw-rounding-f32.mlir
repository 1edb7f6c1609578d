// A stochastic-rounding seed on an f32 parameter: the verifier refuses it.
func.func @step(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) -> tensor<4xf32> {
  %np, %nm, %nv = tg.adamw_update %p, %g, %m, %v, %lr, %t {rounding_seed = 7 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %np : tensor<4xf32>
}
