//===- OptionErrors.h - reporting a bad pass option -------------*- C++ -*-===//
//
// A bad option value is the user's command line at fault, not the IR: its
// error is reported at the module's location, without the "see current
// operation" dump of the whole module that an op's diagnostic carries
// (336 KB for GPT-2 124M).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_OPTIONERRORS_H
#define TGC_DIALECT_TG_TRANSFORMS_OPTIONERRORS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

namespace tgc::tg {

inline mlir::InFlightDiagnostic emitOptionError(mlir::Operation *op,
                                                const llvm::Twine &message) {
  return mlir::emitError(op->getLoc(), message);
}

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_OPTIONERRORS_H
