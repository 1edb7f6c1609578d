//===- MemoryPlan.cpp - static memory plan of a training step -------------===//
//
// Liveness over the fixed schedule, in-place updates of persistent tensors,
// arena placement (ArenaLayout.h), and the reports (text, JSON, Chrome trace).
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Analysis/Report.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace tgc {

//===----------------------------------------------------------------------===//
// Planning a function
//===----------------------------------------------------------------------===//

const char *stringifyMemoryKind(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Param:
    return "params";
  case MemoryKind::FrozenParam:
    return "frozen_params";
  case MemoryKind::OptimizerState:
    return "optimizer_state";
  case MemoryKind::GradAccumulator:
    return "grad_accumulators";
  case MemoryKind::OffloadedActivation:
    return "host_activations";
  case MemoryKind::Input:
    return "inputs";
  case MemoryKind::Activation:
    return "activations";
  case MemoryKind::Gradient:
    return "grads";
  case MemoryKind::Workspace:
    return "workspace";
  }
  return "unknown";
}

int64_t MemoryPlan::persistentBytes(MemoryKind kind, bool deviceOnly) const {
  int64_t total = 0;
  for (const PersistentTensor &tensor : persistent)
    if (tensor.kind == kind && !(deviceOnly && tensor.host))
      total += tensor.bytes;
  return total;
}

MemoryKind PlannedBuffer::kindAt(int64_t step) const {
  MemoryKind current = kind;
  for (auto [from, held] : holds)
    if (from <= step)
      current = held;
  return current;
}

int64_t MemoryPlan::liveBytesAt(int64_t step, MemoryKind kind) const {
  int64_t total = 0;
  for (const PlannedBuffer &buffer : buffers)
    if (buffer.start <= step && step <= buffer.end &&
        buffer.kindAt(step) == kind)
      total += buffer.alignedBytes;
  return total;
}

/// Whether result `result` of `op` may be written over operand `operand`.
static bool canReuse(Operation *op, unsigned result, unsigned operand) {
  auto inPlace = dyn_cast<tg::InPlaceOpInterface>(op);
  return inPlace && inPlace.canReuseOperandBuffer(result, operand);
}

/// Collectives overlap compute: a backend may run tg.all_reduce,
/// tg.reduce_scatter and tg.all_gather beside the ops after them, one at
/// a time. The runtime joins each right before the first later op, not
/// itself a view, that reads its operand or result (or that operand's
/// persistent tensor) or is the next such collective, else after the last
/// op (collectiveJoins in tgc/runtime/Program.h: the same rule on the
/// executable's memory). Until then its operand and result are in use:
/// the op before the join reads them here too (the result alone when it
/// takes the operand's buffer), and the op after it may take their
/// buffers.
static void keepCollectivesMemory(StepGraph &step) {
  BufferGraph &graph = step.graph;
  auto overlaps = [](Operation *op) {
    return isa<tg::AllReduceOp, tg::ReduceScatterOp, tg::AllGatherOp>(op);
  };
  auto valueOf = [&](Value value) {
    auto it = step.valueOf.find(value);
    return it == step.valueOf.end() ? -1 : it->second;
  };
  auto opOf = [&](int node) { return step.ops[size_t(graph.nodes[node].op)]; };
  int last = int(graph.nodes.size()) - 1;
  // Each collective's node and the op before which it is joined.
  std::vector<std::pair<int, int>> touched;
  for (int c = 0; c <= last; ++c) {
    Operation *op = opOf(c);
    if (!overlaps(op))
      continue;
    Value operand = op->getOperand(0);
    int in = valueOf(operand), out = valueOf(op->getResult(0));
    int first = -1; // after the last op
    for (int n = c + 1; n <= last; ++n) {
      const BufferGraph::Node &node = graph.nodes[n];
      Operation *user = opOf(n);
      if (isa<tg::ReshapeOp>(user) && node.outputs.empty())
        continue;
      if (overlaps(user) || (in >= 0 && llvm::is_contained(node.inputs, in)) ||
          (out >= 0 && llvm::is_contained(node.inputs, out)) ||
          llvm::is_contained(user->getOperands(), operand) ||
          llvm::is_contained(user->getOperands(), op->getResult(0))) {
        first = n;
        break;
      }
    }
    touched.push_back({c, first});
  }
  for (auto [c, join] : touched) {
    Operation *op = opOf(c);
    int in = valueOf(op->getOperand(0)), out = valueOf(op->getResult(0));
    // Live through the op before the join: the op there may take them.
    int through = join < 0 ? last : join - 1;
    if (through == c)
      continue;
    // The result takes the dying operand's buffer (an in-place
    // all-reduce): keeping the result keeps that buffer. (Only earlier
    // collectives' joins have added reads of the operand so far, and no
    // later one adds any.)
    bool inPlace =
        in >= 0 && out >= 0 &&
        graph.values[in].bytes == graph.values[out].bytes &&
        llvm::is_contained(graph.nodes[c].reuse, std::make_pair(out, in)) &&
        llvm::none_of(llvm::seq(c + 1, last + 1), [&](int n) {
          return llvm::is_contained(graph.nodes[n].inputs, in);
        });
    if (in >= 0 && !inPlace)
      graph.nodes[through].inputs.push_back(in);
    if (out >= 0)
      graph.nodes[through].inputs.push_back(out);
  }
}

