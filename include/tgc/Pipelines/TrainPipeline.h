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
/// --tgc-train-pipeline name them. An option forwarded to a pass takes its
/// default from the pass's options (Passes.td, through the generated
/// tg::TG<Pass>Options), so a default is written once; an option whose
/// "none" means the pass is left out (amp, frozen-dtype, optimizer-state,
/// loss-scale, data-parallel, grad-accum 1) is the pipeline's own.
struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
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
  Option<int64_t> loraRank{*this, "lora-rank", llvm::cl::desc("LoRA rank"),
                           llvm::cl::init(tg::TGLoraOptions().rank)};
  Option<double> loraAlpha{*this, "lora-alpha",
                           llvm::cl::desc("LoRA alpha (scale alpha / rank)"),
                           llvm::cl::init(tg::TGLoraOptions().alpha)};
  Option<std::string> frozenDtype{
      *this, "frozen-dtype",
      llvm::cl::desc("Store frozen f32 parameters in 16 bits: none, bf16 or "
                     "f16 (tg-freeze)"),
      llvm::cl::init("none")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("Optimizer: adamw, sgd or adafactor"),
      llvm::cl::init(tg::TGOptimizerOptions().optimizer)};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(tg::TGOptimizerOptions().lr)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(tg::TGOptimizerOptions().beta1)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(tg::TGOptimizerOptions().beta2)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(tg::TGOptimizerOptions().eps)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (default: 0.01 for adamw, 0 for sgd)"),
      llvm::cl::init(tg::TGOptimizerOptions().weightDecay)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(tg::TGOptimizerOptions().momentum)};
  Option<double> dampening{*this, "dampening",
                           llvm::cl::desc("SGD dampening"),
                           llvm::cl::init(tg::TGOptimizerOptions().dampening)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov"),
                        llvm::cl::init(tg::TGOptimizerOptions().nesterov)};
  Option<double> decayRate{*this, "decay-rate",
                           llvm::cl::desc("Adafactor decay exponent"),
                           llvm::cl::init(tg::TGOptimizerOptions().decayRate)};
  Option<double> clipThreshold{*this, "clip-threshold",
                               llvm::cl::desc("Adafactor update RMS limit"),
                               llvm::cl::init(tg::TGOptimizerOptions().clipThreshold)};
  Option<bool> relativeStep{
      *this, "relative-step",
      llvm::cl::desc("Adafactor step min(1e-2, 1/sqrt(t)) instead of lr"),
      llvm::cl::init(tg::TGOptimizerOptions().relativeStep)};
  Option<bool> scaleParameter{
      *this, "scale-parameter",
      llvm::cl::desc("Adafactor: scale the step by the parameter's RMS"),
      llvm::cl::init(tg::TGOptimizerOptions().scaleParameter)};
  Option<bool> warmupInit{*this, "warmup-init",
                          llvm::cl::desc("Adafactor warm-up relative step"),
                          llvm::cl::init(tg::TGOptimizerOptions().warmupInit)};
  Option<std::string> optimizerState{
      *this, "optimizer-state",
      llvm::cl::desc("Optimizer state format: f32 (none) or 8bit "
                     "(tg-quantize-optimizer-state)"),
      llvm::cl::init("none")};
  Option<int64_t> stateBlockSize{
      *this, "state-block-size",
      llvm::cl::desc("Elements per absmax block of 8-bit state"),
      llvm::cl::init(tg::TGQuantizeOptimizerStateOptions().blockSize)};
  Option<int64_t> stateMinSize{
      *this, "state-min-size",
      llvm::cl::desc("Parameters with fewer elements keep f32 state"),
      llvm::cl::init(tg::TGQuantizeOptimizerStateOptions().minSize)};
  Option<std::string> amp{
      *this, "amp",
      llvm::cl::desc("Mixed precision: none, bf16 or f16 (tg-amp)"),
      llvm::cl::init("none")};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse matmul + bias (+ GELU) into tg.linear, one "
                     "cuBLASLt GEMM with its epilogue on the GPU (tg-fuse)"),
      llvm::cl::init(false)};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Loss scaling: auto (dynamic for f16, none otherwise), "
                     "dynamic, static:<value> or none (tg-loss-scale)"),
      llvm::cl::init("auto")};
  Option<double> initScale{*this, "init-scale",
                           llvm::cl::desc("Initial dynamic loss scale"),
                           llvm::cl::init(tg::TGLossScaleOptions().initScale)};
  Option<double> growthFactor{*this, "growth-factor",
                              llvm::cl::desc("Loss-scale growth factor"),
                              llvm::cl::init(tg::TGLossScaleOptions().growthFactor)};
  Option<double> backoffFactor{*this, "backoff-factor",
                               llvm::cl::desc("Loss-scale backoff factor"),
                               llvm::cl::init(tg::TGLossScaleOptions().backoffFactor)};
  Option<int64_t> growthInterval{
      *this, "growth-interval",
      llvm::cl::desc("Finite steps before the loss scale grows"),
      llvm::cl::init(tg::TGLossScaleOptions().growthInterval)};
  Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("Rematerialization: none, selective, blocks or "
                     "budget=<size> (tg-remat)"),
      llvm::cl::init("none")};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the gradients' global 2-norm (0: off)"),
      llvm::cl::init(tg::TGOptimizerOptions().clipGradNorm)};
  Option<int64_t> gradAccum{
      *this, "grad-accum",
      llvm::cl::desc("Micro-batches per optimizer step, gradients "
                     "accumulated in f32 (tg-grad-accum; 1: off)"),
      llvm::cl::init(1)};
  Option<std::string> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Data parallelism across --world-size ranks: none, ddp "
                     "(average gradients), zero1 (split the optimizer "
                     "state) or zero2 (and the gradients) (tg-data-parallel; "
                     "none with a world size above 1 is ddp)"),
      llvm::cl::init("none")};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("Ranks of the data-parallel job (mpirun -n N tgc-run); "
                     "the memory report is per rank"),
      llvm::cl::init(1)};
  Option<double> bucketMB{
      *this, "bucket-mb",
      llvm::cl::desc("Largest bucket of gradients per collective, in MiB"),
      llvm::cl::init(tg::TGDataParallelOptions().bucketMB)};
};

/// Appends the passes that turn a module holding a tg.model into one holding
/// its tg.train_step.
void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options);

/// Registers the pipeline as `tgc-train-pipeline` for tgc-opt.
void registerTrainPipeline();

} // namespace tgc

#endif // TGC_PIPELINES_TRAINPIPELINE_H
