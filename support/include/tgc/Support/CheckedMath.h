//===- CheckedMath.h - overflow-checked sizes -------------------*- C++ -*-===//
//
// One set of size computations for every reader of the runtime (the .tgx
// loader, safetensors, token files) and for the compiler's shapes and byte
// counts: element counts, byte counts and offsets that refuse negative
// inputs and overflow instead of wrapping. Header-only and dependency-free,
// so the runtime (which links no MLIR) and the compiler share it.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_CHECKEDMATH_H
#define TGC_SUPPORT_CHECKEDMATH_H

#include <cstdint>
#include <optional>

namespace tgc {

/// The largest tensor tgc accepts, in bytes (256 TiB): larger than any
/// device's memory, and small enough that sums of thousands of such sizes
/// cannot overflow 63 bits.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// a + b for a, b >= 0; nullopt on a negative input or overflow.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}

/// a * b for a, b >= 0; nullopt on a negative input or overflow.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t product;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// The product of `shape`'s dimensions; nullopt when one is negative or the
/// product overflows. `Range` is any range of integers (std::vector,
/// llvm::ArrayRef, a FlatBuffers vector).
template <typename Range>
std::optional<int64_t> checkedNumElements(const Range &shape) {
  int64_t count = 1;
  for (auto dim : shape) {
    std::optional<int64_t> next = checkedMul(count, int64_t(dim));
    if (!next)
      return std::nullopt;
    count = *next;
  }
  return count;
}

/// The bytes of a tensor of `shape` with `elementBytes`-byte elements;
/// nullopt when a dimension is negative or the size exceeds `limit`.
template <typename Range>
std::optional<int64_t> checkedTensorBytes(const Range &shape,
                                          int64_t elementBytes,
                                          int64_t limit = kMaxTensorBytes) {
  std::optional<int64_t> count = checkedNumElements(shape);
  if (!count)
    return std::nullopt;
  std::optional<int64_t> bytes = checkedMul(*count, elementBytes);
  if (!bytes || *bytes > limit)
    return std::nullopt;
  return bytes;
}

inline bool isPowerOfTwo(int64_t value) {
  return value > 0 && (value & (value - 1)) == 0;
}

/// `value` rounded up to a multiple of `alignment` (a power of two);
/// nullopt on overflow or a bad alignment.
inline std::optional<int64_t> checkedAlignUp(int64_t value,
                                             int64_t alignment) {
  if (!isPowerOfTwo(alignment))
    return std::nullopt;
  std::optional<int64_t> bumped = checkedAdd(value, alignment - 1);
  if (!bumped)
    return std::nullopt;
  return *bumped & ~(alignment - 1);
}

} // namespace tgc

#endif // TGC_SUPPORT_CHECKEDMATH_H
