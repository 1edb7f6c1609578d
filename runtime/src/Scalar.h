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
#include <type_traits>

#ifdef __CUDACC__
#define TGC_HOST_DEVICE __host__ __device__
#else
#define TGC_HOST_DEVICE
#endif

namespace tgc::rt {

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
