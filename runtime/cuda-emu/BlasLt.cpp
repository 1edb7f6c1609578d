//===- BlasLt.cpp - the cuBLASLt calls of the backend, on the host --------===//
//
// cublasLtMatmul's column-major contract, computed by a plain loop with f32
// accumulation (the CUBLAS_COMPUTE_32F the backend asks for, or
// CUBLAS_COMPUTE_32F_FAST_TF32 with the f32 inputs rounded as TF32 tensor
// cores read them; the product itself is OpenBLAS's sgemm on f32 copies):
// D = alpha *
// op(A) @ op(B) + beta * C over a strided batch, with A, B, C and D in f32,
// f16 or bf16. The emulator checks what the real library assumes and
// cannot always check: attribute sizes, layouts that agree with the
// operation (op(A) is m x k, op(B) k x n, C and D m x n), leading
// dimensions, equal batch counts, every matrix inside device memory, a
// workspace within the preference, and an algorithm from the heuristic
// used only on pointers and batch strides aligned as the preference
// promised (a real kernel chosen for 16-byte alignment reads garbage, or
// faults, on an 8-byte aligned pointer).
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include "cpu/Blas.h"
#include "tgc/runtime/Threads.h"
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tgc::emu {
namespace {

struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batchCount = 1;
  int64_t batchStride = 0;
};

struct Operation {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  /// The epilogue: DEFAULT, or BIAS, GELU_BIAS, GELU_AUX_BIAS with a bias of
  /// D's type (one value per row of D) and, with AUX, the pre-activation
  /// written in D's type at `auxLd`; or the backward ones, which write the
  /// bias vector (D's type): BGRADA (the sums of op(A) over k, one per row
  /// of D), BGRADB (of op(B), one per column), DGELU and DGELU_BGRAD (D
  /// times GELU's gradient at the auxiliary input, read in D's type at
  /// `auxLd`, and with BGRAD the sums of D's rows).
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  void *aux = nullptr;
  int64_t auxLd = 0;
};

struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t alignA = 256, alignB = 256, alignC = 256, alignD = 256;
};

constexpr uint64_t kAlgoMagic = 0x7467632d656d75ull; // "tgc-emu"

cublasStatus_t reject(cublasStatus_t status, const std::string &why) {
  std::fprintf(stderr, "tgc CUDA emulator: cuBLASLt: %s\n", why.c_str());
  return status;
}

size_t elementBytes(cudaDataType type) {
  return type == CUDA_R_32F ? 4 : 2;
}

bool supported(cudaDataType type) {
  return type == CUDA_R_32F || type == CUDA_R_16F || type == CUDA_R_16BF;
}

