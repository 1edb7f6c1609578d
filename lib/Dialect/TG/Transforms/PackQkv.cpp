//===- PackQkv.cpp - the tg-pack-qkv pass ---------------------------------===//
//
// Attention reads the query, key and value where a fused QKV projection
// wrote them, and writes their gradients into one tensor.
//
// GPT-2's c_attn (and Phi-3's qkv_proj) computes the three projections as
// one [B, T, (Hq + 2 Hkv) D] product; a tg.split then copies it into three
// tensors, which the bshd attention and its gradient read as [B, T, H, D]
// heads, and in the backward pass a tg.concat copies the three gradients
// back into one [B, T, (Hq + 2 Hkv) D] tensor for the projection's
// gradient GEMMs. Both copies move the whole tensor twice a layer and only
// change where the heads lie. With `packed`, tg.attention and
// tg.attention_grad read the product itself as [B, T, Hq + 2 Hkv, D] (the
// fused kernels address each tensor's heads through the packed row
// stride), and the gradient writes the three gradients side by side into
// one result, which the projection's gradients read: the split and the
// concat are gone, and the step computes the same bits.
//
// It applies to bshd attentions that the CUDA backend runs fused
// (tgc/Support/FusedAttention.h; the other paths would copy the heads
// apart again) whose query, key and value are reshapes of the results 0,
// 1 and 2 of one tg.split along the last axis into exactly those three,
// and to their gradients when the three gradients, each reshaped back,
// are concatenated in that order along the last axis and read by nothing
// else. Run on the finished step (after tg-keep-attention-lse): a packed
// attention has no gradient rule.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/FusedAttention.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGPACKQKV
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// The split whose results 0, 1 and 2, reshaped to bshd heads, are
/// `query`, `key` and `value`, when the attention can read its operand
/// packed instead; null otherwise.
SplitOp packableSplit(Value query, Value key, Value value) {
  SplitOp split;
  Value operands[] = {query, key, value};
  for (auto [index, operand] : llvm::enumerate(operands)) {
    auto reshape = operand.getDefiningOp<ReshapeOp>();
    if (!reshape)
      return nullptr;
    auto piece = dyn_cast<OpResult>(reshape.getInput());
    auto from = piece ? dyn_cast<SplitOp>(piece.getOwner()) : SplitOp();
    if (!from || piece.getResultNumber() != index || (split && from != split))
      return nullptr;
    split = from;
  }
  auto input = cast<RankedTensorType>(split.getInput().getType());
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  if (split.getNumResults() != 3 || input.getRank() != 3 ||
      split.getAxis() != 2 || q.getRank() != 4 ||
      input.getShape().take_front(2) != q.getShape().take_front(2) ||
      k.getShape() != cast<RankedTensorType>(value.getType()).getShape())
    return nullptr;
  return split;
}

/// The packed operand: the split's input as [B, T, Hq + 2 Hkv, D] heads
/// (`query` and `key` give Hq, Hkv and D), built after it.
Value packedOperand(SplitOp split, Value query, Value key) {
  ArrayRef<int64_t> q = cast<RankedTensorType>(query.getType()).getShape(),
                    k = cast<RankedTensorType>(key.getType()).getShape();
  auto type = RankedTensorType::get({q[0], q[1], q[2] + 2 * k[2], q[3]},
                                    getElementTypeOrSelf(query.getType()));
  OpBuilder builder(split);
  return ReshapeOp::create(builder, split.getLoc(), type, split.getInput());
}

/// Whether the CUDA backend runs `op` (an attention or its gradient) with
/// the fused kernels, which read packed heads in place.
template <typename OpT> bool runsFused(OpT op) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto value = cast<RankedTensorType>(op.getValue().getType());
  return tgc::runsFusedAttention(query.getElementTypeBitWidth(),
                                 query.getShape().back(),
                                 value.getShape().back());
}

/// The concat that joins `grad`'s three gradients, each reshaped back to
/// [B, T, H D], along the last axis, when nothing else reads them; null
/// otherwise.
ConcatOp joiningConcat(AttentionGradOp grad) {
  ConcatOp concat;
  for (OpResult result : grad->getResults()) {
    if (!result.hasOneUse())
      return nullptr;
    auto reshape = dyn_cast<ReshapeOp>(*result.getUsers().begin());
    if (!reshape || !reshape.getResult().hasOneUse())
      return nullptr;
    OpOperand &use = *reshape.getResult().getUses().begin();
    auto user = dyn_cast<ConcatOp>(use.getOwner());
    if (!user || use.getOperandNumber() != result.getResultNumber() ||
        (concat && user != concat))
      return nullptr;
    concat = user;
  }
  if (!concat || concat.getInputs().size() != 3 || concat.getAxis() != 2)
    return nullptr;
  return concat;
}

