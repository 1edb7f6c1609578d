//===- MultiTensor.h - updates of many tensors per launch -------*- C++ -*-===//
//
// The contract between the CUDA backend's multi-tensor optimizer updates
// (runtime/src/cuda/Optimizers.cu: tg.multi_adamw_update) and the cost
// model (lib/Dialect/TG/IR/TGCost.cpp): the tensors' addresses and sizes
// travel in the kernel's parameters (4 KiB at most), so one launch takes
// up to kTensorsPerLaunch tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_MULTITENSOR_H
#define TGC_SUPPORT_MULTITENSOR_H

#include <cstdint>

namespace tgc {

constexpr int64_t kTensorsPerLaunch = 32;

/// Kernel launches of a multi-tensor update of `tensors` tensors.
constexpr int64_t multiTensorLaunches(int64_t tensors) {
  return (tensors + kTensorsPerLaunch - 1) / kTensorsPerLaunch;
}

} // namespace tgc

#endif // TGC_SUPPORT_MULTITENSOR_H
