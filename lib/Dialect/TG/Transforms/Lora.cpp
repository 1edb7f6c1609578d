//===- Lora.cpp - the tg-lora pass ----------------------------------------===//
//
// Low-rank adaptation (Hu et al., 2021; PEFT's LoraLayer): every matmul
// with a weight of a target module gets `x W + (alpha/r) (x A^T) B^T`, with
// A and B new parameters named, shaped and initialised as PEFT does; the
// base parameters are frozen, so tg-autodiff trains only the adapters. A
// mixture of experts' grouped product (tg.expert_linear) whose expert
// weights are targets (Mixtral's w1, w2, w3) gets an adapter per expert,
// as PEFT wraps each expert's nn.Linear, applied as two more grouped
// products over the same routing.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

namespace tgc::tg {
#define GEN_PASS_DEF_TGLORA
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// The module a weight belongs to: its name without `.weight`.
static StringRef moduleOf(StringRef paramName) {
  paramName.consume_back(".weight");
  return paramName;
}

/// Whether `module` is a `target` module, as PEFT matches target_modules:
/// the name itself or its last components.
static bool isTarget(StringRef module, StringRef target) {
  return module == target || module.ends_with(("." + target).str());
}

struct LoraPass : tgc::tg::impl::TGLoraBase<LoraPass> {
  using TGLoraBase::TGLoraBase;

  void runOnOperation() override {
    if (targets.empty()) {
      emitError(getOperation().getLoc(),
                "tg-lora: no target modules (targets=c_attn,c_proj)");
      return signalPassFailure();
    }
    if (rank <= 0 || !(alpha > 0.0) || !std::isfinite(double(alpha))) {
      emitError(getOperation().getLoc(), "tg-lora: rank and alpha must be "
                                         "positive, found rank=")
          << rank << " alpha=" << alpha;
      return signalPassFailure();
    }
    SmallVector<llvm::GlobPattern> trained;
    for (const std::string &text : trainOnly) {
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(text);
      if (!glob) {
        emitError(getOperation().getLoc(), "tg-lora: bad train-only pattern '")
            << text << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      trained.push_back(std::move(*glob));
    }
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(tg::TGDialect::kModelAttr))
        if (failed(runOnModel(function, trained)))
          return signalPassFailure();
  }

