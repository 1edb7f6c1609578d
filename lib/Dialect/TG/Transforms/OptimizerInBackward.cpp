//===- OptimizerInBackward.cpp - the tg-optimizer-in-backward pass --------===//
//
// Reorders a training step so that each optimizer update runs as soon as
// it can: once its gradient and its other operands exist and every other
// reader of the tensors it writes in place has run. An update travels with
// its slice, the ops that exist only to feed it (its gradient's last
// matmul, a dequantization) and the small scalars updates share (the step
// count, which the step also returns); a slice op that already ran earlier
// stays where it was. A gather of the parameter an update writes in place
// (zero3's) need only precede the update: when nothing before the
// update's new place reads it, it travels too, to just before the update,
// so its copy is not held across the slice (the LM head's, beside its
// weight gradient). No other op moves later, every other op keeps its
// place, and nothing is computed differently, so the step's numbers are
// bitwise those of the original order.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Summary.h"
#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tg-optimizer-in-backward"

namespace tgc::tg {
#define GEN_PASS_DEF_TGOPTIMIZERINBACKWARD
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Results this small (the step count, a learning rate, a flag) may move
/// with the first update that needs them, even when several updates read
/// them or the step returns them.
constexpr int64_t kScalarBytes = 64;

/// Constants without operands this small (the code maps of 8-bit state)
/// too.
constexpr int64_t kConstantBytes = 64 * 1024;

static bool mayBeShared(Operation *op) {
  int64_t limit = op->getNumOperands() == 0 ? kConstantBytes : kScalarBytes;
  return op->getNumResults() != 0 &&
         llvm::all_of(op->getResultTypes(), [&](Type type) {
           return tgc::tg::getTensorBytes(type) <= limit;
         });
}

class Scheduler {
public:
  explicit Scheduler(func::FuncOp step) : step(step) {}

  /// Reorders the step and reports what moved.
  void run(bool print);

private:
  void findWrites();
  void findSlices();
  SmallVector<Operation *> sliceOf(Operation *root) const;
  bool inSlice(Operation *op, Operation *root) const {
    auto it = owner.find(op);
    return shared.contains(op) || (it != owner.end() && it->second == root);
  }

  func::FuncOp step;
  SmallVector<Operation *> ops; // the original order
  llvm::DenseMap<Operation *, int> position;
  SmallVector<Operation *> roots; // the updates, in order
  // The update an op exists only to feed (each root owns itself), and the
  // small ops several updates share.
  llvm::DenseMap<Operation *, Operation *> owner;
  llvm::DenseSet<Operation *> shared;
  // Each in-place write: the op whose result overwrites the argument.
  llvm::DenseMap<Operation *, SmallVector<BlockArgument>> writes;
  // The gathers that travel with each update, emitted just before it.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> gathersOf;
};

void Scheduler::findWrites() {
  Block &body = step.getBody().front();
  llvm::StringMap<BlockArgument> argByName;
  for (BlockArgument arg : body.getArguments())
    for (StringRef role : {TGDialect::kParamAttr, TGDialect::kStateAttr})
      if (auto name =
              step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role))
        argByName[name.getValue()] = arg;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = step.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    Operation *writer = value.getDefiningOp();
    if (!name || !writer)
      continue;
    auto arg = argByName.find(name.getValue());
    if (arg != argByName.end())
      writes[writer].push_back(arg->second);
  }
}

void Scheduler::findSlices() {
  for (Operation *op : llvm::reverse(ops)) {
    if (isa<OptimizerUpdateOpInterface>(op)) {
      owner[op] = op;
      continue;
    }
    if (op->getNumResults() == 0 || op->getNumRegions() != 0)
      continue;
    Operation *only = nullptr;
    bool several = false, other = false, returned = false;
    for (Operation *user : op->getUsers()) {
      auto it = owner.find(user);
      if (it != owner.end()) {
        several |= only && only != it->second;
        only = it->second;
      } else if (shared.contains(user)) {
        several = true;
      } else if (isa<func::ReturnOp>(user)) {
        returned = true;
      } else {
        other = true;
      }
    }
    if (other || (!only && !several))
      continue;
    if (!several && !returned)
      owner[op] = only;
    else if (mayBeShared(op))
      shared.insert(op);
  }
}

