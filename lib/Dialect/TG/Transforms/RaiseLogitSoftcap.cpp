//===- RaiseLogitSoftcap.cpp - the tg-raise-logit-softcap pass ------------===//
//
// A soft-cap of the logits written out before the loss (Gemma 2's
// final_logit_softcapping, as tgc-import traces it):
//
//   loss = cross_entropy(reshape(c * tanh(logits / c)), targets)
//
// becomes the cross-entropy of the logits with `softcap = c`, whose kernels
// cap each logit as they read it: the division, the tanh (kept for the
// backward pass) and the product, three tensors of the logits' size, are
// gone, and tg-chunk-loss again sees the classifier's product under the
// loss. The division may be a product by 1 / c; the two constants must
// agree within f32's rounding. A chain whose intermediate values have
// other users is left.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Raise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISELOGITSOFTCAP
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;
namespace {

struct TGRaiseLogitSoftcap
    : public tgc::tg::impl::TGRaiseLogitSoftcapBase<TGRaiseLogitSoftcap> {
  void runOnOperation() override {
    SmallVector<CrossEntropyOp> losses;
    getOperation().walk([&](CrossEntropyOp op) { losses.push_back(op); });
    for (CrossEntropyOp loss : losses)
      raise(loss);
  }

  void raise(CrossEntropyOp loss) {
    if (loss.getSoftcap() || loss.getGrad())
      return;
    SmallVector<Operation *> chain; // to erase once replaced, users first
    // Reshapes between the cap and the loss.
    Value capped = loss.getLogits();
    while (auto reshape = capped.getDefiningOp<ReshapeOp>()) {
      if (!capped.hasOneUse())
        return;
      chain.push_back(reshape);
      capped = reshape.getInput();
    }
    if (!capped.hasOneUse())
      return;
    std::optional<std::pair<Value, double>> softcap =
        raise::matchSoftcap(capped.getDefiningOp(), chain);
    if (!softcap)
      return;
    auto [logits, cap] = *softcap;
    if (logits.getType() != capped.getType())
      return; // a cap that broadcasts the logits
    // The logits in the loss's shape (a reshape of a reshape is one).
    OpBuilder builder(loss);
    Value source = logits;
    if (auto reshape = logits.getDefiningOp<ReshapeOp>())
      source = reshape.getInput();
    Value shaped = source;
    if (source.getType() != loss.getLogits().getType())
      shaped = ReshapeOp::create(builder, loss.getLoc(),
                                 loss.getLogits().getType(), source);
    auto raised = CrossEntropyOp::create(
        builder, loss.getLoc(), loss.getResult().getType(),
        /*logits_grad=*/Type(), shaped, loss.getTargets(), /*grad=*/Value(),
        loss.getIgnoreIndexAttr(), builder.getF64FloatAttr(cap));
    raised->setDiscardableAttrs(loss->getDiscardableAttrDictionary());
    loss.getResult().replaceAllUsesWith(raised.getResult());
    SmallVector<Operation *> order = {loss};
    order.append(chain.begin(), chain.end());
    raise::eraseUnused(order);
  }
};

} // namespace
