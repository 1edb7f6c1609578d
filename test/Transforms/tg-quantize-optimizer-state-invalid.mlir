// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adafactor" --tg-quantize-optimizer-state 2>&1 | FileCheck %s --check-prefix=EIGHT
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adafactor" --tg-quantize-optimizer-state="format=4bit min-size=1" 2>&1 | FileCheck %s --check-prefix=FOUR
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adafactor" --tg-quantize-optimizer-state="format=f32" | FileCheck %s --check-prefix=F32

// Adafactor has no quantized update: asking for 8-bit or 4-bit state with
// it is an error, even for parameters below min-size (3x5 here, against
// the default 4096), rather than a pass that changes nothing and says
// nothing.
func.func @net(%x: tensor<4x3xf32> {tg.input = "inputs"},
               %t: tensor<4xi64> {tg.input = "targets"},
               %w: tensor<3x5xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = tg.cross_entropy %0, %t {ignore_index = -1 : i64} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}
// EIGHT: error: 'tg.adafactor_update' op 8-bit optimizer state is for AdamW and SGD; Adafactor keeps its factored second moment in f32 (--optimizer-state=f32)
// FOUR: error: 'tg.adafactor_update' op 4-bit optimizer state is for AdamW; Adafactor keeps its factored second moment in f32
// F32: tg.adafactor_update
