//===- TGInterfaces.h - op interfaces of the tg dialect ---------*- C++ -*-===//
//
// Declares the gradient and cost interfaces of tg ops and the helpers their
// default implementations use.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_H
#define TGC_DIALECT_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeRange.h"

namespace tgc::tg {

/// Bytes one element of `elementType` occupies in memory (i1 takes a byte).
int64_t getElementByteSize(mlir::Type elementType);

/// Bytes of a statically shaped tensor; 0 for anything else.
int64_t getTensorBytes(mlir::Type type);

/// Sum of getTensorBytes over `types`.
int64_t getTotalTensorBytes(mlir::TypeRange types);

} // namespace tgc::tg

#include "tgc/Dialect/TG/IR/TGInterfaces.h.inc"

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_H
