//===- Blas.h - OpenBLAS's sgemm, loaded at run time -------------*- C++ -*-===//

#ifndef TGC_RUNTIME_SRC_CPU_BLAS_H
#define TGC_RUNTIME_SRC_CPU_BLAS_H

namespace tgc::rt::cpu {

/// cblas_sgemm's signature (order, transA, transB, m, n, k, alpha, A, lda,
/// B, ldb, beta, C, ldc) with CBLAS's enum values as ints.
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
constexpr int kCblasRowMajor = 101;
constexpr int kCblasColMajor = 102;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

/// OpenBLAS's cblas_sgemm, loading OpenBLAS on first use; null when it
/// cannot load (the CPU backend's creation has reported why).
SgemmFn blasSgemm();

/// Whether OpenBLAS runs each GEMM on its own threads (TGC_GEMM=openblas,
/// for benchmarks that compare against it) rather than single-threaded per
/// tile on the backend's team. Its results may then depend on the thread
/// count.
bool blasThreaded();

/// Whether GEMMs may take OpenBLAS's small-matrix "direct" SGEMM (row-major
/// calls on an AVX-512 CPU, whatever kernel set is chosen): only when the
/// kernel set is an AVX-512 one, so that a forced narrower set (Haswell on
/// an AVX-512 machine, as scripts/test-kernel-sets.sh runs) computes what
/// it computes on the CPUs it is for.
bool blasDirectSgemm();

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_SRC_CPU_BLAS_H
