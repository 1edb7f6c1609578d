//===- Quant4bit.cpp - QLoRA's 4-bit frozen weights on the host -----------===//

#include "tgc/runtime/Quant4bit.h"

#include "cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace tgc::rt {

Dequantizer4bit::Dequantizer4bit(const Weight4bitRefs &weight)
    : codes(static_cast<const uint8_t *>(weight.codes.data)),
      map(static_cast<const float *>(weight.map.data)),
      blockSize(weight.blockSize) {
  if (weight.nested()) {
    codes8 = static_cast<const uint8_t *>(weight.absmax.data);
    nestedAbsmax = static_cast<const float *>(weight.nestedAbsmax.data);
    nestedMap = static_cast<const float *>(weight.nestedMap.data);
    offset = *static_cast<const float *>(weight.offset.data);
  } else {
    absmax32 = static_cast<const float *>(weight.absmax.data);
  }
}

namespace {

/// The absmax of each block of `values` and the values times its
/// reciprocal, handed to `code(scaled, i)` one by one; the reciprocal of a
/// block's absmax also scales the padding after an odd last element.
template <typename Code>
void blockwise(const float *values, int64_t n, int64_t blockSize,
               float *absmax, Code code) {
  int64_t blocks = (n + blockSize - 1) / blockSize;
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t first = b * blockSize, end = std::min(n, first + blockSize);
    // As the kernel's reduction: fmaxf from -FLT_MAX (a NaN is skipped).
    float largest = -3.402823466e+38f;
    for (int64_t i = first; i < end; ++i)
      largest = std::fmax(largest, std::fabs(values[i]));
    absmax[b] = largest;
    float inverse = 1.0f / largest;
    for (int64_t i = first; i < end; ++i)
      code(values[i] * inverse, i);
    if (end == n && n % 2)
      code(0.0f * inverse, n);
  }
}

} // namespace

void quantize4bit(quant4::Type type, const float *values, int64_t n,
                  int64_t blockSize, uint8_t *codes, float *absmax) {
  std::memset(codes, 0, size_t((n + 1) / 2));
  blockwise(values, n, blockSize, absmax, [&](float scaled, int64_t i) {
    uint8_t code = quant4::code4(type, scaled);
    codes[i >> 1] |= (i & 1) ? code : uint8_t(code << 4);
  });
}

void quantizeAbsmax(const float *absmax, int64_t blocks, uint8_t *codes,
                    float *nestedAbsmax, float *offset) {
  double sum = 0.0;
  for (int64_t b = 0; b < blocks; ++b)
    sum += double(absmax[b]);
  *offset = float(sum / double(blocks));
  std::vector<float> centred(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b)
    centred[size_t(b)] = absmax[b] - *offset;
  float map[quant4::kNestedValues];
  for (int c = 0; c < quant4::kNestedValues; ++c)
    map[c] = quant4::dynamicMap(c);
  blockwise(centred.data(), blocks, quant4::kNestedBlockSize, nestedAbsmax,
            [&](float scaled, int64_t b) {
              if (b < blocks)
                codes[b] = quant4::code8(map, scaled);
            });
}

void quantizeWeight(const QuantizedWeight &weight, const float *values,
                    TensorRef codes, TensorRef absmax, TensorRef nestedAbsmax,
                    TensorRef offset) {
  int64_t n = weight.rows * weight.cols;
  quant4::Layout layout{n, weight.blockSize};
  quant4::Type type = weight.fp4 ? quant4::Type::FP4 : quant4::Type::NF4;
  std::vector<float> scales(size_t(layout.blocks()));
  auto *bytes = static_cast<uint8_t *>(codes.data);
  // Chunks of whole blocks (an even number of elements: whole bytes).
  int64_t perChunk = std::max<int64_t>(1, cpu::kElementGrain / layout.blockSize);
  cpu::parallelFor(layout.blocks(), perChunk, [&](int64_t begin, int64_t end) {
    int64_t first = begin * layout.blockSize;
    int64_t count = std::min(n, end * layout.blockSize) - first;
    quantize4bit(type, values + first, count, layout.blockSize,
                 bytes + first / 2, scales.data() + begin);
  });
  if (!weight.nested()) {
    std::memcpy(absmax.data, scales.data(), scales.size() * sizeof(float));
    return;
  }
  quantizeAbsmax(scales.data(), layout.blocks(),
                 static_cast<uint8_t *>(absmax.data),
                 static_cast<float *>(nestedAbsmax.data),
                 static_cast<float *>(offset.data));
}

bool quant4TypeOf(const float *map, quant4::Type &type) {
  for (quant4::Type candidate : {quant4::Type::NF4, quant4::Type::FP4})
    if (std::memcmp(map, quant4::values(candidate),
                    sizeof(float) * quant4::kValues) == 0) {
      type = candidate;
      return true;
    }
  return false;
}

} // namespace tgc::rt
