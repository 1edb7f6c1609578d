//===- BatchSize.cpp - the batch size chosen for a memory budget ----------===//

#include "tgc/Pipelines/BatchSize.h"

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Models/Models.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace mlir;

namespace tgc {

FailureOr<PlannedMemory> planTrainingMemory(ModuleOp module,
                                            const TrainPipelineOptions &options,
                                            int64_t accumSteps,
                                            int64_t alignment) {
  TrainPipelineOptions copy;
  copy.copyOptionValuesFrom(options);
  copy.gradAccum = accumSteps;
  PassManager pm(module.getContext());
  buildTrainPipeline(pm, copy);
  if (failed(pm.run(module)))
    return failure();
  PlannedMemory memory;
  bool any = false;
  for (auto function : module.getOps<func::FuncOp>()) {
    bool step = function->hasAttr(tg::TGDialect::kTrainStepAttr);
    if (!step && !function->hasAttr(tg::TGDialect::kGradStepAttr) &&
        !function->hasAttr(tg::TGDialect::kModelAttr))
      continue;
    FailureOr<MemoryPlan> plan = computeMemoryPlan(function, alignment);
    if (failed(plan))
      return failure();
    // Every entry point shares the training step's persistent tensors.
    if (step) {
      memory.persistent = plan->persistentSize;
      any = true;
    }
    memory.arena = std::max(memory.arena, plan->layout.arenaSize);
  }
  if (!any)
    return module.emitError("the pipeline produced no training step");
  return memory;
}

FailureOr<BatchChoice> chooseBatch(func::FuncOp model,
                                   const TrainPipelineOptions &options,
                                   int64_t budget, int64_t globalBatch,
                                   int64_t alignment, std::string &error) {
  // The plan of each candidate, rebuilt and compiled in a module of its own.
  auto planFor = [&](int64_t batch, int64_t accum) -> FailureOr<PlannedMemory> {
    OwningOpRef<ModuleOp> module = rebuildWithBatch(model, batch, error);
    if (!module)
      return failure();
    FailureOr<PlannedMemory> memory =
        planTrainingMemory(*module, options, accum, alignment);
    if (failed(memory) && error.empty())
      error = ("the training pipeline failed at batch " + llvm::Twine(batch))
                  .str();
    return memory;
  };
  auto tooSmall = [&](int64_t batch, const PlannedMemory &memory) {
    error = ("a budget of " + formatBytes(budget) + " is too small: batch " +
             llvm::Twine(batch) + " alone plans " +
             formatBytes(memory.total()) + " (persistent " +
             formatBytes(memory.persistent) + ", arena " +
             formatBytes(memory.arena) + "); the smallest budget that works "
             "is --memory-budget=" + llvm::Twine(memory.total()))
                .str();
    return failure();
  };

  BatchChoice choice;
  if (globalBatch > 0) {
    // The divisors of the global batch, largest first; the first that fits
    // wins.
    std::optional<int64_t> larger;
    PlannedMemory largerMemory;
    for (int64_t batch = globalBatch; batch >= 1; --batch) {
      if (globalBatch % batch != 0)
        continue;
      FailureOr<PlannedMemory> memory =
          planFor(batch, globalBatch / batch);
      if (failed(memory))
        return failure();
      if (memory->total() <= budget) {
        choice.batch = batch;
        choice.accumSteps = globalBatch / batch;
        choice.memory = *memory;
        choice.nextBatch = larger;
        choice.nextMemory = largerMemory;
        return choice;
      }
      if (batch == 1)
        return tooSmall(1, *memory);
      larger = batch;
      largerMemory = *memory;
    }
  }

  // Any batch size: double until a batch does not fit, then bisect, so that
  // `low` fits and `high` does not.
  int64_t accum = options.gradAccum;
  FailureOr<PlannedMemory> lowMemory = planFor(1, accum);
  if (failed(lowMemory))
    return failure();
  if (lowMemory->total() > budget)
    return tooSmall(1, *lowMemory);
  int64_t low = 1, high = 0;
  PlannedMemory highMemory;
  // Plans `batch`, which becomes the new `low` or `high`.
  auto probe = [&](int64_t batch) -> LogicalResult {
    FailureOr<PlannedMemory> memory = planFor(batch, accum);
    if (failed(memory))
      return failure();
    if (memory->total() <= budget) {
      low = batch;
      lowMemory = memory;
    } else {
      high = batch;
      highMemory = *memory;
    }
    return success();
  };
  while (!high && low * 2 <= kMaxAutoBatch)
    if (failed(probe(low * 2)))
      return failure();
  while (high && high - low > 1)
    if (failed(probe(low + (high - low) / 2)))
      return failure();
  choice.batch = low;
  choice.accumSteps = accum;
  choice.memory = *lowMemory;
  if (high) {
    choice.nextBatch = high;
    choice.nextMemory = highMemory;
  }
  return choice;
}

} // namespace tgc
