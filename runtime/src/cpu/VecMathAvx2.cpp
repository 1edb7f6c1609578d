//===- VecMathAvx2.cpp - VecMath on AVX2 and FMA (compiled -mavx2 -mfma) --===//

#if defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>

#define TGC_VEC_NAMESPACE avx2
#define TGC_VEC_TYPE __m256
#define TGC_VEC_WIDTH 8
#define TGC_VEC_LOAD _mm256_loadu_ps
#define TGC_VEC_STORE _mm256_storeu_ps
#define TGC_VEC_EXP Sleef_expf8_u10avx2
#define TGC_VEC_LOG Sleef_logf8_u10avx2
#define TGC_VEC_TANH Sleef_tanhf8_u10avx2
#define TGC_VEC_DTYPE __m256d
#define TGC_VEC_DWIDTH 4
#define TGC_VEC_DLOAD _mm256_loadu_pd
#define TGC_VEC_DSTORE _mm256_storeu_pd
#define TGC_VEC_DLOG Sleef_logd4_u10avx2
#define TGC_VEC_DCOS Sleef_cosd4_u10avx2
#include "VecMathImpl.h"
#endif
