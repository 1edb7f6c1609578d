//===- FlashAttention.cu - fused 16-bit attention on tensor cores ---------===//
//
// See FlashAttention.h. A warp owns 16 query rows (forward) or 16 key rows
// (backward), so the per-row softmax statistics of a row are read and
// written by one warp only, and only the tiles several warps read (K and V
// forward; Q, dO and dS^T backward) need block barriers. The tensor-core
// products go through WMMA fragments, which keeps the code independent of
// the fragments' register layout (and runs on the CUDA emulator, whose WMMA
// holds whole tiles): where the forward pass scales the output's rows in
// registers, it reads each element's row from a fragment loaded once with
// the row numbers (rowNumbers). Shared tiles are padded so that neither the
// fragment loads nor the softmax's lanes collide in shared-memory banks.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "Common.cuh"

#include <mma.h>

#include <algorithm>
#include <type_traits>

namespace tgc::rt::cuda {

namespace {

namespace wmma = nvcuda::wmma;

/// Rows per block and per step: the forward pass takes 64 queries per block
/// and 64 keys per step; the backward pass 64 keys per block and 32
/// queries per step. Four warps of 16 rows each.
constexpr int kRows = 64;
constexpr int kStep = 32; // backward: queries per step
constexpr int kHead = int(kFusedAttentionMaxHead);
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
/// Row strides of the shared tiles, padded so that the tensor-core loads
/// and the softmax's lanes do not collide in shared-memory banks: 16-bit
/// tiles of up to 64 columns (144 bytes a row), f32 strips of 64 columns
/// (forward) and 32 (backward), 16-bit strips of 32 columns.
constexpr int kLd = kHead + 8;
constexpr int kLdS = kRows + 4;
constexpr int kLdStep = kStep + 4;
constexpr int kLdStep16 = kStep + 8;

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

/// Where a head's rows lie: the operands hold `rowHeads` heads side by side
/// in each stored row (1 for [B, H, T, D]; H for bshd [B, T, H, D], where
/// heads b * H + h of one example share the rows of its positions). Row
/// `row` of head `head`, of a sequence of `t` rows, is stored row
/// rowIndex(): the row-statistics (log-sum-exp, row dots) and the f32
/// query-gradient accumulator use the same order as the operands.
struct HeadRows {
  int64_t rowHeads;
  /// Heads a stored row holds: rowHeads, or more when the row also holds
  /// other tensors' heads (a packed query, key and value; the pointer then
  /// starts at this tensor's first head).
  int64_t pitch;
  __device__ int64_t rowIndex(int64_t head, int64_t row, int64_t t) const {
    return ((head / rowHeads) * t + row) * pitch + head % rowHeads;
  }
  /// Elements from one of a head's rows to the next.
  __device__ int64_t stride(int d) const { return pitch * d; }
};

/// The heads of one attention: `group` consecutive query heads share each
/// key/value head (grouped-query attention; 1 without), so query head h
/// reads key/value head h / group, which is never repeated. The queries
/// (and their gradient) lie as `queries` says, the keys and values (and
/// theirs) as `keys` (bshd: H and H / group heads side by side a row, or
/// the packed row of all three), and the output, its gradient and the row
/// statistics as `outputs` (the queries' heads alone in a row).
struct HeadLayouts {
  HeadRows queries, keys, outputs;
  int64_t group;
};

/// `rows` rows of d elements of `source` (row stride ld, a multiple of d)
/// from row `first` into a shared tile of row stride kLd, rows past `limit`
/// as zeros; 16 bytes at a time when `source` is 16-byte aligned (d is a
/// multiple of 16, so every row then is), by the threads `thread` of
/// `threads`.
template <typename T>
__device__ void loadRows(T *tile, const T *source, int64_t ld, int64_t first,
                         int64_t limit, int rows, int d, int thread,
                         int threads) {
  constexpr int kVector = 16 / sizeof(T);
  if ((reinterpret_cast<uintptr_t>(source) & 15) == 0) {
    int perRow = d / kVector;
    for (int i = thread; i < rows * perRow; i += threads) {
      int r = i / perRow, c = (i % perRow) * kVector;
      uint4 value = make_uint4(0, 0, 0, 0);
      if (first + r < limit)
        value =
            *reinterpret_cast<const uint4 *>(source + (first + r) * ld + c);
      *reinterpret_cast<uint4 *>(tile + r * kLd + c) = value;
    }
    return;
  }
  for (int i = thread; i < rows * d; i += threads) {
    int r = i / d, c = i % d;
    tile[r * kLd + c] =
        first + r < limit ? source[(first + r) * ld + c] : fromF32<T>(0.0f);
  }
}

/// Whether `query` of `head` sees `key`: both inside their lengths, not in
/// the future when causal, inside the window, and not masked.
__device__ inline bool visible(int64_t head, int64_t query, int64_t key,
                               int64_t tq, int64_t tk, bool causal,
                               const KeyMask &mask) {
  if (query >= tq || key >= tk || (causal && key > query) ||
      (mask.window != 0 && key <= query - mask.window))
    return false;
  if (!mask.data)
    return true;
  int64_t row = (head / mask.group) * tk;
  int64_t id = loadInt(mask.data, mask.dtype, row + key);
  return id != 0 &&
         (!mask.segments || id == loadInt(mask.data, mask.dtype, row + query));
}

/// With segment ids, whether queries [q0, q0 + rows) and keys [k0, k0 +
/// keys) of `head` share no nonzero id, so that no query sees any of the
/// keys and the tile is skipped: the ranges of their nonzero ids are
/// disjoint (or one side has none). Exact whatever the order of the ids.
/// Every lane of the warp calls it and gets the same answer.
__device__ inline bool segmentsApart(int64_t head, int64_t q0, int rows,
                                     int64_t k0, int keys, int64_t tq,
                                     int64_t tk, const KeyMask &mask,
                                     int lane) {
  if (!mask.segments)
    return false;
  int64_t row = (head / mask.group) * tk;
  int64_t ranges[4] = {INT64_MAX, 0, INT64_MAX, 0}; // query min, max; keys'
  for (int i = lane; i < rows + keys; i += 32) {
    bool query = i < rows;
    int64_t at = query ? q0 + i : k0 + (i - rows);
    if (at >= (query ? tq : tk))
      continue;
    int64_t id = loadInt(mask.data, mask.dtype, row + at);
    if (id == 0)
      continue;
    int64_t *range = ranges + (query ? 0 : 2);
    range[0] = min(range[0], id);
    range[1] = max(range[1], id);
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    ranges[0] = min(ranges[0], __shfl_xor_sync(0xffffffffu, ranges[0], offset));
    ranges[1] = max(ranges[1], __shfl_xor_sync(0xffffffffu, ranges[1], offset));
    ranges[2] = min(ranges[2], __shfl_xor_sync(0xffffffffu, ranges[2], offset));
    ranges[3] = max(ranges[3], __shfl_xor_sync(0xffffffffu, ranges[3], offset));
  }
  return ranges[1] == 0 || ranges[3] == 0 || ranges[3] < ranges[0] ||
         ranges[2] > ranges[1];
}

/// Whether every query of [q0, q0 + rows) sees every key of [k0, k0 +
/// keys): the softmax then skips the per-element test.
__device__ inline bool allVisible(int64_t q0, int rows, int64_t k0, int keys,
                                  int64_t tq, int64_t tk, bool causal,
                                  const KeyMask &mask) {
  return !mask.data && mask.window == 0 && q0 + rows <= tq &&
         k0 + keys <= tk && (!causal || k0 + keys - 1 <= q0);
}

/// The row of each element of an accumulator fragment, as a fragment:
/// element i of `rowOf` is the row of element i of any accumulator. CUDA
/// leaves the fragments' layout unspecified; loading a tile whose every
/// element is its row number reads it off, so the softmax can scale an
/// accumulator's rows in registers (`scratch`: a warp's 16 x 16 f32 tile of
/// row stride `ld`).
__device__ inline void rowNumbers(AccFragment &rowOf, float *scratch, int ld) {
  int lane = threadIdx.x % 32;
  for (int i = lane; i < 16 * 16; i += 32)
    scratch[(i / 16) * ld + i % 16] = float(i / 16);
  __syncwarp();
  wmma::load_matrix_sync(rowOf, scratch, ld, wmma::mem_row_major);
  __syncwarp();
}

/// out[16 x kCols] (f32, row stride kLdOut) = rows tile^T: a warp's 16 rows
/// of kD x 16 elements in fragments `rows`, and kCols rows of `tile` (row
/// stride kLd) in shared memory.
template <int kCols, int kLdOut, typename T, int kD>
__device__ void productWithRows(float *out,
                                const AFragment<T, wmma::row_major> (&rows)[kD],
                                const T *tile) {
  TGC_UNROLL
  for (int n = 0; n < kCols / 16; ++n) {
    AccFragment acc;
    wmma::fill_fragment(acc, 0.0f);
    TGC_UNROLL
    for (int x = 0; x < kD; ++x) {
      BFragment<T, wmma::col_major> b;
      wmma::load_matrix_sync(b, tile + 16 * n * kLd + 16 * x, kLd);
      wmma::mma_sync(acc, rows[x], b, acc);
    }
    wmma::store_matrix_sync(out + 16 * n, acc, kLdOut, wmma::mem_row_major);
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename T> struct alignas(32) ForwardTiles {
  T k[kRows * kLd];
  T v[kRows * kLd];
  T p[kWarps][16 * kLd];     // each warp's P (16-bit); its Q at the start
  float s[kWarps][16 * kLdS]; // each warp's scores; its output at the end
  float m[kWarps][16], l[kWarps][16], alpha[kWarps][16];
};

/// One block per (head, tile of 64 queries), every step a tile of 64 keys.
/// Each warp keeps its 16 query rows and their output in tensor-core
/// fragments; scores and probabilities pass through its shared strips,
/// where two lanes share a row (32 keys each) for the online softmax.
template <typename T, int kD>
__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(const T *q, const T *k, const T *v, int64_t heads,
                       int64_t tq, int64_t tk, int d, float scale, bool causal,
                       KeyMask mask, HeadLayouts layout, T *out, float *lse) {
  __shared__ ForwardTiles<T> t;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int r = lane >> 1, half = lane & 1, rot = (r >> 3) + 2 * half;
  constexpr int dTiles = kD; // d / 16, known to the compiler
  T *pStrip = t.p[warp];
  float *sStrip = t.s[warp];
  AccFragment rowOf;
  rowNumbers(rowOf, sStrip, kLdS);
  int64_t tiles = (tq + kRows - 1) / kRows;
  for (int64_t job = blockIdx.x; job < heads * tiles; job += gridDim.x) {
    int64_t head = job / tiles, q0 = (job % tiles) * kRows;
    int64_t w0 = q0 + 16 * warp; // this warp's first query
    int64_t ldq = layout.queries.stride(d), ldk = layout.keys.stride(d);
    int64_t kvHead = head / layout.group;
    const T *qh = q + layout.queries.rowIndex(head, 0, tq) * d,
            *kh = k + layout.keys.rowIndex(kvHead, 0, tk) * d,
            *vh = v + layout.keys.rowIndex(kvHead, 0, tk) * d;
    // This warp's queries into fragments, through its P strip.
    __syncwarp();
    loadRows(pStrip, qh, ldq, w0, tq, 16, d, lane, 32);
    __syncwarp();
    AFragment<T, wmma::row_major> qa[kD];
    TGC_UNROLL
    for (int n = 0; n < dTiles; ++n)
      wmma::load_matrix_sync(qa[n], pStrip + 16 * n, kLd);
    AccFragment o[kD];
    TGC_UNROLL
    for (int n = 0; n < dTiles; ++n)
      wmma::fill_fragment(o[n], 0.0f);
    float mRow = -INFINITY, lRow = 0.0f; // row r's, in both of its lanes
    // Keys past the tile's last query are all masked when causal, and
    // with a window W so are keys at or before its first query's q0 - W:
    // those tiles are not visited (a tile every row skips leaves the
    // statistics and output as they are).
    int64_t keyEnd = causal ? min(tk, q0 + kRows) : tk;
    int64_t keyStart =
        mask.window > 0 ? max(int64_t(0), q0 - mask.window + 1) : 0;
    keyStart -= keyStart % kRows;
    for (int64_t k0 = keyStart; k0 < keyEnd; k0 += kRows) {
      __syncthreads(); // every warp is done with the previous K and V
      loadRows(t.k, kh, ldk, k0, tk, kRows, d, threadIdx.x, kThreads);
      loadRows(t.v, vh, ldk, k0, tk, kRows, d, threadIdx.x, kThreads);
      __syncthreads();
      // Rows that see none of these keys (past the end, or before them
      // when causal) leave their statistics and output as they are.
      if (w0 >= tq || (causal && k0 > w0 + 15) ||
          (mask.window > 0 && k0 + kRows - 1 <= w0 - mask.window) ||
          segmentsApart(head, w0, 16, k0, kRows, tq, tk, mask, lane))
        continue;
      // S = Q K^T for this warp's 16 rows and the 64 keys.
      productWithRows<kRows, kLdS>(sStrip, qa, t.k);
      __syncwarp();
      // Online softmax: lanes 2r and 2r + 1 take row r's keys [0, 32) and
      // [32, 64), each starting at its own column so that the 32 lanes read
      // 32 different banks.
      bool all = allVisible(w0, 16, k0, kRows, tq, tk, causal, mask);
      const float *sRow = sStrip + r * kLdS + 32 * half;
      float s[32];
      float mx = -INFINITY;
TGC_UNROLL
      for (int i = 0; i < 32; ++i) {
        int c = (i + rot) & 31;
        bool seen = all || visible(head, w0 + r, k0 + 32 * half + c, tq, tk,
                                   causal, mask);
        s[i] = seen ? sRow[c] * scale : -INFINITY;
        mx = fmaxf(mx, s[i]);
      }
      float mNew = fmaxf(mRow, fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)));
      float sum = 0.0f;
      T *pRow = pStrip + r * kLd + 32 * half;
TGC_UNROLL
      for (int i = 0; i < 32; ++i) {
        float p = s[i] == -INFINITY ? 0.0f : expf(s[i] - mNew);
        sum += p;
        pRow[(i + rot) & 31] = fromF32<T>(p);
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      float alpha = mRow == -INFINITY ? 0.0f : expf(mRow - mNew);
      lRow = lRow * alpha + sum;
      mRow = mNew;
      if (half == 0)
        t.alpha[warp][r] = alpha;
      __syncwarp();
      if (!out)
        continue;
      // O = alpha O + P V, the rescale in registers.
      TGC_UNROLL
      for (int n = 0; n < dTiles; ++n)
        TGC_UNROLL
        for (int i = 0; i < o[n].num_elements; ++i)
          o[n].x[i] *= t.alpha[warp][int(rowOf.x[i])];
      TGC_UNROLL
      for (int x = 0; x < kRows / 16; ++x) {
        AFragment<T, wmma::row_major> pa;
        wmma::load_matrix_sync(pa, pStrip + 16 * x, kLd);
        TGC_UNROLL
        for (int n = 0; n < dTiles; ++n) {
          BFragment<T, wmma::row_major> vb;
          wmma::load_matrix_sync(vb, t.v + 16 * x * kLd + 16 * n, kLd);
          wmma::mma_sync(o[n], pa, vb, o[n]);
        }
      }
    }
    // The output through this warp's score strip, divided by l.
    if (half == 0) {
      t.l[warp][r] = lRow;
      t.m[warp][r] = mRow;
    }
    __syncwarp();
    if (out) {
      TGC_UNROLL
      for (int n = 0; n < dTiles; ++n)
        wmma::store_matrix_sync(sStrip + 16 * n, o[n], kLdS,
                                wmma::mem_row_major);
      __syncwarp();
      for (int i = lane; i < 16 * d; i += 32) {
        int row = i / d, c = i % d;
        if (w0 + row >= tq)
          continue;
        float l = t.l[warp][row];
        out[layout.outputs.rowIndex(head, w0 + row, tq) * d + c] =
            fromF32<T>(l > 0.0f ? sStrip[row * kLdS + c] / l : 0.0f);
      }
    }
    if (lse && lane < 16 && w0 + lane < tq) {
      float l = t.l[warp][lane];
      lse[layout.outputs.rowIndex(head, w0 + lane, tq)] =
          l > 0.0f ? t.m[warp][lane] + logf(l) : -INFINITY;
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <typename T> struct alignas(32) BackwardTiles {
  T k[kRows * kLd];   // the block's keys (dQ's right operand)
  T q[kStep * kLd];   // the step's queries; the block's values at the start
  T dO[kStep * kLd];  // the step's output gradient
  T pT[kRows * kLdStep16];  // P^T: a strip of 16 keys per warp
  T dsT[kRows * kLdStep16]; // dS^T, likewise; dQ reads all four
  float s[kWarps][16 * kLdStep]; // each warp's S^T, then dP^T, then dQ
  float lse[kStep], rowDot[kStep];
};

/// One block per (head, tile of 64 keys), every step 32 queries. Each warp
/// owns 16 keys: it keeps their K and V rows and their dK and dV in
/// tensor-core fragments, and computes S^T = K Q^T and dP^T = V dO^T for
/// them, so P^T and dS^T need no other warp's; dQ += dS K reads all four
/// warps' dS^T and goes to global f32 by atomic adds.
template <typename T, int kD>
__global__ void __launch_bounds__(kThreads)
    flashBackwardKernel(const T *q, const T *k, const T *v, const T *dO,
                        const float *lse, const float *rowDot, int64_t kvHeads,
                        int64_t tq, int64_t tk, int d, float scale, bool causal,
                        KeyMask mask, HeadLayouts layout, float *dqAccumulator,
                        T *dk, T *dv) {
  __shared__ BackwardTiles<T> t;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int r = lane >> 1, half = lane & 1, rot = (r >> 3) + 2 * half;
  constexpr int dTiles = kD; // d / 16, known to the compiler
  float *sStrip = t.s[warp];
  T *pStrip = t.pT + 16 * warp * kLdStep16;
  T *dsStrip = t.dsT + 16 * warp * kLdStep16;
  int64_t tiles = (tk + kRows - 1) / kRows;
  for (int64_t job = blockIdx.x; job < kvHeads * tiles; job += gridDim.x) {
    int64_t kvHead = job / tiles, k0 = (job % tiles) * kRows;
    int64_t w0 = k0 + 16 * warp; // this warp's first key
    int64_t ldq = layout.queries.stride(d), ldk = layout.keys.stride(d),
            ldo = layout.outputs.stride(d);
    const T *kh = k + layout.keys.rowIndex(kvHead, 0, tk) * d,
            *vh = v + layout.keys.rowIndex(kvHead, 0, tk) * d;
    __syncthreads(); // the previous job's reads are done
    loadRows(t.k, kh, ldk, k0, tk, kRows, d, threadIdx.x, kThreads);
    // The values pass through the query tile (16 rows a warp, 32 rows at
    // a time) into this warp's fragments.
    AFragment<T, wmma::row_major> ka[kD], va[kD];
    TGC_UNROLL
    for (int pass = 0; pass < 2; ++pass) {
      __syncthreads();
      if (warp / 2 == pass)
        loadRows(t.q + 16 * (warp % 2) * kLd, vh, ldk, w0, tk, 16, d, lane, 32);
      __syncthreads();
      if (warp / 2 == pass)
        TGC_UNROLL
        for (int n = 0; n < dTiles; ++n)
          wmma::load_matrix_sync(va[n], t.q + 16 * (warp % 2) * kLd + 16 * n,
                                 kLd);
    }
    TGC_UNROLL
    for (int n = 0; n < dTiles; ++n)
      wmma::load_matrix_sync(ka[n], t.k + 16 * warp * kLd + 16 * n, kLd);
    AccFragment dvAcc[kD], dkAcc[kD];
    TGC_UNROLL
    for (int n = 0; n < dTiles; ++n) {
      wmma::fill_fragment(dvAcc[n], 0.0f);
      wmma::fill_fragment(dkAcc[n], 0.0f);
    }
    // Queries before the tile's first key see none of it when causal.
    int64_t queryStart = causal ? k0 - k0 % kStep : 0;
    // With a window W, queries at or after the tile's last key + W see
    // none of it either.
    int64_t queryEnd =
        mask.window > 0 ? min(tq, k0 + kRows - 1 + mask.window) : tq;
    // Every query head of the group, one after the other: their dK and dV
    // gather in the same fragments.
    for (int64_t head = kvHead * layout.group;
         head < (kvHead + 1) * layout.group; ++head) {
      const T *qh = q + layout.queries.rowIndex(head, 0, tq) * d,
              *dOh = dO + layout.outputs.rowIndex(head, 0, tq) * d;
      for (int64_t q0 = queryStart; q0 < queryEnd; q0 += kStep) {
        __syncthreads(); // every warp is done with the previous step's tiles
        loadRows(t.q, qh, ldq, q0, tq, kStep, d, threadIdx.x, kThreads);
        loadRows(t.dO, dOh, ldo, q0, tq, kStep, d, threadIdx.x, kThreads);
        for (int i = threadIdx.x; i < kStep; i += kThreads) {
          bool inside = q0 + i < tq;
          int64_t row = inside ? layout.outputs.rowIndex(head, q0 + i, tq) : 0;
          t.lse[i] = inside ? lse[row] : 0.0f;
          t.rowDot[i] = inside ? rowDot[row] : 0.0f;
        }
        __syncthreads();
        // Keys past the end, or after every query of the step when causal,
        // get zero rows of P^T and dS^T (dQ reads them).
        bool none = w0 >= tk || (causal && w0 > q0 + kStep - 1) ||
                    (mask.window > 0 && w0 + 15 <= q0 - mask.window) ||
                    segmentsApart(head, q0, kStep, w0, 16, tq, tk, mask, lane);
        if (!none) {
          // S^T = K Q^T for this warp's 16 keys and the step's 32 queries.
          productWithRows<kStep, kLdStep>(sStrip, ka, t.q);
          __syncwarp();
        }
        // P^T from the saved log-sum-exp: lanes 2r and 2r + 1 take key r's
        // queries [0, 16) and [16, 32).
        bool all = !none && allVisible(q0, kStep, w0, 16, tq, tk, causal, mask);
        float p[16];
        const float *sRow = sStrip + r * kLdStep + 16 * half;
        T *pRow = pStrip + r * kLdStep16 + 16 * half;
        TGC_UNROLL
        for (int i = 0; i < 16; ++i) {
          int c = (i + rot) & 15, query = 16 * half + c;
          bool seen = !none && (all || visible(head, q0 + query, w0 + r, tq, tk,
                                               causal, mask));
          p[i] = seen ? expf(sRow[c] * scale - t.lse[query]) : 0.0f;
          pRow[c] = fromF32<T>(p[i]);
        }
        __syncwarp();
        if (!none) {
          // dP^T = V dO^T, into the same strip.
          productWithRows<kStep, kLdStep>(sStrip, va, t.dO);
          __syncwarp();
        }
        // dS^T = P^T (dP^T - rowDot).
        T *dsRow = dsStrip + r * kLdStep16 + 16 * half;
        TGC_UNROLL
        for (int i = 0; i < 16; ++i) {
          int c = (i + rot) & 15;
          dsRow[c] = fromF32<T>(
              p[i] == 0.0f ? 0.0f : p[i] * (sRow[c] - t.rowDot[16 * half + c]));
        }
        __syncwarp();
        if (!none)
          // dV += P^T dO and dK += dS^T Q for this warp's 16 keys.
          TGC_UNROLL
        for (int x = 0; x < kStep / 16; ++x) {
          AFragment<T, wmma::row_major> pa, dsa;
          wmma::load_matrix_sync(pa, pStrip + 16 * x, kLdStep16);
          wmma::load_matrix_sync(dsa, dsStrip + 16 * x, kLdStep16);
          TGC_UNROLL
          for (int n = 0; n < dTiles; ++n) {
            BFragment<T, wmma::row_major> ob, qb;
            wmma::load_matrix_sync(ob, t.dO + 16 * x * kLd + 16 * n, kLd);
            wmma::mma_sync(dvAcc[n], pa, ob, dvAcc[n]);
            wmma::load_matrix_sync(qb, t.q + 16 * x * kLd + 16 * n, kLd);
            wmma::mma_sync(dkAcc[n], dsa, qb, dkAcc[n]);
          }
        }
        if (!dqAccumulator)
          continue;
        __syncthreads(); // every warp's dS^T is written
        // dQ += scale dS K: the step's 32 x d block in 16 x 16 tiles, dealt
        // to the warps; dS is dS^T read column-major.
        for (int tile = warp; tile < 2 * dTiles; tile += kWarps) {
          int rowTile = tile % 2, colTile = tile / 2;
          AccFragment acc;
          wmma::fill_fragment(acc, 0.0f);
          TGC_UNROLL
          for (int x = 0; x < kRows / 16; ++x) {
            AFragment<T, wmma::col_major> dsa;
            BFragment<T, wmma::row_major> kb;
            wmma::load_matrix_sync(
                dsa, t.dsT + 16 * x * kLdStep16 + 16 * rowTile, kLdStep16);
            wmma::load_matrix_sync(kb, t.k + 16 * x * kLd + 16 * colTile, kLd);
            wmma::mma_sync(acc, dsa, kb, acc);
          }
          __syncwarp();
          wmma::store_matrix_sync(sStrip, acc, kLdStep, wmma::mem_row_major);
          __syncwarp();
          for (int i = lane; i < 16 * 16; i += 32) {
            int row = i / 16, c = i % 16;
            int64_t query = q0 + 16 * rowTile + row;
            if (query < tq)
              atomicAdd(
                  &dqAccumulator[layout.outputs.rowIndex(head, query, tq) * d +
                                 16 * colTile + c],
                  scale * sStrip[row * kLdStep + c]);
          }
        }
      }
    }
    // dV, then dK (scaled), through this warp's strip, 16 columns at a time.
    TGC_UNROLL
    for (int pass = 0; pass < 2; ++pass) {
      T *result = pass == 0 ? dv : dk;
      float factor = pass == 0 ? 1.0f : scale;
      TGC_UNROLL
      for (int n = 0; n < dTiles; ++n) {
        __syncwarp();
        wmma::store_matrix_sync(sStrip, pass == 0 ? dvAcc[n] : dkAcc[n],
                                kLdStep, wmma::mem_row_major);
        __syncwarp();
        if (!result)
          continue;
        for (int i = lane; i < 16 * 16; i += 32) {
          int row = i / 16, c = i % 16;
          if (w0 + row < tk)
            result[layout.keys.rowIndex(kvHead, w0 + row, tk) * d + 16 * n +
                   c] = fromF32<T>(factor * sStrip[row * kLdStep + c]);
        }
      }
    }
  }
}

/// Blocks for `jobs` (head, tile) pairs.
unsigned jobBlocks(int64_t jobs) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(jobs, 1 << 30)));
}

/// Calls `launch` with std::integral_constant<int, d / 16>: the kernels'
/// head size as a compile-time constant (d is 16, 32, 48 or 64).
template <typename Launch> void withHeadTiles(int64_t d, Launch &&launch) {
  switch (d / 16) {
  case 1:
    return launch(std::integral_constant<int, 1>());
  case 2:
    return launch(std::integral_constant<int, 2>());
  case 3:
    return launch(std::integral_constant<int, 3>());
  default:
    return launch(std::integral_constant<int, 4>());
  }
}

template <typename T>
Status launchForward(Context &ctx, const void *q, const void *k, const void *v,
                     int64_t batch, int64_t tq, int64_t tk, int64_t d,
                     float scale, bool causal, KeyMask mask, HeadLayouts layout,
                     void *out, float *lse) {
  int64_t jobs = batch * ((tq + kRows - 1) / kRows);
  if (jobs == 0)
    return Status::success();
  withHeadTiles(d, [&](auto tiles) {
    constexpr int kD = decltype(tiles)::value;
    flashForwardKernel<T, kD><<<jobBlocks(jobs), kThreads, 0, streamOf(ctx)>>>(
            static_cast<const T *>(q), static_cast<const T *>(k),
            static_cast<const T *>(v), batch, tq, tk, int(d), scale, causal,
            mask, layout, static_cast<T *>(out), lse);
  });
  TGC_CUDA_LAUNCH("flashForwardKernel");
  return Status::success();
}

template <typename T>
Status launchBackward(Context &ctx, const void *q, const void *k,
                      const void *v, const void *dO, const float *lse,
                      const float *rowDot, int64_t batch, int64_t tq,
                      int64_t tk, int64_t d, float scale, bool causal,
                      KeyMask mask, HeadLayouts layout, float *dqAccumulator,
                      void *dk, void *dv) {
  // A block per key/value head and tile of keys.
  int64_t kvHeads = batch / layout.group;
  int64_t jobs = kvHeads * ((tk + kRows - 1) / kRows);
  if (jobs == 0)
    return Status::success();
  withHeadTiles(d, [&](auto tiles) {
    constexpr int kD = decltype(tiles)::value;
    flashBackwardKernel<T, kD><<<jobBlocks(jobs), kThreads, 0, streamOf(ctx)>>>(
            static_cast<const T *>(q), static_cast<const T *>(k),
            static_cast<const T *>(v), static_cast<const T *>(dO), lse,
            rowDot, kvHeads, tq, tk, int(d), scale, causal, mask, layout,
            dqAccumulator, static_cast<T *>(dk), static_cast<T *>(dv));
  });
  TGC_CUDA_LAUNCH("flashBackwardKernel");
  return Status::success();
}

} // namespace

bool fusedAttentionSupports(DType dtype, int64_t d, int64_t dv) {
  return (dtype == DType::BF16 || dtype == DType::F16) &&
         runsFusedAttention(16, d, dv);
}

/// The layouts of `batch` query heads, `rowHeads` of them side by side in
/// a row, `group` of them to a key/value head, with the query, key and
/// value rows `packed` (0: not) heads long, checked.
Status headLayouts(int64_t batch, int64_t rowHeads, int64_t group,
                   int64_t packed, HeadLayouts &layout) {
  if (rowHeads < 1 || batch % rowHeads != 0)
    return Status::failure("fused attention: the heads side by side in a "
                           "row must divide the heads");
  if (group < 1 || batch % group != 0 ||
      (rowHeads > 1 && rowHeads % group != 0))
    return Status::failure("fused attention: the query heads of a key/value "
                           "head must divide the heads of a row");
  int64_t keyHeads = rowHeads > 1 ? rowHeads / group : 1;
  if (packed != 0 && (rowHeads == 1 || packed != rowHeads + 2 * keyHeads))
    return Status::failure("fused attention: packed rows hold the query, "
                           "key and value heads of a bshd position");
  layout.queries = {rowHeads, packed ? packed : rowHeads};
  layout.keys = {keyHeads, packed ? packed : keyHeads};
  layout.outputs = {rowHeads, rowHeads};
  layout.group = group;
  return Status::success();
}

Status fusedAttention(Context &ctx, DType dtype, const void *q, const void *k,
                      const void *v, int64_t batch, int64_t tq, int64_t tk,
                      int64_t d, float scale, bool causal, KeyMask mask,
                      int64_t rowHeads, int64_t group, void *out, float *lse,
                      int64_t packed) {
  if (!fusedAttentionSupports(dtype, d, d))
    return Status::failure("fused attention takes 16-bit heads of a "
                           "multiple of 16 up to 64 elements");
  HeadLayouts layout;
  if (Status s = headLayouts(batch, rowHeads, group, packed, layout); !s.ok())
    return s;
  if (dtype == DType::BF16)
    return launchForward<__nv_bfloat16>(ctx, q, k, v, batch, tq, tk, d, scale,
                                        causal, mask, layout, out, lse);
  return launchForward<__half>(ctx, q, k, v, batch, tq, tk, d, scale, causal,
                               mask, layout, out, lse);
}

Status fusedAttentionGrad(Context &ctx, DType dtype, const void *q,
                          const void *k, const void *v, const void *dO,
                          const float *lse, const float *rowDot, int64_t batch,
                          int64_t tq, int64_t tk, int64_t d, float scale,
                          bool causal, KeyMask mask, int64_t rowHeads,
                          int64_t group, float *dqAccumulator, void *dk,
                          void *dv, int64_t packed) {
  if (!fusedAttentionSupports(dtype, d, d))
    return Status::failure("fused attention takes 16-bit heads of a "
                           "multiple of 16 up to 64 elements");
  HeadLayouts layout;
  if (Status s = headLayouts(batch, rowHeads, group, packed, layout); !s.ok())
    return s;
  if (dtype == DType::BF16)
    return launchBackward<__nv_bfloat16>(ctx, q, k, v, dO, lse, rowDot, batch,
                                         tq, tk, d, scale, causal, mask, layout,
                                         dqAccumulator, dk, dv);
  return launchBackward<__half>(ctx, q, k, v, dO, lse, rowDot, batch, tq, tk,
                                d, scale, causal, mask, layout, dqAccumulator,
                                dk, dv);
}

} // namespace tgc::rt::cuda
