//===- OffloadActivations.cpp - the tg-offload-activations pass -----------===//
//
// Moves the activations that the backward pass reads into host memory while
// they wait for it: each value the forward pass computes and the backward
// pass reads (after tg-remat: the checkpoints it keeps), at least
// `min-bytes` large and idle for at least `min-idle-ops` ops between its
// last forward read and its first backward read, is copied into a `tg.host`
// state tensor right after it is computed (tg.offload) and copied back just
// before the backward pass first reads it (tg.reload). Its device buffer
// then dies after its last forward read, and the copy back lives only from
// the reload on: at the step's peak (the classifier, the top of the
// backward pass) the device holds none of the waiting activations.
//
// The numbers are unchanged: the backward pass reads the same bytes. The
// host tensors are written before they are read within each step (role
// Scratch in the executable): neither initialised nor checkpointed.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"
#include "TrainStep.h"

#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tg-offload-activations"

namespace tgc::tg {
#define GEN_PASS_DEF_TGOFFLOADACTIVATIONS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

struct OffloadActivationsPass
    : tgc::tg::impl::TGOffloadActivationsBase<OffloadActivationsPass> {
  using TGOffloadActivationsBase::TGOffloadActivationsBase;

  void runOnOperation() override {
    if (failed(tg::forEachTrainStep(getOperation(), "tg-offload-activations",
                                    "tg-autodiff", [&](func::FuncOp step) {
                                      return offload(step);
                                    })))
      return signalPassFailure();
  }

  LogicalResult offload(func::FuncOp step) {
    if (step->hasAttr(tg::TGDialect::kGradAccumAttr))
      return step.emitError("tg-offload-activations: gradient accumulation "
                            "is not supported yet (the backward pass runs in "
                            "its grad_step)");
    Block &body = step.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : body)
      position[&op] = int64_t(position.size());
    // A step without a backward pass (gradient accumulation's apply step)
    // has nothing to offload.
    Operation *seed = tg::findBackwardStart(step);
    if (!seed) {
      tg::reportSummary(step.getLoc(), "tg-offload-activations",
                        step.getSymName(),
                        "no backward pass: no activation waits for one",
                        {{"tensors", 0}, {"bytes", 0}}, printSummary);
      return success();
    }
    int64_t seedAt = position[seed];

    struct Candidate {
      Value value;
      Operation *firstBackward;
    };
    SmallVector<Candidate> candidates;
    for (Operation &op : body) {
      if (position[&op] >= seedAt)
        break;
      // Constants and fills cost nothing to keep; views share their
      // operand's buffer.
      if (isa<tg::ConstantOp, tg::FillOp, tg::ReshapeOp>(op))
        continue;
      for (Value value : op.getResults()) {
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (!type || tg::getTensorBytes(type) < int64_t(minBytes))
          continue;
        int64_t lastForward = position[&op];
        Operation *firstBackward = nullptr;
        for (Operation *user : value.getUsers()) {
          int64_t at = position[user];
          if (at < seedAt)
            lastForward = std::max(lastForward, at);
          else if (!firstBackward || at < position[firstBackward])
            firstBackward = user;
        }
        if (!firstBackward ||
            position[firstBackward] - lastForward < int64_t(minIdleOps))
          continue;
        candidates.push_back({value, firstBackward});
      }
    }

    SmallVector<DictionaryAttr> argAttrs = tg::getArgAttrDicts(step);
    SmallVector<DictionaryAttr> resultAttrs = tg::getResultAttrDicts(step);
    SmallVector<Value> results(body.getTerminator()->getOperands());
    UnitAttr unit = UnitAttr::get(&getContext());
    int64_t bytes = 0;
    for (auto [k, candidate] : llvm::enumerate(candidates)) {
      Value value = candidate.value;
      std::string name = (tg::TGDialect::kOffloadPrefix + step.getSymName() +
                          "." + std::to_string(k))
                             .str();
      BlockArgument host =
          tg::appendStateArgument(step, argAttrs, name, value.getType());
      NamedAttrList attrs(argAttrs.back());
      attrs.set(tg::TGDialect::kHostAttr, unit);
      argAttrs.back() = attrs.getDictionary(&getContext());

      Operation *producer = value.getDefiningOp();
      OpBuilder builder(producer->getContext());
      builder.setInsertionPointAfter(producer);
      auto stored = tg::OffloadOp::create(builder, producer->getLoc(),
                                          value.getType(), value, host);
      builder.setInsertionPoint(candidate.firstBackward);
      auto reloaded = tg::ReloadOp::create(builder, producer->getLoc(),
                                           value.getType(), stored);
      int64_t firstAt = position[candidate.firstBackward];
      value.replaceUsesWithIf(reloaded, [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return user != stored && user != reloaded &&
               position.count(user) && position[user] >= firstAt;
      });
      results.push_back(stored);
      resultAttrs.push_back(
          tg::namedResultAttr(&getContext(), tg::TGDialect::kUpdateAttr, name));
      bytes += tg::getTensorBytes(value.getType());
    }
    tg::setStepResults(step, results, argAttrs, resultAttrs);

    std::string line;
    llvm::raw_string_ostream os(line);
    os << candidates.size() << " activations (" << formatBytes(bytes)
       << ") wait for the backward pass in host memory";
    tg::reportSummary(step.getLoc(), "tg-offload-activations",
                      step.getSymName(), line,
                      {{"tensors", int64_t(candidates.size())},
                       {"bytes", bytes}},
                      printSummary);
    return success();
  }
};

} // namespace
