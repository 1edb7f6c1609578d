//===- Remat.cpp - the tg-remat pass --------------------------------------===//
//
// Glue between a training step and the rematerialization analysis
// (tgc/Analysis/Remat.h): builds the step's buffer graph, asks the policy
// (or the budget solver) which forward values to drop, and rewrites the IR
// to the schedule the analysis planned: recomputing ops are clones marked
// `tg.remat`, inserted before the first backward reader (or before each,
// for a value recomputed for each use), and sunk backward ops move to just
// before their first reader. The rewritten step
// is planned again and must reach exactly the peak the analysis predicted.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Remat.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Summary.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

#define DEBUG_TYPE "tg-remat"

namespace tgc::tg {
#define GEN_PASS_DEF_TGREMAT
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// The name scope of a location: the name of a NameLoc, looked for inside
/// fused and call-site locations too.
static std::optional<StringRef> scopeOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto scope = scopeOf(inner))
        return scope;
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return scopeOf(site.getCallee());
  return std::nullopt;
}

/// The block a scope belongs to: its prefix up to the first component that
/// is an index ("transformer.h.3.attn" -> "transformer.h.3").
static std::optional<std::string> blockKeyOf(StringRef scope) {
  SmallVector<StringRef> parts;
  scope.split(parts, '.');
  for (size_t i = 1; i < parts.size(); ++i)
    if (!parts[i].empty() && llvm::all_of(parts[i], llvm::isDigit))
      return llvm::join(ArrayRef(parts).take_front(i + 1), ".");
  return std::nullopt;
}

static std::string describe(Operation *op) {
  std::string out = op->getName().getStringRef().str();
  if (auto scope = scopeOf(op->getLoc()))
    out += " (" + scope->str() + ")";
  return out;
}

struct RematPass : tgc::tg::impl::TGRematBase<RematPass> {
  using TGRematBase::TGRematBase;

  void runOnOperation() override {
    if (failed(parsePolicy()))
      return signalPassFailure();
    for (auto function : getOperation().getOps<func::FuncOp>())
      // With gradient accumulation the forward pass is in the micro-step;
      // the training step only applies the update.
      if ((function->hasAttr(tg::TGDialect::kTrainStepAttr) &&
           !function->hasAttr(tg::TGDialect::kGradAccumAttr)) ||
          function->hasAttr(tg::TGDialect::kGradStepAttr))
        if (failed(runOnStep(function)))
          return signalPassFailure();
  }

  LogicalResult parsePolicy() {
    std::string error;
    std::optional<RematPolicy> parsed = parseRematPolicy(policy, error);
    if (!parsed)
      return emitError(getOperation().getLoc(), "tg-remat: policy ") << error;
    kind = parsed->kind;
    budget = parsed->budget;
    return success();
  }

