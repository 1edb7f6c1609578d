//===- FlashAttention.cu - fused 16-bit attention on tensor cores ---------===//
//
// See FlashAttention.h. Each block is two warps; a warp owns 16 query rows
// (forward) or 16 key rows (backward) of a 32-row tile, so the per-row
// softmax statistics of a row are read and written by one warp only, and
// only the tiles both warps read (Q, K, V, dO, P, dS) need block barriers.
// The tensor-core products go through WMMA fragments loaded from and
// stored to shared memory, which keeps the code independent of the
// fragments' register layout (and runs on the CUDA emulator, whose WMMA
// holds whole tiles).
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "Common.cuh"

#include <mma.h>

#include <algorithm>

namespace tgc::rt::cuda {

namespace {

namespace wmma = nvcuda::wmma;

/// Query rows per block (forward) and key rows per step, and the reverse in
/// the backward pass.
constexpr int kTile = 32;
constexpr int kHead = int(kFusedAttentionMaxHead);
constexpr int kThreads = 64; // two warps of 16 rows each

using AccFragment = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
template <typename T, typename Layout>
using AFragment = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, Layout>;
template <typename T, typename Layout>
using BFragment = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, Layout>;

template <typename T> __device__ inline T fromF32(float v);
template <> __device__ inline __half fromF32<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ inline __nv_bfloat16 fromF32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// rows x d elements of `source` (row stride d) from row `first` into a
/// shared tile, rows past `limit` as zeros.
template <typename T>
__device__ void loadRows(T *tile, const T *source, int64_t first,
                         int64_t limit, int d) {
  for (int i = threadIdx.x; i < kTile * d; i += blockDim.x) {
    int r = i / d, c = i % d;
    tile[i] = first + r < limit ? source[(first + r) * d + c] : fromF32<T>(0.0f);
  }
}

/// C[16 x 16] (row stride ldc) = A[16 x kk] B[kk x 16] on tensor cores: A
/// row-major (stride lda); B row-major, or col-major when `transposedB`
/// (B = X^T for a row-major X of stride ldb).
template <typename T, typename ALayout, typename BLayout>
__device__ void tileProduct(AccFragment &acc, const T *a, int lda,
                            int aStepElements, const T *b, int ldb,
                            int bStepElements, int kk) {
  for (int p = 0; p < kk; p += 16) {
    AFragment<T, ALayout> fa;
    BFragment<T, BLayout> fb;
    wmma::load_matrix_sync(fa, a + (p / 16) * aStepElements, lda);
    wmma::load_matrix_sync(fb, b + (p / 16) * bStepElements, ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

/// out[16 x 16] (f32, row stride ldo) = the tileProduct of its arguments.
template <typename T, typename ALayout, typename BLayout>
__device__ void storeTileProduct(float *out, int ldo, const T *a, int lda,
                                 int aStepElements, const T *b, int ldb,
                                 int bStepElements, int kk) {
  AccFragment acc;
  wmma::fill_fragment(acc, 0.0f);
  tileProduct<T, ALayout, BLayout>(acc, a, lda, aStepElements, b, ldb,
                                   bStepElements, kk);
  wmma::store_matrix_sync(out, acc, ldo, wmma::mem_row_major);
}

/// A warp's strip of scores: out[16 x 32] (row stride kTile) = rows[16 x d]
/// keys[32 x d]^T, both row-major of stride d.
template <typename T>
__device__ void scoreStrip(float *out, const T *rows, const T *keys, int d) {
  for (int n = 0; n < 2; ++n)
    storeTileProduct<T, wmma::row_major, wmma::col_major>(
        out + 16 * n, kTile, rows, d, 16, keys + 16 * n * d, d, 16, d);
}

/// Whether `query` of `head` sees `key`: both inside their lengths, not in
/// the future when causal, inside the window, and not masked.
__device__ inline bool visible(int64_t head, int64_t query, int64_t key,
                               int64_t tq, int64_t tk, bool causal,
                               const KeyMask &mask) {
  return query < tq && key < tk && (!causal || key <= query) &&
         (mask.window == 0 || key > query - mask.window) &&
         (!mask.data ||
          loadInt(mask.data, mask.dtype, (head / mask.group) * tk + key) != 0);
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename T> struct alignas(32) ForwardTiles {
  T q[kTile * kHead];
  T k[kTile * kHead];
  T v[kTile * kHead];
  T p[kTile * kTile];
  float s[kTile * kTile];   // scores of the step
  float pv[kTile * kHead];  // P V of the step
  float o[kTile * kHead];   // the running output
  float m[kTile], l[kTile], alpha[kTile];
};

/// One block per (head, tile of 32 queries), every step a tile of 32 keys.
template <typename T>
__global__ void flashForwardKernel(const T *q, const T *k, const T *v,
                                   int64_t heads, int64_t tq, int64_t tk,
                                   int d, float scale, bool causal,
                                   KeyMask mask, T *out, float *lse) {
  __shared__ ForwardTiles<T> t;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t tiles = (tq + kTile - 1) / kTile;
  for (int64_t job = blockIdx.x; job < heads * tiles; job += gridDim.x) {
    int64_t head = job / tiles, q0 = (job % tiles) * kTile;
    const T *qh = q + head * tq * d, *kh = k + head * tk * d,
            *vh = v + head * tk * d;
    __syncthreads(); // the previous job's reads of the tiles are done
    loadRows(t.q, qh, q0, tq, d);
    for (int i = threadIdx.x; i < kTile * d; i += blockDim.x)
      t.o[i] = 0.0f;
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      t.m[r] = -INFINITY;
      t.l[r] = 0.0f;
    }
    // Keys past the tile's last query are all masked when causal.
    int64_t keyEnd = causal ? min(tk, q0 + kTile) : tk;
    for (int64_t k0 = 0; k0 < keyEnd; k0 += kTile) {
      __syncthreads(); // the previous step's reads of K and V are done
      loadRows(t.k, kh, k0, tk, d);
      loadRows(t.v, vh, k0, tk, d);
      __syncthreads();
      // S = Q K^T for this warp's 16 rows.
      scoreStrip(t.s + 16 * warp * kTile, t.q + 16 * warp * d, t.k, d);
      __syncwarp();
      // Online softmax, a row at a time, a lane per key.
      for (int rr = 0; rr < 16; ++rr) {
        int r = 16 * warp + rr;
        bool seen = visible(head, q0 + r, k0 + lane, tq, tk, causal, mask);
        float s = seen ? t.s[r * kTile + lane] * scale : -INFINITY;
        float mOld = t.m[r];
        float mNew = fmaxf(mOld, warpMax(s));
        float p = seen ? expf(s - mNew) : 0.0f;
        float sum = warpSum(p);
        t.p[r * kTile + lane] = fromF32<T>(p);
        if (lane == 0) {
          float alpha = mOld == -INFINITY ? 0.0f : expf(mOld - mNew);
          t.alpha[r] = alpha;
          t.l[r] = t.l[r] * alpha + sum;
          t.m[r] = mNew;
        }
      }
      __syncwarp();
      if (!out)
        continue;
      // P V for this warp's rows, then O = alpha O + P V.
      for (int n = 0; n < d / 16; ++n)
        storeTileProduct<T, wmma::row_major, wmma::row_major>(
            t.pv + 16 * warp * d + 16 * n, d, t.p + 16 * warp * kTile, kTile,
            16, t.v + 16 * n, d, 16 * d, kTile);
      __syncwarp();
      for (int rr = 0; rr < 16; ++rr) {
        int r = 16 * warp + rr;
        for (int c = lane; c < d; c += 32)
          t.o[r * d + c] = t.o[r * d + c] * t.alpha[r] + t.pv[r * d + c];
      }
      __syncwarp();
    }
    for (int rr = 0; rr < 16; ++rr) {
      int r = 16 * warp + rr;
      int64_t query = q0 + r;
      if (query >= tq)
        continue;
      float l = t.l[r];
      if (out)
        for (int c = lane; c < d; c += 32)
          out[(head * tq + query) * d + c] =
              fromF32<T>(l > 0.0f ? t.o[r * d + c] / l : 0.0f);
      if (lse && lane == 0)
        lse[head * tq + query] = l > 0.0f ? t.m[r] + logf(l) : -INFINITY;
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <typename T> struct alignas(32) BackwardTiles {
  T k[kTile * kHead];
  T v[kTile * kHead];
  T q[kTile * kHead];
  T dO[kTile * kHead];
  T p[kTile * kTile];     // P of the step, 16-bit for the products
  T dS[kTile * kTile];    // P * (dP - rowDot), 16-bit for the products
  float s[kTile * kTile]; // scores of the step
  float dP[kTile * kTile];
  float scratch[kTile * kHead]; // dS K of the step; the results at the end
  float lse[kTile], rowDot[kTile];
};

/// One block per (head, tile of 32 keys), every step a tile of 32 queries:
/// dV and dK accumulate in tensor-core fragments, dQ in global f32.
template <typename T>
__global__ void flashBackwardKernel(const T *q, const T *k, const T *v,
                                    const T *dO, const float *lse,
                                    const float *rowDot, int64_t heads,
                                    int64_t tq, int64_t tk, int d, float scale,
                                    bool causal, KeyMask mask,
                                    float *dqAccumulator, T *dk, T *dv) {
  __shared__ BackwardTiles<T> t;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t tiles = (tk + kTile - 1) / kTile;
  for (int64_t job = blockIdx.x; job < heads * tiles; job += gridDim.x) {
    int64_t head = job / tiles, k0 = (job % tiles) * kTile;
    const T *qh = q + head * tq * d, *kh = k + head * tk * d,
            *vh = v + head * tk * d, *dOh = dO + head * tq * d;
    __syncthreads();
    loadRows(t.k, kh, k0, tk, d);
    loadRows(t.v, vh, k0, tk, d);
    AccFragment dvAcc[kHead / 16], dkAcc[kHead / 16];
    for (int n = 0; n < d / 16; ++n) {
      wmma::fill_fragment(dvAcc[n], 0.0f);
      wmma::fill_fragment(dkAcc[n], 0.0f);
    }
    // Queries before the tile's first key see none of it when causal.
    int64_t queryStart = causal ? k0 : 0;
    for (int64_t q0 = queryStart; q0 < tq; q0 += kTile) {
      __syncthreads(); // the previous step's reads are done
      loadRows(t.q, qh, q0, tq, d);
      loadRows(t.dO, dOh, q0, tq, d);
      for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
        bool inside = q0 + r < tq;
        t.lse[r] = inside ? lse[head * tq + q0 + r] : 0.0f;
        t.rowDot[r] = inside ? rowDot[head * tq + q0 + r] : 0.0f;
      }
      __syncthreads();
      // S = Q K^T and dP = dO V^T for this warp's 16 query rows.
      scoreStrip(t.s + 16 * warp * kTile, t.q + 16 * warp * d, t.k, d);
      scoreStrip(t.dP + 16 * warp * kTile, t.dO + 16 * warp * d, t.v, d);
      __syncwarp();
      // P from the saved log-sum-exp; dS = P (dP - rowDot).
      for (int rr = 0; rr < 16; ++rr) {
        int r = 16 * warp + rr;
        int at = r * kTile + lane;
        float p = visible(head, q0 + r, k0 + lane, tq, tk, causal, mask)
                      ? expf(t.s[at] * scale - t.lse[r])
                      : 0.0f;
        t.p[at] = fromF32<T>(p);
        t.dS[at] = fromF32<T>(p * (t.dP[at] - t.rowDot[r]));
      }
      __syncthreads(); // dV and dK read every query row of P and dS
      // This warp's 16 key rows: dV += P^T dO, dK += dS^T Q.
      for (int n = 0; n < d / 16; ++n) {
        tileProduct<T, wmma::col_major, wmma::row_major>(
            dvAcc[n], t.p + 16 * warp, kTile, 16 * kTile, t.dO + 16 * n, d,
            16 * d, kTile);
        tileProduct<T, wmma::col_major, wmma::row_major>(
            dkAcc[n], t.dS + 16 * warp, kTile, 16 * kTile, t.q + 16 * n, d,
            16 * d, kTile);
      }
      if (!dqAccumulator)
        continue;
      // dQ += scale dS K for this warp's 16 query rows.
      for (int n = 0; n < d / 16; ++n)
        storeTileProduct<T, wmma::row_major, wmma::row_major>(
            t.scratch + 16 * warp * d + 16 * n, d, t.dS + 16 * warp * kTile,
            kTile, 16, t.k + 16 * n, d, 16 * d, kTile);
      __syncwarp();
      for (int rr = 0; rr < 16; ++rr) {
        int r = 16 * warp + rr;
        if (q0 + r >= tq)
          continue;
        for (int c = lane; c < d; c += 32)
          atomicAdd(&dqAccumulator[(head * tq + q0 + r) * d + c],
                    scale * t.scratch[r * d + c]);
      }
    }
    // dV, then dK (scaled), through this warp's rows of the scratch.
    for (int pass = 0; pass < 2; ++pass) {
      T *result = pass == 0 ? dv : dk;
      __syncwarp();
      for (int n = 0; n < d / 16; ++n)
        wmma::store_matrix_sync(t.scratch + 16 * warp * d + 16 * n,
                                pass == 0 ? dvAcc[n] : dkAcc[n], d,
                                wmma::mem_row_major);
      __syncwarp();
      if (!result)
        continue;
      float factor = pass == 0 ? 1.0f : scale;
      for (int rr = 0; rr < 16; ++rr) {
        int r = 16 * warp + rr;
        if (k0 + r >= tk)
          continue;
        for (int c = lane; c < d; c += 32)
          result[(head * tk + k0 + r) * d + c] =
              fromF32<T>(factor * t.scratch[r * d + c]);
      }
    }
  }
}

/// Blocks for `jobs` (head, tile) pairs.
unsigned jobBlocks(int64_t jobs) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(jobs, 1 << 30)));
}

template <typename T>
Status launchForward(Context &ctx, const void *q, const void *k, const void *v,
                     int64_t batch, int64_t tq, int64_t tk, int64_t d,
                     float scale, bool causal, KeyMask mask, void *out,
                     float *lse) {
  int64_t jobs = batch * ((tq + kTile - 1) / kTile);
  if (jobs == 0)
    return Status::success();
  flashForwardKernel<T><<<jobBlocks(jobs), kThreads, 0, streamOf(ctx)>>>(
      static_cast<const T *>(q), static_cast<const T *>(k),
      static_cast<const T *>(v), batch, tq, tk, int(d), scale, causal, mask,
      static_cast<T *>(out), lse);
  TGC_CUDA_LAUNCH("flashForwardKernel");
  return Status::success();
}

template <typename T>
Status launchBackward(Context &ctx, const void *q, const void *k,
                      const void *v, const void *dO, const float *lse,
                      const float *rowDot, int64_t batch, int64_t tq,
                      int64_t tk, int64_t d, float scale, bool causal,
                      KeyMask mask, float *dqAccumulator, void *dk, void *dv) {
  int64_t jobs = batch * ((tk + kTile - 1) / kTile);
  if (jobs == 0)
    return Status::success();
  flashBackwardKernel<T><<<jobBlocks(jobs), kThreads, 0, streamOf(ctx)>>>(
      static_cast<const T *>(q), static_cast<const T *>(k),
      static_cast<const T *>(v), static_cast<const T *>(dO), lse, rowDot,
      batch, tq, tk, int(d), scale, causal, mask, dqAccumulator,
      static_cast<T *>(dk), static_cast<T *>(dv));
  TGC_CUDA_LAUNCH("flashBackwardKernel");
  return Status::success();
}

} // namespace

bool fusedAttentionSupports(DType dtype, int64_t d, int64_t dv) {
  return (dtype == DType::BF16 || dtype == DType::F16) &&
         runsFusedAttention(16, d, dv);
}

Status fusedAttention(Context &ctx, DType dtype, const void *q, const void *k,
                      const void *v, int64_t batch, int64_t tq, int64_t tk,
                      int64_t d, float scale, bool causal, KeyMask mask,
                      void *out, float *lse) {
  if (!fusedAttentionSupports(dtype, d, d))
    return Status::failure("fused attention takes 16-bit heads of a "
                           "multiple of 16 up to 64 elements");
  if (dtype == DType::BF16)
    return launchForward<__nv_bfloat16>(ctx, q, k, v, batch, tq, tk, d, scale,
                                        causal, mask, out, lse);
  return launchForward<__half>(ctx, q, k, v, batch, tq, tk, d, scale, causal,
                               mask, out, lse);
}

Status fusedAttentionGrad(Context &ctx, DType dtype, const void *q,
                          const void *k, const void *v, const void *dO,
                          const float *lse, const float *rowDot, int64_t batch,
                          int64_t tq, int64_t tk, int64_t d, float scale,
                          bool causal, KeyMask mask, float *dqAccumulator,
                          void *dk, void *dv) {
  if (!fusedAttentionSupports(dtype, d, d))
    return Status::failure("fused attention takes 16-bit heads of a "
                           "multiple of 16 up to 64 elements");
  if (dtype == DType::BF16)
    return launchBackward<__nv_bfloat16>(ctx, q, k, v, dO, lse, rowDot, batch,
                                         tq, tk, d, scale, causal, mask,
                                         dqAccumulator, dk, dv);
  return launchBackward<__half>(ctx, q, k, v, dO, lse, rowDot, batch, tq, tk,
                                d, scale, causal, mask, dqAccumulator, dk, dv);
}

} // namespace tgc::rt::cuda
