//===- CudaKernels.h - the CUDA kernels of the tg ops -----------*- C++ -*-===//
//
// One launcher per tg op, with the signatures of CpuKernels.h plus the
// Context they run in. TensorRef data pointers are device pointers into the
// backend's regions. Launchers enqueue work on the context's stream and
// return without waiting; a failed launch or CUDA call is a failed Status.
// f16 and bf16 are stored as 16 bits and computed in f32; reductions
// accumulate in f32. The loader has verified shapes, element types and
// attributes against each kernel's signature before anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CUDA_CUDAKERNELS_H
#define TGC_RUNTIME_SRC_CUDA_CUDAKERNELS_H

#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Tensor.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace tgc::rt::cuda {

/// What a kernel that finds bad data records (the first one wins): an
/// error code of Common.cuh, and where and what the bad value was.
struct DeviceError {
  int code = 0;
  int reserved = 0;
  long long position = -1; // element index in the operand, or -1
  long long value = 0;     // the bad value
  long long limit = 0;     // e.g. the table size an index must be below
};

/// What every launcher needs: the stream work goes on, the cuBLASLt handle
/// and a device workspace for GEMMs and scratch (grown on demand), and a
/// small pinned host buffer for scalars read back (e.g. error flags).
struct Context {
  void *stream = nullptr;          // cudaStream_t
  void *blasLt = nullptr;          // cublasLtHandle_t
  void *workspace = nullptr;       // device scratch
  size_t workspaceBytes = 0;
  DeviceError *deviceError = nullptr; // set by kernels on bad data
  DeviceError *hostError = nullptr;   // pinned host copy of it
  /// f32 GEMMs may run on TF32 tensor cores (the program's allow_tf32).
  bool allowTF32 = false;
  /// The apply predicate (device memory) of the optimizer update being
  /// launched, or null: its kernels return at once when it is false.
  const uint8_t *apply = nullptr;

  /// The program's constants in device memory, uploaded once (a copy from
  /// pageable host memory waits for the stream: it must not happen in a
  /// step), and the host bytes they were copied from.
  void *constants = nullptr;
  const void *constantsSource = nullptr;
  size_t constantsBytes = 0;

  /// Ensures the workspace holds at least `bytes`.
  Status reserveWorkspace(size_t bytes);
  /// Ensures `constants` holds a device copy of `bytes` (the program's
  /// constant blob); a no-op after the first call for the same blob.
  Status uploadConstants(const void *bytes, size_t size);
};

/// Returns a failed Status naming `what` when `error` (a cudaError_t) is
/// not cudaSuccess.
Status check(int error, const char *what);


//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// tg.matmul: `[B..., M, K] x [B..., K, N] -> [B..., M, N]` with broadcast
/// batch dimensions; OpenBLAS sgemm, f32 accumulation.
Status matmul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, bool transposeLhs,
              bool transposeRhs, TensorRef &result);

/// tg.linear: `input [B..., M, K] x weight [K, N] + bias [N]`, with `gelu`
/// through GELU and the sum written to `preactivation`: one cuBLASLt GEMM
/// with its bias (GELU_AUX) epilogue, or the GEMM and one pass where the
/// epilogue cannot take the layout. 16-bit operands may give an f32 result.
Status linear(Context &ctx, const TensorRef &input, const TensorRef &weight,
              const TensorRef &bias, bool gelu, TensorRef &result,
              TensorRef *preactivation);

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

/// The elementwise functions of Kernels.def, as CpuKernels.h declares them.
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  Status FUNCTION(Context &ctx, const TensorRef &input, TensorRef &result);
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  Status FUNCTION##Grad(Context &ctx, const TensorRef &input,                  \
                        const TensorRef &grad, TensorRef &result);
#include "tgc/format/Kernels.def"

/// Unary float math written by hand; the result has the operand's type.
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
Status geluExactGrad(Context &ctx, const TensorRef &input,
                     const TensorRef &grad, TensorRef &result);
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

/// `scale` defaults to `1 / sqrt(D)`; `keyMask` (null: none) hides the
/// keys where it is 0, as cpu::attention.
Status attention(Context &ctx, const TensorRef &query, const TensorRef &key,
                 const TensorRef &value, const TensorRef *keyMask, bool causal,
                 std::optional<double> scale, TensorRef &result);
Status attentionGrad(Context &ctx, const TensorRef &query, const TensorRef &key,
                     const TensorRef &value, const TensorRef &output,
                     const TensorRef &grad, const TensorRef *keyMask,
                     bool causal, std::optional<double> scale,
                     TensorRef &queryGrad, TensorRef &keyGrad,
                     TensorRef &valueGrad);

/// Fails when a target that is not `ignoreIndex` lies outside `[0, C)`.
Status crossEntropy(Context &ctx, const TensorRef &logits, const TensorRef &targets,
                    int64_t ignoreIndex, TensorRef &result);
Status crossEntropyGrad(Context &ctx, const TensorRef &logits, const TensorRef &targets,
                        const TensorRef &grad, int64_t ignoreIndex,
                        TensorRef &result);
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
/// tg.constant: `size` bytes of device memory (in the program's constants,
/// uploaded once by Context::uploadConstants) in the result's layout.
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
/// tg.adafactor_update; `state` is {row, col} for rank >= 2, else {v}.
Status adafactorUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad,
                       const std::vector<TensorRef> &state,
                       const TensorRef &lr, const TensorRef &step,
                       const cpu::AdafactorOptions &options,
                       TensorRef &newParam, std::vector<TensorRef> &newState);
Status adamw8bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step,
                       const cpu::QuantizedStateRefs &expAvg,
                       const cpu::QuantizedStateRefs &expAvgSq,
                       const cpu::AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam);
Status sgd8bitUpdate(Context &ctx, const TensorRef &param,
                     const TensorRef &grad, const TensorRef &lr,
                     const TensorRef &step,
                     const cpu::QuantizedStateRefs &momentumBuffer,
                     const cpu::SGDOptions &options, int64_t blockSize,
                     TensorRef &newParam);
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


} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_CUDAKERNELS_H