FailureOr<StepGraph> buildStepGraph(func::FuncOp function, int64_t alignment,
                                    bool inPlace, bool joinCollectives) {
  StepGraph step;
  if (!function.getBody().hasOneBlock())
    return function.emitOpError("the memory planner plans functions of one "
                                "block, found ")
           << function.getBody().getBlocks().size();
  Block &body = function.getBody().front();
  llvm::DenseMap<Operation *, int> stepOf;
  for (Operation &op : body) {
    if (op.getNumRegions() != 0)
      return op.emitOpError("has regions, which the memory planner does not "
                            "plan yet (values used inside them would get no "
                            "lifetime)");
    stepOf[&op] = int(step.ops.size());
    step.ops.push_back(&op);
  }

  llvm::StringMap<unsigned> argByName;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    for (StringRef role : {tg::TGDialect::kParamAttr,
                           tg::TGDialect::kStateAttr})
      if (auto name = function.getArgAttrOfType<StringAttr>(i, role))
        argByName[name.getValue()] = i;
  }

  // In-place updates: the op defining an updated value writes into the
  // persistent tensor, which needs every other read of it to come first.
  llvm::DenseSet<Value> sharedWrites;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (function.getResultAttr(i, tg::TGDialect::kLossAttr)) {
      if (Operation *def = value.getDefiningOp())
        step.forwardEnd = stepOf[def];
      continue;
    }
    if (function.getResultAttr(i, tg::TGDialect::kGradAttr))
      return function.emitOpError("result #")
             << i << " is a gradient ('tg.grad'), which no update consumes; "
                     "run tg-optimizer before planning memory";
    auto name =
        function.getResultAttrOfType<StringAttr>(i, tg::TGDialect::kUpdateAttr);
    if (!name || isa<BlockArgument>(value))
      continue;
    auto target = argByName.find(name.getValue());
    if (target == argByName.end())
      return function.emitOpError("result #")
             << i << " updates '" << name.getValue()
             << "', which is not a parameter or state argument";
    unsigned argNumber = target->second;
    BlockArgument arg = body.getArgument(argNumber);
    Operation *writer = value.getDefiningOp();
    unsigned resultNumber = cast<OpResult>(value).getResultNumber();
    if (step.donatedTo.count(value))
      return writer->emitOpError("produces the update of two persistent "
                                 "tensors; cannot write both in place");
    for (OpOperand &use : arg.getUses()) {
      Operation *reader = use.getOwner();
      if (reader == writer &&
          canReuse(writer, resultNumber, use.getOperandNumber()))
        continue;
      if (reader != writer && stepOf[reader] < stepOf[writer])
        continue;
      InFlightDiagnostic diag =
          writer->emitOpError("cannot update '")
          << name.getValue() << "' in place: ";
      if (reader == writer)
        diag << "the op reads it as operand #" << use.getOperandNumber()
             << " and cannot write its result #" << resultNumber
             << " over it (InPlaceOpInterface)";
      else
        diag << "it is read after this op writes it";
      diag.attachNote(reader->getLoc()) << "read here";
      return diag;
    }
    step.donatedTo[value] = argNumber;
    // A write that other ops' reads must precede (an update of a parameter
    // the forward pass reads), unlike an accumulator only its writer reads.
    if (llvm::any_of(arg.getUses(), [&](OpOperand &use) {
          return use.getOwner() != writer;
        }))
      sharedWrites.insert(value);
  }

  // Values whose cotangent is a parameter's gradient.
  llvm::DenseSet<Value> gradients;
  for (Operation *op : step.ops) {
    if (auto update = dyn_cast<tg::OptimizerUpdateOpInterface>(op))
      gradients.insert(update.getGrad());
    else if (auto multi = dyn_cast<tg::MultiAdamWUpdateOp>(op))
      gradients.insert(multi.getGrads().begin(), multi.getGrads().end());
  }

  BufferGraph &graph = step.graph;
  for (auto [index, op] : llvm::enumerate(step.ops)) {
    int node = int(graph.nodes.size());
    graph.nodes.emplace_back();
    graph.nodes.back().op = int(index);
    if (auto cost = dyn_cast<tg::CostOpInterface>(op)) {
      graph.nodes.back().flops = cost.getFlops();
      graph.nodes.back().bytesMoved =
          cost.getBytesRead() + cost.getBytesWritten();
    }
    for (Value operand : op->getOperands()) {
      auto it = step.valueOf.find(operand);
      if (it != step.valueOf.end())
        graph.nodes[node].inputs.push_back(it->second);
    }
    for (OpResult result : op->getResults()) {
      if (step.donatedTo.count(result)) {
        graph.nodes[node].writesPersistent |= sharedWrites.contains(result);
        continue;
      }
      if (isa<tg::ReshapeOp>(op)) {
        auto source = step.valueOf.find(op->getOperand(0));
        if (source != step.valueOf.end()) {
          // Copied out first: inserting the result may move the map.
          int sourceValue = source->second;
          step.valueOf[result] = sourceValue;
          if (gradients.contains(result))
            step.kinds[sourceValue] = MemoryKind::Gradient;
          continue;
        }
      }
      // A result the op does not compute (its output_mask) takes no memory.
      int64_t bytes = tg::computesResult(op, result.getResultNumber())
                          ? alignTo(tg::getTensorBytes(result.getType()),
                                    alignment)
                          : 0;
      int value = graph.addValue(bytes, node);
      step.valueOf[result] = value;
      graph.nodes[node].outputs.push_back(value);
      MemoryKind kind = MemoryKind::Workspace;
      // An activation brought back from host memory is one still.
      if ((step.forwardEnd >= 0 && int(index) <= step.forwardEnd) ||
          isa<tg::ReloadOp>(op))
        kind = MemoryKind::Activation;
      else if (gradients.contains(result))
        kind = MemoryKind::Gradient;
      step.kinds.push_back(kind);
      for (OpOperand &operand : op->getOpOperands()) {
        auto input = step.valueOf.find(operand.get());
        if (inPlace && input != step.valueOf.end() && input->second != value &&
            canReuse(op, result.getResultNumber(), operand.getOperandNumber()))
          graph.nodes[node].reuse.push_back({value, input->second});
      }
    }
  }
  if (joinCollectives)
    keepCollectivesMemory(step);
  return step;
}

