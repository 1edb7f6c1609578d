//===- Experts.cu - mixture-of-experts routing and grouped GEMMs ----------===//
//
// tg.top_k, tg.moe_route, tg.expert_linear and its weight gradient on the
// GPU. Nothing here reads the router's choices on the host: the split of
// the rows between the experts stays on the device (tg.moe_route's
// offsets), and the grouped kernels launch a grid sized for the worst split
// (every row to one expert) whose blocks past their expert's rows return at
// once, so a step never waits for the host and can be captured as a graph.
//
// The grouped GEMMs are plain shared-memory tiles with f32 accumulation in
// a fixed order (deterministic, any element type); a CUTLASS or cuBLASLt
// grouped GEMM is the fast path still to come.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "TiledProduct.cuh"
#include "tgc/Support/ShapeRules.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tgc::rt::cuda {

namespace {

/// Experts per grouped launch: their weight pointers travel in the
/// kernel's parameters.
constexpr int kExpertsPerLaunch = 64;
/// The grouped GEMMs' output tile (kTile x kTile, 256 threads, each
/// kTile / 8 outputs of a column) and their reduction step.
constexpr int kTile = kTileProduct, kThreads = kTileThreads;

struct ExpertTable {
  const void *data[kExpertsPerLaunch];
  int first; // the launch's first expert
};

/// Whether element (value a, index ia) comes before (b, ib) in torch.topk's
/// order: larger first, NaN above every number, ties by index.
__device__ inline bool above(float a, int64_t ia, float b, int64_t ib) {
  bool nanA = isnan(a), nanB = isnan(b);
  if (nanA != nanB)
    return nanA;
  if (!nanA && a != b)
    return a > b;
  return ia < ib;
}

/// tg.top_k, a row per thread: pick j is the first element, in `above`'s
/// order, of those after pick j - 1 (k passes over the row, no scratch).
__global__ void topKKernel(const void *input, DType dtype, int64_t rows,
                           int64_t width, int64_t k, void *result,
                           DType resultType) {
  TGC_GRID_LOOP(row, rows) {
    const int64_t base = row * width;
    float lastValue = 0.0f;
    int64_t last = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      float bestValue = 0.0f;
      for (int64_t i = 0; i < width; ++i) {
        float v = loadFloat(input, dtype, base + i);
        if (last >= 0 && !above(lastValue, last, v, i))
          continue;
        if (best < 0 || above(v, i, bestValue, best)) {
          best = i;
          bestValue = v;
        }
      }
      storeInt(result, resultType, row * k + j, best);
      last = best;
      lastValue = bestValue;
    }
  }
}

/// The sum of `value` over the block (every thread gets it); `partial`
/// holds one entry per warp.
__device__ inline int64_t blockSum(int64_t value, int64_t *partial) {
  value = warpSum(value);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  int64_t total = 0;
  for (int w = 0; w < int(blockDim.x / 32); ++w)
    total += partial[w];
  return total;
}

/// tg.moe_route, one block per expert e: its first row is the number of
/// choices of the experts before it; a block-wide prefix sum over each
/// chunk of choices ranks e's own choices in their order (the stable sort),
/// each placed at its row. Block 0 checks the choices.
__global__ void moeRouteKernel(const void *choices, DType choiceType,
                               int64_t total, int64_t k, int64_t experts,
                               void *rows, DType rowType, void *positions,
                               DType positionType, void *offsets,
                               DType offsetType, DeviceError *error) {
  __shared__ int64_t partial[kThreads / 32];
  __shared__ int64_t scan[kThreads];
  const int64_t e = blockIdx.x;
  int64_t before = 0;
  for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
    int64_t c = loadInt(choices, choiceType, i);
    if (c < 0 || c >= experts) {
      if (e == 0 && error)
        raiseError(error, kIndexOutOfRange, i, c, experts);
      continue;
    }
    before += c < e;
  }
  int64_t start = blockSum(before, partial);
  if (threadIdx.x == 0) {
    storeInt(offsets, offsetType, e, start);
    if (e == experts - 1) // every choice out of range is a runtime error
      storeInt(offsets, offsetType, experts, total);
  }
  for (int64_t chunk = 0; chunk < total; chunk += blockDim.x) {
    int64_t i = chunk + threadIdx.x;
    int64_t mine = i < total && loadInt(choices, choiceType, i) == e;
    // Inclusive Hillis-Steele scan of the flags.
    __syncthreads();
    scan[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned step = 1; step < blockDim.x; step *= 2) {
      int64_t add = threadIdx.x >= step ? scan[threadIdx.x - step] : 0;
      __syncthreads();
      scan[threadIdx.x] += add;
      __syncthreads();
    }
    if (mine) {
      int64_t row = start + scan[threadIdx.x] - 1;
      storeInt(rows, rowType, row, i / k);
      storeInt(positions, positionType, i, row);
    }
    start += scan[blockDim.x - 1];
  }
}

