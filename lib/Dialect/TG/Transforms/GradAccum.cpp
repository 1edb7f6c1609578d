//===- GradAccum.cpp - the tg-grad-accum pass -----------------------------===//
//
// Gradient accumulation as a rewrite of tg-autodiff's training step, before
// tg-optimizer sees it:
//   - the step is cloned into a gradient micro-step (tg.grad_step) that
//     adds each gradient, widened to f32, into a persistent accumulator,
//     and the micro-batch's loss into a weighted sum;
//   - the step itself becomes the apply step: it divides the sums by the
//     total weight, returns them as its gradients (so tg-optimizer adds
//     clipping and the update unchanged) and zeroes the accumulators.
// The weight of a micro-batch is its number of counted targets when the
// loss is a tg.cross_entropy (the backward seed is multiplied by it, which
// makes the gradient that of the summed loss), and 1 otherwise.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/ProgramLimits.h"

#include "OptionErrors.h"
#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "tg-grad-accum"

namespace tgc::tg {
#define GEN_PASS_DEF_TGGRADACCUM
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// A gradient result of the step.
struct GradResult {
  std::string name;
  RankedTensorType type;
};

/// The count of targets of tg-chunk-loss's loss `value`, `sum / max(count,
/// 1)` with `count` a sum of tg.target_count (f32 scalars), or null.
Value chunkedCount(Value value) {
  auto mean = value.getDefiningOp<DivOp>();
  if (!mean)
    return {};
  auto denominator = mean.getRhs().getDefiningOp<MaximumOp>();
  if (!denominator)
    return {};
  auto one = denominator.getRhs().getDefiningOp<FillOp>();
  if (!one || one.getValue().convertToDouble() != 1.0)
    return {};
  // Every leaf of the count's sum is a target count.
  SmallVector<Value> work = {denominator.getLhs()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v.getDefiningOp<TargetCountOp>())
      continue;
    auto add = v.getDefiningOp<AddOp>();
    if (!add)
      return {};
    work.push_back(add.getLhs());
    work.push_back(add.getRhs());
  }
  return denominator.getLhs();
}

class Splitter {
public:
  Splitter(func::FuncOp step, int64_t steps)
      : step(step), steps(steps), builder(step.getContext()),
        loc(step.getLoc()) {}

  LogicalResult run();

private:
  LogicalResult buildMicroStep();
  void buildApplyStep();
  Value fill(Type type, double value) {
    return FillOp::create(builder, loc, type, builder.getF64FloatAttr(value));
  }
  Value castTo(Value value, Type elementType) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getElementType() == elementType)
      return value;
    return CastOp::create(builder, loc, type.clone(elementType), value);
  }
  /// Appends the accumulators to `function` as state arguments; their
  /// values in `sums` (loss sum, target count, then one per gradient).
  void addAccumulators(func::FuncOp function,
                       SmallVectorImpl<DictionaryAttr> &argAttrs,
                       SmallVectorImpl<Value> &sums);
  DictionaryAttr namedResult(StringRef attr, StringRef name) {
    return namedResultAttr(builder.getContext(), attr, name);
  }

  func::FuncOp step, micro;
  int64_t steps;
  OpBuilder builder;
  Location loc;
  unsigned lossIndex = 0;
  Type lossType;
  SmallVector<GradResult> grads;
};

LogicalResult Splitter::run() {
  if (step->hasAttr(TGDialect::kGradAccumAttr))
    return step.emitOpError("already accumulates gradients; run "
                            "tg-grad-accum once");
  bool anyLoss = false;
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
    if (step.getResultAttr(i, TGDialect::kLossAttr)) {
      lossIndex = i;
      lossType = step.getResultTypes()[i];
      anyLoss = true;
      continue;
    }
    if (auto metric =
            step.getResultAttrOfType<StringAttr>(i, TGDialect::kMetricAttr))
      return step.emitOpError("returns the metric '")
             << metric.getValue()
             << "' (a preference loss); accumulating gradients over "
                "micro-batches of pairs is not supported yet: raise the "
                "batch instead";
    auto grad = step.getResultAttrOfType<StringAttr>(i, TGDialect::kGradAttr);
    if (!grad)
      return step.emitOpError("result #")
             << i << " is not the loss or a gradient; run tg-grad-accum on "
                     "the output of tg-autodiff, before tg-optimizer";
    grads.push_back({grad.str(),
                     cast<RankedTensorType>(step.getResultTypes()[i])});
  }
  if (!anyLoss)
    return step.emitOpError("returns no loss to accumulate");
  if (grads.empty())
    return step.emitOpError("has no parameter gradients to accumulate "
                            "(no trainable parameter reaches the loss)");
  if (failed(buildMicroStep()))
    return failure();
  buildApplyStep();
  return success();
}

