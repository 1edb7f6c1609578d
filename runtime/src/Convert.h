//===- Convert.h - correctly rounded narrowing from f64 ---------*- C++ -*-===//
//
// Converting a double (or a wide integer) to f16 or bf16 through f32 rounds
// twice, and the two roundings can differ from one. Rounding the f32 step to
// odd instead (the inexact result gets an odd last bit) makes the second,
// round-to-nearest-even step give the correctly rounded 16-bit value, since
// f32 carries more than two extra bits for either format.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CONVERT_H
#define TGC_RUNTIME_SRC_CONVERT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tgc::rt {

/// `value` rounded to f32 with round-to-odd (infinities and NaNs kept).
inline float roundToOddF32(double value) {
  float rounded = float(value);
  if (double(rounded) == value || std::isnan(value) || std::isinf(rounded))
    return rounded;
  uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof(bits));
  if (!(bits & 1u)) {
    // Round-to-nearest picked the even neighbour; the odd one lies on the
    // other side of `value`, one ulp away in magnitude.
    if (std::fabs(double(rounded)) > std::fabs(value))
      --bits;
    else
      ++bits;
  }
  std::memcpy(&rounded, &bits, sizeof(bits));
  return rounded;
}

/// Float to integer as tg.cast converts: toward zero, saturated to `Int`'s
/// range, NaN to 0.
template <typename Int> inline Int truncateToInt(double value) {
  if (std::isnan(value))
    return 0;
  double low = double(std::numeric_limits<Int>::min());
  double high = double(std::numeric_limits<Int>::max());
  if (value <= low)
    return std::numeric_limits<Int>::min();
  if (value >= high)
    return std::numeric_limits<Int>::max();
  return Int(value);
}

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_CONVERT_H
