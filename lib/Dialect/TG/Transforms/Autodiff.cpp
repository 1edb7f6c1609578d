//===- Autodiff.cpp - the tg-autodiff pass --------------------------------===//
//
// Turns each tg.model function into a training step:
//   1. clone the forward pass into a new function;
//   2. find the values that depend on a trainable parameter (the "active"
//      values); only they get cotangents, so inputs and frozen parameters
//      cost no backward work;
//   3. sweep the forward ops in reverse, asking each op for its
//      vector-Jacobian product through GradientOpInterface and summing the
//      cotangents of values used more than once;
//   4. optionally clip the gradients' global norm, then apply the optimizer
//      update to every trainable parameter that reaches the loss;
//   5. return the loss (and the model's metrics) and the updated
//      parameters and state, each result naming the argument it replaces
//      (`tg.update`).
// Backward ops that compute cotangents nobody needs are erased at the end.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tg-autodiff"

namespace tgc::tg {
#define GEN_PASS_DEF_TGAUTODIFF
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// A trainable parameter and its gradient.
struct TrainableParam {
  unsigned argIndex;
  std::string name;
  Value grad;
};

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// Builds the training step of one model function.
class TrainStepBuilder {
public:
  explicit TrainStepBuilder(func::FuncOp model)
      : model(model), builder(model.getContext()) {}

  LogicalResult build();

private:
  LogicalResult cloneForward();
  void markActive();
  LogicalResult buildBackward();
  void accumulate(Value value, Value grad);
  void finish();

  Value fill(Type type, double value) {
    return FillOp::create(builder, loc, type, builder.getF64FloatAttr(value));
  }

  func::FuncOp model;
  OpBuilder builder;
  Location loc = UnknownLoc::get(model.getContext());

  func::FuncOp step;
  Block *body = nullptr;
  IRMapping mapping;
  Value loss;
  SmallVector<Operation *> forwardOps;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;
  SmallVector<Operation *> backwardOps;
  SmallVector<TrainableParam> params;
  SmallVector<DictionaryAttr> argAttrs;
  /// The model's metrics (tg.metric results after the loss), returned as
  /// they are.
  SmallVector<std::pair<Value, DictionaryAttr>> metrics;
};

LogicalResult TrainStepBuilder::build() {
  if (failed(cloneForward()))
    return failure();
  markActive();
  if (failed(buildBackward()))
    return failure();
  finish();
  return success();
}

LogicalResult TrainStepBuilder::cloneForward() {
  loc = model.getLoc();
  builder.setInsertionPointAfter(model);
  std::string name = (model.getSymName() + "_train_step").str();
  if (SymbolTable::lookupNearestSymbolFrom(model, builder.getStringAttr(name)))
    return model.emitOpError("cannot create the training step: a symbol "
                             "named '")
           << name << "' already exists";
  step = func::FuncOp::create(builder, loc, name,
                              builder.getFunctionType({}, {}));
  step->setAttr(TGDialect::kTrainStepAttr, builder.getUnitAttr());
  body = step.addEntryBlock();

  // Parameters and inputs keep their order and attributes; tg-optimizer
  // appends the optimizer's state.
  Block &forward = model.getBody().front();
  for (BlockArgument arg : forward.getArguments()) {
    mapping.map(arg, body->addArgument(arg.getType(), arg.getLoc()));
    argAttrs.push_back(model.getArgAttrDict(arg.getArgNumber())
                           ? model.getArgAttrDict(arg.getArgNumber())
                           : builder.getDictionaryAttr({}));
  }

  builder.setInsertionPointToStart(body);
  for (Operation &op : forward.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitOpError("tg-autodiff does not differentiate ops with "
                            "regions");
    forwardOps.push_back(builder.clone(op, mapping));
  }
  auto ret = cast<func::ReturnOp>(forward.getTerminator());
  loss = mapping.lookup(ret.getOperand(0));
  for (unsigned i = 1, e = ret.getNumOperands(); i < e; ++i)
    metrics.push_back(
        {mapping.lookup(ret.getOperand(i)), model.getResultAttrDict(i)});
  return success();
}

void TrainStepBuilder::markActive() {
  Block &forward = model.getBody().front();
  for (BlockArgument arg : forward.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!model.getArgAttr(i, TGDialect::kParamAttr) ||
        model.getArgAttr(i, TGDialect::kFrozenAttr))
      continue;
    active.insert(body->getArgument(i));
    params.push_back(
        {i, model.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttr).str(),
         Value()});
  }
  for (Operation *op : forwardOps) {
    bool anyActive = llvm::any_of(op->getOperands(), [&](Value operand) {
      return active.contains(operand);
    });
    if (!anyActive)
      continue;
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        active.insert(result);
  }
}

