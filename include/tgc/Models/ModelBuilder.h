//===- ModelBuilder.h - building tg models from C++ -------------*- C++ -*-===//
//
// A small builder for tg.model functions: it adds parameters and inputs as
// function arguments as they are declared, computes the result type of each
// op it creates, names op locations after the module they belong to
// (`transformer.h.0.attn`), and verifies the finished module.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_MODELS_MODELBUILDER_H
#define TGC_MODELS_MODELBUILDER_H

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>

namespace tgc {

class ModelBuilder {
public:
  /// Starts a tg.model function named `name` whose parameters and
  /// activations have element type `elementType`.
  ModelBuilder(mlir::MLIRContext *context, llvm::StringRef name,
               mlir::Type elementType);

  /// Sets the name that locations of the ops created next carry.
  void setScope(llvm::StringRef scope);

  mlir::Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    tg::InitAttr init);
  mlir::Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    mlir::Type elementType);

  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs, bool transposeLhs = false,
                     bool transposeRhs = false);
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value relu(mlir::Value input);
  mlir::Value silu(mlir::Value input);
  /// silu(gate) * up as one tg.swiglu.
  mlir::Value swiglu(mlir::Value gate, mlir::Value up);
  mlir::Value rmsNorm(mlir::Value input, mlir::Value weight, double epsilon);
  /// An f32 constant of the model.
  mlir::Value constant(llvm::ArrayRef<float> values);
  /// A 0-d tensor of the model's element type holding `value` (tg.fill).
  mlir::Value scalar(double value);
  /// Rotary embedding of [..., T, D] heads by `invFreq`, the D/2
  /// frequencies (an f32 constant, built once for every rope).
  mlir::Value rope(mlir::Value input, mlir::Value invFreq,
                   mlir::Value positions = {});
  /// The tanh approximation, or with `exact` the erf form.
  mlir::Value gelu(mlir::Value input, bool exact = false);
  mlir::Value tanh(mlir::Value input);
  mlir::Value layerNorm(mlir::Value input, mlir::Value weight,
                        mlir::Value bias, double epsilon);
  /// Row `paddingIdx` (when given) gets no gradient.
  mlir::Value embedding(mlir::Value table, mlir::Value indices,
                        std::optional<int64_t> paddingIdx = std::nullopt);
  /// `keyMask`, when given, is a [B, Tk] padding mask; a positive
  /// `window` (causal) limits each query to that many keys back; a
  /// positive `scale` replaces 1 / sqrt(D), a positive `softcap` caps the
  /// scores (tg.attention). With `segments`, `keyMask` holds the segment
  /// ids of packed examples instead (tg.attention's `segments`).
  mlir::Value attention(mlir::Value query, mlir::Value key, mlir::Value value,
                        bool causal, mlir::Value keyMask = {},
                        int64_t window = 0, double scale = 0.0,
                        double softcap = 0.0, bool segments = false);
  /// A positive `softcap` caps the logits first (cap * tanh(x / cap)).
  mlir::Value crossEntropy(mlir::Value logits, mlir::Value targets,
                           double softcap = 0.0);
  /// A mixture-of-experts SwiGLU MLP as Mixtral computes it, over [N, C]
  /// tokens: the router's softmax (f32), its `topK` experts per token
  /// (their weights renormalized to sum to 1 when `normalize`), every
  /// choice routed dropless (tg.moe_route), each expert's
  /// down(silu(gate(x)) * up(x)) as grouped products over the experts'
  /// own nn.Linear weights ([out, in]), and the weighted sum of each
  /// token's k results. [N, C].
  /// With `balance`, also what the routers' load-balancing loss reads
  /// (transformers' load_balancing_loss_func): the mean over the tokens of
  /// how many of its k choices went to each expert, and of the router's
  /// probability for each expert, f32 [E] each.
  struct RouterBalance {
    mlir::Value tokensPerExpert, probPerExpert;
  };
  mlir::Value mixtureOfExperts(mlir::Value tokens, mlir::Value router,
                               llvm::ArrayRef<mlir::Value> gate,
                               llvm::ArrayRef<mlir::Value> up,
                               llvm::ArrayRef<mlir::Value> down, int64_t topK,
                               bool normalize,
                               RouterBalance *balance = nullptr);
  mlir::Value reshape(mlir::Value input, llvm::ArrayRef<int64_t> shape);
  /// The sum of all of `input`'s elements, a scalar.
  mlir::Value sumAll(mlir::Value input);
  mlir::Value transpose(mlir::Value input, llvm::ArrayRef<int64_t> permutation);
  mlir::Value slice(mlir::Value input, llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes);
  llvm::SmallVector<mlir::Value> split(mlir::Value input, int64_t axis,
                                       int64_t pieces);

  /// Returns `loss` from the function and hands over the verified module;
  /// null (after reporting the diagnostics) when verification fails.
  mlir::OwningOpRef<mlir::ModuleOp> finish(mlir::Value loss);

  /// Records how the model was built (tg.generator) on its function.
  void setGenerator(llvm::ArrayRef<mlir::NamedAttribute> generator);
  /// Adds (or replaces) one entry of that record.
  void recordGenerator(mlir::NamedAttribute entry);
  /// Records the model's task (tg.task: TGDialect::kTaskCausalLM, ...).
  void setTask(llvm::StringRef task);

private:
  mlir::RankedTensorType tensorOf(llvm::ArrayRef<int64_t> shape,
                                  mlir::Type elementType);
  mlir::Value addArgument(mlir::Type type, mlir::NamedAttrList attrs);

  mlir::MLIRContext *context;
  mlir::Type elementType;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp function;
  mlir::OpBuilder builder;
  mlir::Location loc;
  llvm::SmallVector<mlir::DictionaryAttr> argAttrs;
};

} // namespace tgc

#endif // TGC_MODELS_MODELBUILDER_H
