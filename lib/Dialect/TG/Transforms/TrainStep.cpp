//===- TrainStep.cpp - what the passes on training steps share ------------===//

#include "TrainStep.h"

#include "tgc/Dialect/TG/IR/TGDialect.h"

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

} // namespace tgc::tg
