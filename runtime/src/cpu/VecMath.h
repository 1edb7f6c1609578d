//===- VecMath.h - vectorized transcendental functions ------------*- C++ -*-===//
//
// The transcendental functions of the CPU kernels on arrays of f32, through
// SLEEF's vector functions of 1.0-ulp accuracy (its u10 variants; the unit
// tests measure the bound against libm in double precision over the whole
// f32 range). The widest instruction set the CPU has is chosen once at run
// time: AVX-512F, AVX2 with FMA, or SSE2, each compiled in a file of its own
// with that ISA enabled (VecMathAvx512.cpp, VecMathAvx2.cpp); other targets
// use libm. `out` may be `in`. The environment variable TGC_VECMATH (an
// instruction set's name below) selects a narrower set, for benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CPU_VECMATH_H
#define TGC_RUNTIME_SRC_CPU_VECMATH_H

#include <cstdint>

namespace tgc::rt::cpu::vec {

void exp(const float *in, float *out, int64_t count);
void log(const float *in, float *out, int64_t count);
void tanh(const float *in, float *out, int64_t count);
/// log and cos of doubles, within SLEEF's 1.0 ulp but not always libm's
/// bits: for callers that check the result's rounding (Session's normal
/// initialisation) or do not need libm's.
void logd(const double *in, double *out, int64_t count);
void cosd(const double *in, double *out, int64_t count);

/// The instruction set the functions run on ("avx512f", "avx2", "sse2",
/// "libm").
const char *isa();

/// The functions of one instruction set (for tests that compare them).
struct Functions {
  const char *isa;
  void (*exp)(const float *, float *, int64_t);
  void (*log)(const float *, float *, int64_t);
  void (*tanh)(const float *, float *, int64_t);
  void (*logd)(const double *, double *, int64_t);
  void (*cosd)(const double *, double *, int64_t);
};

/// Every instruction set this CPU can run, widest first; the first is the
/// one in use.
int availableFunctions(const Functions **functions);

} // namespace tgc::rt::cpu::vec

#endif // TGC_RUNTIME_SRC_CPU_VECMATH_H
