//===- TGInterfaces.h - op interfaces of the tg dialect ---------*- C++ -*-===//
//
// Declares the gradient and cost interfaces of tg ops and the helpers their
// default implementations use.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_H
#define TGC_DIALECT_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/IR/TypeUtilities.h"

namespace tgc::tg {

/// How an operand of an optimizer update lines up with its parameter, for
/// splitting the update across ranks (OptimizerUpdateOpInterface).
enum class ShardLayout { Replicated, PerElement, PerElementPair, PerBlock };

/// Bytes one element of `elementType` occupies in memory (i1 takes a byte).
int64_t getElementByteSize(mlir::Type elementType);

/// Bytes of a statically shaped tensor; 0 for anything else.
int64_t getTensorBytes(mlir::Type type);

/// Sum of getTensorBytes over `types`.
int64_t getTotalTensorBytes(mlir::TypeRange types);

/// Fails, through `emitError`, when the statically shaped tensor `type`
/// would hold more than tgc's limit on one tensor (kMaxTensorBytes, 256
/// TiB) or its size overflows: every later byte count relies on this.
mlir::LogicalResult
verifyTensorSize(mlir::Type type,
                 llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// verifyTensorSize over every operand and result type of `op`.
mlir::LogicalResult verifyTensorSizes(mlir::Operation *op);

/// The trait every tg op has: its tensors are within the size limit.
template <typename ConcreteType>
class BoundedTensorSizes
    : public mlir::OpTrait::TraitBase<ConcreteType, BoundedTensorSizes> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyTensorSizes(op);
  }
};

} // namespace tgc::tg

#include "tgc/Dialect/TG/IR/TGInterfaces.h.inc"

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_H
