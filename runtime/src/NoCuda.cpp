//===- NoCuda.cpp - the CUDA entry points of a build without CUDA ---------===//
//
// Compiled instead of src/cuda/ when CMake finds no CUDA compiler.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Backend.h"

namespace tgc::rt {

bool hasCudaBackend() { return false; }

Status createCudaBackend(std::unique_ptr<Backend> &) {
  return Status::failure("this build of tgc has no CUDA backend (no CUDA "
                         "compiler was found when it was built)");
}

} // namespace tgc::rt
