//===- tgc-compile.cpp - compiles a tg model to an executable -------------===//
//
//   tgc-compile model.mlir -o model.tgx [--optimizer=adamw --lr=3e-4 ...]
//       [--memory-report=report.json] [--emit=tgx|mlir]
//
// Parses a module holding one tg.model, runs the training pipeline
// (lib/Pipelines; every TrainPipelineOptions option is a flag here, parsed
// by the pipeline's own parser), plans the memory of the training step
// (tg-plan-memory) and, in the same pass-manager run, lowers the step with
// that very plan (the MemoryPlanAnalysis is computed once) into the .tgx
// executable the runtime runs.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Remat.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Analysis/Roofline.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Models/Models.h"
#include "tgc/Pipelines/BatchSize.h"
#include "tgc/Pipelines/Fit.h"
#include "tgc/Pipelines/Buckets.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Support/Nesting.h"
#include "tgc/Target/LowerToTGX.h"
#include "tgc/Target/TGX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include "tgc/Support/UserFiles.h"
#include "tgc/Tools/CommandLine.h"

#include <limits>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tgc-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"),
                                       cl::init("model.tgx"),
                                       cl::cat(category));
static cl::opt<std::string> emit("emit",
                                 cl::desc("What to write: tgx (the "
                                          "executable) or mlir (the training "
                                          "step IR)"),
                                 cl::init("tgx"), cl::cat(category));
static cl::opt<std::string> modelName(
    "model", cl::desc("The tg.model function to compile (default: the only "
                      "one)"),
    cl::cat(category));
static cl::opt<std::string>
    memoryReport("memory-report",
                 cl::desc("Write the memory plan as JSON to this file, a "
                          "Chrome trace to <file>.trace.json, and the "
                          "plans of the eval_step (and with --grad-accum, "
                          "grad_step) entries to <file>.<entry>.json"),
                 cl::cat(category));
static cl::opt<int64_t> maxConstantBytes(
    "max-constant-bytes",
    cl::desc("Refuse a model whose constants (tg.constant) hold more than "
             "this many bytes in all (default 256 MiB, at most 1 GiB): they "
             "are stored in the executable"),
    cl::init(int64_t(256) << 20), cl::cat(category));
static cl::opt<std::string> batchSize(
    "batch",
    cl::desc("Rebuild the model at this micro-batch size, or 'auto': the "
             "largest whose planned memory fits --memory-budget (models "
             "from tgc-models, which record how they were built)"),
    cl::value_desc("N|auto"), cl::cat(category));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Bytes the executable may plan (K, M, G, T, KiB, GiB ... "
             "suffixes): --batch=auto fills it; otherwise a plan over it "
             "is an error"),
    cl::value_desc("size"), cl::cat(category));