float load(const void *data, cudaDataType type, int64_t i) {
  switch (type) {
  case CUDA_R_16F:
    return __half2float(static_cast<const __half *>(data)[i]);
  case CUDA_R_16BF:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

void store(void *data, cudaDataType type, int64_t i, float value) {
  switch (type) {
  case CUDA_R_16F:
    static_cast<__half *>(data)[i] = __float2half_rn(value);
    break;
  case CUDA_R_16BF:
    static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16_rn(value);
    break;
  default:
    static_cast<float *>(data)[i] = value;
  }
}

/// Bytes from a matrix's pointer to the end of its last element.
size_t extentBytes(const Layout &l) {
  if (l.rows == 0 || l.cols == 0 || l.batchCount == 0)
    return 0;
  int64_t last = int64_t(l.batchCount - 1) * l.batchStride +
                 int64_t(l.cols - 1) * l.ld + int64_t(l.rows);
  return size_t(last) * elementBytes(l.type);
}

template <typename T>
cublasStatus_t setAttribute(T &field, const void *buf, size_t size,
                            const char *name) {
  if (!buf || size != sizeof(T))
    return reject(CUBLAS_STATUS_INVALID_VALUE,
                  std::string(name) + " set with " + std::to_string(size) +
                      " bytes instead of " + std::to_string(sizeof(T)));
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

/// Checks that the layouts describe one product; sets m, n, k.
cublasStatus_t checkShapes(const Operation &op, const Layout &a,
                           const Layout &b, const Layout &c, const Layout &d,
                           uint64_t &m, uint64_t &n, uint64_t &k) {
  m = op.transA == CUBLAS_OP_N ? a.rows : a.cols;
  k = op.transA == CUBLAS_OP_N ? a.cols : a.rows;
  uint64_t kb = op.transB == CUBLAS_OP_N ? b.rows : b.cols;
  n = op.transB == CUBLAS_OP_N ? b.cols : b.rows;
  if (kb != k || c.rows != m || c.cols != n || d.rows != m || d.cols != n)
    return reject(CUBLAS_STATUS_INVALID_VALUE,
                  "layouts do not form a product: op(A) " + std::to_string(m) +
                      "x" + std::to_string(k) + ", op(B) " +
                      std::to_string(kb) + "x" + std::to_string(n) + ", C " +
                      std::to_string(c.rows) + "x" + std::to_string(c.cols) +
                      ", D " + std::to_string(d.rows) + "x" +
                      std::to_string(d.cols));
  for (const Layout *l : {&a, &b, &c, &d})
    if (l->ld < int64_t(std::max<uint64_t>(l->rows, 1)))
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    "a leading dimension " + std::to_string(l->ld) +
                        " below the row count " + std::to_string(l->rows));
  if (a.batchCount != d.batchCount || b.batchCount != d.batchCount ||
      c.batchCount != d.batchCount)
    return reject(CUBLAS_STATUS_INVALID_VALUE, "batch counts differ");
  if (!supported(a.type) || b.type != a.type || c.type != d.type ||
      (d.type != a.type && d.type != CUDA_R_32F) ||
      !(op.compute == CUBLAS_COMPUTE_32F ||
        (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type == CUDA_R_32F)) ||
      op.scale != CUDA_R_32F)
    return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                  "an unsupported combination of types");
  return CUBLAS_STATUS_SUCCESS;
}

/// `value` as a TF32 tensor core reads it: the f32 mantissa rounded to its
/// top 10 bits, to nearest with ties away from zero (cvt.rna.tf32.f32).
float roundToTF32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) != 0x7f800000u) { // finite
    bits += 0x1000u;
    bits &= ~0x1fffu;
  }
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

/// The backward epilogues of one product: `acc` (m x n, row-major, D's row
/// index first) is alpha * op(A) @ op(B); sums are f32, in index order.
void backwardEpilogue(const Operation &op, uint64_t m, uint64_t n, uint64_t k,
                      float alphaValue, const std::vector<float> &opA,
                      const std::vector<float> &opB,
                      const std::vector<float> &acc, float betaValue,
                      const void *C, const Layout &c, int64_t cBase, void *D,
                      const Layout &d, int64_t dBase) {
  void *bias = const_cast<void *>(op.bias);
  if (op.epilogue == CUBLASLT_EPILOGUE_BGRADA)
    for (uint64_t i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < k; ++p)
        sum += opA[i * k + p];
      store(bias, d.type, int64_t(i), sum);
    }
  if (op.epilogue == CUBLASLT_EPILOGUE_BGRADB)
    for (uint64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < k; ++p)
        sum += opB[p * n + j];
      store(bias, d.type, int64_t(j), sum);
    }
  bool dgelu = op.epilogue == CUBLASLT_EPILOGUE_DGELU ||
               op.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  for (uint64_t i = 0; i < m; ++i) {
    float rowSum = 0.0f;
    for (uint64_t j = 0; j < n; ++j) {
      float value = alphaValue * acc[i * n + j];
      if (betaValue != 0.0f)
        value +=
            betaValue * load(C, c.type, cBase + int64_t(j) * c.ld + int64_t(i));
      if (dgelu) {
        float x = load(op.aux, d.type, int64_t(j) * op.auxLd + int64_t(i));
        float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        float t = std::tanh(u);
        float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
        value *= 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
        rowSum += value;
      }
      store(D, d.type, dBase + int64_t(j) * d.ld + int64_t(i), value);
    }
    if (op.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD)
      store(bias, d.type, int64_t(i), rowSum);
  }
}

