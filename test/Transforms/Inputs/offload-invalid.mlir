// Read by tg-offload.mlir: tg.host on a parameter.
func.func @bad(%w: tensor<4xf32> {tg.param = "w", tg.host}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
