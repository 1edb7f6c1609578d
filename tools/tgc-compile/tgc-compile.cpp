//===- tgc-compile.cpp - compiles a tg model to an executable -------------===//
//
//   tgc-compile model.mlir -o model.tgx [--optimizer=adamw --lr=3e-4 ...]
//       [--memory-report=report.json] [--emit=tgx|mlir]
//
// Parses a module holding one tg.model, runs the training pipeline
// (lib/Pipelines), plans the memory of the training step and writes the
// .tgx executable the runtime runs.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Target/TGX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
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
static cl::opt<double>
    clipGradNorm("clip-grad-norm",
                 cl::desc("Clip the gradients' global 2-norm (0: off)"),
                 cl::init(0.0), cl::cat(category));

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
     << backoffFactor << " growth-interval=" << growthInterval;
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
  if (amp != "none" && amp != "bf16" && amp != "f16")
    return fail("--amp must be none, bf16 or f16, found '" + amp + "'");

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
  PassManager pm(&context);
  tgc::buildTrainPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("the training pipeline failed");

  auto step = module->lookupSymbol<func::FuncOp>(model + "_train_step");
  if (!step)
    return fail("the pipeline produced no training step for @" + model);

  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  if (emit == "mlir") {
    module->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }

  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return fail("--alignment must be a power of two");
  FailureOr<tgc::MemoryPlan> plan = tgc::computeMemoryPlan(step, alignment);
  if (failed(plan))
    return fail("could not plan the memory of the training step");
  if (!memoryReport.empty()) {
    auto json = openOutputFile(memoryReport, &error);
    auto trace =
        json ? openOutputFile(memoryReport + ".trace.json", &error) : nullptr;
    if (!json || !trace)
      return fail(error);
    tgc::writeMemoryReportJSON(*plan, json->os());
    tgc::writeChromeTrace(*plan, trace->os());
    json->keep();
    trace->keep();
  }

  std::vector<uint8_t> bytes;
  if (failed(tgc::writeTGX(step, *plan, model, describeOptions(), bytes)))
    return fail("could not lower the training step to the executable format");
  output->os().write(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
  output->keep();
  llvm::errs() << "tgc-compile: @" << model << " -> " << outputFile << ": "
               << plan->schedule.size() << " ops, persistent "
               << tgc::formatBytes(plan->persistentSize) << ", arena "
               << tgc::formatBytes(plan->layout.arenaSize) << " (peak live "
               << tgc::formatBytes(plan->layout.peakLive) << ")\n";
  return 0;
}
