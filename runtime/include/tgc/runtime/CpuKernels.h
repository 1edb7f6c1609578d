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
// Every kernel returns a Status: it fails, without writing past any buffer,
// on an index out of range (embedding, cross-entropy targets), an integer
// division by zero, or operands whose shapes or element types contradict the
// op's contract. Elementwise kernels and the optimizer updates are correct
// when a result is the very buffer of an operand of the same shape (updates
// write in place of the parameter and its state).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPUKERNELS_H
#define TGC_RUNTIME_CPUKERNELS_H

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

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// tg.linear: `input [B..., M, K] x weight [K, N] + bias [N]` accumulated in
/// f32, with `gelu` through GELU (tanh) and the sum stored in
/// `preactivation`; one rounding into the result's type (the bias's: the
/// operands' or f32).
Status linear(Context &ctx, const TensorRef &input, const TensorRef &weight,
              const TensorRef &bias, bool gelu, TensorRef &result,
              TensorRef *preactivation);

/// tg.matmul: `[B..., M, K] x [B..., K, N] -> [B..., M, N]` with broadcast
/// batch dimensions; OpenBLAS sgemm, f32 accumulation.
Status matmul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, bool transposeLhs,
              bool transposeRhs, TensorRef &result);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Binary arithmetic with NumPy broadcasting, on f32/f16/bf16 or i32/i64.
Status add(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);
Status sub(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);
Status mul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);
/// Integer division truncates toward zero; a zero divisor is an error.
Status div(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);
/// A NaN operand gives NaN (as torch.maximum / torch.minimum).
Status maximum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);
Status minimum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result);

/// The elementwise functions of Kernels.def (TGC_UNARY: `function`;
/// TGC_ACTIVATION: also `function##Grad` from the operand and the incoming
/// gradient); the result has the operand's type.
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  Status FUNCTION(Context &ctx, const TensorRef &input, TensorRef &result);
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  Status FUNCTION##Grad(Context &ctx, const TensorRef &input,                  \
                        const TensorRef &grad, TensorRef &result);
#include "tgc/format/Kernels.def"

/// Unary float math written by hand (vectorized on the CPU).
Status exp(Context &ctx, const TensorRef &input, TensorRef &result);
Status log(Context &ctx, const TensorRef &input, TensorRef &result);
Status tanh(Context &ctx, const TensorRef &input, TensorRef &result);
/// GELU, tanh approximation; geluExact: the erf form (tg.gelu {exact}).
Status gelu(Context &ctx, const TensorRef &input, TensorRef &result);
Status geluExact(Context &ctx, const TensorRef &input, TensorRef &result);

/// tg.where: `condition ? lhs : rhs` with broadcasting; condition is i1.
Status where(Context &ctx, const TensorRef &condition, const TensorRef &lhs,
             const TensorRef &rhs, TensorRef &result);

/// tg.cast between any two element types: float to float rounds to nearest
/// even, float to integer truncates toward zero (saturating, NaN to 0),
/// integer to integer wraps, anything to i1 is `x != 0`.
Status cast(Context &ctx, const TensorRef &input, TensorRef &result);

/// Gradients of the elementwise activations.
Status geluGrad(Context &ctx, const TensorRef &input, const TensorRef &grad,
                TensorRef &result);
Status geluExactGrad(Context &ctx, const TensorRef &input, const TensorRef &grad,
                     TensorRef &result);
/// `output` is tanh's result.
Status tanhGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                TensorRef &result);

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

Status softmax(Context &ctx, const TensorRef &input, int64_t axis, TensorRef &result);
Status softmaxGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                   int64_t axis, TensorRef &result);

Status layerNorm(Context &ctx, const TensorRef &input, const TensorRef &weight,
                 const TensorRef &bias, double epsilon, TensorRef &result);
Status layerNormGrad(Context &ctx, const TensorRef &input, const TensorRef &weight,
                     const TensorRef &grad, double epsilon,
                     TensorRef &inputGrad, TensorRef &weightGrad,
                     TensorRef &biasGrad);

/// Fails when an index lies outside `[0, V)`; nothing is written then.
Status embedding(Context &ctx, const TensorRef &table, const TensorRef &indices,
                 TensorRef &result);
Status embeddingGrad(Context &ctx, const TensorRef &indices, const TensorRef &grad,
                     TensorRef &result);

/// `scale` defaults to `1 / sqrt(D)`. `keyMask` (null: none) is an index
/// tensor [P..., Tk] over a prefix P... of the batch dimensions; keys where
/// it is 0 are not attended to, and a row that sees no key yields 0.
Status attention(Context &ctx, const TensorRef &query, const TensorRef &key,
                 const TensorRef &value, const TensorRef *keyMask, bool causal,
                 std::optional<double> scale, TensorRef &result);
Status attentionGrad(Context &ctx, const TensorRef &query, const TensorRef &key,
                     const TensorRef &value, const TensorRef &output,
                     const TensorRef &grad, const TensorRef *keyMask,
                     bool causal, std::optional<double> scale,
                     TensorRef &queryGrad,
                     TensorRef &keyGrad, TensorRef &valueGrad);

/// Fails when a target that is not `ignoreIndex` lies outside `[0, C)`.
Status crossEntropy(Context &ctx, const TensorRef &logits, const TensorRef &targets,
                    int64_t ignoreIndex, TensorRef &result);
