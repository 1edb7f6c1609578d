//===- LossScale.cpp - the tg-loss-scale pass -----------------------------===//
//
// Loss scaling on a training step, GradScaler's algorithm as a rewrite:
// scale the backward seed, unscale each parameter gradient where it is
// complete, check them all finite, predicate the optimizer updates and the
// step counter on that, and (dynamic) update the scale as step state.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "OptionErrors.h"

#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <limits>

#define DEBUG_TYPE "tg-loss-scale"

namespace tgc::tg {
#define GEN_PASS_DEF_TGLOSSSCALE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

struct Config {
  bool dynamic = true;
  double staticScale = 0.0;
  double initScale, growthFactor, backoffFactor;
  int64_t growthInterval;
};

class Rewriter {
public:
  Rewriter(func::FuncOp step, const Config &config)
      : step(step), config(config), builder(step.getContext()),
        loc(step.getLoc()) {}

  LogicalResult run();

private:
  BlockArgument addState(StringRef name, Type type, Attribute init) {
    return appendStateArgument(step, argAttrs, name, type, init);
  }

  func::FuncOp step;
  const Config &config;
  OpBuilder builder;
  Location loc;
  SmallVector<DictionaryAttr> argAttrs;
};

LogicalResult Rewriter::run() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // With gradient accumulation (tg-grad-accum) the backward pass, and so
  // its seed, is in the micro-step; the step checks the accumulated
  // gradients once.
  func::FuncOp backward = step;
  if (auto accum =
          step->getAttrOfType<DictionaryAttr>(TGDialect::kGradAccumAttr)) {
    backward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        step, accum.getAs<FlatSymbolRefAttr>("grad_step"));
    if (!backward || !backward->hasAttr(TGDialect::kGradStepAttr))
      return step.emitOpError("names a gradient micro-step that is not a "
                              "function marked 'tg.grad_step'");
  }
  FillOp seed;
  backward.getBody().front().walk([&](FillOp fill) {
    if (fill->hasAttr(TGDialect::kLossSeedAttr))
      seed = fill;
  });
  if (!seed)
    return backward.emitOpError("has no backward seed marked "
                                "'tg.loss_seed'; run tg-loss-scale on the "
                                "output of tg-autodiff");

  argAttrs = getArgAttrDicts(step);
  Type f32 = builder.getF32Type();
  auto f32Scalar = RankedTensorType::get({}, f32);
  auto i64Scalar = RankedTensorType::get({}, builder.getI64Type());
  auto i1Scalar = RankedTensorType::get({}, builder.getI1Type());

  // The scale: step state, or a constant.
  Value scale, tracker;
  builder.setInsertionPointToStart(&body);
  auto initScale = InitAttr::get(step.getContext(), InitKind::Constant,
                                 config.initScale);
  if (config.dynamic) {
    scale = addState("amp.loss_scale", f32Scalar, initScale);
    tracker = addState("amp.growth_tracker", i64Scalar, Attribute());
  } else {
    scale = FillOp::create(builder, loc, f32Scalar,
                           builder.getF64FloatAttr(config.staticScale));
  }
  // The micro-step reads the same scale (the state, or its own constant).
  Value seedScale = scale;
  if (backward != step) {
    Block &microBody = backward.getBody().front();
    if (config.dynamic) {
      SmallVector<DictionaryAttr> microAttrs = getArgAttrDicts(backward);
      seedScale = appendStateArgument(backward, microAttrs, "amp.loss_scale",
                                      f32Scalar, initScale);
      SmallVector<Value> microResults(
          microBody.getTerminator()->getOperands());
      setStepResults(backward, microResults, microAttrs,
                     getResultAttrDicts(backward));
    } else {
      builder.setInsertionPointToStart(&microBody);
      seedScale = FillOp::create(builder, loc, f32Scalar,
                                 builder.getF64FloatAttr(config.staticScale));
    }
  }

  // The backward pass starts from S.
  builder.setInsertionPointAfter(seed);
  auto scaleLoss = ScaleLossOp::create(builder, seed.getLoc(), f32Scalar,
                                       seed, seedScale);
  Value scaled = scaleLoss.getResult();
  if (seed.getType() != f32Scalar)
    scaled = CastOp::create(builder, seed.getLoc(), seed.getType(), scaled);
  seed.getResult().replaceAllUsesExcept(scaled, scaleLoss);
  seed->removeAttr(TGDialect::kLossSeedAttr);

  // The raw gradients: what clipping reads, or else what the updates read.
  SmallVector<OptimizerUpdateOpInterface> updates;
  llvm::SetVector<Value> raw;
  body.walk([&](OptimizerUpdateOpInterface op) { updates.push_back(op); });
  if (updates.empty())
    return step.emitOpError("has no optimizer update to protect with loss "
                            "scaling");
  GlobalNormOp norm;
  body.walk([&](GlobalNormOp op) { norm = op; });
  if (norm)
    raw.insert(norm.getInputs().begin(), norm.getInputs().end());
  else
    for (OptimizerUpdateOpInterface op : updates)
      raw.insert(op.getGrad());

  // Unscale each where it is complete.
  SmallVector<Value> unscaled;
  Operation *last = nullptr;
  for (Value grad : raw) {
    Operation *def = grad.getDefiningOp();
    if (!def)
      return step.emitOpError("a parameter gradient is a function argument");
    builder.setInsertionPointAfter(def);
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto op = UnscaleOp::create(builder, def->getLoc(), gradType.clone(f32),
                                grad, scale);
    Value value = op.getResult();
    if (gradType.getElementType() != f32)
      value = CastOp::create(builder, def->getLoc(), gradType, value);
    grad.replaceAllUsesExcept(value, op);
    unscaled.push_back(op.getResult());
    if (!last || last->isBeforeInBlock(value.getDefiningOp()))
      last = value.getDefiningOp();
  }

  builder.setInsertionPointAfter(last);
  Value finite = AllFiniteOp::create(builder, loc, i1Scalar, unscaled);
  for (OptimizerUpdateOpInterface op : updates) {
    if (!finite.getDefiningOp()->isBeforeInBlock(op))
      return op->emitOpError("runs before the gradients are complete; cannot "
                             "predicate it on their finiteness");
    op.setApply(finite);
  }

  // The step counter advances only when the update applied.
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = step.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    if (!name || name.getValue() != TGDialect::kStepCounterName)
      continue;
    auto add = value.getDefiningOp<AddOp>();
    if (!add || !add.getRhs().getDefiningOp<FillOp>())
      return step.emitOpError("the step counter is not updated by adding one; "
                              "cannot make it skip overflowing steps");
    builder.setInsertionPoint(add);
    Operation *one = add.getRhs().getDefiningOp();
    add.getRhsMutable().assign(
        CastOp::create(builder, add.getLoc(), i64Scalar, finite));
    if (one->use_empty())
      one->erase();
  }

  if (!config.dynamic) {
    step.setAllArgAttrs(argAttrs);
    return success();
  }

  // GradScaler.update: the new scale and tracker replace the state.
  builder.setInsertionPoint(ret);
  auto update = UpdateLossScaleOp::create(
      builder, loc, TypeRange{f32Scalar, i64Scalar}, scale, tracker, finite,
      builder.getF64FloatAttr(config.growthFactor),
      builder.getF64FloatAttr(config.backoffFactor),
      builder.getI64IntegerAttr(config.growthInterval));
  SmallVector<Value> results(ret.getOperands());
  SmallVector<DictionaryAttr> resultAttrs = getResultAttrDicts(step);
  auto updateAttr = [&](StringRef name) {
    return namedResultAttr(step.getContext(), TGDialect::kUpdateAttr, name);
  };
  results.push_back(update.getNewScale());
  resultAttrs.push_back(updateAttr("amp.loss_scale"));
  results.push_back(update.getNewGrowthTracker());
  resultAttrs.push_back(updateAttr("amp.growth_tracker"));
  setStepResults(step, results, argAttrs, resultAttrs);
  return success();
}

