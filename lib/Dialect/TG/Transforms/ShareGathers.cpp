//===- ShareGathers.cpp - the tg-share-gathers pass -----------------------===//
//
// zero3 with rematerialization gathers a recomputed block's parameters
// twice in the backward pass: tg-remat recomputes the forward pass's
// gathers with the block (they are recomputable), and tg-data-parallel's
// backward gathers fetch the same parts again for the block's gradients.
// Both send the same bytes. This pass keeps the first of two equal gathers
// from the backward pass's start on and points the second's readers at it,
// so the backward pass gathers each parameter once, as FSDP does: the
// gathered copy lives from the recomputed forward through the block's
// backward. Two gathers are equal when they run over the same group of
// ranks and their operands are the same computation: the same arguments
// through the same casts, concatenations and reshapes (marks for passes,
// such as tg.recompute and tg.remat, aside). The forward pass's gathers are
// never shared with the backward pass's: their copies would then live
// across the whole step, which is what zero3 avoids.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGSHAREGATHERS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `a` and `b` are the same computation: the same value, or the
/// results of the same layout op (cast, concat, reshape) with the same
/// inherent attributes on operands that are.
bool sameComputation(Value a, Value b) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || x->getName() != y->getName() ||
      !isa<CastOp, ConcatOp, ReshapeOp>(x) || a.getType() != b.getType() ||
      x->getNumOperands() != y->getNumOperands() ||
      x->getPropertiesAsAttribute() != y->getPropertiesAsAttribute())
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameComputation(p, q))
      return false;
  return true;
}

bool sameGather(AllGatherOp x, AllGatherOp y) {
  return x.getType() == y.getType() &&
         x->getPropertiesAsAttribute() == y->getPropertiesAsAttribute() &&
         sameComputation(x.getInput(), y.getInput());
}

/// Erases `value`'s layout ops that nothing reads any more.
void eraseDead(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !op->use_empty() || !isa<CastOp, ConcatOp, ReshapeOp>(op))
    return;
  // Each operand once: a concat may read one value twice.
  llvm::SetVector<Value> operands(op->operand_begin(), op->operand_end());
  op->erase();
  for (Value operand : operands)
    eraseDead(operand);
}

struct ShareGathersPass : tgc::tg::impl::TGShareGathersBase<ShareGathersPass> {
  using TGShareGathersBase::TGShareGathersBase;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      Operation *backward = findBackwardStart(function);
      if (!backward)
        continue;
      SmallVector<AllGatherOp> kept;
      int64_t shared = 0, bytes = 0;
      for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
               backward->getIterator(), function.getBody().front().end()))) {
        auto gather = dyn_cast<AllGatherOp>(&op);
        if (!gather)
          continue;
        auto same = llvm::find_if(
            kept, [&](AllGatherOp k) { return sameGather(k, gather); });
        if (same == kept.end()) {
          kept.push_back(gather);
          continue;
        }
        bytes += cast<CostOpInterface>(op).getBytesCommunicated();
        ++shared;
        gather.getResult().replaceAllUsesWith(same->getResult());
        Value input = gather.getInput();
        gather->erase();
        eraseDead(input);
      }
      if (printSummary && shared > 0)
        llvm::errs() << "tg-share-gathers: @" << function.getSymName() << ": "
                     << shared << " gathers of the backward pass share an "
                     << "earlier one's copy (" << bytes
                     << " bytes a step no longer sent)\n";
    }
  }
};

} // namespace
