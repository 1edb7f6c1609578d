// A model whose constant would be a 2.16 GB executable.
func.func @net(%w: tensor<540000000xf32> {tg.param = "w"}) -> tensor<f32>
    attributes {tg.model} {
  %c = tg.constant dense<1.0> : tensor<540000000xf32>
  %p = tg.mul %w, %c : (tensor<540000000xf32>, tensor<540000000xf32>) -> tensor<540000000xf32>
  %s = tg.reduce_sum %p {axes = array<i64: 0>} : tensor<540000000xf32> -> tensor<f32>
  return %s : tensor<f32>
}
