//===- GroupUpdates.cpp - the tg-group-updates pass -----------------------===//
//
// Runs of adjacent tg.adamw_update ops with one learning rate, step, apply
// predicate and set of hyper-parameters, none rounding stochastically,
// become one tg.multi_adamw_update in the run's place. Adjacent only: the
// schedule (and with it every operand's lifetime) is the one the earlier
// passes chose.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGGROUPUPDATES
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `b` may join a group that `a` is in.
bool groupable(AdamWUpdateOp a, AdamWUpdateOp b) {
  return a.getLr() == b.getLr() && a.getStep() == b.getStep() &&
         a.getApply() == b.getApply() && a.getBeta1Attr() == b.getBeta1Attr() &&
         a.getBeta2Attr() == b.getBeta2Attr() &&
         a.getEpsAttr() == b.getEpsAttr() &&
         a.getWeightDecayAttr() == b.getWeightDecayAttr() &&
         a.getRoundingSeed() == 0 && b.getRoundingSeed() == 0;
}

/// Whether `update` reads a result of an update of `run` (it must then
/// run after them, not with them).
bool readsRun(AdamWUpdateOp update, ArrayRef<AdamWUpdateOp> run) {
  for (Value operand : update->getOperands())
    if (auto producer = operand.getDefiningOp<AdamWUpdateOp>())
      if (llvm::is_contained(run, producer))
        return true;
  return false;
}

void group(ArrayRef<AdamWUpdateOp> run) {
  AdamWUpdateOp first = run.front();
  OpBuilder builder(run.back());
  builder.setInsertionPointAfter(run.back());
  // Operands by kind; the results' types are the operands' (the verifier's
  // rule): new params, then new exp_avgs, then new exp_avg_sqs.
  SmallVector<Value> params, grads, expAvgs, expAvgSqs;
  SmallVector<Location> locations;
  for (AdamWUpdateOp update : run) {
    params.push_back(update.getParam());
    grads.push_back(update.getGrad());
    expAvgs.push_back(update.getExpAvg());
    expAvgSqs.push_back(update.getExpAvgSq());
    locations.push_back(update.getLoc());
  }
  SmallVector<Type> types;
  for (ValueRange kind : {ValueRange(params), ValueRange(expAvgs),
                          ValueRange(expAvgSqs)})
    llvm::append_range(types, kind.getTypes());
  auto multi = MultiAdamWUpdateOp::create(
      builder, builder.getFusedLoc(locations), types, params, grads, expAvgs,
      expAvgSqs, first.getLr(), first.getStep(), first.getApply(),
      first.getBeta1Attr(), first.getBeta2Attr(), first.getEpsAttr(),
      first.getWeightDecayAttr());
  size_t n = run.size();
  for (auto [i, each] : llvm::enumerate(run)) {
    AdamWUpdateOp update = each;
    update.getNewParam().replaceAllUsesWith(multi.getResults()[i]);
    update.getNewExpAvg().replaceAllUsesWith(multi.getResults()[n + i]);
    update.getNewExpAvgSq().replaceAllUsesWith(multi.getResults()[2 * n + i]);
  }
  for (AdamWUpdateOp update : run)
    update.erase();
}

struct GroupUpdatesPass
    : tgc::tg::impl::TGGroupUpdatesBase<GroupUpdatesPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp function) {
      for (Block &block : function.getBody()) {
        SmallVector<SmallVector<AdamWUpdateOp>> runs;
        SmallVector<AdamWUpdateOp> run;
        auto close = [&] {
          if (run.size() > 1)
            runs.push_back(run);
          run.clear();
        };
        for (Operation &op : block) {
          auto update = dyn_cast<AdamWUpdateOp>(&op);
          if (!update || update.getRoundingSeed() != 0) {
            close();
            continue;
          }
          if (!run.empty() &&
              (!groupable(run.front(), update) || readsRun(update, run)))
            close();
          run.push_back(update);
        }
        close();
        for (ArrayRef<AdamWUpdateOp> each : runs)
          group(each);
      }
    });
  }
};

} // namespace
