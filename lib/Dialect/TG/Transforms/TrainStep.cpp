//===- TrainStep.cpp - what the passes on training steps share ------------===//

#include "TrainStep.h"

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace tgc::tg {

LogicalResult
forEachTrainStep(ModuleOp module, StringRef pass, StringRef after,
                 function_ref<LogicalResult(func::FuncOp)> rewrite) {
  bool any = false;
  for (auto step : module.getOps<func::FuncOp>()) {
    if (!step->hasAttr(TGDialect::kTrainStepAttr))
      continue;
    any = true;
    if (failed(rewrite(step)))
      return failure();
  }
  if (!any)
    return module.emitError()
           << pass << " found no function marked tg.train_step; run it after "
           << after;
  return success();
}

Operation *findBackwardStart(func::FuncOp function) {
  for (Operation &op : function.getBody().front())
    if (op.hasAttr(TGDialect::kLossSeedAttr) || isa<ScaleLossOp>(op))
      return &op;
  return nullptr;
}

BlockArgument appendStateArgument(func::FuncOp step,
                                  SmallVectorImpl<DictionaryAttr> &argAttrs,
                                  StringRef name, Type type, Attribute init) {
  Builder builder(step.getContext());
  BlockArgument arg = step.getBody().front().addArgument(type, step.getLoc());
  NamedAttrList attrs;
  attrs.set(TGDialect::kStateAttr, builder.getStringAttr(name));
  if (init)
    attrs.set(TGDialect::kInitAttr, init);
  argAttrs.push_back(attrs.getDictionary(step.getContext()));
  return arg;
}

SmallVector<DictionaryAttr> getArgAttrDicts(func::FuncOp function) {
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    attrs.push_back(function.getArgAttrDict(i)
                        ? function.getArgAttrDict(i)
                        : DictionaryAttr::get(function.getContext()));
  return attrs;
}

SmallVector<DictionaryAttr> getResultAttrDicts(func::FuncOp function) {
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    attrs.push_back(function.getResultAttrDict(i)
                        ? function.getResultAttrDict(i)
                        : DictionaryAttr::get(function.getContext()));
  return attrs;
}

DictionaryAttr namedResultAttr(MLIRContext *context, StringRef attr,
                               StringRef name) {
  Builder builder(context);
  return builder.getDictionaryAttr(
      builder.getNamedAttr(attr, builder.getStringAttr(name)));
}

void setStepResults(func::FuncOp function, ValueRange results,
                    ArrayRef<DictionaryAttr> argAttrs,
                    ArrayRef<DictionaryAttr> resultAttrs) {
  Block &body = function.getBody().front();
  body.getTerminator()->setOperands(results);
  function.setType(FunctionType::get(function.getContext(),
                                     body.getArgumentTypes(),
                                     results.getTypes()));
  function.setAllArgAttrs(argAttrs);
  function.setAllResultAttrs(resultAttrs);
}

} // namespace tgc::tg