FailureOr<MemoryPlan> computeMemoryPlan(func::FuncOp function,
                                        int64_t alignment, bool inPlace) {
  FailureOr<StepGraph> built = buildStepGraph(function, alignment, inPlace);
  if (failed(built))
    return failure();
  StepGraph &step = *built;
  MemoryPlan plan;
  plan.function = function.getSymName().str();
  plan.alignment = alignment;
  plan.schedule = step.ops;
  plan.forwardEnd = step.forwardEnd;
  plan.donatedTo = step.donatedTo;

  // Persistent tensors, each in its own aligned slot.
  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    PersistentTensor tensor;
    tensor.argNumber = i;
    tensor.bytes = tg::getTensorBytes(arg.getType());
    if (auto name = function.getArgAttrOfType<StringAttr>(
            i, tg::TGDialect::kParamAttr)) {
      tensor.name = name.str();
      tensor.kind = function.getArgAttr(i, tg::TGDialect::kFrozenAttr)
                        ? MemoryKind::FrozenParam
                        : MemoryKind::Param;
    } else if (auto name = function.getArgAttrOfType<StringAttr>(
                   i, tg::TGDialect::kStateAttr)) {
      tensor.name = name.str();
      tensor.kind =
          name.getValue().starts_with(tg::TGDialect::kGradAccumPrefix)
              ? MemoryKind::GradAccumulator
          : name.getValue().starts_with(tg::TGDialect::kOffloadPrefix)
              ? MemoryKind::OffloadedActivation
              : MemoryKind::OptimizerState;
    } else {
      auto input = function.getArgAttrOfType<StringAttr>(
          i, tg::TGDialect::kInputAttr);
      tensor.name = input ? input.str() : "arg" + std::to_string(i);
      tensor.kind = MemoryKind::Input;
    }
    tensor.host = bool(function.getArgAttr(i, tg::TGDialect::kHostAttr));
    plan.persistent.push_back(tensor);
  }
  // Device tensors first, in argument order; then the host part.
  for (bool host : {false, true})
    for (PersistentTensor &tensor : plan.persistent) {
      if (tensor.host != host)
        continue;
      tensor.offset = plan.persistentSize;
      plan.persistentSize += alignTo(tensor.bytes, alignment);
      if (host)
        plan.hostSize += alignTo(tensor.bytes, alignment);
    }

  // The MLIR value defining each graph value.
  std::vector<Value> valueDef(step.graph.values.size());
  for (Operation *op : step.ops)
    for (Value result : op->getResults()) {
      auto it = step.valueOf.find(result);
      if (it != step.valueOf.end() && !valueDef[it->second])
        valueDef[it->second] = result;
    }

  BufferLiveness liveness = computeLiveness(step.graph);
  for (const BufferLiveness::Buffer &live : liveness.buffers) {
    PlannedBuffer buffer;
    Value first = valueDef[live.values.front()];
    buffer.op = first.getDefiningOp();
    buffer.opIndex = step.graph.values[live.values.front()].def;
    buffer.resultNumber = cast<OpResult>(first).getResultNumber();
    buffer.bytes = tg::getTensorBytes(first.getType());
    buffer.alignedBytes = live.bytes;
    buffer.start = live.start;
    buffer.end = live.end;
    buffer.kind = step.kinds[live.values.front()];
    for (int value : live.values)
      buffer.holds.push_back(
          {step.graph.values[value].def, step.kinds[value]});
    plan.reusedBuffers += int64_t(live.values.size()) - 1;
    plan.buffers.push_back(buffer);
  }
  for (auto [value, id] : step.valueOf)
    plan.bufferOfValue[value] = liveness.bufferOf[id];

  for (auto [index, op] : llvm::enumerate(step.ops)) {
    int64_t flops = step.graph.nodes[index].flops;
    plan.totalFlops += flops;
    if (op->hasAttr(tg::TGDialect::kRematAttr)) {
      plan.recomputed.push_back({int64_t(index), op, flops});
      plan.recomputedFlops += flops;
    }
  }

  std::vector<BufferLifetime> lifetimes;
  for (const PlannedBuffer &buffer : plan.buffers)
    lifetimes.push_back({buffer.alignedBytes, buffer.start, buffer.end});
  plan.layout = planArena(lifetimes);
  for (auto [buffer, offset] : llvm::zip(plan.buffers, plan.layout.offsets))
    buffer.offset = offset;
  return plan;
}

