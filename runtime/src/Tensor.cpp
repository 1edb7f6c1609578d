//===- Tensor.cpp - element types, conversions, element access ------------===//
//
// The element-type facts every backend needs (sizes, names), the f32 <-> f16
// and f32 <-> bf16 conversions done by bit manipulation (round to nearest
// even, infinities kept, NaNs kept quiet with their sign and top payload
// bits, f16 subnormals produced and read exactly), and scalar element access
// by index. The access functions accept every element type: loading converts
// to the requested kind and storing converts as tg.cast does, so callers
// outside hot loops need not switch on the type themselves.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Tensor.h"

#include "Convert.h"
#include "tgc/Support/Precision.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tgc::rt {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::I1:
  case DType::U8:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::I1:
    return "i1";
  case DType::U8:
    return "ui8";
  }
  return "?";
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

static precision::Float precisionOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return precision::Float::F32;
  case DType::F16:
    return precision::Float::F16;
  case DType::BF16:
    return precision::Float::BF16;
  default:
    return precision::Float::Other;
  }
}

bool mixesInto(DType stored, DType computed) {
  return precision::mixes(precisionOf(stored), precisionOf(computed));
}

bool mixedOperands(DType lhs, DType rhs, DType result) {
  return precision::mixedOperands(precisionOf(lhs), precisionOf(rhs),
                                  precisionOf(result));
}

int64_t TensorRef::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t f32ToF16(float value) {
  uint32_t bits = floatBits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {
    if (magnitude == 0x7f800000u)
      return uint16_t(sign | 0x7c00u);
    // NaN: keep the top payload bits and make it quiet.
    return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 = 65504 + half an ulp: ties go to the even neighbour, infinity.
  if (magnitude >= 0x477ff000u)
    return uint16_t(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal f16 counts units of 2^-24.
    if (magnitude < 0x33000000u) // below 2^-25, rounds to zero
      return uint16_t(sign);
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent;
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (result & 1u)))
      ++result; // may carry into the smallest normal, which is correct
    return uint16_t(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round away 13 bits; a carry
  // out of the mantissa correctly bumps the exponent.
  uint32_t result = (magnitude >> 13) - (112u << 10);
  uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u)))
    ++result;
  return uint16_t(sign | result);
}

float f16ToF32(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0)
    return bitsFloat(sign);
  // Subnormal: normalize into an f32 exponent.
  uint32_t e = 113;
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    --e;
  }
  return bitsFloat(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

uint16_t f32ToBF16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u); // quiet NaN, sign and payload top
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + roundingBias) >> 16);
}

float bf16ToF32(uint16_t bits) { return bitsFloat(uint32_t(bits) << 16); }

float loadF32(const TensorRef &t, int64_t i) {
  const char *p = static_cast<const char *>(t.data);
  switch (t.dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return f16ToF32(v);
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return bf16ToF32(v);
  }
  default:
    return float(loadI64(t, i));
  }
}

void storeF32(TensorRef &t, int64_t i, float value) {
  char *p = static_cast<char *>(t.data);
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(p + i * 4, &value, 4);
    return;
  case DType::F16: {
    uint16_t v = f32ToF16(value);
    std::memcpy(p + i * 2, &v, 2);
    return;
  }
  case DType::BF16: {
    uint16_t v = f32ToBF16(value);
    std::memcpy(p + i * 2, &v, 2);
    return;
  }
  case DType::I64: {
    int64_t v = truncateToInt<int64_t>(value);
    std::memcpy(p + i * 8, &v, 8);
    return;
  }
  case DType::I32: {
    int32_t v = truncateToInt<int32_t>(value);
    std::memcpy(p + i * 4, &v, 4);
    return;
  }
  case DType::I8:
    p[i] = char(truncateToInt<int8_t>(value));
    return;
  case DType::U8:
    p[i] = char(truncateToInt<uint8_t>(value));
    return;
  case DType::I1:
    p[i] = value != 0.0f ? 1 : 0;
    return;
  }
}

int64_t loadI64(const TensorRef &t, int64_t i) {
  const char *p = static_cast<const char *>(t.data);
  switch (t.dtype) {
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p + i * 8, 8);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  case DType::I8:
    return int8_t(p[i]);
  case DType::U8:
    return uint8_t(p[i]);
  case DType::I1:
    return p[i] != 0 ? 1 : 0;
  default:
    return truncateToInt<int64_t>(loadF32(t, i));
  }
}

void storeI64(TensorRef &t, int64_t i, int64_t value) {
  char *p = static_cast<char *>(t.data);
  switch (t.dtype) {
  case DType::I64:
    std::memcpy(p + i * 8, &value, 8);
    return;
  case DType::I32: {
    // Two's complement wrap, as an integer cast in MLIR's arith.trunci.
    int32_t v = int32_t(uint32_t(uint64_t(value)));
    std::memcpy(p + i * 4, &v, 4);
    return;
  }
  case DType::I8:
  case DType::U8:
    p[i] = char(uint8_t(uint64_t(value)));
    return;
  case DType::I1:
    p[i] = value != 0 ? 1 : 0;
    return;
  case DType::F32:
    storeF32(t, i, float(value)); // correctly rounded
    return;
  case DType::F16:
  case DType::BF16: {
    // i64 -> f64 is exact below 2^53; rounding to odd on the way to f32
    // keeps the final rounding to 16 bits a single, correct one.
    float f = roundToOddF32(double(value));
    storeF32(t, i, f);
    return;
  }
  }
}

} // namespace tgc::rt
