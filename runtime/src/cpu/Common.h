//===- Common.h - shared helpers of the CPU kernels -------------*- C++ -*-===//
//
// What the CPU kernels share: NumPy broadcasting (result shapes, per-operand
// strides where a repeated dimension has stride 0), a row-major walk over an
// index space that tracks one element offset per operand, f32 views of float
// tensors (the data itself for f32, a converted copy for f16/bf16, so the
// math is written once), contract checks that turn a wrong shape or type into
// a Status instead of an out-of-bounds access, and the f32 GEMM and strided
// copy the linear-algebra and shape kernels build on.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CPU_COMMON_H
#define TGC_RUNTIME_SRC_CPU_COMMON_H

#include "tgc/runtime/Tensor.h"
#include "Scalar.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

/// Returns the Status of `expr` from the enclosing function when it failed.
#define TGC_RETURN_IF_ERROR(expr)                                              \
  do {                                                                         \
    ::tgc::rt::Status tgcStatus_ = (expr);                                     \
    if (!tgcStatus_.ok())                                                      \
      return tgcStatus_;                                                       \
  } while (false)

namespace tgc::rt::cpu {

using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Shapes and broadcasting
//===----------------------------------------------------------------------===//

/// Element strides of a dense row-major tensor of `shape`.
Shape rowMajorStrides(const Shape &shape);

/// The NumPy broadcast of two shapes, or nothing when they are incompatible.
std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs);

/// Whether `from` broadcasts to exactly `to`.
bool broadcastsTo(const Shape &from, const Shape &to);

/// The strides with which a row-major tensor of shape `from` is read at the
/// indices of the larger shape `to` it broadcasts to: one per dimension of
/// `to`, 0 where `from` repeats (size 1 or missing). `from` must broadcast.
Shape broadcastStrides(const Shape &from, const Shape &to);

/// Product of `shape[begin, end)`.
int64_t product(const Shape &shape, size_t begin, size_t end);

/// `axis` in [-rank, rank) made non-negative, or nothing when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

std::string shapeString(const Shape &shape);

/// Walks every index of `shape` in row-major order and calls `fn(offsets)`
/// where `offsets[k] = sum_d index[d] * strides[k][d]`.
template <size_t N, typename Fn>
void forEachOffset(const Shape &shape, const std::array<Shape, N> &strides,
                   Fn &&fn) {
  int64_t rank = int64_t(shape.size());
  for (int64_t size : shape)
    if (size == 0)
      return;
  std::array<int64_t, N> offsets{};
  if (rank == 0) {
    fn(offsets);
    return;
  }
  int64_t inner = shape[rank - 1];
  std::array<int64_t, N> innerStrides;
  for (size_t k = 0; k < N; ++k)
    innerStrides[k] = strides[k][rank - 1];
  std::vector<int64_t> index(rank, 0);
  while (true) {
    std::array<int64_t, N> current = offsets;
    for (int64_t i = 0; i < inner; ++i) {
      fn(current);
      for (size_t k = 0; k < N; ++k)
        current[k] += innerStrides[k];
    }
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// forEachOffset on the thread team: the rows of the index space (every
/// index but the last) are split into chunks of about kElementGrain
/// elements, each walked in row-major order from its first row's offsets.
/// `fn` must be safe to call concurrently for distinct indices.
template <size_t N, typename Fn>
void forEachOffsetParallel(const Shape &shape,
                           const std::array<Shape, N> &strides, Fn &&fn);

/// Copies the elements of an index space of `shape` from `src` to `dst`,
/// each addressed by its own element strides.
void copyElements(void *dst, const Shape &dstStrides, const void *src,
                  const Shape &srcStrides, const Shape &shape,
                  size_t elementSize);

//===----------------------------------------------------------------------===//
// Contract checks
//===----------------------------------------------------------------------===//

Status expectShape(const TensorRef &t, const Shape &expected,
                   const char *what);
Status expectFloat(const TensorRef &t, const char *what);
Status expectDType(const TensorRef &t, DType dtype, const char *what);
Status expectSameDType(const TensorRef &t, const TensorRef &like,
                       const char *what);
/// `t` in `computed`'s float type, or in f16 or bf16 where that is f32 (an
/// op that reads it widened or writes it rounded: tgc/Support/Precision.h).
Status expectStoredAs(const TensorRef &t, const TensorRef &computed,
                      const char *what);
/// An i32 or i64 tensor.
Status expectIndex(const TensorRef &t, const char *what);
/// A tensor with exactly one element (a rank-0 scalar).
Status expectScalar(const TensorRef &t, const char *what);
/// Rejects shapes with negative sizes or a null buffer for a non-empty
/// tensor; every kernel checks its operands and results with it first.
Status expectValid(const TensorRef &t, const char *what);

/// Whether the byte ranges of two tensors intersect.
bool overlaps(const TensorRef &a, const TensorRef &b);

//===----------------------------------------------------------------------===//
// f32 views of float tensors
//===----------------------------------------------------------------------===//

/// The elements of a float tensor as f32: the tensor's own data when it is
/// f32, otherwise a converted copy.
class F32Operand {
public:
  explicit F32Operand(const TensorRef &t);
  const float *data() const { return data_; }
  float operator[](int64_t i) const { return data_[i]; }

private:
  const float *data_ = nullptr;
  std::vector<float> copy_;
};

/// Storage in which a kernel writes a float result as f32: the result's own
/// data when it is f32 and does not overlap any of `distinctFrom`, otherwise
/// a scratch buffer that `commit` rounds into the result once.
class F32Result {
public:
  explicit F32Result(TensorRef &t,
                     std::initializer_list<const TensorRef *> distinctFrom = {});
  float *data() { return data_; }
  float &operator[](int64_t i) { return data_[i]; }
  /// Stores the scratch buffer into the result (no-op when written direct).
  void commit();

private:
  TensorRef &result_;
  float *data_ = nullptr;
  std::vector<float> scratch_;
  bool direct_ = false;
};

/// `value` as stored in `dtype` (to nearest even) and read back.
inline float roundedTo(DType dtype, float value) {
  switch (dtype) {
  case DType::BF16:
    return bf16ToF32(f32ToBF16(value));
  case DType::F16:
    return f16ToF32(f32ToF16(value));
  default:
    return value;
  }
}

/// Converts `count` f32 values into a float tensor's storage.
void storeF32Array(const float *values, int64_t count, TensorRef &t);

/// The first element of a float tensor (f32, f16 or bf16) that is NaN or
/// infinite, or -1 (searched on every thread): what checkpoints, saves and
/// batch files refuse.
int64_t firstNonFinite(const TensorRef &t);
/// The same on the calling thread only (for callers that are themselves
/// one of several threads).
int64_t firstNonFiniteSerial(const TensorRef &t);
/// Writes `count` bf16 patterns as f32 (each shifted up 16 bits, exact) on
/// the calling thread, and returns the first that is NaN or infinite, or
/// -1: the check and the conversion of a bf16 file in one pass.
int64_t widenBF16(const uint16_t *from, uint32_t *to, int64_t count);

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// GELU's tanh approximation (tg.gelu, and tg.linear's epilogue).
inline float geluTanh(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(u));
}

/// geluTanh of `count` elements, vectorized (`out` may be `x`).
void geluTanhArray(const float *x, float *out, int64_t count);
/// `g * gelu'(x)` of the tanh approximation over `count` elements
/// (tg.gelu_grad, and tg.matmul_gelu_grad's epilogue).
void geluTanhGradArray(const float *x, const float *g, float *out,
                       int64_t count);

/// GELU's erf form (tg.gelu {exact}).
inline float geluErf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * kSqrtHalf));
}

