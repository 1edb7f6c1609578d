//===- TGDialect.h - the tg dialect -----------------------------*- C++ -*-===//
//
// Declares the tg dialect, which represents training graphs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGDIALECT_H
#define TGC_DIALECT_TG_IR_TGDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tgc/Dialect/TG/IR/TGDialect.h.inc"

#endif // TGC_DIALECT_TG_IR_TGDIALECT_H
