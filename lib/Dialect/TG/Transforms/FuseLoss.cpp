//===- FuseLoss.cpp - the tg-fuse-loss pass -------------------------------===//
//
// The loss and its gradient in one pass over the logits.
//
// A training step computes the mean cross-entropy of the logits in the
// forward pass (a kernel reading all of them) and, at the start of the
// backward pass, its gradient with respect to them (a kernel reading them
// again and writing the gradient over them). The gradient's seed is known
// before the loss is: the constant 1, scaled by the loss scale or weighed
// by a micro-batch's share of the targets, all scalars computed from the
// step's arguments. So tg.cross_entropy takes the seed as `grad` and also
// returns the gradient (`logits_grad`), computed in the same kernel as the
// loss, row by row, with the arithmetic of tg.cross_entropy_grad: the same
// bits, one read of the [rows, vocabulary] logits fewer. For GPT-2 that is
// the largest tensor of the step (823 MB in bf16 at B=8, T=1024).
//
// It applies when the gradient differentiates the loss (the same logits,
// targets and ignore_index), nothing else reads the logits (the gradient
// may then be written over them, as tg.cross_entropy_grad's is), and the
// seed is available before the loss or computed from what is by scalar ops
// alone, which move before it. Run on the finished step (after
// tg-autodiff, tg-remat and tg-loss-scale): the fused op has no gradient
// rule.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFUSELOSS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

bool isScalar(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 0;
}

/// The ops between `loss` and the seed's user that the seed `value` is
/// computed by, in block order, when they are scalar ops whose other
/// operands are available before `loss`; failure otherwise.
FailureOr<SmallVector<Operation *>> seedSlice(Value value, Operation *loss) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> pending = {value};
  while (!pending.empty()) {
    Value next = pending.pop_back_val();
    Operation *def = next.getDefiningOp();
    if (!def)
      continue; // A block argument: available everywhere.
    if (def->getBlock() != loss->getBlock())
      return failure();
    if (def->isBeforeInBlock(loss))
      continue;
    if (def == loss || def->getNumRegions() != 0 ||
        !llvm::all_of(def->getResultTypes(), isScalar))
      return failure();
    if (!slice.insert(def))
      continue;
    llvm::append_range(pending, def->getOperands());
  }
  SmallVector<Operation *> ordered = slice.takeVector();
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Fuses `grad` into the loss it differentiates; false when it does not
/// apply.
bool fuse(CrossEntropyGradOp grad) {
  Value logits = grad.getLogits();
  CrossEntropyOp loss;
  for (Operation *user : logits.getUsers())
    if (auto entropy = dyn_cast<CrossEntropyOp>(user))
      loss = entropy;
  if (!loss || loss.getGrad() || loss.getTargets() != grad.getTargets() ||
      loss.getIgnoreIndex() != grad.getIgnoreIndex() ||
      loss.getSoftcap() != grad.getSoftcap() ||
      loss->getBlock() != grad->getBlock() || !loss->isBeforeInBlock(grad))
    return false;
  // The gradient is written over the logits: nothing else may read them.
  for (Operation *user : logits.getUsers())
    if (user != loss && user != grad)
      return false;
  FailureOr<SmallVector<Operation *>> slice = seedSlice(grad.getGrad(), loss);
  if (failed(slice))
    return false;
  for (Operation *op : *slice)
    op->moveBefore(loss);
  OpBuilder builder(loss);
  auto fused = CrossEntropyOp::create(
      builder, loss.getLoc(), loss.getResult().getType(),
      grad.getResult().getType(), logits, loss.getTargets(), grad.getGrad(),
      loss.getIgnoreIndexAttr(), loss.getSoftcapAttr());
  fused->setDiscardableAttrs(loss->getDiscardableAttrDictionary());
  loss.getResult().replaceAllUsesWith(fused.getResult());
  grad.getResult().replaceAllUsesWith(fused.getLogitsGrad());
  grad.erase();
  loss.erase();
  return true;
}

struct FuseLossPass : tgc::tg::impl::TGFuseLossBase<FuseLossPass> {
  void runOnOperation() override {
    SmallVector<CrossEntropyGradOp> grads;
    getOperation().walk(
        [&](CrossEntropyGradOp grad) { grads.push_back(grad); });
    for (CrossEntropyGradOp grad : grads)
      fuse(grad);
  }
};

} // namespace
