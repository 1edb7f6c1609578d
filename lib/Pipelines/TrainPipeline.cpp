//===- TrainPipeline.cpp - the model-to-train-step pipeline ---------------===//

#include "tgc/Pipelines/TrainPipeline.h"

#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

#include <type_traits>

namespace tgc {

/// The options of one pass, its fields that the pipeline forwards
/// (TrainPipelineOptions.def) set from the pipeline's, the rest at the
/// pass's defaults.
template <typename PassOptions>
static PassOptions forwarded(const TrainPipelineOptions &from) {
  PassOptions to;
#define TGC_FORWARD(Pass, passField, field, Type, flag, description)           \
  if constexpr (std::is_same_v<PassOptions, tg::TG##Pass##Options>)            \
    to.passField = from.field;
#include "tgc/Pipelines/TrainPipelineOptions.def"
  return to;
}

void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options) {
  // With LoRA, train-only names base parameters to train beside the
  // adapters (tg-lora freezes the rest); tg-freeze then freezes more.
  bool lora = !options.loraTargets.empty();
  if (lora) {
    auto adapters = forwarded<tg::TGLoraOptions>(options);
    adapters.targets.assign(options.loraTargets.begin(),
                            options.loraTargets.end());
    adapters.trainOnly.assign(options.trainOnly.begin(),
                              options.trainOnly.end());
    pm.addPass(tg::createTGLora(adapters));
  }
  if (!options.freeze.empty() || (!lora && !options.trainOnly.empty()) ||
      options.frozenDtype != tg::Half::None) {
    auto freezing = forwarded<tg::TGFreezeOptions>(options);
    freezing.freeze.assign(options.freeze.begin(), options.freeze.end());
    if (!lora)
      freezing.trainOnly.assign(options.trainOnly.begin(),
                                options.trainOnly.end());
    pm.addPass(tg::createTGFreeze(freezing));
  }
  if (options.quantizeFrozen != tg::FrozenQuant::None) {
    auto quantizing = forwarded<tg::TGQuantizeFrozenOptions>(options);
    quantizing.type = options.quantizeFrozen;
    quantizing.printSummary = !options.quiet;
    pm.addPass(tg::createTGQuantizeFrozen(quantizing));
  }
  if (options.amp != tg::Half::None) {
    auto amp = forwarded<tg::TGAmpOptions>(options);
    amp.dtype = options.amp;
    pm.addPass(tg::createTGAmp(amp));
  }
  if (options.masterWeights != tg::MasterWeights::F32) {
    tg::TGMasterWeightsOptions master;
    master.dtype = options.masterWeights;
    pm.addPass(tg::createTGMasterWeights(master));
  }
  // A preference loss computes each row's loss apart: rows are its chunks.
  bool preference = options.preferenceLoss != "none";
  if (preference) {
    auto pairs = forwarded<tg::TGPreferenceLossOptions>(options);
    pairs.recomputeLogits = options.chunkedLoss != 1;
    pm.addPass(tg::createTGPreferenceLoss(pairs));
  }
  if (options.chunkedLoss != 1 && !preference) {
    tg::TGChunkLossOptions chunking;
    chunking.chunks = options.chunkedLoss;
    pm.addPass(tg::createTGChunkLoss(chunking));
  }
  if (options.fuse) {
    pm.addPass(tg::createTGFuse());
    pm.addPass(tg::createTGAttentionLayout());
  }
  pm.addPass(tg::createTGAutodiff());
  if (options.gradAccum != 1) {
    auto accumulation = forwarded<tg::TGGradAccumOptions>(options);
    accumulation.steps = options.gradAccum;
    pm.addPass(tg::createTGGradAccum(accumulation));
  }

  pm.addPass(tg::createTGOptimizer(forwarded<tg::TGOptimizerOptions>(options)));

  if (options.optimizerState != tg::StateFormat::F32) {
    auto state = forwarded<tg::TGQuantizeOptimizerStateOptions>(options);
    state.format = options.optimizerState;
    pm.addPass(tg::createTGQuantizeOptimizerState(state));
  }

  std::string lossScale = options.lossScale;
  if (lossScale == "auto")
    lossScale = options.amp == tg::Half::F16 ? "dynamic" : "none";
  if (lossScale != "none") {
    auto scaling = forwarded<tg::TGLossScaleOptions>(options);
    scaling.mode = lossScale;
    pm.addPass(tg::createTGLossScale(scaling));
  }

  // Collectives go on the finished seam (gradients, their transforms, the
  // updates), before remat plans the step they are part of.
  tg::ParallelMode dataParallel = options.dataParallel;
  if (dataParallel == tg::ParallelMode::None && options.worldSize != 1)
    dataParallel = tg::ParallelMode::DDP;
  if (dataParallel != tg::ParallelMode::None) {
    auto parallel = forwarded<tg::TGDataParallelOptions>(options);
    parallel.mode = dataParallel;
    parallel.worldSize = options.worldSize;
    pm.addPass(tg::createTGDataParallel(parallel));
  }

  if (tg::offloadsOptimizer(options.offload)) {
    tg::TGOffloadOptions offload;
    offload.what = options.offload;
    offload.printSummary = !options.quiet;
    pm.addPass(tg::createTGOffload(offload));
  }

  // Accumulation's apply step: one gradient at a time from the
  // accumulators (on the finished seam, collectives and all).
  if (options.gradAccum != 1) {
    tg::TGStreamApplyOptions stream;
    stream.printSummary = !options.quiet;
    pm.addPass(tg::createTGStreamApply(stream));
  }

  auto remat = forwarded<tg::TGRematOptions>(options);
  remat.printSummary = !options.quiet;
  pm.addPass(tg::createTGRemat(remat));
  // zero3: a recomputed block's parameters gathered once in the backward
  // pass, for the recomputation and the gradients.
  if (dataParallel == tg::ParallelMode::Zero3) {
    tg::TGShareGathersOptions share;
    share.printSummary = !options.quiet;
    pm.addPass(tg::createTGShareGathers(share));
  }

  if (tg::offloadsActivations(options.offload)) {
    tg::TGOffloadActivationsOptions offload;
    offload.printSummary = !options.quiet;
    pm.addPass(tg::createTGOffloadActivations(offload));
  }

  tg::TGAccumulateProductsOptions accumulate;
  accumulate.printSummary = !options.quiet;
  pm.addPass(tg::createTGAccumulateProducts(accumulate));

  // It orders the finished step, recomputed ops included.
  if (options.optimizerInBackward) {
    tg::TGOptimizerInBackwardOptions inBackward;
    inBackward.printSummary = !options.quiet;
    pm.addPass(tg::createTGOptimizerInBackward(inBackward));
  }

  // --fuse on the finished, ordered step: the residual adds join the norms
  // and norm gradients, casts fold into the ops beside them (updates,
  // residual adds, norms and their gradients read or write 16-bit values as
  // they are), attention keeps its row log-sum-exp for its gradient and
  // reads a fused QKV projection's output in place (its gradient written
  // into one tensor), bias sums and GELU's gradients join the backward
  // GEMMs' epilogues, and the parameters' casts to 16 bits and adjacent AdamW
  // updates run as multi-tensor ops, and the loss computes its gradient in the
  // same pass over the logits (last: it moves the backward seed before the
  // loss).
  if (options.fuse) {
    pm.addPass(tg::createTGFuseResiduals());
    pm.addPass(tg::createTGFoldCasts());
    pm.addPass(tg::createTGKeepAttentionLse());
    pm.addPass(tg::createTGPackQkv());
    tg::TGFuseBiasGradsOptions biasGrads;
    biasGrads.printSummary = !options.quiet;
    pm.addPass(tg::createTGFuseBiasGrads(biasGrads));
    pm.addPass(tg::createTGGroupCasts());
    pm.addPass(tg::createTGGroupUpdates());
    pm.addPass(tg::createTGFuseLoss());
  }

  // Data parallelism on the finished step: each collective's readers wait
  // until the next collective is issued, so the link runs beside compute.
  if (dataParallel != tg::ParallelMode::None)
    pm.addPass(tg::createTGOverlapCollectives());
}

std::string checkTrainPipelineOptions(const TrainPipelineOptions &options) {
  if (options.chunkedLoss < 1)
    return "--chunked-loss must be at least 1 (1 leaves the loss whole), "
           "found " + std::to_string(int64_t(options.chunkedLoss));
  if (options.masterWeights == tg::MasterWeights::BF16) {
    // Stochastic rounding is AdamW's (SGD and Adafactor would round to
    // nearest and lose updates smaller than a bf16 step).
    if (options.optimizer != tg::OptimizerKind::AdamW)
      return "--master-weights=bf16 needs --optimizer=adamw (its updates "
             "are rounded stochastically), found --optimizer=" +
             tg::choiceName(options.optimizer.getValue()).str();
    if (options.amp == tg::Half::F16)
      return "--master-weights=bf16 computes in bf16; it does not combine "
             "with --amp=f16 (use --amp=bf16)";
  }
  // Quantized state has AdamW's and SGD's update kernels only (and
  // tg-quantize-optimizer-state refuses Adafactor's update too).
  if (options.optimizer == tg::OptimizerKind::Adafactor &&
      options.optimizerState != tg::StateFormat::F32)
    return "--optimizer-state=" +
           tg::choiceName(options.optimizerState.getValue()).str() +
           (options.optimizerState == tg::StateFormat::Int4
                ? " is for AdamW"
                : " is for AdamW and SGD") +
           "; Adafactor keeps its factored second "
           "moment in f32 (leave out --optimizer-state)";
  if (tg::offloadsActivations(options.offload) && options.gradAccum > 1)
    return "--offload=" + tg::choiceName(options.offload.getValue()).str() +
           " does not combine with gradient accumulation yet (the "
           "activations' host copies would belong to the micro-step)";
  if (options.shardGroup != 0 && options.shardGroup != options.worldSize) {
    // (Without a mode, --fit chooses one; tgc-compile refuses the rest.)
    if (options.dataParallel.hasValue() &&
        !tg::splitsState(options.dataParallel))
      return "--shard-group=" + std::to_string(options.shardGroup) +
             " splits what a ZeRO mode splits: it needs --data-parallel="
             "zero1, zero2 or zero3";
    if (options.shardGroup < 1 || options.worldSize % options.shardGroup != 0)
      return "--shard-group=" + std::to_string(options.shardGroup) +
             " must divide --world-size=" + std::to_string(options.worldSize) +
             " (the job is world-size / shard-group replicas of a group)";
  }
  return "";
}

void registerTrainPipeline() {
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "tgc-train-pipeline",
      "Turn a tg.model into its training step (the passes of tgc-compile)",
      buildTrainPipeline);
}

} // namespace tgc