  LogicalResult runOnStep(func::FuncOp function) {
    auto start = std::chrono::steady_clock::now();
    FailureOr<StepGraph> built =
        buildStepGraph(function, alignment, /*inPlace=*/true,
                       /*joinCollectives=*/false);
    if (failed(built))
      return failure();
    StepGraph &step = *built;
    if (step.forwardEnd < 0)
      return emitError(function.getLoc(), "tg-remat needs the loss (a result marked "
                                  "tg.loss) to tell the forward pass from "
                                  "the backward pass");
    // The device's persistent bytes (state in host memory, tg-offload,
    // takes none of the budget).
    int64_t persistent = 0;
    for (BlockArgument arg : function.getArguments())
      if (!function.getArgAttr(arg.getArgNumber(), tg::TGDialect::kHostAttr))
        persistent += alignTo(tg::getTensorBytes(arg.getType()), alignment);
    if (!exportGraph.empty() && failed(writeGraph(step, persistent)))
      return failure();

    RematProblem problem = makeRematProblem(step.graph, step.forwardEnd);
    if (!reorder)
      problem.movable.assign(problem.movable.size(), false);
    // Values of ops marked tg.recompute (tg-chunk-loss's products) are
    // dropped under every policy but the budget, whose solver chooses.
    auto withMarked = [&](std::vector<bool> dropped) {
      for (int value : problem.candidates)
        if (step.ops[step.graph.values[value].def]->hasAttr(
                tg::TGDialect::kRecomputeAttr))
          dropped[value] = true;
      return dropped;
    };
    RematChoice choice;
    if (kind == RematPolicy::None) {
      choice = RematChoice(withMarked(chooseNone(problem)));
    } else if (kind == RematPolicy::Selective) {
      choice = RematChoice(withMarked(chooseSelective(problem)));
    } else if (kind == RematPolicy::Blocks) {
      std::vector<int> blocks;
      int count = findBlocks(step, blocks);
      if (count < 2)
        return emitError(function.getLoc(), "tg-remat: policy 'blocks' found ")
               << count
               << " blocks; it needs repeated blocks, named by the forward "
                  "ops' name scopes with an index ('layers.0', "
                  "'transformer.h.0'). Use 'selective' or 'budget=<size>'";
      choice = RematChoice(withMarked(chooseBlocks(problem, blocks)));
    } else {
      std::vector<int> blocks;
      bool haveBlocks = findBlocks(step, blocks) >= 2;
      RematSolution solution = solveRematBudget(
          problem, budget, persistent, haveBlocks ? &blocks : nullptr);
      if (solution.feasible && solution.simulatedPeak != solution.peak)
        return emitError(function.getLoc(),
                         "internal error in tg-remat: the solver simulated a "
                         "peak of ")
               << solution.simulatedPeak << " bytes, the schedule has "
               << solution.peak;
      if (!solution.feasible)
        return emitError(function.getLoc(), "tg-remat: no choice of "
                                            "recomputation fits the budget of ")
               << formatBytes(budget) << " (" << budget
               << " bytes): the smallest planned peak tgc reaches is "
               << formatBytes(persistent + solution.arena) << " ("
               << persistent + solution.arena
               << " bytes: persistent " << formatBytes(persistent)
               << " + transient " << formatBytes(solution.arena)
               << "), which --remat=budget="
               << persistent + solution.arena << " reaches by recomputing "
               << buildRematSchedule(problem, solution.choice).recomputedNodes
               << " ops";
      choice = solution.choice;
      evaluations = solution.evaluations;
    }
    int64_t before = computePeak(step.graph).bytes;
    RematSchedule schedule = buildRematSchedule(problem, choice);
    int64_t predicted = computePeak(schedule.graph).bytes;
    rewrite(function, step, choice, schedule);

    // The rewritten step must be exactly the schedule the analysis planned.
    FailureOr<StepGraph> after =
        buildStepGraph(function, alignment, /*inPlace=*/true,
                       /*joinCollectives=*/false);
    if (failed(after))
      return failure();
    int64_t planned = computePeak(after->graph).bytes;
    if (planned != predicted)
      return emitError(function.getLoc(), "internal error in tg-remat: the "
                                  "rewritten step peaks at ")
             << planned << " bytes, the analysis predicted " << predicted;

    if (kind != RematPolicy::None) {
      int64_t flops = 0;
      for (const BufferGraph::Node &node : step.graph.nodes)
        flops += node.flops;
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "@" << function.getSymName() << " policy " << policy << ": "
         << schedule.recomputedNodes << " ops recomputed, added FLOPs "
         << schedule.addedFlops << " ("
         << llvm::format("%.2f", flops ? 100.0 * double(schedule.addedFlops) /
                                             double(flops)
                                       : 0.0)
         << "% of " << flops << "), peak live " << before << " -> " << planned
         << " bytes (persistent " << persistent << "), "
         << llvm::format("%.1f", ms) << " ms";
      if (kind == RematPolicy::Budget)
        os << " (" << evaluations << " schedules evaluated)";
      tg::reportSummary(function.getLoc(), "tg-remat", function.getSymName(), line,
                    {{"recomputed_ops", int64_t(schedule.recomputedNodes)},
                     {"added_flops", int64_t(schedule.addedFlops)},
                     {"peak_before", int64_t(before)},
                     {"peak_after", int64_t(planned)}},
                    printSummary);
    }
    return success();
  }

