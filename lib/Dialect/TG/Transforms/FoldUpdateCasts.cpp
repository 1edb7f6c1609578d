//===- FoldUpdateCasts.cpp - the tg-fold-update-casts pass ----------------===//
//
// An optimizer update reads its gradient in any float type, so a widening
// cast of a 16-bit gradient that only the update reads is folded into it.
// Widening is exact: the update computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/IR/TypeUtilities.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFOLDUPDATECASTS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `cast` widens a float exactly: to a float type of at least the
/// precision and range of its operand's (f16 and bf16 into f32).
bool widensExactly(CastOp cast) {
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getInput()));
  auto to = dyn_cast<FloatType>(getElementTypeOrSelf(cast.getResult()));
  return from && to && to.isF32() && (from.isF16() || from.isBF16());
}

struct FoldUpdateCastsPass
    : tgc::tg::impl::TGFoldUpdateCastsBase<FoldUpdateCastsPass> {
  void runOnOperation() override {
    SmallVector<CastOp> folded;
    getOperation().walk([&](OptimizerUpdateOpInterface update) {
      Value grad = update.getGrad();
      auto cast = grad.getDefiningOp<CastOp>();
      if (!cast || !widensExactly(cast) || !grad.hasOneUse())
        return;
      for (OpOperand &operand : update->getOpOperands())
        if (operand.get() == grad)
          operand.set(cast.getInput());
      folded.push_back(cast);
    });
    for (CastOp cast : folded)
      cast.erase();
  }
};

} // namespace
