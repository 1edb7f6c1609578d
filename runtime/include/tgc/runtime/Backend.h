//===- Backend.h - where a program's memory lives and runs ------*- C++ -*-===//
//
// A backend owns the two memory regions of a program (one allocation each,
// of the planned sizes), copies bytes between them and the host, and runs
// instructions on views into them. The CPU backend's regions are host
// memory; the CUDA backend's are device memory.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_BACKEND_H
#define TGC_RUNTIME_BACKEND_H

#include "tgc/runtime/Program.h"

#include <memory>

namespace tgc::rt {

class Backend {
public:
  virtual ~Backend();

  /// "cpu", or "cuda (NVIDIA H100 80GB HBM3)".
  virtual std::string describe() const = 0;
  /// Whether region memory is host memory (then no copies are needed).
  virtual bool hostAccessible() const = 0;

  /// Allocates both regions, zero-filled.
  virtual Status allocate(int64_t persistentBytes, int64_t arenaBytes) = 0;
  virtual uint8_t *persistentBase() = 0;
  virtual uint8_t *arenaBase() = 0;

  /// Copies between host memory and region memory. They may be asynchronous
  /// with respect to the host until synchronize().
  virtual Status upload(void *region, const void *host, size_t bytes) = 0;
  virtual Status download(void *host, const void *region, size_t bytes) = 0;
  virtual Status synchronize() = 0;

  /// Runs one instruction on views into the regions.
  virtual Status execute(const Program &program, const Instruction &inst,
                         std::vector<TensorRef> &operands,
                         std::vector<TensorRef> &results) = 0;
};

/// The reference backend: host memory and the kernels of CpuKernels.h.
std::unique_ptr<Backend> createCpuBackend();

/// Whether this build has the CUDA backend.
bool hasCudaBackend();

/// The CUDA backend on device 0; fails with a clear message when the build
/// has no CUDA backend, or the machine no usable GPU.
Status createCudaBackend(std::unique_ptr<Backend> &backend);

} // namespace tgc::rt

#endif // TGC_RUNTIME_BACKEND_H
