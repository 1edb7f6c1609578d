//===- Linalg.h - the cuBLASLt GEMM the CUDA kernels share ------*- C++ -*-===//
//
// tg.matmul and attention both reduce to row-major, possibly strided-batched
// GEMMs; this is the one entry point into cuBLASLt they go through
// (implemented in Linalg.cu). Accumulation is always f32: f32 operands use
// CUBLAS_COMPUTE_32F without TF32, f16/bf16 operands are read as stored and
// the result rounded once.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CUDA_LINALG_H
#define TGC_RUNTIME_SRC_CUDA_LINALG_H

#include "CudaKernels.h"

#include <cstddef>
#include <cstdint>

namespace tgc::rt::cuda {

/// The workspace cuBLASLt may use for one GEMM.
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

/// `C[b] = alpha * op(A[b]) @ op(B[b])` for `b` in `[0, batchCount)`, all
/// row-major and dense: `op(A)` is `[m, k]` (stored `[k, m]` when
/// `transposeA`), `op(B)` is `[k, n]` (stored `[n, k]` when `transposeB`),
/// `C` is `[m, n]`. Batch entries lie `stride*` elements apart; a stride of
/// 0 shares that operand across the batch. A, B and C have type `dtype`.
struct GemmProblem {
  DType dtype = DType::F32;
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  /// 1 adds the product onto what C holds (tg.matmul_add); 0 overwrites C.
  float beta = 0.0f;
  const void *a = nullptr;
  int64_t strideA = 0;
  const void *b = nullptr;
  int64_t strideB = 0;
  void *c = nullptr;
  int64_t strideC = 0;
  int64_t batchCount = 1;
  /// C is f32 whatever `dtype` is (a 16-bit product accumulated and kept
  /// in f32).
  bool f32Output = false;
  /// The epilogue (one batch entry only): `bias` (n values, C's type)
  /// added to every row of C, then with `gelu` the tanh GELU, the
  /// pre-activation written to `aux` (C's type and layout) when not null.
  const void *bias = nullptr;
  bool gelu = false;
  void *aux = nullptr;
  /// The backward epilogues (one batch entry only, no forward epilogue):
  /// `biasGrad` receives, in C's type, the sums over the contraction of
  /// op(B) (n values, cuBLASLt's BGRADA in its swapped terms) or with
  /// `biasGradOfA` of op(A) (m values, BGRADB). With `geluInput` (C's type
  /// and layout) C becomes `product * gelu'(geluInput)` (DGELU) and
  /// `biasGrad` the sums of that over C's rows (n values, DGELU_BGRAD).
  void *biasGrad = nullptr;
  bool biasGradOfA = false;
  const void *geluInput = nullptr;
  /// When set, a problem cuBLASLt has no algorithm for sets it and enqueues
  /// nothing (the caller runs its own kernels); otherwise that is an error.
  bool *noAlgorithm = nullptr;
};

/// Enqueues `problem` on the context's stream. `workspace` holds
/// kGemmWorkspaceBytes of device memory that no other work in flight uses.
/// An empty contraction (`k == 0`) writes zeros (leaves C with beta 1).
Status gemm(Context &ctx, const GemmProblem &problem, void *workspace);

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_LINALG_H
