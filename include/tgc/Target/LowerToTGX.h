//===- LowerToTGX.h - the pipeline's last pass ------------------*- C++ -*-===//
//
// tgc-lower-to-tgx: lowers a module's planned training step, with its
// other entry points (gradient accumulation's micro-step, the evaluation
// step, the steps of smaller shape buckets), into the executable's bytes
// (TGX.h), using the plans tg-plan-memory computed (the analysis is
// preserved between them, so it is not computed again). tgc-compile ends
// its pipeline with it; tgc-opt runs it as `--tgc-lower-to-tgx=output=FILE`.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TARGET_LOWERTOTGX_H
#define TGC_TARGET_LOWERTOTGX_H

#include "tgc/Analysis/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tgc {

/// A smaller shape bucket, compiled in a module of its own: its training
/// and evaluation steps, each with its plan.
struct TGXBucket {
  int64_t seqLen = 0;
  mlir::func::FuncOp train, eval;
  MemoryPlan trainPlan, evalPlan;
};

struct LowerToTGXOptions {
  /// The model function (its training step is `<model>_train_step`);
  /// empty: the module's only function marked tg.model.
  std::string model;
  /// How the step was compiled, recorded in the executable (one line).
  std::string options;
  /// Where the memory reports of the other entry points go
  /// (`<memoryReport>.<entry>.json`); empty: none.
  std::string memoryReport;
  /// The plan's alignment: tg-plan-memory's.
  int64_t alignment = 256;
  bool allowTF32 = false;
  /// The training step's sequence length, recorded when there are buckets.
  int64_t seqLen = 0;
  /// The model's Hugging Face config.json (writeHFConfig), or empty and
  /// why.
  std::string hfConfig, hfConfigError;
};

/// What the pass produces: the executable's bytes and a one-line summary
/// (ops, memory, entry points).
struct TGXOutput {
  std::vector<uint8_t> bytes;
  std::string summary;
};

/// The pass, writing into `output`; `buckets` must outlive it.
std::unique_ptr<mlir::Pass>
createLowerToTGXPass(const LowerToTGXOptions &options,
                     const std::vector<TGXBucket> &buckets,
                     TGXOutput &output);

/// Registers `tgc-lower-to-tgx` for tgc-opt, with pass options `output`
/// (the file to write), `model`, `memory-report`, `alignment` and
/// `allow-tf32`.
void registerLowerToTGXPass();

} // namespace tgc

#endif // TGC_TARGET_LOWERTOTGX_H
