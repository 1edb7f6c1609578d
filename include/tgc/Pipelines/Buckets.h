//===- Buckets.h - a training step at several sequence lengths --*- C++ -*-===//
//
// Shape buckets (tgc-compile --seq-buckets): the training step runs at the
// largest length, so the model is rebuilt at it first (a batch for a
// budget is then chosen at that length); each smaller length is then
// compiled alone through the training pipeline at the final batch and
// planned, and shares every persistent tensor with the training step by
// name (lib/Target/LowerToTGX.cpp writes them into one executable).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PIPELINES_BUCKETS_H
#define TGC_PIPELINES_BUCKETS_H

#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Target/LowerToTGX.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace tgc {

/// The smaller buckets' steps, and the modules that hold them (alive until
/// the executable is written).
struct BucketSteps {
  std::vector<TGXBucket> buckets;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
};

/// Checks that `lengths` are positive and increasing, and replaces `module`
/// by `model` rebuilt (from its tg.generator record) at the largest of them,
/// which it returns; 0 with `error` set on failure.
int64_t rebuildAtLargestBucket(mlir::OwningOpRef<mlir::ModuleOp> &module,
                               llvm::StringRef model,
                               llvm::ArrayRef<int64_t> lengths,
                               std::string &error);

/// Compiles `model` of `module` (already at the largest length and the final
/// batch) at each smaller length of `lengths` with the training pipeline,
/// and plans its training and evaluation steps. Fails with `error` set.
mlir::LogicalResult compileSmallerBuckets(mlir::ModuleOp module,
                                          llvm::StringRef model,
                                          llvm::ArrayRef<int64_t> lengths,
                                          const TrainPipelineOptions &options,
                                          int64_t alignment, BucketSteps &steps,
                                          std::string &error);

} // namespace tgc

#endif // TGC_PIPELINES_BUCKETS_H
