//===- Fit.cpp - the training configuration chosen for a memory budget ----===//

#include "tgc/Pipelines/Fit.h"

#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Models/Models.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"


using namespace mlir;

namespace tgc {

bool parseFitAllowed(llvm::StringRef list, FitAllowed &allowed,
                     std::string &error) {
  SmallVector<StringRef> items;
  list.split(items, ',');
  for (StringRef item : items) {
    item = item.trim();
    if (item.empty()) {
      // `--fit-allow=` (or a stray comma) is a list left unfinished, not
      // `none`: refused rather than guessed.
      error = "--fit-allow needs a list of amp, 8bit, 4bit, bf16-masters, "
              "chunked-loss, nf4, all or none, found '" + list.str() + "'";
      return false;
    }
    if (item == "all") {
      // Every choice that tracks f32 closely: 4-bit state only by name.
      allowed.amp = allowed.state8bit = allowed.bf16Masters =
          allowed.chunkedLoss = allowed.nf4 = true;
    } else if (item == "none") {
      allowed = {};
    } else if (item == "amp") {
      allowed.amp = true;
    } else if (item == "8bit") {
      allowed.state8bit = true;
    } else if (item == "4bit") {
      allowed.state4bit = true;
    } else if (item == "bf16-masters") {
      allowed.bf16Masters = true;
    } else if (item == "chunked-loss") {
      allowed.chunkedLoss = true;
    } else if (item == "nf4") {
      allowed.nf4 = true;
    } else {
      error = "--fit-allow: unknown choice '" + item.str() +
              "' (expected amp, 8bit, 4bit, bf16-masters, chunked-loss, "
              "nf4, all or none)";
      return false;
    }
  }
  return true;
}

StepEstimate estimateTrainingStep(ModuleOp module, StringRef model,
                                  const DeviceSpec &device,
                                  const RooflineOptions &options) {
  StepEstimate estimate;
  auto step = module.lookupSymbol<func::FuncOp>((model + "_train_step").str());
  if (!step)
    return estimate;
  if (auto accum = step->getAttrOfType<DictionaryAttr>(
          tg::TGDialect::kGradAccumAttr))
    if (auto micro = module.lookupSymbol<func::FuncOp>(
            accum.getAs<FlatSymbolRefAttr>("grad_step").getValue()))
      estimate.entries.push_back({"grad_step",
                                  accum.getAs<IntegerAttr>("steps").getInt(),
                                  estimateFunction(micro, device, options)});
  estimate.entries.push_back(
      {"train_step", 1, estimateFunction(step, device, options)});
  return estimate;
}

int64_t FitResult::smallest() const {
  int64_t least = 0;
  for (const FitCandidate &c : candidates)
    if (!least || c.memory.total() < least)
      least = c.memory.total();
  return least;
}

std::string FitCandidate::flags() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (parallel != tg::ParallelMode::None)
    os << "--data-parallel=" << tg::choiceName(parallel) << " ";
  if (shardGroup > 0)
    os << "--shard-group=" << shardGroup << " ";
  os << "--amp=" << tg::choiceName(amp)
     << " --optimizer-state=" << tg::choiceName(state)
     << " --master-weights=" << tg::choiceName(masters) << " --remat=" << remat
     << (inBackward ? " --optimizer-in-backward" : "");
  if (chunks != 1)
    os << " --chunked-loss=" << chunks;
  if (offload != tg::Offload::None)
    os << " --offload=" << tg::choiceName(offload);
  if (base != tg::FrozenQuant::None)
    os << " --quantize-frozen=" << tg::choiceName(base)
       << (doubleQuant ? "" : " --double-quant=false");
  return text;
}

void applyFitCandidate(const FitCandidate &candidate,
                       TrainPipelineOptions &options) {
  options.dataParallel = candidate.parallel;
  options.shardGroup = candidate.shardGroup;
  options.amp = candidate.amp;
  options.optimizerState = candidate.state;
  options.masterWeights = candidate.masters;
  options.remat = candidate.remat;
  options.optimizerInBackward = candidate.inBackward;
  options.chunkedLoss = candidate.chunks;
  options.offload = candidate.offload;
  options.quantizeFrozen = candidate.base;
  options.doubleQuant = candidate.doubleQuant;
  options.gradAccum = candidate.accumSteps;
}

namespace {

template <typename T>
SmallVector<T> choicesOf(bool fixed, T given, ArrayRef<T> searched) {
  if (fixed)
    return {given};
  return SmallVector<T>(searched.begin(), searched.end());
}

} // namespace

