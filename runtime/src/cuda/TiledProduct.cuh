//===- TiledProduct.cuh - the plain shared-memory GEMM tile -----*- CUDA
//-*-===//
//
// One block's kTileProduct x kTileProduct tile of `input [m, k] x B` with
// f32 accumulation in a fixed order (deterministic, any float type): what
// the grouped expert products (Experts.cu) and the products with a 4-bit
// weight (Matmul4bit.cu) run, each with its own reader of B's elements.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CUDA_TILEDPRODUCT_CUH
#define TGC_RUNTIME_SRC_CUDA_TILEDPRODUCT_CUH

#include "Common.cuh"

namespace tgc::rt::cuda {

/// The tile's side and the block's threads (each computes kTileProduct / 8
/// outputs of a column).
constexpr int kTileProduct = 32, kTileThreads = 256;

/// Rows [row0, row0 + kTileProduct) (those below `rowEnd`) and columns
/// [col0, col0 + kTileProduct) (below `n`) of `result [., n]` (`dtype`, as
/// `input [., k]`): sum over c of input[row, c] * loadB(c, col), where
/// `loadB(c, col)` gives B's element in f32 for c < k and col < n.
template <typename LoadB>
__device__ void tiledProduct(const void *input, DType dtype, int64_t row0,
                             int64_t rowEnd, int64_t col0, int64_t n, int64_t k,
                             LoadB loadB, void *result) {
  constexpr int kTile = kTileProduct, kThreads = kTileThreads;
  __shared__ float a[kTile][kTile + 1], b[kTile][kTile + 1];
  int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  constexpr int kRowsPerThread = kTile * kTile / kThreads;
  float sums[kRowsPerThread] = {};
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    // a[r][c] = input[row0 + r, k0 + c]; b[r][c] = B[k0 + r, col0 + c].
    for (int r = ty; r < kTile; r += kThreads / kTile) {
      int64_t row = row0 + r, kk = k0 + tx;
      a[r][tx] =
          row < rowEnd && kk < k ? loadFloat(input, dtype, row * k + kk) : 0.0f;
      int64_t kr = k0 + r, col = col0 + tx;
      b[r][tx] = kr < k && col < n ? loadB(kr, col) : 0.0f;
    }
    __syncthreads();
    for (int c = 0; c < kTile; ++c) {
      float bv = b[c][tx];
      TGC_UNROLL
      for (int i = 0; i < kRowsPerThread; ++i)
        sums[i] += a[ty + i * (kThreads / kTile)][c] * bv;
    }
    __syncthreads();
  }
  int64_t col = col0 + tx;
  for (int i = 0; i < kRowsPerThread; ++i) {
    int64_t row = row0 + ty + i * (kThreads / kTile);
    if (row < rowEnd && col < n)
      storeFloat(result, dtype, row * n + col, sums[i]);
  }
}

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_TILEDPRODUCT_CUH
