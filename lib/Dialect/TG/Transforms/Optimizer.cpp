//===- Optimizer.cpp - the tg-optimizer pass ------------------------------===//
//
// Turns the gradients of a training step (tg-autodiff's `tg.grad` results)
// into optimizer updates: optionally clip their global norm, then update
// every parameter with SGD, AdamW or Adafactor, creating the state the
// optimizer owns,
// named as torch.optim names it, with the learning rate and the step count
// as persistent inputs of every update (`optimizer.lr`, `optimizer.step`),
// not constants folded into it: a schedule or a resumed run changes the
// tensor, not the program.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "OptionErrors.h"

#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <limits>

#define DEBUG_TYPE "tg-optimizer"

namespace tgc::tg {
#define GEN_PASS_DEF_TGOPTIMIZER
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// The optimizer configuration, checked once per pass run.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  double lr, beta1, beta2, eps, weightDecay, momentum, dampening;
  bool nesterov;
  double clipGradNorm;
  double decayRate, clipThreshold;
  bool relativeStep, scaleParameter, warmupInit;
  bool stochasticRounding;
};

/// The seed of a bf16 parameter's stochastic rounding: FNV-1a of its name,
/// odd (never 0, which means rounding to nearest), so that parameters draw
/// different bits and a rebuilt model draws the same.
int64_t roundingSeedOf(StringRef name) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : name) {
    hash ^= uint8_t(c);
    hash *= 1099511628211ull;
  }
  return int64_t((hash | 1) & 0x7fffffffffffffffull);
}

/// A gradient result of the step and the parameter argument it belongs to.
struct Gradient {
  Value value;
  BlockArgument param;
  std::string name;
};

class UpdateBuilder {
public:
  UpdateBuilder(func::FuncOp step, const OptimizerConfig &config)
      : step(step), config(config), builder(step.getContext()),
        loc(step.getLoc()) {}

  LogicalResult build();

private:
  Value scalar(Type elementType, double value) {
    return FillOp::create(builder, loc, RankedTensorType::get({}, elementType),
                          builder.getF64FloatAttr(value));
  }
  BlockArgument addState(StringRef name, Type type, Attribute init = {}) {
    return appendStateArgument(step, argAttrs, name, type, init);
  }
  void clipGradients();
  void addUpdate(Value value, StringRef name) {
    results.push_back(value);
    resultAttrs.push_back(
        namedResultAttr(builder.getContext(), TGDialect::kUpdateAttr, name));
  }

  func::FuncOp step;
  const OptimizerConfig &config;
  OpBuilder builder;
  Location loc;
  SmallVector<Gradient> gradients;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
};

