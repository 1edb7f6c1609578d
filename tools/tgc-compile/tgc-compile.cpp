//===- tgc-compile.cpp - compiles a tg model to an executable -------------===//
//
//   tgc-compile model.mlir -o model.tgx [--optimizer=adamw --lr=3e-4 ...]
//       [--memory-report=report.json] [--emit=tgx|mlir]
//
// Parses a module holding one tg.model, runs the training pipeline
// (lib/Pipelines), plans the memory of the training step (tg-plan-memory)
// and, in the same pass-manager run, lowers the step with that very plan
// (the MemoryPlanAnalysis is computed once) into the .tgx executable the
// runtime runs.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Remat.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Target/TGX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

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
                 cl::desc("Write the memory plan as JSON to this file and a "
                          "Chrome trace to <file>.trace.json"),
                 cl::cat(category));
static cl::opt<int64_t> alignment("alignment",
                                  cl::desc("Buffer alignment in bytes"),
                                  cl::init(256), cl::cat(category));

// The training pipeline's options (tgc::TrainPipelineOptions).
static cl::list<std::string>
    freeze("freeze",
           cl::desc("Freeze the parameters matching these globs on their "
                    "names, e.g. 'transformer.wte.*,transformer.h.[0-5].*' "
                    "(tg-freeze)"),
           cl::CommaSeparated, cl::cat(category));
static cl::list<std::string>
    trainOnly("train-only",
              cl::desc("Train only the parameters matching these globs; "
                       "freeze the rest (tg-freeze)"),
              cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string>
    lora("lora",
         cl::desc("Add LoRA adapters and train only them (and --train-only): "
                  "rank=8,alpha=16,targets=c_attn,c_proj (tg-lora)"),
         cl::cat(category));
static cl::opt<std::string>
    frozenDtype("frozen-dtype",
                cl::desc("Store frozen f32 parameters in 16 bits: none, bf16 "
                         "or f16 (loaded from f32 or 16-bit weights)"),
                cl::init("none"), cl::cat(category));
static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("Optimizer: adamw or sgd"),
                                      cl::init("adamw"), cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(1e-3),
                          cl::cat(category));
static cl::opt<double> beta1("beta1", cl::desc("AdamW beta1"), cl::init(0.9),
                             cl::cat(category));
static cl::opt<double> beta2("beta2", cl::desc("AdamW beta2"),
                             cl::init(0.999), cl::cat(category));
static cl::opt<double> eps("eps", cl::desc("AdamW epsilon"), cl::init(1e-8),
                           cl::cat(category));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Weight decay (default: 0.01 adamw, 0 sgd)"),
                cl::init(-1.0), cl::cat(category));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"),
                                cl::init(0.0), cl::cat(category));
static cl::opt<double> dampening("dampening", cl::desc("SGD dampening"),
                                 cl::init(0.0), cl::cat(category));
static cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                              cl::init(false), cl::cat(category));
static cl::opt<std::string> amp("amp",
                                cl::desc("Mixed precision: none, bf16 or f16"),
                                cl::init("none"), cl::cat(category));
static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("Loss scaling: auto (dynamic for f16), dynamic, static:<value> "
             "or none"),
    cl::init("auto"), cl::cat(category));
static cl::opt<double> initScale("init-scale",
                                 cl::desc("Initial dynamic loss scale"),
                                 cl::init(65536.0), cl::cat(category));
static cl::opt<double> growthFactor("growth-factor",
                                    cl::desc("Loss-scale growth factor"),
                                    cl::init(2.0), cl::cat(category));
static cl::opt<double> backoffFactor("backoff-factor",
                                     cl::desc("Loss-scale backoff factor"),
                                     cl::init(0.5), cl::cat(category));
static cl::opt<int64_t>
    growthInterval("growth-interval",
                   cl::desc("Finite steps before the loss scale grows"),
                   cl::init(2000), cl::cat(category));
static cl::opt<std::string> remat(
    "remat",
    cl::desc("Rematerialization: none, selective, blocks or "
             "budget=<bytes, e.g. 6GiB> (tg-remat)"),
    cl::init("none"), cl::cat(category));
static cl::opt<double>
    clipGradNorm("clip-grad-norm",
                 cl::desc("Clip the gradients' global 2-norm (0: off)"),
                 cl::init(0.0), cl::cat(category));

