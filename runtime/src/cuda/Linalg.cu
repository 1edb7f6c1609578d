//===- Linalg.cu - batched matrix products on cuBLASLt --------------------===//
//
// tg.matmul on the GPU: every product is a cuBLASLt GEMM with f32
// accumulation (f16/bf16 read and written as stored). cuBLASLt is
// column-major, so a row-major `C = op(A) @ op(B)` is issued as the
// column-major `C^T = op(B)^T @ op(A)^T` by swapping the operands. Batch
// dimensions broadcast with NumPy rules: they are collapsed where the
// operands' strides allow, the innermost one becomes a strided batch (stride
// 0 for a shared operand) and any remaining ones are looped over on the host.
// A batched lhs times a shared rank-2 rhs folds the batch into the rows of
// one GEMM, as the CPU kernel does. Algorithms come from cuBLASLt's heuristic
// and are cached per problem.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "BlasLt.h"
#include "Linalg.h"

#include "tgc/Support/GemmBatch.h"
#include "tgc/Support/ShapeRules.h"

#include <cublasLt.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tgc::rt::cuda {

namespace {

Status blasStatus(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  return Status::failure(std::string("cuBLASLt ") + what +
                         " failed: " + blasLt().statusName(status) + " (" +
                         blasLt().statusString(status) + ")");
}

#define TGC_BLAS_CALL(call, what)                                              \
  do {                                                                         \
    Status blasStatus_ = blasStatus((call), what);                             \
    if (!blasStatus_.ok())                                                     \
      return blasStatus_;                                                      \
  } while (0)

cudaDataType_t blasType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

/// The largest power of two, at most 256, dividing the address and the
/// batch stride in bytes: what the heuristic may assume of every batch
/// entry's pointer.
uint32_t alignmentOf(const void *pointer, int64_t strideBytes) {
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(pointer)) |
                  uint64_t(strideBytes) | 256u;
  return uint32_t(bits & (~bits + 1));
}

/// Owns the descriptors of one cublasLtMatmul call.
struct MatmulDescriptors {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, output = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;

  ~MatmulDescriptors() {
    if (preference)
      blasLt().preferenceDestroy(preference);
    if (output)
      blasLt().layoutDestroy(output);
    if (second)
      blasLt().layoutDestroy(second);
    if (first)
      blasLt().layoutDestroy(first);
    if (operation)
      blasLt().descDestroy(operation);
  }
};

/// A column-major layout of `rows x cols` (leading dimension `rows`),
/// strided-batched when `batchCount > 1`.
Status makeLayout(cublasLtMatrixLayout_t &layout, DType dtype, int64_t rows,
                  int64_t cols, int64_t batchCount, int64_t stride) {
  TGC_BLAS_CALL(blasLt().layoutCreate(&layout, blasType(dtype),
                                           uint64_t(rows), uint64_t(cols),
                                           rows),
                "cublasLtMatrixLayoutCreate");
  if (batchCount > 1) {
    int32_t count = int32_t(batchCount);
    TGC_BLAS_CALL(
        blasLt().layoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
        "setting the batch count");
    TGC_BLAS_CALL(blasLt().layoutSetAttribute(
                      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                      &stride, sizeof(stride)),
                  "setting the batch stride");
  }
  return Status::success();
}

/// Heuristic choices by problem: the query costs far more than the GEMMs of
/// a small model, and a training step asks the same questions every time.
std::mutex algoCacheMutex;
std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> algoCache;
/// Problems the heuristic had no algorithm for (epilogues with a fallback).
std::set<std::vector<int64_t>> noAlgoCache;

} // namespace

