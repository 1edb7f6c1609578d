//===- TGAttrs.h - attributes of the tg dialect -----------------*- C++ -*-===//
//
// Declares `#tg.init<...>` and the enums of the tg dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGATTRS_H
#define TGC_DIALECT_TG_IR_TGATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "tgc/Dialect/TG/IR/TGEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tgc/Dialect/TG/IR/TGAttrs.h.inc"

#endif // TGC_DIALECT_TG_IR_TGATTRS_H