LogicalResult UpdateBuilder::build() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::StringMap<BlockArgument> paramsByName;
  argAttrs = getArgAttrDicts(step);
  SmallVector<DictionaryAttr> oldResultAttrs = getResultAttrDicts(step);
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    if (auto state = step.getArgAttrOfType<StringAttr>(i, TGDialect::kStateAttr))
      if (state.getValue() == TGDialect::kStepCounterName)
        return step.emitOpError("already has an optimizer (a '")
               << TGDialect::kStepCounterName
               << "' argument); run tg-optimizer once, on the output of "
                  "tg-autodiff";
    if (auto name = step.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttr))
      paramsByName[name.getValue()] = body.getArgument(i);
  }
  // The loss and any other non-gradient results stay; gradients become
  // updates. The dialect verifier has checked that each gradient names a
  // parameter of its type.
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (auto grad = step.getResultAttrOfType<StringAttr>(i, TGDialect::kGradAttr)) {
      gradients.push_back({value, paramsByName.lookup(grad.getValue()),
                           grad.getValue().str()});
      continue;
    }
    results.push_back(value);
    resultAttrs.push_back(oldResultAttrs[i]);
  }

  builder.setInsertionPoint(ret);
  if (config.clipGradNorm > 0.0)
    clipGradients();

  Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
  auto i64Scalar = RankedTensorType::get({}, i64);
  auto f32Scalar = RankedTensorType::get({}, f32);
  BlockArgument counter = addState(TGDialect::kStepCounterName, i64Scalar);
  Value lr = addState(TGDialect::kLearningRateName, f32Scalar,
                      InitAttr::get(step.getContext(), InitKind::Constant,
                                    config.lr));
  // The update of step t uses t = previous count + 1 (1-based, as torch).
  Value stepCount =
      AddOp::create(builder, loc, i64Scalar, counter, scalar(i64, 1.0));

  for (Gradient &gradient : gradients) {
    Value param = gradient.param;
    Type type = param.getType();
    const std::string &name = gradient.name;
    if (config.kind == OptimizerKind::Adafactor) {
      // Hugging Face's state: the row and column second moments of a
      // matrix (over its last two dimensions), else the full one; f32.
      auto shape = cast<RankedTensorType>(type).getShape();
      Type f32Type = builder.getF32Type();
      SmallVector<Value> state;
      SmallVector<std::string> names;
      if (shape.size() >= 2) {
        SmallVector<int64_t> col(shape.drop_back(2));
        col.push_back(shape.back());
        state.push_back(addState(name + ".exp_avg_sq_row",
                                 RankedTensorType::get(shape.drop_back(),
                                                       f32Type)));
        state.push_back(
            addState(name + ".exp_avg_sq_col", RankedTensorType::get(col, f32Type)));
        names = {name + ".exp_avg_sq_row", name + ".exp_avg_sq_col"};
      } else {
        state.push_back(addState(name + ".exp_avg_sq",
                                 RankedTensorType::get(shape, f32Type)));
        names = {name + ".exp_avg_sq"};
      }
      auto update = AdafactorUpdateOp::create(
          builder, loc, type, ValueRange(state).getTypes(), param,
          gradient.value, state, lr, stepCount, /*apply=*/Value(),
          builder.getF64FloatAttr(config.decayRate),
          builder.getF64FloatAttr(config.clipThreshold),
          builder.getF64FloatAttr(1e-30), builder.getF64FloatAttr(1e-3),
          builder.getF64FloatAttr(config.weightDecay),
          builder.getBoolAttr(config.relativeStep),
          builder.getBoolAttr(config.scaleParameter),
          builder.getBoolAttr(config.warmupInit));
      addUpdate(update.getNewParam(), name);
      for (auto [value, stateName] : llvm::zip(update.getNewState(), names))
        addUpdate(value, stateName);
      continue;
    }
    if (config.kind == OptimizerKind::AdamW) {
      // A bf16 parameter (master weights without an f32 copy) keeps f32
      // moments, as torchao's bf16 AdamW can, and rounds its update
      // stochastically.
      Type stateType = type;
      int64_t seed = 0;
      if (getElementTypeOrSelf(type).isBF16()) {
        stateType = cast<RankedTensorType>(type).clone(f32);
        if (config.stochasticRounding)
          seed = roundingSeedOf(name);
      }
      BlockArgument m = addState(name + ".exp_avg", stateType);
      BlockArgument v = addState(name + ".exp_avg_sq", stateType);
      auto update = AdamWUpdateOp::create(
          builder, loc, TypeRange{type, stateType, stateType}, param,
          gradient.value, m, v, lr, stepCount, /*part=*/Value(),
          /*apply=*/Value(), builder.getF64FloatAttr(config.beta1),
          builder.getF64FloatAttr(config.beta2),
          builder.getF64FloatAttr(config.eps),
          builder.getF64FloatAttr(config.weightDecay),
          builder.getI64IntegerAttr(seed));
      addUpdate(update.getNewParam(), name);
      addUpdate(update.getNewExpAvg(), name + ".exp_avg");
      addUpdate(update.getNewExpAvgSq(), name + ".exp_avg_sq");
      continue;
    }
    Value buffer;
    SmallVector<Type> resultTypes = {type};
    if (config.momentum != 0.0) {
      buffer = addState(name + ".momentum_buffer", type);
      resultTypes.push_back(type);
    }
    auto update = SGDUpdateOp::create(
        builder, loc, resultTypes, param, gradient.value, lr, stepCount,
        buffer, /*apply=*/Value(), builder.getF64FloatAttr(config.momentum),
        builder.getF64FloatAttr(config.dampening),
        builder.getF64FloatAttr(config.weightDecay),
        builder.getBoolAttr(config.nesterov));
    addUpdate(update.getNewParam(), name);
    if (buffer)
      addUpdate(update.getNewMomentumBuffer(), name + ".momentum_buffer");
  }
  addUpdate(stepCount, TGDialect::kStepCounterName);

  setStepResults(step, results, argAttrs, resultAttrs);
  return success();
}

// torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped
// to at most 1, multiplies every gradient.
void UpdateBuilder::clipGradients() {
  SmallVector<Value> all;
  for (Gradient &gradient : gradients)
    all.push_back(gradient.value);
  if (all.empty())
    return;
  Type f32 = builder.getF32Type();
  Type scalarType = RankedTensorType::get({}, f32);
  Value norm = GlobalNormOp::create(builder, loc, scalarType, all);
  Value denom = AddOp::create(builder, loc, scalarType, norm, scalar(f32, 1e-6));
  Value coef = DivOp::create(builder, loc, scalarType,
                             scalar(f32, config.clipGradNorm), denom);
  coef = MinimumOp::create(builder, loc, scalarType, coef, scalar(f32, 1.0));
  for (Gradient &gradient : gradients) {
    auto gradType = cast<RankedTensorType>(gradient.value.getType());
    Value factor = coef;
    if (gradType.getElementType() != f32)
      factor = CastOp::create(
          builder, loc, RankedTensorType::get({}, gradType.getElementType()),
          coef);
    gradient.value = MulOp::create(builder, loc, gradType, gradient.value,
                                   factor);
  }
}

