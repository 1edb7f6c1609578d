//===- MultiTensor.h - updates of many tensors per launch -------*- C++ -*-===//
//
// The contract between the CUDA backend's multi-tensor kernels (the
// optimizer updates and casts of runtime/src/cuda/Optimizers.cu and
// Elementwise.cu, split and concat in Shape.cu) and the cost model
// (lib/Dialect/TG/IR/TGCost.cpp): the tensors' addresses and sizes travel in
// the kernel's parameters, so one launch takes up to kTensorsPerLaunch
// tensors (kPiecesPerLaunch pieces). Since CUDA 12.1 a kernel on Volta or
// later takes 32,764 bytes of parameters (4 KiB before; the builds target
// sm_80 and sm_90): 256 tensors' tables fit, so the 148 AdamW updates and
// 97 casts of GPT-2 124M are one launch each, as PyTorch's fused AdamW is.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_MULTITENSOR_H
#define TGC_SUPPORT_MULTITENSOR_H

#include <cstdint>

namespace tgc {

constexpr int64_t kTensorsPerLaunch = 256;

/// The most bytes of parameters a kernel takes (CUDA 12.1+, sm_70+).
constexpr int64_t kKernelParamBytes = 32764;

/// A split or concat of up to this many pieces is one kernel launch
/// (runtime/src/cuda/Shape.cu), the pieces' addresses in its parameters.
constexpr int64_t kPiecesPerLaunch = 16;

/// Kernel launches of a multi-tensor update of `tensors` tensors.
constexpr int64_t multiTensorLaunches(int64_t tensors) {
  return (tensors + kTensorsPerLaunch - 1) / kTensorsPerLaunch;
}

} // namespace tgc

#endif // TGC_SUPPORT_MULTITENSOR_H