LogicalResult TrainStepBuilder::buildBackward() {
  if (!active.contains(loss))
    return success();
  builder.setInsertionPointToEnd(body);
  grads[loss] = fill(loss.getType(), 1.0);
  // Loss scaling (tg-loss-scale) finds and scales the seed by this mark.
  grads[loss].getDefiningOp()->setAttr(TGDialect::kLossSeedAttr,
                                       builder.getUnitAttr());
  backwardOps.push_back(grads[loss].getDefiningOp());

  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGrads;
    bool anyGrad = false;
    for (Value result : op->getResults()) {
      resultGrads.push_back(grads.lookup(result));
      anyGrad |= bool(resultGrads.back());
    }
    if (!anyGrad)
      continue;
    bool needsGrad = llvm::any_of(op->getOperands(), [&](Value operand) {
      return active.contains(operand);
    });
    if (!needsGrad)
      continue;
    auto differentiable = dyn_cast<GradientOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("has no gradient rule, but the loss depends on "
                             "it through a trainable parameter");

    loc = op->getLoc();
    Operation *before = body->empty() ? nullptr : &body->back();
    SmallVector<Value> operandGrads;
    SmallVector<bool> needed;
    for (Value operand : op->getOperands())
      needed.push_back(active.contains(operand));
    if (failed(differentiable.buildVectorJacobianProduct(
            builder, resultGrads, needed, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandGrads.size() << " cotangents for "
             << op->getNumOperands() << " operands";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && active.contains(operand))
        accumulate(operand, grad);
    for (Operation *it = before ? before->getNextNode() : &body->front(); it;
         it = it->getNextNode())
      backwardOps.push_back(it);
  }
  loc = step.getLoc();
  for (TrainableParam &param : params)
    param.grad = grads.lookup(body->getArgument(param.argIndex));
  return success();
}

/// Adds `grad` to the cotangent of `value`. The cotangents of a narrowing
/// float cast (an f32 master weight's bf16 working copy, say) are widened
/// one by one and summed at the cast's operand, so a value used in low
/// precision by several ops still gets its gradient summed in its own,
/// wider precision.
void TrainStepBuilder::accumulate(Value value, Value grad) {
  if (auto cast = value.getDefiningOp<CastOp>()) {
    Type from = getElementTypeOrSelf(cast.getInput().getType());
    Type to = getElementTypeOrSelf(cast.getType());
    if (isa<FloatType>(from) && isa<FloatType>(to) &&
        to.getIntOrFloatBitWidth() < from.getIntOrFloatBitWidth() &&
        active.contains(cast.getInput())) {
      Value wide = CastOp::create(builder, loc, cast.getInput().getType(), grad);
      accumulate(cast.getInput(), wide);
      return;
    }
  }
  Value &sum = grads[value];
  sum = sum ? AddOp::create(builder, loc, value.getType(), sum, grad).getResult()
            : grad;
}

void TrainStepBuilder::finish() {
  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs = {builder.getDictionaryAttr(
      builder.getNamedAttr(TGDialect::kLossAttr, builder.getUnitAttr()))};
  for (auto [value, attrs] : metrics) {
    results.push_back(value);
    resultAttrs.push_back(attrs);
  }
  for (TrainableParam &param : params) {
    if (!param.grad)
      continue;
    results.push_back(param.grad);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        TGDialect::kGradAttr, builder.getStringAttr(param.name))));
  }
  func::ReturnOp::create(builder, loc, results);
  // Cotangents computed for inputs, frozen parameters or not at all used.
  for (Operation *op : llvm::reverse(backwardOps))
    if (op->use_empty())
      op->erase();
  step.setType(builder.getFunctionType(body->getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
}

struct AutodiffPass : tgc::tg::impl::TGAutodiffBase<AutodiffPass> {
  using TGAutodiffBase::TGAutodiffBase;

  void runOnOperation() override {
    SmallVector<func::FuncOp> models;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(TGDialect::kModelAttr))
        models.push_back(function);
    if (models.empty()) {
      getOperation().emitError("tg-autodiff found no function marked "
                               "tg.model to differentiate");
      return signalPassFailure();
    }
    for (func::FuncOp model : models)
      if (failed(TrainStepBuilder(model).build()))
        return signalPassFailure();
  }
};

} // namespace
