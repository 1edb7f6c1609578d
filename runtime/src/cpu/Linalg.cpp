//===- Linalg.cpp - batched matrix products -------------------------------===//
//
// tg.matmul on the CPU: every product goes through OpenBLAS sgemm with f32
// accumulation. f16/bf16 operands are widened once into f32 scratch and the
// result rounded once on store. Batch dimensions broadcast with NumPy rules;
// the common case of a batched operand times a shared rank-2 weight is one
// GEMM over the flattened batch rather than one per batch element.
//
// The threads are the backend's, not OpenBLAS's: OpenBLAS's threaded SGEMM
// splits the work by its thread count, and on some of its kernel sets
// (Haswell, Zen) the split changes the rounding. gemmF32 instead cuts C into
// tiles fixed by the shape (gemmTiling) and runs one single-threaded sgemm
// per tile on the team, so a product is the same bits at any thread count.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "Blas.h"
#include "Common.h"

#include "tgc/Support/ShapeRules.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tgc::rt::cpu {

namespace {

/// The tile size's scale, in multiply-adds: a product of kTileWork * t^2
/// gets t tiles (a power of two) of kTileWork * t each. Each tile packs its
/// own panels of A and B, memory traffic that small tiles pay too often;
/// growing the tiles with the product keeps that small beside the
/// arithmetic while small products still split in two. On the small GPT-2
/// of bench/CPU.md, fixed tiles of 2^22 multiply-adds spent a third more
/// time in GEMMs than one OpenBLAS call on one thread; this rule is within
/// a few percent of it.
constexpr int64_t kTileWork = int64_t(1) << 24;
/// At most this many tiles: enough to balance 64 threads; a power of two so
/// that they divide evenly among 2, 4, 8... threads.
constexpr int64_t kMaxTiles = 64;
/// Tiles are at least this many rows and columns of C, multiples of the
/// micro-kernels' register blocks (OpenBLAS's x86 SGEMM kernels block C's
/// columns, its M in column-major terms, by 16 and rows by 4 to 8).
constexpr int64_t kRowAlign = 8, kColAlign = 16;
constexpr int64_t kMinRows = 32, kMinCols = 64;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Keeps an OpenBLAS call on the calling thread wherever it is made.
/// OpenBLAS's OpenMP build sizes its own team from OpenMP's thread count
/// (omp_get_max_threads) at every call, whatever it was told before, and
/// runs on one thread by itself only inside an active parallel region;
/// outside one, this sets the calling thread's count to 1 for the call.
class SingleThreadedBlas {
public:
  SingleThreadedBlas() {
#ifdef _OPENMP
    if (!omp_in_parallel()) {
      saved = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~SingleThreadedBlas() {
#ifdef _OPENMP
    if (saved > 0)
      omp_set_num_threads(saved);
#endif
  }

private:
  int saved = 0;
};

} // namespace

GemmTiling gemmTiling(int64_t m, int64_t n, int64_t k) {
  GemmTiling tiling;
  tiling.tileRows = m;
  tiling.tileCols = n;
  if (m <= 0 || n <= 0)
    return tiling;
  // m * n * k can exceed int64 only for tensors no machine holds; saturate.
  double work = double(m) * double(n) * double(std::max<int64_t>(k, 1));
  // The tile count grows as the square root of the work: a product of
  // kTileWork * t^2 multiply-adds gets t tiles of kTileWork * t each.
  double ideal = std::sqrt(work / double(kTileWork));
  int64_t tiles = 1;
  while (tiles < kMaxTiles && double(2 * tiles) <= ideal)
    tiles *= 2;
  // Halve the longer side of the tile until there are `tiles` of them.
  int64_t rowTiles = 1, colTiles = 1;
  for (; tiles > 1; tiles /= 2) {
    int64_t rows = ceilDiv(m, rowTiles), cols = ceilDiv(n, colTiles);
    bool splitRows = rows >= 2 * kMinRows, splitCols = cols >= 2 * kMinCols;
    if (splitRows && (rows >= cols || !splitCols))
      rowTiles *= 2;
    else if (splitCols)
      colTiles *= 2;
    else
      break;
  }
  tiling.tileRows = std::min(m, roundUp(ceilDiv(m, rowTiles), kRowAlign));
  tiling.tileCols = std::min(n, roundUp(ceilDiv(n, colTiles), kColAlign));
  tiling.rowTiles = ceilDiv(m, tiling.tileRows);
  tiling.colTiles = ceilDiv(n, tiling.tileCols);
  return tiling;
}

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
  SgemmFn sgemm = blasSgemm();
  int opA = transposeA ? kCblasTrans : kCblasNoTrans;
  int opB = transposeB ? kCblasTrans : kCblasNoTrans;
  bool rowMajor = blasDirectSgemm();
  // C[rows, cols] = op(A)[rows, k] op(B)[k, cols], one OpenBLAS call.
  auto multiply = [&](int64_t rows, int64_t cols, const float *aPart,
                      const float *bPart, float *cPart) {
    if (rowMajor) {
      sgemm(kCblasRowMajor, opA, opB, int(rows), int(cols), int(k), alpha,
            aPart, int(lda), bPart, int(ldb), beta, cPart, int(ldc));
      return;
    }
    // Column-major with the operands swapped (C^T = op(B)^T op(A)^T): what
    // OpenBLAS does with a row-major call itself, minus the small-matrix
    // "direct" SGEMM it takes for row-major calls on any AVX-512 CPU
    // (blasDirectSgemm).
    sgemm(kCblasColMajor, opB, opA, int(cols), int(rows), int(k), alpha,
          bPart, int(ldb), aPart, int(lda), beta, cPart, int(ldc));
  };
  if (blasThreaded()) {
    multiply(m, n, a, b, c);
    return;
  }
  GemmTiling tiling = gemmTiling(m, n, k);
  auto runTile = [&](int64_t tile) {
    SingleThreadedBlas single;
    int64_t row = (tile / tiling.colTiles) * tiling.tileRows;
    int64_t col = (tile % tiling.colTiles) * tiling.tileCols;
    // Row `row` of op(A) and column `col` of op(B) in their storage.
    multiply(std::min(tiling.tileRows, m - row),
             std::min(tiling.tileCols, n - col),
             a + (transposeA ? row : row * lda),
             b + (transposeB ? col * ldb : col), c + row * ldc + col);
  };
  int64_t count = tiling.count();
  if (count == 1) {
    runTile(0);
    return;
  }
  // Inside another parallel loop (attention's heads) this runs on the
  // calling thread: OpenMP does not nest teams by default.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t tile = 0; tile < count; ++tile)
    runTile(tile);
}

namespace {

/// `lhs x rhs`, plus `addend` when given (beta = 1 onto it in f32).
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
  for (int64_t size : {m, n, k})
    if (size > INT_MAX)
      return Status::failure("matmul size exceeds the BLAS integer range");
  Shape lhsBatch(lhs.shape.begin(), lhs.shape.end() - 2);
  Shape rhsBatch(rhs.shape.begin(), rhs.shape.end() - 2);
  Shape batch(expected.shape.begin(), expected.shape.end() - 2);