Status gemm(Context &ctx, const GemmProblem &p, void *workspace) {
  if (p.m == 0 || p.n == 0 || p.batchCount == 0)
    return Status::success();
  size_t elementSize = dtypeSize(p.dtype);
  DType outType = p.f32Output ? DType::F32 : p.dtype;
  size_t outSize = dtypeSize(outType);
  cudaStream_t stream = streamOf(ctx);
  if ((p.bias || p.biasGrad || p.geluInput) && (p.batchCount != 1 || p.k == 0))
    return Status::failure("a GEMM epilogue takes one product with a "
                           "contraction");
  if ((p.bias && (p.biasGrad || p.geluInput)) ||
      (p.geluInput && (!p.biasGrad || p.biasGradOfA)))
    return Status::failure("a GEMM's backward epilogue is DGELU_BGRAD, "
                           "BGRADA or BGRADB alone");
  if (p.k == 0 && p.beta != 0.0f)
    return Status::success();
  if (p.k == 0) {
    size_t bytes = size_t(p.m * p.n) * outSize;
    for (int64_t b = 0; b < p.batchCount; ++b)
      TGC_CUDA_CALL(cudaMemsetAsync(static_cast<char *>(p.c) +
                                        b * p.strideC * outSize,
                                    0, bytes, stream));
    return Status::success();
  }
  if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX || p.batchCount > INT_MAX)
    return Status::failure("matmul of [" + std::to_string(p.m) + ", " +
                           std::to_string(p.k) + "] x [" + std::to_string(p.k) +
                           ", " + std::to_string(p.n) + "] (batch " +
                           std::to_string(p.batchCount) +
                           ") exceeds cuBLASLt's 32-bit sizes");
  if (!ctx.blasLt)
    return Status::failure("matmul needs a cuBLASLt handle in the context");
  auto handle = static_cast<cublasLtHandle_t>(ctx.blasLt);

  // Column-major C^T [n, m] = op(B)^T @ op(A)^T. Row-major B stored [k, n]
  // is column-major B^T [n, k]; stored [n, k] (transposed) it is [k, n] and
  // cuBLASLt transposes it. Likewise for A.
  MatmulDescriptors desc;
  // TF32 tensor cores round f32 inputs to a 10-bit mantissa and accumulate
  // in f32; 16-bit inputs run on tensor cores either way.
  bool tf32 = ctx.allowTF32 && p.dtype == DType::F32;
  cublasComputeType_t compute =
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  TGC_BLAS_CALL(blasLt().descCreate(&desc.operation, compute, CUDA_R_32F),
                "cublasLtMatmulDescCreate");
  cublasOperation_t opFirst = p.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = p.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TGC_BLAS_CALL(blasLt().descSetAttribute(desc.operation,
                                               CUBLASLT_MATMUL_DESC_TRANSA,
                                               &opFirst, sizeof(opFirst)),
                "setting TRANSA");
  TGC_BLAS_CALL(blasLt().descSetAttribute(desc.operation,
                                               CUBLASLT_MATMUL_DESC_TRANSB,
                                               &opSecond, sizeof(opSecond)),
                "setting TRANSB");
  int64_t batch = p.batchCount;
  if (Status s = makeLayout(desc.first, p.dtype, p.transposeB ? p.k : p.n,
                            p.transposeB ? p.n : p.k, batch, p.strideB);
      !s.ok())
    return s;
  if (Status s = makeLayout(desc.second, p.dtype, p.transposeA ? p.m : p.k,
                            p.transposeA ? p.k : p.m, batch, p.strideA);
      !s.ok())
    return s;
  if (Status s = makeLayout(desc.output, outType, p.n, p.m, batch, p.strideC);
      !s.ok())
    return s;
  // The epilogue: in C^T's column-major terms the bias runs down the n
  // rows, and the pre-activation has C's layout.
  // Forward, the bias is read and the pre-activation written (aux); in the
  // backward epilogues the bias vector receives the sums and the GELU
  // input is read from aux. Ours op(B) is cuBLASLt's A: its sums are
  // BGRADA's (C^T's n rows).
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *vector = nullptr, *aux = nullptr;
  if (p.bias) {
    epilogue = !p.gelu ? CUBLASLT_EPILOGUE_BIAS
               : p.aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                       : CUBLASLT_EPILOGUE_GELU_BIAS;
    vector = p.bias;
    aux = p.aux;
  } else if (p.biasGrad) {
    epilogue = p.geluInput     ? CUBLASLT_EPILOGUE_DGELU_BGRAD
               : p.biasGradOfA ? CUBLASLT_EPILOGUE_BGRADB
                               : CUBLASLT_EPILOGUE_BGRADA;
    vector = p.biasGrad;
    aux = p.geluInput;
  }
  if (vector) {
    TGC_BLAS_CALL(blasLt().descSetAttribute(desc.operation,
                                            CUBLASLT_MATMUL_DESC_EPILOGUE,
                                            &epilogue, sizeof(epilogue)),
                  "setting the epilogue");
    TGC_BLAS_CALL(blasLt().descSetAttribute(desc.operation,
                                            CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &vector, sizeof(vector)),
                  "setting the bias vector");
  }
  if (aux) {
    int64_t auxLd = p.n;
    TGC_BLAS_CALL(
        blasLt().descSetAttribute(desc.operation,
                                  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                  &aux, sizeof(aux)),
        "setting the epilogue's auxiliary matrix");
    TGC_BLAS_CALL(blasLt().descSetAttribute(
                      desc.operation, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                      &auxLd, sizeof(auxLd)),
                  "setting the auxiliary matrix's leading dimension");
  }

  // What the heuristic may assume about the pointers of every batch entry.
  int64_t strideBytes = int64_t(elementSize);
  uint32_t alignFirst =
      alignmentOf(p.b, batch > 1 ? p.strideB * strideBytes : 0);
  uint32_t alignSecond =
      alignmentOf(p.a, batch > 1 ? p.strideA * strideBytes : 0);
  uint32_t alignOutput =
      alignmentOf(p.c, batch > 1 ? p.strideC * int64_t(outSize) : 0);

  std::vector<int64_t> key = {int64_t(reinterpret_cast<uintptr_t>(handle)),
                              int64_t(p.dtype),
                              tf32,
                              p.f32Output,
                              int64_t(epilogue),
                              p.transposeA,
                              p.transposeB,
                              p.m,
                              p.n,
                              p.k,
                              batch,
                              batch > 1 ? p.strideA : 0,
                              batch > 1 ? p.strideB : 0,
                              batch > 1 ? p.strideC : 0,
                              alignFirst,
                              alignSecond,
                              alignOutput};
  cublasLtMatmulAlgo_t algo;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    if (p.noAlgorithm && noAlgoCache.count(key)) {
      *p.noAlgorithm = true;
      return Status::success();
    }
    auto it = algoCache.find(key);
    if (it != algoCache.end()) {
      algo = it->second;
      cached = true;
    }
  }
  if (!cached) {
    TGC_BLAS_CALL(blasLt().preferenceCreate(&desc.preference),
                  "cublasLtMatmulPreferenceCreate");
    uint64_t maxWorkspace = kGemmWorkspaceBytes;
    TGC_BLAS_CALL(blasLt().preferenceSetAttribute(
                      desc.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                      &maxWorkspace, sizeof(maxWorkspace)),
                  "setting the workspace preference");
    struct {
      cublasLtMatmulPreferenceAttributes_t attribute;
      uint32_t bytes;
    } alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignFirst},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignSecond},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignOutput},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignOutput}};
    for (auto &alignment : alignments)
      TGC_BLAS_CALL(blasLt().preferenceSetAttribute(
                        desc.preference, alignment.attribute, &alignment.bytes,
                        sizeof(alignment.bytes)),
                    "setting an alignment preference");
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    TGC_BLAS_CALL(
        blasLt().heuristic(handle, desc.operation, desc.first,
                                       desc.second, desc.output, desc.output,
                                       desc.preference, 1, &heuristic, &found),
        "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0 && p.noAlgorithm) {
      std::lock_guard<std::mutex> lock(algoCacheMutex);
      noAlgoCache.insert(key);
      *p.noAlgorithm = true;
      return Status::success();
    }
    if (found == 0)
      return Status::failure(
          std::string("cuBLASLt has no algorithm for a ") + dtypeName(p.dtype) +
          " matmul of [" + std::to_string(p.m) + ", " + std::to_string(p.k) +
          "] x [" + std::to_string(p.k) + ", " + std::to_string(p.n) +
          "], batch " + std::to_string(batch));
    algo = heuristic.algo;
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    algoCache.emplace(key, algo);
  }

  float alpha = p.alpha, beta = p.beta;
  TGC_BLAS_CALL(blasLt().matmul(handle, desc.operation, &alpha, p.b, desc.first,
                               p.a, desc.second, &beta, p.c, desc.output, p.c,
                               desc.output, &algo, workspace,
                               kGemmWorkspaceBytes, stream),
                "cublasLtMatmul");
  return Status::success();
}

