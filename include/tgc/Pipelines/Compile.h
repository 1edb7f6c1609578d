//===- Compile.h - a tg model compiled into an executable -------*- C++ -*-===//
//
// One compile, as tgc-compile runs it and as any driver may: read a module
// holding a tg.model, choose its shape (shape buckets, --fit, the batch
// for a budget), run the training pipeline, plan the step's memory and
// lower it into the .tgx executable (or print the step's IR), with the
// roofline estimate when a device is named. Tools parse flags into a
// CompileRequest and print; everything between is here.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PIPELINES_COMPILE_H
#define TGC_PIPELINES_COMPILE_H

#include "tgc/Pipelines/TrainPipeline.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// What to compile and how, beside the pipeline's own options. Sizes are
/// text as the user wrote them ("10GiB"), checked here.
struct CompileRequest {
  /// The model's IR ("-": standard input) and where the output goes.
  std::string input = "-";
  std::string output = "model.tgx";
  /// "tgx" (the executable) or "mlir" (the training step's IR).
  std::string emit = "tgx";
  /// The tg.model function to compile (empty: the only one).
  std::string model;
  /// The memory plan as JSON (and its trace and the entries' plans).
  std::string memoryReport;
  int64_t maxConstantBytes = int64_t(256) << 20;
  /// The micro-batch: empty (as the model is), N, or "auto" (the largest
  /// that fits memoryBudget).
  std::string batch;
  std::string memoryBudget;
  /// Sequences per optimizer step (0: none given).
  int64_t globalBatch = 0;
  bool globalBatchGiven = false;
  /// --fit: the budget (given even when empty, which is an error), the
  /// part of it reserved, and what it may change.
  std::optional<std::string> fit;
  std::string fitReserve = "0";
  bool fitReserveGiven = false;
  std::string fitAllow = "none";
  bool fitAllowGiven = false;
  /// --world-size auto: --fit also finds the fewest ranks (up to
  /// kMostAutoRanks) on which the step fits the budget.
  bool worldSizeAuto = false;
  /// The roofline estimate's device (h100, a100 or a JSON file; empty:
  /// none), and where to write it as JSON.
  std::string estimate;
  std::string estimateJSON;
  bool allowTF32 = false;
  /// Sequence lengths to compile the step at, increasing (empty: one).
  std::vector<int64_t> seqBuckets;
  int64_t alignment = 256;
  /// --lora's rank=R,alpha=A,targets=T1,T2 (empty: none).
  std::string lora;
};

/// The most ranks --world-size auto tries.
constexpr int64_t kMostAutoRanks = 4096;

/// Parses a --lora specification (rank=R,alpha=A,targets=T1,T2,...; an
/// item without '=' continues the targets) into `options`' lora-* fields.
bool parseLoraSpec(llvm::StringRef spec, TrainPipelineOptions &options,
                   std::string &error);

/// Checks `options` as tgc-compile's flags give them (weight decay,
/// conflicts, accumulation): the message of the first problem, or empty.
std::string checkCompileOptions(const TrainPipelineOptions &options);

/// Compiles `request` with the pipeline's `options` (which --fit and the
/// batch choice update). Progress (--fit's candidates, the chosen batch)
/// goes to `log`, the estimate to `out`, and the summary line to `log`
/// at the end. Fails with `error` (one line, no tool prefix) before
/// anything is written.
bool compileModel(const CompileRequest &request, TrainPipelineOptions &options,
                  llvm::raw_ostream &log, llvm::raw_ostream &out,
                  std::string &error);

} // namespace tgc

#endif // TGC_PIPELINES_COMPILE_H