  float beta = 0.0f;
  F32Operand a(lhs), b(rhs);
  F32Result c(result, {&lhs, &rhs});
  if (addend) {
    if (overlaps(*addend, result) && addend->data != result.data)
      return Status::failure("matmul_add result partly overlaps its addend");
    // The accumulator starts as the addend (already there when the result
    // is written over an f32 addend).
    if (static_cast<const void *>(c.data()) != addend->data) {
      F32Operand start(*addend);
      float *to = c.data();
      const float *from = start.data();
      parallelFor(addend->numElements(), 1 << 16,
                  [&](int64_t begin, int64_t end) {
                    std::copy(from + begin, from + end, to + begin);
                  });
    }
    beta = 1.0f;
  }
  int64_t lda = transposeLhs ? m : k, ldb = transposeRhs ? k : n;
  int64_t batchCount = product(batch, 0, batch.size());
  bool rhsShared = product(rhsBatch, 0, rhsBatch.size()) == 1;
  if (rhsShared && !transposeLhs && lhsBatch == batch &&
      batchCount * m <= INT_MAX) {
    // [B*M, K] x [K, N]: the batch folds into the rows of one GEMM.
    gemmF32(false, transposeRhs, batchCount * m, n, k, 1.0f, a.data(), lda,
            b.data(), ldb, beta, c.data(), n);
  } else {
    Shape lhsStrides = broadcastStrides(lhsBatch, batch);
    Shape rhsStrides = broadcastStrides(rhsBatch, batch);
    for (int64_t &s : lhsStrides)
      s *= m * k;
    for (int64_t &s : rhsStrides)
      s *= k * n;
    Shape outStrides = rowMajorStrides(batch);
    for (int64_t &s : outStrides)
      s *= m * n;
    std::vector<std::array<int64_t, 3>> products;
    products.reserve(size_t(batchCount));
    forEachOffset<3>(batch, {lhsStrides, rhsStrides, outStrides},
                     [&](const auto &offsets) {
                       products.push_back({offsets[0], offsets[1], offsets[2]});
                     });
    // A product large enough to be tiled runs its tiles on the team, one
    // product after another; small ones (attention's per-head matrices) run
    // side by side, a chunk of them per thread.
    auto multiply = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const std::array<int64_t, 3> &offsets = products[size_t(i)];
        gemmF32(transposeLhs, transposeRhs, m, n, k, 1.0f,
                a.data() + offsets[0], lda, b.data() + offsets[1], ldb, beta,
                c.data() + offsets[2], n);
      }
    };
    if (gemmTiling(m, n, k).count() > 1) {
      multiply(0, batchCount);
    } else {
      int64_t work = std::max<int64_t>(1, m * n * std::max<int64_t>(k, 1));
      parallelFor(batchCount, std::max<int64_t>(1, kTileWork / work),
                  multiply);
    }
  }
  c.commit();
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

