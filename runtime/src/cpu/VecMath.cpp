//===- VecMath.cpp - choosing VecMath's instruction set --------------------===//
//
// SSE2 (the x86-64 baseline) is compiled here; the wider sets in files of
// their own. See VecMath.h.
//
//===----------------------------------------------------------------------===//

#include "VecMath.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>

#define TGC_VEC_NAMESPACE sse2
#define TGC_VEC_TYPE __m128
#define TGC_VEC_WIDTH 4
#define TGC_VEC_LOAD _mm_loadu_ps
#define TGC_VEC_STORE _mm_storeu_ps
#define TGC_VEC_EXP Sleef_expf4_u10sse2
#define TGC_VEC_LOG Sleef_logf4_u10sse2
#define TGC_VEC_TANH Sleef_tanhf4_u10sse2
#define TGC_VEC_DTYPE __m128d
#define TGC_VEC_DWIDTH 2
#define TGC_VEC_DLOAD _mm_loadu_pd
#define TGC_VEC_DSTORE _mm_storeu_pd
#define TGC_VEC_DLOG Sleef_logd2_u10sse2
#define TGC_VEC_DCOS Sleef_cosd2_u10sse2
#include "VecMathImpl.h"

namespace tgc::rt::cpu::vec {
namespace avx512 {
void exp(const float *, float *, int64_t);
void log(const float *, float *, int64_t);
void tanh(const float *, float *, int64_t);
void logd(const double *, double *, int64_t);
void cosd(const double *, double *, int64_t);
} // namespace avx512
namespace avx2 {
void exp(const float *, float *, int64_t);
void log(const float *, float *, int64_t);
void tanh(const float *, float *, int64_t);
void logd(const double *, double *, int64_t);
void cosd(const double *, double *, int64_t);
} // namespace avx2
} // namespace tgc::rt::cpu::vec
#endif

namespace tgc::rt::cpu::vec {

namespace {

namespace libm {
void exp(const float *in, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::exp(in[i]);
}
void log(const float *in, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::log(in[i]);
}
void tanh(const float *in, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::tanh(in[i]);
}
void logd(const double *in, double *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::log(in[i]);
}
void cosd(const double *in, double *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::cos(in[i]);
}
} // namespace libm

struct Table {
  Functions entries[4];
  int count = 0;

  Table() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      entries[count++] = {"avx512f", avx512::exp, avx512::log, avx512::tanh,
                          avx512::logd, avx512::cosd};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      entries[count++] = {"avx2", avx2::exp, avx2::log, avx2::tanh,
                          avx2::logd, avx2::cosd};
    entries[count++] = {"sse2", sse2::exp, sse2::log, sse2::tanh,
                          sse2::logd, sse2::cosd};
#endif
    entries[count++] = {"libm", libm::exp, libm::log, libm::tanh,
                          libm::logd, libm::cosd};
    // TGC_VECMATH=<isa> runs a narrower set (benchmarks compare them).
    if (const char *chosen = std::getenv("TGC_VECMATH"))
      for (int i = 1; i < count; ++i)
        if (std::strcmp(entries[i].isa, chosen) == 0)
          std::swap(entries[0], entries[i]);
  }
};

const Table &table() {
  static const Table instance;
  return instance;
}

} // namespace

void exp(const float *in, float *out, int64_t count) {
  table().entries[0].exp(in, out, count);
}
void log(const float *in, float *out, int64_t count) {
  table().entries[0].log(in, out, count);
}
void tanh(const float *in, float *out, int64_t count) {
  table().entries[0].tanh(in, out, count);
}
void logd(const double *in, double *out, int64_t count) {
  table().entries[0].logd(in, out, count);
}
void cosd(const double *in, double *out, int64_t count) {
  table().entries[0].cosd(in, out, count);
}
const char *isa() { return table().entries[0].isa; }

int availableFunctions(const Functions **functions) {
  *functions = table().entries;
  return table().count;
}

} // namespace tgc::rt::cpu::vec
