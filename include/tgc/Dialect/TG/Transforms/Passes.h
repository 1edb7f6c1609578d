//===- Passes.h - passes on tg training graphs ------------------*- C++ -*-===//
//
// Declares the tg passes (generated from Passes.td) and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_H
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/Choices.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace tgc::tg {

#define GEN_PASS_DECL
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

/// tg-optimizer's weight-decay, checked and resolved here only: its default
/// (-1) stands for the optimizer's own (0.01 for AdamW, 0 for SGD and
/// Adafactor, as torch.optim), and must not be what typing -1 gives; a value
/// given must be finite and non-negative. checkWeightDecay returns the error
/// ("" when `value` is fine; `given`: the user set it).
std::string checkWeightDecay(double value, bool given);
double resolveWeightDecay(double value, bool adamw);

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_H
