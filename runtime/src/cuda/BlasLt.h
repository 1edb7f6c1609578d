//===- BlasLt.h - cuBLASLt's entry points, bound at run time ----*- C++ -*-===//
//
// The CUDA backend calls cuBLASLt through this table, filled the first time
// a GPU is opened (dlopen of libcublasLt.so.<major>), so that a process
// that runs on the CPU never loads the library: its static initialisers
// alone cost about 50 ms a process warm, and reading it from a cold disk
// several hundred more. On the CUDA emulator the table holds the
// emulator's functions.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CUDA_BLASLT_H
#define TGC_RUNTIME_SRC_CUDA_BLASLT_H

#include "tgc/runtime/Tensor.h"

#include <cublasLt.h>

namespace tgc::rt::cuda {

struct BlasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusName) statusName = nullptr;
  decltype(&cublasLtGetStatusString) statusString = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSetAttribute = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preferenceCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preferenceDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preferenceSetAttribute =
      nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSetAttribute = nullptr;
};

/// Binds the table once per process (later calls return the first
/// outcome); an error names the library and dlerror's reason.
Status loadBlasLt();

/// The bound table: only after loadBlasLt succeeded.
const BlasLt &blasLt();

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_BLASLT_H
