//===- VecMathAvx512.cpp - VecMath on AVX-512F (compiled -mavx512f) -------===//

#if defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>

#define TGC_VEC_NAMESPACE avx512
#define TGC_VEC_TYPE __m512
#define TGC_VEC_WIDTH 16
#define TGC_VEC_LOAD _mm512_loadu_ps
#define TGC_VEC_STORE _mm512_storeu_ps
#define TGC_VEC_EXP Sleef_expf16_u10avx512f
#define TGC_VEC_LOG Sleef_logf16_u10avx512f
#define TGC_VEC_TANH Sleef_tanhf16_u10avx512f
#define TGC_VEC_DTYPE __m512d
#define TGC_VEC_DWIDTH 8
#define TGC_VEC_DLOAD _mm512_loadu_pd
#define TGC_VEC_DSTORE _mm512_storeu_pd
#define TGC_VEC_DLOG Sleef_logd8_u10avx512f
#define TGC_VEC_DCOS Sleef_cosd8_u10avx512f
#include "VecMathImpl.h"
#endif