  /// Each forward node's block (-1 outside blocks), from the name scopes;
  /// returns how many blocks there are.
  int findBlocks(const StepGraph &step, std::vector<int> &blockOf) {
    blockOf.assign(step.graph.nodes.size(), -1);
    llvm::StringMap<int> ids;
    for (int i = 0; i <= step.forwardEnd; ++i) {
      std::optional<StringRef> scope = scopeOf(step.ops[i]->getLoc());
      if (!scope)
        continue;
      if (std::optional<std::string> key = blockKeyOf(*scope))
        blockOf[i] = ids.try_emplace(*key, int(ids.size())).first->second;
    }
    return int(ids.size());
  }

  /// Reorders and clones the step's ops into the analysis's schedule.
  void rewrite(func::FuncOp function, const StepGraph &step,
               const RematChoice &choice, const RematSchedule &schedule) {
    Block &body = function.getBody().front();
    Operation *terminator = body.getTerminator();
    OpBuilder builder(terminator);
    auto isDropped = [&](Value value) {
      auto it = step.valueOf.find(value);
      return it != step.valueOf.end() && choice.isDropped(it->second);
    };
    // The latest backward copy of each dropped value (and of views of it:
    // a view is made again when its source has a newer copy).
    llvm::DenseMap<Value, Value> copyOf;
    std::function<Value(Value)> remap = [&](Value value) -> Value {
      auto reshape = value.getDefiningOp<tg::ReshapeOp>();
      if (reshape && isDropped(value)) {
        Value source = remap(reshape.getInput());
        if (auto it = copyOf.find(value);
            it != copyOf.end() &&
            it->second.getDefiningOp()->getOperand(0) == source)
          return it->second;
        if (source != reshape.getInput()) {
          Operation *view = builder.clone(*reshape);
          view->setOperand(0, source);
          view->setAttr(tg::TGDialect::kRematAttr, builder.getUnitAttr());
          copyOf[value] = view->getResult(0);
          return view->getResult(0);
        }
        return value;
      }
      if (auto it = copyOf.find(value); it != copyOf.end())
        return it->second;
      return value;
    };
    for (const RematSchedule::Entry &entry : schedule.entries) {
      Operation *op = step.ops[entry.node];
      if (op == terminator) {
        for (OpOperand &operand : op->getOpOperands())
          operand.set(remap(operand.get()));
        continue;
      }
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(remap(operand));
      if (!entry.recompute) {
        op->setOperands(operands);
        op->moveBefore(terminator);
        continue;
      }
      Operation *clone = builder.clone(*op);
      clone->setOperands(operands);
      clone->setAttr(tg::TGDialect::kRematAttr, builder.getUnitAttr());
      for (auto [original, copy] :
           llvm::zip(op->getResults(), clone->getResults()))
        if (isDropped(original))
          copyOf[original] = copy;
    }
  }

  LogicalResult writeGraph(const StepGraph &step, int64_t persistent) {
    std::vector<std::string> names;
    std::vector<bool> forward;
    for (auto [i, op] : llvm::enumerate(step.ops)) {
      names.push_back(describe(op));
      forward.push_back(int(i) <= step.forwardEnd);
    }
    std::string error;
    auto file = openOutputFile(exportGraph, &error);
    if (!file)
      return emitError(getOperation().getLoc(), "tg-remat: ") << error;
    file->os() << writeBufferGraphJSON(step.graph, names, forward, persistent);
    file->keep();
    return success();
  }

  RematPolicy::Kind kind = RematPolicy::None;
  int64_t budget = 0;
  int evaluations = 0;
};

} // namespace
