//===- Threads.h - the CPU backend's thread count and BLAS --------*- C++ -*-===//
//
// How many threads the CPU kernels and OpenBLAS use. One number governs
// both: the kernels run their loops on an OpenMP team of that size and
// OpenBLAS its GEMMs on as many threads, one after the other, so the two
// never run at once and never oversubscribe the cores. Every kernel's
// result is independent of the count (loops split into fixed chunks whose
// partial sums are combined in chunk order).
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

/// Sets the thread count of the CPU kernels and of OpenBLAS. Fails on a
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

} // namespace tgc::rt

#endif // TGC_RUNTIME_THREADS_H
