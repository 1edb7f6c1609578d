//===- CpuKernels.h - reference kernels of the CPU backend ------*- C++ -*-===//
//
// One function per tg op: the CPU backend's kernels, which are also the
// reference that every other backend is tested against. Their semantics are
// those written in the op descriptions of TGOps.td. Operands are views of
// dense row-major tensors; results are views preallocated by the caller with
// the shape and element type the op's result type gives. Attributes are plain
// parameters. f16 and bf16 are stored as 16 bits, computed in f32 and rounded
// once on store; sums are accumulated in f32 or wider.
//
// The operands' shapes and element types and the attributes' values are the
// loader's to check (format/Verify.cpp, from the ODS, on every program a
// Session runs): a kernel trusts them, and called with operands the loader
// would refuse it computes nothing meaningful. Every kernel returns a Status:
// it fails, without writing past any buffer, on data it reads — an index out of
// range (embedding, cross-entropy targets), an integer division by zero, a step
// below one — and on what the plan decides, such as results overlapping
// operands where the kernel cannot compute in place. Elementwise kernels and
// the optimizer updates are correct when a result is the very buffer of an
// operand of the same shape (updates write in place of the parameter and its
// state).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPUKERNELS_H
#define TGC_RUNTIME_CPUKERNELS_H

#include "tgc/runtime/Quant4bit.h"
#include "tgc/runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tgc::rt::cpu {

/// What a CPU kernel runs in, the leading parameter of every kernel as of
/// every CUDA launcher (cuda::Context), so that one dispatch
/// (runtime/src/Dispatch.h) calls both backends' kernels alike. The thread
/// team is per process (Threads.h), so there is nothing in it yet; what
/// a kernel would otherwise find in globals (scratch, a cancellation flag)
/// belongs here.
struct Context {};

/// 8-bit state (tg.adamw_8bit_update, tg.sgd_8bit_update): the largest
/// block one absmax scales.
constexpr int64_t kMaxQuantBlock = 4096;

/// A sorted 256-entry quantization map, ready to quantize: the code of `x`
/// is the number of midpoints (map[i] + map[i+1]) / 2 below `x` (so the
/// nearest entry, ties to the lower); with `isSigned`, a negative `x`
/// never lands on a non-negative code. A table over the top 12 bits of
/// `x` (sign, exponent, 3 mantissa bits) bounds that count, so quantizing
/// compares `x` with the few midpoints inside its bucket.
struct QuantCodebook {
  float map[256];
  float midpoints[255];
  uint8_t low[4096], high[4096];

  void build(const float *map);
  uint8_t quantize(float x, bool isSigned) const;
};
/// One blockwise-quantized state tensor of an 8-bit update, in
/// bitsandbytes' layout: `codes` (ui8, the parameter's shape), one f32
/// `absmax` per block, and the 256-entry f32 `map` the codes index; the
/// update writes `newCodes` and `newAbsmax` (in place of the old ones).
struct QuantizedStateRefs {
  TensorRef codes, absmax, map, newCodes, newAbsmax;
};
/// tg.adamw_update's and tg.adamw_8bit_update's attributes: with a
/// non-zero rounding seed, a bf16 parameter is rounded stochastically
/// (rt::roundBf16Stochastic). `roundingPart`, when not null, is the
/// update's part number (an i64 scalar in the backend's memory): the
/// operands are part p of a whole split into equal parts of their element
/// count n, and element i rounds with the bits of index p * n + i.
struct AdamWOptions {
  double beta1, beta2, eps, weightDecay;
  int64_t roundingSeed = 0;
  const int64_t *roundingPart = nullptr;
};
struct SGDOptions {
  double momentum, dampening, weightDecay;
  bool nesterov;
};

/// tg.adafactor_update's attributes, shared by both backends.
struct AdafactorOptions {
  double decayRate = -0.8, clipThreshold = 1.0, eps1 = 1e-30, eps2 = 1e-3;
  double weightDecay = 0.0;
  bool relativeStep = true, scaleParameter = true, warmupInit = false;
};

// Every kernel's signature, shared with the CUDA backend.
#include "tgc/runtime/Kernels.inc"

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_CPUKERNELS_H
