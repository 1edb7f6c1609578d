// A tied embedding: the table is looked up and, transposed, is the
// classifier.
func.func @tied(%ids: tensor<2x4xi64> {tg.input = "ids"},
                %y: tensor<8xi64> {tg.input = "targets"},
                %wte: tensor<10x6xf32> {tg.param = "wte"})
    -> tensor<f32> attributes {tg.model} {
  %h = tg.embedding %wte, %ids : (tensor<10x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  %h2 = tg.reshape %h : tensor<2x4x6xf32> -> tensor<8x6xf32>
  %logits = tg.matmul %h2, %wte {transpose_rhs = true}
      : (tensor<8x6xf32>, tensor<10x6xf32>) -> tensor<8x10xf32>
  %loss = tg.cross_entropy %logits, %y : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
