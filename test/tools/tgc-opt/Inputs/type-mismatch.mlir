// Operands of element types that do not mix: tgc-opt must reject it.
func.func @mismatch(%a: tensor<4xf16>, %b: tensor<4xbf16>) -> tensor<4xf16> {
  // The add below mixes f16 and bf16.
  %0 = tg.add %a, %b : (tensor<4xf16>, tensor<4xbf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
