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
  /// A shape bucket's step: its sequence length (> 0), and whether it is
  /// a training step (which updates parameters and state). Its inputs
  /// become `<input>@<seqLen>` tensors sharing the training step's
  /// inputs' memory.
  int64_t seqLen = 0;
  bool trains = false;
};

/// What the executable records besides its programs.
struct TGXInfo {
  std::string model;
  /// How it was compiled (one line).
  std::string options;
  /// The model's tg.task, or empty.
  std::string task;
  /// The model's preference loss (tg.preference), or empty: its batches
  /// hold pairs.
  std::string preference;
  /// The training step's sequence length when there are shape buckets.
  int64_t seqLen = 0;
  /// The CUDA backend may run f32 GEMMs on TF32 tensor cores.
  bool allowTF32 = false;
  /// The model's Hugging Face config.json, or empty and why.
  std::string hfConfig, hfConfigError;
};

/// Serializes `step` as planned by `plan`, and `entries`, into `out`: the
/// whole file, checksum trailer included
/// (format/include/tgc/format/TGXFile.h), with `info`. Emits a diagnostic
/// and fails on an op or attribute the format cannot express.
mlir::LogicalResult writeTGX(mlir::func::FuncOp step, const MemoryPlan &plan,
                             const TGXInfo &info,
                             llvm::ArrayRef<TGXEntry> entries,
                             std::vector<uint8_t> &out);

} // namespace tgc

#endif // TGC_TARGET_TGX_H
