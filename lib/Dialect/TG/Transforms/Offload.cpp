//===- Offload.cpp - the tg-offload pass ----------------------------------===//
//
// Marks the optimizer state that only updates touch `tg.host`: the memory
// plan places it in the host-memory part of the persistent region, and the
// CUDA backend's update kernels reach it over the bus. What stays on the
// device: parameters, gradients, activations and the scalars every update
// shares (the step count, the learning rate).
//
//===----------------------------------------------------------------------===//

#include "Summary.h"
#include "TrainStep.h"

#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"

#define DEBUG_TYPE "tg-offload"

namespace tgc::tg {
#define GEN_PASS_DEF_TGOFFLOAD
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

struct OffloadPass : tgc::tg::impl::TGOffloadBase<OffloadPass> {
  using TGOffloadBase::TGOffloadBase;

  void runOnOperation() override {
    if (!tg::offloadsOptimizer(what))
      return;
    if (failed(tg::forEachTrainStep(getOperation(), "tg-offload",
                                    "tg-optimizer", [&](func::FuncOp step) {
                                      offload(step);
                                      return success();
                                    })))
      return signalPassFailure();
  }

  void offload(func::FuncOp step) {
    UnitAttr unit = UnitAttr::get(&getContext());
    int64_t tensors = 0, bytes = 0, kept = 0;
    for (BlockArgument arg : step.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto state = step.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kStateAttr);
      if (!state || state.getValue().starts_with(tg::TGDialect::kGradAccumPrefix))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      bool onlyUpdates =
          !arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
            return isa<tg::OptimizerUpdateOpInterface>(user);
          });
      // Scalars every update reads stay where the kernels launch from.
      if (!onlyUpdates || type.getRank() == 0) {
        ++kept;
        continue;
      }
      step.setArgAttr(i, tg::TGDialect::kHostAttr, unit);
      ++tensors;
      bytes += tg::getTensorBytes(type);
    }
    std::string line;
    llvm::raw_string_ostream os(line);
    os << tensors << " optimizer state tensors (" << formatBytes(bytes)
       << ") in host memory; " << kept << " state tensors stay on the device";
    tg::reportSummary(step.getLoc(), "tg-offload", step.getSymName(), line,
                      {{"tensors", tensors}, {"bytes", bytes}}, printSummary);
  }
};

} // namespace