/// The expert row ranges `offsets` holds ([E + 1], from tg.moe_route):
/// nondecreasing from 0 to `rows`, or why not.
Status readExpertOffsets(const TensorRef &offsets, int64_t rows,
                         std::vector<int64_t> &bounds) {
  bounds.resize(size_t(offsets.numElements()));
  for (int64_t e = 0; e < offsets.numElements(); ++e)
    bounds[size_t(e)] = loadI64(offsets, e);
  bool ok = bounds.front() == 0 && bounds.back() == rows;
  for (size_t e = 1; ok && e < bounds.size(); ++e)
    ok = bounds[e] >= bounds[e - 1];
  if (!ok)
    return Status::failure("expert offsets must rise from 0 to the " +
                           std::to_string(rows) + " rows");
  return Status::success();
}

} // namespace

Status expertLinear(Context &ctx, const TensorRef &input,
                    const TensorRef &offsets,
                    const std::vector<TensorRef> &weights, bool transposeWeight,
                    TensorRef &result) {
  // Types and shapes as the loader checked them (shapes::expertLinear);
  // the offsets are data, read below.
  for (const TensorRef &weight : weights)
    if (overlaps(weight, result))
      return Status::failure("expert_linear result overlaps a weight");
  int64_t m = input.shape[0], k = input.shape[1], n = result.shape[1];
  for (int64_t size : {m, n, k})
    if (size > INT_MAX)
      return Status::failure("expert_linear size exceeds the BLAS range");
  std::vector<int64_t> bounds;
  TGC_RETURN_IF_ERROR(readExpertOffsets(offsets, m, bounds));
  F32Operand a(input);
  F32Result c(result, {&input, &offsets});
  for (size_t e = 0; e < weights.size(); ++e) {
    int64_t first = bounds[e], rows = bounds[e + 1] - first;
    if (rows == 0)
      continue;
    F32Operand b(weights[e]);
    gemmF32(false, transposeWeight, rows, n, k, 1.0f, a.data() + first * k, k,
            b.data(), transposeWeight ? k : n, 0.0f, c.data() + first * n, n);
  }
  c.commit();
  return Status::success();
}

