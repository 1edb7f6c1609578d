//===- ChunkLoss.cpp - the tg-chunk-loss pass -----------------------------===//
//
// Splits the classifier and its cross-entropy over chunks of rows, so that
// the [rows, vocabulary] logits never exist whole: what Liger's fused
// linear cross-entropy and torchtune's chunked loss do by hand. The rows of
// the classifier's input and of the targets are split into K pieces; each
// piece has its own product and mean cross-entropy, weighted by its count
// of targets, and the loss is their sum over the total count, which is the
// mean over all rows. The chunks' products are marked `tg.recompute`:
// tg-remat drops them after their loss and computes each again just before
// its gradient, so one chunk's logits live at a time in the backward pass
// as in the forward pass.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tg-chunk-loss"

namespace tgc::tg {
#define GEN_PASS_DEF_TGCHUNKLOSS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// A location named `<scope>.chunks.<k>` inside `loc`'s name scope (the
/// index makes each chunk a block for tg-remat's `blocks` policy too).
Location chunkLoc(Location loc, int64_t k) {
  std::string scope = "loss";
  if (auto name = dyn_cast<NameLoc>(loc))
    scope = name.getName().str();
  return NameLoc::get(
      StringAttr::get(loc.getContext(),
                      scope + ".chunks." + std::to_string(k)),
      loc);
}

struct ChunkLossPass : tgc::tg::impl::TGChunkLossBase<ChunkLossPass> {
  using TGChunkLossBase::TGChunkLossBase;

  void runOnOperation() override {
    if (chunks < 1) {
      getOperation().emitError("tg-chunk-loss: chunks must be at least 1, "
                               "found ")
          << int64_t(chunks);
      return signalPassFailure();
    }
    if (chunks == 1)
      return;
    for (auto model : getOperation().getOps<func::FuncOp>()) {
      if (!model->hasAttr(tg::TGDialect::kModelAttr))
        continue;
      SmallVector<tg::CrossEntropyOp> losses;
      model.walk([&](tg::CrossEntropyOp entropy) {
        auto product = entropy.getLogits().getDefiningOp<tg::MatmulOp>();
        // (A chunk already made is not split again.)
        if (product && product->hasOneUse() && !product.getTransposeLhs() &&
            !product->hasAttr(tg::TGDialect::kRecomputeAttr) &&
            cast<RankedTensorType>(product.getRhs().getType()).getRank() == 2)
          losses.push_back(entropy);
      });
      if (losses.empty()) {
        model.emitError("tg-chunk-loss: @")
            << model.getSymName()
            << " has no tg.cross_entropy of a tg.matmul by a matrix (the "
               "classifier) to split into chunks";
        return signalPassFailure();
      }
      for (tg::CrossEntropyOp entropy : losses)
        split(entropy);
    }
  }

  void split(tg::CrossEntropyOp entropy) {
    auto product = entropy.getLogits().getDefiningOp<tg::MatmulOp>();
    OpBuilder builder(entropy);
    Location loc = entropy.getLoc();
    auto input = cast<RankedTensorType>(product.getLhs().getType());
    auto logits = cast<RankedTensorType>(product.getType());
    auto targets = cast<RankedTensorType>(entropy.getTargets().getType());
    int64_t width = input.getShape().back();
    int64_t classes = logits.getShape().back();
    int64_t rows = input.getNumElements() / std::max<int64_t>(width, 1);
    int64_t count = std::min<int64_t>(chunks, rows);
    auto resultType = cast<RankedTensorType>(entropy.getResult().getType());

    Value flatInput = product.getLhs(), flatTargets = entropy.getTargets();
    if (input.getRank() != 2)
      flatInput = tg::ReshapeOp::create(builder, loc,
                                        input.clone({rows, width}), flatInput);
    if (targets.getRank() != 1)
      flatTargets = tg::ReshapeOp::create(builder, loc, targets.clone({rows}),
                                          flatTargets);
    // As even as possible: the first rows % count pieces one row longer.
    SmallVector<Type> inputPieces, targetPieces;
    for (int64_t k = 0; k < count; ++k) {
      int64_t size = rows / count + (k < rows % count ? 1 : 0);
      inputPieces.push_back(input.clone({size, width}));
      targetPieces.push_back(targets.clone({size}));
    }
    auto inputs = tg::SplitOp::create(builder, loc, inputPieces, flatInput,
                                      /*axis=*/0);
    auto pieces = tg::SplitOp::create(builder, loc, targetPieces, flatTargets,
                                      /*axis=*/0);
    Value total, seen;
    for (int64_t k = 0; k < count; ++k) {
      Location at = chunkLoc(loc, k);
      int64_t size = cast<RankedTensorType>(inputPieces[k]).getShape()[0];
      auto chunkLogits = tg::MatmulOp::create(
          builder, at, logits.clone({size, classes}), inputs.getResult(k),
          product.getRhs(), /*transpose_lhs=*/false,
          product.getTransposeRhs());
      chunkLogits->setAttr(tg::TGDialect::kRecomputeAttr,
                           builder.getUnitAttr());
      Value mean = tg::CrossEntropyOp::create(
                       builder, at, resultType, /*logits_grad=*/Type(),
                       chunkLogits, pieces.getResult(k), /*grad=*/Value(),
                       entropy.getIgnoreIndexAttr(), entropy.getSoftcapAttr())
                       .getResult();
      Value targetCount = tg::TargetCountOp::create(
          builder, at, resultType, pieces.getResult(k),
          entropy.getIgnoreIndexAttr());
      Value sum = tg::MulOp::create(builder, at, resultType, mean, targetCount);
      total = total ? tg::AddOp::create(builder, at, resultType, total, sum)
                          .getResult()
                    : sum;
      seen = seen ? tg::AddOp::create(builder, at, resultType, seen,
                                      targetCount)
                        .getResult()
                  : targetCount;
    }
    // The mean over every target, 0 when all are ignored (as the unsplit
    // loss: each chunk's mean is then 0).
    Value one = tg::FillOp::create(builder, loc, resultType,
                                   builder.getF64FloatAttr(1.0));
    Value denominator =
        tg::MaximumOp::create(builder, loc, resultType, seen, one);
    Value loss = tg::DivOp::create(builder, loc, resultType, total, denominator);
    entropy.getResult().replaceAllUsesWith(loss);
    entropy->erase();
    product->erase();
  }
};

} // namespace
