// Read in the order a (4 elements), w (16), c (8): a small parameter, a
// large one, a small one.
func.func @net(%x: tensor<4x2xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %a: tensor<2x2xf32> {tg.param = "a"},
               %w: tensor<2x8xf32> {tg.param = "w"},
               %c: tensor<8xf32> {tg.param = "c"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %a : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %1 = tg.matmul %0, %w : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %2 = tg.add %1, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = tg.cross_entropy %2, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}