MemoryPlanAnalysis::MemoryPlanAnalysis(Operation *op)
    : function(cast<func::FuncOp>(op)) {}

const MemoryPlan *MemoryPlanAnalysis::getPlan(int64_t requested,
                                              bool reuse) {
  if (!computed || requested != alignment || reuse != inPlace) {
    computed = true;
    alignment = requested;
    inPlace = reuse;
    plan = computeMemoryPlan(function, alignment, inPlace);
  }
  return succeeded(plan) ? &*plan : nullptr;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

/// "tg.matmul at transformer.h.0.mlp" for a report line.
static std::string describeOp(Operation *op) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << op->getName();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << " (" << name.getName().getValue() << ")";
  else if (auto file = dyn_cast<FileLineColLoc>(op->getLoc()))
    os << " (line " << file.getLine() << ")";
  return out;
}

static const MemoryKind kTransientKinds[] = {
    MemoryKind::Activation, MemoryKind::Gradient, MemoryKind::Workspace};
static const MemoryKind kPersistentKinds[] = {
    MemoryKind::Param, MemoryKind::FrozenParam, MemoryKind::OptimizerState,
    MemoryKind::GradAccumulator, MemoryKind::OffloadedActivation,
    MemoryKind::Input};

/// Kinds a report lists only when the plan has them.
static bool listed(const MemoryPlan &plan, MemoryKind kind) {
  return (kind != MemoryKind::FrozenParam &&
          kind != MemoryKind::GradAccumulator &&
          kind != MemoryKind::OffloadedActivation) ||
         plan.persistentBytes(kind);
}

