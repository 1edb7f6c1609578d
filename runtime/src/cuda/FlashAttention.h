//===- FlashAttention.h - fused 16-bit attention on tensor cores -*- C++ -*-===//
//
// Attention forward and backward for f16/bf16 heads in the manner of
// FlashAttention-2: blocks of four warps, 64 queries a block and 64 keys a
// step forward (64 keys a block and 32 queries a step backward), the
// products on tensor cores (WMMA, f32 accumulation), an online softmax in
// f32, and no Tq x Tk matrix anywhere in device memory. Each warp keeps its
// 16 rows' operands and results (Q and O forward; K, V, dK and dV backward)
// in tensor-core fragments for the whole block. The backward pass recomputes
// the probabilities from the row log-sum-exp (the forward pass's, kept by
// tg-keep-attention-lse, or a first pass of the forward kernel that writes
// only it) and accumulates the query gradient in f32 with atomic adds, as
// FlashAttention-2 does. Heads are read and written in either layout,
// [B, H, T, D] or tg.attention's bshd [B, T, H, D], through a row stride.
// On an H100, GPT-2 124M's attention (B=8, T=1024, 12 heads of 64) took
// 0.34 ms forward and 1.2 ms backward a layer (bench/gpu/README.md's
// profile, before both changes).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_FLASHATTENTION_H
#define TGC_RUNTIME_CUDA_FLASHATTENTION_H

#include "CudaKernels.h"

#include "tgc/Support/FusedAttention.h"

namespace tgc::rt::cuda {

/// Largest head size the fused kernels take (their tiles live in 48 KiB of
/// static shared memory, and each warp's fragments in registers); the
/// compiler's cost model reads the same limit.
using ::tgc::kFusedAttentionMaxHead;

/// Whether the fused kernels run an attention over heads of `d` (query and
/// key) and `dv` (value) elements stored in `dtype`: 16-bit storage, equal
/// head sizes, a multiple of 16 (the tensor-core tile) up to 64.
bool fusedAttentionSupports(DType dtype, int64_t d, int64_t dv);

/// A padding mask over keys (tg.attention's key_mask): an index tensor
/// [rows, tk] on the device, each row shared by `group` consecutive heads;
/// key j of head h is seen where data[(h / group) * tk + j] != 0. A null
/// `data` masks nothing.
struct KeyMask {
  const void *data = nullptr;
  DType dtype = DType::I64;
  int64_t group = 1;
  /// A causal sliding window: query i sees keys i - window < j (0: none).
  int64_t window = 0;
  /// The mask holds segment ids (tg.attention's `segments`, tq == tk):
  /// query i sees key j only where their ids are equal (and nonzero).
  bool segments = false;
};

/// out = softmax(scale * q k^T + causal and key mask) v for `batch` query
/// heads of `tq` queries and `tk` keys of `d` elements, all in `dtype`;
/// `lse` (f32, one per query row, may be null) receives each row's
/// log-sum-exp of the scaled scores. With `out` null only `lse` is
/// computed. The query and output hold `rowHeads` heads side by side in
/// each row: 1 for [B, H, T, D], H for tg.attention's bshd layout
/// [B, T, H, D] (`batch` = B * H); the row statistics are stored in their
/// row order. `group` consecutive query heads share each key/value head
/// (grouped-query attention; keys and values hold batch / group heads,
/// rowHeads / group of them side by side when rowHeads > 1), read once
/// and never repeated. With `packed` (0: not), q, k and v point at the
/// first query, key and value head of one bshd tensor whose rows hold
/// `packed` = rowHeads + 2 rowHeads / group heads (tg.attention's packed
/// operand); the output and the row statistics keep their own layout.
Status fusedAttention(Context &ctx, DType dtype, const void *q, const void *k,
                      const void *v, int64_t batch, int64_t tq, int64_t tk,
                      int64_t d, float scale, bool causal, KeyMask mask,
                      int64_t rowHeads, int64_t group, void *out, float *lse,
                      int64_t packed = 0);

/// The gradients of fusedAttention from the output's gradient `dO`, its
/// row log-sum-exp `lse` and `rowDot` = rowsum(dO * out) (f32, one per query
/// row). `dqAccumulator` (f32, zeroed, the query's shape) receives the
/// query gradient by atomic adds; `dk` and `dv` (in `dtype`) are written. A
/// null pointer leaves that gradient out. Every tensor and row statistic is
/// in the layout `rowHeads` and `group` say, as fusedAttention's; a block
/// takes a key/value head's tile of keys and the queries of every head of
/// its group, so dK and dV sum over the group in registers. With `packed`,
/// q, k, v, dk and dv lie in packed rows as fusedAttention's q, k and v;
/// dO, the row statistics and the accumulator keep the output's layout.
Status fusedAttentionGrad(Context &ctx, DType dtype, const void *q,
                          const void *k, const void *v, const void *dO,
                          const float *lse, const float *rowDot, int64_t batch,
                          int64_t tq, int64_t tk, int64_t d, float scale,
                          bool causal, KeyMask mask, int64_t rowHeads,
                          int64_t group, float *dqAccumulator, void *dk,
                          void *dv, int64_t packed = 0);

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_CUDA_FLASHATTENTION_H
