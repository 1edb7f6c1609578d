//===- TGX.h - lowering a planned training step to .tgx ---------*- C++ -*-===//
//
// Lowers a tg.train_step function and its memory plan to the executable
// program of format/tgx.fbs: a tensor table whose entries carry their
// region and offset from the plan, one instruction per op (reshapes that
// alias their operand need none), and the constants.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TARGET_TGX_H
#define TGC_TARGET_TGX_H

#include "tgc/Analysis/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace tgc {

/// The most bytes of constants one executable may hold (1 GiB): a .tgx is
/// one FlatBuffer, whose offsets limit it to 2 GiB.
constexpr int64_t kMaxConstantBytes = int64_t(1) << 30;

/// Another program of the executable over the training step's tensors
/// (an evaluation step: the model's forward pass and loss), planned on its
/// own. Its arguments must be persistent tensors of the training step, by
/// name and type.
struct TGXEntry {
  std::string name;
  mlir::func::FuncOp function;
  const MemoryPlan *plan;
};

/// Serializes `step` as planned by `plan`, and `entries`, into `out`: the
/// whole file, checksum trailer included
/// (format/include/tgc/format/TGXFile.h). `options` records how
/// it was compiled; `allowTF32` lets the CUDA backend run f32 GEMMs on
/// TF32 tensor cores. Emits a diagnostic and fails on an op or attribute
/// the format cannot express.
mlir::LogicalResult writeTGX(mlir::func::FuncOp step, const MemoryPlan &plan,
                             llvm::StringRef model, llvm::StringRef options,
                             llvm::ArrayRef<TGXEntry> entries,
                             std::vector<uint8_t> &out,
                             bool allowTF32 = false);

} // namespace tgc

#endif // TGC_TARGET_TGX_H
