//===- LowerToTGX.cpp - the pipeline's last pass --------------------------===//

#include "tgc/Target/LowerToTGX.h"

#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Target/TGX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace tgc {
namespace {

struct LowerToTGXPass
    : public PassWrapper<LowerToTGXPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToTGXPass)

  /// tgc-opt's: options from the command line, the bytes to `output`.
  LowerToTGXPass() = default;
  /// tgc-compile's: the bytes and summary to `result`.
  LowerToTGXPass(const LowerToTGXOptions &options,
                 const std::vector<TGXBucket> &buckets, TGXOutput &result)
      : given(options), buckets(&buckets), result(&result) {}
  LowerToTGXPass(const LowerToTGXPass &other)
      : PassWrapper(other), given(other.given), buckets(other.buckets),
        result(other.result) {}

  StringRef getArgument() const final { return "tgc-lower-to-tgx"; }
  StringRef getDescription() const final {
    return "Lower the planned training step and its entry points to a .tgx "
           "executable (after tg-plan-memory)";
  }

  void runOnOperation() override;

  /// Writes the memory report of one more entry point beside the training
  /// step's.
  LogicalResult writeReport(StringRef report, StringRef entry,
                            const MemoryPlan &plan);

  Option<std::string> outputFile{*this, "output",
                                 llvm::cl::desc("The .tgx file to write")};
  Option<std::string> modelName{
      *this, "model",
      llvm::cl::desc("The tg.model function (default: the only one)")};
  Option<std::string> memoryReport{
      *this, "memory-report",
      llvm::cl::desc("Write each other entry point's plan to "
                     "<memory-report>.<entry>.json")};
  Option<int64_t> alignment{*this, "alignment",
                            llvm::cl::desc("tg-plan-memory's alignment"),
                            llvm::cl::init(256)};
  Option<bool> allowTF32{
      *this, "allow-tf32",
      llvm::cl::desc("Let the CUDA backend run f32 GEMMs on TF32"),
      llvm::cl::init(false)};

  LowerToTGXOptions given;
  const std::vector<TGXBucket> *buckets = nullptr;
  TGXOutput *result = nullptr;
};

LogicalResult LowerToTGXPass::writeReport(StringRef report, StringRef entry,
                                          const MemoryPlan &plan) {
  if (report.empty())
    return success();
  std::string error;
  auto json = openOutputFile((report + "." + entry + ".json").str(), &error);
  if (!json)
    return getOperation().emitError("tgc-lower-to-tgx: ") << error;
  writeMemoryReportJSON(plan, json->os());
  json->keep();
  return success();
}