//===----------------------------------------------------------------------===//
// f32 GEMM
//===----------------------------------------------------------------------===//

/// How gemmF32 splits C = op(A) @ op(B): into `rowTiles` x `colTiles`
/// tiles of at most `tileRows` x `tileCols` elements, each a
/// single-threaded sgemm over the whole contraction. A function of the
/// shape only, never of the thread count, so each element of C is computed
/// by the same call with the same operands whichever thread runs it.
struct GemmTiling {
  int64_t tileRows = 0, tileCols = 0;
  int64_t rowTiles = 1, colTiles = 1;
  int64_t count() const { return rowTiles * colTiles; }
};
GemmTiling gemmTiling(int64_t m, int64_t n, int64_t k);

/// Row-major `C = alpha * op(A) @ op(B) + beta * C` with `op(A)` of shape
/// [m, k] and `op(B)` [k, n]; empty sizes are handled. The tiles of
/// gemmTiling(m, n, k) run on the thread team (or on the calling thread
/// inside a parallel loop), each one single-threaded OpenBLAS sgemm, so the
/// result is the same bits at any thread count whatever OpenBLAS's own
/// threaded kernels would do.
void gemmF32(bool transposeA, bool transposeB, int64_t m, int64_t n,
             int64_t k, float alpha, const float *a, int64_t lda,
             const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

} // namespace tgc::rt::cpu

#include "Parallel.h"

namespace tgc::rt::cpu {

/// Calls `fn(offsets, count, innerStrides)` for every row of the index
/// space (all indices but the last) with the offsets of its first element,
/// in chunks on the thread team; a rank-0 or rank-1 space is one row.
template <size_t N, typename Fn>
void forEachRowParallel(const Shape &shape,
                        const std::array<Shape, N> &strides, Fn &&fn) {
  int64_t rank = int64_t(shape.size());
  for (int64_t size : shape)
    if (size == 0)
      return;
  std::array<int64_t, N> innerStrides{};
  if (rank == 0) {
    fn(std::array<int64_t, N>{}, int64_t(1), innerStrides);
    return;
  }
  for (size_t k = 0; k < N; ++k)
    innerStrides[k] = strides[k][rank - 1];
  int64_t inner = shape[rank - 1];
  int64_t rows = product(shape, 0, size_t(rank - 1));
  parallelFor(rows, grainFor(inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      std::array<int64_t, N> offsets{};
      int64_t rest = row;
      for (int64_t d = rank - 2; d >= 0; --d) {
        int64_t index = rest % shape[d];
        rest /= shape[d];
        for (size_t k = 0; k < N; ++k)
          offsets[k] += index * strides[k][d];
      }
      fn(offsets, inner, innerStrides);
    }
  });
}

template <size_t N, typename Fn>
void forEachOffsetParallel(const Shape &shape,
                           const std::array<Shape, N> &strides, Fn &&fn) {
  forEachRowParallel<N>(shape, strides,
                        [&](std::array<int64_t, N> offsets, int64_t count,
                            const std::array<int64_t, N> &step) {
                          for (int64_t i = 0; i < count; ++i) {
                            fn(offsets);
                            for (size_t k = 0; k < N; ++k)
                              offsets[k] += step[k];
                          }
                        });
}

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_SRC_CPU_COMMON_H
