//===- Estimate.cpp - the tg-estimate pass --------------------------------===//
//
// Prints the roofline estimate (tgc/Analysis/Roofline.h) of every function
// of a module; an analysis only, the IR is unchanged.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/Roofline.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "llvm/Support/Format.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGESTIMATE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;

namespace {
struct EstimatePass : tgc::tg::impl::TGEstimateBase<EstimatePass> {
  using TGEstimateBase::TGEstimateBase;

  void runOnOperation() override {
    std::string error;
    std::optional<tgc::DeviceSpec> spec = tgc::resolveDevice(device, error);
    if (!spec) {
      getOperation().emitError("tg-estimate: ") << error;
      return signalPassFailure();
    }
    tgc::RooflineOptions options;
    options.allowTF32 = allowTF32;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      tgc::StepEstimate step;
      step.entries.push_back(
          {function.getSymName().str(), 1,
           tgc::estimateFunction(function, *spec, options)});
      tgc::printEstimate(step, *spec, llvm::errs());
      if (!perOp)
        continue;
      llvm::errs() << "  ops of @" << function.getSymName() << "\n";
      for (const tgc::OpEstimate &op : step.entries.front().estimate.ops) {
        llvm::errs() << "    #" << op.index << " " << op.op->getName()
                     << " flops=" << op.flops
                     << " matmul=" << op.matmulFlops;
        if (!op.matmulType.empty())
          llvm::errs() << "(" << op.matmulType << ")";
        llvm::errs() << " read=" << op.bytesRead
                     << " written=" << op.bytesWritten
                     << " scratch=" << op.scratchBytes
                     << llvm::format(" time=%.4g", op.seconds() * 1e6) << "us "
                     << op.bound();
        if (op.communication)
          llvm::errs() << llvm::format(" link=%.4g", op.linkSeconds * 1e6)
                       << "us (" << op.algorithm << ", " << op.link << ")";
        llvm::errs() << llvm::format(" start=%.4g", op.startSeconds * 1e6)
                     << "us\n";
      }
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