struct LossScalePass : tgc::tg::impl::TGLossScaleBase<LossScalePass> {
  using TGLossScaleBase::TGLossScaleBase;

  void runOnOperation() override {
    Config config;
    config.initScale = initScale;
    config.growthFactor = growthFactor;
    config.backoffFactor = backoffFactor;
    config.growthInterval = growthInterval;
    StringRef spec = mode;
    if (spec == "none")
      return markAllAnalysesPreserved();
    if (spec.consume_front("static:")) {
      config.dynamic = false;
      if (spec.getAsDouble(config.staticScale) ||
          !(config.staticScale > 0.0) ||
          !(config.staticScale <= double(std::numeric_limits<float>::max()))) {
        emitOptionError(getOperation(), "tg-loss-scale: a static scale must be a "
                                 "positive number that is finite in f32, "
                                 "found '")
            << spec << "'";
        return signalPassFailure();
      }
    } else if (spec != "dynamic") {
      emitOptionError(getOperation(), "tg-loss-scale: mode must be dynamic, "
                               "static:<value> or none, found '")
          << mode << "'";
      return signalPassFailure();
    }
    if (config.dynamic &&
        (!(config.initScale > 0.0) ||
         !(config.initScale <= double(std::numeric_limits<float>::max())) ||
         !(config.growthFactor > 1.0) || !std::isfinite(config.growthFactor) ||
         !(config.backoffFactor > 0.0 && config.backoffFactor < 1.0) ||
         config.growthInterval < 1)) {
      emitOptionError(getOperation(), 
          "tg-loss-scale: needs init-scale > 0 (finite in f32), a finite "
          "growth-factor > 1, "
          "backoff-factor in (0, 1) and growth-interval >= 1");
      return signalPassFailure();
    }
    if (failed(forEachTrainStep(getOperation(), "tg-loss-scale",
                                "tg-autodiff", [&](func::FuncOp step) {
                                  return Rewriter(step, config).run();
                                })))
      return signalPassFailure();
  }
};

} // namespace
