//===- ModelStats.cpp - the tg-model-stats pass ---------------------------===//
//
// Prints the statistics of every tg.model function of a module (see
// tgc/Analysis/ModelStats.h); an analysis only, the IR is unchanged.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/ModelStats.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGMODELSTATS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;

namespace {
struct ModelStatsPass : tgc::tg::impl::TGModelStatsBase<ModelStatsPass> {
  using TGModelStatsBase::TGModelStatsBase;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr(tgc::tg::TGDialect::kModelAttr))
        continue;
      tgc::printModelStats(tgc::computeModelStats(function), llvm::errs());
      if (perOp)
        tgc::printOpCosts(function, llvm::errs());
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