/// The rows [first, end) of expert `blockIdx.z + table.first`, or an empty
/// range when this block's row tile lies past them.
__device__ inline bool expertRows(const void *offsets, DType offsetType,
                                  const ExpertTable &table, int64_t &first,
                                  int64_t &end) {
  int64_t e = int64_t(blockIdx.z) + table.first;
  first = loadInt(offsets, offsetType, e);
  end = loadInt(offsets, offsetType, e + 1);
  return first + int64_t(blockIdx.y) * kTile < end;
}

/// tg.expert_linear: block (x, y, z) computes the kTile x kTile output tile
/// at column x * kTile of row tile y within expert z's rows.
__global__ void expertLinearKernel(const void *input, DType dtype,
                                   const void *offsets, DType offsetType,
                                   ExpertTable weights, bool transposeWeight,
                                   int64_t n, int64_t kSize, void *result) {
  int64_t first, end;
  if (!expertRows(offsets, offsetType, weights, first, end))
    return;
  const void *w = weights.data[blockIdx.z];
  tiledProduct(
      input, dtype, first + int64_t(blockIdx.y) * kTile, end,
      int64_t(blockIdx.x) * kTile, n, kSize,
      [&](int64_t kr, int64_t col) {
        return loadFloat(w, dtype,
                         transposeWeight ? col * kSize + kr : kr * n + col);
      },
      result);
}

/// tg.expert_linear_weight_grad: block (x, y, z) computes the kTile x kTile
/// tile at (y, x) of expert z's [P, Q] result, summing over its rows in
/// order (zeros for an expert without rows).
__global__ void expertOuterKernel(const void *lhs, const void *rhs, DType dtype,
                                  const void *offsets, DType offsetType,
                                  ExpertTable results, int64_t p, int64_t q) {
  __shared__ float a[kTile][kTile + 1], b[kTile][kTile + 1];
  int64_t e = int64_t(blockIdx.z) + results.first;
  int64_t first = loadInt(offsets, offsetType, e);
  int64_t end = loadInt(offsets, offsetType, e + 1);
  void *out = const_cast<void *>(results.data[blockIdx.z]);
  int64_t p0 = int64_t(blockIdx.y) * kTile, q0 = int64_t(blockIdx.x) * kTile;
  int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  constexpr int kRowsPerThread = kTile * kTile / kThreads;
  float sums[kRowsPerThread] = {};
  for (int64_t r0 = first; r0 < end; r0 += kTile) {
    // a[r][c] = lhs[r0 + r, p0 + c]; b[r][c] = rhs[r0 + r, q0 + c].
    for (int r = ty; r < kTile; r += kThreads / kTile) {
      int64_t row = r0 + r;
      a[r][tx] = row < end && p0 + tx < p
                     ? loadFloat(lhs, dtype, row * p + p0 + tx)
                     : 0.0f;
      b[r][tx] = row < end && q0 + tx < q
                     ? loadFloat(rhs, dtype, row * q + q0 + tx)
                     : 0.0f;
    }
    __syncthreads();
    for (int r = 0; r < kTile; ++r) {
      float bv = b[r][tx];
      TGC_UNROLL
      for (int i = 0; i < kRowsPerThread; ++i)
        sums[i] += a[r][ty + i * (kThreads / kTile)] * bv;
    }
    __syncthreads();
  }
  for (int i = 0; i < kRowsPerThread; ++i) {
    int64_t pi = p0 + ty + i * (kThreads / kTile), qi = q0 + tx;
    if (pi < p && qi < q)
      storeFloat(out, dtype, pi * q + qi, sums[i]);
  }
}

unsigned ceilTiles(int64_t size) {
  return unsigned(std::max<int64_t>(1, (size + kTile - 1) / kTile));
}

} // namespace