struct OptimizerPass : tgc::tg::impl::TGOptimizerBase<OptimizerPass> {
  using TGOptimizerBase::TGOptimizerBase;

  // weight-decay's default (-1: the optimizer's own, 0.01 for AdamW and 0
  // for the others) must not be what a user gets by typing -1.
  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) override {
    if (failed(TGOptimizerBase::initializeOptions(options, errorHandler)))
      return failure();
    std::string bad = checkWeightDecay(weightDecay, weightDecay.hasValue());
    if (!bad.empty())
      return errorHandler("tg-optimizer: " + bad);
    return success();
  }

  void runOnOperation() override {
    OptimizerConfig config;
    if (failed(readConfig(config)))
      return signalPassFailure();
    if (failed(forEachTrainStep(getOperation(), "tg-optimizer", "tg-autodiff",
                                [&](func::FuncOp step) {
                                  return UpdateBuilder(step, config).build();
                                })))
      return signalPassFailure();
  }

  LogicalResult readConfig(OptimizerConfig &config) {
    auto error = [&]() { return emitOptionError(getOperation(), "tg-optimizer: "); };
    config.kind = optimizer;
    bool adamw = config.kind == OptimizerKind::AdamW;
    config.decayRate = decayRate;
    config.clipThreshold = clipThreshold;
    config.relativeStep = relativeStep;
    config.scaleParameter = scaleParameter;
    config.warmupInit = warmupInit;
    config.stochasticRounding = stochasticRounding;
    config.lr = lr;
    config.beta1 = beta1;
    config.beta2 = beta2;
    config.eps = eps;
    config.weightDecay = resolveWeightDecay(weightDecay, adamw);
    config.momentum = momentum;
    config.dampening = dampening;
    config.nesterov = nesterov;
    config.clipGradNorm = clipGradNorm;
    if (!(lr >= 0.0) || !std::isfinite(double(lr)))
      return error() << "lr must be a finite non-negative number, found "
                     << lr;
    if (std::string bad = checkWeightDecay(weightDecay, false); !bad.empty())
      return error() << bad;
    if (!(clipGradNorm >= 0.0) || !std::isfinite(double(clipGradNorm)))
      return error() << "clip-grad-norm must be non-negative (0 disables it), "
                        "found "
                     << clipGradNorm;
    if (config.kind != OptimizerKind::SGD &&
        (momentum != 0.0 || dampening != 0.0 || nesterov))
      return error() << "momentum, dampening and nesterov apply to sgd, not "
                     << choiceName(config.kind);
    if (config.kind == OptimizerKind::Adafactor &&
        (!(decayRate < 0.0) || !std::isfinite(double(decayRate)) ||
         !(clipThreshold > 0.0) || !std::isfinite(double(clipThreshold))))
      return error() << "adafactor needs decay-rate < 0 and clip-threshold "
                        "> 0";
    // The update ops' verifiers check the remaining ranges at their
    // location; report them here, once, with the option names.
    if (adamw && !(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 &&
                   beta2 < 1.0))
      return error() << "beta1 and beta2 must be in [0, 1)";
    if (adamw && (!(eps >= 0.0) || !std::isfinite(double(eps))))
      return error() << "eps must be a finite non-negative number, found "
                     << eps;
    if (config.kind == OptimizerKind::SGD &&
        (!(momentum >= 0.0) || !std::isfinite(double(momentum)) ||
         !(dampening >= 0.0 && dampening <= 1.0)))
      return error() << "momentum must be >= 0 and dampening in [0, 1]";
    if (nesterov && (momentum <= 0.0 || dampening != 0.0))
      return error() << "nesterov needs momentum > 0 and dampening 0";
    // The learning rate becomes an f32 tensor and the others f32 operands
    // of the kernels: each must be finite in f32, not only in double.
    const std::pair<const char *, double> asF32[] = {
        {"lr", lr},           {"eps", eps},
        {"weight-decay", config.weightDecay},
        {"clip-grad-norm", clipGradNorm},
        {"momentum", momentum}};
    for (auto [name, value] : asF32)
      if (std::abs(value) > double(std::numeric_limits<float>::max()))
        return error() << name << " = " << value
                       << " is not finite in f32, where the step keeps it";
    return success();
  }
};

} // namespace

std::string tgc::tg::checkWeightDecay(double value, bool given) {
  constexpr double kDefault = -1.0; // TGOptimizerOptions().weightDecay
  if (std::isfinite(value) && (value >= 0.0 || (!given && value == kDefault)))
    return "";
  return "weight-decay must be non-negative, found " + std::to_string(value);
}

double tgc::tg::resolveWeightDecay(double value, bool adamw) {
  return value < 0.0 ? (adamw ? 0.01 : 0.0) : value;
}
