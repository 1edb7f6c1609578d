// RUN: not tgc-opt %s --tg-quantize-frozen="weights=layers.1.weight" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TRAINED
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.*" --tg-quantize-frozen="weights=layers.1.bias" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.*" --tg-quantize-frozen="weights=emb.weight" -o /dev/null 2>&1 | FileCheck %s --check-prefix=READER
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.*" --tg-quantize-frozen="weights=layers.9.*" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tgc-opt %s --tg-quantize-frozen -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not tgc-opt %s --tg-freeze="freeze=layers.*" --tg-quantize-frozen="block-size=63" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not tgc-opt %s --tg-quantize-frozen="type=int3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TYPE

func.func @model(%t: tensor<8xi64> {tg.input = "tokens"}, %y: tensor<8xi64> {tg.input = "targets"},
                 %emb: tensor<16x32xf32> {tg.param = "emb.weight", tg.frozen},
                 %w1: tensor<16x32xf32> {tg.param = "layers.1.weight"}, %b1: tensor<16xf32> {tg.param = "layers.1.bias"},
                 %s: tensor<16xf32> {tg.param = "scale"})
    -> tensor<f32> attributes {tg.model} {
  %x = tg.embedding %emb, %t : (tensor<16x32xf32>, tensor<8xi64>) -> tensor<8x32xf32>
  %h = tg.matmul %x, %w1 {transpose_rhs = true} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  %r = tg.relu %h : tensor<8x16xf32>
  %l = tg.add %r, %b1 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %m = tg.mul %l, %s : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %loss = tg.cross_entropy %m, %y : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// TRAINED: error: tg-quantize-frozen: cannot quantize 'layers.1.weight': it is trained (only frozen weights are quantized: freeze it, or adapt it with LoRA)
// RANK: error: tg-quantize-frozen: cannot quantize 'layers.1.bias': it has rank 1 (4-bit weights are 2-D)
// READER: error: tg-quantize-frozen: cannot quantize 'emb.weight': it is read by 'tg.embedding' (operand 0), not as the weight of a tg.matmul
// NOMATCH: error: tg-quantize-frozen: weights pattern 'layers.9.*' matches no parameter of @model
// NONE: error: tg-quantize-frozen: no frozen matmul weight of @model to quantize (freeze the base, or use LoRA)
// BLOCK: error: tg-quantize-frozen: block-size must be even and in [2, 4096], found 63
// TYPE: for the --type option: {{.*}}'int3'
