//===- Freeze.cpp - the tg-freeze pass ------------------------------------===//
//
// Marks parameters `tg.frozen` by glob patterns on their names, so that
// tg-autodiff builds no gradient, state, update or backward work for them.
// Every pattern must match, a parameter cannot be both frozen and trained,
// and something must stay trainable. Frozen f32 parameters may be stored in
// 16 bits (`frozen-dtype`).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Summary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGFREEZE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

/// One option's patterns, compiled, with whether each matched.
struct Patterns {
  std::string option;
  SmallVector<std::string> texts;
  SmallVector<llvm::GlobPattern> globs;
  SmallVector<bool> matched;

  /// Whether `name` matches any pattern (recording which).
  bool match(StringRef name) {
    bool any = false;
    for (auto [glob, hit] : llvm::zip(globs, matched))
      if (glob.match(name))
        any = hit = true;
    return any;
  }
};

struct FreezePass : tgc::tg::impl::TGFreezeBase<FreezePass> {
  using TGFreezeBase::TGFreezeBase;

  void runOnOperation() override {
    Patterns frozen, trained;
    if (failed(compile("freeze", freeze, frozen)) ||
        failed(compile("train-only", trainOnly, trained)))
      return signalPassFailure();
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(tg::TGDialect::kModelAttr))
        if (failed(runOnModel(function, frozen, trained)) ||
            failed(narrowFrozen(function)))
          return signalPassFailure();
  }

  /// Stores the frozen f32 parameters of `model` in `frozen-dtype`, widened
  /// by one cast where the model reads them.
  LogicalResult narrowFrozen(func::FuncOp model) {
    if (frozenDtype == tg::Half::None)
      return success();
    Builder b(&getContext());
    Type element = frozenDtype == tg::Half::BF16 ? Type(b.getBF16Type())
                                             : Type(b.getF16Type());
    Block &body = model.getBody().front();
    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    int frozen = 0;
    for (BlockArgument arg : body.getArguments()) {
      if (!model.getArgAttr(arg.getArgNumber(), tg::TGDialect::kFrozenAttr))
        continue;
      ++frozen;
      auto type = cast<RankedTensorType>(arg.getType());
      if (!type.getElementType().isF32())
        continue;
      arg.setType(type.clone(element));
      auto widen = tg::CastOp::create(builder, arg.getLoc(), type, arg);
      arg.replaceAllUsesExcept(widen, widen);
      // An embedding reads the 16-bit table itself, widening the rows it
      // gathers: no f32 copy of the table.
      for (OpOperand &use : llvm::make_early_inc_range(widen->getUses()))
        if (isa<tg::EmbeddingOp>(use.getOwner()) && use.getOperandNumber() == 0)
          use.set(arg);
      if (widen->use_empty())
        widen->erase();
    }
    if (frozen == 0)
      return emitError(model.getLoc(), "tg-freeze: frozen-dtype=")
             << tg::choiceName(frozenDtype.getValue()) << " but no parameter of @" << model.getSymName()
             << " is frozen (use freeze or train-only)";
    model.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                    model.getResultTypes()));
    return success();
  }

  LogicalResult compile(StringRef option, ArrayRef<std::string> texts,
                        Patterns &patterns) {
    patterns.option = option.str();
    for (const std::string &text : texts) {
      StringRef trimmed = StringRef(text).trim();
      if (trimmed.empty())
        return emitError(getOperation().getLoc(), "tg-freeze: an empty pattern in ")
               << option;
      llvm::Expected<llvm::GlobPattern> glob =
          llvm::GlobPattern::create(trimmed);
      if (!glob)
        return emitError(getOperation().getLoc(), "tg-freeze: bad ")
               << option << " pattern '" << trimmed
               << "': " << llvm::toString(glob.takeError());
      patterns.texts.push_back(trimmed.str());
      patterns.globs.push_back(std::move(*glob));
      patterns.matched.push_back(false);
    }
    return success();
  }

  LogicalResult runOnModel(func::FuncOp model, Patterns frozen,
                           Patterns trained) {
    if (frozen.texts.empty() && trained.texts.empty())
      return success();
    SmallVector<std::string> names;
    int params = 0, frozenParams = 0;
    int64_t elements = 0, frozenElements = 0;
    for (BlockArgument arg : model.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = model.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kParamAttr);
      if (!name)
        continue;
      ++params;
      int64_t count = cast<RankedTensorType>(arg.getType()).getNumElements();
      elements += count;
      names.push_back(name.str());
      bool freezeIt = frozen.match(name.getValue());
      bool trainIt = trained.match(name.getValue());
      if (freezeIt && trainIt)
        return emitError(arg.getLoc(), "tg-freeze: parameter '")
               << name.getValue()
               << "' matches both --freeze and --train-only";
      if (!trained.texts.empty() && !trainIt)
        freezeIt = true;
      if (freezeIt)
        model.setArgAttr(i, tg::TGDialect::kFrozenAttr,
                         UnitAttr::get(&getContext()));
      if (model.getArgAttr(i, tg::TGDialect::kFrozenAttr)) {
        ++frozenParams;
        frozenElements += count;
      }
    }
    for (Patterns *patterns : {&frozen, &trained})
      for (auto [text, hit] : llvm::zip(patterns->texts, patterns->matched))
        if (!hit) {
          InFlightDiagnostic diag =
              emitError(model.getLoc(), "tg-freeze: --")
              << patterns->option << " pattern '" << text
              << "' matches no parameter of @" << model.getSymName();
          diag.attachNote() << "parameters are named like '"
                            << (names.empty() ? std::string("<none>")
                                              : names.front())
                            << "'" << (names.size() > 1
                                           ? " and '" + names.back() + "'"
                                           : std::string());
          return diag;
        }
    if (params > 0 && frozenParams == params)
      return emitError(model.getLoc(), "tg-freeze: every parameter of @")
             << model.getSymName()
             << " is frozen; nothing would be trained";
    tg::reportSummary(model.getLoc(), "tg-freeze", model.getSymName(),
                  "@" + model.getSymName().str() + ": " +
                      std::to_string(frozenParams) + " of " +
                      std::to_string(params) + " parameters frozen (" +
                      std::to_string(frozenElements) + " of " +
                      std::to_string(elements) + " elements)",
                  {{"frozen_params", frozenParams},
                   {"frozen_elements", frozenElements}},
                  printSummary);
    return success();
  }
};

} // namespace