/// Whether `op` (an attention or its gradient) can read packed heads:
/// bshd, run fused, not packed yet, and a gradient computing all three
/// gradients that a concat joins.
bool packable(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return attention.getBshd() && !attention.getPacked() &&
           runsFused(attention);
  auto grad = dyn_cast<AttentionGradOp>(op);
  if (!grad || !grad.getBshd() || grad.getPacked() || !runsFused(grad))
    return false;
  if (std::optional<ArrayRef<bool>> mask = grad.getOutputMask())
    if (!llvm::all_of(*mask, [](bool computed) { return computed; }))
      return false;
  return bool(joiningConcat(grad));
}

struct PackQkvPass : tgc::tg::impl::TGPackQkvBase<PackQkvPass> {
  void runOnOperation() override {
    SmallVector<SplitOp> splits;
    getOperation().walk([&](SplitOp split) { splits.push_back(split); });
    for (SplitOp split : splits)
      packReaders(split);
  }

  /// Packs every attention and gradient reading `split`'s pieces, when all
  /// of them can be (otherwise the pieces would stay alive beside the
  /// packed operand), and erases the split.
  void packReaders(SplitOp split) {
    SetVector<Operation *> readers;
    for (OpResult piece : split->getResults())
      for (Operation *user : piece.getUsers()) {
        if (!isa<ReshapeOp>(user))
          return;
        readers.insert(user->getUsers().begin(), user->getUsers().end());
      }
    if (readers.empty())
      return;
    for (Operation *reader : readers) {
      if (!packable(reader))
        return;
      auto operands = reader->getOperands().take_front(3);
      if (packableSplit(operands[0], operands[1], operands[2]) != split)
        return;
    }
    Operation *first = readers.front();
    Value operand =
        packedOperand(split, first->getOperand(0), first->getOperand(1));
    for (Operation *reader : readers) {
      if (auto attention = dyn_cast<AttentionOp>(reader)) {
        attention.getQueryMutable().assign(operand);
        attention.getKeyMutable().assign(operand);
        attention.getValueMutable().assign(operand);
        attention.setPacked(true);
      } else {
        packGradient(cast<AttentionGradOp>(reader), operand);
      }
    }
    for (OpResult piece : split->getResults())
      for (Operation *user : llvm::make_early_inc_range(piece.getUsers()))
        if (user->use_empty())
          user->erase();
    if (split->use_empty())
      split->erase();
  }

  /// `grad` rebuilt over the packed `operand`, its one gradient read where
  /// the concat of the three was.
  void packGradient(AttentionGradOp grad, Value operand) {
    ConcatOp concat = joiningConcat(grad);
    OpBuilder builder(grad);
    auto fused = AttentionGradOp::create(
        builder, grad.getLoc(),
        TypeRange{operand.getType(), grad.getKeyGrad().getType(),
                  grad.getValueGrad().getType()},
        operand, operand, operand, grad.getOutput(), grad.getGrad(),
        grad.getKeyMask(), grad.getLse(), grad.getCausalAttr(),
        grad.getWindowAttr(), grad.getScaleAttr(),
        builder.getDenseBoolArrayAttr({true, false, false}), grad.getBshdAttr(),
        builder.getBoolAttr(true), grad.getSoftcapAttr(),
        grad.getSegmentsAttr());
    fused->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
    // The packed gradient is the concat's result in [B, T, H, D] heads.
    builder.setInsertionPoint(concat);
    Value joined =
        ReshapeOp::create(builder, concat.getLoc(),
                          concat.getResult().getType(), fused.getQueryGrad());
    concat.getResult().replaceAllUsesWith(joined);
    SmallVector<Operation *> reshapes;
    for (Value input : concat.getInputs())
      reshapes.push_back(input.getDefiningOp());
    concat.erase();
    for (Operation *reshape : reshapes)
      reshape->erase();
    grad.erase();
  }
};

} // namespace
