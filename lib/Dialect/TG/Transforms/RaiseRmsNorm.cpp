//===- RaiseRmsNorm.cpp - the tg-raise-rms-norm pass ----------------------===//
//
// RMSNorm written out as Hugging Face's Llama writes it (what tgc-import
// traces) becomes one tg.rms_norm:
//
//   variance = reduce_mean(x * x) over the last axis, kept
//   y = weight * (x * rsqrt(variance + eps))
//
// (either operand order of each product; the weight any tensor of x's last
// dimension, Gemma's `1 + weight` included). tg.rms_norm keeps one value
// for the backward pass where the written form keeps several [.., C]
// tensors. A chain whose intermediate values have other users is left.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Raise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISERMSNORM
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The other operand of a binary op when one of them is `known`.
Value otherOperand(Operation *op, Value known) {
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return {};
}

struct TGRaiseRmsNorm
    : public tgc::tg::impl::TGRaiseRmsNormBase<TGRaiseRmsNorm> {
  void runOnOperation() override {
    SmallVector<RsqrtOp> rsqrts;
    getOperation().walk([&](RsqrtOp op) { rsqrts.push_back(op); });
    for (RsqrtOp rsqrt : rsqrts)
      raise(rsqrt);
  }

  void raise(RsqrtOp rsqrt) {
    // rsqrt(mean(x * x) + eps)
    auto add = rsqrt.getInput().getDefiningOp<AddOp>();
    if (!add || !add.getResult().hasOneUse() || !rsqrt.getResult().hasOneUse())
      return;
    std::optional<double> eps = raise::shortestScalarConstant(add.getRhs());
    Value mean = add.getLhs();
    if (!eps) {
      eps = raise::shortestScalarConstant(add.getLhs());
      mean = add.getRhs();
    }
    auto reduce = mean.getDefiningOp<ReduceMeanOp>();
    if (!eps || !(*eps >= 0.0) || !reduce || !mean.hasOneUse() ||
        !reduce.getKeepDims())
      return;
    auto square = reduce.getInput().getDefiningOp<MulOp>();
    if (!square || square.getLhs() != square.getRhs() ||
        !square.getResult().hasOneUse())
      return;
    Value x = square.getLhs();
    int64_t rank = typeOf(x).getRank();
    if (rank < 1 || reduce.getAxes() != ArrayRef<int64_t>{rank - 1})
      return;
    // x * rsqrt(...), then the weight.
    Operation *normalize = *rsqrt.getResult().getUsers().begin();
    if (!isa<MulOp>(normalize) ||
        otherOperand(normalize, rsqrt.getResult()) != x ||
        !normalize->getResult(0).hasOneUse())
      return;
    Operation *scale = *normalize->getResult(0).getUsers().begin();
    Value weight = isa<MulOp>(scale)
                       ? otherOperand(scale, normalize->getResult(0))
                       : Value();
    if (!weight || typeOf(scale->getResult(0)) != typeOf(x) ||
        typeOf(weight).getShape() !=
            ArrayRef<int64_t>{typeOf(x).getShape().back()} ||
        typeOf(weight).getElementType() != typeOf(x).getElementType())
      return;
    OpBuilder builder(scale);
    auto norm = RmsNormOp::create(builder, scale->getLoc(), x.getType(),
                                  /*sum=*/Type(), x, weight, /*addend=*/Value(),
                                  builder.getF64FloatAttr(*eps));
    scale->getResult(0).replaceAllUsesWith(norm.getResult());
    raise::eraseUnused({scale, normalize, rsqrt.getOperation(),
                        add.getOperation(), reduce.getOperation(),
                        square.getOperation()});
  }
};

} // namespace
