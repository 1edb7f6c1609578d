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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISERMSNORM
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A scalar float constant's value, as the shortest decimal that rounds to
/// it in its own type (the model's `1e-05`, not f32's 9.99999975e-06).
std::optional<double> scalarConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  APFloat value = dense.getSplatValue<APFloat>();
  double exact = value.convertToDouble();
  // The fewest significant digits that round back to the same value in
  // the constant's type.
  for (int digits = 1; digits <= 17; ++digits) {
    char text[40];
    std::snprintf(text, sizeof text, "%.*g", digits, exact);
    double shortest = std::strtod(text, nullptr);
    APFloat back(shortest);
    bool lost = false;
    back.convert(value.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
    if (back.bitwiseIsEqual(value))
      return shortest;
  }
  return exact;
}

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
    std::optional<double> eps = scalarConstant(add.getRhs());
    Value mean = add.getLhs();
    if (!eps) {
      eps = scalarConstant(add.getLhs());
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
    auto norm = RmsNormOp::create(builder, scale->getLoc(), x.getType(), x,
                                  weight, builder.getF64FloatAttr(*eps));
    scale->getResult(0).replaceAllUsesWith(norm.getResult());
    for (Operation *op : {scale, normalize, rsqrt.getOperation(),
                          add.getOperation(), reduce.getOperation(),
                          square.getOperation()}) {
      SmallVector<Operation *> constants;
      for (Value operand : op->getOperands())
        if (auto c = operand.getDefiningOp<ConstantOp>())
          constants.push_back(c);
      op->erase();
      for (Operation *c : constants)
        if (c->use_empty())
          c->erase();
    }
  }
};

} // namespace
