//===- CudaKernels.h - the CUDA kernels of the tg ops -----------*- C++ -*-===//
//
// One launcher per tg op, declared with the CPU's kernels in
// tgc/runtime/Kernels.inc: the same signatures, with this backend's
// Context first. TensorRef data pointers are device pointers into the
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
  /// kReduceCounters zeroed counters (device memory) for reductions whose
  /// blocks combine their partial sums: the last block of a column tile to
  /// finish adds them and sets its counter back to zero. Null: those
  /// reductions take the one-pass kernels.
  unsigned *reduceCounters = nullptr;
  static constexpr int64_t kReduceCounters = 4096;

  /// The program's constants in device memory, uploaded once (a copy from
  /// pageable host memory waits for the stream: it must not happen in a
  /// step), and the host bytes they were copied from.
  void *constants = nullptr;
  const void *constantsSource = nullptr;
  size_t constantsBytes = 0;
  /// Counts the times the workspace or the constants moved: a graph
  /// captured before a move holds their old addresses.
  uint64_t moves = 0;
  /// Whether work is being captured into a graph (nothing may wait for
  /// the stream or reach the host).
  bool capturing = false;

  /// Ensures the workspace holds at least `bytes`.
  Status reserveWorkspace(size_t bytes);
  /// Ensures `constants` holds a device copy of `bytes` (the program's
  /// constant blob); a no-op after the first call for the same blob.
  Status uploadConstants(const void *bytes, size_t size);
};

/// Returns a failed Status naming `what` when `error` (a cudaError_t) is
/// not cudaSuccess.
Status check(int error, const char *what);


// Every kernel's signature (tgc/runtime/Kernels.inc, as the CPU's).
#include "tgc/runtime/Kernels.inc"

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_CUDAKERNELS_H