Status expertLinearWeightGrad(Context &ctx, const TensorRef &lhs,
                              const TensorRef &rhs, const TensorRef &offsets,
                              std::vector<TensorRef> &results) {
  // Types and shapes as the loader checked them (shapes::expertOuter).
  int64_t m = lhs.shape[0], p = lhs.shape[1], q = rhs.shape[1];
  for (int64_t size : {m, p, q})
    if (size > INT_MAX)
      return Status::failure("expert_linear_weight_grad size exceeds the "
                             "BLAS range");
  std::vector<int64_t> bounds;
  TGC_RETURN_IF_ERROR(readExpertOffsets(offsets, m, bounds));
  F32Operand a(lhs), b(rhs);
  for (size_t e = 0; e < results.size(); ++e) {
    int64_t first = bounds[e], rows = bounds[e + 1] - first;
    F32Result c(results[e], {&lhs, &rhs, &offsets});
    // [P, Q] = lhs_e^T rhs_e; an expert without rows gets zeros.
    gemmF32(true, false, p, q, rows, 1.0f, a.data() + first * p, p,
            b.data() + first * q, q, 0.0f, c.data(), q);
    c.commit();
  }
  return Status::success();
}

Status linear(Context &ctx, const TensorRef &input, const TensorRef &weight,
              const TensorRef &bias, bool gelu, TensorRef &result,
              TensorRef *preactivation) {
  // Types and shapes (and the pre-activation exactly with gelu) as the
  // loader checked them.
  int64_t k = input.shape.back(), n = weight.shape[1];
  Shape expected(input.shape.begin(), input.shape.end() - 1);
  expected.push_back(n);
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

namespace {

/// The sum over the rows of `values` ([rows, cols], f32) into `result`
/// ([cols]), accumulated in double in row order (sumTo accumulates in
/// double too: the same f32 sums).
void sumRows(const float *values, int64_t rows, int64_t cols,
             TensorRef &result) {
  std::vector<double> acc(size_t(cols), 0.0);
  parallelFor(cols,
              std::max<int64_t>(64, (1 << 16) / std::max<int64_t>(rows, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = 0; r < rows; ++r)
                  for (int64_t j = begin; j < end; ++j)
                    acc[size_t(j)] += values[r * cols + j];
              });
  for (int64_t j = 0; j < cols; ++j)
    storeF32(result, j, float(acc[size_t(j)]));
}

} // namespace

Status matmulBiasGrad(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
                      bool biasOfLhs, TensorRef &product, TensorRef &biasGrad) {
  // Types and shapes as the loader checked them; the overlaps are the
  // plan's.
  if (overlaps(biasGrad, lhs) || overlaps(biasGrad, rhs) ||
      overlaps(biasGrad, product))
    return Status::failure("matmul_bias_grad's bias_grad overlaps another "
                           "tensor");
  // The sum first: the product may be written over an operand.
  const TensorRef &summed = biasOfLhs ? lhs : rhs;
  F32Operand values(summed);
  sumRows(values.data(), summed.shape[0], summed.shape[1], biasGrad);
  return matmul(ctx, lhs, rhs, /*transposeLhs=*/true, /*transposeRhs=*/false,
                product);
}

Status matmulGeluGrad(Context &ctx, const TensorRef &grad,
                      const TensorRef &weight, const TensorRef &preactivation,
                      bool transposeRhs, TensorRef &result,
                      TensorRef &biasGrad) {
  // Types and shapes as the loader checked them.
  int64_t k = biasGrad.shape[0], n = grad.shape.back();
  int64_t rows = k == 0 ? 0 : result.numElements() / k;
  if (rows > INT_MAX || n > INT_MAX || k > INT_MAX)
    return Status::failure("matmul_gelu_grad size exceeds the BLAS integer "
                           "range");
  // The f32 product, GELU's gradient of each row as tg.gelu_grad computes
  // it, then the bias sum of the f32 values: in f32 the bits of matmul
  // (whose batch folds into the rows the same way), gelu_grad and sum_to.
  F32Operand g(grad), w(weight), x(preactivation);
  std::vector<float> products(size_t(rows * k));
  gemmF32(false, transposeRhs, rows, k, n, 1.0f, g.data(), n, w.data(),
          transposeRhs ? n : k, 0.0f, products.data(), k);
  float *ps = products.data();
  const float *xs = x.data();
  parallelFor(rows, grainFor(k), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      geluTanhGradArray(xs + r * k, ps + r * k, ps + r * k, k);
  });
  sumRows(ps, rows, k, biasGrad);
  storeF32Array(ps, rows * k, result);
  return Status::success();
}

} // namespace tgc::rt::cpu

