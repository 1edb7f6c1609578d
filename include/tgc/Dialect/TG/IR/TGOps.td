//===- TGOps.td - ops of the tg dialect ---------------------*- tablegen -*-===//
//
// The ops of training graphs, in four families:
// - forward ops (linear algebra, elementwise, activations, normalization,
//   attention, loss, shape ops, casts, constants);
// - gradient ops that backward passes need where a forward op's VJP is not
//   itself a composition of forward ops;
// - optimizer updates (SGD with momentum, AdamW, both also with 8-bit
//   blockwise-quantized state, and Adafactor);
// - mixed-precision ops (loss scaling, unscaling, finiteness, scale update).
//
// Every op states its semantics in its description; the CPU backend of the
// runtime is their reference implementation.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGOPS_TD
#define TGC_DIALECT_TG_IR_TGOPS_TD

include "tgc/Dialect/TG/IR/TGDialect.td"
include "tgc/Dialect/TG/IR/TGTypes.td"
include "tgc/Dialect/TG/IR/TGAttrs.td"
include "tgc/Dialect/TG/IR/TGInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// Every tg op is pure and has a cost. `costOverrides` lists the cost methods
/// with a default implementation that the op replaces.
/// Every tensor of a tg op holds at most kMaxTensorBytes (checked without
/// overflow), so byte counts computed later cannot overflow.
def TG_BoundedTensorSizes : NativeOpTrait<"BoundedTensorSizes"> {
  let cppNamespace = "::tgc::tg";
}

class TG_Op<string mnemonic, list<Trait> traits = [],
            list<string> costOverrides = []>
    : Op<TG_Dialect, mnemonic,
         !listconcat(traits, [Pure, TG_BoundedTensorSizes,
             DeclareOpInterfaceMethods<TG_CostOpInterface, costOverrides>])>;

/// An op whose result type follows from its operands by a rule of
/// tgc/Support/ShapeRules.h (builders need no result type). Its verifier
/// checks the same rule with messages that say what disagrees, so
/// refineReturnTypes accepts the declared type and leaves it to the verifier.
defvar TG_InferredType =
    DeclareOpInterfaceMethods<InferTypeOpInterface, ["refineReturnTypes"]>;

/// Shorthand for an op that implements its own vector-Jacobian product.
defvar TG_Differentiable = DeclareOpInterfaceMethods<TG_GradientOpInterface>;

/// An op whose result may be written over an operand of the same type (see
/// InPlaceOpInterface); `TG_InPlaceTied` for ops that say which.
defvar TG_InPlace = TG_InPlaceOpInterface;
defvar TG_InPlaceTied =
    DeclareOpInterfaceMethods<TG_InPlaceOpInterface, ["canReuseOperandBuffer"]>;

/// An optimizer update (see OptimizerUpdateOpInterface).
defvar TG_OptimizerUpdate = DeclareOpInterfaceMethods<
    TG_OptimizerUpdateOpInterface, ["getOperandShardLayout"]>;
defvar TG_UnshardableUpdate = DeclareOpInterfaceMethods<
    TG_OptimizerUpdateOpInterface, ["getOperandShardLayout",
                                    "getShardGranule"]>;
defvar TG_BlockwiseUpdate = TG_UnshardableUpdate;

/// The cost of an elementwise op: `flops` per result element.
class TG_FlopsPerElement<int flops> {
  code flopsDefinition = [{
    int64_t $cppClass::getFlops() {
      return }] # flops # [{ * ::llvm::cast<::mlir::RankedTensorType>(
          getResult().getType()).getNumElements();
    }
  }];
}

/// An elementwise op of one float operand. `kernel`, where given, is its
/// runtime kernel as one C++ expression of the f32 `x` that compiles for the
/// host and the device (C math functions and the helpers of
/// runtime/src/Scalar.h): tgc-tblgen makes both backends' kernels, their
/// dispatch and the loader's check from it (Kernels.def's TGC_UNARY). Where
/// it is empty the kernels are written by hand.
class TG_UnaryOp<string mnemonic, string formula, int flops = 1,
                 string kernel = "">
    : TG_Op<mnemonic, [SameOperandsAndResultType, Elementwise,
                       TG_Differentiable, TG_InPlace]>,
      TG_FlopsPerElement<flops> {
  string kernelValue = kernel;
  let summary = "elementwise " # formula;
  let description = [{
    Computes `}] # formula # [{` for every element; the result has the type of
    the operand. f16 and bf16 are computed in f32 and rounded once.
  }];
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = flopsDefinition;
}

/// An activation and its gradient, ops and kernels from this one line:
/// `tg.NAME` and `tg.NAME_grad`, which takes the activation's operand and
/// the incoming gradient; the VJP of `tg.NAME` is `tg.NAME_grad`. `cppName`
/// is the ops' C++ name without `Op`. `kernel` is the activation's kernel
/// (as TG_UnaryOp's) and `kernelGrad` its gradient's, a C++ expression of
/// the operand `x` and the incoming gradient `g` (Kernels.def's
/// TGC_ACTIVATION).
multiclass TG_Activation<string mnemonic, string cppName, string formula,
                         string gradient, int flops, int gradFlops,
                         string kernel, string kernelGrad> {
  def Op : TG_UnaryOp<mnemonic, formula, flops, kernel> {
    string kernelGradient = kernelGrad;
    let extraClassDefinition = flopsDefinition # [{
      ::mlir::LogicalResult $cppClass::buildVectorJacobianProduct(
          ::mlir::OpBuilder &builder, ::mlir::ArrayRef<::mlir::Value> grads,
          ::mlir::ArrayRef<bool>,
          ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
        operandGrads.push_back(}] # cppName # [{GradOp::create(
            builder, getLoc(), getInput(), grads[0]));
        return ::mlir::success();
      }
    }];
  }
  def GradOp : TG_Op<mnemonic # "_grad", [SameOperandsAndResultType,
                                          TG_InPlace]>,
               TG_FlopsPerElement<gradFlops> {
    let summary = "gradient of " # mnemonic;
    let description = [{
      `result = }] # gradient # [{`, where `x` is }] # mnemonic # [{'s
      operand and `grad` the gradient of its result.
    }];
    let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$grad);
    let results = (outs TG_FloatTensor:$result);
    let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
    let extraClassDefinition = flopsDefinition;
  }
}

class TG_BinaryOp<string mnemonic, string formula,
                  list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat(traits, [TG_InPlace, TG_InferredType])>,
      TG_FlopsPerElement<1> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = [{
    Computes `}] # formula # [{` elementwise after broadcasting both operands
    to the result shape with NumPy rules: shapes are aligned at their trailing
    dimension and each pair of sizes must be equal or one of them 1. Both
    operands and the result have the same element type: f32, f16, bf16, or
    i32/i64 (for counters such as the step; integer division truncates
    toward zero, and division by zero is a runtime error). One float
    operand may be f16 or bf16 beside an f32 operand and result: it is
    widened exactly as it is read (what tg-fold-casts makes of a widening
    `tg.cast`).
  }];
  let arguments = (ins TG_NumericTensor:$lhs, TG_NumericTensor:$rhs);
  let results = (outs TG_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  // The verifier checks the shape rule with messages that say what
  // disagrees (see TG_InferredType).
  let extraClassDefinition = flopsDefinition # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcastType(location, getOperationName(), operands, types);
    }
    ::llvm::LogicalResult $cppClass::refineReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        ::mlir::ValueRange, ::mlir::DictionaryAttr, ::mlir::OpaqueProperties,
        ::mlir::RegionRange, ::llvm::SmallVectorImpl<::mlir::Type> &) {
      return ::mlir::success();
    }
  }];
}

