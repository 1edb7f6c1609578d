//===- OverlapCollectives.cpp - the tg-overlap-collectives pass -----------===//
//
// A collective's readers, moved past the next collective. For collectives
// C1, C2, ... in a function's order (over more than one rank: tg.shard
// sends nothing), the ops between Ci and Ci+1 that depend on Ci (its
// readers and what reads them there) move, in their order, to just after
// Ci+1, unless Ci+1 reads one of them. Each op's other operands are
// defined before its old place, so before its new one; its users after
// Ci+1 still follow it. A moved op is not moved again: it does not depend
// on Ci+1.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGOVERLAPCOLLECTIVES
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Whether `op` sends over the link: a collective over more than one rank
/// (the bytes its cost counts; tg.shard and one rank send none).
bool communicates(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost && cost.getBytesCommunicated() > 0;
}

/// Moves the readers of `collective` between it and `next` after `next`;
/// returns how many ops moved.
int64_t deferReaders(Operation *collective, Operation *next) {
  llvm::SmallPtrSet<Value, 16> dependent(collective->getResults().begin(),
                                         collective->getResults().end());
  auto readsDependent = [&](Operation *op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return dependent.contains(v); });
  };
  SmallVector<Operation *> moving;
  for (Operation *op = collective->getNextNode(); op != next;
       op = op->getNextNode())
    if (readsDependent(op)) {
      moving.push_back(op);
      dependent.insert(op->getResults().begin(), op->getResults().end());
    }
  if (moving.empty() || readsDependent(next))
    return 0;
  Operation *after = next;
  for (Operation *op : moving) {
    op->moveAfter(after);
    after = op;
  }
  return int64_t(moving.size());
}

struct OverlapCollectivesPass
    : tgc::tg::impl::TGOverlapCollectivesBase<OverlapCollectivesPass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      SmallVector<Operation *> collectives;
      for (Operation &op : function.getBody().front())
        if (communicates(&op))
          collectives.push_back(&op);
      for (size_t i = 0; i + 1 < collectives.size(); ++i)
        deferReaders(collectives[i], collectives[i + 1]);
    }
  }
};

} // namespace
