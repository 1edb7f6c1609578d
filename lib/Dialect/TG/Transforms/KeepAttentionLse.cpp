//===- KeepAttentionLse.cpp - the tg-keep-attention-lse pass --------------===//
//
// The fused attention backward needs each query row's log-sum-exp of the
// scores; without it, it first runs the forward kernel again over Q and K
// to compute it (the products Q K^T of the whole forward pass). The
// forward kernel has the statistic at hand, so this pass has each
// tg.attention whose result a tg.attention_grad differentiates (the same
// operands, mask and attributes) also return it, f32 and one per query row
// ([B, H, T], or [B, T, H] with bshd: a few hundred KiB a layer), and the
// gradient read it. The forward kernel computes the statistic the same way
// whether or not it writes the output, so the step computes the same bits.
// Only attentions the CUDA backend runs fused take part (tgc/Support/
// FusedAttention.h): the GEMM path recomputes the probabilities whole and
// has no use for it. Run on the finished step (after tg-autodiff and
// tg-remat, whose recomputed attention then keeps it).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/FusedAttention.h"

#include "mlir/IR/TypeUtilities.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGKEEPATTENTIONLSE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether the CUDA backend runs `attention` with the fused kernels, whose
/// backward pass reads the log-sum-exp: 16-bit heads they take (the rule of
/// tgc/Support/FusedAttention.h, which the cost model reads too).
bool runsFused(AttentionOp attention) {
  auto query = cast<RankedTensorType>(attention.getQuery().getType());
  auto value = cast<RankedTensorType>(attention.getValue().getType());
  return tgc::runsFusedAttention(query.getElementTypeBitWidth(),
                                 query.getShape().back(),
                                 value.getShape().back());
}

/// Whether `grad` differentiates `attention`: the same operands, mask and
/// attributes, and `attention`'s result as its output.
bool differentiates(AttentionGradOp grad, AttentionOp attention) {
  return grad.getOutput() == attention.getResult() &&
         grad.getQuery() == attention.getQuery() &&
         grad.getKey() == attention.getKey() &&
         grad.getValue() == attention.getValue() &&
         grad.getKeyMask() == attention.getKeyMask() &&
         grad.getCausal() == attention.getCausal() &&
         grad.getWindow() == attention.getWindow() &&
         grad.getScaleAttr() == attention.getScaleAttr() &&
         grad.getBshd() == attention.getBshd() &&
         grad.getPacked() == attention.getPacked() &&
         grad.getSegments() == attention.getSegments();
}

/// `attention` rebuilt to return its row log-sum-exp too.
AttentionOp withLse(AttentionOp attention) {
  if (attention.getLse())
    return attention;
  auto lseType = RankedTensorType::get(
      ArrayRef<int64_t>(attention.getHeadShapes()[0]).drop_back(),
      Float32Type::get(attention.getContext()));
  OpBuilder builder(attention);
  auto kept = AttentionOp::create(
      builder, attention.getLoc(), attention.getResult().getType(), lseType,
      attention.getQuery(), attention.getKey(), attention.getValue(),
      attention.getKeyMask(), attention.getCausalAttr(),
      attention.getWindowAttr(), attention.getScaleAttr(),
      attention.getBshdAttr(), attention.getPackedAttr(),
      attention.getSoftcapAttr(), attention.getSegmentsAttr());
  kept->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
  attention.getResult().replaceAllUsesWith(kept.getResult());
  attention.erase();
  return kept;
}

struct KeepAttentionLsePass
    : tgc::tg::impl::TGKeepAttentionLseBase<KeepAttentionLsePass> {
  void runOnOperation() override {
    SmallVector<AttentionGradOp> grads;
    getOperation().walk([&](AttentionGradOp grad) {
      if (!grad.getLse())
        grads.push_back(grad);
    });
    for (AttentionGradOp grad : grads) {
      auto attention = grad.getOutput().getDefiningOp<AttentionOp>();
      if (!attention || !differentiates(grad, attention) ||
          !runsFused(attention))
        continue;
      AttentionOp kept = withLse(attention);
      grad.getLseMutable().assign(kept.getLse());
    }
  }
};

} // namespace
