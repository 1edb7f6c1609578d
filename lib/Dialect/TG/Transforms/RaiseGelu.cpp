//===- RaiseGelu.cpp - the tg-raise-gelu pass -----------------------------===//
//
// GELU's tanh approximation written out (GPT-2's "gelu_new" as Hugging
// Face writes it, what tgc-import traces) becomes one tg.gelu:
//
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//
// with x^3 as x * x * x, each product and sum in either operand order, and
// the constants equal to those within f32's rounding (1e-6 relative).
// tg.gelu keeps its input for the backward pass where the written form
// keeps several tensors of its size. A chain whose intermediate values have
// other users is left.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Raise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <optional>

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISEGELU
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;
using tgc::tg::raise::scalarConstant;

namespace {

bool near(std::optional<double> value, double want) {
  return value && std::abs(*value - want) <= 1e-6 * std::abs(want);
}

/// The operands of a commutative binary op of kind Op, the one that is a
/// scalar constant equal to `want` second: the other, or null.
template <typename Op> Value byConstant(Value v, double want) {
  auto op = v.getDefiningOp<Op>();
  if (!op)
    return {};
  if (near(scalarConstant(op->getOperand(1)), want))
    return op->getOperand(0);
  if (near(scalarConstant(op->getOperand(0)), want))
    return op->getOperand(1);
  return {};
}

struct TGRaiseGelu : public tgc::tg::impl::TGRaiseGeluBase<TGRaiseGelu> {
  void runOnOperation() override {
    SmallVector<TanhOp> tanhs;
    getOperation().walk([&](TanhOp op) { tanhs.push_back(op); });
    for (TanhOp tanh : tanhs)
      raise(tanh);
  }

  void raise(TanhOp tanh) {
    SmallVector<Operation *> chain; // to erase once replaced, users first
    auto single = [](Value v) { return v.hasOneUse(); };
    // tanh(c * (x + 0.044715 * x^3))
    Value inner = byConstant<MulOp>(tanh.getInput(), std::sqrt(2.0 / M_PI));
    if (!inner || !single(tanh.getInput()) || !single(inner))
      return;
    auto sum = inner.getDefiningOp<AddOp>();
    if (!sum)
      return;
    Value x, cubic;
    for (auto [a, b] : {std::pair(sum.getLhs(), sum.getRhs()),
                        std::pair(sum.getRhs(), sum.getLhs())}) {
      Value cube = byConstant<MulOp>(b, 0.044715);
      if (!cube || !single(b) || !single(cube))
        continue;
      // x * x * x, in either grouping.
      auto outer = cube.getDefiningOp<MulOp>();
      if (!outer)
        continue;
      for (auto [sq, lone] : {std::pair(outer.getLhs(), outer.getRhs()),
                              std::pair(outer.getRhs(), outer.getLhs())}) {
        auto square = sq.getDefiningOp<MulOp>();
        if (square && single(sq) && square.getLhs() == lone &&
            square.getRhs() == lone && lone == a) {
          x = a;
          cubic = sq;
        }
      }
      if (x) {
        chain.append({tanh.getInput().getDefiningOp(), sum,
                      b.getDefiningOp(), outer, cubic.getDefiningOp()});
        break;
      }
    }
    if (!x || !single(tanh.getResult()))
      return;
    // (1 + tanh(...)) * (0.5 * x)
    Operation *plusOne = *tanh.getResult().getUsers().begin();
    if (!isa<AddOp>(plusOne) ||
        !near(scalarConstant(plusOne->getOperand(
                  plusOne->getOperand(0) == tanh.getResult() ? 1 : 0)),
              1.0) ||
        !plusOne->getResult(0).hasOneUse())
      return;
    Operation *product = *plusOne->getResult(0).getUsers().begin();
    if (!isa<MulOp>(product))
      return;
    Value half = product->getOperand(0) == plusOne->getResult(0)
                     ? product->getOperand(1)
                     : product->getOperand(0);
    if (byConstant<MulOp>(half, 0.5) != x || !single(half) ||
        product->getResult(0).getType() != x.getType())
      return;
    OpBuilder builder(product);
    auto gelu = GeluOp::create(builder, product->getLoc(), x, false);
    product->getResult(0).replaceAllUsesWith(gelu.getResult());
    SmallVector<Operation *> order = {product, half.getDefiningOp(), plusOne,
                                      tanh};
    order.append(chain.begin(), chain.end());
    raise::eraseUnused(order);
  }
};

} // namespace
