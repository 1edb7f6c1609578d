//===- FusedAttention.h - which attentions run fused ------------*- C++ -*-===//
//
// The contract between the compiler's cost model (lib/Dialect/TG/IR/
// TGCost.cpp, what the roofline estimate believes) and the CUDA backend
// (runtime/src/cuda/FlashAttention.cu, what runs): attention over 16-bit
// heads of a multiple of 16 elements (the tensor-core tile) up to 64 (the
// kernels' shared-memory tiles), with equal query and value head sizes,
// runs the fused tensor-core kernels, grouped-query heads included (each
// query head reads its group's key/value head, never repeated); anything
// else runs the f32 GEMMs around a materialised score matrix, in chunks of
// heads (attentionHeadsPerChunk).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_FUSEDATTENTION_H
#define TGC_SUPPORT_FUSEDATTENTION_H

#include <cstdint>

namespace tgc {

/// The largest head size the fused attention kernels take.
constexpr int64_t kFusedAttentionMaxHead = 64;

/// Whether an attention whose operands are stored in `elementBits`-bit
/// floats, with query/key heads of `d` and value heads of `dv` elements,
/// runs the fused kernels.
constexpr bool runsFusedAttention(unsigned elementBits, int64_t d,
                                  int64_t dv) {
  return elementBits == 16 && d == dv && d > 0 && d % 16 == 0 &&
         d <= kFusedAttentionMaxHead;
}

/// Bytes of score-sized f32 scratch (S, dP) the unfused attention allows
/// itself: it runs its heads in chunks that fit.
constexpr int64_t kAttentionScoreBytes = int64_t(256) << 20;

/// Heads per chunk of the unfused attention, of `heads` (key/value heads)
/// whose `scoreMatrices` score matrices have tq x tk f32 entries each.
constexpr int64_t attentionHeadsPerChunk(int64_t heads, int64_t tq, int64_t tk,
                                         int64_t scoreMatrices) {
  int64_t perHead = (tq * tk > 1 ? tq * tk : 1) * 4 * scoreMatrices;
  int64_t fit = kAttentionScoreBytes / perHead;
  int64_t chunk = fit < heads ? fit : heads;
  return chunk > 1 ? chunk : 1;
}

} // namespace tgc

#endif // TGC_SUPPORT_FUSEDATTENTION_H