void printMemoryReport(const MemoryPlan &plan, llvm::raw_ostream &os,
                       unsigned topBuffers) {
  const ArenaLayout &layout = plan.layout;
  int64_t peakStep = layout.peakStep;
  os << "memory plan of @" << plan.function << " (" << plan.schedule.size()
     << " ops, " << plan.buffers.size() << " transient buffers, alignment "
     << plan.alignment << ")\n";
  os << "  persistent: " << formatBytes(plan.persistentSize);
  if (plan.hostSize)
    os << " (device " << formatBytes(plan.devicePersistentSize())
       << ", host memory " << formatBytes(plan.hostSize) << ")";
  os << "\n";
  for (MemoryKind kind : kPersistentKinds)
    if (listed(plan, kind))
      os << llvm::format("    %-18s", stringifyMemoryKind(kind))
         << formatBytes(plan.persistentBytes(kind)) << "\n";
  double ratio =
      layout.peakLive ? double(layout.arenaSize) / double(layout.peakLive) : 1.0;
  os << "  transient arena: " << formatBytes(layout.arenaSize) << " ("
     << layout.arenaSize << " bytes)\n";
  os << "  peak of live transient bytes: " << formatBytes(layout.peakLive)
     << " (" << layout.peakLive << " bytes), arena/peak "
     << llvm::format("%.4f", ratio) << "\n";
  os << "  total: " << formatBytes(plan.persistentSize + layout.arenaSize);
  if (plan.hostSize)
    os << " (device "
       << formatBytes(plan.devicePersistentSize() + layout.arenaSize)
       << ", host memory " << formatBytes(plan.hostSize) << ")";
  os << "\n";
  os << "  in-place reuse: " << plan.reusedBuffers
     << " results written over a dying operand\n";
  if (!plan.recomputed.empty()) {
    double share = plan.totalFlops ? 100.0 * double(plan.recomputedFlops) /
                                         double(plan.totalFlops - plan.recomputedFlops)
                                   : 0.0;
    os << "  recomputed: " << plan.recomputed.size() << " ops, "
       << formatWithCommas(plan.recomputedFlops) << " FLOPs ("
       << llvm::format("%.1f", share) << "% of the step without them)\n";
  }
  if (plan.schedule.empty())
    return;
  os << "  peak at op #" << peakStep << " "
     << describeOp(plan.schedule[peakStep]) << ", where live:\n";
  for (MemoryKind kind : kPersistentKinds)
    if (listed(plan, kind))
      os << llvm::format("    %-18s", stringifyMemoryKind(kind))
         << formatBytes(plan.persistentBytes(kind, /*deviceOnly=*/true)) << "\n";
  for (MemoryKind kind : kTransientKinds)
    os << llvm::format("    %-18s", stringifyMemoryKind(kind))
       << formatBytes(plan.liveBytesAt(peakStep, kind)) << "\n";
  if (plan.hostSize) {
    int64_t activations =
        plan.persistentBytes(MemoryKind::OffloadedActivation);
    os << "    (and in host memory, not counted: ";
    if (plan.hostSize > activations)
      os << formatBytes(plan.hostSize - activations) << " of optimizer state"
         << (activations ? " and " : "");
    if (activations)
      os << formatBytes(activations) << " of offloaded activations";
    os << ")\n";
  }

  std::vector<const PlannedBuffer *> live;
  for (const PlannedBuffer &buffer : plan.buffers)
    if (buffer.start <= peakStep && peakStep <= buffer.end)
      live.push_back(&buffer);
  std::stable_sort(live.begin(), live.end(),
                   [](const PlannedBuffer *a, const PlannedBuffer *b) {
                     return a->alignedBytes > b->alignedBytes;
                   });
  os << "  largest buffers live at the peak (" << live.size() << " live):\n";
  for (size_t i = 0; i < live.size() && i < topBuffers; ++i)
    os << "    " << llvm::format("%-12s", formatBytes(live[i]->bytes).c_str())
       << llvm::format("%-12s", stringifyMemoryKind(live[i]->kindAt(peakStep)))
       << "#"
       << live[i]->opIndex << " " << describeOp(live[i]->op) << ", live #"
       << live[i]->start << "..#" << live[i]->end << "\n";
}

