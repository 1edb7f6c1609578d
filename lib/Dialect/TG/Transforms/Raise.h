//===- Raise.h - shared by the tg-raise-* passes ----------------*- C++ -*-===//
//
// Internal to lib/Dialect/TG/Transforms: what the passes that turn a
// written-out form into a fused op (RaiseAttention.cpp, RaiseRmsNorm.cpp,
// RaiseGelu.cpp) share: reading a scalar constant, and erasing the ops a
// raise left unused.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_RAISE_H
#define TGC_DIALECT_TG_TRANSFORMS_RAISE_H

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace tgc::tg::raise {

/// The value of a scalar (rank 0 or splat) float constant, or nullopt.
inline std::optional<double> scalarConstant(mlir::Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() ||
      !llvm::isa<mlir::FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<llvm::APFloat>().convertToDouble();
}

/// `scalarConstant` as the shortest decimal that rounds to the constant in
/// its own type (a model's `1e-05`, not f32's 9.99999975e-06).
inline std::optional<double> shortestScalarConstant(mlir::Value v) {
  std::optional<double> exact = scalarConstant(v);
  if (!exact)
    return std::nullopt;
  auto dense = llvm::cast<mlir::DenseElementsAttr>(
      v.getDefiningOp<ConstantOp>().getValue());
  llvm::APFloat value = dense.getSplatValue<llvm::APFloat>();
  for (int digits = 1; digits <= 17; ++digits) {
    char text[40];
    std::snprintf(text, sizeof text, "%.*g", digits, *exact);
    double shortest = std::strtod(text, nullptr);
    llvm::APFloat back(shortest);
    bool lost = false;
    back.convert(value.getSemantics(), llvm::APFloat::rmNearestTiesToEven,
                 &lost);
    if (back.bitwiseIsEqual(value))
      return shortest;
  }
  return exact;
}

/// Erases `ops` (what a raised op replaced) and then whatever only they
/// read (constants, a mask's arithmetic), as each becomes unused: tg ops
/// have no side effects.
inline void eraseUnused(llvm::ArrayRef<mlir::Operation *> ops) {
  llvm::SmallVector<mlir::Operation *> worklist(ops.begin(), ops.end());
  llvm::SmallPtrSet<mlir::Operation *, 16> erased;
  while (!worklist.empty()) {
    mlir::Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !op->use_empty() ||
        !llvm::isa<TGDialect>(op->getDialect()))
      continue;
    for (mlir::Value operand : op->getOperands())
      if (mlir::Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

} // namespace tgc::tg::raise

#endif // TGC_DIALECT_TG_TRANSFORMS_RAISE_H
