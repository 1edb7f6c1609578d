//===- Common.cpp - shared helpers of the CPU kernels ---------------------===//
//
// Broadcasting arithmetic on shapes, the contract checks whose failures the
// kernels return as Status, strided element copies, and the f32 views that
// let every float kernel compute on plain float arrays whatever the storage
// type. See Common.h.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "tgc/Support/ShapeRules.h"

#include <algorithm>
#include <emmintrin.h>
#include <cstring>

namespace tgc::rt::cpu {

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs) {
  return shapes::broadcast(lhs, rhs);
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  return shapes::broadcastsTo(from, to);
}

Shape broadcastStrides(const Shape &from, const Shape &to) {
  Shape fromStrides = rowMajorStrides(from);
  Shape strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 || to[lead + d] == 1)
      strides[lead + d] = fromStrides[d];
  return strides;
}

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d)
    result *= shape[d];
  return result;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::string shapeString(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

void copyElements(void *dst, const Shape &dstStrides, const void *src,
                  const Shape &srcStrides, const Shape &shape,
                  size_t elementSize) {
  char *out = static_cast<char *>(dst);
  const char *in = static_cast<const char *>(src);
  if (shape.empty()) {
    std::memcpy(out, in, elementSize);
    return;
  }
  // Walk all but the innermost dimension; copy the innermost run at once
  // when both sides are contiguous along it.
  size_t rank = shape.size();
  int64_t inner = shape[rank - 1];
  int64_t dstInner = dstStrides[rank - 1], srcInner = srcStrides[rank - 1];
  Shape outer(shape.begin(), shape.end() - 1);
  Shape dstOuter(dstStrides.begin(), dstStrides.end() - 1);
  Shape srcOuter(srcStrides.begin(), srcStrides.end() - 1);
  if (inner == 0)
    return;
  forEachOffset<2>(outer, {dstOuter, srcOuter}, [&](const auto &offsets) {
    char *d = out + offsets[0] * int64_t(elementSize);
    const char *s = in + offsets[1] * int64_t(elementSize);
    if (dstInner == 1 && srcInner == 1) {
      std::memcpy(d, s, size_t(inner) * elementSize);
      return;
    }
    for (int64_t i = 0; i < inner; ++i)
      std::memcpy(d + i * dstInner * int64_t(elementSize),
                  s + i * srcInner * int64_t(elementSize), elementSize);
  });
}

Status expectShape(const TensorRef &t, const Shape &expected,
                   const char *what) {
  if (t.shape == expected)
    return Status::success();
  return Status::failure(std::string(what) + " must have shape " +
                         shapeString(expected) + ", found " +
                         shapeString(t.shape));
}

Status expectFloat(const TensorRef &t, const char *what) {
  if (isFloat(t.dtype))
    return Status::success();
  return Status::failure(std::string(what) +
                         " must have a float element type, found " +
                         dtypeName(t.dtype));
}

Status expectDType(const TensorRef &t, DType dtype, const char *what) {
  if (t.dtype == dtype)
    return Status::success();
  return Status::failure(std::string(what) + " must have element type " +
                         dtypeName(dtype) + ", found " + dtypeName(t.dtype));
}

Status expectSameDType(const TensorRef &t, const TensorRef &like,
                       const char *what) {
  return expectDType(t, like.dtype, what);
}

Status expectStoredAs(const TensorRef &t, const TensorRef &computed,
                     const char *what) {
  if (mixesInto(t.dtype, computed.dtype))
    return Status::success();
  return Status::failure(std::string(what) + " must have element type " +
                         dtypeName(computed.dtype) +
                         (computed.dtype == DType::F32 ? " (or f16 or bf16)"
                                                       : "") +
                         ", found " + dtypeName(t.dtype));
}

Status expectIndex(const TensorRef &t, const char *what) {
  if (t.dtype == DType::I32 || t.dtype == DType::I64)
    return Status::success();
  return Status::failure(std::string(what) +
                         " must have element type i32 or i64, found " +
                         dtypeName(t.dtype));
}

Status expectScalar(const TensorRef &t, const char *what) {
  TGC_RETURN_IF_ERROR(expectValid(t, what));
  if (t.numElements() == 1)
    return Status::success();
  return Status::failure(std::string(what) + " must be a scalar, found shape " +
                         shapeString(t.shape));
}

Status expectValid(const TensorRef &t, const char *what) {
  for (int64_t size : t.shape)
    if (size < 0)
      return Status::failure(std::string(what) + " has a negative size in " +
                             shapeString(t.shape));
  if (!t.data && t.numElements() > 0)
    return Status::failure(std::string(what) + " has no data");
  return Status::success();
}

bool overlaps(const TensorRef &a, const TensorRef &b) {
  if (!a.data || !b.data || a.numBytes() == 0 || b.numBytes() == 0)
    return false;
  const char *aBegin = static_cast<const char *>(a.data);
  const char *bBegin = static_cast<const char *>(b.data);
  return aBegin < bBegin + b.numBytes() && bBegin < aBegin + a.numBytes();
}

F32Operand::F32Operand(const TensorRef &t) {
  if (t.dtype == DType::F32) {
    data_ = static_cast<const float *>(t.data);
    return;
  }
  int64_t count = t.numElements();
  copy_.resize(size_t(count));
  const uint16_t *bits = static_cast<const uint16_t *>(t.data);
  if (t.dtype == DType::F16) {
    for (int64_t i = 0; i < count; ++i)
      copy_[i] = f16ToF32(bits[i]);
  } else if (t.dtype == DType::BF16) {
    for (int64_t i = 0; i < count; ++i)
      copy_[i] = bf16ToF32(bits[i]);
  } else {
    for (int64_t i = 0; i < count; ++i)
      copy_[i] = loadF32(t, i);
  }
  data_ = copy_.data();
}

F32Result::F32Result(TensorRef &t,
                     std::initializer_list<const TensorRef *> distinctFrom)
    : result_(t) {
  direct_ = t.dtype == DType::F32;
  for (const TensorRef *other : distinctFrom)
    if (direct_ && other && overlaps(t, *other))
      direct_ = false;
  if (direct_) {
    data_ = static_cast<float *>(t.data);
    return;
  }
  scratch_.assign(size_t(t.numElements()), 0.0f);
  data_ = scratch_.data();
}

void F32Result::commit() {
  if (!direct_)
    storeF32Array(scratch_.data(), int64_t(scratch_.size()), result_);
}

void storeF32Array(const float *values, int64_t count, TensorRef &t) {
  if (t.dtype == DType::F32) {
    std::memmove(t.data, values, size_t(count) * sizeof(float));
    return;
  }
  uint16_t *bits = static_cast<uint16_t *>(t.data);
  if (t.dtype == DType::F16) {
    for (int64_t i = 0; i < count; ++i)
      bits[i] = f32ToF16(values[i]);
  } else if (t.dtype == DType::BF16) {
    for (int64_t i = 0; i < count; ++i)
      bits[i] = f32ToBF16(values[i]);
  } else {
    for (int64_t i = 0; i < count; ++i)
      storeF32(t, i, values[i]);
  }
}

/// Whether any 16-bit (or 32-bit) pattern among 8 (or 4) has all of
/// `mask`'s exponent bits set, SSE2 (every x86-64 has it).
static inline __m128i allOnes(__m128i x, __m128i mask, uint16_t) {
  return _mm_cmpeq_epi16(_mm_and_si128(x, mask), mask);
}
static inline __m128i allOnes(__m128i x, __m128i mask, uint32_t) {
  return _mm_cmpeq_epi32(_mm_and_si128(x, mask), mask);
}

/// The first of 16-bit or 32-bit patterns [begin, end) whose exponent bits
/// (`mask`) are all set (NaN or infinity), or -1: 16 bytes at a time over a
/// block, searched element by element only in a block that has one.
template <typename Bits>
static int64_t firstAllOnes(const Bits *bits, Bits mask, int64_t begin,
                            int64_t end) {
  constexpr int64_t kBlock = 1024, kLanes = 16 / sizeof(Bits);
  const __m128i wide = sizeof(Bits) == 2 ? _mm_set1_epi16(int16_t(mask))
                                         : _mm_set1_epi32(int32_t(mask));
  for (int64_t block = begin; block < end; block += kBlock) {
    int64_t stop = std::min(end, block + kBlock), i = block;
    __m128i found = _mm_setzero_si128();
    for (; i + kLanes <= stop; i += kLanes)
      found = _mm_or_si128(
          found,
          allOnes(_mm_loadu_si128(reinterpret_cast<const __m128i *>(bits + i)),
                  wide, Bits()));
    bool any = _mm_movemask_epi8(found) != 0;
    for (; i < stop; ++i)
      any |= (bits[i] & mask) == mask;
    if (!any)
      continue;
    for (i = block; i < stop; ++i)
      if ((bits[i] & mask) == mask)
        return i;
  }
  return -1;
}

int64_t widenBF16(const uint16_t *from, uint32_t *to, int64_t count) {
  const __m128i mask = _mm_set1_epi16(int16_t(0x7f80)),
                zero = _mm_setzero_si128();
  __m128i found = zero;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from + i));
    found = _mm_or_si128(found, allOnes(x, mask, uint16_t()));
    // Zero below each pattern: its f32, the pattern shifted up 16 bits.
    _mm_storeu_si128(reinterpret_cast<__m128i *>(to + i),
                     _mm_unpacklo_epi16(zero, x));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(to + i + 4),
                     _mm_unpackhi_epi16(zero, x));
  }
  bool any = _mm_movemask_epi8(found) != 0;
  for (; i < count; ++i) {
    to[i] = uint32_t(from[i]) << 16;
    any |= (from[i] & 0x7f80) == 0x7f80;
  }
  return any ? firstAllOnes(from, uint16_t(0x7f80), 0, count) : -1;
}