namespace {

/// `lhs x rhs`, plus `addend` when given: C starts as the addend and the
/// GEMMs add onto it (beta = 1).
Status matmulInto(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
                  const TensorRef *addend, bool transposeLhs,
                  bool transposeRhs, TensorRef &result) {
  // Types and shapes as the loader checked them (format/Verify.cpp).
  shapes::ShapeOrError expected =
      shapes::matmul(lhs.shape, rhs.shape, transposeLhs, transposeRhs);
  size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  int64_t m = lhs.shape[transposeLhs ? lr - 1 : lr - 2];
  int64_t k = lhs.shape[transposeLhs ? lr - 2 : lr - 1];
  int64_t n = rhs.shape[transposeRhs ? rr - 2 : rr - 1];
  std::vector<int64_t> lhsBatch(lhs.shape.begin(), lhs.shape.end() - 2);
  std::vector<int64_t> rhsBatch(rhs.shape.begin(), rhs.shape.end() - 2);
  std::vector<int64_t> batch(expected.shape.begin(), expected.shape.end() - 2);
  if (result.numElements() == 0)
    return Status::success();

  // A result the planner placed over an operand is computed in the
  // workspace and copied in once every product has read its operands.
  bool aliased = bytesOverlap(result, lhs) || bytesOverlap(result, rhs);
  if (addend && aliased)
    return Status::failure("matmul_add result overlaps lhs or rhs");
  if (addend && addend->data != result.data) {
    if (bytesOverlap(result, *addend))
      return Status::failure("matmul_add result partly overlaps its addend");
    TGC_CUDA_CALL(cudaMemcpyAsync(result.data, addend->data,
                                  result.numBytes(), cudaMemcpyDeviceToDevice,
                                  streamOf(ctx)));
  }
  size_t resultBytes = result.numBytes();
  if (Status s = ctx.reserveWorkspace(kGemmWorkspaceBytes +
                                      (aliased ? resultBytes : 0));
      !s.ok())
    return s;
  void *workspace = ctx.workspace;
  char *out = aliased ? static_cast<char *>(ctx.workspace) + kGemmWorkspaceBytes
                      : static_cast<char *>(result.data);

  GemmProblem problem;
  problem.dtype = lhs.dtype;
  problem.transposeA = transposeLhs;
  problem.transposeB = transposeRhs;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.beta = addend ? 1.0f : 0.0f;
  std::vector<BatchDim> dims =
      collapseBatch(lhsBatch, rhsBatch, batch, m * k, k * n, m * n);
  size_t elementSize = dtypeSize(lhs.dtype);
  const char *lhsData = static_cast<const char *>(lhs.data);
  const char *rhsData = static_cast<const char *>(rhs.data);

  if (batchFoldsIntoRows(dims, transposeLhs, m, k)) {
    // [B*M, K] x [K, N]: the batch folds into the rows of one GEMM.
    problem.m = dims[0].size * m;
    problem.a = lhsData;
    problem.b = rhsData;
    problem.c = out;
    if (Status s = gemm(ctx, problem, workspace); !s.ok())
      return s;
  } else {
    // The innermost collapsed dimension is a strided batch; the outer ones
    // are walked here, one GEMM call per index.
    BatchDim inner = {1, 0, 0, 0};
    if (!dims.empty()) {
      inner = dims.back();
      dims.pop_back();
    }
    problem.batchCount = inner.size;
    problem.strideA = inner.lhsStride;
    problem.strideB = inner.rhsStride;
    problem.strideC = inner.outStride;
    int64_t outerCount = 1;
    for (const BatchDim &dim : dims)
      outerCount *= dim.size;
    for (int64_t outer = 0; outer < outerCount; ++outer) {
      int64_t lhsOffset = 0, rhsOffset = 0, outOffset = 0, rest = outer;
      for (size_t d = dims.size(); d-- > 0;) {
        int64_t index = rest % dims[d].size;
        rest /= dims[d].size;
        lhsOffset += index * dims[d].lhsStride;
        rhsOffset += index * dims[d].rhsStride;
        outOffset += index * dims[d].outStride;
      }
      problem.a = lhsData + lhsOffset * elementSize;
      problem.b = rhsData + rhsOffset * elementSize;
      problem.c = out + outOffset * elementSize;
      if (Status s = gemm(ctx, problem, workspace); !s.ok())
        return s;
    }
  }

  if (aliased)
    TGC_CUDA_CALL(cudaMemcpyAsync(result.data, out, resultBytes,
                                  cudaMemcpyDeviceToDevice, streamOf(ctx)));
  return Status::success();
}

} // namespace

