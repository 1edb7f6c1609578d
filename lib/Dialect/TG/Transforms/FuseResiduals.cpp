//===- FuseResiduals.cpp - the tg-fuse-residuals pass ---------------------===//
//
// The residual adds of pre-norm blocks join the norms beside them.
//
// Forward, the residual stream `x + f(norm(x))` is added by a tg.add and
// normalized by the next block's norm: two kernels, the second reading the
// sum the first just wrote. tg.layer_norm (and tg.rms_norm) take the add's
// second operand as an `addend` instead, write the sum (which the stream
// and the norm's gradient go on reading) and normalize it as stored, so
// the step computes the same bits with one kernel and one tensor pass
// fewer per norm.
//
// Backward, the block's input receives two gradients: the one through the
// norm, which tg.layer_norm_grad (or tg.rms_norm_grad) computes, and the
// residual's, which a tg.add then adds to it: a kernel that reads both
// tensors again and writes a third. The norm gradients take the residual's
// gradient as an `addend` instead and write the sum, the add computed in
// the norm gradient's kernel on the value it just computed (rounded to its
// type first, as the add would read it), so the step computes the same
// bits with one kernel and two f32 tensor passes fewer per norm.
//
// Run on the finished step (after tg-autodiff and tg-remat, where the adds
// are built and ordered): a norm with an addend has no gradient rule.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFUSERESIDUALS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `value` is available where `op` is (an argument of the block,
/// or defined before `op` in it).
bool availableAt(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return value.getParentBlock() == op->getBlock();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// Folds `add` = norm_grad#0 + addend into `grad` (a layer_norm_grad or
/// rms_norm_grad without an addend whose input gradient only `add` reads);
/// false when it does not apply.
template <typename GradOp> bool fuse(GradOp grad, AddOp add) {
  Value inputGrad = grad.getInputGrad();
  if (grad.getAddend() || !inputGrad.hasOneUse() ||
      add.getType() != inputGrad.getType())
    return false;
  Value addend =
      add.getLhs() == inputGrad ? add.getRhs() : add.getLhs();
  if (addend.getType() != inputGrad.getType() || addend == inputGrad)
    return false;
  // The fused op goes where the norm gradient is when the addend is
  // available there, otherwise where the add is, when nothing reads the
  // parameter gradients before it.
  Operation *at = grad;
  if (!availableAt(addend, grad)) {
    for (Value result : grad->getResults().drop_front())
      for (Operation *user : result.getUsers())
        if (user->getBlock() != add->getBlock() ||
            !add->isBeforeInBlock(user))
          return false;
    at = add;
  }
  OpBuilder builder(at);
  auto fused = GradOp::create(builder, grad.getLoc(), grad->getResultTypes(),
                              grad.getInput(), grad.getWeight(), grad.getGrad(),
                              addend, grad.getEpsilonAttr(),
                              grad.getOutputMaskAttr());
  add.getResult().replaceAllUsesWith(fused.getInputGrad());
  add.erase();
  grad->replaceAllUsesWith(fused->getResults());
  grad.erase();
  return true;
}

/// The norm (tg.layer_norm or tg.rms_norm without an addend) that reads
/// `sum` as its input, in its block, or null.
Operation *normOf(Value sum) {
  for (Operation *user : sum.getUsers()) {
    if (user->getBlock() != sum.getParentBlock() ||
        user->getOperand(0) != sum)
      continue;
    if (auto norm = dyn_cast<LayerNormOp>(user); norm && !norm.getAddend())
      return user;
    if (auto norm = dyn_cast<RmsNormOp>(user); norm && !norm.getAddend())
      return user;
  }
  return nullptr;
}

/// Folds `add` (of two tensors of one shape) into the norm that reads its
/// sum; false when there is none or the ops cannot meet.
bool fuseForward(AddOp add) {
  Value sum = add.getResult();
  auto type = cast<RankedTensorType>(sum.getType());
  if (!isa<FloatType>(type.getElementType()) ||
      cast<RankedTensorType>(add.getLhs().getType()).getShape() !=
          type.getShape() ||
      cast<RankedTensorType>(add.getRhs().getType()).getShape() !=
          type.getShape())
    return false;
  Operation *norm = normOf(sum);
  if (!norm)
    return false;
  // The fused op goes where the add is when the norm's parameters are
  // available there, otherwise where the norm is, when nothing reads the
  // sum before it.
  Operation *at = add;
  for (Value operand : norm->getOperands().drop_front())
    if (!availableAt(operand, add))
      at = norm;
  if (at == norm)
    for (Operation *user : sum.getUsers())
      if (user != norm && user->getBlock() == norm->getBlock() &&
          user->isBeforeInBlock(norm))
        return false;
  OpBuilder builder(at);
  Type resultType = norm->getResult(0).getType();
  Operation *fused;
  if (auto ln = dyn_cast<LayerNormOp>(norm))
    fused = LayerNormOp::create(builder, ln.getLoc(), resultType, type,
                                add.getLhs(), ln.getWeight(), ln.getBias(),
                                add.getRhs(), ln.getEpsilonAttr());
  else {
    auto rms = cast<RmsNormOp>(norm);
    fused = RmsNormOp::create(builder, rms.getLoc(), resultType, type,
                              add.getLhs(), rms.getWeight(), add.getRhs(),
                              rms.getEpsilonAttr());
  }
  fused->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
  norm->getResult(0).replaceAllUsesWith(fused->getResult(0));
  norm->erase();
  sum.replaceAllUsesWith(fused->getResult(1));
  add.erase();
  return true;
}

struct FuseResidualsPass
    : tgc::tg::impl::TGFuseResidualsBase<FuseResidualsPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      if (fuseForward(add))
        continue;
      for (Value operand : {add.getLhs(), add.getRhs()}) {
        Operation *def = operand.getDefiningOp();
        if (!def || operand != def->getResult(0))
          continue;
        if (auto grad = dyn_cast<LayerNormGradOp>(def); grad && fuse(grad, add))
          break;
        if (auto grad = dyn_cast<RmsNormGradOp>(def); grad && fuse(grad, add))
          break;
      }
    }
  }
};

} // namespace
