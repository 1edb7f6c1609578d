//===- Fuse.cpp - the tg-fuse pass ----------------------------------------===//
//
// matmul (+ widening cast) + bias add (+ gelu) -> tg.linear, in program
// order over every tg.model function. Only chains whose intermediate values
// have no other user are fused, so nothing computed before is lost.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tg-fuse"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFUSE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A linear layer's pieces found from its bias add.
struct Chain {
  MatmulOp matmul;
  CastOp widen; // null when the product is used as it is
  AddOp add;
  Value bias;
  GeluOp gelu; // null without an activation to fuse
};

/// The matmul (through at most one widening cast) feeding `value` alone.
bool matchProduct(Value value, Chain &chain) {
  if (!value.hasOneUse())
    return false;
  if (auto cast = value.getDefiningOp<CastOp>()) {
    Type from = typeOf(cast.getInput()).getElementType();
    Type to = typeOf(cast.getResult()).getElementType();
    if (!isa<FloatType>(from) || !isa<FloatType>(to) ||
        from.getIntOrFloatBitWidth() >= to.getIntOrFloatBitWidth() ||
        !cast.getInput().hasOneUse())
      return false;
    chain.widen = cast;
    value = cast.getInput();
  }
  auto matmul = value.getDefiningOp<MatmulOp>();
  if (!matmul || matmul.getTransposeLhs() || matmul.getTransposeRhs() ||
      typeOf(matmul.getRhs()).getRank() != 2 ||
      typeOf(matmul.getLhs()).getRank() < 2)
    return false;
  chain.matmul = matmul;
  return true;
}

/// `add` as product + bias, with the bias [N] in the sum's type.
bool matchChain(AddOp add, Chain &chain) {
  RankedTensorType sum = typeOf(add.getResult());
  for (auto [product, bias] : {std::pair{add.getLhs(), add.getRhs()},
                               std::pair{add.getRhs(), add.getLhs()}}) {
    Chain candidate;
    RankedTensorType biasType = typeOf(bias);
    if (biasType.getRank() != 1 || sum.getRank() < 2 ||
        biasType.getDimSize(0) != sum.getShape().back() ||
        biasType.getElementType() != sum.getElementType() ||
        typeOf(product) != sum || !matchProduct(product, candidate))
      continue;
    candidate.add = add;
    candidate.bias = bias;
    Value result = add.getResult();
    if (result.hasOneUse())
      candidate.gelu = dyn_cast<GeluOp>(*result.getUsers().begin());
    // The epilogues compute the tanh form; the erf form stays apart.
    if (candidate.gelu && candidate.gelu.getExact())
      candidate.gelu = nullptr;
    chain = candidate;
    return true;
  }
  return false;
}

struct FusePass : tgc::tg::impl::TGFuseBase<FusePass> {
  void runOnOperation() override {
    unsigned fused = 0;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr(TGDialect::kModelAttr))
        continue;
      SmallVector<AddOp> adds;
      function.walk([&](AddOp add) { adds.push_back(add); });
      for (AddOp add : adds) {
        Chain chain;
        if (!matchChain(add, chain))
          continue;
        // The bias is defined before the add; placing the fused op at the
        // add (or the gelu) keeps every operand defined before it.
        Operation *last = chain.gelu ? chain.gelu.getOperation()
                                     : chain.add.getOperation();
        OpBuilder builder(last);
        RankedTensorType type = typeOf(chain.add.getResult());
        SmallVector<Type> results = {type};
        if (chain.gelu)
          results.push_back(type);
        auto linear = LinearOp::create(
            builder, last->getLoc(), results, chain.matmul.getLhs(),
            chain.matmul.getRhs(), chain.bias,
            builder.getBoolAttr(bool(chain.gelu)));
        last->getResult(0).replaceAllUsesWith(linear.getResult());
        if (chain.gelu)
          chain.gelu.erase();
        chain.add.erase();
        if (chain.widen)
          chain.widen.erase();
        chain.matmul.erase();
        ++fused;
      }
    }
    LLVM_DEBUG(llvm::dbgs() << "tg-fuse: " << fused << " linear layers\n");
    (void)fused;
  }
};

} // namespace