Status matmul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
              bool transposeLhs, bool transposeRhs, TensorRef &result) {
  return matmulInto(ctx, lhs, rhs, nullptr, transposeLhs, transposeRhs, result);
}

Status matmulAdd(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
                 const TensorRef &addend, bool transposeLhs, bool transposeRhs,
                 TensorRef &result) {
  return matmulInto(ctx, lhs, rhs, &addend, transposeLhs, transposeRhs, result);
}

namespace {

/// result = src + bias (per column), through GELU with the sum kept in
/// `preactivation` when `gelu`: the epilogue where cuBLASLt cannot take it.
__global__ void biasGeluKernel(const void *src, const void *bias,
                               DType dtype, int64_t rows, int64_t n,
                               bool gelu, void *result, void *preactivation) {
  TGC_GRID_LOOP(i, rows * n) {
    float x = loadFloat(src, dtype, i) + loadFloat(bias, dtype, i % n);
    if (gelu) {
      storeFloat(preactivation, dtype, i, x);
      x = geluTanh(x);
    }
    storeFloat(result, dtype, i, x);
  }
}

} // namespace

Status linear(Context &ctx, const TensorRef &input, const TensorRef &weight,
              const TensorRef &bias, bool gelu, TensorRef &result,
              TensorRef *preactivation) {
  // Types and shapes (and the pre-activation with gelu) as the loader
  // checked them.
  int64_t k = input.shape.back(), n = weight.shape[1];
  int64_t rows = n == 0 ? 0 : result.numElements() / n;
  if (rows == 0 || n == 0)
    return Status::success();
  if (rows > INT_MAX)
    return Status::failure("linear has more rows than cuBLASLt takes");
  // The epilogue writes while the product reads: results over operands go
  // through the fallback's separate passes (the planner does not do that
  // for this op, whose result types differ from its operands' anyway).
  for (const TensorRef *out : {&result, preactivation})
    if (out && (bytesOverlap(*out, input) || bytesOverlap(*out, weight) ||
                bytesOverlap(*out, bias)))
      return Status::failure("linear results must not overlap its operands");
  if (Status s = ctx.reserveWorkspace(kGemmWorkspaceBytes); !s.ok())
    return s;

  GemmProblem problem;
  problem.dtype = input.dtype;
  problem.f32Output = result.dtype != input.dtype;
  problem.m = rows;
  problem.n = n;
  problem.k = k;
  problem.a = input.data;
  problem.b = weight.data;
  // cuBLASLt's epilogues need aligned vectors and an auxiliary output whose
  // leading dimension is a multiple of 8.
  bool epilogue = k > 0 && n % 8 == 0 && alignmentOf(bias.data, 0) >= 16 &&
                  alignmentOf(result.data, 0) >= 16 &&
                  (!preactivation || alignmentOf(preactivation->data, 0) >= 16);
  if (epilogue) {
    problem.c = result.data;
    problem.bias = bias.data;
    problem.gelu = gelu;
    problem.aux = preactivation ? preactivation->data : nullptr;
    return gemm(ctx, problem, ctx.workspace);
  }
  // The product into the pre-activation (or the result), then the bias
  // and GELU in one pass.
  TensorRef &product = preactivation ? *preactivation : result;
  problem.c = product.data;
  if (Status s = gemm(ctx, problem, ctx.workspace); !s.ok())
    return s;
  biasGeluKernel<<<blocksFor(rows * n), 256, 0, streamOf(ctx)>>>(
      product.data, bias.data, result.dtype, rows, n, gelu, result.data,
      preactivation ? preactivation->data : nullptr);
  TGC_CUDA_LAUNCH("biasGeluKernel");
  return Status::success();
}