class TG_ReduceOp<string mnemonic, string what>
    : TG_Op<mnemonic, [TG_Differentiable]> {
  let summary = "reduces by " # what # " over axes";
  let description = [{
    Reduces the operand by }] # what # [{ over `axes` (sorted, distinct, in
    range). With `keep_dims` the reduced dimensions stay with size 1,
    otherwise they are removed. Accumulation is in f32 for every element type.
  }];
  let arguments = (ins TG_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_Op<"matmul", [TG_Differentiable, TG_InferredType],
                        ["getMatmulFlops", "getKernelLaunches"]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `lhs` has shape `[B..., M, K]` (`[B..., K, M]` with `transpose_lhs`),
    `rhs` has shape `[B..., K, N]` (`[B..., N, K]` with `transpose_rhs`); the
    batch dimensions `B...` broadcast with NumPy rules (a rank-2 operand is
    shared by every batch). The result is `[B..., M, N]`, accumulated in f32
    and stored in the common element type.

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs = true}
        : (tensor<8x64x768xf32>, tensor<3072x768xf32>) -> tensor<8x64x3072xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_LinearOp : TG_Op<"linear", [TG_Differentiable],
                        ["getMatmulFlops", "getKernelLaunches"]> {
  let summary = "input @ weight + bias, optionally through GELU: a fused GEMM";
  let description = [{
    `input` is `[B..., M, K]`, `weight` `[K, N]` (shared by every batch) in
    the same element type; `bias` is `[N]`. The result is `[B..., M, N]`
    in the bias's element type (f32 from 16-bit operands under mixed
    precision): the product is accumulated in f32, the bias added and, with
    `gelu`, the tanh-approximated GELU applied, all before one rounding.
    With `gelu` the op also returns the pre-activation `input @ weight +
    bias` (the GELU's input, which its gradient reads).

    tg-fuse builds it from `tg.matmul`, `tg.add` of a bias (and `tg.gelu`);
    the CUDA backend runs it as one cuBLASLt matmul with the bias (and
    GELU with its auxiliary output) in the epilogue.

    ```mlir
    %h, %pre = tg.linear %x, %w, %b {gelu = true}
        : (tensor<8x64x768xbf16>, tensor<768x3072xbf16>, tensor<3072xf32>)
        -> (tensor<8x64x3072xf32>, tensor<8x64x3072xf32>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$gelu);
  let results = (outs TG_FloatTensor:$result,
                      Optional<TG_FloatTensor>:$preactivation);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_Matmul4bitOp : TG_Op<"matmul_4bit", [TG_Differentiable],
                             ["getMatmulFlops"]> {
  let summary = "a product with a frozen 4-bit weight (QLoRA's NF4 or FP4), "
                "dequantized inside the GEMM";
  let description = [{
    `input @ W^T` (`transpose_rhs`, the default: `W` is `[rows, cols]` as
    a `torch.nn.Linear` stores it, `input` is `[B..., M, cols]`, the result
    `[B..., M, rows]`) or `input @ W` (`input` `[B..., M, rows]`, the
    result `[B..., M, cols]`), where the weight `W` is stored as
    bitsandbytes stores a frozen weight (`Linear4bit`, `quantize_4bit`):
    flattened row-major into blocks of `block_size` elements, element `i`
    is `quant_map[c_i] * absmax[i / block_size]` with its 4-bit code `c_i`
    the high nibble of byte `i / 2` of `codes` when `i` is even, the low
    one when odd (`codes` is ui8 `[ceil(rows * cols / 2)]`). `quant_map`
    holds the 16 values of NF4 or FP4.

    `absmax` is f32 `[blocks]`; or, double-quantized (QLoRA's default),
    ui8 `[blocks]` codes into `nested_map` (256 entries, bitsandbytes'
    signed dynamic map) with the three `nested` operands `nested_absmax`
    (f32, one per 256 blocks), `nested_map` and `offset` (an f32 scalar):
    `absmax[b] = nested_map[q_b] * nested_absmax[b / 256] + offset`, a
    product then a sum, each rounded to f32.

    Each element of `W` is dequantized in f32 and rounded to the input's
    element type, as bitsandbytes' `dequantize_4bit(...).to(x.dtype)`; the
    product is accumulated in f32 and rounded once to the input's type. No
    copy of the whole dequantized weight is made: kernels dequantize tiles
    of it as the GEMM reads them. The gradient with respect to `input` is
    the same op with `transpose_rhs` flipped; the weight is frozen (its
    operands have no gradient). tg-quantize-frozen makes this op from
    `tg.matmul`s of frozen weights.

    ```mlir
    %y = tg.matmul_4bit %x, %codes, %absmax, %map, %nested_absmax,
        %nested_map, %offset {rows = 64 : i64, cols = 48 : i64}
        : (tensor<4x16x48xf32>, tensor<1536xui8>, tensor<48xui8>,
           tensor<16xf32>, tensor<1xf32>, tensor<256xf32>, tensor<f32>)
        -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_CodeTensor:$codes,
                       AnyTypeOf<[TG_CodeTensor, TG_F32Vector]>:$absmax,
                       TG_F32Vector:$quant_map,
                       Variadic<StaticShapeTensorOf<[F32]>>:$nested,
                       I64Attr:$rows, I64Attr:$cols,
                       DefaultValuedAttr<I64Attr, "64">:$block_size,
                       DefaultValuedAttr<BoolAttr, "true">:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $codes `,` $absmax `,` $quant_map (`,` $nested^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_ExpertLinearOp : TG_Op<"expert_linear", [TG_Differentiable]> {
  let summary = "each row times its expert's weight: a grouped GEMM";
  let description = [{
    `input` is `[M, K]`, rows sorted by expert as `tg.moe_route` leaves
    them; rows `offsets[e]` to `offsets[e + 1]` are multiplied by expert
    e's weight, `weights[e]`: `[K, N]`, or `[N, K]` used transposed with
    `transpose_weight` (a `torch.nn.Linear`'s layout). The result is
    `[M, N]`, accumulated in f32 and rounded once. One op for all the
    experts with no per-expert shapes in the IR: the split is read from
    `offsets` when the kernel runs (on the CPU, one GEMM per expert; on
    CUDA, one grouped launch). FLOPs are those of `M` rows whatever the
    split.

    Its gradient is `tg.expert_linear` of the output gradient with the
    transpose flipped (the input's) and `tg.expert_linear_weight_grad`
    (the weights').

    ```mlir
    %h = tg.expert_linear %xs, %offsets, %w0, %w1 {transpose_weight = true}
        : (tensor<128x64xf32>, tensor<3xi64>, tensor<256x64xf32>,
           tensor<256x64xf32>) -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_IndexTensor:$offsets,
                       Variadic<TG_FloatTensor>:$weights,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_weight);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $offsets `,` $weights attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MatmulAddOp : TG_Op<"matmul_add", [TG_InPlaceTied, TG_InferredType],
                           ["getMatmulFlops", "getKernelLaunches"]> {
  let summary = "a matrix product added to an accumulator in one GEMM";
  let description = [{
    `addend + lhs @ rhs`, with `lhs`, `rhs` and the transposes as in
    `tg.matmul` and `addend` of the product's type: one GEMM with beta = 1
    (the product accumulated in f32 onto the addend, rounded once). The
    result may be written over `addend` (never over `lhs` or `rhs`), so a
    sum of products (the chunks' weight gradients of tg-chunk-loss, a
    parameter used twice) needs no buffer for each product.

    tg-accumulate-products builds it from `tg.add` of a `tg.matmul` after
    the gradients are built; it has no gradient of its own.

    ```mlir
    %g = tg.matmul_add %dy, %x, %acc {transpose_lhs = true}
        : (tensor<512x50257xf32>, tensor<512x768xf32>, tensor<50257x768xf32>)
        -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       TG_FloatTensor:$addend,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $addend attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MatmulBiasGradOp : TG_Op<"matmul_bias_grad", [],
                               ["getMatmulFlops", "getKernelLaunches"]> {
  let summary = "a weight gradient's GEMM with its bias gradient";
  let description = [{
    `lhs` is `[M, K]` and `rhs` `[M, N]`, of one float type. `product` is
    `lhs^T @ rhs` (`[K, N]`, as `tg.matmul {transpose_lhs}`) and
    `bias_grad` the sum over the `M` rows of `rhs` (`[N]`; of `lhs` with
    `bias_of_lhs`, `[K]`), each accumulated in f32 and rounded once into
    the operands' type: the weight and bias gradients of a linear layer
    from its input and its output's gradient, read once.

    tg-fuse-bias-grads builds it from a `tg.matmul` and a `tg.sum_to` of
    one of its operands; the CUDA backend runs it as one cuBLASLt matmul
    with the bias-gradient epilogue (BGRADA or BGRADB).

    ```mlir
    %dw, %db = tg.matmul_bias_grad %x, %dy
        : (tensor<8192x3072xbf16>, tensor<8192x768xbf16>)
        -> (tensor<3072x768xbf16>, tensor<768xbf16>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$bias_of_lhs);
  let results = (outs TG_FloatTensor:$product, TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MatmulGeluGradOp : TG_Op<"matmul_gelu_grad", [],
                               ["getMatmulFlops", "getKernelLaunches"]> {
  let summary = "an input gradient's GEMM through GELU's gradient, with the "
                "bias gradient";
  let description = [{
    `grad` is `[B..., M, N]`, `weight` `[N, K]` (`[K, N]` with
    `transpose_rhs`), `preactivation` `[B..., M, K]`, of one float type.
    `result` is `(grad @ weight) * gelu'(preactivation)` with GELU's tanh
    approximation (`tg.gelu_grad`'s formula), and `bias_grad` (`[K]`) the
    sum of `result` over every dimension but the last. The product is
    accumulated in f32 and not rounded before GELU's gradient; `result`
    and `bias_grad` (summed from the unrounded values) are each rounded
    once into the operands' type.

    It is the gradient of `tg.linear {gelu}`'s pre-activation (and so of
    its bias) from the gradient of the layer after it. tg-fuse-bias-grads
    builds it from a `tg.matmul`, the `tg.gelu_grad` of its product and
    the `tg.sum_to` of that; the CUDA backend runs it as one cuBLASLt
    matmul with the DGELU_BGRAD epilogue, reading the pre-activation that
    the forward GEMM's GELU_AUX epilogue wrote.

    ```mlir
    %dpre, %db = tg.matmul_gelu_grad %dy, %w2, %pre {transpose_rhs = true}
        : (tensor<8x1024x768xbf16>, tensor<3072x768xbf16>,
           tensor<8x1024x3072xbf16>)
        -> (tensor<8x1024x3072xbf16>, tensor<3072xbf16>)
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$weight,
                       TG_FloatTensor:$preactivation,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result, TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $weight `,` $preactivation attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_OffloadOp : TG_Op<"offload", [TG_InPlaceTied, AllTypesMatch<["source", "destination", "result"]>],
                         ["getBytesRead"]> {
  let summary = "copies an activation into host memory for the backward pass";
  let description = [{
    The result holds `source`'s values in `destination`'s storage: a
    `tg.host` state tensor that tg-offload-activations made for it, which
    the result updates in place. One copy over the host link; `tg.reload`
    brings the values back to the device before the backward pass reads
    them.

    ```mlir
    %h1 = tg.offload %x, %h : (tensor<2x2048x4096xf32>, tensor<2x2048x4096xf32>) -> tensor<2x2048x4096xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$source, TG_AnyTensor:$destination);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $source `,` $destination attr-dict `:` functional-type(operands, results)
  }];
}

def TG_ReloadOp : TG_Op<"reload", [AllTypesMatch<["source", "result"]>]> {
  let summary = "copies an offloaded activation back to the device";
  let description = [{
    A copy of `source` (a `tg.offload` result, in host memory) into device
    memory of its own: the result is never written over the source.

    ```mlir
    %x2 = tg.reload %h1 : (tensor<2x2048x4096xf32>) -> tensor<2x2048x4096xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$source);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $source attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def TG_AddOp : TG_BinaryOp<"add", "lhs + rhs",
                           [TG_Differentiable]>;
def TG_SubOp : TG_BinaryOp<"sub", "lhs - rhs",
                           [TG_Differentiable]>;
def TG_MulOp : TG_BinaryOp<"mul", "lhs * rhs",
                           [TG_Differentiable]>;
def TG_DivOp : TG_BinaryOp<"div", "lhs / rhs",
                           [TG_Differentiable]>;
def TG_MaximumOp : TG_BinaryOp<"maximum", "max(lhs, rhs)",
                               [TG_Differentiable]>;
def TG_MinimumOp : TG_BinaryOp<"minimum", "min(lhs, rhs)",
                               [TG_Differentiable]>;

def TG_NegOp : TG_UnaryOp<"neg", "-x", 1, "-x">;
// exp, log and tanh: vectorized kernels written by hand.
def TG_ExpOp : TG_UnaryOp<"exp", "exp(x)">;
def TG_LogOp : TG_UnaryOp<"log", "log(x)">;
def TG_SqrtOp : TG_UnaryOp<"sqrt", "sqrt(x)", 1, "sqrtf(x)">;
// Not rsqrtf, which is not correctly rounded on the device.
def TG_RsqrtOp : TG_UnaryOp<"rsqrt", "1 / sqrt(x)", 1, "1.0f / sqrtf(x)">;
def TG_TanhOp : TG_UnaryOp<"tanh", "tanh(x)">;
// NaN stays NaN, as torch.relu.
defm TG_Relu : TG_Activation<"relu", "Relu", "max(x, 0)",
                             "x > 0 ? grad : 0", 1, 1,
                             "x < 0.0f ? 0.0f : x", "x > 0.0f ? g : 0.0f">;
// 1 / (1 + exp(-x)): negate, exp, add, divide.
defm TG_Sigmoid : TG_Activation<"sigmoid", "Sigmoid", "1 / (1 + exp(-x))",
    "grad * sigmoid(x) * (1 - sigmoid(x))", 4, 7, "logistic(x)",
    "g * logistic(x) * (1.0f - logistic(x))">;
// SiLU (swish, Llama's MLP): the sigmoid (4) and a product, as
// torch.nn.functional.silu computes it.
defm TG_Silu : TG_Activation<"silu", "Silu", "x * sigmoid(x)",
    "grad * sigmoid(x) * (1 + x * (1 - sigmoid(x)))", 5, 9,
    "x / (1.0f + expf(-x))",
    "g * logistic(x) * (1.0f + x * (1.0f - logistic(x)))">;
// Softplus (torch's, beta 1, threshold 20): exp, add, log; its gradient
// the sigmoid (4) and a product.
defm TG_Softplus : TG_Activation<"softplus", "Softplus",
    "x > 20 ? x : log(1 + exp(x))", "x > 20 ? grad : grad * sigmoid(x)", 3,
    5, "x > 20.0f ? x : log1pf(expf(x))", "x > 20.0f ? g : g * logistic(x)">;
// SwiGLU's gate (Llama's MLP, `silu(gate_proj(x)) * up_proj(x)`): one
// kernel where silu and mul are two, keeping no silu(gate) of its own.
def TG_SwigluOp : TG_Op<"swiglu", [SameOperandsAndResultType, Elementwise,
                                   TG_Differentiable, TG_InPlace]>,
                  TG_FlopsPerElement<6> {
  let summary = "silu(gate) * up, elementwise";
  let description = [{
    Computes `silu(gate) * up` for every element: SwiGLU, the gated unit of
    Llama's MLP (`down_proj(silu(gate_proj(x)) * up_proj(x))`), Mistral's,
    Qwen's and Mixtral's experts'. The operands and the result have one type
    and shape. Each element is computed as `tg.silu` and `tg.mul` compute
    it: silu in f32, rounded to the type, the product in f32 and rounded
    again (f16 and bf16 as torch's `F.silu(gate) * up`), so the value is
    theirs bit for bit. Its backward pass keeps `gate` and `up` where the
    two ops keep silu(gate) as well; `tg.swiglu_grad` is its VJP.

    ```mlir
    %h = tg.swiglu %gate, %up : tensor<2x2048x14336xbf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$gate, TG_FloatTensor:$up);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let extraClassDefinition = flopsDefinition;
}

def TG_GeluOp : TG_Op<"gelu", [SameOperandsAndResultType, Elementwise,
                                TG_Differentiable, TG_InPlace]> {
  let summary = "GELU, by default in its tanh approximation";
  let description = [{
    Computes `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` for
    every element (GPT-2's, torch's gelu(approximate='tanh'), Hugging Face's
    "gelu_new"), or with `exact` `0.5 * x * (1 + erf(x / sqrt(2)))` (torch's
    default gelu, Hugging Face's "gelu", BERT's). The result has the type of
    the operand; f16 and bf16 are computed in f32 and rounded once.
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "false">:$exact);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_WhereOp : TG_Op<"where", [TG_Differentiable]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    `result = condition ? lhs : rhs` elementwise, after broadcasting the three
    operands to the result shape with NumPy rules. `lhs`, `rhs` and the result
    share an element type.
  }];
  let arguments = (ins TG_BoolTensor:$condition, TG_FloatTensor:$lhs,
                       TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

def TG_SoftmaxOp : TG_Op<"softmax", [SameOperandsAndResultType,
                                     TG_Differentiable, TG_InPlace]> {
  let summary = "softmax over one axis";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))` along `axis` (negative
    values count from the end), computed in f32.
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Attr:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_LayerNormOp : TG_Op<"layer_norm", [TG_Differentiable, TG_InPlaceTied]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    For every row `x` along the last dimension (size D):
    `result = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`, with the
    biased variance, statistics in f32, as torch.nn.LayerNorm. `weight` and
    `bias` have shape `[D]`. The result has the input's type, or its shape
    in f16 or bf16 when the input is f32: the f32 result rounded once as it
    is stored (what tg-fold-casts makes of a narrowing `tg.cast` after it).

    `addend`, when present (the input's shape; its type, or a 16-bit float
    beside an f32 input or the reverse), is added to the input first, as
    `tg.add` adds them, and the op normalizes the sum and also returns it
    (`sum`, of the type `tg.add` gives it; `weight` and `bias` then have
    the sum's element type): the residual add before a pre-norm block's
    norm, in the norm's kernel (tg-fuse-residuals). `sum` may be written
    over the input or the addend. The op is differentiated before it has
    an addend.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$bias, Optional<TG_FloatTensor>:$addend,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs TG_FloatTensor:$result, Optional<TG_FloatTensor>:$sum);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`plus` $addend^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_RmsNormOp : TG_Op<"rms_norm", [TG_Differentiable, TG_InPlaceTied]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    For every row `x` along the last dimension (size D):
    `result = x / sqrt(mean(x^2) + epsilon) * weight`, the statistic in f32,
    as Hugging Face's LlamaRMSNorm (T5LayerNorm). `weight` has shape `[D]`.
    The result has the input's type, or its shape in f16 or bf16 when the
    input is f32 (rounded once as it is stored). `addend` and `sum` as
    `tg.layer_norm`'s.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$addend,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs TG_FloatTensor:$result, Optional<TG_FloatTensor>:$sum);
  let assemblyFormat = [{
    $input `,` $weight (`plus` $addend^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_RopeOp : TG_Op<"rope", [TG_Differentiable, TG_InPlace]> {
  let summary = "rotary position embedding of attention heads";
  let description = [{
    `input` is `[B..., T, D]` (heads `[B, H, T, D]`), D even. Position `t`
    of every row rotates the pairs `(x[i], x[i + D/2])` for `i < D/2` by
    the angle `t * inv_freq[i]`, computed in f32 as Hugging Face's rotary
    embedding computes it (`cos(emb) * x + sin(emb) * rotate_half(x)`):
    `result[i] = x[i] cos - x[i + D/2] sin`,
    `result[i + D/2] = x[i + D/2] cos + x[i] sin`.
    `inv_freq` (`[D/2]`, f32, a constant of the model) carries the model's
    frequencies, `rope_theta` and any `rope_scaling` already applied. With
    `inverse`, the rotation is by the negative angle: the transpose, and so
    the gradient. With `bshd`, `input` is `[B, T, H, D]` (heads where the
    projections put them, as `tg.attention`'s bshd layout reads them) and
    row `(b, t, h)` is at position `t`: the rope of the transposed heads,
    transposed back (tg-attention-layout sets it).

    `positions`, when present, is an integer tensor `[B, T]` (B the input's
    first dimension) giving each row its position instead: row `(b, ...,
    t)` is at `positions[b, t]`, so the positions of examples packed into
    one row restart at each example, as transformers' `position_ids` of a
    packed batch do. Positions are non-negative.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$inv_freq,
                       Optional<TG_IndexTensor>:$positions,
                       DefaultValuedAttr<BoolAttr, "false">:$inverse,
                       DefaultValuedAttr<BoolAttr, "false">:$bshd);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $inv_freq (`positions` $positions^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_EmbeddingOp : TG_Op<"embedding", [TG_Differentiable],
                            ["getBytesRead", "getKernelLaunches"]> {
  let summary = "row lookup in a table";
  let description = [{
    `table` has shape `[V, D]` and `indices` any shape `S`; the result has
    shape `[S..., D]` with `result[s] = table[indices[s]]`. An index outside
    `[0, V)` is a runtime error. Row `padding_idx`, when given, gets no
    gradient, as torch.nn.Embedding's `padding_idx` row. The result has the
    table's element type, or f32 from an f16 or bf16 table (each row
    widened as it is read, exactly: how a frozen table stored in 16 bits
    is read without an f32 copy of it, tg-freeze's `frozen-dtype`).
  }];
  let arguments = (ins TG_FloatTensor:$table, TG_IndexTensor:$indices,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_GatherOp : TG_Op<"gather", [TG_Differentiable]> {
  let summary = "picks elements along one axis by index (torch.gather)";
  let description = [{
    `result[i] = input[i with i[axis] replaced by index[i]]`, where `index`
    is broadcast to the result's shape with NumPy rules; the result has the
    operand's shape except along `axis` (negative values count from the
    end). An index outside `[0, input.shape[axis])` is a runtime error.
    DeBERTa's disentangled attention gathers its content-to-position and
    position-to-content scores by relative position: one `[T, T]` table of
    indices for every batch and head.

    Its gradient is `tg.gather_grad`.

    ```mlir
    %c = tg.gather %scores, %positions {axis = 2 : i64}
        : (tensor<16x32x64xf32>, tensor<32x32xi64>) -> tensor<16x32x32xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, TG_IndexTensor:$index,
                       I64Attr:$axis);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $input `,` $index attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_TopKOp : TG_Op<"top_k", []> {
  let summary = "the indices of the k largest elements along the last axis";
  let description = [{
    For each row of the last axis, the indices of its `k` largest elements,
    largest first; equal elements in index order, NaN above every number
    (as torch.topk sorts them). The values are a `tg.gather` by these
    indices, which carries their gradient; the indices have none. A
    mixture-of-experts router picks each token's experts with it.

    ```mlir
    %experts = tg.top_k %probs {k = 2 : i64}
        : (tensor<64x8xf32>) -> tensor<64x2xi64>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Attr:$k);
  let results = (outs TG_IndexTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MoeRouteOp : TG_Op<"moe_route", []> {
  let summary = "sorts each token's expert choices by expert (dropless)";
  let description = [{
    `choices` is `[N, k]`: each of N tokens' k experts, in `[0, E)`. The
    N * k choices are sorted by expert, stably (token order within an
    expert), into rows: `rows[r]` is the token of sorted row r (shaped
    `[N * k, 1]`, the index a row `tg.gather` takes), `positions[n, j]` the
    row choice `(n, j)` went to, and rows `offsets[e]` to `offsets[e + 1]`
    belong to expert e (`offsets[0] = 0`, `offsets[E] = N * k`). Every
    shape is static; only the split between the experts depends on the
    router, and the expert ops (`tg.expert_linear`) read it from `offsets`
    on the device. No token is dropped. An expert outside `[0, E)` is a
    runtime error.

    ```mlir
    %rows, %positions, %offsets = tg.moe_route %experts
        : (tensor<64x2xi64>) -> (tensor<128x1xi64>, tensor<64x2xi64>, tensor<9xi64>)
    ```
  }];
  let arguments = (ins TG_IndexTensor:$choices);
  let results = (outs TG_IndexTensor:$rows, TG_IndexTensor:$positions,
                      TG_IndexTensor:$offsets);
  let assemblyFormat = [{
    $choices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AttentionOp : TG_Op<"attention", [TG_Differentiable],
                          ["getBytesRead", "getMatmulFlops", "getMatmulType",
                           "getScratchBytes", "getKernelLaunches"]> {
  let summary = "scaled dot-product attention, optionally causal";
  let description = [{
    `query` is `[B..., Tq, D]`, `key` is `[B..., Tk, D]`, `value` is
    `[B..., Tk, Dv]`; the result is `[B..., Tq, Dv]`:
    `softmax(query @ key^T * scale + mask) @ value`, where `scale` defaults to
    `1 / sqrt(D)` and, with `causal`, `mask[i][j] = -inf` for `j > i`
    (requires `Tq == Tk`), as torch's scaled_dot_product_attention with
    `is_causal=True`. Softmax statistics are in f32. A positive `window`
    (causal only) also hides keys `window` or more positions back: row `i`
    sees keys `i - window < j <= i`, Mistral's sliding-window attention as
    Hugging Face masks it. A positive `softcap` caps the scaled scores
    before the mask: `s = softcap * tanh(s / softcap)` (Gemma 2's
    `attn_logit_softcapping`).

    `key_mask`, when present, is an integer tensor `[P..., Tk]` whose leading
    dimensions `P...` are a prefix of the batch dimensions (a `[B, Tk]`
    padding mask for `[B, H, T, D]` heads): key `j` of a row is visible only
    where the mask is nonzero (`mask[..., j] = -inf` otherwise), as the
    attention mask of Hugging Face's models. A row that sees no key at all
    (a padded query of an all-padding example) yields zeros, and passes no
    gradient.

    With `segments`, `key_mask` holds segment ids instead, `[P..., T]`
    over the query and key positions alike (`Tq == Tk`): query `i` sees key
    `j` only where `mask[..., j] != 0` and `mask[..., j] == mask[..., i]`,
    so the several examples packed into one row attend only within
    themselves (block-diagonal, and causal inside each block with
    `causal`), as FlashAttention's variable-length kernel keeps the packed
    sequences of transformers' `DataCollatorWithFlattening` apart. Id 0
    is padding. The ids of a row do not descend, but for trailing zeros
    (the kernels skip tiles of keys that lie wholly in other segments).

    With `bshd`, the operands and the result are rank 4 and stored
    `[B, T, H, D]` (FlashAttention's layout: each position's heads side by
    side, as the projection before the attention writes them and the one
    after it reads them) instead of `[B, H, T, D]`; the computation is the
    same, and every rule above reads the shapes with T and H swapped.
    tg-attention-layout sets it where transposes only move the heads
    between the two layouts.

    With `packed` (and `bshd`), `query`, `key` and `value` are one value,
    `[B, T, Hq + 2 Hkv, D]`: each position's Hq query heads, then its Hkv
    key heads, then its Hkv value heads, side by side as a fused QKV
    projection writes them; Hq is the result's heads, and every rule above
    reads the three tensors those heads form (tg-pack-qkv sets it where a
    `tg.split` only took them apart).

    `lse`, when present (f32, the query's shape without its last
    dimension), receives each query row's log-sum-exp of its scaled,
    masked scores (-inf for a row that sees no key), which
    `tg.attention_grad` may take instead of recomputing it
    (tg-keep-attention-lse adds it). Present only after differentiation.
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value,
                       Optional<TG_IndexTensor>:$key_mask,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$window,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$bshd,
                       DefaultValuedAttr<BoolAttr, "false">:$packed,
                       OptionalAttr<F64Attr>:$softcap,
                       DefaultValuedAttr<BoolAttr, "false">:$segments);
  let results = (outs TG_FloatTensor:$result, Optional<TG_FloatTensor>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $key_mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to the scores: the attribute, or 1/sqrt(D).
    double getScaleOrDefault();
    /// The shapes of the query, key and value as the op reads them: the
    /// operands', or with `packed` the tensors of their heads.
    ::llvm::SmallVector<::llvm::SmallVector<int64_t>, 3> getHeadShapes();
  }];
}

def TG_CrossEntropyOp : TG_Op<"cross_entropy",
                              [TG_Differentiable, TG_InPlaceTied],
                              ["getKernelLaunches"]> {
  let summary = "mean softmax cross-entropy with an ignored label";
  let description = [{
    `logits` is `[N..., C]` and `targets` is `[N...]`. For every position
    whose target is not `ignore_index`, the loss is
    `logsumexp(logits[n]) - logits[n][targets[n]]`; the result is the mean
    over those positions (0 when there are none), computed in f32, as
    torch.nn.functional.cross_entropy with `reduction='mean'`. A target
    outside `[0, C)` that is not `ignore_index` is a runtime error. A
    positive `softcap` caps the logits first, `softcap * tanh(logits /
    softcap)` (Gemma 2's `final_logit_softcapping`), without their capped
    copy in memory.

    With `grad` (the scalar cotangent of the loss), the op also returns
    `logits_grad`, what `tg.cross_entropy_grad` of the same operands and
    `grad` returns, computed in the same pass over the logits (tg-fuse-loss);
    it may be written over the logits. The op is differentiated before it
    has `grad`.
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IndexTensor:$targets,
                       Optional<TG_FloatScalar>:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_FloatScalar:$result,
                      Optional<TG_FloatTensor>:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $targets (`grad` $grad^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_TargetCountOp : TG_Op<"target_count"> {
  let summary = "the number of targets that are not ignored";
  let description = [{
    The number of elements of `targets` that are not `ignore_index`, as a
    float scalar: the `n` that tg.cross_entropy divides by. Gradient
    accumulation weighs each micro-batch's mean loss by it, so that the
    mean over all micro-batches counts every real target once.
  }];
  let arguments = (ins TG_IndexTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs TG_FloatScalar:$result);
  let assemblyFormat = [{
    $targets attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Shape ops, casts and constants
//===----------------------------------------------------------------------===//

def TG_ReshapeOp : TG_Op<"reshape", [TG_Differentiable],
                         ["getKernelLaunches"]> {
  let summary = "reinterprets the elements in a new shape";
  let description = [{
    Same elements in row-major order, new shape; element counts and element
    types agree.
  }];
  let arguments = (ins TG_MovableTensor:$input);
  let results = (outs TG_MovableTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_TransposeOp : TG_Op<"transpose", [TG_Differentiable]> {
  let summary = "permutes dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]` and
    `result[i_0, ..., i_n] = input[j]` where `j[permutation[k]] = i_k`.
  }];
  let arguments = (ins TG_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SliceOp : TG_Op<"slice", [TG_Differentiable], ["getBytesRead"]> {
  let summary = "extracts a static box";
  let description = [{
    `result[i] = input[offsets + i]`, unit strides; the result type gives the
    sizes and the box must lie inside the operand.
  }];
  let arguments = (ins TG_MovableTensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs TG_MovableTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_SplitOp : TG_Op<"split", [TG_Differentiable], ["getKernelLaunches"]> {
  let summary = "splits along an axis into consecutive pieces";
  let description = [{
    The results are consecutive pieces of `input` along `axis`; their sizes
    along `axis` (given by the result types) add up to the operand's, and all
    other dimensions are equal.
  }];
  let arguments = (ins TG_MovableTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<TG_MovableTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def TG_ConcatOp : TG_Op<"concat", [TG_Differentiable],
                        ["getKernelLaunches"]> {
  let summary = "concatenates along an axis";
  let description = [{
    The inverse of `tg.split`: operands of equal rank and element type, equal
    in every dimension but `axis`, placed one after another.
  }];
  let arguments = (ins Variadic<TG_MovableTensor>:$inputs, I64Attr:$axis);
  let results = (outs TG_MovableTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def TG_ReduceSumOp : TG_ReduceOp<"reduce_sum", "sum">;
def TG_ReduceMeanOp : TG_ReduceOp<"reduce_mean", "arithmetic mean">;
def TG_ReduceMaxOp : TG_ReduceOp<"reduce_max", "maximum">;

def TG_CumsumOp : TG_Op<"cumsum", [SameOperandsAndResultType,
                                   TG_Differentiable]> {
  let summary = "inclusive prefix sum along one axis";
  let description = [{
    `result[..., i, ...] = sum(input[..., j, ...] for j <= i)` along `axis`
    (negative values count from the end); with `reverse`, the sum is over
    `j >= i`. Float sums are accumulated in f64 in order and each rounded
    once into the element type (as torch.cumsum accumulates on the CPU);
    integer sums wrap in the element type. RoBERTa's position ids are a
    cumsum of the non-padding mask.

    The gradient of a float cumsum is the reversed cumsum of the
    cotangent; an integer cumsum has none.

    ```mlir
    %p = tg.cumsum %mask {axis = 1 : i64} : tensor<4x32xi32>
    ```
  }];
  let arguments = (ins TG_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs TG_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_BroadcastToOp : TG_Op<"broadcast_to", [TG_Differentiable]> {
  let summary = "broadcasts to a larger shape";
  let description = [{
    Expands the operand to the result shape with NumPy rules (trailing
    alignment; size-1 and missing leading dimensions repeat). Element types
    agree.
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_CastOp : TG_Op<"cast", [TG_Differentiable]> {
  let summary = "converts the element type";
  let description = [{
    Converts every element to the result's element type; same shape. Float to
    float rounds to nearest even; float to integer truncates toward zero;
    integer or float to i1 is `x != 0`.

    Folds away a cast to the operand's own type, and a widening round trip
    `cast(cast(x : t -> wider) : wider -> t)` (f16/bf16 -> f32 -> back is
    exact), which is how precision passes drop redundant cast chains.
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_MultiCastOp : TG_Op<"multi_cast", [], ["getKernelLaunches"]> {
  let summary = "tg.cast of many float tensors, a few kernel launches";
  let description = [{
    Result i is operand i converted to result i's float element type (the
    same shape), exactly as `tg.cast` converts it: to nearest even. The
    CUDA backend converts up to 32 tensors per kernel launch, as it updates
    them (`tg.multi_adamw_update`); `tg-group-updates` makes this op from
    the casts of the parameters a mixed-precision step reads in 16 bits.

    ```mlir
    %r:2 = tg.multi_cast %w, %b
        : (tensor<64x192xf32>, tensor<192xf32>)
        -> (tensor<64x192xbf16>, tensor<192xbf16>)
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$inputs);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_ConstantOp : TG_Op<"constant", [ConstantLike,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a tensor constant";
  let description = [{
    A tensor given by an elements attribute of exactly the result type.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_FillOp : TG_Op<"fill"> {
  let summary = "a tensor with every element equal";
  let description = [{
    Every element is `value`, converted to the element type as `tg.cast`
    does. Unlike `tg.constant` it costs no storage in the executable.
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

def TG_SumToOp : TG_Op<"sum_to"> {
  let summary = "sums a broadcast gradient back to the original shape";
  let description = [{
    The adjoint of `tg.broadcast_to`: the result shape must broadcast to the
    operand shape, and each result element is the sum of the operand elements
    that broadcasting would have copied it to. Accumulation is in f32.
  }];
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def TG_GeluGradOp : TG_Op<"gelu_grad", [SameOperandsAndResultType,
                                    TG_InPlace]> {
  let summary = "gradient of gelu";
  let description = [{
    With `u = sqrt(2 / pi) * (x + 0.044715 * x^3)` and `x` gelu's operand:
    `result = grad * (0.5 * (1 + tanh(u)) + 0.5 * x * (1 - tanh(u)^2) *
    sqrt(2 / pi) * (1 + 3 * 0.044715 * x^2))`; with `exact` (the erf form),
    `result = grad * (0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x^2 / 2) /
    sqrt(2 pi))`.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$grad,
                       DefaultValuedAttr<BoolAttr, "false">:$exact);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}

def TG_SwigluGradOp : TG_Op<"swiglu_grad", [AllTypesMatch<["gate", "up",
                                          "grad", "gate_grad", "up_grad"]>,
                                          TG_InPlaceTied]> {
  let summary = "gradient of swiglu with respect to gate and up";
  let description = [{
    With `s = silu(gate)` rounded to the type: `up_grad = grad * s` and
    `gate_grad = silu_grad(gate, grad * up)`, `grad * up` rounded to the type
    first; each result rounded once. These are the values that the VJPs of
    `tg.mul` and `tg.silu` give, in one kernel that reads the three operands
    and writes `gate_grad` over `gate` and `up_grad` over `up` where the
    planner lets it.

    ```mlir
    %dg, %du = tg.swiglu_grad %gate, %up, %dh : tensor<2x2048x14336xbf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$gate, TG_FloatTensor:$up,
                       TG_FloatTensor:$grad);
  let results = (outs TG_FloatTensor:$gate_grad, TG_FloatTensor:$up_grad);
  let assemblyFormat = [{
    $gate `,` $up `,` $grad attr-dict `:` type($grad)
  }];
}

def TG_TanhGradOp : TG_Op<"tanh_grad", [SameOperandsAndResultType,
                                    TG_InPlace]> {
  let summary = "gradient of tanh from its output";
  let description = [{
    `result = grad * (1 - output^2)`, where `output` is tanh's result.
  }];
  let arguments = (ins TG_FloatTensor:$output, TG_FloatTensor:$grad);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
}

def TG_SoftmaxGradOp : TG_Op<"softmax_grad", [SameOperandsAndResultType,
                                    TG_InPlace]> {
  let summary = "gradient of softmax from its output";
  let description = [{
    `result = output * (grad - sum(grad * output, axis))`, where `output` is
    softmax's result over the same `axis`; the sum is in f32.
  }];
  let arguments = (ins TG_FloatTensor:$output, TG_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_LayerNormGradOp : TG_Op<"layer_norm_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of layer_norm with respect to input, weight, bias";
  let description = [{
    Recomputes the row statistics of `input` (mean, `rstd = 1 / sqrt(var +
    epsilon)`) and, with `xhat = (x - mean) * rstd` and `g = grad * weight`:
    `input_grad = rstd * (g - mean(g) - xhat * mean(g * xhat))` per row,
    `weight_grad = sum over rows of grad * xhat`,
    `bias_grad = sum over rows of grad`, all accumulated in f32. `grad` has
    the input's type, or its shape in f16 or bf16 when the input is f32
    (widened exactly as it is read).
    `output_mask` (as PyTorch's native_layer_norm_backward's), when present,
    says which of the three results are computed; the others are neither
    computed nor given memory, and must have no uses.
    `addend`, when present (of the input's type and shape), is added to
    `input_grad`: the gradient a residual connection brings to the norm's
    input, so `input_grad` is the input's whole gradient. The sum is the
    one `tg.add` computes of the rounded `input_grad` and `addend`
    (tg-fuse-residuals folds that add into the op).
    `rounded_input_grad`, when present, is `input_grad` (f32, computed)
    also stored in f16 or bf16, rounded once as a `tg.cast` of it would
    be (what tg-fold-casts makes of that cast): the 16-bit copy the
    GEMMs of a mixed-precision step read.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$grad,
                       Optional<TG_FloatTensor>:$addend,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       OptionalAttr<DenseBoolArrayAttr>:$output_mask);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      TG_FloatTensor:$bias_grad,
                      Optional<TG_FloatTensor>:$rounded_input_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad (`plus` $addend^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_RmsNormGradOp : TG_Op<"rms_norm_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of rms_norm with respect to input and weight";
  let description = [{
    Recomputes `rstd = 1 / sqrt(mean(x^2) + epsilon)` per row and, with
    `xhat = x * rstd` and `g = grad * weight`:
    `input_grad = rstd * (g - xhat * mean(g * xhat))` per row,
    `weight_grad = sum over rows of grad * xhat`, accumulated in f32.
    `grad` has the input's type, or its shape in f16 or bf16 when the input
    is f32 (widened exactly as it is read).
    `output_mask`, when present, says which of the two results are
    computed; the other is neither computed nor given memory. `addend`,
    when present, is added to `input_grad`, and `rounded_input_grad`
    stores a 16-bit copy of it, as `tg.layer_norm_grad`'s.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       TG_FloatTensor:$grad,
                       Optional<TG_FloatTensor>:$addend,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon,
                       OptionalAttr<DenseBoolArrayAttr>:$output_mask);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      Optional<TG_FloatTensor>:$rounded_input_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad (`plus` $addend^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_EmbeddingGradOp : TG_Op<"embedding_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of an embedding lookup with respect to the table";
  let description = [{
    The result `[V, D]` starts at zero and `result[indices[s]] += grad[s]`
    for every position `s` (a scatter-add, accumulated in f32); `grad` has
    shape `[S..., D]` where `S` is the shape of `indices`. Positions whose
    index is `padding_idx`, when given, add nothing (that row stays zero).

    With `addend` (the result's shape, in its type or, for an f32 result,
    f16 or bf16) the result is `addend` plus that sum: the gradient of a
    table the model also reads elsewhere (a tied embedding, whose other
    use, the classifier, gives the addend). tg-accumulate-products builds
    it from the `tg.add` of the two; the CPU adds the addend last, as that
    add did (the same bits), the CUDA backend starts its f32 accumulator
    from it.
  }];
  let arguments = (ins TG_IndexTensor:$indices, TG_FloatTensor:$grad,
                       Optional<TG_FloatTensor>:$addend,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $grad (`addend` $addend^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AttentionGradOp : TG_Op<"attention_grad", [AttrSizedOperandSegments],
                              ["getBytesRead", "getBytesWritten",
                               "getMatmulFlops", "getMatmulType",
                               "getScratchBytes", "getKernelLaunches"]> {
  let summary = "gradient of attention with respect to query, key, value";
  let description = [{
    Given the operands of `tg.attention` with the same `causal`, `window`,
    `scale`, `softcap`, `bshd` layout and `key_mask` (and `segments`),
    its result `output` and the cotangent `grad` of that result, computes
    (recomputing the probabilities `P`):
    `value_grad = P^T @ grad`, `dP = grad @ value^T`,
    `dS = P * (dP - rowsum(grad * output))` (times `1 - tanh(s /
    softcap)^2` with a `softcap`, `s` the scaled score),
    `query_grad = dS @ key * scale`, `key_grad = dS^T @ query * scale`.
    `output_mask`, when present, says which of the three results are
    computed (a frozen projection upstream needs no query or key gradient);
    the others are neither computed nor given memory, and must have no uses.
    `lse`, when present, is the row log-sum-exp that `tg.attention`
    computed for `output`: the kernels that need it read it instead of
    recomputing it, with the same bits.

    With `packed`, the operands are one value as `tg.attention`'s are (Hq
    from `output`), and `query_grad` is that value's gradient, the three
    gradients' heads side by side as the operand holds them; `key_grad`
    and `value_grad` then have the key and value heads' shapes and are not
    computed (`output_mask` is `[true, false, false]`).
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value, TG_FloatTensor:$output,
                       TG_FloatTensor:$grad,
                       Optional<TG_IndexTensor>:$key_mask,
                       Optional<TG_FloatTensor>:$lse,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$window,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<DenseBoolArrayAttr>:$output_mask,
                       DefaultValuedAttr<BoolAttr, "false">:$bshd,
                       DefaultValuedAttr<BoolAttr, "false">:$packed,
                       OptionalAttr<F64Attr>:$softcap,
                       DefaultValuedAttr<BoolAttr, "false">:$segments);
  let results = (outs TG_FloatTensor:$query_grad, TG_FloatTensor:$key_grad,
                      TG_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $grad (`mask` $key_mask^)?
    (`lse` $lse^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// As tg.attention's.
    ::llvm::SmallVector<::llvm::SmallVector<int64_t>, 3> getHeadShapes();
  }];
}

def TG_CrossEntropyGradOp : TG_Op<"cross_entropy_grad", [TG_InPlace],
                                  ["getKernelLaunches"]> {
  let summary = "gradient of cross_entropy with respect to the logits";
  let description = [{
    With `n` the number of positions whose target is not `ignore_index`:
    `result[p] = grad / n * (softmax(logits[p]) - onehot(targets[p]))` for
    those positions and 0 for ignored ones (all zero when `n == 0`). `grad`
    is the scalar cotangent of the loss. With a `softcap`, the softmax is of
    the capped logits and each element is multiplied by the cap's slope,
    `1 - tanh(logits / softcap)^2`.
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IndexTensor:$targets,
                       TG_FloatScalar:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_ReduceMaxGradOp : TG_Op<"reduce_max_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of reduce_max";
  let description = [{
    Given reduce_max's operand `input`, its result `output` and the cotangent
    `grad` of that result (same `axes` and `keep_dims`), the gradient flows
    to the elements equal to the maximum, split evenly among ties, as
    torch.amax's backward does.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$output,
                       TG_FloatTensor:$grad, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $output `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_GatherGradOp : TG_Op<"gather_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of gather: adds each element where it was picked";
  let description = [{
    The result (the shape of the gathered operand) is zero except that
    every `grad[i]` is added at `i with i[axis] replaced by index[i]` (the
    index broadcast to `grad`'s shape): where several elements picked the
    same one, their gradients sum. Accumulated in f32 (f64 on the CPU) and
    rounded once into the result.
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IndexTensor:$index,
                       I64Attr:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $index attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_ExpertLinearWeightGradOp : TG_Op<"expert_linear_weight_grad", []> {
  let summary = "per-expert lhs^T rhs over each expert's rows";
  let description = [{
    `lhs` `[M, P]` and `rhs` `[M, Q]` hold rows sorted by expert
    (`offsets` `[E + 1]` as `tg.moe_route` makes it); result e is
    `lhs[rows of e]^T rhs[rows of e]`, `[P, Q]`, zero for an expert no row
    went to. The weight gradient of `tg.expert_linear`, accumulated in f32
    in row order and rounded once.
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       TG_IndexTensor:$offsets);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $offsets attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_SliceGradOp : TG_Op<"slice_grad", [], ["getKernelLaunches"]> {
  let summary = "gradient of slice: places a box in a zero tensor";
  let description = [{
    The result (the shape of the sliced operand) is zero except
    `result[offsets + i] = grad[i]`.
  }];
  let arguments = (ins TG_FloatTensor:$grad, DenseI64ArrayAttr:$offsets);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def TG_SGDUpdateOp : TG_Op<"sgd_update", [AttrSizedOperandSegments,
                                             TG_InPlaceTied,
                                             TG_OptimizerUpdate]> {
  let summary = "one step of SGD with momentum (torch.optim.SGD)";
  let description = [{
    With `g = grad + weight_decay * param`, and `step` the 1-based number of
    this update:
    - without momentum (`momentum == 0`, no buffer operand or result):
      `new_param = param - lr * g`;
    - with momentum: `buf = g` when `step == 1`, otherwise
      `buf = momentum * momentum_buffer + (1 - dampening) * g`;
      `d = nesterov ? g + momentum * buf : buf`;
      `new_param = param - lr * d`, `new_momentum_buffer = buf`.
    Math in f32. The results are meant to be written in place of `param` and
    `momentum_buffer`. With `apply` (an i1 scalar) false, nothing changes:
    the results equal `param` and `momentum_buffer` (a step skipped by loss
    scaling).
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_FloatTensor>:$momentum_buffer,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov);
  let results = (outs TG_FloatTensor:$new_param,
                      Optional<TG_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr `,` $step (`,` $momentum_buffer^)?
    (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AdamWUpdateOp : TG_Op<"adamw_update", [AttrSizedOperandSegments,
                                                TG_InPlaceTied,
                                                TG_OptimizerUpdate]> {
  let summary = "one step of AdamW (torch.optim.AdamW)";
  let description = [{
    With `t = step` the 1-based number of this update, math in f32:
    ```
    param' = param * (1 - lr * weight_decay)
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad^2
    bias_correction1 = 1 - beta1^t
    bias_correction2 = 1 - beta2^t
    denom = sqrt(v) / sqrt(bias_correction2) + eps
    new_param = param' - (lr / bias_correction1) * m / denom
    ```
    `new_exp_avg = m`, `new_exp_avg_sq = v`. This is torch.optim.AdamW with
    `amsgrad=False, maximize=False` (decoupled weight decay, bias correction
    applied as torch does). The results are meant to be written in place of
    `param`, `exp_avg` and `exp_avg_sq`. With `apply` (an i1 scalar) false,
    nothing changes: the results equal `param`, `exp_avg` and `exp_avg_sq`
    (a step skipped by loss scaling).

    With a non-zero `rounding_seed` (the parameter is bf16: master weights
    without an f32 copy), `new_param` is rounded to bf16 stochastically,
    up with probability equal to the distance to the value below in units
    of the gap, so that updates far smaller than a bf16 step still move the
    weight on average (as torchao's bf16 stochastic-rounding AdamW): the
    low 16 bits of the f32 result plus 16 random bits, truncated. The bits
    are a hash of the seed, the step number and the element's index, so a
    resumed run rounds as the uninterrupted one did. With `part` (an i64
    scalar, `p`), the operands are part `p` of a whole tensor flattened
    and split into equal parts of their element count `n` (a ZeRO rank's
    share): element `i` hashes its index in the whole, `p * n + i`, so
    the ranks round as one process does.
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_FloatTensor:$exp_avg, TG_FloatTensor:$exp_avg_sq,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_I64Scalar>:$part,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<I64Attr, "0">:$rounding_seed);
  let results = (outs TG_FloatTensor:$new_param, TG_FloatTensor:$new_exp_avg,
                      TG_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    (`part` $part^)? (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_MultiAdamWUpdateOp : TG_Op<"multi_adamw_update",
                                  [AttrSizedOperandSegments, TG_InPlaceTied],
                                  ["getKernelLaunches"]> {
  let summary = "tg.adamw_update of many parameters, a few kernel launches";
  let description = [{
    N AdamW steps that share the learning rate, the step, the `apply`
    predicate and the hyper-parameters, each computed exactly as
    `tg.adamw_update` computes it: the i-th of `params`, `grads`,
    `exp_avgs` and `exp_avg_sqs` belong together (the same shape; the
    gradient in any float type). The results are the N new parameters,
    then the N new first moments, then the N new second moments, meant to
    be written in place of their operands. The CUDA backend updates up to 32 tensors per kernel launch, as PyTorch's
    multi-tensor (`foreach`) AdamW does; `tg-group-updates` makes this op
    from adjacent updates.

    ```mlir
    %r:6 = tg.multi_adamw_update (%w, %b), (%gw, %gb), (%mw, %mb), (%vw, %vb),
        %lr, %step : (...) -> (...)
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$params,
                       Variadic<TG_FloatTensor>:$grads,
                       Variadic<TG_FloatTensor>:$exp_avgs,
                       Variadic<TG_FloatTensor>:$exp_avg_sqs,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = [{
    `(` $params `)` `,` `(` $grads `)` `,` `(` $exp_avgs `)` `,`
    `(` $exp_avg_sqs `)` `,` $lr `,` $step (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AdafactorUpdateOp : TG_Op<"adafactor_update", [AttrSizedOperandSegments,
                                                      TG_InPlaceTied,
                                                      TG_UnshardableUpdate],
                                 ["getKernelLaunches"]> {
  let summary = "one step of Adafactor (Hugging Face's transformers.Adafactor)";
  let description = [{
    Adafactor (Shazeer and Stern, 2018) without a first moment, as Hugging
    Face's implementation computes it, math in f32. With `t = step`:
    ```
    lr_t = relative_step ? min(warmup_init ? 1e-6 t : 1e-2, 1 / sqrt(t)) : lr
    if scale_parameter: lr_t *= max(eps2, rms(param))
    beta2t = 1 - t^decay_rate
    u = grad^2 + eps1
    ```
    For a parameter of rank >= 2 the second moment is factored over its
    last two dimensions [n, m] (`state` = row [.., n] and col [.., m]):
    `row = beta2t row + (1 - beta2t) mean_m(u)`, `col = beta2t col +
    (1 - beta2t) mean_n(u)`, `update = grad * rsqrt(row / mean_n(row)) *
    rsqrt(col)`; otherwise `state` is the full `v = beta2t v + (1 -
    beta2t) u` and `update = grad * rsqrt(v)`. Then `update /= max(1,
    rms(update) / clip_threshold)`, `param -= weight_decay lr_t param`
    (when non-zero), `param -= lr_t update`. `rms(x) = sqrt(mean(x^2))`.
    The state for an [n, m] matrix is n + m values. Results are meant to
    be written in place of `param` and the state; with `apply` false
    nothing changes.
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       Variadic<TG_FloatTensor>:$state,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "-0.8">:$decay_rate,
                       DefaultValuedAttr<F64Attr, "1.0">:$clip_threshold,
                       DefaultValuedAttr<F64Attr, "1.0e-30">:$eps1,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$eps2,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "true">:$relative_step,
                       DefaultValuedAttr<BoolAttr, "true">:$scale_parameter,
                       DefaultValuedAttr<BoolAttr, "false">:$warmup_init);
  let results = (outs TG_FloatTensor:$new_param,
                      Variadic<TG_FloatTensor>:$new_state);
  let assemblyFormat = [{
    $param `,` $grad `,` `[` $state `]` `,` $lr `,` $step
    (`if` $apply^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AdamW8bitUpdateOp : TG_Op<"adamw_8bit_update", [AttrSizedOperandSegments,
                                                         TG_InPlaceTied,
                                                         TG_BlockwiseUpdate]> {
  let summary = "one step of AdamW with blockwise 8-bit moments";
  let description = [{
    `tg.adamw_update` (the same math, in f32, in torch.optim.AdamW's order;
    bitsandbytes' CUDA kernel applies the weight decay after the step
    instead, a difference of order lr^2 * weight_decay) on moments stored
    as bitsandbytes stores them: each moment is a tensor
    of ui8 codes of the parameter's shape and an f32 absmax per block of
    `block_size` consecutive elements (row-major; the last block may be
    short). Code `q` of block `b` stands for `map[q] * absmax[b]`, with
    `exp_avg` on `map_signed` and `exp_avg_sq` on `map_unsigned` (sorted,
    256 entries: bitsandbytes' dynamic tree maps).

    Block by block: dequantize both moments, update them and the parameter
    as AdamW does, take each moment's new absmax (the largest magnitude in
    the block), and requantize each updated value `x` to the code of the
    nearest map entry to `x / absmax` (`x * (1 / absmax)`; the count of
    midpoints `(map[i] + map[i+1]) / 2` below it, so a tie goes to the
    lower code); for `exp_avg`, a negative value that lands on a
    non-negative code moves one code down, as bitsandbytes keeps the sign.
    A block whose absmax is 0 stores the code of 0. No f32 copy of a whole
    moment exists. Results are meant to be written in place of the
    parameter and the four state operands; with `apply` false nothing
    changes. A non-zero `rounding_seed` rounds a bf16 parameter
    stochastically, as `tg.adamw_update` does (`part` too).
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_CodeTensor:$exp_avg, TG_F32Vector:$exp_avg_absmax,
                       TG_CodeTensor:$exp_avg_sq,
                       TG_F32Vector:$exp_avg_sq_absmax,
                       TG_F32Vector:$map_signed, TG_F32Vector:$map_unsigned,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_I64Scalar>:$part,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<I64Attr, "256">:$block_size,
                       DefaultValuedAttr<I64Attr, "0">:$rounding_seed);
  let results = (outs TG_FloatTensor:$new_param,
                      TG_CodeTensor:$new_exp_avg,
                      TG_F32Vector:$new_exp_avg_absmax,
                      TG_CodeTensor:$new_exp_avg_sq,
                      TG_F32Vector:$new_exp_avg_sq_absmax);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_absmax `,` $exp_avg_sq `,`
    $exp_avg_sq_absmax `,` $map_signed `,` $map_unsigned `,` $lr `,` $step
    (`part` $part^)? (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AdamW4bitUpdateOp : TG_Op<"adamw_4bit_update", [AttrSizedOperandSegments,
                                                         TG_InPlaceTied,
                                                         TG_BlockwiseUpdate]> {
  let summary = "one step of AdamW with blockwise 4-bit moments";
  let description = [{
    `tg.adamw_update`'s arithmetic (in f32, torch.optim.AdamW's order) on
    moments stored in 4 bits as Li et al. ("Memory Efficient Optimizers
    with 4-bit States", NeurIPS 2023) and torchao's AdamW4bit store them:
    each moment is a 1-D ui8 tensor of `ceil(n / 2)` bytes packing two
    4-bit codes (element `2k` in the high nibble of byte `k`, `2k + 1` in
    the low one, as torchao packs them; the low nibble after an odd last
    element is 0) and an
    f32 scale per block of `block_size` consecutive elements (row-major,
    even, the last block may be short). Code `q` of block `b` stands for
    `map[q] * scale[b]`: `exp_avg` on `map_signed` (16 entries: the
    dynamic tree map with 3 exponent bits, zero and one included),
    `exp_avg_sq` on `map_unsigned` (16 entries `1/16 .. 1`, no zero, so no
    second moment dequantizes to 0).

    Block by block: dequantize both moments, update them and the parameter
    as AdamW does (from the unrounded new moments), take each moment's new
    scale `max(max |x|, 1e-12)` over the block, and requantize each value
    to the nearest entry of `x / scale`: the largest entry `map[c] <= x /
    scale` (or entry 0), then `c + 1` when `x / scale - map[c] >=
    (map[c + 1] - map[c]) * 0.5` (a tie rounds up). Zero-initialised
    state (every scale 0) dequantizes to zero. No f32 copy of a whole
    moment exists. Results are meant to be written in place of the
    parameter and the four state operands; with `apply` false nothing
    changes. A non-zero `rounding_seed` rounds a bf16 parameter
    stochastically, as `tg.adamw_update` does (`part` too).
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_CodeTensor:$exp_avg, TG_F32Vector:$exp_avg_scale,
                       TG_CodeTensor:$exp_avg_sq,
                       TG_F32Vector:$exp_avg_sq_scale,
                       TG_F32Vector:$map_signed, TG_F32Vector:$map_unsigned,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_I64Scalar>:$part,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<I64Attr, "128">:$block_size,
                       DefaultValuedAttr<I64Attr, "0">:$rounding_seed);
  let results = (outs TG_FloatTensor:$new_param,
                      TG_CodeTensor:$new_exp_avg,
                      TG_F32Vector:$new_exp_avg_scale,
                      TG_CodeTensor:$new_exp_avg_sq,
                      TG_F32Vector:$new_exp_avg_sq_scale);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_scale `,` $exp_avg_sq `,`
    $exp_avg_sq_scale `,` $map_signed `,` $map_unsigned `,` $lr `,` $step
    (`part` $part^)? (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_SGD8bitUpdateOp : TG_Op<"sgd_8bit_update", [TG_InPlaceTied,
                                                     TG_BlockwiseUpdate]> {
  let summary = "one step of SGD with a blockwise 8-bit momentum buffer";
  let description = [{
    `tg.sgd_update` with momentum (the same math in f32, torch.optim.SGD's
    order; at step 1 the buffer starts as the gradient) on a momentum buffer
    stored as ui8 codes into `map` (signed) with an f32 absmax per block of
    `block_size` elements, dequantized, updated and requantized block by
    block as `tg.adamw_8bit_update` does its first moment. With `apply`
    false nothing changes.
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_CodeTensor:$momentum_buffer,
                       TG_F32Vector:$momentum_absmax, TG_F32Vector:$map,
                       TG_F32Scalar:$lr, TG_I64Scalar:$step,
                       Optional<TG_BoolScalar>:$apply,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<I64Attr, "256">:$block_size);
  let results = (outs TG_FloatTensor:$new_param,
                      TG_CodeTensor:$new_momentum_buffer,
                      TG_F32Vector:$new_momentum_absmax);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $momentum_absmax `,` $map `,`
    $lr `,` $step (`if` $apply^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_GlobalNormOp : TG_Op<"global_norm", [], ["getKernelLaunches"]> {
  let summary = "the 2-norm of all elements of all operands";
  let description = [{
    `sqrt(sum over operands of sum(x^2))` in f32, the total norm of
    torch.nn.utils.clip_grad_norm_ with `norm_type=2`.
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$inputs);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

def TG_ScaleLossOp : TG_Op<"scale_loss"> {
  let summary = "multiplies the loss by the loss scale";
  let description = [{
    `result = loss * scale` in f32, the loss whose gradient is taken when
    loss scaling is on (GradScaler.scale).
  }];
  let arguments = (ins TG_FloatScalar:$loss, TG_F32Scalar:$scale);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = [{
    $loss `,` $scale attr-dict `:` functional-type(operands, results)
  }];
}

def TG_UnscaleOp : TG_Op<"unscale", [TG_InPlace]> {
  let summary = "divides a gradient by the loss scale";
  let description = [{
    `result = grad * (1 / scale)`, the reciprocal taken in f32 once, as
    GradScaler.unscale_ does; the result may be of a wider float type than
    `grad` (a low-precision gradient unscaled into an f32 master gradient).
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_F32Scalar:$scale);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TG_AllFiniteOp : TG_Op<"all_finite", [], ["getKernelLaunches"]> {
  let summary = "whether every element of every operand is finite";
  let description = [{
    True when no element of any operand is an infinity or a NaN.
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$inputs);
  let results = (outs TG_BoolScalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def TG_UpdateLossScaleOp : TG_Op<"update_loss_scale", [TG_InPlaceTied]> {
  let summary = "dynamic loss-scale update (GradScaler.update)";
  let description = [{
    When `found_finite` is false: `new_scale = scale * backoff_factor` and
    `new_growth_tracker = 0`. Otherwise the tracker counts this step; when it
    reaches `growth_interval`, `new_scale = scale * growth_factor` and the
    tracker restarts at 0, else the scale is unchanged. This is torch's
    `_amp_update_scale_`.
  }];
  let arguments = (ins TG_F32Scalar:$scale, TG_I64Scalar:$growth_tracker,
                       TG_BoolScalar:$found_finite,
                       DefaultValuedAttr<F64Attr, "2.0">:$growth_factor,
                       DefaultValuedAttr<F64Attr, "0.5">:$backoff_factor,
                       DefaultValuedAttr<I64Attr, "2000">:$growth_interval);
  let results = (outs TG_F32Scalar:$new_scale,
                      TG_I64Scalar:$new_growth_tracker);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $found_finite attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// A collective over a group of `world_size` ranks of a data-parallel job:
/// every rank runs it at the same point of the same step (tg-data-parallel
/// inserts them), the CPU backend with Open MPI and the CUDA backend with
/// NCCL. The job's ranks fall in groups of `world_size` ranks `rank_stride`
/// apart, each group running the collective at once: with stride S and
/// size G, rank r's group is the ranks b + j S (j < G), b = r mod S +
/// floor(r / (S G)) S G, and r is member (r / S) mod G of it. The default
/// stride 1 makes groups of consecutive ranks (the whole job when G is its
/// size); hybrid sharding (`--shard-group=K`) also runs collectives over
/// the N / K ranks K apart that hold the same part. Its cost is the bytes
/// one rank sends (ring algorithms).
class TG_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TG_Op<mnemonic, traits, ["getBytesCommunicated"]> {
  let hasVerifier = 1;
}

def TG_AllReduceOp : TG_CollectiveOp<"all_reduce", [SameOperandsAndResultType,
                                                    TG_InPlace]> {
  let summary = "combines a tensor across ranks; every rank gets the result";
  let description = [{
    Every rank passes a tensor of the same type; each gets back the
    elementwise `reduction` (sum, mean, min or max) of its group's tensors
    (MPI_Allreduce, ncclAllReduce). f16 and bf16 are combined in f32 and
    rounded once. A rank sends `2 (N - 1) / N` times the tensor's bytes.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_ReduceKind:$reduction,
                       I64Attr:$world_size,
                       DefaultValuedAttr<I64Attr, "1">:$rank_stride);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $input attr-dict `:` type($result)
  }];
}

def TG_ReduceScatterOp : TG_CollectiveOp<"reduce_scatter"> {
  let summary = "combines a tensor across ranks; each rank keeps one part";
  let description = [{
    Every rank passes a tensor whose leading dimension is `world_size`
    times the result's; member `r` of a group gets part `r` along that
    dimension of the elementwise `reduction` of the group's tensors
    (MPI_Reduce_scatter_block, ncclReduceScatter). f16 and bf16 are combined in f32. A rank sends
    `(N - 1) / N` times the operand's bytes.
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_ReduceKind:$reduction,
                       I64Attr:$world_size,
                       DefaultValuedAttr<I64Attr, "1">:$rank_stride);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $input attr-dict `:` type($input) `->` type($result)
  }];
}

def TG_AllGatherOp : TG_CollectiveOp<"all_gather"> {
  let summary = "concatenates every rank's tensor, on every rank";
  let description = [{
    Every rank passes a tensor of the same type; each gets its group's
    concatenated in member order along the leading dimension, which is
    `world_size` times the operand's (MPI_Allgather, ncclAllGather). A rank
    sends `(N - 1)` times the operand's bytes.
  }];
  let arguments = (ins TG_MovableTensor:$input, I64Attr:$world_size,
                       DefaultValuedAttr<I64Attr, "1">:$rank_stride);
  let results = (outs TG_MovableTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
}

def TG_ShardOp : TG_CollectiveOp<"shard"> {
  let summary = "the part of a tensor this rank holds (no communication)";
  let description = [{
    Member `r` of a group of `world_size` ranks gets part `r` along the
    leading dimension, which is `world_size` times the result's: what
    `tg.reduce_scatter` leaves each rank, for a tensor every rank already has whole (a
    parameter, before the rank updates its part). Nothing is sent.
  }];
  let arguments = (ins TG_AnyTensor:$input, I64Attr:$world_size,
                       DefaultValuedAttr<I64Attr, "1">:$rank_stride);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
}

#endif // TGC_DIALECT_TG_IR_TGOPS_TD
