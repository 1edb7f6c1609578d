//===- TrainPipeline.h - the model-to-train-step pipeline -------*- C++ -*-===//
//
// The pass pipeline that turns a tg.model into the training step tgc
// compiles, shared by tgc-compile and tgc-opt (`--tgc-train-pipeline`).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PIPELINES_TRAINPIPELINE_H
#define TGC_PIPELINES_TRAINPIPELINE_H

#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace tgc {

/// The pipeline's options, as tgc-compile's flags and tgc-opt's
/// --tgc-train-pipeline name them (flat, as users type them: --lr, not
/// --optimizer-options={lr=...}). Those that are a pass's option are listed
/// in TrainPipelineOptions.def, which gives each its pass's default and the
/// copy into the pass's options; the rest choose which passes run (an amp,
/// optimizer-state or data-parallel of none, a grad-accum of 1 leave the
/// pass out) and are the pipeline's own.
struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  // The options a pass takes under the pipeline's name, one line each.
#define TGC_FORWARD(Pass, passField, field, Type, flag, description)           \
  Option<Type> field{*this, flag, llvm::cl::desc(description),                 \
                     llvm::cl::init(tg::TG##Pass##Options().passField)};
#include "tgc/Pipelines/TrainPipelineOptions.def"

  // The pipeline's own: which passes run.
  ListOption<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("Parameters to freeze, globs on their names (tg-freeze)")};
  ListOption<std::string> trainOnly{
      *this, "train-only",
      llvm::cl::desc("Train only the parameters matching these globs "
                     "(tg-freeze)")};
  ListOption<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Modules to add LoRA adapters to; with them, only the "
                     "adapters (and train-only) train (tg-lora)")};
  Option<tg::FrozenQuant> quantizeFrozen{
      *this, "quantize-frozen",
      llvm::cl::desc("Store frozen matmul weights in 4 bits, as QLoRA's "
                     "base: none, nf4 or fp4 (tg-quantize-frozen)"),
      llvm::cl::init(tg::FrozenQuant::None)};
  Option<tg::Half> amp{
      *this, "amp",
      llvm::cl::desc("Mixed precision: none, bf16 or f16 (tg-amp)"),
      llvm::cl::init(tg::Half::None)};
  Option<tg::MasterWeights> masterWeights{
      *this, "master-weights",
      llvm::cl::desc("How trainable parameters are stored: f32, or bf16 "
                     "with no f32 copy, f32 AdamW moments and stochastic "
                     "rounding (tg-master-weights)"),
      llvm::cl::init(tg::MasterWeights::F32)};
  Option<int64_t> chunkedLoss{
      *this, "chunked-loss",
      llvm::cl::desc("Split the classifier and its cross-entropy over this "
                     "many chunks of rows, so the logits never exist whole "
                     "(tg-chunk-loss; 1: off)"),
      llvm::cl::init(1)};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse matmul + bias (+ GELU) into tg.linear, one "
                     "cuBLASLt GEMM with its epilogue on the GPU (tg-fuse); "
                     "let attention read and write its heads in the "
                     "projections' layout (tg-attention-layout); fold "
                     "mixed precision's casts into the ops beside them "
                     "(tg-fold-casts), cast the parameters in one op "
                     "(tg-group-casts) and run adjacent AdamW updates as "
                     "one multi-tensor op (tg-group-updates)"),
      llvm::cl::init(false)};
  Option<tg::StateFormat> optimizerState{
      *this, "optimizer-state",
      llvm::cl::desc("Optimizer state format: f32 (none), 8bit or 4bit "
                     "(AdamW) (tg-quantize-optimizer-state)"),
      llvm::cl::init(tg::StateFormat::F32)};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Loss scaling: auto (dynamic for f16, none otherwise), "
                     "dynamic, static:<value> or none (tg-loss-scale)"),
      llvm::cl::init("auto")};
  Option<tg::Offload> offload{
      *this, "offload",
      llvm::cl::desc("What lives in host memory instead of the device's: "
                     "none; optimizer (its state, read and written by the "
                     "updates over the bus; tg-offload); activations (those "
                     "the backward pass reads, copied out after the "
                     "forward pass computes them and back before the "
                     "backward pass reads them; tg-offload-activations); or "
                     "all (both)"),
      llvm::cl::init(tg::Offload::None)};
  Option<bool> optimizerInBackward{
      *this, "optimizer-in-backward",
      llvm::cl::desc("Run each parameter's update as soon as its gradient "
                     "is complete, so gradients die inside the backward "
                     "pass (tg-optimizer-in-backward; updates that need "
                     "every gradient, as with --clip-grad-norm, stay after "
                     "it)"),
      llvm::cl::init(false)};
  Option<int64_t> gradAccum{
      *this, "grad-accum",
      llvm::cl::desc("Micro-batches per optimizer step, gradients "
                     "accumulated in f32 (tg-grad-accum; 1: off)"),
      llvm::cl::init(1)};
  Option<tg::ParallelMode> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Data parallelism across --world-size ranks: none, ddp "
                     "(average gradients), zero1 (split the optimizer "
                     "state), zero2 (and the gradients) or zero3 (and the "
                     "parameters) (tg-data-parallel; "
                     "none with a world size above 1 is ddp)"),
      llvm::cl::init(tg::ParallelMode::None)};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("Ranks of the data-parallel job (mpirun -n N tgc-run); "
                     "the memory report is per rank (tgc-compile: 'auto' "
                     "with --fit finds the fewest ranks that fit)"),
      llvm::cl::init(1)};

  /// Not a flag: the passes' summary lines stay off stderr (what --fit
  /// sets for the candidates it compiles).
  bool quiet = false;
};

/// Appends the passes that turn a module holding a tg.model into one holding
/// its tg.train_step.
void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options);

/// Why `options` cannot be compiled together (flags that conflict), or ""
/// when they can: what each pass cannot see alone.
std::string checkTrainPipelineOptions(const TrainPipelineOptions &options);

/// Registers the pipeline as `tgc-train-pipeline` for tgc-opt.
void registerTrainPipeline();

} // namespace tgc

#endif // TGC_PIPELINES_TRAINPIPELINE_H
