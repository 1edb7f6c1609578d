//===- ModelStats.h - statistics of a tg model ------------------*- C++ -*-===//
//
// Counts what a tg model holds and costs: parameters (trainable and frozen),
// inputs, ops by kind, and the FLOPs and bytes of one execution. Used by the
// tg-model-stats pass and by `tgc-models --stats`.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_MODELSTATS_H
#define TGC_ANALYSIS_MODELSTATS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <vector>
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tgc {

struct ModelStats {
  std::string name;
  int64_t numParamTensors = 0;
  int64_t numParamElements = 0;
  int64_t numFrozenElements = 0;
  int64_t paramBytes = 0;
  int64_t numInputs = 0;
  int64_t inputBytes = 0;
  int64_t numOps = 0;
  /// Op counts by op name, sorted by name.
  std::vector<std::pair<std::string, int64_t>> opCounts;
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  /// Bytes one rank sends in collectives (ring algorithms).
  int64_t bytesCommunicated = 0;
};

/// Computes the statistics of `function`, a func.func marked `tg.model`.
ModelStats computeModelStats(mlir::func::FuncOp function);

/// Prints `stats` as a human-readable report.
void printModelStats(const ModelStats &stats, llvm::raw_ostream &os);

/// Prints the cost of every op of `function` in IR order, one per line.
void printOpCosts(mlir::func::FuncOp function, llvm::raw_ostream &os);

} // namespace tgc

#endif // TGC_ANALYSIS_MODELSTATS_H