void Splitter::addAccumulators(func::FuncOp function,
                               SmallVectorImpl<DictionaryAttr> &argAttrs,
                               SmallVectorImpl<Value> &sums) {
  argAttrs = getArgAttrDicts(function);
  auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
  sums.push_back(appendStateArgument(function, argAttrs,
                                     TGDialect::kLossSumName, f32Scalar));
  sums.push_back(appendStateArgument(function, argAttrs,
                                     TGDialect::kTargetCountName, f32Scalar));
  for (GradResult &grad : grads)
    sums.push_back(appendStateArgument(
        function, argAttrs, (TGDialect::kGradAccumPrefix + grad.name).str(),
        grad.type.clone(builder.getF32Type())));
}

LogicalResult Splitter::buildMicroStep() {
  // <model>_train_step -> <model>_grad_step.
  StringRef stepName = step.getSymName();
  std::string name = stepName.ends_with("_train_step")
                         ? (stepName.drop_back(11) + "_grad_step").str()
                         : (stepName + "_grad_step").str();
  if (SymbolTable::lookupNearestSymbolFrom(step,
                                           builder.getStringAttr(name)))
    return step.emitOpError("cannot create the gradient micro-step: a "
                            "symbol named '")
           << name << "' already exists";
  micro = cast<func::FuncOp>(step->clone());
  micro.setSymName(name);
  micro->removeAttr(TGDialect::kTrainStepAttr);
  micro->setAttr(TGDialect::kGradStepAttr, builder.getUnitAttr());
  builder.setInsertionPointAfter(step);
  builder.insert(micro);

  Block &body = micro.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  FillOp seed;
  body.walk([&](FillOp op) {
    if (op->hasAttr(TGDialect::kLossSeedAttr))
      seed = op;
  });
  if (!seed)
    return step.emitOpError("has no backward seed marked 'tg.loss_seed'; "
                            "run tg-grad-accum on the output of tg-autodiff");

  // The micro-batch's weight: its counted targets, or 1.
  Type f32 = builder.getF32Type();
  auto f32Scalar = RankedTensorType::get({}, f32);
  Value loss = ret.getOperand(lossIndex);
  Value source = loss;
  while (auto narrowing = source.getDefiningOp<CastOp>())
    source = narrowing.getInput();
  Value weight;
  if (auto entropy = source.getDefiningOp<CrossEntropyOp>()) {
    builder.setInsertionPointAfter(entropy);
    loc = entropy.getLoc();
    weight = TargetCountOp::create(builder, loc, f32Scalar,
                                   entropy.getTargets(),
                                   entropy.getIgnoreIndexAttr());
    // The cross-entropy's gradient is scaled by the weight, making it the
    // gradient of the micro-batch's summed loss. It is scaled there, in
    // the cotangent's own type (f32 even when the returned loss is
    // narrowed), rather than at the seed, which tg-loss-scale scales.
    CrossEntropyGradOp entropyGrad;
    body.walk([&](CrossEntropyGradOp op) {
      if (op.getLogits() == entropy.getLogits() &&
          op.getTargets() == entropy.getTargets())
        entropyGrad = op;
    });
    if (!entropyGrad)
      return entropy.emitOpError("has no gradient in the backward pass to "
                                 "weigh by its count of targets");
    builder.setInsertionPoint(entropyGrad);
    loc = entropyGrad.getLoc();
    Value cotangent = entropyGrad.getGrad();
    Value weighted = MulOp::create(
        builder, loc, cotangent.getType(), cotangent,
        castTo(weight, getElementTypeOrSelf(cotangent.getType())));
    entropyGrad.getGradMutable().set(weighted);
  } else if (Value seen = chunkedCount(source)) {
    // tg-chunk-loss's mean over chunks, sum / max(count, 1): the
    // micro-batch's weight is its count, and the gradient of its summed
    // loss is the sum's own, so the backward pass's division of the seed
    // by max(count, 1) is dropped.
    auto mean = source.getDefiningOp<DivOp>();
    Value denominator = mean.getRhs();
    SmallVector<DivOp> divisions;
    body.walk([&](DivOp op) {
      if (op != mean && op.getRhs() == denominator)
        divisions.push_back(op);
    });
    if (divisions.size() != 1)
      return mean.emitOpError("has no single gradient in the backward pass "
                              "to weigh by its count of targets");
    divisions.front().getResult().replaceAllUsesWith(
        divisions.front().getLhs());
    weight = seen;
  }

  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> sums;
  addAccumulators(micro, argAttrs, sums);
  loc = micro.getLoc();
  if (!weight) {
    builder.setInsertionPointAfterValue(loss);
    weight = fill(f32Scalar, 1.0);
  }

  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs = {builder.getDictionaryAttr(
      builder.getNamedAttr(TGDialect::kLossAttr, builder.getUnitAttr()))};
  // Each sum is added to as soon as its value is complete, so that a
  // gradient's buffer dies there (the add writes the accumulator in place)
  // instead of living to the end of the backward pass.
  auto accumulate = [&](Value sum, Value value, StringRef name) {
    builder.setInsertionPointAfterValue(value);
    if (auto def = value.getDefiningOp();
        def && def->isBeforeInBlock(weight.getDefiningOp()))
      builder.setInsertionPointAfterValue(weight);
    Value wide = castTo(value, f32);
    results.push_back(AddOp::create(builder, loc, sum.getType(), sum, wide));
    resultAttrs.push_back(namedResult(TGDialect::kUpdateAttr, name));
    return wide;
  };
  // The loss weighted by the micro-batch's count: its summed loss (after
  // both, whichever comes last: a chunked loss's count comes before it).
  builder.setInsertionPointAfterValue(weight);
  if (Operation *lossDef = loss.getDefiningOp();
      lossDef && weight.getDefiningOp() &&
      weight.getDefiningOp()->isBeforeInBlock(lossDef))
    builder.setInsertionPointAfterValue(loss);
  Value lossF32 = castTo(loss, f32);
  if (!weight.getDefiningOp<FillOp>())
    lossF32 = MulOp::create(builder, loc, f32Scalar, lossF32, weight);
  accumulate(sums[0], lossF32, TGDialect::kLossSumName);
  accumulate(sums[1], weight, TGDialect::kTargetCountName);
  unsigned g = 0;
  for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i) {
    if (i == lossIndex)
      continue;
    accumulate(sums[2 + g], ret.getOperand(i),
               TGDialect::kGradAccumPrefix.str() + grads[g].name);
    ++g;
  }
  setStepResults(micro, results, argAttrs, resultAttrs);
  return success();
}

