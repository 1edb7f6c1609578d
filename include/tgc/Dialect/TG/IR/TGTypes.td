//===- TGTypes.td - type constraints of the tg dialect ------*- tablegen -*-===//
//
// tg has no types of its own: it computes on builtin tensors. These are the
// constraints its ops place on them. Every tensor is statically shaped, which
// is what lets the memory planner account for every byte.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGTYPES_TD
#define TGC_DIALECT_TG_IR_TGTYPES_TD

include "mlir/IR/CommonTypeConstraints.td"

/// Element types a compute op may use.
def TG_FloatElement : AnyTypeOf<[F32, F16, BF16]>;

/// A statically shaped tensor of f32, f16 or bf16.
def TG_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;

/// A statically shaped tensor of floats or integers: what arithmetic takes.
def TG_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, I32, I64]>;

/// A statically shaped tensor of indices (token ids, class labels).
def TG_IndexTensor : StaticShapeTensorOf<[I32, I64]>;

/// A statically shaped tensor of any element type tg knows.
def TG_AnyTensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I8, I1]>;

/// Codes of 8-bit quantized state: unsigned bytes indexing a 256-entry map.
def TG_CodeTensor : StaticShapeTensorOf<[UI8]>;

/// What layout ops and all-gathers move: any element type tg knows, or
/// codes (zero3 gathers the parts of a 4-bit weight's codes).
def TG_MovableTensor
    : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I8, I1, UI8]>;

/// A 1-D f32 tensor: the absmax of each block of quantized state, or a
/// quantization map.
def TG_F32Vector : 1DTensorOf<[F32]>;

/// A statically shaped tensor of predicates.
def TG_BoolTensor : StaticShapeTensorOf<[I1]>;

/// Scalars (rank-0 tensors) used as step state and hyper-parameters.
def TG_F32Scalar : 0DTensorOf<[F32]>;
def TG_FloatScalar : 0DTensorOf<[F32, F16, BF16]>;
def TG_I64Scalar : 0DTensorOf<[I64]>;
def TG_BoolScalar : 0DTensorOf<[I1]>;

#endif // TGC_DIALECT_TG_IR_TGTYPES_TD
