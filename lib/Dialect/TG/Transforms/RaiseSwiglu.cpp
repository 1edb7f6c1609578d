//===- RaiseSwiglu.cpp - the tg-raise-swiglu pass -------------------------===//
//
// SwiGLU written as two ops, `tg.mul(tg.silu(gate), up)` (either operand
// order, as Hugging Face's Llama MLP traces), becomes one tg.swiglu. Its
// kernels round silu(gate) to the type before the product, as the two ops
// do, so the values are unchanged; what changes is the backward pass, which
// keeps gate and up and not silu(gate) as well, and the launches (one each
// way where there were two forward and three backward). A silu that has
// other users, or a product that broadcasts, is left.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISESWIGLU
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

struct TGRaiseSwiglu : public tgc::tg::impl::TGRaiseSwigluBase<TGRaiseSwiglu> {
  void runOnOperation() override {
    SmallVector<MulOp> products;
    getOperation().walk([&](MulOp op) { products.push_back(op); });
    for (MulOp product : products)
      raise(product);
  }

  void raise(MulOp product) {
    Type type = product.getResult().getType();
    for (auto [gateSide, up] :
         {std::pair(product.getLhs(), product.getRhs()),
          std::pair(product.getRhs(), product.getLhs())}) {
      auto silu = gateSide.getDefiningOp<SiluOp>();
      if (!silu || !gateSide.hasOneUse() || gateSide.getType() != type ||
          up.getType() != type)
        continue;
      OpBuilder builder(product);
      auto swiglu =
          SwigluOp::create(builder, product.getLoc(), silu.getInput(), up);
      product.getResult().replaceAllUsesWith(swiglu.getResult());
      product.erase();
      silu.erase();
      return;
    }
  }
};

} // namespace