static cl::opt<int64_t> globalBatch(
    "global-batch",
    cl::desc("Sequences per optimizer step: accumulate global / micro-batch "
             "micro-batches (with --batch=auto, only divisors of it are "
             "tried)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> fitBudget(
    "fit",
    cl::desc("Choose the configuration for a memory budget (e.g. 10GiB): "
             "the micro-batch and accumulation (up to --global-batch), "
             "rematerialization, the optimizer step's placement and, with "
             "--fit-allow, bf16 compute, 8-bit or 4-bit state and bf16 "
             "master weights; the one whose exact plan fits with the least "
             "estimated step time (--estimate's device, h100 by default) "
             "wins"),
    cl::value_desc("size"), cl::cat(category));
static cl::opt<std::string> fitReserve(
    "fit-reserve",
    cl::desc("Part of the --fit budget left for what no plan counts: the "
             "CUDA context, cuBLAS and the kernels' own workspace (0.5 to "
             "1 GiB measured on an H100, bench/gpu/README.md). Plans must "
             "fit the budget less this (default 0)"),
    cl::value_desc("size"), cl::init("0"), cl::cat(category));
static cl::opt<std::string> fitAllow(
    "fit-allow",
    cl::desc("What --fit may change that changes the numbers: amp, 8bit, "
             "4bit, bf16-masters, chunked-loss, all (every one but 4bit) or "
             "none (default none: only choices that keep the losses). 4-bit "
             "AdamW state is taken only where nothing with 8-bit or f32 "
             "state fits"),
    cl::value_desc("list"), cl::init("none"), cl::cat(category));
static cl::opt<std::string> estimate(
    "estimate",
    cl::desc("Print a roofline estimate of the step's time on a GPU, op "
             "kind by op kind: h100, a100, or a JSON file of peak rates "
             "(see the README)"),
    cl::value_desc("device"), cl::cat(category));
static cl::opt<std::string> estimateJSON(
    "estimate-json",
    cl::desc("Write the estimate, every op included, as JSON to this file "
             "(with --estimate)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> allowTF32(
    "allow-tf32",
    cl::desc("Run f32 matrix products on the GPU's TF32 tensor cores (10-bit "
             "mantissa inputs, f32 accumulation; off by default, as in "
             "PyTorch): recorded in the executable for the CUDA backend, and "
             "used by --estimate"),
    cl::init(false), cl::cat(category));
static cl::list<int64_t> seqBuckets(
    "seq-buckets", cl::CommaSeparated,
    cl::desc("Compile the training and evaluation steps once per sequence "
             "length, in increasing order (e.g. 64,128,256,512), into one "
             "executable sharing parameters and optimizer state: tgc-run "
             "--padding picks the smallest that fits each batch. Needs a "
             "sequence model from tgc-models"),
    cl::value_desc("L1,L2,..."), cl::cat(category));
static cl::opt<int64_t> alignment("alignment",
                                  cl::desc("Buffer alignment in bytes"),
                                  cl::init(256), cl::cat(category));

// Every option of the training pipeline (tgc::TrainPipelineOptions:
// --optimizer, --lr, --amp, --remat, --freeze, ...) is a flag of
// tgc-compile too; they are not declared again here but forwarded to the
// pipeline's own parser (see splitArguments), so they exist in one place.
// --lora is sugar for the pipeline's lora-* options.
static cl::opt<std::string>
    lora("lora",
         cl::desc("Add LoRA adapters and train only them (and --train-only): "
                  "rank=8,alpha=16,targets=c_attn,c_proj (tg-lora)"),
         cl::cat(category));

/// The largest IR file read (1 GiB; constants larger than
/// --max-constant-bytes are refused anyway).
static constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;


static int fail(const llvm::Twine &message) {
  llvm::errs() << "tgc-compile: error: " << message << "\n";
  return 1;
}

/// --fit: plans the configurations for the budget, prints each one tried,
/// and leaves the winner in `options` and `module` (rebuilt at its
/// micro-batch).
static LogicalResult
fitConfiguration(OwningOpRef<ModuleOp> &module, StringRef model,
                 tgc::TrainPipelineOptions &options,
                 const std::optional<tgc::DeviceSpec> &device,
                 std::string &error) {
  std::optional<int64_t> budget = tgc::parseByteSize(fitBudget);
  if (!budget) {
    error = "--fit needs a positive size such as 10GiB, 512MiB or 1000000 "
            "(bytes), found '" + fitBudget + "'";
    return failure();
  }
  std::optional<int64_t> reserve =
      fitReserve == "0" ? std::optional<int64_t>(0)
                        : tgc::parseByteSize(fitReserve);
  if (!reserve) {
    error = "--fit-reserve needs a size such as 1GiB or 512MiB, found '" +
            fitReserve + "'";
    return failure();
  }
  if (*reserve >= *budget) {
    error = "--fit-reserve (" + tgc::formatBytes(*reserve) +
            ") leaves nothing of the --fit budget (" +
            tgc::formatBytes(*budget) + ")";
    return failure();
  }
  if (batchSize.getNumOccurrences()) {
    error = "--fit chooses the micro-batch; leave out --batch "
            "(--global-batch sets the samples per optimizer step)";
    return failure();
  }
  if (!memoryBudget.empty()) {
    error = "--fit takes the budget itself; leave out --memory-budget";
    return failure();
  }
  if (options.gradAccum.hasValue()) {
    error = "--fit chooses the accumulation steps; leave out --grad-accum "
            "(--global-batch sets the samples per optimizer step)";
    return failure();
  }
  if (!seqBuckets.empty()) {
    error = "--fit does not combine with --seq-buckets yet";
    return failure();
  }
  if (globalBatch.getNumOccurrences() && globalBatch <= 0) {
    error = "--global-batch must be positive, found " +
            std::to_string(int64_t(globalBatch));
    return failure();
  }
  tgc::FitRequest request;
  request.budget = *budget - *reserve;
  request.globalBatch = globalBatch;
  if (!tgc::parseFitAllowed(fitAllow, request.allowed, error))
    return failure();
  request.device = device ? *device : *tgc::getBuiltinDevice("h100");
  request.roofline.allowTF32 = allowTF32;
  auto function = module->lookupSymbol<func::FuncOp>(model);
  FailureOr<tgc::FitResult> result =
      tgc::fitToBudget(function, options, request, alignment, error);
  if (failed(result))
    return failure();
  const tgc::FitCandidate &best = result->candidates[result->best];
  llvm::errs() << "tgc-compile: --fit=" << fitBudget << ": "
               << result->candidates.size()
               << " configurations planned, step times estimated on "
               << request.device.name << ":\n";
  for (const auto &[i, c] : llvm::enumerate(result->candidates)) {
    llvm::errs() << (i == result->best ? "  * " : "    ")
                 << (c.fits ? "fits " : "over ") << c.flags()
                 << " --batch=" << c.batch;
    if (c.accumSteps > 1)
      llvm::errs() << " --grad-accum=" << c.accumSteps;
    llvm::errs() << ": " << tgc::formatBytes(c.memory.total())
                 << " (persistent " << tgc::formatBytes(c.memory.persistent)
                 << ", arena " << tgc::formatBytes(c.memory.arena);
    if (c.memory.host)
      llvm::errs() << "; host memory " << tgc::formatBytes(c.memory.host);
    llvm::errs() << ")";
    if (c.fits)
      llvm::errs() << llvm::format(", step %.4g ms", c.seconds * 1e3);
    llvm::errs() << "\n";
  }
  llvm::errs() << "tgc-compile: --fit chose " << best.flags() << " --batch="
               << best.batch;
  if (best.accumSteps > 1)
    llvm::errs() << " --grad-accum=" << best.accumSteps;
  llvm::errs() << ": " << tgc::formatBytes(best.memory.total()) << " ("
               << best.memory.total() << " bytes) of "
               << tgc::formatBytes(request.budget);
  if (*reserve)
    llvm::errs() << " (" << tgc::formatBytes(*budget) << " less the reserve of "
                 << tgc::formatBytes(*reserve) << ")";
  llvm::errs()
               << llvm::format(", estimated step %.4g ms", best.seconds * 1e3)
               << "\n";
  tgc::applyFitCandidate(best, options);
  OwningOpRef<ModuleOp> rebuilt =
      tgc::rebuildWithBatch(function, best.batch, error);
  if (!rebuilt)
    return failure();
  module = std::move(rebuilt);
  return success();
}

/// The compile options as one line, recorded in the executable: the
/// pipeline's options as its parser prints them.
static std::string describeOptions(const tgc::TrainPipelineOptions &options) {
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

/// Splits argv into tgc-compile's own flags (left in `own`) and the
/// pipeline's (`--name=value`, `--name value` or a bare boolean `--name`),
/// returned as the pipeline parser's text, which rejects unknown names.
static LogicalResult splitArguments(int argc, char **argv,
                                    std::vector<char *> &own,
                                    std::string &pipeline,
                                    std::string &error) {
  // The pipeline's boolean flags (those whose printed default is true or
  // false) take no value; every other option takes one.
  tgc::TrainPipelineOptions defaults;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  defaults.print(os);
  // Each name with whether it is a boolean flag (printed true or false).
  llvm::StringMap<bool> pipelineNames;
  for (StringRef item : llvm::split(StringRef(printed).trim("{} "), ' '))
    if (!item.empty()) {
      auto [name, value] = item.split('=');
      pipelineNames[name] = value == "true" || value == "false";
    }
  auto &registered = cl::getRegisteredOptions();
  own.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (!arg.starts_with("-") || arg == "-" || arg == "--") {
      own.push_back(argv[i]);
      continue;
    }
    StringRef body = arg.drop_while([](char c) { return c == '-'; });
    auto [name, value] = body.split('=');
    if (registered.count(name)) {
      own.push_back(argv[i]); // tgc-compile's own
      continue;
    }
    // Anything else is the pipeline's: its parser rejects unknown names.
    std::string item = name.str();
    if (body.contains('=')) {
      item += "=" + value.str();
    } else if (!pipelineNames.lookup(name)) {
      // Not a boolean flag: the value is the next argument.
      if (i + 1 >= argc) {
        error = "--" + name.str() + " needs a value";
        return failure();
      }
      item += "=" + std::string(argv[++i]);
    }
    // Values with spaces are quoted for the pipeline's parser.
    if (StringRef(item).split('=').second.contains(' '))
      item = name.str() + "=\"" + StringRef(item).split('=').second.str() + "\"";
    pipeline += (pipeline.empty() ? "" : " ") + item;
  }
  return success();
}

int main(int argc, char **argv) {
  // Started with a standard stream closed (`2>&-`): the summary line must
  // not land in the executable, which would take descriptor 2.
  tgc::reopenClosedStandardStreams();
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  std::vector<char *> own;
  std::string pipelineText, splitError;
  if (failed(splitArguments(argc, argv, own, pipelineText, splitError)))
    return fail(splitError);
  // --help lists tgc-compile's flags, then the pipeline's.
  auto isHelp = [](char *a) {
    StringRef arg = a;
    return arg == "--help" || arg == "-help" || arg == "-h";
  };
  bool help = llvm::any_of(own, isHelp);
  llvm::erase_if(own, isHelp);
  // A bad flag is one `tgc-compile: error: ...` line, like every other error.
  std::string flagError;
  if (!tgc::parseToolFlags(int(own.size()), own.data(),
                           "tgc-compile: compiles a tg model into a "
                           "training-step executable\n",
                           "tgc-compile", flagError))
    return fail(flagError + " (see --help)");
  if (help) {
    cl::PrintHelpMessage(/*Hidden=*/false, /*Categorized=*/true);
    llvm::outs() << "Training pipeline options (--name=value or --name "
                    "value):\n";
    tgc::TrainPipelineOptions().printHelp(2, 40);
    return 0;
  }
  tgc::TrainPipelineOptions options;
  std::string parseErrors;
  llvm::raw_string_ostream parseStream(parseErrors);
  // A refused choice (--amp=fp8) is this tool's one-line error.
  static std::string choiceError;
  tgc::tg::choiceErrorHandler() = [](StringRef option, StringRef message) {
    choiceError = ("--" + option + " " + message).str();
  };
  LogicalResult parsed = options.parseFromString(pipelineText, parseStream);
  tgc::tg::choiceErrorHandler() = nullptr;
  if (!choiceError.empty())
    return fail(choiceError);
  if (failed(parsed)) {
    StringRef message = StringRef(parseErrors).trim();
    if (message.consume_front("<Pass-Options-Parser>: no such option "))
      return fail("unknown option '--" + message + "' (see --help)");
    return fail("bad training pipeline option" +
                (message.empty() ? Twine(" (see above)") : ": " + message));
  }
  if (std::string bad = tgc::tg::checkWeightDecay(
          options.weightDecay, options.weightDecay.hasValue());
      !bad.empty())
    return fail("--" + bad);
  if (std::string conflict = tgc::checkTrainPipelineOptions(options);
      !conflict.empty())
    return fail(conflict);
  if (options.gradAccum < 1)
    return fail("--grad-accum must be at least 1 (micro-batches per "
                "optimizer step; 1 is no accumulation), found " +
                std::to_string(int64_t(options.gradAccum)));
  if (!estimateJSON.empty() && estimate.empty())
    return fail("--estimate-json needs --estimate=<device>");
  // No output may replace an input, or another output.
  bool estimateIsFile = !estimate.empty() &&
                        !tgc::getBuiltinDevice(estimate).has_value();
  std::string clash = tgc::checkDistinctFiles(
      {{"the input", inputFile},
       {"tgc-compile itself", "/proc/self/exe"},
       {"--estimate", estimateIsFile ? std::string(estimate) : ""}},
      {{"-o", outputFile},
       {"--memory-report", memoryReport},
       {"--memory-report's trace",
        memoryReport.empty() ? "" : memoryReport + ".trace.json"},
       {"--estimate-json", estimateJSON}});
  if (!clash.empty())
    return fail(clash);
  // The device is read before anything is compiled, so a bad one costs
  // nothing.
  std::optional<tgc::DeviceSpec> device;
  if (!estimate.empty()) {
    std::string error;
    device = tgc::resolveDevice(estimate, error);
    if (!device)
      return fail("--estimate: " + error);
  }
  if (emit != "tgx" && emit != "mlir")
    return fail("--emit must be tgx or mlir, found '" + emit + "'");
  if (std::string error; !tgc::parseRematPolicy(options.remat, error))
    return fail("--remat " + error);

  // The input is read whole: it must be a file (or "-", standard input),
  // never a device such as /dev/zero or a FIFO.
  if (inputFile != "-") {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(inputFile, status) &&
        status.type() != llvm::sys::fs::file_type::regular_file)
      return fail("'" + inputFile + "' is not a file");
    if (status.getSize() > kMaxInputBytes)
      return fail("'" + inputFile + "' is " + Twine(status.getSize()) +
                  " bytes, more than the " + Twine(kMaxInputBytes) +
                  " a model's IR may have (its constants belong in a "
                  "checkpoint)");
  }

  MLIRContext context;
  // Errors name the pass and the value at fault; a dump of the whole module
  // after them would bury them.
  context.printOpOnDiagnostic(false);
  context.loadDialect<tgc::tg::TGDialect, func::FuncDialect>();
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // The parser recurses into nested types and attributes: bound the
  // nesting first, so that hostile input is a diagnostic, not a stack
  // overflow.
  const llvm::MemoryBuffer *text =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  if (auto deep = tgc::findExcessNesting(text->getBufferStart(),
                                         text->getBufferSize())) {
    // (Not through the source manager: it would echo the offending line.)
    llvm::errs() << text->getBufferIdentifier() << ":" << deep->line << ":"
                 << deep->column << ": error: brackets nest deeper than "
                 << tgc::kMaxIRNesting << " levels; refusing to parse\n";
    return fail("could not parse '" + inputFile + "'");
  }
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("could not parse '" + inputFile + "'");
  // Constants are copied into the executable: refuse huge ones before any
  // pass materializes them.
  int64_t constantBytes = 0;
  WalkResult walk = module->walk([&](tgc::tg::ConstantOp constant) {
    constantBytes += tgc::tg::getTensorBytes(constant.getType());
    if (constantBytes <= maxConstantBytes)
      return WalkResult::advance();
    constant.emitError("the model's constants exceed --max-constant-bytes=")
        << int64_t(maxConstantBytes)
        << " (they are stored in the executable; pass a larger limit if "
           "this is intended, or make large tensors parameters)";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return fail("the model's constants are too large");

  // The model to compile; the pipeline differentiates every model, so
  // compile a module holding just one.
  SmallVector<func::FuncOp> models;
  for (auto function : module->getOps<func::FuncOp>())
    if (function->hasAttr(tgc::tg::TGDialect::kModelAttr) &&
        (modelName.empty() || function.getSymName() == modelName))
      models.push_back(function);
  if (models.empty())
    return fail(modelName.empty()
                    ? "'" + inputFile + "' has no function marked tg.model"
                    : "'" + inputFile + "' has no tg.model named '" +
                          modelName + "'");
  if (models.size() > 1)
    return fail("'" + inputFile +
                "' has several tg.model functions; choose one with --model");
  std::string model = models.front().getSymName().str();
  for (auto function :
       llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (function->hasAttr(tgc::tg::TGDialect::kModelAttr) &&
        function.getSymName() != model)
      function.erase();

  if (!lora.empty()) {
    // rank=R,alpha=A,targets=T1,T2,...: a key starts each item; an item
    // without '=' continues the targets list.
    std::string key;
    SmallVector<StringRef> items;
    StringRef(lora).split(items, ',');
    std::vector<std::string> targets;
    for (StringRef item : items) {
      auto [name, value] = item.split('=');
      if (item.contains('=')) {
        key = name.trim().str();
      } else if (key == "targets") {
        value = item;
      } else {
        return fail("--lora: '" + item.str() + "' is not key=value (rank, "
                    "alpha, targets)");
      }
      value = value.trim();
      if (key == "targets") {
        if (value.empty())
          return fail("--lora: an empty target");
        targets.push_back(value.str());
      } else if (key == "rank") {
        int64_t rank;
        if (value.getAsInteger(10, rank) || rank <= 0)
          return fail("--lora: rank must be a positive integer, found '" +
                      value.str() + "'");
        options.loraRank = rank;
      } else if (key == "alpha") {
        double alpha;
        if (value.getAsDouble(alpha) || !(alpha > 0.0) ||
            !(alpha <= double(std::numeric_limits<float>::max())))
          return fail("--lora: alpha must be a positive number, finite in "
                      "f32, found '" +
                      value.str() + "'");
        options.loraAlpha = alpha;
      } else {
        return fail("--lora: unknown key '" + key +
                    "' (expected rank, alpha or targets)");
      }
    }
    if (targets.empty())
      return fail("--lora needs targets, e.g. "
                  "--lora=rank=8,alpha=16,targets=c_attn,c_proj");
    options.loraTargets = targets;
  }
  if (alignment < 8 || alignment > 65536 ||
      (alignment & (alignment - 1)) != 0)
    return fail("--alignment must be a power of two from 8 to 65536, found " +
                Twine(int64_t(alignment)));
  if (maxConstantBytes < 0 || maxConstantBytes > tgc::kMaxConstantBytes)
    return fail("--max-constant-bytes must be from 0 to " +
                Twine(tgc::kMaxConstantBytes) +
                " (the executable format's limit)");

  // Shape buckets: the training step runs at the largest length, so the
  // model is rebuilt at it first (tgc/Pipelines/Buckets.h).
  int64_t seqLen = 0;
  if (!seqBuckets.empty()) {
    if (emit != "tgx")
      return fail("--seq-buckets compiles an executable (--emit=tgx)");
    seqLen = tgc::rebuildAtLargestBucket(module, model, seqBuckets, error);
    if (!seqLen)
      return fail(error);
  }

  // --fit: the whole configuration chosen for a budget (`--fit=` too: its
  // empty size is an error, not a --fit left out).
  bool fitting = fitBudget.getNumOccurrences() > 0;
  if (fitting) {
    if (failed(fitConfiguration(module, model, options, device, error)))
      return fail(error);
  } else if (fitAllow.getNumOccurrences()) {
    return fail("--fit-allow needs --fit=<budget>");
  } else if (fitReserve.getNumOccurrences()) {
    return fail("--fit-reserve needs --fit=<budget>");
  }

  // The batch: as generated, rebuilt at --batch=N, or chosen for the
  // budget; --global-batch turns the rest into accumulation.
  tgc::BatchRequest request;
  request.batch = batchSize;
  if (!memoryBudget.empty()) {
    request.budget = tgc::parseByteSize(memoryBudget);
    if (!request.budget)
      return fail("--memory-budget needs a positive size such as 24GiB, "
                  "512MiB or 1000000 (bytes), found '" + memoryBudget + "'");
  }
  if (globalBatch.getNumOccurrences() && globalBatch <= 0)
    return fail("--global-batch must be positive, found " +
                Twine(int64_t(globalBatch)));
  request.globalBatch = fitting ? 0 : int64_t(globalBatch);
  std::optional<tgc::BatchChoice> choice;
  if (failed(tgc::applyBatchRequest(module, model, request, options,
                                    alignment, choice, error)))
    return fail(error);
  if (choice) {
    llvm::errs() << "tgc-compile: --batch=auto: micro-batch " << choice->batch;
    if (choice->accumSteps > 1)
      llvm::errs() << " x " << choice->accumSteps
                   << " accumulation steps (global batch "
                   << choice->batch * choice->accumSteps << ")";
    llvm::errs() << " plans " << tgc::formatBytes(choice->memory.total())
                 << " (persistent "
                 << tgc::formatBytes(choice->memory.persistent) << ", arena "
                 << tgc::formatBytes(choice->memory.arena) << ", "
                 << choice->memory.total() << " bytes) of the "
                 << tgc::formatBytes(*request.budget) << " budget";
    if (choice->nextBatch)
      llvm::errs() << "; batch " << *choice->nextBatch << " would plan "
                   << tgc::formatBytes(choice->nextMemory.total()) << " ("
                   << choice->nextMemory.total() << " bytes)";
    llvm::errs() << "\n";
  }

  // The smaller shape buckets, each compiled alone at the final batch.
  tgc::BucketSteps bucketSteps;
  if (!seqBuckets.empty() &&
      failed(tgc::compileSmallerBuckets(*module, model, seqBuckets, options,
                                        alignment, bucketSteps, error)))
    return fail(error);
  std::vector<tgc::TGXBucket> &buckets = bucketSteps.buckets;

  // The model's Hugging Face config.json, which tgc-run --save-hf writes:
  // for a model exactly as tgc-models generated it (its record then
  // describes it) and with a Hugging Face form, or one tgc-import took
  // from a Hugging Face directory (the directory's, recorded).
  std::string hfConfig, hfConfigError;
  if (emit == "tgx")
    if (auto function = module->lookupSymbol<func::FuncOp>(model)) {
      if (auto imported = function->getAttrOfType<StringAttr>(
              tgc::tg::TGDialect::kHFConfigAttr))
        hfConfig = imported.str();
      else if (std::optional<tgc::ModelConfig> config =
                   tgc::generatedConfig(function, hfConfigError))
        hfConfig = tgc::writeHFConfig(*config, hfConfigError).value_or("");
    }

  PassManager pm(&context);
  tgc::buildTrainPipeline(pm, options);
  tgc::TGXOutput lowered;
  if (emit == "tgx") {
    tgc::tg::TGPlanMemoryOptions planning;
    planning.memoryReport = memoryReport;
    planning.alignment = alignment;
    planning.printReport = false;
    pm.addPass(tgc::tg::createTGPlanMemory(planning));
    tgc::LowerToTGXOptions lowering;
    lowering.model = model;
    lowering.options = describeOptions(options);
    lowering.memoryReport = memoryReport;
    lowering.alignment = alignment;
    lowering.allowTF32 = allowTF32;
    lowering.seqLen = seqLen;
    lowering.hfConfig = hfConfig;
    lowering.hfConfigError = hfConfigError;
    pm.addPass(tgc::createLowerToTGXPass(lowering, buckets, lowered));
  }
  if (failed(pm.run(*module)))
    return fail("the training pipeline failed");

  // The roofline estimate of one optimizer step: K micro-steps and the
  // step that applies them under accumulation, else the training step.
  if (device) {
    auto step = module->lookupSymbol<func::FuncOp>(model + "_train_step");
    if (!step)
      return fail("the pipeline produced no training step @" + model +
                  "_train_step");
    tgc::RooflineOptions rooflineOptions;
    rooflineOptions.allowTF32 = allowTF32;
    tgc::StepEstimate stepEstimate =
        tgc::estimateTrainingStep(*module, model, *device, rooflineOptions);
    tgc::printEstimate(stepEstimate, *device, llvm::outs(), /*topOps=*/5);
    if (!estimateJSON.empty()) {
      auto json = openOutputFile(estimateJSON, &error);
      if (!json)
        return fail(error);
      json->os() << llvm::formatv(
          "{0:2}", tgc::estimateToJSON(stepEstimate, *device));
      json->os() << "\n";
      json->keep();
    }
  }

  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  // A write error (a full disk) is reported, and the partial file removed.
  auto finishOutput = [&]() -> bool {
    output->os().flush();
    if (output->os().has_error()) {
      std::error_code code = output->os().error();
      output->os().clear_error();
      fail("could not write '" + outputFile + "': " + code.message());
      return false;
    }
    output->keep();
    return true;
  };
  if (emit == "mlir") {
    module->print(output->os());
    output->os() << "\n";
    return finishOutput() ? 0 : 1;
  }
  output->os().write(reinterpret_cast<const char *>(lowered.bytes.data()),
                     lowered.bytes.size());
  if (!finishOutput())
    return 1;
  llvm::errs() << "tgc-compile: @" << model << " -> " << outputFile << ": "
               << lowered.summary << "\n";
  return 0;
}