FailureOr<FitResult> fitToBudget(func::FuncOp model,
                                 const TrainPipelineOptions &options,
                                 const FitRequest &request, int64_t alignment,
                                 std::string &error) {
  auto record =
      model->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr);
  if (!record) {
    error = "--fit rebuilds the model at each micro-batch, so it needs a "
            "model from tgc-models (or tgc-models --from-hf), which records "
            "how it was built";
    return failure();
  }
  int64_t globalBatch = request.globalBatch;
  if (globalBatch <= 0)
    globalBatch = record.getAs<IntegerAttr>("batch").getInt();

  // The dimensions: what the user fixed stays, the rest is searched; the
  // choices that change the numbers only when allowed.
  bool adamw = options.optimizer == tg::OptimizerKind::AdamW;
  SmallVector<tg::Half> amps = choicesOf<tg::Half>(
      options.amp.hasValue() || !request.allowed.amp, options.amp,
      {tg::Half::None, tg::Half::BF16});
  // 4-bit state is AdamW's, and taken only where nothing with 8-bit or
  // f32 state fits (below).
  SmallVector<tg::StateFormat> stateChoices = {tg::StateFormat::F32};
  if (request.allowed.state8bit)
    stateChoices.push_back(tg::StateFormat::Int8);
  if (request.allowed.state4bit && adamw)
    stateChoices.push_back(tg::StateFormat::Int4);
  SmallVector<tg::StateFormat> states = choicesOf<tg::StateFormat>(
      options.optimizerState.hasValue() ||
          options.optimizer == tg::OptimizerKind::Adafactor,
      options.optimizerState, stateChoices);
  SmallVector<tg::MasterWeights> masters = choicesOf<tg::MasterWeights>(
      options.masterWeights.hasValue() || !request.allowed.bf16Masters ||
          !adamw,
      options.masterWeights,
      {tg::MasterWeights::F32, tg::MasterWeights::BF16});
  SmallVector<std::string> remats = choicesOf<std::string>(
      options.remat.hasValue(), options.remat, {"none", "selective", "blocks"});
  // Moving the updates into the backward pass changes no number and never
  // lengthens a lifetime: on unless the user said otherwise.
  SmallVector<bool> placements = choicesOf<bool>(
      options.optimizerInBackward.hasValue(), options.optimizerInBackward,
      {true});
  // Eight chunks: one eighth of the logits at a time (more chunks save
  // little more while the classifier's weight gradient is summed whole).
  SmallVector<int64_t> chunkings = choicesOf<int64_t>(
      options.chunkedLoss.hasValue() || !request.allowed.chunkedLoss,
      options.chunkedLoss, {1, 8});
  // The data-parallel modes, each splitting more across the ranks and
  // sending more (zero3 gathers the parameters in each pass): one rank
  // runs none.
  tg::ParallelMode given = options.dataParallel;
  if (given == tg::ParallelMode::None && options.worldSize > 1)
    given = tg::ParallelMode::DDP;
  SmallVector<tg::ParallelMode> modes = choicesOf<tg::ParallelMode>(
      options.dataParallel.hasValue() || options.worldSize <= 1, given,
      {tg::ParallelMode::DDP, tg::ParallelMode::Zero1, tg::ParallelMode::Zero2,
       tg::ParallelMode::Zero3});
  // Each ZeRO mode splits across every rank, or, when the job spans nodes
  // of the device, within each node (hybrid sharding: the parameters'
  // gathers stay on the node's links, each rank holds a node's share).
  struct Parallel {
    tg::ParallelMode mode;
    int64_t shardGroup;
  };
  SmallVector<Parallel> parallels;
  int64_t node = request.device.gpusPerNode;
  bool groupGiven = options.shardGroup.hasValue() && options.shardGroup != 0 &&
                    options.shardGroup != options.worldSize;
  for (tg::ParallelMode mode : modes) {
    if (!tg::splitsState(mode)) {
      // ddp splits nothing: not a candidate for a shard group given.
      if (!groupGiven || options.dataParallel.hasValue())
        parallels.push_back({mode, 0});
      continue;
    }
    parallels.push_back({mode, groupGiven ? int64_t(options.shardGroup) : 0});
    if (!options.shardGroup.hasValue() && node > 1 &&
        node < options.worldSize && options.worldSize % node == 0)
      parallels.push_back({mode, node});
  }
  // The state in host memory, then the activations too, change no number
  // but cost the host link's time: searched in that order, each only where
  // less offloading did not fit the whole batch (under ZeRO, the state
  // alone: each rank's parts of it in its host's memory, ZeRO-Offload).
  SmallVector<tg::Offload> offloads = choicesOf<tg::Offload>(
      options.offload.hasValue(), options.offload,
      {tg::Offload::None, tg::Offload::Optimizer, tg::Offload::All});
  // With LoRA, the frozen base as it is, then in NF4 (QLoRA), then with
  // its absmax values double-quantized too: each taken only where the one
  // before does not fit (below).
  struct Base {
    tg::FrozenQuant quant;
    bool doubleQuant;
  };
  SmallVector<Base> bases = {{options.quantizeFrozen, options.doubleQuant}};
  if (!options.quantizeFrozen.hasValue() && request.allowed.nf4 &&
      !options.loraTargets.empty())
    bases = {{tg::FrozenQuant::None, true},
             {tg::FrozenQuant::NF4, false},
             {tg::FrozenQuant::NF4, true}};
  // The micro-batches: the divisors of the global batch that can fit at
  // all (not every number below it: a global batch of 2^62 answers at
  // once).
  FailureOr<SmallVector<int64_t>> batches =
      microBatchCandidates(model, globalBatch, request.budget, error);
  if (failed(batches))
    return failure();

  // Every configuration before the micro-batch, in a fixed order.
  SmallVector<FitCandidate> configurations;
  for (Base base : bases)
    for (auto [parallel, shardGroup] : parallels)
      for (tg::Half amp : amps)
        for (tg::StateFormat state : states)
          for (tg::MasterWeights master : masters)
            for (const std::string &remat : remats)
              for (bool inBackward : placements)
                for (int64_t chunks : chunkings)
                  for (tg::Offload offload : offloads) {
                    // bf16 weights are for bf16 compute.
                    if (master == tg::MasterWeights::BF16 &&
                        amp != tg::Half::BF16 &&
                        !options.masterWeights.hasValue())
                      continue;
                    // ZeRO moves its state alone (its activations in host
                    // memory are untested).
                    if (tg::splitsState(parallel) &&
                        offload == tg::Offload::All &&
                        !options.offload.hasValue())
                      continue;
                    FitCandidate configuration;
                    configuration.parallel = parallel;
                    configuration.shardGroup = shardGroup;
                    configuration.amp = amp;
                    configuration.state = state;
                    configuration.masters = master;
                    configuration.remat = remat;
                    configuration.inBackward = inBackward;
                    configuration.chunks = chunks;
                    configuration.offload = offload;
                    configuration.base = base.quant;
                    configuration.doubleQuant = base.doubleQuant;
                    configurations.push_back(configuration);
                  }

  FitResult result;
  bool &found = result.found;
  // Whether the configuration just tried, the same but with less in host
  // memory, fit at the whole global batch: then offloading more could only
  // be slower (same batch, more of the host link's time).
  bool previousFitWhole = false;
  for (const FitCandidate &configuration : configurations) {
    bool onDevice = configuration.offload == tg::Offload::None;
    if (onDevice)
      previousFitWhole = false;
    else if (previousFitWhole)
      continue;
    TrainPipelineOptions candidate;
    candidate.copyOptionValuesFrom(options);
    candidate.quiet = true;
    // The largest micro-batch that fits: smaller ones only add
    // accumulation steps (and stop where the options do not combine).
    for (int64_t batch : *batches) {
      FitCandidate tried = configuration;
      tried.batch = batch;
      tried.accumSteps = globalBatch / batch;
      applyFitCandidate(tried, candidate);
      if (!checkTrainPipelineOptions(candidate).empty())
        break;
      OwningOpRef<ModuleOp> module = rebuildWithBatch(model, batch, error);
      // A model that cannot be built at a micro-batch (a tensor past the
      // 256 TiB limit: no budget holds it) may be at a smaller one; the
      // smallest says why not.
      if (!module && batch != batches->back()) {
        error.clear();
        continue;
      }
      if (!module)
        return failure();
      FailureOr<PlannedMemory> memory = planTrainingMemory(
          *module, candidate, tried.accumSteps, alignment);
      if (failed(memory)) {
        error = "the training pipeline failed for " + tried.flags() +
                " at micro-batch " + std::to_string(batch);
        return failure();
      }
      tried.memory = *memory;
      tried.fits = memory->total() <= request.budget;
      if (tried.fits)
        tried.seconds = estimateTrainingStep(*module, model.getSymName(),
                                             request.device, request.roofline)
                            .seconds();
      result.candidates.push_back(tried);
      if (!tried.fits)
        continue;
      previousFitWhole = tried.accumSteps == 1;
      const FitCandidate &best = result.candidates[result.best];
      // The least estimated time, 4-bit state only where nothing else fits
      // (it tracks f32 less closely than 8-bit state), a 4-bit base only
      // where nothing with the base as it is fits (double quantization
      // last): the rank of what is lost, compared first.
      auto lossy = [&](const FitCandidate &c) {
        int rank = c.state == tg::StateFormat::Int4 &&
                   !options.optimizerState.hasValue();
        if (c.base != tg::FrozenQuant::None &&
            !options.quantizeFrozen.hasValue())
          rank += c.doubleQuant ? 4 : 2;
        return rank;
      };
      if (!found || lossy(tried) < lossy(best) ||
          (lossy(tried) == lossy(best) &&
           (tried.seconds < best.seconds ||
            (tried.seconds == best.seconds &&
             tried.memory.total() < best.memory.total())))) {
        found = true;
        result.best = result.candidates.size() - 1;
      }
      break;
    }
  }
  if (!found) {
    const FitCandidate *smallest = nullptr;
    for (const FitCandidate &c : result.candidates)
      if (!smallest || c.memory.total() < smallest->memory.total())
        smallest = &c;
    std::string &error = result.whyNot;
    error = "nothing fits a budget of " + formatBytes(request.budget) +
            " (" + std::to_string(request.budget) + " bytes)";
    if (smallest)
      error += "; the smallest plan found is " +
               formatBytes(smallest->memory.total()) + " (" +
               smallest->flags() + ", micro-batch " +
               std::to_string(smallest->batch) + " x " +
               std::to_string(smallest->accumSteps) + ")";
    if (!request.allowed.amp || !request.allowed.state8bit ||
        !request.allowed.bf16Masters || !request.allowed.chunkedLoss)
      error += "; --fit-allow=all also tries the choices that change the "
               "numbers (bf16 compute, 8-bit state, bf16 master weights)";
    else if (!request.allowed.state4bit && adamw)
      error += "; --fit-allow=all,4bit also tries 4-bit optimizer state";
    if (!request.allowed.nf4 && !options.loraTargets.empty() &&
        !options.quantizeFrozen.hasValue())
      error += "; --fit-allow=nf4 also tries the frozen base in NF4 (QLoRA)";
  }
  return result;
}

