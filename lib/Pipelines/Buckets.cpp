//===- Buckets.cpp - a training step at several sequence lengths ----------===//

#include "tgc/Pipelines/Buckets.h"

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace tgc {

/// The batch `model` was generated at (0: no tg.generator record).
static int64_t generatedBatch(func::FuncOp model) {
  auto record =
      model->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr);
  return record ? record.getAs<IntegerAttr>("batch").getInt() : 0;
}

int64_t rebuildAtLargestBucket(OwningOpRef<ModuleOp> &module, StringRef model,
                               ArrayRef<int64_t> lengths, std::string &error) {
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] <= 0 || (i && lengths[i] <= lengths[i - 1])) {
      error = "--seq-buckets must be positive sequence lengths in increasing "
              "order, found " +
              llvm::join(llvm::map_range(lengths,
                                         [](int64_t l) {
                                           return std::to_string(l);
                                         }),
                         ",");
      return 0;
    }
  auto function = module->lookupSymbol<func::FuncOp>(model);
  int64_t seqLen = lengths.back();
  OwningOpRef<ModuleOp> largest =
      rebuildWithShape(function, generatedBatch(function), seqLen, error);
  if (!largest) {
    error = "--seq-buckets: " + error;
    return 0;
  }
  module = std::move(largest);
  return seqLen;
}

LogicalResult compileSmallerBuckets(ModuleOp module, StringRef model,
                                    ArrayRef<int64_t> lengths,
                                    const TrainPipelineOptions &options,
                                    int64_t alignment, BucketSteps &steps,
                                    std::string &error) {
  if (options.gradAccum != 1) {
    error = "--seq-buckets with gradient accumulation is not supported yet "
            "(each micro-batch would need its bucket)";
    return failure();
  }
  auto function = module.lookupSymbol<func::FuncOp>(model);
  int64_t batch = generatedBatch(function);
  for (int64_t length : lengths.drop_back()) {
    OwningOpRef<ModuleOp> rebuilt =
        rebuildWithShape(function, batch, length, error);
    if (!rebuilt) {
      error = "--seq-buckets: " + error;
      return failure();
    }
    PassManager pm(module.getContext());
    buildTrainPipeline(pm, options);
    if (failed(pm.run(*rebuilt))) {
      error = "the training pipeline failed at sequence length " +
              std::to_string(length);
      return failure();
    }
    TGXBucket bucket;
    bucket.seqLen = length;
    bucket.train = rebuilt->lookupSymbol<func::FuncOp>(
        (model + "_train_step").str());
    bucket.eval = rebuilt->lookupSymbol<func::FuncOp>(model);
    if (!bucket.train || !bucket.eval) {
      error = "the pipeline produced no training or evaluation step at "
              "sequence length " +
              std::to_string(length);
      return failure();
    }
    FailureOr<MemoryPlan> trainPlan = computeMemoryPlan(bucket.train, alignment);
    FailureOr<MemoryPlan> evalPlan = computeMemoryPlan(bucket.eval, alignment);
    if (failed(trainPlan) || failed(evalPlan)) {
      error = "planning memory failed at sequence length " +
              std::to_string(length);
      return failure();
    }
    bucket.trainPlan = std::move(*trainPlan);
    bucket.evalPlan = std::move(*evalPlan);
    steps.modules.push_back(std::move(rebuilt));
    steps.buckets.push_back(std::move(bucket));
  }
  return success();
}

} // namespace tgc
