// loss = sum(w1 * x1) + sum(w2 * x2) + sum(w3 * x3): each gradient is
// exactly its batch, so an optimizer's arithmetic can be replayed exactly.
// Sizes are not multiples of a block: 10087 = 39 * 256 + 103 and
// 5000 = 19 * 256 + 136 elements; w3 (40) stays under the 8-bit threshold.
func.func @linear(%x1: tensor<77x131xf32> {tg.input = "x1"},
                  %x2: tensor<5000xf32> {tg.input = "x2"},
                  %x3: tensor<40xf32> {tg.input = "x3"},
                  %w1: tensor<77x131xf32> {tg.param = "w1", tg.init = #tg.init<normal(0.0, 0.02)>},
                  %w2: tensor<5000xf32> {tg.param = "w2", tg.init = #tg.init<normal(0.0, 0.02)>},
                  %w3: tensor<40xf32> {tg.param = "w3", tg.init = #tg.init<normal(0.0, 0.02)>}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.mul %w1, %x1 : (tensor<77x131xf32>, tensor<77x131xf32>) -> tensor<77x131xf32>
  %1 = tg.reduce_sum %0 {axes = array<i64: 0, 1>} : tensor<77x131xf32> -> tensor<f32>
  %2 = tg.mul %w2, %x2 : (tensor<5000xf32>, tensor<5000xf32>) -> tensor<5000xf32>
  %3 = tg.reduce_sum %2 {axes = array<i64: 0>} : tensor<5000xf32> -> tensor<f32>
  %4 = tg.mul %w3, %x3 : (tensor<40xf32>, tensor<40xf32>) -> tensor<40xf32>
  %5 = tg.reduce_sum %4 {axes = array<i64: 0>} : tensor<40xf32> -> tensor<f32>
  %6 = tg.add %1, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %7 = tg.add %6, %5 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %7 : tensor<f32>
}
