// A classifier whose loss is finite and whose gradient is not at any loss
// scale: sqrt(s) at s = 0 adds nothing to the logits, and its derivative
// 1 / (2 sqrt(s)) is infinite (divergence.test).
func.func @net(%x: tensor<4x3xf32> {tg.input = "inputs"},
               %t: tensor<4xi64> {tg.input = "targets"},
               %w: tensor<3x5xf32> {tg.param = "w"},
               %s: tensor<5xf32> {tg.init = #tg.init<zeros>, tg.param = "s"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = tg.sqrt %s : tensor<5xf32>
  %2 = tg.add %0, %1 : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %3 = tg.cross_entropy %2, %t {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}
