//===- Compile.cpp - a tg model compiled into an executable ---------------===//
//
// Reads the module, keeps the one tg.model to compile, applies --lora,
// shape buckets, --fit and the batch choice, runs the training pipeline
// with tg-plan-memory and the lowering to .tgx in one pass-manager run (the
// MemoryPlanAnalysis is computed once), estimates the step when asked and
// writes the output whole (a write error removes the partial file).
//
//===----------------------------------------------------------------------===//

#include "tgc/Pipelines/Compile.h"

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Remat.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Analysis/Roofline.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Models/Models.h"
#include "tgc/Pipelines/BatchSize.h"
#include "tgc/Pipelines/Buckets.h"
#include "tgc/Pipelines/Fit.h"
#include "tgc/Support/Nesting.h"
#include "tgc/Support/UserFiles.h"
#include "tgc/Target/LowerToTGX.h"
#include "tgc/Target/TGX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>

using namespace mlir;

namespace tgc {
namespace {

/// The largest IR file read (1 GiB; constants larger than
/// maxConstantBytes are refused anyway).
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;

/// --fit: plans the configurations for the budget, logs each one tried,
/// and leaves the winner in `options` and `module` (rebuilt at its
/// micro-batch).
LogicalResult fitConfiguration(const CompileRequest &request,
                               OwningOpRef<ModuleOp> &module, StringRef model,
                               TrainPipelineOptions &options,
                               const std::optional<DeviceSpec> &device,
                               llvm::raw_ostream &log, std::string &error) {
  const std::string &fitBudget = *request.fit;
  std::optional<int64_t> budget = parseByteSize(fitBudget);
  if (!budget) {
    error = "--fit needs a positive size such as 10GiB, 512MiB or 1000000 "
            "(bytes), found '" +
            fitBudget + "'";
    return failure();
  }
  std::optional<int64_t> reserve = request.fitReserve == "0"
                                       ? std::optional<int64_t>(0)
                                       : parseByteSize(request.fitReserve);
  if (!reserve) {
    error = "--fit-reserve needs a size such as 1GiB or 512MiB, found '" +
            request.fitReserve + "'";
    return failure();
  }
  if (*reserve >= *budget) {
    error = "--fit-reserve (" + formatBytes(*reserve) +
            ") leaves nothing of the --fit budget (" + formatBytes(*budget) +
            ")";
    return failure();
  }
  if (!request.batch.empty()) {
    error = "--fit chooses the micro-batch; leave out --batch "
            "(--global-batch sets the samples per optimizer step)";
    return failure();
  }
  if (!request.memoryBudget.empty()) {
    error = "--fit takes the budget itself; leave out --memory-budget";
    return failure();
  }
  if (options.gradAccum.hasValue()) {
    error = "--fit chooses the accumulation steps; leave out --grad-accum "
            "(--global-batch sets the samples per optimizer step)";
    return failure();
  }
  if (!request.seqBuckets.empty()) {
    error = "--fit does not combine with --seq-buckets yet";
    return failure();
  }
  if (request.globalBatchGiven && request.globalBatch <= 0) {
    error = "--global-batch must be positive, found " +
            std::to_string(request.globalBatch);
    return failure();
  }
  FitRequest fit;
  fit.budget = *budget - *reserve;
  fit.globalBatch = request.globalBatch;
  if (!parseFitAllowed(request.fitAllow, fit.allowed, error))
    return failure();
  fit.device = device ? *device : *getBuiltinDevice("h100");
  fit.roofline.allowTF32 = request.allowTF32;
  auto function = module->lookupSymbol<func::FuncOp>(model);
  FailureOr<FitResult> result = failure();
  if (request.worldSizeAuto) {
    FailureOr<WorldSizeResult> sized = fitWorldSize(
        function, options, fit, request.alignment, kMostAutoRanks, error);
    if (failed(sized))
      return failure();
    log << "tgc-compile: --world-size auto:";
    for (const WorldSizeResult::Try &t : sized->tried)
      log << " " << t.worldSize << (t.fits ? " fits" : " does not fit")
          << (&t == &sized->tried.back() ? "" : ",");
    log << "; the fewest ranks is " << sized->worldSize << "\n";
    options.worldSize = sized->worldSize;
    result = std::move(sized->fit);
  } else {
    result = fitToBudget(function, options, fit, request.alignment, error);
    if (failed(result))
      return failure();
    if (!result->found) {
      error = result->whyNot;
      return failure();
    }
  }
  const FitCandidate &best = result->candidates[result->best];
  log << "tgc-compile: --fit=" << fitBudget << ": " << result->candidates.size()
      << " configurations planned, step times estimated on " << fit.device.name
      << ":\n";
  for (const auto &[i, c] : llvm::enumerate(result->candidates)) {
    log << (i == result->best ? "  * " : "    ") << (c.fits ? "fits " : "over ")
        << c.flags() << " --batch=" << c.batch;
    if (c.accumSteps > 1)
      log << " --grad-accum=" << c.accumSteps;
    log << ": " << formatBytes(c.memory.total()) << " (persistent "
        << formatBytes(c.memory.persistent) << ", arena "
        << formatBytes(c.memory.arena);
    if (c.memory.host)
      log << "; host memory " << formatBytes(c.memory.host);
    log << ")";
    if (c.fits)
      log << llvm::format(", step %.4g ms", c.seconds * 1e3);
    log << "\n";
  }
  log << "tgc-compile: --fit chose " << best.flags()
      << " --batch=" << best.batch;
  if (best.accumSteps > 1)
    log << " --grad-accum=" << best.accumSteps;
  log << ": " << formatBytes(best.memory.total()) << " (" << best.memory.total()
      << " bytes) of " << formatBytes(fit.budget);
  if (*reserve)
    log << " (" << formatBytes(*budget) << " less the reserve of "
        << formatBytes(*reserve) << ")";
  log << llvm::format(", estimated step %.4g ms", best.seconds * 1e3);
  if (options.worldSize > 1)
    log << " a rank of " << options.worldSize << " (mpirun -n "
        << options.worldSize << " tgc-run ...)";
  log << "\n";
  applyFitCandidate(best, options);
  OwningOpRef<ModuleOp> rebuilt = rebuildWithBatch(function, best.batch, error);
  if (!rebuilt)
    return failure();
  module = std::move(rebuilt);
  return success();
}

/// The compile options as one line, recorded in the executable: the
/// pipeline's options as its parser prints them.
std::string describeOptions(const TrainPipelineOptions &options) {
  std::string out;
  llvm::raw_string_ostream os(out);
  options.print(os);
  StringRef text = StringRef(out).trim();
  text.consume_front("{");
  text.consume_back("}");
  SmallVector<StringRef> items;
  text.split(items, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  return llvm::join(items, " ");
}

/// The request's checks that need no model: devices, files, sizes.
bool checkRequest(const CompileRequest &request,
                  std::optional<DeviceSpec> &device, std::string &error) {
  if (!request.estimateJSON.empty() && request.estimate.empty()) {
    error = "--estimate-json needs --estimate=<device>";
    return false;
  }
  // No output may replace an input, or another output.
  bool estimateIsFile = !request.estimate.empty() &&
                        !getBuiltinDevice(request.estimate).has_value();
  error = checkDistinctFiles(
      {{"the input", request.input},
       {"tgc-compile itself", "/proc/self/exe"},
       {"--estimate", estimateIsFile ? request.estimate : ""}},
      {{"-o", request.output},
       {"--memory-report", request.memoryReport},
       {"--memory-report's trace", request.memoryReport.empty()
                                       ? ""
                                       : request.memoryReport + ".trace.json"},
       {"--estimate-json", request.estimateJSON}});
  if (!error.empty())
    return false;
  // The device is read before anything is compiled, so a bad one costs
  // nothing.
  if (!request.estimate.empty()) {
    device = resolveDevice(request.estimate, error);
    if (!device) {
      error = "--estimate: " + error;
      return false;
    }
  }
  if (request.emit != "tgx" && request.emit != "mlir") {
    error = "--emit must be tgx or mlir, found '" + request.emit + "'";
    return false;
  }
  if (request.alignment < 8 || request.alignment > 65536 ||
      (request.alignment & (request.alignment - 1)) != 0) {
    error = "--alignment must be a power of two from 8 to 65536, found " +
            std::to_string(request.alignment);
    return false;
  }
  if (request.maxConstantBytes < 0 ||
      request.maxConstantBytes > kMaxConstantBytes) {
    error = "--max-constant-bytes must be from 0 to " +
            std::to_string(kMaxConstantBytes) +
            " (the executable format's limit)";
    return false;
  }
  // The input is read whole: it must be a file (or "-", standard input),
  // never a device such as /dev/zero or a FIFO.
  if (request.input != "-") {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(request.input, status) &&
        status.type() != llvm::sys::fs::file_type::regular_file) {
      error = "'" + request.input + "' is not a file";
      return false;
    }
    if (status.getSize() > kMaxInputBytes) {
      error = "'" + request.input + "' is " + std::to_string(status.getSize()) +
              " bytes, more than the " + std::to_string(kMaxInputBytes) +
              " a model's IR may have (its constants belong in a "
              "checkpoint)";
      return false;
    }
  }
  return true;
}

/// The module of `request.input`, parsed with its nesting bounded and its
/// constants' bytes checked; null with `error` otherwise (the parser's
/// own diagnostics go to standard error through `sourceMgr`).
OwningOpRef<ModuleOp> readModule(const CompileRequest &request,
                                 MLIRContext &context,
                                 llvm::SourceMgr &sourceMgr,
                                 std::string &error) {
  auto input = openInputFile(request.input, &error);
  if (!input)
    return nullptr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  // The parser recurses into nested types and attributes: bound the
  // nesting first, so that hostile input is a diagnostic, not a stack
  // overflow.
  const llvm::MemoryBuffer *text =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  if (auto deep =
          findExcessNesting(text->getBufferStart(), text->getBufferSize())) {
    // (Not through the source manager: it would echo the offending line.)
    llvm::errs() << text->getBufferIdentifier() << ":" << deep->line << ":"
                 << deep->column << ": error: brackets nest deeper than "
                 << kMaxIRNesting << " levels; refusing to parse\n";
    error = "could not parse '" + request.input + "'";
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module) {
    error = "could not parse '" + request.input + "'";
    return nullptr;
  }
  // Constants are copied into the executable: refuse huge ones before any
  // pass materializes them.
  int64_t constantBytes = 0;
  WalkResult walk = module->walk([&](tg::ConstantOp constant) {
    constantBytes += tg::getTensorBytes(constant.getType());
    if (constantBytes <= request.maxConstantBytes)
      return WalkResult::advance();
    constant.emitError("the model's constants exceed --max-constant-bytes=")
        << request.maxConstantBytes
        << " (they are stored in the executable; pass a larger limit if "
           "this is intended, or make large tensors parameters)";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted()) {
    error = "the model's constants are too large";
    return nullptr;
  }
  return module;
}

/// The name of the one tg.model to compile, every other one erased (the
/// pipeline differentiates every model); empty with `error` if none is.
std::string keepOneModel(ModuleOp module, const CompileRequest &request,
                         std::string &error) {
  SmallVector<func::FuncOp> models;
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(tg::TGDialect::kModelAttr) &&
        (request.model.empty() || function.getSymName() == request.model))
      models.push_back(function);
  if (models.empty()) {
    error = request.model.empty()
                ? "'" + request.input + "' has no function marked tg.model"
                : "'" + request.input + "' has no tg.model named '" +
                      request.model + "'";
    return "";
  }
  if (models.size() > 1) {
    error = "'" + request.input +
            "' has several tg.model functions; choose one with --model";
    return "";
  }
  std::string model = models.front().getSymName().str();
  for (auto function :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (function->hasAttr(tg::TGDialect::kModelAttr) &&
        function.getSymName() != model)
      function.erase();
  return model;
}

/// The batch: as generated, rebuilt at --batch=N, or chosen for the
/// budget; --global-batch turns the rest into accumulation.
bool chooseBatch(const CompileRequest &request, bool fitting,
                 OwningOpRef<ModuleOp> &module, StringRef model,
                 TrainPipelineOptions &options, llvm::raw_ostream &log,
                 std::string &error) {
  BatchRequest batch;
  batch.batch = request.batch;
  if (!request.memoryBudget.empty()) {
    batch.budget = parseByteSize(request.memoryBudget);
    if (!batch.budget) {
      error = "--memory-budget needs a positive size such as 24GiB, "
              "512MiB or 1000000 (bytes), found '" +
              request.memoryBudget + "'";
      return false;
    }
  }
  if (request.globalBatchGiven && request.globalBatch <= 0) {
    error = "--global-batch must be positive, found " +
            std::to_string(request.globalBatch);
    return false;
  }
  batch.globalBatch = fitting ? 0 : request.globalBatch;
  std::optional<BatchChoice> choice;
  if (failed(applyBatchRequest(module, model, batch, options, request.alignment,
                               choice, error)))
    return false;
  if (!choice)
    return true;
  log << "tgc-compile: --batch=auto: micro-batch " << choice->batch;
  if (choice->accumSteps > 1)
    log << " x " << choice->accumSteps << " accumulation steps (global batch "
        << choice->batch * choice->accumSteps << ")";
  log << " plans " << formatBytes(choice->memory.total()) << " (persistent "
      << formatBytes(choice->memory.persistent) << ", arena "
      << formatBytes(choice->memory.arena) << ", " << choice->memory.total()
      << " bytes) of the " << formatBytes(*batch.budget) << " budget";
  if (choice->nextBatch)
    log << "; batch " << *choice->nextBatch << " would plan "
        << formatBytes(choice->nextMemory.total()) << " ("
        << choice->nextMemory.total() << " bytes)";
  log << "\n";
  return true;
}

/// The model's Hugging Face config.json, which tgc-run --save-hf writes:
/// for a model exactly as tgc-models generated it (its record then
/// describes it) and with a Hugging Face form, or one tgc-import took from
/// a Hugging Face directory (the directory's, recorded).
void huggingFaceConfig(func::FuncOp function, std::string &config,
                       std::string &why) {
  if (auto imported =
          function->getAttrOfType<StringAttr>(tg::TGDialect::kHFConfigAttr))
    config = imported.str();
  else if (auto refused = function->getAttrOfType<StringAttr>(
               tg::TGDialect::kHFConfigRefusedAttr))
    why = refused.str();
  else if (std::optional<ModelConfig> generated =
               generatedConfig(function, why))
    config = writeHFConfig(*generated, why).value_or("");
}

/// Writes `bytes` (or the module's text) to `path` whole: a write error
/// (a full disk) is reported, and the partial file removed.
bool writeOutput(const std::string &path,
                 llvm::function_ref<void(llvm::raw_ostream &)> write,
                 std::string &error) {
  auto output = openOutputFile(path, &error);
  if (!output)
    return false;
  write(output->os());
  output->os().flush();
  if (output->os().has_error()) {
    std::error_code code = output->os().error();
    output->os().clear_error();
    error = "could not write '" + path + "': " + code.message();
    return false;
  }
  output->keep();
  return true;
}

} // namespace

bool parseLoraSpec(StringRef spec, TrainPipelineOptions &options,
                   std::string &error) {
  // rank=R,alpha=A,targets=T1,T2,...: a key starts each item; an item
  // without '=' continues the targets list.
  std::string key;
  SmallVector<StringRef> items;
  spec.split(items, ',');
  std::vector<std::string> targets;
  for (StringRef item : items) {
    auto [name, value] = item.split('=');
    if (item.contains('=')) {
      key = name.trim().str();
    } else if (key == "targets") {
      value = item;
    } else {
      error = "--lora: '" + item.str() +
              "' is not key=value (rank, alpha, targets)";
      return false;
    }
    value = value.trim();
    if (key == "targets") {
      if (value.empty()) {
        error = "--lora: an empty target";
        return false;
      }
      targets.push_back(value.str());
    } else if (key == "rank") {
      int64_t rank;
      if (value.getAsInteger(10, rank) || rank <= 0) {
        error = "--lora: rank must be a positive integer, found '" +
                value.str() + "'";
        return false;
      }
      options.loraRank = rank;
    } else if (key == "alpha") {
      double alpha;
      if (value.getAsDouble(alpha) || !(alpha > 0.0) ||
          !(alpha <= double(std::numeric_limits<float>::max()))) {
        error = "--lora: alpha must be a positive number, finite in f32, "
                "found '" +
                value.str() + "'";
        return false;
      }
      options.loraAlpha = alpha;
    } else {
      error =
          "--lora: unknown key '" + key + "' (expected rank, alpha or targets)";
      return false;
    }
  }
  if (targets.empty()) {
    error = "--lora needs targets, e.g. "
            "--lora=rank=8,alpha=16,targets=c_attn,c_proj";
    return false;
  }
  options.loraTargets = targets;
  return true;
}

std::string checkCompileOptions(const TrainPipelineOptions &options) {
  if (std::string bad = tg::checkWeightDecay(options.weightDecay,
                                             options.weightDecay.hasValue());
      !bad.empty())
    return "--" + bad;
  if (std::string conflict = checkTrainPipelineOptions(options);
      !conflict.empty())
    return conflict;
  if (options.gradAccum < 1)
    return "--grad-accum must be at least 1 (micro-batches per optimizer "
           "step; 1 is no accumulation), found " +
           std::to_string(int64_t(options.gradAccum));
  if (std::string error; !parseRematPolicy(options.remat, error))
    return "--remat " + error;
  const std::string &loss = options.preferenceLoss;
  if (loss != "none" && loss != "dpo" && loss != "ipo" && loss != "simpo" &&
      loss != "orpo")
    return "--loss must be none, dpo, ipo, simpo or orpo, found '" + loss + "'";
  if (loss != "none" && options.gradAccum != 1)
    return "--loss=" + loss +
           " does not combine with --grad-accum yet (a preference loss is a "
           "mean over the pairs of one batch): raise --batch instead";
  return "";
}

bool compileModel(const CompileRequest &request, TrainPipelineOptions &options,
                  llvm::raw_ostream &log, llvm::raw_ostream &out,
                  std::string &error) {
  // (Before the options' checks: under auto the world size is not yet
  // chosen, so K cannot be checked against it.)
  if (request.worldSizeAuto && options.shardGroup.hasValue()) {
    error = "--shard-group does not combine with --world-size auto: the "
            "search plans every ZeRO mode within a node of the device "
            "(--shard-group at its GPUs a node) wherever the ranks span "
            "nodes; leave --shard-group out";
    return false;
  }
  if (error = checkCompileOptions(options); !error.empty())
    return false;
  std::optional<DeviceSpec> device;
  if (!checkRequest(request, device, error))
    return false;
  if (!request.fit && !options.dataParallel.hasValue() &&
      options.shardGroup != 0 && options.shardGroup != options.worldSize) {
    error = "--shard-group=" + std::to_string(options.shardGroup) +
            " splits what a ZeRO mode splits: it needs --data-parallel="
            "zero1, zero2 or zero3 (or --fit, which chooses one)";
    return false;
  }

  MLIRContext context;
  // Errors name the pass and the value at fault; a dump of the whole module
  // after them would bury them.
  context.printOpOnDiagnostic(false);
  context.loadDialect<tg::TGDialect, func::FuncDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = readModule(request, context, sourceMgr, error);
  if (!module)
    return false;
  std::string model = keepOneModel(*module, request, error);
  if (model.empty())
    return false;
  if (!request.lora.empty() && !parseLoraSpec(request.lora, options, error))
    return false;

  // Shape buckets: the training step runs at the largest length, so the
  // model is rebuilt at it first (tgc/Pipelines/Buckets.h).
  int64_t seqLen = 0;
  if (!request.seqBuckets.empty()) {
    if (options.preferenceLoss != "none") {
      error = "--loss=" + options.preferenceLoss +
              " does not combine with --seq-buckets yet";
      return false;
    }
    if (request.emit != "tgx") {
      error = "--seq-buckets compiles an executable (--emit=tgx)";
      return false;
    }
    seqLen = rebuildAtLargestBucket(module, model, request.seqBuckets, error);
    if (!seqLen)
      return false;
  }

  // --fit: the whole configuration chosen for a budget (`--fit=` too: its
  // empty size is an error, not a --fit left out).
  bool fitting = request.fit.has_value();
  if (fitting) {
    if (failed(fitConfiguration(request, module, model, options, device, log,
                                error)))
      return false;
  } else if (request.worldSizeAuto) {
    error = "--world-size auto needs --fit=<budget>: it finds the fewest "
            "ranks on which the step fits the budget";
    return false;
  } else if (request.fitAllowGiven) {
    error = "--fit-allow needs --fit=<budget>";
    return false;
  } else if (request.fitReserveGiven) {
    error = "--fit-reserve needs --fit=<budget>";
    return false;
  }
  if (!chooseBatch(request, fitting, module, model, options, log, error))
    return false;

  // The smaller shape buckets, each compiled alone at the final batch.
  BucketSteps bucketSteps;
  if (!request.seqBuckets.empty() &&
      failed(compileSmallerBuckets(*module, model, request.seqBuckets, options,
                                   request.alignment, bucketSteps, error)))
    return false;

  std::string hfConfig, hfConfigError;
  if (request.emit == "tgx")
    if (auto function = module->lookupSymbol<func::FuncOp>(model))
      huggingFaceConfig(function, hfConfig, hfConfigError);

  PassManager pm(&context);
  buildTrainPipeline(pm, options);
  TGXOutput lowered;
  if (request.emit == "tgx") {
    tg::TGPlanMemoryOptions planning;
    planning.memoryReport = request.memoryReport;
    planning.alignment = request.alignment;
    planning.printReport = false;
    pm.addPass(tg::createTGPlanMemory(planning));
    LowerToTGXOptions lowering;
    lowering.model = model;
    lowering.options = describeOptions(options);
    lowering.memoryReport = request.memoryReport;
    lowering.alignment = request.alignment;
    lowering.allowTF32 = request.allowTF32;
    lowering.seqLen = seqLen;
    lowering.hfConfig = hfConfig;
    lowering.hfConfigError = hfConfigError;
    pm.addPass(createLowerToTGXPass(lowering, bucketSteps.buckets, lowered));
  }
  if (failed(pm.run(*module))) {
    error = "the training pipeline failed";
    return false;
  }

  // The roofline estimate of one optimizer step: K micro-steps and the
  // step that applies them under accumulation, else the training step.
  if (device) {
    if (!module->lookupSymbol<func::FuncOp>(model + "_train_step")) {
      error =
          "the pipeline produced no training step @" + model + "_train_step";
      return false;
    }
    RooflineOptions rooflineOptions;
    rooflineOptions.allowTF32 = request.allowTF32;
    StepEstimate stepEstimate =
        estimateTrainingStep(*module, model, *device, rooflineOptions);
    printEstimate(stepEstimate, *device, out, /*topOps=*/5);
    if (!request.estimateJSON.empty() &&
        !writeOutput(
            request.estimateJSON,
            [&](llvm::raw_ostream &os) {
              os << llvm::formatv("{0:2}",
                                  estimateToJSON(stepEstimate, *device))
                 << "\n";
            },
            error))
      return false;
  }

  if (request.emit == "mlir")
    return writeOutput(
        request.output,
        [&](llvm::raw_ostream &os) {
          module->print(os);
          os << "\n";
        },
        error);
  if (!writeOutput(
          request.output,
          [&](llvm::raw_ostream &os) {
            os.write(reinterpret_cast<const char *>(lowered.bytes.data()),
                     lowered.bytes.size());
          },
          error))
    return false;
  log << "tgc-compile: @" << model << " -> " << request.output << ": "
      << lowered.summary << "\n";
  return true;
}

} // namespace tgc
