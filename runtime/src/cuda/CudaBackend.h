//===- CudaBackend.h - the CUDA backend's internals -------------*- C++ -*-===//

#ifndef TGC_RUNTIME_SRC_CUDA_CUDABACKEND_H
#define TGC_RUNTIME_SRC_CUDA_CUDABACKEND_H

#include "CudaKernels.h"
#include "tgc/runtime/Program.h"

namespace tgc::rt::cuda {

/// Enqueues the launcher of `inst` on views into device memory.
Status execute(Context &ctx, const Program &program, const Instruction &inst,
               std::vector<TensorRef> &operands,
               std::vector<TensorRef> &results);

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_CUDABACKEND_H