  LogicalResult runOnModel(func::FuncOp model,
                           ArrayRef<llvm::GlobPattern> trained) {
    Block &body = model.getBody().front();
    MLIRContext *ctx = &getContext();
    unsigned originalArgs = body.getNumArguments();
    llvm::StringSet<> adapted;
    llvm::StringMap<bool> targetUsed;
    for (const std::string &target : targets)
      targetUsed[target] = false;

    SmallVector<tg::MatmulOp> matmuls;
    model.walk([&](tg::MatmulOp op) { matmuls.push_back(op); });
    for (tg::MatmulOp matmul : matmuls) {
      StringAttr name = paramName(model, matmul.getRhs());
      if (!name)
        continue;
      StringRef module = moduleOf(name.getValue());
      bool matched = false;
      for (const std::string &target : targets)
        if (isTarget(module, target))
          matched = targetUsed[target] = true;
      if (!matched)
        continue;
      if (matmul.getTransposeLhs())
        return matmul.emitOpError("tg-lora: cannot adapt a matmul with "
                                  "transpose_lhs");
      auto weightType = cast<RankedTensorType>(matmul.getRhs().getType());
      if (weightType.getRank() != 2)
        return matmul.emitOpError("tg-lora: the weight of '")
               << module << "' has rank " << weightType.getRank()
               << "; LoRA adapts 2-D weights";
      if (!adapted.insert(module).second)
        return matmul.emitOpError("tg-lora: '")
               << module << "' is used by several matmuls; LoRA adapts a "
                            "weight used once";
      bool linear = matmul.getTransposeRhs(); // nn.Linear: [out, in]
      int64_t in = weightType.getDimSize(linear ? 1 : 0);
      int64_t out = weightType.getDimSize(linear ? 0 : 1);
      if (rank > std::min(in, out))
        return matmul.emitOpError("tg-lora: rank ")
               << int64_t(rank) << " is above the size of '" << module << "' ("
               << out << " x " << in << "): B A cannot have a rank above "
               << std::min(in, out)
               << "; choose a lower rank, or train the weight itself";
      auto [a, b] = addAdapter(model, name, in, out, linear,
                               weightType.getElementType(), matmul.getLoc());

      OpBuilder builder(matmul->getNextNode());
      Location loc = matmul.getLoc();
      auto resultType = cast<RankedTensorType>(matmul.getType());
      SmallVector<int64_t> lowShape(resultType.getShape());
      lowShape.back() = rank;
      Value low = tg::MatmulOp::create(
          builder, loc, resultType.clone(lowShape), matmul.getLhs(), a,
          /*transpose_lhs=*/false, /*transpose_rhs=*/true);
      Value up = tg::MatmulOp::create(builder, loc, resultType, low, b,
                                      /*transpose_lhs=*/false,
                                      /*transpose_rhs=*/true);
      Value scale = tg::FillOp::create(
          builder, loc, RankedTensorType::get({}, resultType.getElementType()),
          builder.getF64FloatAttr(double(alpha) / double(rank)));
      Value scaled = tg::MulOp::create(builder, loc, resultType, up, scale);
      Value sum = tg::AddOp::create(builder, loc, resultType,
                                    matmul.getResult(), scaled);
      matmul.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
    }
    SmallVector<tg::ExpertLinearOp> grouped;
    model.walk([&](tg::ExpertLinearOp op) { grouped.push_back(op); });
    for (tg::ExpertLinearOp op : grouped)
      if (failed(adaptExperts(model, op, adapted, targetUsed)))
        return failure();
    for (const std::string &target : targets)
      if (!targetUsed[target])
        return emitError(model.getLoc(), "tg-lora: target '")
               << target << "' matches no matmul weight of @"
               << model.getSymName();

    // Train the adapters (and what train-only names); freeze the rest.
    for (unsigned i = 0; i < originalArgs; ++i) {
      auto name = model.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kParamAttr);
      if (!name)
        continue;
      bool train = llvm::any_of(trained, [&](const llvm::GlobPattern &glob) {
        return glob.match(name.getValue());
      });
      if (!train)
        model.setArgAttr(i, tg::TGDialect::kFrozenAttr, UnitAttr::get(ctx));
    }
    return success();
  }

