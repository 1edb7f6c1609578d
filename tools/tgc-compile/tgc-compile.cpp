//===- tgc-compile.cpp - compiles a tg model to an executable -------------===//
//
//   tgc-compile model.mlir -o model.tgx [--optimizer=adamw --lr=3e-4 ...]
//       [--memory-report=report.json] [--emit=tgx|mlir]
//
// Flags in, a tgc::CompileRequest out to tgc::compileModel
// (lib/Pipelines/Compile.cpp), which parses the module holding one
// tg.model, runs the training pipeline, plans the step's memory and lowers
// it into the .tgx executable the runtime runs. Every TrainPipelineOptions
// option is a flag here too, parsed by the pipeline's own parser.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Pipelines/Compile.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Support/UserFiles.h"
#include "tgc/Tools/CommandLine.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

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
             "(see docs/performance.md)"),
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

static int fail(const llvm::Twine &message) {
  llvm::errs() << "tgc-compile: error: " << message << "\n";
  return 1;
}

/// Splits argv into tgc-compile's own flags (left in `own`) and the
/// pipeline's (`--name=value`, `--name value` or a bare boolean `--name`),
/// returned as the pipeline parser's text, which rejects unknown names.
static LogicalResult splitArguments(int argc, char **argv,
                                    std::vector<char *> &own,
                                    std::string &pipeline, bool &worldSizeAuto,
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
    // --world-size auto is the compile's search (with --fit), not a
    // number for the pipeline.
    if (name == "world-size" &&
        (value == "auto" || (!body.contains('=') && i + 1 < argc &&
                             StringRef(argv[i + 1]) == "auto"))) {
      worldSizeAuto = true;
      i += body.contains('=') ? 0 : 1;
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
  bool worldSizeAuto = false;
  if (failed(splitArguments(argc, argv, own, pipelineText, worldSizeAuto,
                            splitError)))
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
  tgc::CompileRequest request;
  request.input = inputFile;
  request.output = outputFile;
  request.emit = emit;
  request.model = modelName;
  request.memoryReport = memoryReport;
  request.maxConstantBytes = maxConstantBytes;
  request.batch = batchSize;
  request.memoryBudget = memoryBudget;
  request.globalBatch = globalBatch;
  request.globalBatchGiven = globalBatch.getNumOccurrences() > 0;
  if (fitBudget.getNumOccurrences())
    request.fit = fitBudget;
  request.fitReserve = fitReserve;
  request.fitReserveGiven = fitReserve.getNumOccurrences() > 0;
  request.fitAllow = fitAllow;
  request.fitAllowGiven = fitAllow.getNumOccurrences() > 0;
  request.worldSizeAuto = worldSizeAuto;
  request.estimate = estimate;
  request.estimateJSON = estimateJSON;
  request.allowTF32 = allowTF32;
  request.seqBuckets.assign(seqBuckets.begin(), seqBuckets.end());
  request.alignment = alignment;
  request.lora = lora;
  std::string error;
  if (!tgc::compileModel(request, options, llvm::errs(), llvm::outs(), error))
    return fail(error);
  return 0;
}
