//===- QuantizeFrozen.cpp - the tg-quantize-frozen pass -------------------===//
//
// QLoRA's frozen base (Dettmers et al., 2023; bitsandbytes' Linear4bit):
// frozen matmul weights stored in 4 bits, NF4 or FP4, in blocks of 64 with
// an absmax each, the absmax values double-quantized in 8 bits. The
// parameter becomes bitsandbytes' tensors under bitsandbytes' names, and
// the matmuls that read it a tg.matmul_4bit, which dequantizes tiles of
// the weight inside the GEMM. Nothing else changes, so every later pass
// (autodiff, amp, remat, offload, accumulation, data parallelism, the
// memory plan) sees frozen parameters of 0.5 byte a weight.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/Quant4bit.h"

#include "OptionErrors.h"
#include "Summary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/GlobPattern.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGQUANTIZEFROZEN
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// A use of a weight that tg.matmul_4bit can take: the right operand of a
/// matmul without transpose_lhs, read directly or through one cast.
struct Reader {
  tg::MatmulOp matmul;
  tg::CastOp cast; // null when the matmul reads the parameter itself
};

/// Whether `matmul`'s result is the logits of a cross-entropy (through
/// reshapes and a bias's add): the output head.
bool feedsLoss(tg::MatmulOp matmul) {
  SmallVector<Value> work = {matmul.getResult()};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<tg::CrossEntropyOp>(user))
        return true;
      if (isa<tg::ReshapeOp, tg::AddOp>(user))
        work.push_back(user->getResult(0));
    }
  }
  return false;
}

