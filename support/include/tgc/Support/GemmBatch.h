//===- GemmBatch.h - how a batched matmul becomes GEMM calls ----*- C++ -*-===//
//
// The contract between the CUDA backend's matmul (runtime/src/cuda/
// Linalg.cu, which runs it) and the cost model (lib/Dialect/TG/IR/
// TGCost.cpp, which counts the cuBLASLt calls it makes): the batch
// dimensions of `[lhsBatch..., M, K] x [rhsBatch..., K, N]` with size-1
// dimensions dropped and neighbours merged wherever every operand steps
// through both as through one; a batch the right operand does not have
// folds into the rows of one GEMM, the innermost remaining dimension is
// one strided-batched GEMM, and the outer ones are walked one call each.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_GEMMBATCH_H
#define TGC_SUPPORT_GEMMBATCH_H

#include <climits>
#include <cstdint>
#include <vector>

namespace tgc {

/// One batch dimension of a matmul with the element strides of each operand
/// along it (0 where the operand is broadcast).
struct BatchDim {
  int64_t size, lhsStride, rhsStride, outStride;
};

/// The collapsed batch dimensions of `[lhsBatch] x [rhsBatch] -> [batch]`,
/// for matrices of lhsMatrix, rhsMatrix and outMatrix elements.
inline std::vector<BatchDim> collapseBatch(const std::vector<int64_t> &lhsBatch,
                                           const std::vector<int64_t> &rhsBatch,
                                           const std::vector<int64_t> &batch,
                                           int64_t lhsMatrix,
                                           int64_t rhsMatrix,
                                           int64_t outMatrix) {
  size_t rank = batch.size();
  std::vector<BatchDim> dims(rank);
  int64_t lhsStride = lhsMatrix, rhsStride = rhsMatrix, outStride = outMatrix;
  for (size_t i = rank; i-- > 0;) {
    size_t fromEnd = rank - 1 - i;
    int64_t lhsSize =
        fromEnd < lhsBatch.size() ? lhsBatch[lhsBatch.size() - 1 - fromEnd] : 1;
    int64_t rhsSize =
        fromEnd < rhsBatch.size() ? rhsBatch[rhsBatch.size() - 1 - fromEnd] : 1;
    dims[i] = {batch[i], lhsSize == 1 ? 0 : lhsStride,
               rhsSize == 1 ? 0 : rhsStride, outStride};
    lhsStride *= lhsSize;
    rhsStride *= rhsSize;
    outStride *= batch[i];
  }
  std::vector<BatchDim> collapsed;
  for (const BatchDim &dim : dims) {
    if (dim.size == 1)
      continue;
    if (!collapsed.empty()) {
      BatchDim &last = collapsed.back();
      if (last.lhsStride == dim.lhsStride * dim.size &&
          last.rhsStride == dim.rhsStride * dim.size &&
          last.outStride == dim.outStride * dim.size) {
        last = {last.size * dim.size, dim.lhsStride, dim.rhsStride,
                dim.outStride};
        continue;
      }
    }
    collapsed.push_back(dim);
  }
  return collapsed;
}

/// Whether the collapsed batch `dims` folds into the rows of one GEMM:
/// [B*M, K] x [K, N].
inline bool batchFoldsIntoRows(const std::vector<BatchDim> &dims,
                               bool transposeLhs, int64_t m, int64_t k) {
  return dims.size() == 1 && dims[0].rhsStride == 0 && !transposeLhs &&
         dims[0].lhsStride == m * k && dims[0].size * m <= INT_MAX;
}

/// The cuBLASLt calls of one matmul over `dims` (collapsed): one when the
/// batch folds or is a single strided batch, else one per index of the
/// outer dimensions.
inline int64_t gemmCalls(const std::vector<BatchDim> &dims, bool transposeLhs,
                         int64_t m, int64_t k) {
  if (batchFoldsIntoRows(dims, transposeLhs, m, k))
    return 1;
  int64_t calls = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i)
    calls *= dims[i].size;
  return calls;
}

} // namespace tgc

#endif // TGC_SUPPORT_GEMMBATCH_H
