//===- AccumulateProducts.cpp - the tg-accumulate-products pass -----------===//
//
// `tg.add %acc, (tg.matmul %a, %b)` -> `tg.matmul_add %a, %b, %acc`: the
// product is added onto the accumulator by the GEMM itself (beta = 1), so
// it never has a buffer of its own, and the sum may be written over the
// accumulator. The gradient of a parameter used several times is such a
// sum: tg-chunk-loss's chunks each add a product the size of the classifier
// onto its weight gradient (1 GiB at Llama-3's vocabulary in bf16); a
// weight shared by several layers gets one product from each.
//
// The fused op takes the product's place in the schedule, so the
// product's operands live no longer than before; a product computed before
// its accumulator is left as it is (fusing it would keep its operands
// alive until the accumulator is ready).
//
// `tg.add %acc, (tg.embedding_grad %i, %g)` -> `tg.embedding_grad %i, %g
// addend %acc`: a tied embedding's table gradient, the scatter-add of the
// lookup's gradient plus the classifier's weight gradient, in one pass
// over the [V, D] table (GPT-2's: 154 MB in f32) instead of two. The
// accumulator (the classifier's gradient) is ready long before the
// scatter at the end of the backward pass, where the fused op stays.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"
#include "TrainStep.h"

#include "tgc/Analysis/Report.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "tg-accumulate-products"

namespace tgc::tg {
#define GEN_PASS_DEF_TGACCUMULATEPRODUCTS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// The matmul whose only use is `add`'s operand `index`, if any.
tg::MatmulOp soleProduct(tg::AddOp add, unsigned index) {
  Value value = add->getOperand(index);
  auto product = value.getDefiningOp<tg::MatmulOp>();
  if (!product || !value.hasOneUse() || value.getType() != add.getType())
    return nullptr;
  return product;
}

/// Whether `value` is ready before `op` runs (an argument, or defined by an
/// op before it in the same block).
bool readyBefore(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  return !def || (def->getBlock() == op->getBlock() && def->isBeforeInBlock(op));
}

struct AccumulateProductsPass
    : tgc::tg::impl::TGAccumulateProductsBase<AccumulateProductsPass> {
  using TGAccumulateProductsBase::TGAccumulateProductsBase;

  void runOnOperation() override {
    if (failed(tg::forEachTrainStep(getOperation(), "tg-accumulate-products",
                                    "tg-autodiff", [&](func::FuncOp step) {
                                      rewrite(step);
                                      return success();
                                    })))
      return signalPassFailure();
  }

  /// `add` of an accumulator and a table gradient used only there -> the
  /// table gradient with the accumulator as its addend. True when it
  /// applied.
  bool fuseTableGradient(tg::AddOp add) {
    for (unsigned index : {1u, 0u}) {
      Value value = add->getOperand(index);
      Value accumulator = add->getOperand(1 - index);
      auto grad = value.getDefiningOp<tg::EmbeddingGradOp>();
      if (!grad || grad.getAddend() || !value.hasOneUse() ||
          value.getType() != add.getType() ||
          grad->getBlock() != add->getBlock() ||
          !readyBefore(accumulator, grad))
        continue;
      auto accType = cast<RankedTensorType>(accumulator.getType());
      auto type = cast<RankedTensorType>(add.getType());
      Type accElement = accType.getElementType();
      if (accType.getShape() != type.getShape() ||
          !(accElement == type.getElementType() ||
            (type.getElementType().isF32() &&
             (accElement.isF16() || accElement.isBF16()))))
        continue;
      // A 16-bit accumulator widened for the sum (mixed precision's cast of
      // the classifier's gradient) is read as it is: the scatter widens
      // it, exactly as the cast did.
      Value addend = accumulator;
      auto widen = accumulator.getDefiningOp<tg::CastOp>();
      if (widen && type.getElementType().isF32() &&
          cast<RankedTensorType>(widen.getInput().getType()).getShape() ==
              type.getShape()) {
        Type from = getElementTypeOrSelf(widen.getInput().getType());
        if (from.isF16() || from.isBF16())
          addend = widen.getInput();
      }
      OpBuilder builder(grad);
      auto fused = tg::EmbeddingGradOp::create(
          builder, grad.getLoc(), grad.getType(), grad.getIndices(),
          grad.getGrad(), addend, grad.getPaddingIdxAttr());
      add.getResult().replaceAllUsesWith(fused.getResult());
      add->erase();
      grad->erase();
      if (addend != accumulator && widen->use_empty())
        widen->erase();
      return true;
    }
    return false;
  }

  void rewrite(func::FuncOp step) {
    SmallVector<tg::AddOp> adds;
    step.walk([&](tg::AddOp add) { adds.push_back(add); });
    int64_t fused = 0, bytes = 0, tables = 0;
    for (tg::AddOp add : adds) {
      if (fuseTableGradient(add)) {
        ++tables;
        continue;
      }
      // Both operands of the add's own type (no broadcast); of two
      // products, the later one is added onto the earlier.
      if (add.getLhs().getType() != add.getType() ||
          add.getRhs().getType() != add.getType())
        continue;
      tg::MatmulOp lhsProduct = soleProduct(add, 0);
      tg::MatmulOp rhsProduct = soleProduct(add, 1);
      tg::MatmulOp product = rhsProduct;
      Value accumulator = add.getLhs();
      if (lhsProduct &&
          (!rhsProduct || rhsProduct->isBeforeInBlock(lhsProduct))) {
        product = lhsProduct;
        accumulator = add.getRhs();
      }
      // Fused where the product was: its operands (a gradient the size of
      // the logits, say) then die no later. An accumulator computed after
      // the product (a tied embedding's gradient, at the end of the
      // backward pass) would keep them alive until then: not fused.
      if (!product || product->getBlock() != add->getBlock() ||
          !readyBefore(accumulator, product))
        continue;
      OpBuilder builder(product);
      auto sum = tg::MatmulAddOp::create(
          builder, product.getLoc(), add.getType(), product.getLhs(),
          product.getRhs(), accumulator, product.getTransposeLhs(),
          product.getTransposeRhs());
      add.getResult().replaceAllUsesWith(sum.getResult());
      add->erase();
      product->erase();
      ++fused;
      bytes += tg::getTensorBytes(cast<RankedTensorType>(sum.getType()));
    }
    std::string line;
    llvm::raw_string_ostream os(line);
    os << fused << " products added onto their accumulators by the GEMM ("
       << formatBytes(bytes) << " of products no longer stored)";
    if (tables)
      os << ", " << tables << " onto a table's gradient by its scatter";
    tg::reportSummary(
        step.getLoc(), "tg-accumulate-products", step.getSymName(), line,
        {{"fused", fused}, {"bytes", bytes}, {"tables", tables}}, printSummary);
  }
};

} // namespace
