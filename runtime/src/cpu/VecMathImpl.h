//===- VecMathImpl.h - one ISA's array loops of VecMath.h ---------*- C++ -*-===//
//
// Included by the file of each instruction set after it defines
// TGC_VEC_NAMESPACE, TGC_VEC_TYPE, TGC_VEC_WIDTH, TGC_VEC_LOAD, TGC_VEC_STORE
// and the three SLEEF functions TGC_VEC_EXP, TGC_VEC_LOG, TGC_VEC_TANH.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>

namespace tgc::rt::cpu::vec::TGC_VEC_NAMESPACE {

template <typename Fn>
static inline void apply(const float *in, float *out, int64_t count, Fn fn) {
  constexpr int64_t width = TGC_VEC_WIDTH;
  int64_t i = 0;
  for (; i + width <= count; i += width)
    TGC_VEC_STORE(out + i, fn(TGC_VEC_LOAD(in + i)));
  if (i < count) {
    // The tail through a zero-padded vector (padding lanes are discarded).
    alignas(64) float lanes[width] = {};
    std::memcpy(lanes, in + i, size_t(count - i) * sizeof(float));
    TGC_VEC_STORE(lanes, fn(TGC_VEC_LOAD(lanes)));
    std::memcpy(out + i, lanes, size_t(count - i) * sizeof(float));
  }
}

void exp(const float *in, float *out, int64_t count) {
  apply(in, out, count, [](TGC_VEC_TYPE v) { return TGC_VEC_EXP(v); });
}
void log(const float *in, float *out, int64_t count) {
  apply(in, out, count, [](TGC_VEC_TYPE v) { return TGC_VEC_LOG(v); });
}
void tanh(const float *in, float *out, int64_t count) {
  apply(in, out, count, [](TGC_VEC_TYPE v) { return TGC_VEC_TANH(v); });
}

template <typename Fn>
static inline void applyDouble(const double *in, double *out, int64_t count,
                               Fn fn) {
  constexpr int64_t width = TGC_VEC_DWIDTH;
  int64_t i = 0;
  for (; i + width <= count; i += width)
    TGC_VEC_DSTORE(out + i, fn(TGC_VEC_DLOAD(in + i)));
  if (i < count) {
    // The tail through a vector padded with ones (discarded).
    alignas(64) double lanes[width];
    for (int64_t j = 0; j < width; ++j)
      lanes[j] = i + j < count ? in[i + j] : 1.0;
    TGC_VEC_DSTORE(lanes, fn(TGC_VEC_DLOAD(lanes)));
    std::memcpy(out + i, lanes, size_t(count - i) * sizeof(double));
  }
}

void logd(const double *in, double *out, int64_t count) {
  applyDouble(in, out, count,
              [](TGC_VEC_DTYPE v) { return TGC_VEC_DLOG(v); });
}
void cosd(const double *in, double *out, int64_t count) {
  applyDouble(in, out, count,
              [](TGC_VEC_DTYPE v) { return TGC_VEC_DCOS(v); });
}

} // namespace tgc::rt::cpu::vec::TGC_VEC_NAMESPACE
