//===- StreamApply.cpp - the tg-stream-apply pass -------------------------===//
//
// Gradient accumulation's apply step (tg-grad-accum) computes each
// gradient from its f32 accumulator by elementwise ops with scalar other
// operands (the division by the count, loss scaling's unscale, a cast,
// clipping's scale). The global reductions over the gradients (the
// clipping norm, the finiteness check) read every gradient before any
// update may run, so as the earlier passes write the step every gradient
// is a whole f32 copy living at once. This pass:
//   1. gives each update its own copy of its gradient's chain, right
//      before the update (the original chain then serves the reductions
//      alone, or dies);
//   2. splits each reduction into one per operand, right after the
//      operand is computed, combined where the reduction was: a norm as
//      the square root of the sum of the squared norms (PyTorch's
//      clip_grad_norm_ computes the total norm as the norm of the
//      tensors' norms), a finiteness check as the least of the checks;
//   3. sinks each chain op serving the reductions to its first reader, so
//      each chain runs contiguously into its reductions;
//   4. moves each accumulator's zeros (the step's new value for it) after
//      its last reader.
// At most one gradient then lives at a time (twice computed: an
// elementwise pass over f32 parameters once per optimizer step).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGSTREAMAPPLY
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

bool isScalar(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 0;
}

/// Whether `op` carries a tensor to a gradient elementwise: operand 0 a
/// tensor of the result's shape, every other operand a scalar.
bool isChainOp(Operation *op) {
  if (!isa<DivOp, UnscaleOp, CastOp, MulOp>(op) || op->getNumResults() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || in.getRank() == 0 || in.getShape() != out.getShape())
    return false;
  return llvm::all_of(op->getOperands().drop_front(), isScalar);
}

/// The ops that compute `value` from an argument of `body` through chain
/// ops (the argument's reader first), or none.
SmallVector<Operation *> chainTo(Value value, Block &body) {
  SmallVector<Operation *> chain;
  while (Operation *def = value.getDefiningOp()) {
    if (!isChainOp(def))
      return {};
    chain.push_back(def);
    value = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &body)
    return {};
  std::reverse(chain.begin(), chain.end());
  return chain;
}

struct StreamApplyPass : tgc::tg::impl::TGStreamApplyBase<StreamApplyPass> {
  using TGStreamApplyBase::TGStreamApplyBase;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() &&
          function->hasAttr(TGDialect::kGradAccumAttr))
        runOnStep(function);
  }

  void runOnStep(func::FuncOp step) {
    Block &body = step.getBody().front();
    OpBuilder builder(step.getContext());
    Location loc = step.getLoc();

    // What the step returns as the new value of each state argument (an
    // accumulator's zeros).
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::StringMap<Value> newValueOf;
    for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i)
      if (auto name =
              step.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr))
        newValueOf[name.getValue()] = ret.getOperand(i);

    // 1. Each update reads its own copy of its gradient's chain.
    int64_t streamed = 0;
    llvm::SetVector<BlockArgument> roots;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto update = dyn_cast<OptimizerUpdateOpInterface>(&op);
      if (!update)
        continue;
      Value grad = update.getGrad();
      SmallVector<Operation *> chain = chainTo(grad, body);
      if (chain.empty())
        continue;
      builder.setInsertionPoint(&op);
      IRMapping copies;
      for (Operation *link : chain)
        builder.clone(*link, copies);
      grad.replaceUsesWithIf(copies.lookup(grad), [&](OpOperand &use) {
        return use.getOwner() == &op;
      });
      roots.insert(cast<BlockArgument>(chain.front()->getOperand(0)));
      for (Operation *link : llvm::reverse(chain)) {
        if (!link->use_empty())
          break;
        link->erase();
      }
      ++streamed;
    }

    // 2. Each reduction one per operand, right after the operand.
    auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
    SmallVector<Operation *> reductions;
    for (Operation &op : body)
      if (isa<GlobalNormOp, AllFiniteOp>(op) && op.getNumOperands() > 1)
        reductions.push_back(&op);
    for (Operation *reduction : reductions) {
      bool norm = isa<GlobalNormOp>(reduction);
      SmallVector<Value> partials;
      for (Value operand : reduction->getOperands()) {
        if (Operation *def = operand.getDefiningOp())
          builder.setInsertionPointAfter(def);
        else
          builder.setInsertionPoint(reduction);
        Value partial =
            norm ? Value(GlobalNormOp::create(builder, loc, f32Scalar, operand))
                 : Value(AllFiniteOp::create(builder, loc,
                                             reduction->getResult(0).getType(),
                                             operand));
        partials.push_back(partial);
      }
      builder.setInsertionPoint(reduction);
      Value combined;
      for (Value partial : partials) {
        Value term =
            norm ? Value(
                       MulOp::create(builder, loc, f32Scalar, partial, partial))
                 : Value(CastOp::create(builder, loc, f32Scalar, partial));
        if (!combined)
          combined = term;
        else if (norm)
          combined = AddOp::create(builder, loc, f32Scalar, combined, term);
        else
          combined = MinimumOp::create(builder, loc, f32Scalar, combined, term);
      }
      Type resultType = reduction->getResult(0).getType();
      combined =
          norm ? Value(SqrtOp::create(builder, loc, f32Scalar, combined))
               : Value(CastOp::create(builder, loc, resultType, combined));
      reduction->getResult(0).replaceAllUsesWith(combined);
      reduction->erase();
    }

    // 3. Each chain op that serves the reductions sunk to its first
    // reader (the last op first), so that a chain runs contiguously into
    // its reductions, whatever order the earlier passes wrote the chains in.
    SmallVector<Operation *> links;
    for (Operation &op : body)
      if (isChainOp(&op) && !chainTo(op.getResult(0), body).empty())
        links.push_back(&op);
    for (Operation *link : llvm::reverse(links)) {
      Operation *first = nullptr;
      for (Operation *user : link->getUsers())
        if (!first || user->isBeforeInBlock(first))
          first = user;
      if (first && first != link->getNextNode())
        link->moveBefore(first);
    }

    // 4. An accumulator's zeros written over it after its last read.
    for (BlockArgument root : roots) {
      auto state = step.getArgAttrOfType<StringAttr>(root.getArgNumber(),
                                                     TGDialect::kStateAttr);
      Value zeros = state ? newValueOf.lookup(state.getValue()) : Value();
      auto fill = zeros ? zeros.getDefiningOp<FillOp>() : FillOp();
      if (!fill || !fill->hasOneUse())
        continue;
      Operation *lastRead = nullptr;
      for (Operation *user : root.getUsers())
        if (!lastRead || lastRead->isBeforeInBlock(user))
          lastRead = user;
      if (lastRead && fill->isBeforeInBlock(lastRead))
        fill->moveAfter(lastRead);
    }

    if (printSummary && streamed > 0)
      llvm::errs() << "tg-stream-apply: @" << step.getSymName() << ": "
                   << streamed << " updates read their gradient computed "
                   << "right before them\n";
  }
};

} // namespace