struct QuantizeFrozenPass
    : tgc::tg::impl::TGQuantizeFrozenBase<QuantizeFrozenPass> {
  using TGQuantizeFrozenBase::TGQuantizeFrozenBase;

  void runOnOperation() override {
    if (type == tg::FrozenQuant::None)
      return markAllAnalysesPreserved();
    if (blockSize <= 0 || blockSize % 2 || blockSize > quant4::kMaxBlockSize) {
      tg::emitOptionError(getOperation(), "tg-quantize-frozen: block-size must "
                                      "be even and in [2, ")
          << quant4::kMaxBlockSize << "], found " << int64_t(blockSize);
      return signalPassFailure();
    }
    SmallVector<llvm::GlobPattern> globs;
    for (const std::string &text : weights) {
      llvm::Expected<llvm::GlobPattern> glob =
          llvm::GlobPattern::create(StringRef(text).trim());
      if (!glob) {
        tg::emitOptionError(getOperation(), "tg-quantize-frozen: bad weights "
                                        "pattern '")
            << text << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      globs.push_back(std::move(*glob));
    }
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(tg::TGDialect::kModelAttr))
        if (failed(runOnModel(function, globs)))
          return signalPassFailure();
  }

  /// The readers of parameter `arg` when each is one tg.matmul_4bit can
  /// replace, else failure and `why`.
  FailureOr<SmallVector<Reader>> readersOf(BlockArgument arg,
                                           std::string &why) {
    SmallVector<Reader> readers;
    auto take = [&](OpOperand &use, tg::CastOp cast) -> bool {
      auto matmul = dyn_cast<tg::MatmulOp>(use.getOwner());
      if (matmul && use.getOperandNumber() == 1 && !matmul.getTransposeLhs()) {
        readers.push_back({matmul, cast});
        return true;
      }
      why = "it is read by '" +
            use.getOwner()->getName().getStringRef().str() + "' (operand " +
            std::to_string(use.getOperandNumber()) +
            "), not as the weight of a tg.matmul";
      return false;
    };
    for (OpOperand &use : arg.getUses()) {
      auto cast = dyn_cast<tg::CastOp>(use.getOwner());
      if (cast && isa<FloatType>(getElementTypeOrSelf(cast.getType()))) {
        for (OpOperand &castUse : cast.getResult().getUses())
          if (!take(castUse, cast))
            return failure();
      } else if (!take(use, {})) {
        return failure();
      }
    }
    if (readers.empty()) {
      why = "nothing reads it as the weight of a tg.matmul";
      return failure();
    }
    return readers;
  }

  LogicalResult runOnModel(func::FuncOp model,
                           ArrayRef<llvm::GlobPattern> globs) {
    MLIRContext *ctx = &getContext();
    Block &body = model.getBody().front();
    SmallVector<bool> patternUsed(globs.size(), false);
    struct Choice {
      BlockArgument arg;
      SmallVector<Reader> readers;
    };
    SmallVector<Choice> chosen;
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = model.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kParamAttr);
      if (!name)
        continue;
      bool named = false;
      for (auto [glob, used] : llvm::zip(globs, patternUsed))
        if (glob.match(name.getValue()))
          named = used = true;
      if (!globs.empty() && !named)
        continue;
      bool frozen = bool(model.getArgAttr(i, tg::TGDialect::kFrozenAttr));
      auto type = cast<RankedTensorType>(arg.getType());
      std::string why;
      if (!frozen)
        why = "it is trained (only frozen weights are quantized: freeze it, "
              "or adapt it with LoRA)";
      else if (type.getRank() != 2)
        why = "it has rank " + std::to_string(type.getRank()) +
              " (4-bit weights are 2-D)";
      else if (!isa<FloatType>(type.getElementType()))
        why = "it is not a float tensor";
      FailureOr<SmallVector<Reader>> readers = failure();
      if (why.empty())
        readers = readersOf(arg, why);
      if (failed(readers)) {
        if (named)
          return emitError(arg.getLoc(), "tg-quantize-frozen: cannot "
                                         "quantize '")
                 << name.getValue() << "': " << why;
        continue;
      }
      if (!named) {
        // By default the output head stays as it is, as transformers'
        // bitsandbytes quantizer leaves lm_head.
        StringRef module = name.getValue();
        module.consume_back(".weight");
        if (module == "lm_head" || module.ends_with(".lm_head") ||
            llvm::any_of(*readers,
                         [](const Reader &r) { return feedsLoss(r.matmul); }))
          continue;
      }
      chosen.push_back({arg, std::move(*readers)});
    }
    for (auto [glob, used, text] : llvm::zip(globs, patternUsed, weights))
      if (!used)
        return emitError(model.getLoc(), "tg-quantize-frozen: weights "
                                         "pattern '")
               << text << "' matches no parameter of @" << model.getSymName();
    if (chosen.empty())
      return emitError(model.getLoc(), "tg-quantize-frozen: no frozen matmul "
                                       "weight of @")
             << model.getSymName()
             << " to quantize (freeze the base, or use LoRA)";

    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    Location loc = model.getLoc();
    auto f32 = builder.getF32Type();
    auto ui8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
    auto constant = [&](ArrayRef<float> values) -> Value {
      auto type = RankedTensorType::get({int64_t(values.size())}, f32);
      return tg::ConstantOp::create(builder, loc,
                                    DenseElementsAttr::get(type, values));
    };
    const float *table = quant4::values(type == tg::FrozenQuant::NF4
                                            ? quant4::Type::NF4
                                            : quant4::Type::FP4);
    Value map = constant(ArrayRef<float>(table, quant4::kValues));
    Value nestedMap;
    if (doubleQuant) {
      SmallVector<float> values;
      for (int c = 0; c < quant4::kNestedValues; ++c)
        values.push_back(quant4::dynamicMap(c));
      nestedMap = constant(values);
    }

    int64_t weightsBefore = 0, bytesAfter = 0, elements = 0;
    for (Choice &choice : chosen) {
      BlockArgument arg = choice.arg;
      unsigned index = arg.getArgNumber();
      auto type = cast<RankedTensorType>(arg.getType());
      int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
      quant4::Layout layout{rows * cols, blockSize};
      StringRef name =
          model.getArgAttrOfType<StringAttr>(index, tg::TGDialect::kParamAttr)
              .getValue();
      // The codes take the parameter's place, name and initializer (the
      // runtime draws the weight in f32 and quantizes it); the scales
      // follow it.
      arg.setType(RankedTensorType::get({layout.codeBytes()}, ui8));
      auto add = [&](StringRef suffix, RankedTensorType argType) {
        NamedAttribute argAttrs[] = {
            NamedAttribute(StringAttr::get(ctx, tg::TGDialect::kParamAttr),
                           StringAttr::get(ctx, (name + suffix).str())),
            NamedAttribute(StringAttr::get(ctx, tg::TGDialect::kFrozenAttr),
                           UnitAttr::get(ctx))};
        unsigned at = model.getNumArguments();
        (void)model.insertArgument(at, argType,
                                   DictionaryAttr::get(ctx, argAttrs),
                                   arg.getLoc());
        bytesAfter += argType.getNumElements() *
                      (argType.getElementType().getIntOrFloatBitWidth() / 8);
        return model.getArgument(at);
      };
      Value absmax = add(".absmax", RankedTensorType::get(
                                        {layout.blocks()},
                                        doubleQuant ? Type(ui8) : Type(f32)));
      SmallVector<Value, 3> nested;
      if (doubleQuant) {
        nested.push_back(add(".nested_absmax",
                             RankedTensorType::get({layout.nestedBlocks()},
                                                   f32)));
        nested.push_back(nestedMap);
        nested.push_back(add(".nested_offset", RankedTensorType::get({}, f32)));
      }
      // The codes name the weight's layout and scales (the runtime's
      // reference to the weight, wherever the products read it from).
      NamedAttrList layoutAttrs;
      layoutAttrs.append("rows", builder.getI64IntegerAttr(rows));
      layoutAttrs.append("cols", builder.getI64IntegerAttr(cols));
      layoutAttrs.append("block_size", builder.getI64IntegerAttr(blockSize));
      layoutAttrs.append(
          "type", builder.getStringAttr(
                      this->type == tg::FrozenQuant::NF4 ? "nf4" : "fp4"));
      layoutAttrs.append("absmax", builder.getStringAttr(name + ".absmax"));
      if (doubleQuant) {
        layoutAttrs.append("nested_absmax",
                           builder.getStringAttr(name + ".nested_absmax"));
        layoutAttrs.append("offset",
                           builder.getStringAttr(name + ".nested_offset"));
      }
      model.setArgAttr(index, tg::TGDialect::kQuant4Attr,
                       layoutAttrs.getDictionary(ctx));
      weightsBefore += type.getNumElements() *
                       (type.getElementType().getIntOrFloatBitWidth() / 8);
      bytesAfter += layout.codeBytes();
      elements += type.getNumElements();
      for (Reader &reader : choice.readers) {
        tg::MatmulOp matmul = reader.matmul;
        OpBuilder at(matmul);
        auto product = tg::Matmul4bitOp::create(
            at, matmul.getLoc(), matmul.getType(), matmul.getLhs(), arg,
            absmax, map, nested, rows, cols, int64_t(blockSize),
            matmul.getTransposeRhs());
        matmul.getResult().replaceAllUsesWith(product.getResult());
        matmul.erase();
      }
      llvm::SetVector<Operation *> casts;
      for (Reader &reader : choice.readers)
        if (reader.cast)
          casts.insert(reader.cast);
      for (Operation *cast : casts)
        cast->erase();
    }
    model.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                    model.getResultTypes()));
    tg::reportSummary(
        loc, getArgument(), model.getSymName(),
        "@" + model.getSymName().str() + ": " +
            std::to_string(chosen.size()) + " weights (" +
            std::to_string(elements) + " elements) in " +
            (type == tg::FrozenQuant::NF4 ? "NF4" : "FP4") +
            (doubleQuant ? " with double quantization" : "") + ": " +
            std::to_string(weightsBefore) + " -> " +
            std::to_string(bytesAfter) + " bytes",
        {{"weights", int64_t(chosen.size())},
         {"elements", elements},
         {"bytes_before", weightsBefore},
         {"bytes_after", bytesAfter}},
        printSummary);
    return success();
  }
};

} // namespace