void writeMemoryReportJSON(const MemoryPlan &plan, llvm::raw_ostream &os) {
  llvm::json::OStream json(os, 2);
  int64_t peakStep = plan.layout.peakStep;
  json.object([&] {
    // Readers (tgc-report) refuse other formats and versions.
    json.attribute("format", "tgc-memory-report");
    json.attribute("version", kMemoryReportVersion);
    json.attribute("function", plan.function);
    json.attribute("alignment", plan.alignment);
    json.attribute("ops", int64_t(plan.schedule.size()));
    json.attribute("arena_bytes", plan.layout.arenaSize);
    json.attribute("peak_live_bytes", plan.layout.peakLive);
    json.attribute("persistent_bytes", plan.persistentSize);
    json.attribute("host_bytes", plan.hostSize);
    json.attribute("reused_buffers", plan.reusedBuffers);
    json.attribute("flops", plan.totalFlops);
    json.attributeObject("remat", [&] {
      json.attribute("recomputed_ops", int64_t(plan.recomputed.size()));
      json.attribute("recomputed_flops", plan.recomputedFlops);
      json.attributeArray("ops", [&] {
        for (const RecomputedOp &op : plan.recomputed)
          json.object([&] {
            json.attribute("op_index", op.opIndex);
            json.attribute("op", describeOp(op.op));
            json.attribute("flops", op.flops);
          });
      });
    });
    json.attributeObject("peak", [&] {
      json.attribute("op_index", peakStep);
      if (!plan.schedule.empty())
        json.attribute("op", describeOp(plan.schedule[peakStep]));
      json.attributeObject("breakdown", [&] {
        for (MemoryKind kind : kPersistentKinds)
          json.attribute(stringifyMemoryKind(kind),
                         plan.persistentBytes(kind, /*deviceOnly=*/true));
        for (MemoryKind kind : kTransientKinds)
          json.attribute(stringifyMemoryKind(kind),
                         plan.liveBytesAt(peakStep, kind));
      });
    });
    // The step op by op: each op's name and the arena's live bytes by
    // kind while it runs (a buffer's kind may change over its life: an
    // activation becomes one saved for the backward pass).
    json.attributeArray("op_names", [&] {
      for (Operation *op : plan.schedule)
        json.value(describeOp(op));
    });
    json.attributeObject("timeline", [&] {
      json.attributeArray("kinds", [&] {
        for (MemoryKind kind : kTransientKinds)
          json.value(stringifyMemoryKind(kind));
      });
      std::vector<std::vector<int64_t>> live(
          plan.schedule.size(),
          std::vector<int64_t>(std::size(kTransientKinds), 0));
      for (const PlannedBuffer &buffer : plan.buffers)
        for (int64_t step = std::max<int64_t>(buffer.start, 0);
             step <= buffer.end && step < int64_t(live.size()); ++step)
          for (size_t k = 0; k < std::size(kTransientKinds); ++k)
            if (buffer.kindAt(step) == kTransientKinds[k])
              live[size_t(step)][k] += buffer.alignedBytes;
      json.attributeArray("bytes", [&] {
        for (const std::vector<int64_t> &row : live)
          json.array([&] {
            for (int64_t bytes : row)
              json.value(bytes);
          });
      });
    });
    json.attributeArray("persistent", [&] {
      for (const PersistentTensor &tensor : plan.persistent)
        json.object([&] {
          json.attribute("name", tensor.name);
          json.attribute("kind", stringifyMemoryKind(tensor.kind));
          json.attribute("bytes", tensor.bytes);
          json.attribute("offset", tensor.offset);
          if (tensor.host)
            json.attribute("host", true);
        });
    });
    json.attributeArray("buffers", [&] {
      for (const PlannedBuffer &buffer : plan.buffers)
        json.object([&] {
          json.attribute("op_index", buffer.opIndex);
          json.attribute("op", describeOp(buffer.op));
          json.attribute("result", int64_t(buffer.resultNumber));
          json.attribute("kind", stringifyMemoryKind(buffer.kind));
          json.attribute("values", int64_t(buffer.holds.size()));
          json.attribute("bytes", buffer.bytes);
          json.attribute("offset", buffer.offset);
          json.attribute("start", buffer.start);
          json.attribute("end", buffer.end);
        });
    });
  });
  os << "\n";
}