//===----------------------------------------------------------------------===//
// tg.matmul_4bit: a product with a frozen 4-bit weight
//===----------------------------------------------------------------------===//

namespace tgc::rt::cpu {

namespace {

/// Output columns per panel: each panel dequantizes the part of the weight
/// its columns read (a panel of 64 x k values in f32), multiplies it with
/// one single-threaded GEMM and drops it; no copy of the whole weight
/// exists.
constexpr int64_t kPanel4bit = 64;

} // namespace

Status matmul4bit(Context &, const TensorRef &input,
                  const Weight4bitRefs &weight, bool transposeRhs,
                  TensorRef &result) {
  // Types and shapes as the loader checked them (shapes::matmul4bit).
  if (overlaps(input, result))
    return Status::failure("matmul_4bit result overlaps its input");
  int64_t k = transposeRhs ? weight.cols : weight.rows;
  int64_t n = transposeRhs ? weight.rows : weight.cols;
  int64_t m = input.numElements() / k;
  for (int64_t size : {m, n, k})
    if (size > INT_MAX)
      return Status::failure("matmul_4bit size exceeds the BLAS integer range");
  F32Operand x(input);
  F32Result y(result, {&input});
  Dequantizer4bit w(weight);
  DType dtype = input.dtype;
  int64_t cols = weight.cols;
  int64_t panels = (n + kPanel4bit - 1) / kPanel4bit;
  parallelFor(panels, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> panel(size_t(kPanel4bit * k));
    for (int64_t p = begin; p < end; ++p) {
      int64_t first = p * kPanel4bit, count = std::min(kPanel4bit, n - first);
      if (transposeRhs) {
        // Rows first.. of W [rows, cols]: output column j reads row j.
        for (int64_t j = 0; j < count; ++j)
          for (int64_t c = 0; c < k; ++c)
            panel[size_t(j * k + c)] =
                roundedTo(dtype, w((first + j) * cols + c));
        gemmF32(false, true, m, count, k, 1.0f, x.data(), k, panel.data(), k,
                0.0f, y.data() + first, n);
      } else {
        // Columns first.. of W: panel [rows, count].
        for (int64_t r = 0; r < k; ++r)
          for (int64_t j = 0; j < count; ++j)
            panel[size_t(r * count + j)] =
                roundedTo(dtype, w(r * cols + first + j));
        gemmF32(false, false, m, count, k, 1.0f, x.data(), k, panel.data(),
                count, 0.0f, y.data() + first, n);
      }
    }
  });
  y.commit();
  return Status::success();
}

} // namespace tgc::rt::cpu
