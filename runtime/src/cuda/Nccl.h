//===- Nccl.h - NCCL collectives for the CUDA backend -----------*- C++ -*-===//
//
// The CUDA backend's collectives on device memory through NCCL, loaded with
// dlopen("libnccl.so.2") the first time a program runs a collective, so a
// build or a machine without NCCL still runs (the backend then stages the
// collectives through host memory and Open MPI). The NCCL communicator is
// bootstrapped over the job's Communicator: rank 0 creates the unique id
// and broadcasts it. On the CUDA emulator, NCCL is the emulator's stand-in
// between the job's processes (runtime/cuda-emu/Nccl.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_NCCL_H
#define TGC_RUNTIME_CUDA_NCCL_H

#include "tgc/runtime/Communicator.h"

#include <cuda_runtime.h>

#include <memory>

namespace tgc::rt::cuda {

class Nccl {
public:
  /// Loads NCCL and joins every rank of `comm` on the current device.
  /// Collective: every rank calls it at the same point; all succeed, or
  /// all fail (with the first rank's reason).
  static Status create(Communicator &comm, std::unique_ptr<Nccl> &nccl);
  ~Nccl();

  /// Runs tg.all_reduce, tg.reduce_scatter or tg.all_gather on device
  /// tensors, queued on `stream`.
  Status run(const Instruction &inst, const TensorRef &in, TensorRef &out,
             cudaStream_t stream);

  struct Api;

private:
  std::unique_ptr<Api> api;
  void *comm = nullptr;
};

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_CUDA_NCCL_H
