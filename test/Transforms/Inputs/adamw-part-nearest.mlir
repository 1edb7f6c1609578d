// A part number on an update that rounds to nearest: the verifier refuses it.
func.func @step(%p: tensor<4xbf16>, %g: tensor<4xbf16>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>, %part: tensor<i64>) -> tensor<4xbf16> {
  %np, %nm, %nv = tg.adamw_update %p, %g, %m, %v, %lr, %t part %part : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<i64>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>)
  return %np : tensor<4xbf16>
}