void Splitter::buildApplyStep() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> sums;
  addAccumulators(step, argAttrs, sums);

  // The forward and backward passes now run in the micro-step.
  ret->setOperands({});
  while (Operation *last = ret->getPrevNode())
    last->erase();

  builder.setInsertionPoint(ret);
  loc = step.getLoc();
  Type f32 = builder.getF32Type();
  auto f32Scalar = RankedTensorType::get({}, f32);
  // Nothing counted (every target ignored) gives a zero loss and zero
  // gradients, as tg.cross_entropy does for one batch.
  Value total = MaximumOp::create(builder, loc, f32Scalar, sums[1],
                                  fill(f32Scalar, 1.0));
  Value loss = DivOp::create(builder, loc, f32Scalar, sums[0], total);
  SmallVector<Value> results = {
      castTo(loss, getElementTypeOrSelf(lossType))};
  SmallVector<DictionaryAttr> resultAttrs = {builder.getDictionaryAttr(
      builder.getNamedAttr(TGDialect::kLossAttr, builder.getUnitAttr()))};
  for (auto [grad, sum] : llvm::zip(grads, ArrayRef(sums).drop_front(2))) {
    Value mean = DivOp::create(builder, loc, sum.getType(), sum, total);
    results.push_back(castTo(mean, grad.type.getElementType()));
    resultAttrs.push_back(namedResult(TGDialect::kGradAttr, grad.name));
  }
  // The next optimizer step starts from zero.
  auto reset = [&](Value sum, StringRef name) {
    results.push_back(fill(sum.getType(), 0.0));
    resultAttrs.push_back(namedResult(TGDialect::kUpdateAttr, name));
  };
  reset(sums[0], TGDialect::kLossSumName);
  reset(sums[1], TGDialect::kTargetCountName);
  for (auto [grad, sum] : llvm::zip(grads, ArrayRef(sums).drop_front(2)))
    reset(sum, TGDialect::kGradAccumPrefix.str() + grad.name);

  setStepResults(step, results, argAttrs, resultAttrs);
  step->setAttr(TGDialect::kGradAccumAttr,
                builder.getDictionaryAttr(
                    {builder.getNamedAttr("steps",
                                          builder.getI64IntegerAttr(steps)),
                     builder.getNamedAttr(
                         "grad_step",
                         FlatSymbolRefAttr::get(micro.getSymNameAttr()))}));
}

struct GradAccumPass : tgc::tg::impl::TGGradAccumBase<GradAccumPass> {
  using TGGradAccumBase::TGGradAccumBase;

  void runOnOperation() override {
    // The counts stay exact in the f32 sums only so far; tgc-run loads no
    // more (tgc/Support/ProgramLimits.h).
    if (steps < 2 || steps > tgc::kMaxGradAccumSteps) {
      emitOptionError(getOperation(), "tg-grad-accum: steps must be from 2 to ")
          << tgc::kMaxGradAccumSteps << " (1 is no accumulation), found "
          << int64_t(steps);
      return signalPassFailure();
    }
    if (failed(forEachTrainStep(getOperation(), "tg-grad-accum",
                                "tg-autodiff", [&](func::FuncOp step) {
                                  return Splitter(step, steps).run();
                                })))
      return signalPassFailure();
  }
};

} // namespace
