//===- TrainStep.h - what the passes on training steps share ----*- C++ -*-===//
//
// Helpers of the passes that rewrite tg.train_step functions (tg-optimizer,
// tg-quantize-optimizer-state, tg-loss-scale, tg-grad-accum): finding the
// steps, appending a state argument, and setting the results.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_TRAINSTEP_H
#define TGC_DIALECT_TG_TRANSFORMS_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace tgc::tg {

/// Runs `rewrite` on every func.func of `module` marked tg.train_step,
/// stopping at the first failure. Without any, reports that `pass` found
/// none and must run after `after`.
mlir::LogicalResult forEachTrainStep(
    mlir::ModuleOp module, llvm::StringRef pass, llvm::StringRef after,
    llvm::function_ref<mlir::LogicalResult(mlir::func::FuncOp)> rewrite);

/// The op where `function`'s backward pass starts: tg-autodiff's seed of
/// the loss's cotangent (tg.fill {tg.loss_seed}), or the tg.scale_loss that
/// tg-loss-scale puts after it (taking the seed's mark away); null for a
/// function without a backward pass (gradient accumulation's apply step,
/// an evaluation step).
mlir::Operation *findBackwardStart(mlir::func::FuncOp function);

/// Appends an argument of `type` to `step`'s entry block, marked `tg.state
/// = name` (and `tg.init = init` when given), recording its attributes in
/// `argAttrs`, which the caller sets on the function with the new type.
mlir::BlockArgument
appendStateArgument(mlir::func::FuncOp step,
                    llvm::SmallVectorImpl<mlir::DictionaryAttr> &argAttrs,
                    llvm::StringRef name, mlir::Type type,
                    mlir::Attribute init = {});

/// The attribute dictionary of each argument (result) of `function`, an
/// empty one where it has none: what a pass edits and sets back.
llvm::SmallVector<mlir::DictionaryAttr>
getArgAttrDicts(mlir::func::FuncOp function);
llvm::SmallVector<mlir::DictionaryAttr>
getResultAttrDicts(mlir::func::FuncOp function);

/// `{<attr> = "<name>"}`: a result naming the tensor it updates
/// (tg.update) or the parameter whose gradient it is (tg.grad).
mlir::DictionaryAttr namedResultAttr(mlir::MLIRContext *context,
                                     llvm::StringRef attr,
                                     llvm::StringRef name);

/// Makes `results` what `function` returns and sets its type, argument
/// attributes and result attributes to match.
void setStepResults(mlir::func::FuncOp function, mlir::ValueRange results,
                    llvm::ArrayRef<mlir::DictionaryAttr> argAttrs,
                    llvm::ArrayRef<mlir::DictionaryAttr> resultAttrs);

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_TRAINSTEP_H
