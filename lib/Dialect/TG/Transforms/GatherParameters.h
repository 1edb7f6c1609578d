//===- GatherParameters.h - zero3's gathers of split parameters -*- C++ -*-===//
//
// What tg-data-parallel's zero3 mode uses to let each pass of a function
// read its parameters whole while every rank keeps only its part: the
// all-gathers, bucketed and placed where each pass first reads them.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_GATHERPARAMETERS_H
#define TGC_DIALECT_TG_TRANSFORMS_GATHERPARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace tgc::tg {

/// A parameter that zero3 splits: the argument (now its part of `shard`
/// elements) and its whole type.
struct SplitParam {
  mlir::BlockArgument arg;
  mlir::RankedTensorType whole;
  int64_t shard = 0;
};

/// Inserts zero3's all-gathers into `function` for `params` (each argument
/// already typed as its part): one per bucket of parameters per pass
/// (before `backwardStart`, the forward pass; from it on, the backward
/// pass; everything is one pass without it). Uses by `keep` (the updates)
/// read the part. A parameter is split in `numParts` parts, one per member of
/// a group of that many consecutive ranks (the job, or a shard group under
/// hybrid sharding): each gather runs within the group.
class Gatherer {
public:
  Gatherer(mlir::func::FuncOp function, llvm::ArrayRef<SplitParam> params,
           int64_t numParts, int64_t bucketBytes,
           mlir::Operation *backwardStart,
           const llvm::SmallPtrSetImpl<mlir::Operation *> &keep)
      : function(function), params(params), numParts(numParts),
        bucketBytes(bucketBytes), backwardStart(backwardStart), keep(keep),
        builder(function.getContext()), loc(function.getLoc()) {}

  void run();

private:
  /// What one gather serves: the part it sends (cast to `type` first when
  /// every reader in the pass casts to it) and the values the whole
  /// replaces.
  struct Read {
    const SplitParam *param;
    mlir::Type type;
    llvm::SmallVector<mlir::OpOperand *> uses;  // read the whole parameter
    llvm::SmallVector<mlir::Operation *> casts; // or through these casts
    mlir::Operation *first = nullptr;
  };

  bool inBackward(mlir::Operation *op) const {
    return backwardStart && !op->isBeforeInBlock(backwardStart);
  }
  void recomputeForBackward();
  void sinkLayoutOps();
  llvm::SmallVector<Read> readsIn(bool backward);
  /// Returns the first op it inserts.
  mlir::Operation *gather(llvm::ArrayRef<Read *> bucket, mlir::Operation *at);

  mlir::func::FuncOp function;
  llvm::ArrayRef<SplitParam> params;
  int64_t numParts, bucketBytes;
  mlir::Operation *backwardStart;
  const llvm::SmallPtrSetImpl<mlir::Operation *> &keep;
  mlir::OpBuilder builder;
  mlir::Location loc;
};

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_GATHERPARAMETERS_H
