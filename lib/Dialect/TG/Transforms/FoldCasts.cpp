//===- FoldCasts.cpp - the tg-fold-casts pass -----------------------------===//
//
// Mixed precision leaves a tg.cast wherever a 16-bit value meets an f32
// computation: each one a kernel that writes a copy of the tensor. Ops that
// compute in f32 may instead read a 16-bit operand or write a 16-bit result
// themselves (tgc/Support/Precision.h; each op's description says which),
// so the casts fold into them:
//   - a widening cast (f16/bf16 to f32) into the operand of its reader: an
//     optimizer update's gradient, either operand of a binary float op whose
//     other operand is f32 (the residual add after a 16-bit linear layer),
//     layer_norm_grad's and rms_norm_grad's incoming gradient;
//   - a widening cast into a norm's residual addend beside an f32 input;
//   - narrowing casts (f32 to f16/bf16) of a layer_norm or rms_norm result
//     into the norm, when they are all of its readers and agree;
//   - narrowing casts of a layer_norm_grad's or rms_norm_grad's f32 input
//     gradient into a second, 16-bit copy the op stores beside it (the
//     f32 gradient goes on to the residual stream, the copy to the GEMMs);
//   - a rope between a widening cast and narrowing casts back to the same
//     16-bit type (mixed precision's rotary embedding of 16-bit heads, and
//     its inverse on their gradients): the rope reads and writes the
//     16-bit heads, computing in f32 between as it did.
// Widening is exact and a norm rounds its f32 result as the cast did (to
// nearest even, once), so the step computes the same bits; a cast that
// still has readers stays.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/IR/TypeUtilities.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFOLDCASTS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

bool isHalf(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isF16() || element.isBF16();
}
bool isF32(Type type) { return getElementTypeOrSelf(type).isF32(); }

/// The cast that defines `value` when it widens a 16-bit float to f32
/// (exactly, so its reader may read the 16-bit operand instead).
CastOp wideningCast(Value value) {
  auto cast = value.getDefiningOp<CastOp>();
  if (cast && isHalf(cast.getInput().getType()) && isF32(cast.getType()))
    return cast;
  return {};
}

/// Has `operand` read the 16-bit value its widening cast reads.
bool foldWidening(OpOperand &operand) {
  CastOp cast = wideningCast(operand.get());
  if (!cast)
    return false;
  operand.set(cast.getInput());
  return true;
}

/// The type all of `result`'s readers narrow it to (f32 to one 16-bit
/// type), or null.
Type commonNarrowing(Value result) {
  if (!isF32(result.getType()) || result.use_empty())
    return {};
  Type narrow;
  for (Operation *user : result.getUsers()) {
    auto cast = dyn_cast<CastOp>(user);
    if (!cast || !isHalf(cast.getType()) || (narrow && cast.getType() != narrow))
      return {};
    narrow = cast.getType();
  }
  return narrow;
}

/// Makes `norm` write its result in the type its readers cast it to.
void foldNarrowing(Operation *norm) {
  Value result = norm->getResult(0);
  Type narrow = commonNarrowing(result);
  if (!narrow)
    return;
  result.setType(narrow);
  for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
    user->getResult(0).replaceAllUsesWith(result);
    user->erase();
  }
}