namespace {

/// The fallback of tg.matmul_gelu_grad's epilogue: `product` (f32, [rows,
/// n]) becomes `product * gelu'(preactivation)`, rounded into `result`.
__global__ void geluGradRowsKernel(float *product, const void *preactivation,
                                   DType dtype, int64_t count, void *result) {
  TGC_GRID_LOOP(i, count) {
    float value = geluTanhGrad(loadFloat(preactivation, dtype, i), product[i]);
    product[i] = value;
    storeFloat(result, dtype, i, value);
  }
}

/// The sums over the rows of `values` (f32, [rows, n]) into `sums` (n
/// values of `dtype`): one thread a column, in row order.
__global__ void sumRowsKernel(const float *values, int64_t rows, int64_t n,
                              DType dtype, void *sums) {
  TGC_GRID_LOOP(j, n) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r)
      sum += values[r * n + j];
    storeFloat(sums, dtype, j, sum);
  }
}

/// Whether cuBLASLt's backward epilogues may take these buffers: 16-byte
/// aligned vectors and outputs, and rows of a multiple of 8 elements (the
/// auxiliary input's leading dimension).
bool backwardEpilogueFits(int64_t n, std::initializer_list<const void *> data) {
  if (n % 8 != 0)
    return false;
  for (const void *pointer : data)
    if (pointer && alignmentOf(pointer, 0) < 16)
      return false;
  return true;
}

} // namespace

