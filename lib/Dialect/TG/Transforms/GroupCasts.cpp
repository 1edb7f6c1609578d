//===- GroupCasts.cpp - the tg-group-casts pass ---------------------------===//
//
// A mixed-precision step casts each parameter to 16 bits where the forward
// pass first reads it, one kernel launch per parameter. The forward pass's
// casts whose results the backward pass reads again (the 16-bit weights)
// become one tg.multi_cast where the first of them was: it converts 32
// tensors a launch. Hoisting those casts only lengthens lifetimes that
// already span the forward pass, so the memory peak, between the passes,
// does not move; a cast whose value dies earlier joins only when it is
// small (a bias: at most 64 KiB, 16 MiB in all), and a large one (one that
// tg-remat recomputes for the backward pass, say) stays.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGGROUPCASTS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// A float-to-float cast of an argument of `body` (a parameter).
bool castsArgument(CastOp cast, Block &body) {
  auto argument = dyn_cast<BlockArgument>(cast.getInput());
  return argument && argument.getOwner() == &body &&
         isa<FloatType>(getElementTypeOrSelf(cast.getInput())) &&
         isa<FloatType>(getElementTypeOrSelf(cast.getType()));
}

/// A cast whose value dies in the forward pass (a bias no backward op
/// reads) joins the group when it is this small, while what such casts add
/// to lifetimes stays within the limit.
constexpr int64_t kSmallCastBytes = 64 << 10;
constexpr int64_t kExtraBytesLimit = 16 << 20;

int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() *
         int64_t(tensor.getElementTypeBitWidth() / 8);
}

/// Whether some reader of `cast` comes after `last`.
bool readAfter(CastOp cast, Operation *last) {
  return llvm::any_of(cast->getUsers(), [&](Operation *user) {
    Operation *inBody = last->getBlock()->findAncestorOpInBlock(*user);
    return inBody && last->isBeforeInBlock(inBody);
  });
}

void groupCasts(func::FuncOp func) {
  if (func.isExternal())
    return;
  Block &body = func.getBody().front();
  // The forward pass's casts: those before the backward pass's seed (all
  // of them in an evaluation step, which has none). A cast the backward
  // pass recomputes stays there.
  Operation *seed = nullptr;
  for (Operation &op : body)
    if (op.hasAttr(TGDialect::kLossSeedAttr)) {
      seed = &op;
      break;
    }
  SmallVector<CastOp> casts;
  for (auto cast : body.getOps<CastOp>())
    if (castsArgument(cast, body) && (!seed || cast->isBeforeInBlock(seed)))
      casts.push_back(cast);
  if (casts.size() < 2)
    return;
  // Live across the seed (or past the last cast): read again after it.
  Operation *last = seed ? seed : casts.back().getOperation();
  SmallVector<CastOp> group;
  int64_t extra = 0;
  for (CastOp cast : casts) {
    int64_t bytes = tensorBytes(cast.getType());
    if (readAfter(cast, last)) {
      group.push_back(cast);
    } else if (bytes <= kSmallCastBytes &&
               extra + bytes <= kExtraBytesLimit) {
      extra += bytes;
      group.push_back(cast);
    }
  }
  if (group.size() < 2)
    return;

  OpBuilder builder(group.front());
  SmallVector<Value> inputs;
  SmallVector<Type> types;
  SmallVector<Location> locations;
  for (CastOp cast : group) {
    inputs.push_back(cast.getInput());
    types.push_back(cast.getType());
    locations.push_back(cast.getLoc());
  }
  auto multi = MultiCastOp::create(
      builder, builder.getFusedLoc(locations), types, inputs);
  for (auto [cast, result] : llvm::zip(group, multi.getResults())) {
    cast.getResult().replaceAllUsesWith(result);
    cast.erase();
  }
}

struct GroupCastsPass : tgc::tg::impl::TGGroupCastsBase<GroupCastsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) { groupCasts(func); });
  }
};

} // namespace