Status crossEntropyGrad(Context &ctx, const TensorRef &logits, const TensorRef &targets,
                        const TensorRef &grad, int64_t ignoreIndex,
                        TensorRef &result);
/// The number of targets that are not `ignoreIndex`, as a float scalar.
Status targetCount(Context &ctx, const TensorRef &targets, int64_t ignoreIndex,
                   TensorRef &result);

//===----------------------------------------------------------------------===//
// Shape ops and constants
//===----------------------------------------------------------------------===//

Status reshape(Context &ctx, const TensorRef &input, TensorRef &result);
Status transpose(Context &ctx, const TensorRef &input,
                 const std::vector<int64_t> &permutation, TensorRef &result);
Status slice(Context &ctx, const TensorRef &input, const std::vector<int64_t> &offsets,
             TensorRef &result);
Status sliceGrad(Context &ctx, const TensorRef &grad, const std::vector<int64_t> &offsets,
                 TensorRef &result);
/// The pieces' sizes along `axis` come from their shapes.
Status split(Context &ctx, const TensorRef &input, int64_t axis,
             std::vector<TensorRef> &results);
Status concat(Context &ctx, const std::vector<TensorRef> &inputs, int64_t axis,
              TensorRef &result);
Status broadcastTo(Context &ctx, const TensorRef &input, TensorRef &result);
/// tg.constant: `size` bytes in the result's layout.
Status constant(Context &ctx, const void *bytes, size_t size, TensorRef &result);
/// tg.fill: `value` converted as tg.cast converts.
Status fill(Context &ctx, double value, TensorRef &result);

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Status reduceSum(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                 bool keepDims, TensorRef &result);
Status reduceMean(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                  bool keepDims, TensorRef &result);
/// A NaN in a reduced group gives NaN (as torch.amax).
Status reduceMax(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                 bool keepDims, TensorRef &result);
Status reduceMaxGrad(Context &ctx, const TensorRef &input, const TensorRef &output,
                     const TensorRef &grad, const std::vector<int64_t> &axes,
                     bool keepDims, TensorRef &result);
/// The adjoint of broadcastTo.
Status sumTo(Context &ctx, const TensorRef &input, TensorRef &result);

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// `lr` is an f32 scalar, `step` an i64 scalar (1-based). Without momentum
/// `momentumBuffer` and `newMomentumBuffer` are null.
Status sgdUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                 const TensorRef &lr, const TensorRef &step,
                 const TensorRef *momentumBuffer, double momentum,
                 double dampening, double weightDecay, bool nesterov,
                 TensorRef &newParam, TensorRef *newMomentumBuffer);
Status adamwUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                   const TensorRef &expAvg, const TensorRef &expAvgSq,
                   const TensorRef &lr, const TensorRef &step, double beta1,
                   double beta2, double eps, double weightDecay,
                   TensorRef &newParam, TensorRef &newExpAvg,
                   TensorRef &newExpAvgSq);
/// 8-bit state (tg.adamw_8bit_update, tg.sgd_8bit_update): the largest
/// block one absmax scales.
constexpr int64_t kMaxQuantBlock = 4096;
/// An error unless `blockSize` is a power of two in [1, kMaxQuantBlock].
Status checkQuantBlockSize(int64_t blockSize);

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
/// tg.adamw_update's and tg.sgd_update's attributes.
struct AdamWOptions {
  double beta1, beta2, eps, weightDecay;
};
struct SGDOptions {
  double momentum, dampening, weightDecay;
  bool nesterov;
};
Status adamw8bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step, const QuantizedStateRefs &expAvg,
                       const QuantizedStateRefs &expAvgSq,
                       const AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam);
Status sgd8bitUpdate(Context &ctx, const TensorRef &param,
                     const TensorRef &grad, const TensorRef &lr,
                     const TensorRef &step,
                     const QuantizedStateRefs &momentumBuffer,
                     const SGDOptions &options, int64_t blockSize,
                     TensorRef &newParam);
/// tg.adafactor_update's attributes, shared by both backends.
struct AdafactorOptions {
  double decayRate = -0.8, clipThreshold = 1.0, eps1 = 1e-30, eps2 = 1e-3;
  double weightDecay = 0.0;
  bool relativeStep = true, scaleParameter = true, warmupInit = false;
};
/// `state` is {row, col} for a parameter of rank >= 2, else {v}.
Status adafactorUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                       const std::vector<TensorRef> &state,
                       const TensorRef &lr, const TensorRef &step,
                       const AdafactorOptions &options, TensorRef &newParam,
                       std::vector<TensorRef> &newState);
/// The 2-norm of all elements of all inputs, into an f32 scalar.
Status globalNorm(Context &ctx, const std::vector<TensorRef> &inputs, TensorRef &result);

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

Status scaleLoss(Context &ctx, const TensorRef &loss, const TensorRef &scale,
                 TensorRef &result);
Status unscale(Context &ctx, const TensorRef &grad, const TensorRef &scale,
               TensorRef &result);
/// Writes an i1 scalar: whether no element is an infinity or a NaN.
Status allFinite(Context &ctx, const std::vector<TensorRef> &inputs, TensorRef &result);
Status updateLossScale(Context &ctx, const TensorRef &scale, const TensorRef &growthTracker,
                       const TensorRef &foundFinite, double growthFactor,
                       double backoffFactor, int64_t growthInterval,
                       TensorRef &newScale, TensorRef &newGrowthTracker);

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_CPUKERNELS_H
