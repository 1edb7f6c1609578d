//===- FuseBiasGrads.cpp - the tg-fuse-bias-grads pass --------------------===//
//
// Bias gradients and GELU's gradient in the epilogues of the backward GEMMs.
//
// The backward pass of `y = x @ W + b` computes the weight gradient
// `x^T @ dy` (a GEMM over the rows of x and dy) and the bias gradient, the
// sum of dy over the same rows (tg.sum_to): a second kernel reading all of
// dy again. cuBLASLt computes that sum in the GEMM's epilogue as it reads
// the operand (BGRADA, BGRADB): tg.matmul_bias_grad. For GPT-2 124M in
// bf16 at B=8, T=1024 those sums read 1.4 GB a step.
//
// Before an MLP's second layer, GELU's gradient `gelu'(pre) * (dy @ W2^T)`
// is a GEMM writing its product, then a kernel reading it and the
// pre-activation and writing the result, then the first layer's bias sum
// reading that again. cuBLASLt's DGELU_BGRAD epilogue applies GELU's
// gradient to the f32 product (reading the pre-activation that the forward
// GEMM's GELU_AUX epilogue wrote) and sums the result for the bias:
// tg.matmul_gelu_grad, one GEMM writing one tensor.
//
// Both fused ops take the GEMM's place in the schedule: their operands are
// ready there, and every reader of the sum (the bias's update) comes after
// the sum did; a sum read before the GEMM leaves the pair alone. In f32
// the CPU gives the bits of the unfused ops; with 16-bit operands GELU's
// gradient reads the product before its rounding. Run on the finished
// step: the fused ops have no gradient rules.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFUSEBIASGRADS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Whether `sum` adds `value` (of shape [..., N]) over every dimension but
/// the last, in the same element type: a bias's gradient.
bool sumsRows(SumToOp sum, Value value) {
  ArrayRef<int64_t> from = shapeOf(value), to = shapeOf(sum.getResult());
  return sum.getInput() == value && from.size() >= 2 && to.size() == 1 &&
         to[0] == from.back() &&
         getElementTypeOrSelf(sum.getResult().getType()) ==
             getElementTypeOrSelf(value.getType());
}

/// Whether every reader of `value` comes after `op` in its block.
bool readAfter(Value value, Operation *op) {
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    return user->getBlock() == op->getBlock() && op->isBeforeInBlock(user);
  });
}

/// The value whose rows `operand` of a weight-gradient GEMM holds: the
/// operand itself, or what a reshape that only flattens the leading
/// dimensions flattened.
SmallVector<Value, 2> rowSources(Value operand) {
  SmallVector<Value, 2> sources = {operand};
  if (auto reshape = operand.getDefiningOp<ReshapeOp>()) {
    ArrayRef<int64_t> from = shapeOf(reshape.getInput());
    ArrayRef<int64_t> to = shapeOf(operand);
    if (from.size() >= 2 && to.size() == 2 && from.back() == to.back())
      sources.push_back(reshape.getInput());
  }
  return sources;
}

/// The tg.sum_to that gives the bias gradient from the rows of `operand`
/// (an operand of `product`), if any whose readers all come after it.
SumToOp biasSumOf(Value operand, Operation *product) {
  for (Value source : rowSources(operand))
    for (Operation *user : source.getUsers())
      if (auto sum = dyn_cast<SumToOp>(user))
        if (sumsRows(sum, source) && readAfter(sum.getResult(), product))
          return sum;
  return nullptr;
}

/// `tg.matmul {transpose_lhs}` of rank-2 operands with the sum of one of
/// them over its rows -> tg.matmul_bias_grad. True when it applied.
bool fuseBiasGrad(MatmulOp product) {
  if (!product.getTransposeLhs() || product.getTransposeRhs() ||
      shapeOf(product.getLhs()).size() != 2 ||
      shapeOf(product.getRhs()).size() != 2)
    return false;
  // The output's gradient is the right operand of x^T @ dy (a layer whose
  // weight is stored transposed computes dy^T @ x).
  bool ofLhs = false;
  SumToOp sum = biasSumOf(product.getRhs(), product);
  if (!sum) {
    sum = biasSumOf(product.getLhs(), product);
    ofLhs = true;
  }
  if (!sum)
    return false;
  OpBuilder builder(product);
  auto fused = MatmulBiasGradOp::create(
      builder, product.getLoc(), product.getType(), sum.getResult().getType(),
      product.getLhs(), product.getRhs(), ofLhs);
  product.getResult().replaceAllUsesWith(fused.getProduct());
  sum.getResult().replaceAllUsesWith(fused.getBiasGrad());
  sum->erase();
  product->erase();
  return true;
}

/// `tg.gelu_grad %pre, (tg.matmul %dy, %w)` and the sum of its result over
/// its rows -> tg.matmul_gelu_grad. True when it applied.
bool fuseGeluGrad(GeluGradOp gelu) {
  Value productValue = gelu.getGrad();
  auto product = productValue.getDefiningOp<MatmulOp>();
  if (gelu.getExact() || !product || !productValue.hasOneUse() ||
      product.getTransposeLhs() || shapeOf(product.getRhs()).size() != 2 ||
      product->getBlock() != gelu->getBlock())
    return false;
  SumToOp sum;
  for (Operation *user : gelu.getResult().getUsers())
    if (auto candidate = dyn_cast<SumToOp>(user))
      if (sumsRows(candidate, gelu.getResult()))
        sum = candidate;
  // The pre-activation must be ready where the product was.
  Operation *pre = gelu.getInput().getDefiningOp();
  if (!sum || !readAfter(sum.getResult(), product) ||
      (pre && (pre->getBlock() != product->getBlock() ||
               !pre->isBeforeInBlock(product))))
    return false;
  OpBuilder builder(product);
  auto fused = MatmulGeluGradOp::create(
      builder, product.getLoc(), gelu.getType(), sum.getResult().getType(),
      product.getLhs(), product.getRhs(), gelu.getInput(),
      product.getTransposeRhs());
  gelu.getResult().replaceAllUsesWith(fused.getResult());
  sum.getResult().replaceAllUsesWith(fused.getBiasGrad());
  sum->erase();
  gelu->erase();
  product->erase();
  return true;
}

struct FuseBiasGradsPass
    : tgc::tg::impl::TGFuseBiasGradsBase<FuseBiasGradsPass> {
  using TGFuseBiasGradsBase::TGFuseBiasGradsBase;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp function) {
      // GELU's gradients first: the first layer's bias sum reads their
      // result, which the second layer's input-gradient GEMM then gives.
      SmallVector<GeluGradOp> gelus;
      function.walk([&](GeluGradOp gelu) { gelus.push_back(gelu); });
      int64_t geluFused = 0, biasFused = 0;
      for (GeluGradOp gelu : gelus)
        geluFused += fuseGeluGrad(gelu);
      SmallVector<MatmulOp> products;
      function.walk([&](MatmulOp product) { products.push_back(product); });
      for (MatmulOp product : products)
        biasFused += fuseBiasGrad(product);
      if (geluFused + biasFused == 0)
        return;
      std::string line;
      llvm::raw_string_ostream os(line);
      os << biasFused << " bias sums joined their weight gradient's GEMM, "
         << geluFused << " GELU gradients (with their bias sums) their input "
         << "gradient's GEMM";
      reportSummary(function.getLoc(), "tg-fuse-bias-grads",
                    function.getSymName(), line,
                    {{"bias", biasFused}, {"gelu", geluFused}}, printSummary);
    });
  }
};

} // namespace
