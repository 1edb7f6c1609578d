//===- Amp.cpp - the tg-amp pass ------------------------------------------===//
//
// Precision lowering of a model's forward pass, as torch.autocast does it by
// hand: an op policy says which op kinds compute in the low precision
// (matmul, expert_linear, attention), which in f32 (softmax, normalization,
// reductions, exp/log), which read any float type and compute in f32 inside
// their kernels (the loss: nothing to cast), and every other op computes in the
// widest type of its operands. One walk in program order retypes each op and
// inserts the casts its policy needs; casts are cached per (value, type), so a
// value - a parameter in particular - is converted once however many ops use
// it. A cast of an op's result is placed after that op, a cast of an
// argument (a parameter) before its first reader, so that a parameter's
// 16-bit copy lives from where the step first needs it, not from the start
// of the step. Folding then removes casts that undo each other.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "OptionErrors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "tg-amp"

namespace tgc::tg {
#define GEN_PASS_DEF_TGAMP
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

enum class Policy { Low, F32, Keep, Promote };

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Type withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

unsigned bitWidth(Type type) {
  return getElementTypeOrSelf(type).getIntOrFloatBitWidth();
}

class Lowering {
public:
  Lowering(func::FuncOp function, Type low, const llvm::StringSet<> &lowOps,
           const llvm::StringSet<> &f32Ops,
           const llvm::StringSet<> &f32MathOps)
      : function(function), builder(function.getContext()), low(low),
        f32(Float32Type::get(function.getContext())), lowOps(lowOps),
        f32Ops(f32Ops), f32MathOps(f32MathOps) {}

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : function.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        restoreReturnTypes(ret);
        continue;
      }
      if (op->getDialect() == op->getContext()->getLoadedDialect<TGDialect>() &&
          !isa<CastOp, FillOp, ConstantOp>(op))
        retype(op);
    }
  }