void writeChromeTrace(const MemoryPlan &plan, llvm::raw_ostream &os) {
  // One schedule step is drawn as one microsecond.
  llvm::json::OStream json(os);
  json.object([&] {
    json.attributeArray("traceEvents", [&] {
      for (size_t step = 0; step < plan.schedule.size(); ++step) {
        json.object([&] {
          json.attribute("name", "live bytes");
          json.attribute("ph", "C");
          json.attribute("ts", int64_t(step));
          json.attribute("pid", 0);
          json.attributeObject("args", [&] {
            for (MemoryKind kind : kTransientKinds)
              json.attribute(stringifyMemoryKind(kind),
                             plan.liveBytesAt(step, kind));
          });
        });
        json.object([&] {
          json.attribute("name", describeOp(plan.schedule[step]));
          json.attribute("ph", "X");
          json.attribute("ts", int64_t(step));
          json.attribute("dur", 1);
          json.attribute("pid", 0);
          json.attribute("tid", "schedule");
        });
      }
      for (const PlannedBuffer &buffer : plan.buffers)
        json.object([&] {
          json.attribute("name", describeOp(buffer.op));
          json.attribute("cat", stringifyMemoryKind(buffer.kind));
          json.attribute("ph", "X");
          json.attribute("ts", buffer.start);
          json.attribute("dur", buffer.end - buffer.start + 1);
          json.attribute("pid", 1);
          json.attribute("tid", stringifyMemoryKind(buffer.kind));
          json.attributeObject("args", [&] {
            json.attribute("bytes", buffer.bytes);
            json.attribute("offset", buffer.offset);
          });
        });
    });
  });
  os << "\n";
}

} // namespace tgc
