//===- TGOps.h - ops of the tg dialect --------------------------*- C++ -*-===//
//
// Declares the ops of the tg dialect (generated from TGOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGOPS_H
#define TGC_DIALECT_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tgc/Dialect/TG/IR/TGAttrs.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGInterfaces.h"

namespace tgc::tg {

/// The NumPy broadcast of two shapes (trailing alignment, size-1 dimensions
/// stretch), or failure when they are incompatible.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// The attribute by which a fused gradient op computes only some of its
/// results (`tg.layer_norm_grad`, `tg.attention_grad`): one bool per result.
inline constexpr llvm::StringLiteral kOutputMaskAttr = "output_mask";

/// Whether `op` computes its result `index`: false only when its
/// `output_mask` says so. Results not computed get no memory and no work.
bool computesResult(mlir::Operation *op, unsigned index);

/// 8-bit optimizer state (`tg.adamw_8bit_update`, `tg.sgd_8bit_update`):
/// the entries of a quantization map, and the largest block of elements
/// one absmax may scale (bitsandbytes' largest, and what a CUDA thread
/// block keeps in shared memory).
inline constexpr int64_t kQuantMapSize = 256;
inline constexpr int64_t kMaxQuantBlockSize = 4096;
/// 4-bit state (`tg.adamw_4bit_update`): 16-entry maps, two codes a byte.
inline constexpr int64_t kQuant4MapSize = 16;

} // namespace tgc::tg

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.h.inc"

#endif // TGC_DIALECT_TG_IR_TGOPS_H
