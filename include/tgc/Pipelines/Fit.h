//===- Fit.h - the training configuration chosen for a memory budget -*- C++
//-*-===//
//
// tgc-compile --fit=BUDGET: the plan is exact and the roofline estimates
// each op's time, so the configuration that fits a budget is found by
// compiling candidates, not by running out of memory. The candidates are
// the choices that change memory: the micro-batch (with accumulation up to
// the global batch), rematerialization, the optimizer step inside the
// backward pass, and, when allowed, bf16 compute, 8-bit (or 4-bit)
// optimizer state, bf16 master weights and, for LoRA, the frozen base in
// NF4 (QLoRA); with --world-size above 1, the data-parallel mode (ddp,
// zero1, zero2, zero3), each ZeRO mode also with its parts split within a
// node (hybrid sharding, --shard-group set to the device's GPUs a node)
// when the job spans nodes. Each is planned exactly, per rank; among those
// that fit, the least estimated step time wins (communication included,
// as the roofline schedules it on the device's links), a 4-bit base only
// where nothing with a 16- or 32-bit one fits (double quantization after
// plain NF4), 4-bit state only where nothing with 8-bit or f32 state fits.
//
// --world-size auto: the fewest ranks on which anything fits, found by
// doubling and then bisecting (a rank's plan shrinks as ranks are added),
// with the fit at that world size.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PIPELINES_FIT_H
#define TGC_PIPELINES_FIT_H

#include "tgc/Analysis/Roofline.h"
#include "tgc/Pipelines/BatchSize.h"

#include <string>
#include <vector>

namespace tgc {

/// The choices that change the numbers, which --fit takes only when
/// allowed (--fit-allow).
struct FitAllowed {
  bool amp = false;         // bf16 compute (tg-amp)
  bool state8bit = false;   // 8-bit optimizer state
  bool state4bit = false;   // 4-bit AdamW state (not in `all`)
  bool bf16Masters = false; // bf16 master weights, stochastic rounding
  bool chunkedLoss = false; // the classifier and loss in chunks (sums in
                            // another order)
  bool nf4 = false;         // with LoRA, the frozen base in NF4 (QLoRA)
};

/// Parses --fit-allow's list (amp, 8bit, 4bit, bf16-masters, chunked-loss,
/// nf4, all: every one but 4bit, none). Fails with `error` set.
bool parseFitAllowed(llvm::StringRef list, FitAllowed &allowed,
                     std::string &error);

struct FitRequest {
  int64_t budget = 0;
  /// Samples per optimizer step; 0: the model's recorded batch.
  int64_t globalBatch = 0;
  FitAllowed allowed;
  DeviceSpec device;
  RooflineOptions roofline;
};

/// One configuration tried.
struct FitCandidate {
  /// The data-parallel mode (none for one rank), and for a ZeRO mode the
  /// ranks it splits across (0: all; a node's GPUs: hybrid sharding).
  tg::ParallelMode parallel = tg::ParallelMode::None;
  int64_t shardGroup = 0;
  tg::Half amp = tg::Half::None;
  tg::StateFormat state = tg::StateFormat::F32;
  tg::MasterWeights masters = tg::MasterWeights::F32;
  std::string remat;
  bool inBackward = false;
  int64_t chunks = 1;
  tg::Offload offload = tg::Offload::None;
  /// The frozen base of a LoRA model in 4 bits (QLoRA), its absmax values
  /// double-quantized or not.
  tg::FrozenQuant base = tg::FrozenQuant::None;
  bool doubleQuant = true;
  /// The choices as tgc-compile flags (without the micro-batch).
  std::string flags() const;
  int64_t batch = 0, accumSteps = 1;
  PlannedMemory memory;
  double seconds = 0; // estimated optimizer step
  bool fits = false;
};

struct FitResult {
  /// Every configuration planned, in the order tried.
  std::vector<FitCandidate> candidates;
  /// Whether any fits, and the winner's index in `candidates`; else why
  /// not (the smallest plan found, what --fit-allow would add).
  bool found = false;
  size_t best = 0;
  std::string whyNot;
  /// The smallest plan's total, of those planned (0: none planned).
  int64_t smallest() const;
};

/// Sets the search's choices of `candidate` in `options` (the micro-batch
/// is the caller's to rebuild).
void applyFitCandidate(const FitCandidate &candidate,
                       TrainPipelineOptions &options);

/// The roofline estimate of one optimizer step of a compiled module: K
/// micro-steps and the step that applies them under accumulation, else
/// the training step (none when `model` has no training step).
StepEstimate estimateTrainingStep(mlir::ModuleOp module, llvm::StringRef model,
                                  const DeviceSpec &device,
                                  const RooflineOptions &options);

/// Searches the configurations of `model` (which must carry a tg.generator
/// record, to be rebuilt at each micro-batch) for the fastest that fits,
/// at `options.worldSize` ranks. Options the user set explicitly (amp,
/// optimizer-state, master-weights, remat, optimizer-in-backward,
/// data-parallel, ...) are not searched. Nothing fitting is a result
/// (`found` false, `whyNot` set); fails with `error` set when a candidate
/// cannot be planned at all.
mlir::FailureOr<FitResult> fitToBudget(mlir::func::FuncOp model,
                                       const TrainPipelineOptions &options,
                                       const FitRequest &request,
                                       int64_t alignment, std::string &error);

/// --world-size auto: the fewest ranks, up to `mostRanks`, at which
/// fitToBudget finds a configuration.
struct WorldSizeResult {
  int64_t worldSize = 0;
  FitResult fit;
  /// Each world size tried, in order, with whether anything fit there and
  /// its smallest plan.
  struct Try {
    int64_t worldSize;
    bool fits;
    int64_t smallest;
  };
  std::vector<Try> tried;
};
mlir::FailureOr<WorldSizeResult>
fitWorldSize(mlir::func::FuncOp model, const TrainPipelineOptions &options,
             const FitRequest &request, int64_t alignment, int64_t mostRanks,
             std::string &error);

} // namespace tgc

#endif // TGC_PIPELINES_FIT_H