void LowerToTGXPass::runOnOperation() {
  ModuleOp module = getOperation();
  LowerToTGXOptions options = given;
  if (!result) {
    options.model = modelName;
    options.memoryReport = memoryReport;
    options.alignment = alignment;
    options.allowTF32 = allowTF32;
    if (outputFile.empty()) {
      module.emitError("tgc-lower-to-tgx needs output=FILE");
      return signalPassFailure();
    }
  }
  static const std::vector<TGXBucket> none;
  const std::vector<TGXBucket> &shapeBuckets = buckets ? *buckets : none;

  // The model: named, or the only function marked tg.model.
  if (options.model.empty()) {
    for (auto function : module.getOps<func::FuncOp>())
      if (function->hasAttr(tg::TGDialect::kModelAttr)) {
        if (!options.model.empty()) {
          module.emitError("tgc-lower-to-tgx: several tg.model functions; "
                           "choose one with model=NAME");
          return signalPassFailure();
        }
        options.model = function.getSymName().str();
      }
    if (options.model.empty()) {
      module.emitError("tgc-lower-to-tgx: no function is marked tg.model");
      return signalPassFailure();
    }
  }
  std::string stepName = options.model + "_train_step";
  auto step = module.lookupSymbol<func::FuncOp>(stepName);
  if (!step) {
    module.emitError("the pipeline produced no training step @") << stepName;
    return signalPassFailure();
  }
  const MemoryPlan *plan =
      getChildAnalysis<MemoryPlanAnalysis>(step).getPlan(options.alignment);
  if (!plan)
    return signalPassFailure();
  // Other entry points over the same persistent tensors, each planned on
  // its own, with its memory report beside the training step's: gradient
  // accumulation's micro-step, and the evaluation step (the model's
  // forward pass and loss: no gradient memory).
  std::vector<TGXEntry> entries;
  auto addEntry = [&](StringRef name, func::FuncOp function,
                      const MemoryPlan *entryPlan = nullptr,
                      int64_t bucket = 0,
                      bool trains = false) -> LogicalResult {
    if (!entryPlan)
      entryPlan = getChildAnalysis<MemoryPlanAnalysis>(function).getPlan(
          options.alignment);
    if (!entryPlan)
      return failure();
    entries.push_back({name.str(), function, entryPlan, bucket, trains});
    return writeReport(options.memoryReport, name, *entryPlan);
  };
  if (auto accum =
          step->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGradAccumAttr)) {
    auto micro = module.lookupSymbol<func::FuncOp>(
        accum.getAs<FlatSymbolRefAttr>("grad_step").getValue());
    if (!micro) {
      step.emitOpError("names a gradient micro-step that does not exist");
      return signalPassFailure();
    }
    if (failed(addEntry("grad_step", micro)))
      return signalPassFailure();
  }
  TGXInfo info;
  info.model = options.model;
  info.options = options.options;
  info.allowTF32 = options.allowTF32;
  info.hfConfig = options.hfConfig;
  info.hfConfigError = options.hfConfigError;
  info.seqLen = shapeBuckets.empty() ? 0 : options.seqLen;
  if (auto forward = module.lookupSymbol<func::FuncOp>(options.model)) {
    if (auto task = forward->getAttrOfType<StringAttr>(tg::TGDialect::kTaskAttr))
      info.task = task.getValue().str();
    if (auto loss =
            forward->getAttrOfType<StringAttr>(tg::TGDialect::kPreferenceAttr))
      info.preference = loss.getValue().str();
    if (failed(addEntry("eval_step", forward)))
      return signalPassFailure();
  }
  // The smaller shape buckets, planned in their own modules.
  for (const TGXBucket &bucket : shapeBuckets) {
    std::string suffix = ("@" + Twine(bucket.seqLen)).str();
    if (failed(addEntry("train_step" + suffix, bucket.train,
                        &bucket.trainPlan, bucket.seqLen,
                        /*trains=*/true)) ||
        failed(addEntry("eval_step" + suffix, bucket.eval, &bucket.evalPlan,
                        bucket.seqLen)))
      return signalPassFailure();
  }
  TGXOutput own;
  TGXOutput &out = result ? *result : own;
  if (failed(writeTGX(step, *plan, info, entries, out.bytes)))
    return signalPassFailure();
  llvm::raw_string_ostream os(out.summary);
  os << plan->schedule.size() << " ops, persistent "
     << formatBytes(plan->devicePersistentSize());
  if (plan->hostSize)
    os << " (and " << formatBytes(plan->hostSize) << " in host memory)";
  os << ", arena "
     << formatBytes(plan->layout.arenaSize) << " (peak live "
     << formatBytes(plan->layout.peakLive) << ")";
  if (!plan->recomputed.empty())
    os << ", " << plan->recomputed.size() << " ops recomputed";
  int64_t arena = plan->layout.arenaSize;
  for (const TGXEntry &entry : entries) {
    os << "; " << entry.name << ": " << entry.plan->schedule.size()
       << " ops, arena " << formatBytes(entry.plan->layout.arenaSize);
    arena = std::max(arena, entry.plan->layout.arenaSize);
  }
  os << "; allocates " << formatBytes(plan->devicePersistentSize() + arena);
  if (plan->hostSize)
    os << " on the device and " << formatBytes(plan->hostSize)
       << " of pinned host memory";
  // Data parallelism: the plan is one rank's; what it sends a step.
  if (auto parallel = step->getAttrOfType<DictionaryAttr>(
          tg::TGDialect::kDataParallelAttr)) {
    int64_t sent = 0;
    step.walk([&](tg::CostOpInterface op) {
      sent += op.getBytesCommunicated();
    });
    // With accumulation, the micro-step's K times (zero2 and zero3
    // reduce-scatter each micro-step's gradients).
    if (auto accum =
            step->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGradAccumAttr))
      if (auto micro = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              step, accum.getAs<FlatSymbolRefAttr>("grad_step")))
        micro.walk([&](tg::CostOpInterface op) {
          sent += accum.getAs<IntegerAttr>("steps").getInt() *
                  op.getBytesCommunicated();
        });
    os << "; per rank of " << parallel.getAs<IntegerAttr>("world_size").getInt()
       << " (" << parallel.getAs<StringAttr>("mode").getValue();
    if (auto group = parallel.getAs<IntegerAttr>("shard_group"))
      os << ", shards across " << group.getInt();
    os << "): sends " << formatBytes(sent) << " a step";
  }
  os.flush();
  if (!result) {
    std::string error;
    auto file = openOutputFile(outputFile, &error);
    if (!file) {
      module.emitError("tgc-lower-to-tgx: ") << error;
      return signalPassFailure();
    }
    file->os().write(reinterpret_cast<const char *>(own.bytes.data()),
                     own.bytes.size());
    file->os().flush();
    if (file->os().has_error()) {
      std::error_code code = file->os().error();
      file->os().clear_error();
      module.emitError("tgc-lower-to-tgx: could not write '")
          << outputFile << "': " << code.message();
      return signalPassFailure();
    }
    file->keep();
  }
  markAllAnalysesPreserved();
}

} // namespace

std::unique_ptr<Pass>
createLowerToTGXPass(const LowerToTGXOptions &options,
                     const std::vector<TGXBucket> &buckets,
                     TGXOutput &output) {
  return std::make_unique<LowerToTGXPass>(options, buckets, output);
}

void registerLowerToTGXPass() { PassRegistration<LowerToTGXPass>(); }

} // namespace tgc