Status matmulBiasGrad(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
                      bool biasOfLhs, TensorRef &product, TensorRef &biasGrad) {
  // Types and shapes as the loader checked them.
  for (const TensorRef *out : {&product, &biasGrad})
    if (bytesOverlap(*out, lhs) || bytesOverlap(*out, rhs))
      return Status::failure("matmul_bias_grad results must not overlap its "
                             "operands");
  const TensorRef &summed = biasOfLhs ? lhs : rhs;
  int64_t rows = lhs.shape[0], m = lhs.shape[1], n = rhs.shape[1];
  bool noAlgorithm = false;
  if (rows > 0 && m > 0 && n > 0 && rows <= INT_MAX && m <= INT_MAX &&
      n <= INT_MAX && backwardEpilogueFits(n, {product.data, biasGrad.data})) {
    if (Status s = ctx.reserveWorkspace(kGemmWorkspaceBytes); !s.ok())
      return s;
    GemmProblem problem;
    problem.dtype = lhs.dtype;
    problem.transposeA = true;
    problem.m = m;
    problem.n = n;
    problem.k = rows;
    problem.a = lhs.data;
    problem.b = rhs.data;
    problem.c = product.data;
    problem.biasGrad = biasGrad.data;
    problem.biasGradOfA = biasOfLhs;
    problem.noAlgorithm = &noAlgorithm;
    if (Status s = gemm(ctx, problem, ctx.workspace); !s.ok() || !noAlgorithm)
      return s;
  }
  // The product, then the sum of the operand's rows.
  if (Status s = matmul(ctx, lhs, rhs, /*transposeLhs=*/true,
                        /*transposeRhs=*/false, product);
      !s.ok())
    return s;
  return sumTo(ctx, summed, biasGrad);
}

