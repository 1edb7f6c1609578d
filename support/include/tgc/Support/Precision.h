//===- Precision.h - where a float op may mix precisions, once --*- C++ -*-===//
//
// The rule that lets a cast fold into the op beside it (tg-fold-casts),
// read by the dialect's verifiers, the runtime's loader (Verify.cpp) and
// both backends' kernels: an op that computes in f32 may read an operand
// stored in f16 or bf16 (widened exactly on load, as a tg.cast to f32
// would) or write a result in f16 or bf16 (rounded once to nearest even
// on store, as a tg.cast from f32 would). Which operands and results of
// which ops may do so is each op's own rule (its description says).
// Header only and free of MLIR, like ShapeRules.h.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_PRECISION_H
#define TGC_SUPPORT_PRECISION_H

namespace tgc::precision {

/// A tensor's element type, as far as the rule tells them apart.
enum class Float { F32, F16, BF16, Other };

/// Whether a value stored as `stored` may stand for one of `computed` in
/// an op that computes in `computed`: the same type, or a 16-bit float
/// beside an f32 computation.
constexpr bool mixes(Float stored, Float computed) {
  return stored != Float::Other && computed != Float::Other &&
         (stored == computed ||
          (computed == Float::F32 &&
           (stored == Float::F16 || stored == Float::BF16)));
}

/// The wider of two types that mix (f32 beside a 16-bit float); `Other`
/// when they do not.
constexpr Float wider(Float a, Float b) {
  if (mixes(a, b))
    return b;
  if (mixes(b, a))
    return a;
  return Float::Other;
}

/// Whether a binary op's operands of different types mix: a 16-bit float
/// beside an f32 operand, with an f32 result.
constexpr bool mixedOperands(Float lhs, Float rhs, Float result) {
  return lhs != rhs && wider(lhs, rhs) == result && result != Float::Other;
}

} // namespace tgc::precision

#endif // TGC_SUPPORT_PRECISION_H