/// The ops `root` needs that travel with it, itself included, in the
/// original order.
SmallVector<Operation *> Scheduler::sliceOf(Operation *root) const {
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> work = {root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!slice.insert(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (inSlice(def, root))
          work.push_back(def);
  }
  SmallVector<Operation *> sorted(slice.begin(), slice.end());
  llvm::sort(sorted, [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  });
  return sorted;
}

void Scheduler::run(bool print) {
  Block &body = step.getBody().front();
  for (Operation &op : body.without_terminator()) {
    position[&op] = int(ops.size());
    ops.push_back(&op);
    if (isa<OptimizerUpdateOpInterface>(op))
      roots.push_back(&op);
  }
  if (roots.empty())
    return;
  findWrites();
  findSlices();

  // When each update may run: right after the last op outside its slice
  // that it waits for, an operand's definition or another reader of a
  // tensor its slice writes in place. Ops only move earlier, so every read
  // that preceded an in-place write still does, except a read by another
  // update's slice of what this one writes: such an update (none in the
  // models tgc builds) keeps its place.
  int n = int(ops.size());
  llvm::DenseMap<Operation *, int> readyAfter;
  llvm::DenseMap<Operation *, Operation *> waitsFor;
  llvm::DenseSet<Operation *> fixed;
  for (Operation *root : roots) {
    SmallVector<Operation *> sliceOps = sliceOf(root);
    llvm::DenseSet<Operation *> slice(sliceOps.begin(), sliceOps.end());
    int ready = -1;
    Operation *latest = nullptr;
    bool conflict = false;
    auto waitFor = [&](Operation *op) {
      if (slice.contains(op))
        return;
      if (owner.count(op) || shared.contains(op))
        conflict |= !isa<func::ReturnOp>(op);
      else if (position[op] > ready) {
        ready = position[op];
        latest = op;
      }
    };
    // A gather of an argument the update itself writes may travel with
    // it (just before it) when no op of any slice reads its copy.
    SmallVector<Operation *> gathers;
    auto travels = [&](Operation *reader) {
      return isa<AllGatherOp>(reader) && !owner.count(reader) &&
             !shared.contains(reader) &&
             llvm::all_of(reader->getUsers(), [&](Operation *user) {
               return user->getBlock() == &body && !owner.count(user) &&
                      !shared.contains(user) && !isa<func::ReturnOp>(user);
             });
    };
    for (Operation *op : sliceOps) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          waitFor(def);
      auto written = writes.find(op);
      if (written == writes.end())
        continue;
      for (BlockArgument arg : written->second)
        for (Operation *reader : arg.getUsers()) {
          if (reader == op || isa<func::ReturnOp>(reader))
            continue;
          if (op == root && travels(reader))
            gathers.push_back(reader);
          else
            waitFor(reader);
        }
    }
    // One whose copy is read before the update's place is waited for
    // instead, which may move that place later.
    for (bool waited = true; waited;) {
      waited = false;
      llvm::erase_if(gathers, [&](Operation *gather) {
        if (llvm::all_of(gather->getUsers(), [&](Operation *user) {
              return position.lookup(user) > ready;
            }))
          return false;
        waitFor(gather);
        return waited = true;
      });
    }
    if (conflict) {
      fixed.insert(root);
      continue;
    }
    readyAfter[root] = ready;
    waitsFor[root] = latest;
    gathersOf[root] = std::move(gathers);
  }

  // The new order: every op in its place except the updates that move,
  // each emitted right after the op it waits for with the part of its
  // slice not emitted yet (updates waiting for the same op in their
  // original order) and the gathers travelling with it just before it.
  std::vector<SmallVector<Operation *>> after(n + 1);
  for (Operation *root : roots)
    if (!fixed.contains(root))
      after[readyAfter[root] + 1].push_back(root);
  llvm::DenseSet<Operation *> emitted;
  SmallVector<Operation *> order;
  for (int i = 0; i <= n; ++i) {
    for (Operation *root : after[i])
      for (Operation *op : sliceOf(root)) {
        if (op == root)
          for (Operation *gather : gathersOf[root])
            if (emitted.insert(gather).second)
              order.push_back(gather);
        if (emitted.insert(op).second)
          order.push_back(op);
      }
    if (i < n && emitted.insert(ops[i]).second)
      order.push_back(ops[i]);
  }
  Operation *terminator = body.getTerminator();
  for (Operation *op : order)
    op->moveBefore(terminator);

  // How far the updates moved: an update before the last op any update
  // waits for (the last gradient, or what reads them all) ran inside the
  // backward pass.
  llvm::DenseMap<Operation *, int> newPosition;
  for (auto [i, op] : llvm::enumerate(order))
    newPosition[op] = int(i);
  int lastAwaited = -1;
  Operation *blocker = nullptr;
  for (auto [root, op] : waitsFor)
    if (op && newPosition[op] > lastAwaited) {
      lastAwaited = newPosition[op];
      blocker = op;
    }
  int moved = 0;
  for (Operation *root : roots)
    if (!fixed.contains(root) && newPosition[root] < lastAwaited)
      ++moved;
  bool backward = findBackwardStart(step) != nullptr;
  std::string line;
  llvm::raw_string_ostream os(line);
  if (!backward)
    os << "no backward pass (gradient accumulation's apply step): each of "
       << roots.size() << " updates runs right after its operands";
  else
    os << moved << " of " << roots.size()
       << " updates run inside the backward pass";
  if (backward && moved == 0 && blocker)
    os << "; every update waits for " << blocker->getName() << " ("
       << blocker->getLoc()
       << "): what they read needs every gradient (global-norm clipping, "
          "a loss-scale overflow check)";
  if (!fixed.empty())
    os << "; " << fixed.size()
       << " keep their place (another update's operands read what they "
          "write)";
  reportSummary(step.getLoc(), "tg-optimizer-in-backward", step.getSymName(),
                line,
                {{"updates", int64_t(roots.size())}, {"moved", moved}}, print);
}

struct OptimizerInBackwardPass
    : tgc::tg::impl::TGOptimizerInBackwardBase<OptimizerInBackwardPass> {
  using TGOptimizerInBackwardBase::TGOptimizerInBackwardBase;

  void runOnOperation() override {
    if (failed(forEachTrainStep(
            getOperation(), "tg-optimizer-in-backward", "tg-optimizer",
            [&](func::FuncOp step) -> LogicalResult {
              if (!step.getBody().hasOneBlock())
                return step.emitOpError("tg-optimizer-in-backward schedules "
                                        "functions of one block");
              Scheduler(step).run(printSummary);
              return success();
            })))
      signalPassFailure();
  }
};

} // namespace
