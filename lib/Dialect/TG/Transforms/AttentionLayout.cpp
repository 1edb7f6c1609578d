//===- AttentionLayout.cpp - the tg-attention-layout pass -----------------===//
//
// A model's attention reads its heads as [B, H, T, D], so the projections
// around it, which write and read [B, T, H * D], are joined to it by
// transposes: one for each of Q, K and V and one for the output forward,
// and as many again for the gradients backward, each a kernel that copies
// the tensor. tg.attention's bshd layout reads and writes the heads where
// the projections put them ([B, T, H, D]); this pass sets it on every
// attention whose query, key and value are transposes (0, 2, 1, 3) of
// [B, T, H, D] tensors, which it then reads directly, and hands the result
// to the readers that transposed it back. A rotary embedding between the
// transpose and the attention (Llama's, Mistral's, Qwen2's queries and
// keys), and mixed precision's casts around it, move before it: a tg.rope
// in the bshd layout of the projection's output. Transposes move elements
// without arithmetic, and the casts and the rope act on each row by
// itself (the rope by the row's position) either way, so the step
// computes the same bits. Run before tg-autodiff,
// whose attention_grad inherits the layout: the backward transposes are
// never built.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGATTENTIONLAYOUT
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `op` is a tg.transpose that swaps dimensions 1 and 2 of a rank-4
/// tensor: between [B, T, H, D] and [B, H, T, D].
bool swapsHeads(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  return transpose &&
         transpose.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
}

RankedTensorType swappedType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  std::swap(shape[1], shape[2]);
  return tensor.clone(shape);
}

/// The ops between a head-swapping transpose and `value` that act on each
/// row of D elements alone (mixed precision's casts, a rotary embedding),
/// the one next to `value` first, and the transpose; false when there is
/// no such transpose.
bool chainFromTranspose(Value value, SmallVectorImpl<Operation *> &chain,
                        Operation *&transpose) {
  Operation *op = value.getDefiningOp();
  while (op && (isa<CastOp>(op) ||
                (isa<RopeOp>(op) && !cast<RopeOp>(op).getBshd()))) {
    chain.push_back(op);
    op = op->getOperand(0).getDefiningOp();
  }
  transpose = op;
  return swapsHeads(op);
}

/// The chain rebuilt on the transpose's [B, T, H, D] operand: each op of
/// the swapped shape, a rope with the bshd layout.
Value rebuildBshd(ArrayRef<Operation *> chain, Operation *transpose,
                  OpBuilder &builder) {
  Value value = transpose->getOperand(0);
  for (Operation *op : llvm::reverse(chain)) {
    Type type = swappedType(op->getResult(0).getType());
    Operation *bshd;
    if (auto rope = dyn_cast<RopeOp>(op))
      bshd = RopeOp::create(builder, rope.getLoc(), type, value,
                            rope.getInvFreq(), rope.getPositions(),
                            rope.getInverseAttr(), builder.getBoolAttr(true));
    else
      bshd = CastOp::create(builder, op->getLoc(), type, value);
    bshd->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    value = bshd->getResult(0);
  }
  return value;
}

/// Rewrites `attention` to the bshd layout; false when its operands are not
/// all transposed [B, T, H, D] tensors.
bool setBshd(AttentionOp attention) {
  if (attention.getBshd() || attention.getLse())
    return false;
  SmallVector<Operation *> chains[3];
  Operation *transposes[3];
  Value operands[3] = {attention.getQuery(), attention.getKey(),
                       attention.getValue()};
  for (int i = 0; i < 3; ++i)
    if (!chainFromTranspose(operands[i], chains[i], transposes[i]))
      return false;
  OpBuilder builder(attention);
  Value query = rebuildBshd(chains[0], transposes[0], builder);
  Value key = rebuildBshd(chains[1], transposes[1], builder);
  Value value = rebuildBshd(chains[2], transposes[2], builder);
  auto bshd = AttentionOp::create(
      builder, attention.getLoc(), swappedType(attention.getResult().getType()),
      /*lse=*/Type(), query, key, value, attention.getKeyMask(),
      attention.getCausalAttr(), attention.getWindowAttr(),
      attention.getScaleAttr(), builder.getBoolAttr(true),
      /*packed=*/BoolAttr(), attention.getSoftcapAttr(),
      attention.getSegmentsAttr());
  bshd->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
  // Readers that transposed the result back read it as it is; any other
  // reader gets the [B, H, T, D] result from one transpose.
  TransposeOp back;
  for (Operation *user :
       llvm::make_early_inc_range(attention.getResult().getUsers())) {
    if (swapsHeads(user)) {
      user->getResult(0).replaceAllUsesWith(bshd.getResult());
      user->erase();
      continue;
    }
    if (!back) {
      builder.setInsertionPointAfter(bshd);
      back = TransposeOp::create(builder, attention.getLoc(),
                                 attention.getResult().getType(),
                                 bshd.getResult(),
                                 builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
    }
    user->replaceUsesOfWith(attention.getResult(), back.getResult());
  }
  // The operands' chains, then transposes, that no reader is left for
  // (operands may share them), from the attention's side.
  attention.erase();
  llvm::SetVector<Operation *> unused;
  for (int i = 0; i < 3; ++i)
    unused.insert(chains[i].begin(), chains[i].end());
  for (Operation *transpose : transposes)
    unused.insert(transpose);
  for (Operation *op : unused)
    if (op->use_empty())
      op->erase();
  return true;
}

struct AttentionLayoutPass
    : tgc::tg::impl::TGAttentionLayoutBase<AttentionLayoutPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk(
        [&](AttentionOp attention) { attentions.push_back(attention); });
    for (AttentionOp attention : attentions)
      setBshd(attention);
  }
};

} // namespace
