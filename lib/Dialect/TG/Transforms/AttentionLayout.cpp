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
// to the readers that transposed it back. Transposes move elements without
// arithmetic, so the step computes the same bits. Run before tg-autodiff,
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

/// `value`'s [B, T, H, D] source, when a head-swapping transpose defines it.
Value bshdSource(Value value) {
  Operation *op = value.getDefiningOp();
  return swapsHeads(op) ? op->getOperand(0) : Value();
}

RankedTensorType swappedType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  std::swap(shape[1], shape[2]);
  return tensor.clone(shape);
}

/// Rewrites `attention` to the bshd layout; false when its operands are not
/// all transposed [B, T, H, D] tensors.
bool setBshd(AttentionOp attention) {
  if (attention.getBshd() || attention.getLse())
    return false;
  Value query = bshdSource(attention.getQuery());
  Value key = bshdSource(attention.getKey());
  Value value = bshdSource(attention.getValue());
  if (!query || !key || !value)
    return false;
  OpBuilder builder(attention);
  auto bshd = AttentionOp::create(
      builder, attention.getLoc(),
      swappedType(attention.getResult().getType()), /*lse=*/Type(), query,
      key, value,
      attention.getKeyMask(), attention.getCausalAttr(),
      attention.getWindowAttr(), attention.getScaleAttr(),
      builder.getBoolAttr(true));
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
  // The operands' transposes no reader is left for (operands may share
  // one).
  llvm::SetVector<Operation *> operands;
  for (Value operand :
       {attention.getQuery(), attention.getKey(), attention.getValue()})
    operands.insert(operand.getDefiningOp());
  attention.erase();
  for (Operation *op : operands)
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