private:
  Policy policyOf(Operation *op) {
    StringRef kind = op->getName().stripDialect();
    if (lowOps.contains(kind))
      return Policy::Low;
    if (f32Ops.contains(kind))
      return Policy::F32;
    if (f32MathOps.contains(kind))
      return Policy::Keep;
    return Policy::Promote;
  }

  /// An add of a low-precision op's result and a rank-1 parameter (a
  /// linear layer's bias).
  bool isBiasOfLowProduct(Operation *op) {
    if (!isa<AddOp>(op))
      return false;
    auto isLowProduct = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && policyOf(def) == Policy::Low &&
             getElementTypeOrSelf(v.getType()) == low;
    };
    auto isBias = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner()->isEntryBlock() &&
             function.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttr) &&
             cast<RankedTensorType>(v.getType()).getRank() == 1;
    };
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    return (isLowProduct(lhs) && isBias(rhs)) ||
           (isLowProduct(rhs) && isBias(lhs));
  }

  /// `value` as `type`, through one shared cast placed after its definition
  /// or, for an argument, before `user` (the walk's first op to need it).
  Value castTo(Value value, Type type, Operation *user) {
    if (value.getType() == type)
      return value;
    auto key = std::make_pair(value, type);
    auto known = casts.find(key);
    if (known != casts.end())
      return known->second;
    OpBuilder::InsertionGuard guard(builder);
    if (Operation *def = value.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPoint(user);
    Value converted = CastOp::create(builder, value.getLoc(), type, value);
    casts[key] = converted;
    return converted;
  }

  void retype(Operation *op) {
    SmallVector<unsigned> floatOperands;
    for (OpOperand &operand : op->getOpOperands())
      if (isFloatTensor(operand.get().getType()))
        floatOperands.push_back(operand.getOperandNumber());
    // A 4-bit weight's scales and maps stay f32: its kernel dequantizes
    // into the input's type.
    if (isa<Matmul4bitOp>(op))
      floatOperands.assign({0u});
    if (floatOperands.empty())
      return;

    Policy policy = policyOf(op);
    // The kernel reads its operands in whatever type they come in and its
    // results keep the model's types.
    if (policy == Policy::Keep)
      return;
    Type element;
    switch (policy) {
    case Policy::Low:
      element = low;
      break;
    case Policy::F32:
      element = f32;
      break;
    case Policy::Keep:
      llvm_unreachable("left as it is above");
    case Policy::Promote: {
      // A bias added to a low-precision product joins it, as autocast's
      // linear layer takes its bias: the layer's output (and what is
      // saved of it for the backward pass) stays 16-bit.
      if (isBiasOfLowProduct(op)) {
        element = low;
        break;
      }
      Type widest;
      for (unsigned i : floatOperands) {
        Type e = getElementTypeOrSelf(op->getOperand(i).getType());
        if (!widest || bitWidth(e) > bitWidth(widest))
          widest = e;
      }
      element = widest;
      break;
    }
    }
    for (unsigned i : floatOperands) {
      Value operand = op->getOperand(i);
      op->setOperand(
          i, castTo(operand, withElement(operand.getType(), element), op));
    }
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        result.setType(withElement(result.getType(), element));
  }

  /// The function keeps its signature: a returned value whose type changed
  /// is cast back.
  void restoreReturnTypes(func::ReturnOp ret) {
    FunctionType type = function.getFunctionType();
    for (auto [i, value] : llvm::enumerate(ret.getOperands()))
      if (value.getType() != type.getResult(i)) {
        builder.setInsertionPoint(ret);
        ret.setOperand(i, CastOp::create(builder, ret.getLoc(),
                                         type.getResult(i), value));
      }
  }

  func::FuncOp function;
  OpBuilder builder;
  Type low, f32;
  const llvm::StringSet<> &lowOps;
  const llvm::StringSet<> &f32Ops;
  const llvm::StringSet<> &f32MathOps;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

struct AmpPass : tgc::tg::impl::TGAmpBase<AmpPass> {
  using TGAmpBase::TGAmpBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    if (dtype == Half::None)
      return markAllAnalysesPreserved();
    Type low = dtype == Half::BF16 ? Type(BFloat16Type::get(context))
                                   : Type(Float16Type::get(context));
    static const char *kDefaultLow[] = {"matmul", "matmul_4bit",
                                         "expert_linear", "attention"};
    static const char *kDefaultF32[] = {
        "softmax", "layer_norm", "rms_norm", "reduce_sum", "reduce_mean",
        "reduce_max", "exp", "log", "rsqrt"};
    static const char *kDefaultF32Math[] = {"cross_entropy", "embedding"};
    llvm::StringSet<> lowOps, f32Ops, f32MathOps;
    if (lowPrecisionOps.empty())
      for (const char *kind : kDefaultLow)
        lowOps.insert(kind);
    else
      for (const std::string &kind : lowPrecisionOps)
        lowOps.insert(kind);
    if (this->f32Ops.empty())
      for (const char *kind : kDefaultF32)
        f32Ops.insert(kind);
    else
      for (const std::string &kind : this->f32Ops)
        f32Ops.insert(kind);
    if (this->f32MathOps.empty())
      for (const char *kind : kDefaultF32Math)
        f32MathOps.insert(kind);
    else
      for (const std::string &kind : this->f32MathOps)
        f32MathOps.insert(kind);
    // An explicit list wins over a default one: --f32-ops=cross_entropy
    // widens the logits again.
    auto dropDefaults = [](llvm::StringSet<> &defaults, bool explicitList,
                           const llvm::StringSet<> &other) {
      if (explicitList)
        return;
      for (const auto &kind : other.keys())
        defaults.erase(kind);
    };
    dropDefaults(f32MathOps, !this->f32MathOps.empty(), f32Ops);
    dropDefaults(f32MathOps, !this->f32MathOps.empty(), lowOps);
    for (const auto &kind : lowOps.keys())
      if (f32Ops.contains(kind) || f32MathOps.contains(kind)) {
        emitOptionError(getOperation(), "tg-amp: '")
            << kind << "' is both a low-precision and an f32 op kind";
        return signalPassFailure();
      }
    for (const auto &kind : f32Ops.keys())
      if (f32MathOps.contains(kind)) {
        emitOptionError(getOperation(), "tg-amp: '")
            << kind << "' is both in f32-ops and in f32-math-ops";
        return signalPassFailure();
      }

    bool any = false;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr(TGDialect::kModelAttr))
        continue;
      any = true;
      Lowering(function, low, lowOps, f32Ops, f32MathOps).run();
    }
    if (!any) {
      getOperation().emitError("tg-amp found no function marked tg.model; "
                               "run it before tg-autodiff");
      return signalPassFailure();
    }
    // Fold casts that undo each other and drop the dead ones.
    if (failed(applyPatternsGreedily(getOperation(), FrozenRewritePatternSet())))
      return signalPassFailure();
  }
};

} // namespace
