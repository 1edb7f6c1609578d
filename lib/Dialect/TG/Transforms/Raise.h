//===- Raise.h - shared by the tg-raise-* passes ----------------*- C++ -*-===//
//
// Internal to lib/Dialect/TG/Transforms: what the passes that turn a
// written-out form into a fused op (RaiseAttention.cpp, RaiseRmsNorm.cpp,
// RaiseGelu.cpp, RaiseLogitSoftcap.cpp) share: reading a scalar constant,
// matching a soft-cap, and erasing the ops a raise left unused.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_RAISE_H
#define TGC_DIALECT_TG_TRANSFORMS_RAISE_H

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

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

/// The capped value `x` and the cap `c` of a soft-cap `c * tanh(x / c)`
/// (the division also as a product by `1 / c`, the two constants equal
/// within f32's rounding) whose last step is `op`, each step used only by
/// the next; its three ops are appended to `chain`. Gemma 2 caps its
/// attention scores and its final logits so.
inline std::optional<std::pair<mlir::Value, double>>
matchSoftcap(mlir::Operation *op,
             llvm::SmallVectorImpl<mlir::Operation *> &chain) {
  auto outer = llvm::dyn_cast_if_present<MulOp>(op);
  if (!outer)
    return std::nullopt;
  auto tanh = outer->getOperand(0).getDefiningOp<TanhOp>();
  std::optional<double> cap = scalarConstant(outer->getOperand(1));
  if (!tanh || !cap || !(*cap > 0.0) || !tanh.getResult().hasOneUse())
    return std::nullopt;
  mlir::Value divided = tanh.getInput();
  mlir::Operation *inner = divided.getDefiningOp();
  if (!inner || !divided.hasOneUse() || !llvm::isa<MulOp, DivOp>(inner))
    return std::nullopt;
  std::optional<double> factor = scalarConstant(inner->getOperand(1));
  if (!factor || !(*factor > 0.0))
    return std::nullopt;
  double innerCap = llvm::isa<DivOp>(inner) ? *factor : 1.0 / *factor;
  if (std::abs(innerCap - *cap) > 1e-6 * *cap)
    return std::nullopt;
  chain.append({outer, tanh, inner});
  return std::make_pair(inner->getOperand(0), *cap);
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