/// The first non-finite element of [begin, end) of a float tensor, or -1.
static int64_t firstNonFiniteIn(const TensorRef &t, int64_t begin,
                                int64_t end) {
  switch (t.dtype) {
  case DType::F32:
    return firstAllOnes(static_cast<const uint32_t *>(t.data),
                        uint32_t(0x7f800000), begin, end);
  case DType::BF16:
    return firstAllOnes(static_cast<const uint16_t *>(t.data),
                        uint16_t(0x7f80), begin, end);
  case DType::F16:
    return firstAllOnes(static_cast<const uint16_t *>(t.data),
                        uint16_t(0x7c00), begin, end);
  default:
    for (int64_t i = begin; i < end; ++i)
      if (!std::isfinite(loadF32(t, i)))
        return i;
    return -1;
  }
}

int64_t firstNonFinite(const TensorRef &t) {
  int64_t count = t.numElements();
  // The first in each chunk, whichever thread finds it.
  std::vector<int64_t> bad(
      size_t((count + kElementGrain - 1) / kElementGrain), -1);
  parallelFor(count, kElementGrain, [&](int64_t begin, int64_t end) {
    bad[size_t(begin / kElementGrain)] = firstNonFiniteIn(t, begin, end);
  });
  for (int64_t i : bad)
    if (i >= 0)
      return i;
  return -1;
}

int64_t firstNonFiniteSerial(const TensorRef &t) {
  return firstNonFiniteIn(t, 0, t.numElements());
}

} // namespace tgc::rt::cpu
