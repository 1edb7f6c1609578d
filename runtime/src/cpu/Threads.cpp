//===- Threads.cpp - thread count of the CPU kernels and OpenBLAS --------===//
//
// See tgc/runtime/Threads.h. OpenBLAS is opened with dlopen: its OpenMP
// build first (Debian's libopenblas0-openmp), which runs on the calling
// thread when called inside the kernels' OpenMP team and starts no pool of
// its own; its pthread build otherwise. Either is set to one thread: the
// backend's GEMM (gemmF32) runs its tiles on its own team. TGC_GEMM=openblas
// gives OpenBLAS the thread count instead, for benchmarks.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Threads.h"

#include "Blas.h"
#include "VecMath.h"

#include <dlfcn.h>
#include <sched.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tgc::rt {

namespace {

struct OpenBlas {
  cpu::SgemmFn sgemm = nullptr;
  void (*setThreads)(int) = nullptr;
  char *(*coreName)() = nullptr;
  bool chosen = false;
  /// TGC_GEMM=openblas: OpenBLAS threads each GEMM itself.
  bool threaded = false;
  /// The kernel set is an AVX-512 one (see blasDirectSgemm).
  bool avx512 = false;
  Status status = Status::failure("OpenBLAS was not loaded");
};

OpenBlas &openBlas() {
  static OpenBlas blas;
  return blas;
}

int threadCount = 0;

/// OpenBLAS's name for the best kernels of this CPU's instruction sets,
/// or null when OpenBLAS's own detection should stand.
const char *coreTypeFromIsa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return nullptr;
}

void loadOnce() {
  OpenBlas &blas = openBlas();
  const char *coreType = nullptr;
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    coreType = coreTypeFromIsa();
    // Read by OpenBLAS's constructor as dlopen runs it; unset afterwards so
    // that processes this one starts detect for themselves.
    if (coreType)
      setenv("OPENBLAS_CORETYPE", coreType, 0);
  }
  const char *candidates[] = {
      "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
      "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
      "libopenblas.so.0", "libopenblas.so"};
  void *handle = nullptr;
  std::string errors;
  for (const char *name : candidates) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    const char *error = dlerror();
    if (!errors.empty())
      errors += "; ";
    errors += error ? error : name;
  }
  if (coreType)
    unsetenv("OPENBLAS_CORETYPE");
  if (!handle) {
    blas.status = Status::failure("cannot load OpenBLAS (" + errors +
                                  "); install libopenblas0");
    return;
  }
  blas.sgemm = reinterpret_cast<cpu::SgemmFn>(dlsym(handle, "cblas_sgemm"));
  blas.setThreads =
      reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads"));
  blas.coreName =
      reinterpret_cast<char *(*)()>(dlsym(handle, "openblas_get_corename"));
  if (!blas.sgemm || !blas.setThreads) {
    blas.status = Status::failure(
        "the OpenBLAS that loaded lacks cblas_sgemm or "
        "openblas_set_num_threads");
    return;
  }
  blas.chosen = coreType != nullptr;
  if (blas.coreName) {
    const char *name = blas.coreName();
    std::string core = name ? name : "";
    for (char &ch : core)
      ch = char(std::tolower(static_cast<unsigned char>(ch)));
    blas.avx512 = core == "skylakex" || core == "cooperlake" ||
                  core == "sapphirerapids";
  }
  const char *gemm = std::getenv("TGC_GEMM");
  blas.threaded = gemm && std::strcmp(gemm, "openblas") == 0;
  blas.status = Status::success();
  blas.setThreads(blas.threaded ? cpuThreads() : 1);
#ifdef _OPENMP
  // The OpenMP build sets the OpenMP thread count along with its own: give
  // the kernels' team back its size. (That build follows OpenMP's count at
  // every call anyway; gemmF32 keeps each of its calls on one thread.)
  omp_set_num_threads(cpuThreads());
#endif
}

} // namespace

int availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return 1;
}

Status setCpuThreads(int threads) {
  int cores = availableCores();
  if (threads < 1 || threads > cores)
    return Status::failure("a thread count must be between 1 and the " +
                           std::to_string(cores) +
                           " cores this process may use, not " +
                           std::to_string(threads));
  threadCount = threads;
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
  OpenBlas &blas = openBlas();
  if (blas.status.ok() && blas.threaded)
    blas.setThreads(threads);
  return Status::success();
}

int cpuThreads() { return threadCount ? threadCount : availableCores(); }

Status loadBlas() {
  static std::once_flag once;
  std::call_once(once, loadOnce);
  return openBlas().status;
}

std::string blasCoreName() {
  OpenBlas &blas = openBlas();
  if (!blas.status.ok() || !blas.coreName)
    return "";
  const char *name = blas.coreName();
  return name ? name : "";
}

bool blasCoreChosenByRuntime() { return openBlas().chosen; }

std::string vectorMathIsa() { return cpu::vec::isa(); }

namespace cpu {
SgemmFn blasSgemm() {
  loadBlas();
  return openBlas().sgemm;
}

bool blasThreaded() { return openBlas().threaded; }

bool blasDirectSgemm() { return openBlas().avx512; }
} // namespace cpu

} // namespace tgc::rt