FailureOr<WorldSizeResult> fitWorldSize(func::FuncOp model,
                                        const TrainPipelineOptions &options,
                                        const FitRequest &request,
                                        int64_t alignment, int64_t mostRanks,
                                        std::string &error) {
  WorldSizeResult result;
  auto attempt = [&](int64_t ranks) -> FailureOr<bool> {
    TrainPipelineOptions atSize;
    atSize.copyOptionValuesFrom(options);
    atSize.worldSize = ranks;
    FailureOr<FitResult> fit =
        fitToBudget(model, atSize, request, alignment, error);
    if (failed(fit))
      return failure();
    result.tried.push_back({ranks, fit->found, fit->smallest()});
    if (fit->found) {
      result.worldSize = ranks;
      result.fit = std::move(*fit);
    } else if (result.worldSize == 0) {
      result.fit = std::move(*fit); // why the largest tried does not fit
    }
    return result.tried.back().fits;
  };
  // Doubling until something fits; a rank's smallest plan that has not
  // shrunk over two doublings (what is not split: activations, the
  // whole parameters a mode keeps) ends the search. (One doubling is not
  // enough: one rank's plan is of other options than many ranks'.)
  int64_t notFitting = 0;
  for (int64_t ranks = 1; ranks <= mostRanks; ranks *= 2) {
    FailureOr<bool> fits = attempt(ranks);
    if (failed(fits))
      return failure();
    if (*fits)
      break;
    notFitting = ranks;
    size_t count = result.tried.size();
    if (count >= 3 &&
        result.tried[count - 1].smallest >= result.tried[count - 3].smallest)
      break;
  }
  if (result.worldSize == 0) {
    const WorldSizeResult::Try &last = result.tried.back();
    error = "--world-size auto: nothing fits on up to " +
            std::to_string(last.worldSize) + " ranks (" + result.fit.whyNot +
            ")";
    if (last.worldSize < mostRanks)
      error += "; a rank's smallest plan no longer shrinks as ranks are "
               "added";
    return failure();
  }
  // Bisecting between the last world size that did not fit and the first
  // that does.
  int64_t fitting = result.worldSize;
  FitResult best = result.fit;
  while (fitting - notFitting > 1) {
    int64_t middle = notFitting + (fitting - notFitting) / 2;
    FailureOr<bool> fits = attempt(middle);
    if (failed(fits))
      return failure();
    if (*fits) {
      fitting = middle;
      best = result.fit;
    } else {
      notFitting = middle;
    }
  }
  result.worldSize = fitting;
  result.fit = std::move(best);
  return result;
}

} // namespace tgc