/// Has `grad` (a layer_norm_grad or rms_norm_grad with an f32 input
/// gradient) also store the 16-bit copy its readers cast the gradient to
/// (the type of the first such cast in the block), and erases those casts.
template <typename GradOp> void foldRoundedInputGrad(GradOp grad) {
  Value inputGrad = grad.getInputGrad();
  if (grad.getRoundedInputGrad() || !isF32(inputGrad.getType()) ||
      !computesResult(grad, 0))
    return;
  SmallVector<CastOp> casts;
  for (Operation *user : inputGrad.getUsers())
    if (auto cast = dyn_cast<CastOp>(user);
        cast && isHalf(cast.getType()) && cast->getBlock() == grad->getBlock())
      casts.push_back(cast);
  if (casts.empty())
    return;
  CastOp first = *llvm::min_element(casts, [](CastOp a, CastOp b) {
    return a->isBeforeInBlock(b);
  });
  Type narrow = first.getType();
  llvm::erase_if(casts, [&](CastOp cast) { return cast.getType() != narrow; });
  SmallVector<Type> types(grad->getResultTypes());
  types.push_back(narrow);
  DenseBoolArrayAttr mask = grad.getOutputMaskAttr();
  OpBuilder builder(grad);
  if (mask) {
    SmallVector<bool> computed(mask.asArrayRef());
    computed.push_back(true);
    mask = builder.getDenseBoolArrayAttr(computed);
  }
  auto rounded = GradOp::create(builder, grad.getLoc(), types, grad.getInput(),
                                grad.getWeight(), grad.getGrad(),
                                grad.getAddend(), grad.getEpsilonAttr(), mask);
  rounded->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
  grad->replaceAllUsesWith(rounded->getResults().drop_back());
  grad.erase();
  for (CastOp cast : casts) {
    cast.getResult().replaceAllUsesWith(rounded.getRoundedInputGrad());
    cast.erase();
  }
}

/// Has `rope` (on the f32 widening of a 16-bit tensor, its result read only
/// by casts back to that type) rotate the 16-bit tensor itself: it widens
/// each element, rotates in f32 and rounds once, as the casts around it did.
void foldRope(RopeOp rope) {
  CastOp widening = wideningCast(rope.getInput());
  Value result = rope.getResult();
  if (!widening || commonNarrowing(result) != widening.getInput().getType())
    return;
  rope.getInputMutable().assign(widening.getInput());
  result.setType(widening.getInput().getType());
  for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
    user->getResult(0).replaceAllUsesWith(result);
    user->erase();
  }
}

struct FoldCastsPass : tgc::tg::impl::TGFoldCastsBase<FoldCastsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> norms, normGrads;
    SmallVector<RopeOp> ropes;
    getOperation().walk([&](Operation *op) {
      if (auto update = dyn_cast<OptimizerUpdateOpInterface>(op)) {
        Value grad = update.getGrad();
        for (OpOperand &operand : op->getOpOperands())
          if (operand.get() == grad)
            foldWidening(operand);
      } else if (isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp>(op)) {
        // One operand only, and only beside an f32 operand: the result
        // stays f32.
        if (!isF32(op->getResult(0).getType()))
          return;
        for (unsigned i = 0; i < 2; ++i)
          if (wideningCast(op->getOperand(i)) &&
              isF32(op->getOperand(1 - i).getType()) &&
              foldWidening(op->getOpOperand(i)))
            break;
      } else if (auto grad = dyn_cast<LayerNormGradOp>(op)) {
        if (isF32(grad.getInput().getType()))
          foldWidening(grad.getGradMutable());
        normGrads.push_back(op);
      } else if (auto grad = dyn_cast<RmsNormGradOp>(op)) {
        if (isF32(grad.getInput().getType()))
          foldWidening(grad.getGradMutable());
        normGrads.push_back(op);
      } else if (auto rope = dyn_cast<RopeOp>(op)) {
        ropes.push_back(rope);
      } else if (isa<LayerNormOp, RmsNormOp>(op)) {
        // A residual addend beside an f32 input (the sum stays f32).
        unsigned addendAt = isa<LayerNormOp>(op) ? 3 : 2;
        if (op->getNumOperands() > addendAt &&
            isF32(op->getOperand(0).getType()))
          foldWidening(op->getOpOperand(addendAt));
        norms.push_back(op);
      }
    });
    for (Operation *norm : norms)
      foldNarrowing(norm);
    for (RopeOp rope : ropes)
      foldRope(rope);
    for (Operation *op : normGrads) {
      if (auto grad = dyn_cast<LayerNormGradOp>(op))
        foldRoundedInputGrad(grad);
      else
        foldRoundedInputGrad(cast<RmsNormGradOp>(op));
    }
    // The casts no reader is left for.
    getOperation().walk([](CastOp cast) {
      if (cast->use_empty() && (wideningCast(cast.getResult())))
        cast.erase();
    });
  }
};

} // namespace
