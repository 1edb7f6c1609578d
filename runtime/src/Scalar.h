//===- Scalar.h - the scalar formulas both backends compute -----*- C++ -*-===//
//
// Written once, compiled for the host (the CPU kernels, and the CUDA
// emulator's build of the CUDA kernels) and for the device (nvcc): binary
// arithmetic on f32 (NaN-propagating maximum and minimum, as torch's) and
// on two's-complement integers, GELU's constants, and the elementwise
// functions of Kernels.def as types (formula::Id::value). A backend that
// computed these differently would give other bits on the same program.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_SCALAR_H
#define TGC_RUNTIME_SRC_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#ifdef __CUDACC__
#define TGC_HOST_DEVICE __host__ __device__
#else
#define TGC_HOST_DEVICE
#endif

namespace tgc::rt {

/// The bits of an f32 and back.
TGC_HOST_DEVICE inline uint32_t floatBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}
TGC_HOST_DEVICE inline float bitsFloat(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

/// 32 random bits for element `index` of a parameter at step `step`: a
/// counter-based hash (SplitMix64's finalizer over the three, mixed by two
/// odd constants), so any element's bits are known without a generator's
/// state and a resumed run draws what the uninterrupted one drew.
TGC_HOST_DEVICE inline uint32_t roundingBits(uint64_t seed, int64_t step,
                                             int64_t index) {
  uint64_t z = seed ^ (uint64_t(step) * 0x9E3779B97F4A7C15ull) ^
               (uint64_t(index) * 0xD1B54A32D192ED03ull);
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return uint32_t(z >> 32);
}

/// `x` rounded to bf16 stochastically, as an f32 whose low 16 bits are
/// zero (so the store's rounding to bf16 is exact): 16 random bits added
/// to the bits that bf16 drops, then truncated, so `x` rounds away from
/// zero with probability equal to its distance from the value below (in
/// magnitude) over the gap. Infinities and NaNs pass unchanged.
TGC_HOST_DEVICE inline float roundBf16Stochastic(float x, uint64_t seed,
                                                 int64_t step, int64_t index) {
  uint32_t bits = floatBits(x);
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return x;
  bits += roundingBits(seed, step, index) & 0xffffu;
  return bitsFloat(bits & 0xffff0000u);
}

/// tg.add, tg.sub, tg.mul, tg.div, tg.maximum, tg.minimum.
enum class BinaryKind { Add, Sub, Mul, Div, Maximum, Minimum };

/// A binary op on f32. (`a != a`: NaN, in a form every compiler and both
/// math libraries agree on.)
template <BinaryKind Kind>
TGC_HOST_DEVICE inline float applyFloat(float a, float b) {
  if constexpr (Kind == BinaryKind::Add)
    return a + b;
  else if constexpr (Kind == BinaryKind::Sub)
    return a - b;
  else if constexpr (Kind == BinaryKind::Mul)
    return a * b;
  else if constexpr (Kind == BinaryKind::Div)
    return a / b;
  else if constexpr (Kind == BinaryKind::Maximum)
    return a != a ? a : b != b ? b : (a > b ? a : b);
  else
    return a != a ? a : b != b ? b : (a < b ? a : b);
}

/// A binary op on integers in two's complement: overflow wraps instead of
/// being undefined, and INT_MIN / -1 wraps to INT_MIN. A zero divisor is
/// the caller's to handle.
template <BinaryKind Kind, typename T>
TGC_HOST_DEVICE inline T applyInt(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if constexpr (Kind == BinaryKind::Add)
    return T(U(a) + U(b));
  else if constexpr (Kind == BinaryKind::Sub)
    return T(U(a) - U(b));
  else if constexpr (Kind == BinaryKind::Mul)
    return T(U(a) * U(b));
  else if constexpr (Kind == BinaryKind::Div)
    return b == T(-1) ? T(U(0) - U(a)) : T(a / b);
  else if constexpr (Kind == BinaryKind::Maximum)
    return a > b ? a : b;
  else
    return a < b ? a : b;
}

/// The code of x on a sorted 16-entry map of 4-bit optimizer state
/// (tg.adamw_4bit_update), as torchao rounds: the largest entry <= x by a
/// 4-step search (entry 0 below them all), then one entry up when x is at
/// least half way to it. (Neither expression can contract into an FMA.)
TGC_HOST_DEVICE inline unsigned quantize4(const float *map, float x) {
  int code = x >= map[8] ? 8 : 0;
  code += x >= map[code + 4] ? 4 : 0;
  code += x >= map[code + 2] ? 2 : 0;
  code += x >= map[code + 1] ? 1 : 0;
  int up = code < 15 ? code + 1 : 15;
  float down = map[code];
  return unsigned(x - down >= (map[up] - down) * 0.5f ? up : code);
}

/// sqrt(2 / pi) and the cubic coefficient of GELU's tanh approximation.
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
/// 1 / sqrt(2) and 1 / sqrt(2 pi), for GELU's erf form.
constexpr float kSqrtHalf = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

/// The logistic function 1 / (1 + e^-x), for the formulas of Kernels.def.
TGC_HOST_DEVICE inline float logistic(float x) {
  return 1.0f / (1.0f + expf(-x));
}

/// One type per elementwise function of Kernels.def: `value(x)` for a
/// TGC_UNARY, and `Id##Grad::value(x, g)` for an activation's gradient.
namespace formula {
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  struct ID {                                                                  \
    static TGC_HOST_DEVICE float value(float x) { return VALUE; }              \
  };
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  struct ID##Grad {                                                            \
    static TGC_HOST_DEVICE float value(float x, float g) { return GRADIENT; }  \
  };
#include "tgc/format/Kernels.def"
} // namespace formula

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_SCALAR_H
