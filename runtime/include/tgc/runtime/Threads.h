//===- Threads.h - the CPU backend's thread count and BLAS --------*- C++ -*-===//
//
// How many threads the CPU kernels use. The kernels run their loops on an
// OpenMP team of that size, GEMMs included: a GEMM is cut into tiles fixed
// by its shape, each a single-threaded OpenBLAS call on one of the team's
// threads, so OpenBLAS starts no threads of its own. Every kernel's result
// is independent of the count (loops split into fixed chunks whose partial
// sums are combined in chunk order; GEMM tiles each compute their elements
// whole), on every OpenBLAS kernel set: OpenBLAS's own threaded SGEMM is not
// (on its Haswell and Zen kernels the split changes the rounding).
//
// OpenBLAS is loaded at run time rather than linked: its dynamic-arch
// build picks its kernels when it loads, from the CPU model, and falls back
// to its slowest x86-64 kernels (Prescott, SSE3) on models it does not
// know, which is what a virtual machine's CPU often is. Loading it here
// lets the runtime name the kernels from the instruction sets the CPU
// reports (SkylakeX for AVX-512, Haswell for AVX2 and FMA) when the user
// has not set OPENBLAS_CORETYPE.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_THREADS_H
#define TGC_RUNTIME_THREADS_H

#include "tgc/runtime/Tensor.h"

#include <string>

namespace tgc::rt {

/// The cores this process may run on (its CPU affinity mask).
int availableCores();

/// Sets the thread count of the CPU kernels. Fails on a
/// count below 1 or above availableCores(), naming both.
Status setCpuThreads(int threads);

/// The thread count in effect (availableCores() until set).
int cpuThreads();

/// Loads OpenBLAS (once); fails with the loader's message when it cannot.
Status loadBlas();

/// OpenBLAS's name for the kernels it runs ("SkylakeX"), and whether the
/// runtime chose them (rather than OpenBLAS's own detection or the user's
/// OPENBLAS_CORETYPE). Empty before loadBlas succeeds.
std::string blasCoreName();
bool blasCoreChosenByRuntime();

/// The instruction set the vectorized exp/log/tanh run on ("avx512f",
/// "avx2", "sse2" or "libm"): the best the CPU has, or TGC_VECMATH's choice.
std::string vectorMathIsa();

} // namespace tgc::rt

#endif // TGC_RUNTIME_THREADS_H
