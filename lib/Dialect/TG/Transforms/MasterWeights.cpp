//===- MasterWeights.cpp - the tg-master-weights pass ---------------------===//
//
// Retypes a model's trainable f32 parameters to bf16: the reads of their
// 16-bit working copies (tg-amp's narrowing casts) read the parameter
// itself, an embedding reads the 16-bit table (widening the rows it looks
// up), and every other read goes through one exact widening cast. The
// gradients, the optimizer's f32 moments and the stochastic rounding of
// the update follow from tg-autodiff and tg-optimizer.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tg-master-weights"

namespace tgc::tg {
#define GEN_PASS_DEF_TGMASTERWEIGHTS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

struct MasterWeightsPass
    : tgc::tg::impl::TGMasterWeightsBase<MasterWeightsPass> {
  using TGMasterWeightsBase::TGMasterWeightsBase;

  void runOnOperation() override {
    if (dtype == tg::MasterWeights::F32)
      return;
    bool any = false;
    for (auto model : getOperation().getOps<func::FuncOp>()) {
      if (!model->hasAttr(tg::TGDialect::kModelAttr))
        continue;
      any = true;
      if (failed(narrow(model)))
        return signalPassFailure();
    }
    if (!any) {
      getOperation().emitError("tg-master-weights found no function marked "
                               "tg.model");
      return signalPassFailure();
    }
  }

  LogicalResult narrow(func::FuncOp model) {
    Block &body = model.getBody().front();
    Type bf16 = BFloat16Type::get(&getContext());
    int narrowed = 0;
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!model.getArgAttr(i, tg::TGDialect::kParamAttr) ||
          model.getArgAttr(i, tg::TGDialect::kFrozenAttr))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      if (!type.getElementType().isF32())
        continue;
      ++narrowed;
      arg.setType(type.clone(bf16));
      // The working copies are the parameter now; an embedding reads the
      // 16-bit table itself, widening the rows it looks up (no f32 copy of
      // the table); every other read widens.
      SmallVector<OpOperand *> wideReads;
      SmallVector<tg::CastOp> copies;
      for (OpOperand &use : arg.getUses()) {
        auto narrowing = dyn_cast<tg::CastOp>(use.getOwner());
        if (narrowing && narrowing.getResult().getType() == arg.getType())
          copies.push_back(narrowing);
        else if (!isa<tg::EmbeddingOp>(use.getOwner()) ||
                 use.getOperandNumber() != 0)
          wideReads.push_back(&use);
      }
      for (tg::CastOp copy : copies) {
        copy.getResult().replaceAllUsesWith(arg);
        copy->erase();
      }
      if (wideReads.empty())
        continue;
      // (A builder made now: the erased casts may have been the first op.)
      OpBuilder builder = OpBuilder::atBlockBegin(&body);
      auto widen = tg::CastOp::create(builder, arg.getLoc(), type, arg);
      for (OpOperand *use : wideReads)
        use->set(widen);
    }
    if (narrowed == 0)
      return model.emitError("tg-master-weights: dtype=bf16 but @")
             << model.getSymName() << " has no trainable f32 parameter";
    model.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                    model.getResultTypes()));
    return success();
  }
};

} // namespace
