//===- Quant4bit.h - QLoRA's 4-bit frozen weights on the host ---*- C++ -*-===//
//
// A frozen weight in bitsandbytes' 4-bit format (tgc/Support/Quant4bit.h:
// blocks, absmax values, NF4 or FP4 codes, double quantization): the views
// tg.matmul_4bit's kernels read, the dequantization of one element, and the
// quantization the runtime applies to a 16- or 32-bit weight as it loads
// (or draws) it, bit for bit what bitsandbytes' quantize_4bit makes of it
// (its CUDA kernels' rules; test/e2e/Inputs/nf4_reference.py).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_QUANT4BIT_H
#define TGC_RUNTIME_QUANT4BIT_H

#include "tgc/Support/Quant4bit.h"
#include "tgc/runtime/Program.h"
#include "tgc/runtime/Tensor.h"

#include <cstdint>

namespace tgc::rt {

/// tg.matmul_4bit's weight operands: `codes` (ui8, two a byte), `absmax`
/// (f32, or ui8 when double-quantized, with `nestedAbsmax`, `nestedMap`
/// and `offset`), the 16-entry `map`; the weight is `rows` x `cols` in
/// blocks of `blockSize`.
struct Weight4bitRefs {
  TensorRef codes, absmax, map, nestedAbsmax, nestedMap, offset;
  int64_t rows = 0, cols = 0, blockSize = quant4::kBlockSize;

  bool nested() const { return absmax.dtype == DType::U8; }
};

/// The weight's values on the host, element by element, in f32 as
/// bitsandbytes' dequantize_4bit computes them: `map[code] * absmax`, the
/// absmax of a double-quantized block `nestedMap[q] * nestedAbsmax + offset`
/// (a product, then a sum, each rounded to f32).
class Dequantizer4bit {
public:
  /// The operands must live in host memory.
  explicit Dequantizer4bit(const Weight4bitRefs &weight);

  float scale(int64_t block) const {
    if (!codes8)
      return absmax32[block];
    float product = nestedMap[codes8[block]] *
                    nestedAbsmax[block / quant4::kNestedBlockSize];
    return product + offset;
  }
  uint8_t code(int64_t i) const {
    uint8_t byte = codes[i >> 1];
    return (i & 1) ? byte & 0x0F : byte >> 4;
  }
  float operator()(int64_t i) const {
    return map[code(i)] * scale(i / blockSize);
  }

private:
  const uint8_t *codes;
  const float *map;
  const float *absmax32 = nullptr;
  const uint8_t *codes8 = nullptr;
  const float *nestedAbsmax = nullptr, *nestedMap = nullptr;
  float offset = 0.0f;
  int64_t blockSize;
};

/// Quantizes `n` values in blocks of `blockSize` as kQuantizeBlockwise
/// does: each block's absmax (the largest magnitude), each value times
/// 1 / absmax coded (quant4::code4), two codes a byte (`codes`: (n + 1) / 2
/// bytes, the low nibble after an odd last element the code of 0 scaled
/// alike). `absmax` gets one f32 per block.
void quantize4bit(quant4::Type type, const float *values, int64_t n,
                  int64_t blockSize, uint8_t *codes, float *absmax);

/// QLoRA's double quantization of `blocks` absmax values: `offset` their
/// mean (the exact mean rounded to f32), then `absmax - offset` in blocks
/// of 256 to 8-bit codes of the dynamic map (quant4::code8) with an f32
/// absmax per block (`nestedAbsmax`).
void quantizeAbsmax(const float *absmax, int64_t blocks, uint8_t *codes,
                    float *nestedAbsmax, float *offset);

/// Quantizes the `rows * cols` f32 `values` of a program's 4-bit weight
/// into the host views of its tensors (`nestedAbsmax` and `offset` unused
/// without double quantization): quantize4bit, then quantizeAbsmax. Blocks
/// are quantized in parallel; the result does not depend on the thread
/// count.
void quantizeWeight(const QuantizedWeight &weight, const float *values,
                    TensorRef codes, TensorRef absmax, TensorRef nestedAbsmax,
                    TensorRef offset);

/// The quant type whose 16 values `map` holds exactly, if any.
bool quant4TypeOf(const float *map, quant4::Type &type);

} // namespace tgc::rt

#endif // TGC_RUNTIME_QUANT4BIT_H