/// D = alpha * op(A) @ op(B) + beta * C for every batch entry.
void multiply(const Operation &op, uint64_t m, uint64_t n, uint64_t k,
              float alphaValue, const void *A, const Layout &a, const void *B,
              const Layout &b, float betaValue, const void *C,
              const Layout &c, void *D, const Layout &d) {
  std::vector<float> opA(m * k), opB(k * n), acc(m * n);
  for (int32_t batch = 0; batch < d.batchCount; ++batch) {
    int64_t aBase = batch * a.batchStride, bBase = batch * b.batchStride;
    int64_t cBase = batch * c.batchStride, dBase = batch * d.batchStride;
    // op(A) as row-major m x k, op(B) as row-major k x n.
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t p = 0; p < k; ++p)
        opA[i * k + p] = load(A, a.type,
                              aBase + (op.transA == CUBLAS_OP_N
                                           ? int64_t(p) * a.ld + int64_t(i)
                                           : int64_t(i) * a.ld + int64_t(p)));
    for (uint64_t p = 0; p < k; ++p)
      for (uint64_t j = 0; j < n; ++j)
        opB[p * n + j] = load(B, b.type,
                              bBase + (op.transB == CUBLAS_OP_N
                                           ? int64_t(j) * b.ld + int64_t(p)
                                           : int64_t(p) * b.ld + int64_t(j)));
    if (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32) {
      for (float &value : opA)
        value = roundToTF32(value);
      for (float &value : opB)
        value = roundToTF32(value);
    }
    tgc::rt::cpu::blasSgemm()(
        tgc::rt::cpu::kCblasRowMajor, tgc::rt::cpu::kCblasNoTrans,
        tgc::rt::cpu::kCblasNoTrans, int(m), int(n), int(k), 1.0f, opA.data(), int(k), opB.data(), int(n), 0.0f,
                acc.data(), int(n));
    if (op.epilogue == CUBLASLT_EPILOGUE_BGRADA ||
        op.epilogue == CUBLASLT_EPILOGUE_BGRADB ||
        op.epilogue == CUBLASLT_EPILOGUE_DGELU ||
        op.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
      backwardEpilogue(op, m, n, k, alphaValue, opA, opB, acc, betaValue, C, c,
                       cBase, D, d, dBase);
      continue;
    }
    bool bias = op.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    bool gelu = op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS ||
                op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    for (uint64_t i = 0; i < m; ++i)
      for (uint64_t j = 0; j < n; ++j) {
        float value = alphaValue * acc[i * n + j];
        // beta == 0 reads nothing from C, as cuBLAS.
        if (betaValue != 0.0f)
          value += betaValue *
                   load(C, c.type, cBase + int64_t(j) * c.ld + int64_t(i));
        if (bias)
          value += load(op.bias, d.type, int64_t(i));
        if (op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
          store(op.aux, d.type, int64_t(j) * op.auxLd + int64_t(i), value);
        if (gelu) {
          // cuBLASLt's GELU is the tanh approximation.
          float u = 0.7978845608028654f * (value + 0.044715f * value * value *
                                                       value);
          value = 0.5f * value * (1.0f + std::tanh(u));
        }
        store(D, d.type, dBase + int64_t(j) * d.ld + int64_t(i), value);
      }
  }
}

} // namespace
} // namespace tgc::emu

using namespace tgc::emu;