  /// The parameter name of `value` when it is a parameter of `model`.
  StringAttr paramName(func::FuncOp model, Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &model.getBody().front())
      return {};
    return model.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                              tg::TGDialect::kParamAttr);
  }

  /// A and B for the 2-D weight `name` ([out, in] when `linear`, else
  /// [in, out]), B marked with what merging needs.
  std::pair<BlockArgument, BlockArgument>
  addAdapter(func::FuncOp model, StringAttr name, int64_t in, int64_t out,
             bool linear, Type element, Location loc) {
    MLIRContext *ctx = &getContext();
    StringRef module = moduleOf(name.getValue());
    double bound = 1.0 / std::sqrt(double(in));
    BlockArgument a = addParam(
        model, (module + ".lora_A.weight").str(),
        RankedTensorType::get({rank, in}, element),
        tg::InitAttr::get(ctx, tg::InitKind::Uniform, -bound, bound), loc);
    BlockArgument b =
        addParam(model, (module + ".lora_B.weight").str(),
                 RankedTensorType::get({out, rank}, element),
                 tg::InitAttr::get(ctx, tg::InitKind::Zeros), loc);
    NamedAttribute lora[] = {
        NamedAttribute(StringAttr::get(ctx, "base"), name),
        NamedAttribute(StringAttr::get(ctx, "fan_in_fan_out"),
                       BoolAttr::get(ctx, !linear)),
        NamedAttribute(StringAttr::get(ctx, "scale"),
                       FloatAttr::get(Float64Type::get(ctx),
                                      double(alpha) / double(rank)))};
    model.setArgAttr(b.getArgNumber(), tg::TGDialect::kLoraAttr,
                     DictionaryAttr::get(ctx, lora));
    return {a, b};
  }

  /// Adapts a grouped expert product whose expert weights are targets:
  /// `y + (alpha/r) B_e (A_e x)` for each row of expert e, as two grouped
  /// products (A's, then B's) over the same offsets.
  LogicalResult adaptExperts(func::FuncOp model, tg::ExpertLinearOp op,
                             llvm::StringSet<> &adapted,
                             llvm::StringMap<bool> &targetUsed) {
    SmallVector<StringAttr> names;
    unsigned matched = 0;
    for (Value weight : op.getWeights()) {
      StringAttr name = paramName(model, weight);
      names.push_back(name);
      bool hit = false;
      for (const std::string &target : targets)
        if (name && isTarget(moduleOf(name.getValue()), target))
          hit = targetUsed[target] = true;
      matched += hit;
    }
    if (matched == 0)
      return success();
    if (matched != names.size())
      return op.emitOpError("tg-lora: the targets match ")
             << matched << " of the " << names.size()
             << " expert weights of this grouped product; LoRA adapts all "
                "of its experts or none";
    bool linear = op.getTransposeWeight(); // nn.Linear: [out, in]
    auto weightType = cast<RankedTensorType>(op.getWeights()[0].getType());
    int64_t in = weightType.getDimSize(linear ? 1 : 0);
    int64_t out = weightType.getDimSize(linear ? 0 : 1);
    if (rank > std::min(in, out))
      return op.emitOpError("tg-lora: rank ")
             << int64_t(rank) << " is above the size of the experts' weights ("
             << out << " x " << in << ")";
    SmallVector<Value> as, bs;
    for (StringAttr name : names) {
      if (!adapted.insert(moduleOf(name.getValue())).second)
        return op.emitOpError("tg-lora: '")
               << moduleOf(name.getValue())
               << "' is used by several products; LoRA adapts a weight used "
                  "once";
      auto [a, b] = addAdapter(model, name, in, out, linear,
                               weightType.getElementType(), op.getLoc());
      as.push_back(a);
      bs.push_back(b);
    }
    OpBuilder builder(op->getNextNode());
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value low = tg::ExpertLinearOp::create(
        builder, loc, resultType.clone({resultType.getDimSize(0), rank}),
        op.getInput(), op.getOffsets(), as, /*transpose_weight=*/true);
    Value up = tg::ExpertLinearOp::create(builder, loc, resultType, low,
                                          op.getOffsets(), bs,
                                          /*transpose_weight=*/true);
    Value scale = tg::FillOp::create(
        builder, loc, RankedTensorType::get({}, resultType.getElementType()),
        builder.getF64FloatAttr(double(alpha) / double(rank)));
    Value scaled = tg::MulOp::create(builder, loc, resultType, up, scale);
    Value sum =
        tg::AddOp::create(builder, loc, resultType, op.getResult(), scaled);
    op.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
    return success();
  }

  BlockArgument addParam(func::FuncOp model, StringRef name, Type type,
                         tg::InitAttr init, Location loc) {
    MLIRContext *ctx = &getContext();
    NamedAttribute attrs[] = {
        NamedAttribute(StringAttr::get(ctx, tg::TGDialect::kInitAttr), init),
        NamedAttribute(StringAttr::get(ctx, tg::TGDialect::kParamAttr),
                       StringAttr::get(ctx, name))};
    unsigned index = model.getNumArguments();
    if (failed(model.insertArgument(index, type,
                                    DictionaryAttr::get(ctx, attrs), loc)))
      return {};
    return model.getArgument(index);
  }
};

} // namespace
