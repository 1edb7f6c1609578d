//===- BlasLt.cu - cuBLASLt's entry points, bound at run time -------------===//

#include "BlasLt.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

namespace tgc::rt::cuda {

namespace {
BlasLt table;
Status outcome;
std::once_flag bound;

#define TGC_BLASLT_ENTRIES(X)                                                  \
  X(create, cublasLtCreate)                                                    \
  X(destroy, cublasLtDestroy)                                                  \
  X(statusName, cublasLtGetStatusName)                                         \
  X(statusString, cublasLtGetStatusString)                                     \
  X(matmul, cublasLtMatmul)                                                    \
  X(heuristic, cublasLtMatmulAlgoGetHeuristic)                                 \
  X(descCreate, cublasLtMatmulDescCreate)                                      \
  X(descDestroy, cublasLtMatmulDescDestroy)                                    \
  X(descSetAttribute, cublasLtMatmulDescSetAttribute)                          \
  X(preferenceCreate, cublasLtMatmulPreferenceCreate)                          \
  X(preferenceDestroy, cublasLtMatmulPreferenceDestroy)                        \
  X(preferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute)              \
  X(layoutCreate, cublasLtMatrixLayoutCreate)                                  \
  X(layoutDestroy, cublasLtMatrixLayoutDestroy)                                \
  X(layoutSetAttribute, cublasLtMatrixLayoutSetAttribute)

Status bind() {
#ifdef TGC_CUDA_EMU_DEVICE_H
  // The emulator's cuBLASLt is linked in.
#define TGC_BLASLT_DIRECT(field, name) table.field = &name;
  TGC_BLASLT_ENTRIES(TGC_BLASLT_DIRECT)
#undef TGC_BLASLT_DIRECT
  return Status::success();
#else
  std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return Status::failure("cannot load cuBLASLt (" + name +
                           "): " + dlerror());
  const char *missing = nullptr;
#define TGC_BLASLT_SYMBOL(field, name)                                         \
  table.field = reinterpret_cast<std::remove_reference_t<decltype(             \
      table.field)>>(dlsym(library, #name));                                   \
  if (!table.field && !missing)                                                \
    missing = #name;
  TGC_BLASLT_ENTRIES(TGC_BLASLT_SYMBOL)
#undef TGC_BLASLT_SYMBOL
  if (missing)
    return Status::failure("cannot load cuBLASLt (" + name + "): it has no " +
                           missing);
  return Status::success();
#endif
}
} // namespace

Status loadBlasLt() {
  std::call_once(bound, [] { outcome = bind(); });
  return outcome;
}

const BlasLt &blasLt() { return table; }

} // namespace tgc::rt::cuda
