//===- FuseResiduals.cpp - the tg-fuse-residuals pass ---------------------===//
//
// A pre-norm block (x + f(norm(x))) sends its input two gradients: the one
// through the norm, which tg.layer_norm_grad (or tg.rms_norm_grad)
// computes, and the residual's, which a tg.add then adds to it: a kernel
// that reads both tensors again and writes a third. The norm gradients
// take the residual's gradient as an `addend` instead and write the sum,
// the add computed in the norm gradient's kernel on the value it just
// computed (rounded to its type first, as the add would read it), so the
// step computes the same bits with one kernel and two f32 tensor passes
// fewer per norm. Run on the finished step (after tg-autodiff and tg-remat,
// where the adds are built and ordered).
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

struct FuseResidualsPass
    : tgc::tg::impl::TGFuseResidualsBase<FuseResidualsPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
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
