// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight" --tg-quantize-frozen | FileCheck %s
// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight" --tg-quantize-frozen="print=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight" --tg-quantize-frozen="type=fp4 double-quant=false block-size=32" | FileCheck %s --check-prefix=FP4
// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight frozen-dtype=bf16" --tg-quantize-frozen | FileCheck %s --check-prefix=NARROW
// RUN: tgc-opt %s --tg-freeze="freeze=layers.*.weight" --tg-quantize-frozen | FileCheck %s --check-prefix=HEAD
// RUN: tgc-opt %s --tg-freeze="freeze=layers.*.weight" --tg-quantize-frozen="weights=layers.2.weight" | FileCheck %s --check-prefix=NAMED
// RUN: tgc-opt %s --tg-freeze="freeze=layers.[01].weight" --tg-quantize-frozen --tg-amp --tg-autodiff | FileCheck %s --check-prefix=STEP
// RUN: tgc-opt %s --tgc-train-pipeline="freeze=layers.0.weight,layers.1.weight quantize-frozen=nf4" --tg-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN

// A 3-layer MLP with Hugging Face-style parameter names.
func.func @mlp(%x: tensor<64x16xf32> {tg.input = "inputs"}, %y: tensor<64xi64> {tg.input = "targets"},
               %w0: tensor<32x16xf32> {tg.param = "layers.0.weight", tg.init = #tg.init<normal(0.0, 0.02)>}, %b0: tensor<32xf32> {tg.param = "layers.0.bias"},
               %w1: tensor<32x32xf32> {tg.param = "layers.1.weight"}, %b1: tensor<32xf32> {tg.param = "layers.1.bias"},
               %w2: tensor<4x32xf32> {tg.param = "layers.2.weight"}, %b2: tensor<4xf32> {tg.param = "layers.2.bias"})
    -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %w0 {transpose_rhs = true} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32>
  %1 = tg.add %0, %b0 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %2 = tg.relu %1 : tensor<64x32xf32>
  %3 = tg.matmul %2, %w1 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
  %4 = tg.add %3, %b1 : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  %5 = tg.relu %4 : tensor<64x32xf32>
  %6 = tg.matmul %5, %w2 {transpose_rhs = true} : (tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<64x4xf32>
  %7 = tg.add %6, %b2 : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32>
  %8 = tg.cross_entropy %7, %y : (tensor<64x4xf32>, tensor<64xi64>) -> tensor<f32>
  return %8 : tensor<f32>
}

// The weights become bitsandbytes' tensors under its names; the codes keep
// the parameter's name and initializer, and name the weight's layout and
// scales (tg.quant4). 32 x 16 = 512 values: 256 bytes of codes, 8 blocks
// of 64, one nested block.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[C0:[^:]*]]: tensor<256xui8> {tg.frozen, tg.init = #tg.init<normal(0.000000e+00, 2.000000e-02)>, tg.param = "layers.0.weight", tg.quant4 = {absmax = "layers.0.weight.absmax", block_size = 64 : i64, cols = 16 : i64, nested_absmax = "layers.0.weight.nested_absmax", offset = "layers.0.weight.nested_offset", rows = 32 : i64, type = "nf4"}}
// CHECK-SAME: tensor<512xui8> {tg.frozen, tg.param = "layers.1.weight", tg.quant4 = {absmax = "layers.1.weight.absmax", block_size = 64 : i64, cols = 32 : i64, nested_absmax = "layers.1.weight.nested_absmax", offset = "layers.1.weight.nested_offset", rows = 32 : i64, type = "nf4"}}
// CHECK-SAME: %arg6: tensor<4x32xf32> {tg.param = "layers.2.weight"}
// CHECK-SAME: %[[A0:[^:]*]]: tensor<8xui8> {tg.frozen, tg.param = "layers.0.weight.absmax"}
// CHECK-SAME: %[[N0:[^:]*]]: tensor<1xf32> {tg.frozen, tg.param = "layers.0.weight.nested_absmax"}
// CHECK-SAME: %[[O0:[^:]*]]: tensor<f32> {tg.frozen, tg.param = "layers.0.weight.nested_offset"}
// CHECK-SAME: tensor<16xui8> {tg.frozen, tg.param = "layers.1.weight.absmax"}
// The NF4 codebook, then bitsandbytes' dynamic map.
// CHECK: %[[MAP:.*]] = tg.constant dense<[-1.000000e+00, -0.6961928, -0.525073051
// CHECK: %[[DYN:.*]] = tg.constant dense<"0x33337EBF9A997ABF000077BF
// CHECK: tg.matmul_4bit %arg0, %[[C0]], %[[A0]], %[[MAP]], %[[N0]], %[[DYN]], %[[O0]] {cols = 16 : i64, rows = 32 : i64} : (tensor<64x16xf32>, tensor<256xui8>, tensor<8xui8>, tensor<16xf32>, tensor<1xf32>, tensor<256xf32>, tensor<f32>) -> tensor<64x32xf32>
// CHECK: tg.matmul_4bit
// CHECK: tg.matmul %{{.*}}, %arg6 {transpose_rhs = true}

// SUMMARY: tg-quantize-frozen: @mlp: 2 weights (1536 elements) in NF4 with double quantization: 6144 -> 808 bytes

// Without double quantization an f32 absmax per block (here of 32).
// FP4-LABEL: func.func @mlp
// FP4-SAME: tensor<256xui8> {tg.frozen, tg.init = #tg.init<normal(0.000000e+00, 2.000000e-02)>, tg.param = "layers.0.weight", tg.quant4 = {absmax = "layers.0.weight.absmax", block_size = 32 : i64, cols = 16 : i64, rows = 32 : i64, type = "fp4"}}
// FP4-SAME: tensor<16xf32> {tg.frozen, tg.param = "layers.0.weight.absmax"}
// FP4-NOT: nested
// FP4: tg.constant dense<[0.000000e+00, 0.00520833349, 0.666666686, 1.000000e+00
// FP4: tg.matmul_4bit {{.*}} {block_size = 32 : i64, cols = 16 : i64, rows = 32 : i64} : (tensor<64x16xf32>, tensor<256xui8>, tensor<16xf32>, tensor<16xf32>) -> tensor<64x32xf32>

// frozen-dtype's widening cast goes with the matmul it fed.
// NARROW-LABEL: func.func @mlp
// NARROW-NOT: tg.cast
// NARROW: tg.matmul_4bit %arg0

// By default the output head (its product is the loss's logits) stays.
// HEAD: tg.matmul_4bit
// HEAD: tg.matmul_4bit
// HEAD: tg.matmul %{{.*}}, %arg6

// Named, it is quantized too.
// NAMED-LABEL: func.func @mlp
// NAMED-SAME: %arg2: tensor<32x16xf32>
// NAMED-SAME: %arg6: tensor<64xui8> {tg.frozen, tg.param = "layers.2.weight", tg.quant4 = {absmax = "layers.2.weight.absmax", {{[^}]*}}, rows = 4 : i64, type = "nf4"}}
// NAMED: tg.matmul_4bit {{.*}} {cols = 32 : i64, rows = 4 : i64}

// Mixed precision casts the input, not the scales; the input's gradient is
// the same product the other way round.
// STEP: tg.matmul_4bit %{{.*}} {cols = 16 : i64, rows = 32 : i64} : (tensor<64x16xbf16>, tensor<256xui8>, tensor<8xui8>, tensor<16xf32>, tensor<1xf32>, tensor<256xf32>, tensor<f32>) -> tensor<64x32xbf16>
// STEP: tg.matmul_4bit %{{.*}} {cols = 32 : i64, rows = 32 : i64, transpose_rhs = false} : (tensor<64x32xbf16>, tensor<512xui8>

// The plan holds the two frozen weights (1536 elements) at half a byte an
// element plus their scales: 808 bytes.
// PLAN: frozen_params     808 B
