//===- TrainPipeline.cpp - the model-to-train-step pipeline ---------------===//

#include "tgc/Pipelines/TrainPipeline.h"

#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace tgc {

void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options) {
  // With LoRA, train-only names base parameters to train beside the
  // adapters (tg-lora freezes the rest); tg-freeze then freezes more.
  bool lora = !options.loraTargets.empty();
  if (lora) {
    tg::TGLoraOptions adapters;
    adapters.targets.assign(options.loraTargets.begin(),
                            options.loraTargets.end());
    adapters.rank = options.loraRank;
    adapters.alpha = options.loraAlpha;
    adapters.trainOnly.assign(options.trainOnly.begin(),
                              options.trainOnly.end());
    pm.addPass(tg::createTGLora(adapters));
  }
  if (!options.freeze.empty() || (!lora && !options.trainOnly.empty()) ||
      options.frozenDtype != "none") {
    tg::TGFreezeOptions freezing;
    freezing.freeze.assign(options.freeze.begin(), options.freeze.end());
    if (!lora)
      freezing.trainOnly.assign(options.trainOnly.begin(),
                                options.trainOnly.end());
    freezing.frozenDtype = options.frozenDtype;
    pm.addPass(tg::createTGFreeze(freezing));
  }
  if (options.amp != "none") {
    tg::TGAmpOptions amp;
    amp.dtype = options.amp;
    pm.addPass(tg::createTGAmp(amp));
  }
  if (options.fuse)
    pm.addPass(tg::createTGFuse());
  pm.addPass(tg::createTGAutodiff());
  if (options.gradAccum != 1) {
    tg::TGGradAccumOptions accumulation;
    accumulation.steps = options.gradAccum;
    pm.addPass(tg::createTGGradAccum(accumulation));
  }

  tg::TGOptimizerOptions optimizer;
  optimizer.optimizer = options.optimizer;
  optimizer.lr = options.lr;
  optimizer.beta1 = options.beta1;
  optimizer.beta2 = options.beta2;
  optimizer.eps = options.eps;
  optimizer.weightDecay = options.weightDecay;
  optimizer.momentum = options.momentum;
  optimizer.dampening = options.dampening;
  optimizer.nesterov = options.nesterov;
  optimizer.clipGradNorm = options.clipGradNorm;
  optimizer.decayRate = options.decayRate;
  optimizer.clipThreshold = options.clipThreshold;
  optimizer.relativeStep = options.relativeStep;
  optimizer.scaleParameter = options.scaleParameter;
  optimizer.warmupInit = options.warmupInit;
  pm.addPass(tg::createTGOptimizer(optimizer));

  if (options.optimizerState != "none" && options.optimizerState != "f32") {
    tg::TGQuantizeOptimizerStateOptions state;
    state.format = options.optimizerState;
    state.blockSize = options.stateBlockSize;
    state.minSize = options.stateMinSize;
    pm.addPass(tg::createTGQuantizeOptimizerState(state));
  }

  std::string lossScale = options.lossScale;
  if (lossScale == "auto")
    lossScale = options.amp == "f16" ? "dynamic" : "none";
  if (lossScale != "none") {
    tg::TGLossScaleOptions scaling;
    scaling.mode = lossScale;
    scaling.initScale = options.initScale;
    scaling.growthFactor = options.growthFactor;
    scaling.backoffFactor = options.backoffFactor;
    scaling.growthInterval = options.growthInterval;
    pm.addPass(tg::createTGLossScale(scaling));
  }

  // Collectives go on the finished seam (gradients, their transforms, the
  // updates), before remat plans the step they are part of.
  std::string dataParallel = options.dataParallel;
  if (dataParallel == "none" && options.worldSize != 1)
    dataParallel = "ddp";
  if (dataParallel != "none") {
    tg::TGDataParallelOptions parallel;
    parallel.mode = dataParallel;
    parallel.worldSize = options.worldSize;
    parallel.bucketMB = options.bucketMB;
    pm.addPass(tg::createTGDataParallel(parallel));
  }

  tg::TGRematOptions remat;
  remat.policy = options.remat;
  pm.addPass(tg::createTGRemat(remat));
}

void registerTrainPipeline() {
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "tgc-train-pipeline",
      "Turn a tg.model into its training step (the passes of tgc-compile)",
      buildTrainPipeline);
}

} // namespace tgc