Status topK(Context &ctx, const TensorRef &input, int64_t k,
            TensorRef &result) {
  // Shapes as the loader checked them (shapes::topK).
  int64_t width = input.shape.back();
  int64_t rows = width == 0 ? 0 : input.numElements() / width;
  if (rows == 0)
    return Status::success();
  topKKernel<<<blocksFor(rows), 256, 0, streamOf(ctx)>>>(
      input.data, input.dtype, rows, width, k, result.data, result.dtype);
  TGC_CUDA_LAUNCH("topKKernel");
  return Status::success();
}

Status moeRoute(Context &ctx, const TensorRef &choices, TensorRef &rows,
                TensorRef &positions, TensorRef &offsets) {
  // Shapes as the loader checked them (shapes::moeRoute); the choices are
  // checked on the device.
  int64_t experts = offsets.shape[0] - 1;
  if (experts > 65535 * 8)
    return Status::failure("moe_route: more than 524,280 experts");
  moeRouteKernel<<<unsigned(experts), kThreads, 0, streamOf(ctx)>>>(
      choices.data, choices.dtype, choices.numElements(), choices.shape[1],
      experts, rows.data, rows.dtype, positions.data, positions.dtype,
      offsets.data, offsets.dtype, ctx.deviceError);
  TGC_CUDA_LAUNCH("moeRouteKernel");
  return Status::success();
}

Status expertLinear(Context &ctx, const TensorRef &input,
                    const TensorRef &offsets,
                    const std::vector<TensorRef> &weights, bool transposeWeight,
                    TensorRef &result) {
  // Types and shapes as the loader checked them (shapes::expertLinear);
  // the overlaps are the plan's.
  for (const TensorRef &t : weights)
    if (bytesOverlap(t, result))
      return Status::failure("expert_linear result overlaps a weight");
  if (bytesOverlap(input, result) || bytesOverlap(offsets, result))
    return Status::failure("expert_linear result overlaps its input");
  int64_t m = input.shape[0], k = input.shape[1], n = result.shape[1];
  if (m == 0 || n == 0)
    return Status::success();
  if (ceilTiles(m) > 65535)
    return Status::failure("expert_linear: more than 2,097,120 rows");
  for (size_t first = 0; first < weights.size(); first += kExpertsPerLaunch) {
    ExpertTable table = {};
    table.first = int(first);
    size_t count = std::min(weights.size() - first, size_t(kExpertsPerLaunch));
    for (size_t e = 0; e < count; ++e)
      table.data[e] = weights[first + e].data;
    dim3 grid(ceilTiles(n), ceilTiles(m), unsigned(count));
    expertLinearKernel<<<grid, kThreads, 0, streamOf(ctx)>>>(
        input.data, input.dtype, offsets.data, offsets.dtype, table,
        transposeWeight, n, k, result.data);
    TGC_CUDA_LAUNCH("expertLinearKernel");
  }
  return Status::success();
}

Status expertLinearWeightGrad(Context &ctx, const TensorRef &lhs,
                              const TensorRef &rhs, const TensorRef &offsets,
                              std::vector<TensorRef> &results) {
  // Types and shapes as the loader checked them (shapes::expertOuter); the
  // overlaps are the plan's.
  for (const TensorRef &result : results)
    if (bytesOverlap(result, lhs) || bytesOverlap(result, rhs) ||
        bytesOverlap(result, offsets))
      return Status::failure("expert_linear_weight_grad result overlaps an "
                             "operand");
  int64_t p = lhs.shape[1], q = rhs.shape[1];
  if (p == 0 || q == 0)
    return Status::success();
  if (ceilTiles(p) > 65535)
    return Status::failure("expert_linear_weight_grad: too many rows");
  for (size_t first = 0; first < results.size(); first += kExpertsPerLaunch) {
    ExpertTable table = {};
    table.first = int(first);
    size_t count = std::min(results.size() - first, size_t(kExpertsPerLaunch));
    for (size_t e = 0; e < count; ++e)
      table.data[e] = results[first + e].data;
    dim3 grid(ceilTiles(q), ceilTiles(p), unsigned(count));
    expertOuterKernel<<<grid, kThreads, 0, streamOf(ctx)>>>(
        lhs.data, rhs.data, lhs.dtype, offsets.data, offsets.dtype, table, p,
        q);
    TGC_CUDA_LAUNCH("expertOuterKernel");
  }
  return Status::success();
}

} // namespace tgc::rt::cuda