Status matmulGeluGrad(Context &ctx, const TensorRef &grad,
                      const TensorRef &weight, const TensorRef &preactivation,
                      bool transposeRhs, TensorRef &result,
                      TensorRef &biasGrad) {
  // Types and shapes as the loader checked them.
  for (const TensorRef *out : {&result, &biasGrad})
    if (bytesOverlap(*out, grad) || bytesOverlap(*out, weight) ||
        bytesOverlap(*out, preactivation))
      return Status::failure("matmul_gelu_grad results must not overlap its "
                             "operands");
  int64_t k = biasGrad.shape[0], n = grad.shape.back();
  int64_t rows = k == 0 ? 0 : result.numElements() / k;
  cudaStream_t stream = streamOf(ctx);
  if (k == 0)
    return Status::success();
  if (rows == 0 || n == 0) {
    // No rows: no bias sums; an empty contraction: zeros everywhere.
    if (result.numBytes() > 0)
      TGC_CUDA_CALL(cudaMemsetAsync(result.data, 0, result.numBytes(), stream));
    TGC_CUDA_CALL(
        cudaMemsetAsync(biasGrad.data, 0, biasGrad.numBytes(), stream));
    return Status::success();
  }
  if (rows > INT_MAX || n > INT_MAX || k > INT_MAX)
    return Status::failure("matmul_gelu_grad has more rows than cuBLASLt "
                           "takes");
  GemmProblem problem;
  problem.dtype = grad.dtype;
  problem.transposeB = transposeRhs;
  problem.m = rows;
  problem.n = k;
  problem.k = n;
  problem.a = grad.data;
  problem.b = weight.data;
  bool noAlgorithm = false;
  if (backwardEpilogueFits(k,
                           {result.data, biasGrad.data, preactivation.data})) {
    if (Status s = ctx.reserveWorkspace(kGemmWorkspaceBytes); !s.ok())
      return s;
    problem.c = result.data;
    problem.biasGrad = biasGrad.data;
    problem.geluInput = preactivation.data;
    problem.noAlgorithm = &noAlgorithm;
    if (Status s = gemm(ctx, problem, ctx.workspace); !s.ok() || !noAlgorithm)
      return s;
  }
  // The f32 product in the workspace, GELU's gradient over it (rounded
  // into the result), then the bias sums of the f32 values.
  size_t productBytes = size_t(rows * k) * sizeof(float);
  if (Status s = ctx.reserveWorkspace(kGemmWorkspaceBytes + productBytes);
      !s.ok())
    return s;
  float *products = reinterpret_cast<float *>(
      static_cast<char *>(ctx.workspace) + kGemmWorkspaceBytes);
  problem.c = products;
  problem.f32Output = true;
  problem.biasGrad = nullptr;
  problem.geluInput = nullptr;
  problem.noAlgorithm = nullptr;
  if (Status s = gemm(ctx, problem, ctx.workspace); !s.ok())
    return s;
  geluGradRowsKernel<<<blocksFor(rows * k), 256, 0, stream>>>(
      products, preactivation.data, grad.dtype, rows * k, result.data);
  TGC_CUDA_LAUNCH("geluGradRowsKernel");
  sumRowsKernel<<<blocksFor(k), 256, 0, stream>>>(products, rows, k, grad.dtype,
                                                  biasGrad.data);
  TGC_CUDA_LAUNCH("sumRowsKernel");
  return Status::success();
}

} // namespace tgc::rt::cuda
