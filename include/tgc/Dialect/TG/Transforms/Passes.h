//===- Passes.h - passes on tg training graphs ------------------*- C++ -*-===//
//
// Declares the tg passes (generated from Passes.td) and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_H
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace tgc::tg {

#define GEN_PASS_DECL
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_H
