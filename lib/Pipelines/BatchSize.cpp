//===- BatchSize.cpp - the batch size chosen for a memory budget ----------===//

#include "tgc/Pipelines/BatchSize.h"

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Models/Models.h"
#include "tgc/Support/ProgramLimits.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace tgc {

FailureOr<PlannedMemory> planTrainingMemory(ModuleOp module,
                                            const TrainPipelineOptions &options,
                                            int64_t accumSteps,
                                            int64_t alignment) {
  TrainPipelineOptions copy;
  copy.copyOptionValuesFrom(options);
  copy.quiet = options.quiet;
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
      memory.persistent = plan->devicePersistentSize();
      memory.host = plan->hostSize;
      any = true;
    }
    memory.arena = std::max(memory.arena, plan->layout.arenaSize);
  }
  if (!any)
    return module.emitError("the pipeline produced no training step");
  return memory;
}

FailureOr<SmallVector<int64_t>>
microBatchCandidates(func::FuncOp model, int64_t globalBatch, int64_t budget,
                     std::string &error) {
  // The inputs' bytes per sequence: each tg.input's bytes over its leading
  // (batch) dimension.
  int64_t inputBytes = 0;
  for (BlockArgument arg : model.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 || type.getDimSize(0) <= 0 ||
        !model.getArgAttr(arg.getArgNumber(), tg::TGDialect::kInputAttr))
      continue;
    inputBytes += tg::getTensorBytes(type) / type.getDimSize(0);
  }
  int64_t largest = inputBytes ? budget / inputBytes
                               : std::numeric_limits<int64_t>::max();
  SmallVector<int64_t> batches;
  int64_t most = std::min(globalBatch, kMaxGradAccumSteps);
  for (int64_t accum = 1; accum <= most; ++accum)
    if (globalBatch % accum == 0 && globalBatch / accum <= largest)
      batches.push_back(globalBatch / accum);
  if (batches.empty()) {
    error = ("no micro-batch of a global batch of " +
             llvm::Twine(globalBatch) +
             " sequences can fit: it needs a divisor of " + llvm::Twine(globalBatch) +
             " from " + llvm::Twine(llvm::divideCeil(globalBatch,
                                                     kMaxGradAccumSteps)) +
             " (at most " + llvm::Twine(kMaxGradAccumSteps) +
             " accumulation steps, what tgc-run loads) to " +
             llvm::Twine(largest) + " (the inputs alone take " +
             llvm::Twine(inputBytes) + " bytes a sequence of the " +
             formatBytes(budget) + " budget)")
                .str();
    return failure();
  }
  return batches;
}

FailureOr<BatchChoice> chooseBatch(func::FuncOp model,
                                   const TrainPipelineOptions &options,
                                   int64_t budget, int64_t globalBatch,
                                   int64_t alignment, std::string &error) {
  // The plan of each candidate, rebuilt and compiled in a module of its own.
  // (`unbuilt`, when given, says the model could not be rebuilt at `batch`.)
  auto planFor = [&](int64_t batch, int64_t accum,
                     bool *unbuilt = nullptr) -> FailureOr<PlannedMemory> {
    OwningOpRef<ModuleOp> module = rebuildWithBatch(model, batch, error);
    if (!module) {
      if (unbuilt)
        *unbuilt = true;
      return failure();
    }
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
    // The divisors of the global batch that can fit, largest first; the
    // first that fits wins.
    FailureOr<SmallVector<int64_t>> batches =
        microBatchCandidates(model, globalBatch, budget, error);
    if (failed(batches))
      return failure();
    std::optional<int64_t> larger;
    PlannedMemory largerMemory;
    for (int64_t batch : *batches) {
      bool unbuilt = false;
      FailureOr<PlannedMemory> memory =
          planFor(batch, globalBatch / batch, &unbuilt);
      // A model that cannot be built at a micro-batch (a tensor past the
      // 256 TiB limit: no budget holds it) may be at a smaller one; the
      // smallest says why not.
      if (failed(memory) && unbuilt && batch != batches->back()) {
        error.clear();
        continue;
      }
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
      larger = batch;
      largerMemory = *memory;
    }
    return tooSmall(batches->back(), largerMemory);
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

LogicalResult applyBatchRequest(OwningOpRef<ModuleOp> &module, StringRef model,
                                const BatchRequest &request,
                                TrainPipelineOptions &options,
                                int64_t alignment,
                                std::optional<BatchChoice> &choice,
                                std::string &error) {
  bool automatic = request.batch == "auto";
  if (request.globalBatch > 0 && options.gradAccum != 1) {
    error = "--global-batch sets the accumulation steps (global batch / "
            "micro-batch); leave out --grad-accum";
    return failure();
  }
  if (!request.batch.empty() || request.globalBatch > 0) {
    auto function = module->lookupSymbol<func::FuncOp>(model);
    auto record =
        function->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr);
    int64_t batch = record ? record.getAs<IntegerAttr>("batch").getInt() : 0;
    if (automatic) {
      if (!request.budget) {
        error = "--batch=auto needs --memory-budget=<size>, the memory the "
                "plan may take";
        return failure();
      }
      FailureOr<BatchChoice> chosen =
          chooseBatch(function, options, *request.budget, request.globalBatch,
                      alignment, error);
      if (failed(chosen)) {
        if (error.empty())
          error = "could not choose a batch size";
        return failure();
      }
      batch = chosen->batch;
      options.gradAccum = chosen->accumSteps;
      choice = *chosen;
    } else if (!request.batch.empty()) {
      if (StringRef(request.batch).getAsInteger(10, batch) || batch <= 0) {
        error = "--batch must be a positive integer or 'auto', found '" +
                request.batch + "'";
        return failure();
      }
    } else if (!record) {
      error = "--global-batch needs --batch=<micro-batch> (or a model from "
              "tgc-models, which records its batch)";
      return failure();
    }
    if (request.globalBatch > 0 && !automatic) {
      if (request.globalBatch % batch != 0) {
        error = "--global-batch=" + std::to_string(request.globalBatch) +
                " is not a multiple of the micro-batch " +
                std::to_string(batch);
        return failure();
      }
      options.gradAccum = request.globalBatch / batch;
    }
    OwningOpRef<ModuleOp> rebuilt = rebuildWithBatch(function, batch, error);
    if (!rebuilt)
      return failure();
    module = std::move(rebuilt);
  }
  if (request.budget && !automatic) {
    OwningOpRef<ModuleOp> probe = module->clone();
    FailureOr<PlannedMemory> memory =
        planTrainingMemory(*probe, options, options.gradAccum, alignment);
    if (failed(memory)) {
      error = "the training pipeline failed";
      return failure();
    }
    if (memory->total() > *request.budget) {
      error = "the plan takes " + formatBytes(memory->total()) +
              " (persistent " + formatBytes(memory->persistent) + ", arena " +
              formatBytes(memory->arena) + "), more than --memory-budget " +
              formatBytes(*request.budget) +
              " (--batch=auto finds the largest batch that fits)";
      return failure();
    }
  }
  return success();
}

} // namespace tgc
