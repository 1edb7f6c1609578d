//===- Linalg.cpp - batched matrix products -------------------------------===//
//
// tg.matmul on the CPU: every product goes through OpenBLAS sgemm with f32
// accumulation. f16/bf16 operands are widened once into f32 scratch and the
// result rounded once on store. Batch dimensions broadcast with NumPy rules;
// the common case of a batched operand times a shared rank-2 weight is one
// GEMM over the flattened batch rather than one per batch element.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "Blas.h"
#include "Common.h"

#include <climits>
#include <cstring>
#include <optional>

namespace tgc::rt::cpu {

void gemmF32(bool transposeA, bool transposeB, int64_t m, int64_t n,
             int64_t k, float alpha, const float *a, int64_t lda,
             const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  // The CPU backend loaded OpenBLAS when it allocated its regions.
  blasSgemm()(kCblasRowMajor, transposeA ? kCblasTrans : kCblasNoTrans,
              transposeB ? kCblasTrans : kCblasNoTrans, int(m), int(n),
              int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

Status matmul(const TensorRef &lhs, const TensorRef &rhs, bool transposeLhs,
              bool transposeRhs, TensorRef &result) {
  TGC_RETURN_IF_ERROR(expectValid(lhs, "lhs"));
  TGC_RETURN_IF_ERROR(expectValid(rhs, "rhs"));
  TGC_RETURN_IF_ERROR(expectValid(result, "result"));
  TGC_RETURN_IF_ERROR(expectFloat(lhs, "lhs"));
  TGC_RETURN_IF_ERROR(expectSameDType(rhs, lhs, "rhs"));
  TGC_RETURN_IF_ERROR(expectSameDType(result, lhs, "result"));
  if (lhs.rank() < 2 || rhs.rank() < 2)
    return Status::failure("matmul operands must have rank >= 2");
  size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  int64_t m = lhs.shape[transposeLhs ? lr - 1 : lr - 2];
  int64_t k = lhs.shape[transposeLhs ? lr - 2 : lr - 1];
  int64_t kr = rhs.shape[transposeRhs ? rr - 1 : rr - 2];
  int64_t n = rhs.shape[transposeRhs ? rr - 2 : rr - 1];
  if (k != kr)
    return Status::failure("matmul contraction sizes differ: " +
                           std::to_string(k) + " and " + std::to_string(kr));
  for (int64_t size : {m, n, k})
    if (size > INT_MAX)
      return Status::failure("matmul size exceeds the BLAS integer range");
  Shape lhsBatch(lhs.shape.begin(), lhs.shape.end() - 2);
  Shape rhsBatch(rhs.shape.begin(), rhs.shape.end() - 2);
  std::optional<Shape> batch = broadcastShapes(lhsBatch, rhsBatch);
  if (!batch)
    return Status::failure("matmul batch dimensions " +
                           shapeString(lhsBatch) + " and " +
                           shapeString(rhsBatch) + " do not broadcast");
  Shape expected = *batch;
  expected.push_back(m);
  expected.push_back(n);
  TGC_RETURN_IF_ERROR(expectShape(result, expected, "result"));

  F32Operand a(lhs), b(rhs);
  F32Result c(result, {&lhs, &rhs});
  int64_t lda = transposeLhs ? m : k, ldb = transposeRhs ? k : n;
  int64_t batchCount = product(*batch, 0, batch->size());
  bool rhsShared = product(rhsBatch, 0, rhsBatch.size()) == 1;
  if (rhsShared && !transposeLhs && lhsBatch == *batch &&
      batchCount * m <= INT_MAX) {
    // [B*M, K] x [K, N]: the batch folds into the rows of one GEMM.
    gemmF32(false, transposeRhs, batchCount * m, n, k, 1.0f, a.data(), lda,
            b.data(), ldb, 0.0f, c.data(), n);
  } else {
    Shape lhsStrides = broadcastStrides(lhsBatch, *batch);
    Shape rhsStrides = broadcastStrides(rhsBatch, *batch);
    for (int64_t &s : lhsStrides)
      s *= m * k;
    for (int64_t &s : rhsStrides)
      s *= k * n;
    Shape outStrides = rowMajorStrides(*batch);
    for (int64_t &s : outStrides)
      s *= m * n;
    forEachOffset<3>(*batch, {lhsStrides, rhsStrides, outStrides},
                     [&](const auto &offsets) {
                       gemmF32(transposeLhs, transposeRhs, m, n, k, 1.0f,
                               a.data() + offsets[0], lda,
                               b.data() + offsets[1], ldb, 0.0f,
                               c.data() + offsets[2], n);
                     });
  }
  c.commit();
  return Status::success();
}

Status linear(const TensorRef &input, const TensorRef &weight,
              const TensorRef &bias, bool gelu, TensorRef &result,
              TensorRef *preactivation) {
  TGC_RETURN_IF_ERROR(expectValid(input, "input"));
  TGC_RETURN_IF_ERROR(expectValid(weight, "weight"));
  TGC_RETURN_IF_ERROR(expectValid(bias, "bias"));
  TGC_RETURN_IF_ERROR(expectValid(result, "result"));
  TGC_RETURN_IF_ERROR(expectFloat(input, "input"));
  TGC_RETURN_IF_ERROR(expectSameDType(weight, input, "weight"));
  TGC_RETURN_IF_ERROR(expectFloat(result, "result"));
  TGC_RETURN_IF_ERROR(expectSameDType(bias, result, "bias"));
  if (input.rank() < 2 || weight.rank() != 2)
    return Status::failure("linear takes an input of rank >= 2 and a weight "
                           "of rank 2");
  int64_t k = input.shape.back(), n = weight.shape[1];
  if (weight.shape[0] != k)
    return Status::failure("linear contraction sizes differ: " +
                           std::to_string(k) + " and " +
                           std::to_string(weight.shape[0]));
  TGC_RETURN_IF_ERROR(expectShape(bias, {n}, "bias"));
  Shape expected(input.shape.begin(), input.shape.end() - 1);
  expected.push_back(n);
  TGC_RETURN_IF_ERROR(expectShape(result, expected, "result"));
  if (gelu != (preactivation != nullptr))
    return Status::failure("linear with gelu returns the pre-activation");
  if (preactivation) {
    TGC_RETURN_IF_ERROR(expectValid(*preactivation, "preactivation"));
    TGC_RETURN_IF_ERROR(
        expectSameDType(*preactivation, result, "preactivation"));
    TGC_RETURN_IF_ERROR(expectShape(*preactivation, expected, "preactivation"));
  }
  int64_t rows = product(expected, 0, expected.size() - 1);
  if (rows > INT_MAX || n > INT_MAX || k > INT_MAX)
    return Status::failure("linear size exceeds the BLAS integer range");
  F32Operand a(input), w(weight), b(bias);
  F32Result c(result, {&input, &weight, &bias});
  gemmF32(false, false, rows, n, k, 1.0f, a.data(), k, w.data(), n, 0.0f,
          c.data(), n);
  std::optional<F32Result> pre;
  if (preactivation)
    pre.emplace(*preactivation,
                std::initializer_list<const TensorRef *>{&input, &weight,
                                                         &bias, &result});
  float *cs = c.data(), *ps = pre ? pre->data() : nullptr;
  const float *bs = b.data();
  parallelFor(rows, grainFor(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *row = cs + r * n;
      for (int64_t j = 0; j < n; ++j)
        row[j] += bs[j];
      if (gelu) {
        std::memcpy(ps + r * n, row, size_t(n) * sizeof(float));
        geluTanhArray(row, row, n);
      }
    }
  });
  c.commit();
  if (pre)
    pre->commit();
  return Status::success();
}

} // namespace tgc::rt::cpu