namespace {
Layout &layoutOf(cublasLtMatrixLayout_t l) {
  return *reinterpret_cast<Layout *>(l);
}
Operation &operationOf(cublasLtMatmulDesc_t d) {
  return *reinterpret_cast<Operation *>(d);
}
Preference &preferenceOf(cublasLtMatmulPreference_t p) {
  return *reinterpret_cast<Preference *>(p);
}
} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  // Kernels run on one host thread; OpenBLAS's threads would only spin
  // beside them between GEMMs.
  if (!tgc::rt::loadBlas().ok())
    return CUBLAS_STATUS_NOT_INITIALIZED;
  (void)tgc::rt::setCpuThreads(1);
  static int token;
  *handle = reinterpret_cast<cublasLtHandle_t>(&token);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  default:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid value was used as an argument";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "the GPU program failed to execute";
  default:
    return "an internal operation failed";
  }
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  auto *op = new Operation{compute, scale};
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(op);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<Operation *>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
    const void *buf, size_t size) {
  Operation &op = operationOf(desc);
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return setAttribute(op.transA, buf, size, "TRANSA");
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return setAttribute(op.transB, buf, size, "TRANSB");
  case CUBLASLT_MATMUL_DESC_EPILOGUE: {
    cublasLtEpilogue_t epilogue;
    if (cublasStatus_t s = setAttribute(epilogue, buf, size, "EPILOGUE"))
      return s;
    if (epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
        epilogue != CUBLASLT_EPILOGUE_BIAS &&
        epilogue != CUBLASLT_EPILOGUE_GELU_BIAS &&
        epilogue != CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
        epilogue != CUBLASLT_EPILOGUE_BGRADA &&
        epilogue != CUBLASLT_EPILOGUE_BGRADB &&
        epilogue != CUBLASLT_EPILOGUE_DGELU &&
        epilogue != CUBLASLT_EPILOGUE_DGELU_BGRAD)
      return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                    "epilogue " + std::to_string(int(epilogue)) +
                        " is not emulated");
    op.epilogue = epilogue;
    return CUBLAS_STATUS_SUCCESS;
  }
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return setAttribute(op.bias, buf, size, "BIAS_POINTER");
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    return setAttribute(op.aux, buf, size, "EPILOGUE_AUX_POINTER");
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    return setAttribute(op.auxLd, buf, size, "EPILOGUE_AUX_LD");
  default:
    return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                  "matmul attribute " + std::to_string(int(attr)) +
                      " is not emulated");
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  auto *l = new Layout{type, rows, cols, ld};
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<Layout *>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
    const void *buf, size_t size) {
  Layout &l = layoutOf(layout);
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    return setAttribute(l.batchCount, buf, size, "BATCH_COUNT");
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    return setAttribute(l.batchStride, buf, size, "STRIDED_BATCH_OFFSET");
  default:
    return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                  "layout attribute " + std::to_string(int(attr)) +
                      " is not emulated");
  }
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  *preference = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  delete reinterpret_cast<Preference *>(preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t preference,
    cublasLtMatmulPreferenceAttributes_t attr, const void *buf, size_t size) {
  Preference &p = preferenceOf(preference);
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return setAttribute(p.maxWorkspace, buf, size, "MAX_WORKSPACE_BYTES");
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    return setAttribute(p.alignA, buf, size, "MIN_ALIGNMENT_A_BYTES");
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    return setAttribute(p.alignB, buf, size, "MIN_ALIGNMENT_B_BYTES");
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    return setAttribute(p.alignC, buf, size, "MIN_ALIGNMENT_C_BYTES");
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return setAttribute(p.alignD, buf, size, "MIN_ALIGNMENT_D_BYTES");
  default:
    return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                  "preference attribute " + std::to_string(int(attr)) +
                      " is not emulated");
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
    cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t preference,
    int requested, cublasLtMatmulHeuristicResult_t results[], int *found) {
  *found = 0;
  if (requested < 1 || !preference)
    return reject(CUBLAS_STATUS_INVALID_VALUE, "a heuristic query for no "
                                               "algorithm or no preference");
  uint64_t m, n, k;
  if (cublasStatus_t status =
          checkShapes(operationOf(desc), layoutOf(a), layoutOf(b), layoutOf(c),
                      layoutOf(d), m, n, k))
    return status;
  const Preference &p = preferenceOf(preference);
  for (uint32_t align : {p.alignA, p.alignB, p.alignC, p.alignD})
    if (align == 0 || (align & (align - 1)))
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    "an alignment preference of " + std::to_string(align));
  // The emulated algorithm assumes every alignment the preference allows
  // and needs no workspace.
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = kAlgoMagic;
  results[0].algo.data[1] = p.alignA;
  results[0].algo.data[2] = p.alignB;
  results[0].algo.data[3] = p.alignC;
  results[0].algo.data[4] = p.alignD;
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A,
                              cublasLtMatrixLayout_t aDesc, const void *B,
                              cublasLtMatrixLayout_t bDesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cDesc,
                              void *D, cublasLtMatrixLayout_t dDesc,
                              const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceBytes,
                              cudaStream_t stream) {
  if (stickyError() != cudaSuccess)
    return CUBLAS_STATUS_EXECUTION_FAILED;
  const Operation &op = operationOf(desc);
  const Layout &a = layoutOf(aDesc), &b = layoutOf(bDesc), &c = layoutOf(cDesc),
               &d = layoutOf(dDesc);
  uint64_t m, n, k;
  if (cublasStatus_t status = checkShapes(op, a, b, c, d, m, n, k))
    return status;
  if (!algo || algo->data[0] != kAlgoMagic)
    return reject(CUBLAS_STATUS_INVALID_VALUE,
                  "an algorithm that no heuristic query returned");
  struct Operand {
    const char *name;
    const void *data;
    const Layout &layout;
    uint64_t align;
  } operands[] = {{"A", A, a, algo->data[1]},
                  {"B", B, b, algo->data[2]},
                  {"C", C, c, algo->data[3]},
                  {"D", D, d, algo->data[4]}};
  for (const Operand &o : operands) {
    uint64_t strideBytes =
        o.layout.batchCount > 1
            ? uint64_t(o.layout.batchStride) * elementBytes(o.layout.type)
            : 0;
    if ((reinterpret_cast<uintptr_t>(o.data) | strideBytes) % o.align)
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(o.name) + " (or its batch stride) is not " +
                        std::to_string(o.align) +
                        "-byte aligned as the algorithm assumes");
    if (!inAllocation(o.data, extentBytes(o.layout), Memory::Device))
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    std::string(o.name) +
                        " reaches outside device memory (or is not device "
                        "memory)");
  }
  if (workspaceBytes && !inAllocation(workspace, workspaceBytes,
                                      Memory::Device))
    return reject(CUBLAS_STATUS_INVALID_VALUE,
                  "the workspace is not device memory of its size");
  // The epilogue's vectors, as cuBLASLt requires them: a bias of D's rows
  // and an auxiliary output of D's shape, 16-byte aligned, in device
  // memory, for one matrix (no batch stride is set for them).
  if (op.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    size_t bytes = elementBytes(d.type);
    if (d.batchCount != 1)
      return reject(CUBLAS_STATUS_NOT_SUPPORTED,
                    "an epilogue over a batch of products");
    // BGRADB's vector has one value per column of D, every other one per
    // row; DGELU alone has none.
    uint64_t biasLength =
        op.epilogue == CUBLASLT_EPILOGUE_BGRADB ? d.cols : d.rows;
    if (op.epilogue != CUBLASLT_EPILOGUE_DGELU &&
        (!op.bias || reinterpret_cast<uintptr_t>(op.bias) % 16 ||
         !inAllocation(op.bias, biasLength * bytes, Memory::Device)))
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    "the epilogue's bias is not 16-byte aligned device "
                    "memory of D's " +
                        std::string(op.epilogue == CUBLASLT_EPILOGUE_BGRADB
                                        ? "columns"
                                        : "rows"));
    bool auxiliary = op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
                     op.epilogue == CUBLASLT_EPILOGUE_DGELU ||
                     op.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    if (auxiliary &&
        (!op.aux || reinterpret_cast<uintptr_t>(op.aux) % 16 ||
         op.auxLd < int64_t(d.rows) || op.auxLd % 8 ||
         !inAllocation(op.aux,
                       (size_t(op.auxLd) * (d.cols - 1) + d.rows) * bytes,
                       Memory::Device)))
      return reject(CUBLAS_STATUS_INVALID_VALUE,
                    "the epilogue's auxiliary matrix is not 16-byte aligned "
                    "device memory of D's shape with a leading dimension "
                    "that is a multiple of 8");
  }

  // Host scalars are read now; the product runs when the stream does.
  float alphaValue = *static_cast<const float *>(alpha);
  float betaValue = *static_cast<const float *>(beta);
  Operation opCopy = op;
  Layout aCopy = a, bCopy = b, cCopy = c, dCopy = d;
  if (!enqueue(stream, [=] {
        if (stickyError() == cudaSuccess)
          multiply(opCopy, m, n, k, alphaValue, A, aCopy, B, bCopy, betaValue,
                   C, cCopy, D, dCopy);
      }))
    return reject(CUBLAS_STATUS_INVALID_VALUE, "a stream that is not live");
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
