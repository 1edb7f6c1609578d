//===- PlanMemory.cpp - the tg-plan-memory pass ---------------------------===//
//
// Computes the memory plan of every training step (MemoryPlanAnalysis in
// tgc/Analysis/MemoryPlan.h), checks its placement and reports it: text on
// stderr, and with `memory-report` JSON plus a Chrome trace. The IR is not
// changed and the analysis is preserved, so the lowering to an executable
// later in the same pipeline uses this very plan: the report describes
// exactly what the runtime allocates, and the plan is computed once.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "OptionErrors.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGPLANMEMORY
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;

namespace {
struct PlanMemoryPass : tgc::tg::impl::TGPlanMemoryBase<PlanMemoryPass> {
  using TGPlanMemoryBase::TGPlanMemoryBase;

  void runOnOperation() override {
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      tgc::tg::emitOptionError(getOperation(), "tg-plan-memory: alignment must be a power of "
                               "two, found ")
          << int64_t(alignment);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> functions;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(tgc::tg::TGDialect::kTrainStepAttr) ||
          function->hasAttr(tgc::tg::TGDialect::kGradStepAttr))
        functions.push_back(function);
    // Without a training step, plan the models (their forward pass).
    if (functions.empty())
      for (auto function : getOperation().getOps<func::FuncOp>())
        if (function->hasAttr(tgc::tg::TGDialect::kModelAttr))
          functions.push_back(function);
    if (functions.empty()) {
      getOperation().emitError("tg-plan-memory found no function marked "
                               "tg.train_step or tg.model to plan");
      return signalPassFailure();
    }
    // The report is the plan of the one training step (a gradient
    // micro-step, planned and checked here too, is reported by its
    // caller).
    auto reported = llvm::make_filter_range(functions, [](func::FuncOp f) {
      return !f->hasAttr(tgc::tg::TGDialect::kGradStepAttr);
    });
    int64_t reportedCount = llvm::range_size(reported);
    if (!memoryReport.empty() && reportedCount != 1) {
      tgc::tg::emitOptionError(getOperation(), "tg-plan-memory: memory-report writes one "
                               "plan, but the module has ")
          << reportedCount << " functions to plan";
      return signalPassFailure();
    }

    for (func::FuncOp function : functions) {
      const tgc::MemoryPlan *plan =
          getChildAnalysis<tgc::MemoryPlanAnalysis>(function).getPlan(
              alignment, inPlace);
      if (!plan)
        return signalPassFailure();
      if (failed(checkLayout(function, *plan)))
        return signalPassFailure();
      if (printReport)
        tgc::printMemoryReport(*plan, llvm::errs(), topBuffers);
      if (!memoryReport.empty() &&
          !function->hasAttr(tgc::tg::TGDialect::kGradStepAttr) &&
          failed(writeReports(*plan)))
        return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  /// The placement is checked on every run: a plan with two live buffers
  /// sharing bytes would corrupt training silently.
  LogicalResult checkLayout(func::FuncOp function,
                            const tgc::MemoryPlan &plan) {
    std::vector<tgc::BufferLifetime> lifetimes;
    for (const tgc::PlannedBuffer &buffer : plan.buffers)
      lifetimes.push_back({buffer.alignedBytes, buffer.start, buffer.end});
    std::string violation = tgc::checkArenaLayout(lifetimes, plan.layout);
    if (violation.empty())
      return success();
    return function.emitOpError("internal error in the memory plan: ")
           << violation;
  }

  LogicalResult writeReports(const tgc::MemoryPlan &plan) {
    std::string error;
    auto json = openOutputFile(memoryReport, &error);
    auto trace = json ? openOutputFile(memoryReport + ".trace.json", &error)
                      : nullptr;
    if (!json || !trace)
      return getOperation().emitError("tg-plan-memory: ") << error;
    tgc::writeMemoryReportJSON(plan, json->os());
    tgc::writeChromeTrace(plan, trace->os());
    json->keep();
    trace->keep();
    return success();
  }
};
} // namespace
