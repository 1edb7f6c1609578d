//===- BatchSize.h - the batch size chosen for a memory budget --*- C++ -*-===//
//
// The memory plan is exact and static, so the largest micro-batch that
// fits a budget is found by planning, not by running out of memory: the
// model is rebuilt at each candidate batch size (from its tg.generator
// record, lib/Models), taken through the training pipeline and planned,
// and its total (persistent region plus the largest arena of its entry
// points: what tgc-run allocates) compared with the budget.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PIPELINES_BATCHSIZE_H
#define TGC_PIPELINES_BATCHSIZE_H

#include "tgc/Pipelines/TrainPipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>

namespace tgc {

/// What the runtime allocates for an executable: the persistent region
/// and the arena, the largest of the training step's and every entry
/// point's (gradient micro-step, evaluation step).
struct PlannedMemory {
  /// The device's part of the persistent region, and the host memory's
  /// (optimizer state offloaded by tg-offload), which total() leaves out.
  int64_t persistent = 0;
  int64_t host = 0;
  int64_t arena = 0;
  int64_t total() const { return persistent + arena; }
};

/// Runs the training pipeline (with `options`, accumulating over
/// `accumSteps` micro-batches) on `module` and plans every entry point.
/// Fails with diagnostics emitted.
mlir::FailureOr<PlannedMemory>
planTrainingMemory(mlir::ModuleOp module, const TrainPipelineOptions &options,
                   int64_t accumSteps, int64_t alignment);

struct BatchChoice {
  int64_t batch = 0;      // micro-batch size
  int64_t accumSteps = 1; // micro-batches per optimizer step
  PlannedMemory memory;
  /// The next larger candidate and its plan, which does not fit (none when
  /// the search reached its bound).
  std::optional<int64_t> nextBatch;
  PlannedMemory nextMemory;
};

/// The micro-batches a search for `budget` bytes tries for `globalBatch`
/// sequences per optimizer step, largest first: the divisors b of the
/// global batch whose accumulation (globalBatch / b micro-batches) tgc-run
/// can load (kMaxGradAccumSteps) and whose inputs alone fit the budget
/// (every plan holds the step's tg.input tensors, batch-major, in its
/// persistent region, so no larger micro-batch fits). Found by trying each
/// accumulation count, not each micro-batch, so any global batch takes at
/// most kMaxGradAccumSteps divisions. Fails with `error` set, saying both
/// bounds, when there is none.
mlir::FailureOr<llvm::SmallVector<int64_t>>
microBatchCandidates(mlir::func::FuncOp model, int64_t globalBatch,
                     int64_t budget, std::string &error);

/// The largest micro-batch of `model` whose plan fits `budget` bytes. With
/// `globalBatch` > 0, only divisors of it are candidates (those of
/// microBatchCandidates) and each is accumulated globalBatch / batch times; otherwise every batch size is,
/// accumulated `options.gradAccum` times. Fails with `error` set when even
/// the smallest candidate does not fit (saying what it needs) or the model
/// cannot be rebuilt.
mlir::FailureOr<BatchChoice> chooseBatch(mlir::func::FuncOp model,
                                         const TrainPipelineOptions &options,
                                         int64_t budget, int64_t globalBatch,
                                         int64_t alignment, std::string &error);

/// What a user asks of the batch (tgc-compile's --batch, --memory-budget
/// and --global-batch).
struct BatchRequest {
  /// Empty (the generated batch), "auto" (the largest that fits `budget`)
  /// or a positive integer.
  std::string batch;
  std::optional<int64_t> budget;
  /// A global batch turned into accumulation over micro-batches (0: none).
  int64_t globalBatch = 0;
};

/// Applies `request` to `model` of `module`: rebuilds the model at the
/// batch asked or chosen (`choice` says what `auto` chose), sets
/// options.gradAccum for a global batch, and checks a fixed batch's plan
/// against the budget. Fails with `error` set.
mlir::LogicalResult applyBatchRequest(mlir::OwningOpRef<mlir::ModuleOp> &module,
                                      llvm::StringRef model,
                                      const BatchRequest &request,
                                      TrainPipelineOptions &options,
                                      int64_t alignment,
                                      std::optional<BatchChoice> &choice,
                                      std::string &error);

/// The largest batch size chooseBatch tries.
constexpr int64_t kMaxAutoBatch = int64_t(1) << 20;

} // namespace tgc

#endif // TGC_PIPELINES_BATCHSIZE_H
