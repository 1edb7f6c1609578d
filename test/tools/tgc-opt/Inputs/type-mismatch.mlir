// Operands of different element types: tgc-opt must reject it.
func.func @mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // The add below mixes f32 and f16.
  %0 = tg.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
