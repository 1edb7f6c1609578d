// A frozen 4-bit weight written by hand, its codes without the tg.quant4
// layout tg-quantize-frozen gives them: the runtime could not tell how to
// draw, load or quantize the weight, so tgc-compile refuses it.
func.func @net(%x: tensor<4x8xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %codes: tensor<24xui8> {tg.param = "w", tg.frozen},
               %absmax: tensor<3xf32> {tg.param = "w.absmax", tg.frozen},
               %v: tensor<6x2xf32> {tg.param = "v"}) -> tensor<f32> attributes {tg.model} {
  %map = tg.constant dense<[-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]> : tensor<16xf32>
  %0 = tg.matmul_4bit %x, %codes, %absmax, %map {rows = 6 : i64, cols = 8 : i64, block_size = 16 : i64} : (tensor<4x8xf32>, tensor<24xui8>, tensor<3xf32>, tensor<16xf32>) -> tensor<4x6xf32>
  %1 = tg.matmul %0, %v : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  %2 = tg.cross_entropy %1, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}