namespace {
/// The last pass of tgc-compile: lowers the training step into the
/// executable's bytes with the plan tg-plan-memory computed (the analysis
/// is preserved between them, so it is not computed again).
struct LowerToTGXPass
    : public PassWrapper<LowerToTGXPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToTGXPass)

  LowerToTGXPass(std::string stepName, std::string model, std::string options,
                 std::vector<uint8_t> &bytes, std::string &summary)
      : stepName(std::move(stepName)), model(std::move(model)),
        options(std::move(options)), bytes(bytes), summary(summary) {}

  StringRef getArgument() const final { return "tgc-lower-to-tgx"; }

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(stepName);
    if (!step) {
      getOperation().emitError("the pipeline produced no training step @")
          << stepName;
      return signalPassFailure();
    }
    const tgc::MemoryPlan *plan =
        getChildAnalysis<tgc::MemoryPlanAnalysis>(step).getPlan(alignment);
    if (!plan ||
        failed(tgc::writeTGX(step, *plan, model, options, bytes)))
      return signalPassFailure();
    llvm::raw_string_ostream os(summary);
    os << plan->schedule.size() << " ops, persistent "
       << tgc::formatBytes(plan->persistentSize) << ", arena "
       << tgc::formatBytes(plan->layout.arenaSize) << " (peak live "
       << tgc::formatBytes(plan->layout.peakLive) << ")";
    if (!plan->recomputed.empty())
      os << ", " << plan->recomputed.size() << " ops recomputed";
    markAllAnalysesPreserved();
  }

  std::string stepName, model, options;
  std::vector<uint8_t> &bytes;
  std::string &summary;
};
} // namespace

static int fail(const llvm::Twine &message) {
  llvm::errs() << "tgc-compile: error: " << message << "\n";
  return 1;
}

/// The compile options as one line, recorded in the executable.
static std::string describeOptions() {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "optimizer=" << optimizer << " lr=" << lr << " beta1=" << beta1
     << " beta2=" << beta2 << " eps=" << eps << " weight-decay=" << weightDecay
     << " momentum=" << momentum << " dampening=" << dampening
     << " nesterov=" << (nesterov ? "true" : "false")
     << " clip-grad-norm=" << clipGradNorm << " amp=" << amp
     << " loss-scale=" << lossScale << " init-scale=" << initScale
     << " growth-factor=" << growthFactor << " backoff-factor="
     << backoffFactor << " growth-interval=" << growthInterval
     << " remat=" << remat;
  if (!freeze.empty())
    os << " freeze=" << llvm::join(freeze, ",");
  if (!trainOnly.empty())
    os << " train-only=" << llvm::join(trainOnly, ",");
  if (frozenDtype != "none")
    os << " frozen-dtype=" << frozenDtype;
  if (!lora.empty())
    os << " lora=" << lora;
  return out;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "tgc-compile: compiles a tg model into a "
                              "training-step executable\n");
  if (emit != "tgx" && emit != "mlir")
    return fail("--emit must be tgx or mlir, found '" + emit + "'");
  if (frozenDtype != "none" && frozenDtype != "bf16" && frozenDtype != "f16")
    return fail("--frozen-dtype must be none, bf16 or f16, found '" +
                frozenDtype + "'");
  if (amp != "none" && amp != "bf16" && amp != "f16")
    return fail("--amp must be none, bf16 or f16, found '" + amp + "'");
  if (remat != "none" && remat != "selective" && remat != "blocks") {
    StringRef budget = remat;
    if (!budget.consume_front("budget=") && !budget.consume_front("budget:"))
      return fail("--remat must be none, selective, blocks or budget=<size>, "
                  "found '" + remat + "'");
    if (!tgc::parseByteSize(budget.str()))
      return fail("--remat=budget= needs a positive size such as 6GiB, "
                  "512MiB or 1000000 (bytes), found '" + budget + "'");
  }

  MLIRContext context;
  context.loadDialect<tgc::tg::TGDialect, func::FuncDialect>();
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("could not parse '" + inputFile + "'");

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

  tgc::TrainPipelineOptions options;
  options.freeze = freeze;
  options.trainOnly = trainOnly;
  options.frozenDtype = frozenDtype;
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
        if (value.getAsDouble(alpha) || !(alpha > 0.0))
          return fail("--lora: alpha must be a positive number, found '" +
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
  options.optimizer = optimizer;
  options.lr = lr;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.eps = eps;
  options.weightDecay = weightDecay;
  options.momentum = momentum;
  options.dampening = dampening;
  options.nesterov = nesterov;
  options.clipGradNorm = clipGradNorm;
  options.amp = amp;
  options.lossScale = lossScale;
  options.initScale = initScale;
  options.growthFactor = growthFactor;
  options.backoffFactor = backoffFactor;
  options.growthInterval = growthInterval;
  options.remat = remat;
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return fail("--alignment must be a power of two");

  PassManager pm(&context);
  tgc::buildTrainPipeline(pm, options);
  std::vector<uint8_t> bytes;
  std::string summary;
  if (emit == "tgx") {
    tgc::tg::TGPlanMemoryOptions planning;
    planning.memoryReport = memoryReport;
    planning.alignment = alignment;
    planning.printReport = false;
    pm.addPass(tgc::tg::createTGPlanMemory(planning));
    pm.addPass(std::make_unique<LowerToTGXPass>(model + "_train_step", model,
                                                describeOptions(), bytes,
                                                summary));
  }
  if (failed(pm.run(*module)))
    return fail("the training pipeline failed");

  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  if (emit == "mlir") {
    module->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }
  output->os().write(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
  output->keep();
  llvm::errs() << "tgc-compile: @" << model << " -> " << outputFile << ": "
               << summary << "\n";
  return 0;
}
