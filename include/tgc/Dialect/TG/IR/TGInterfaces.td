//===- TGInterfaces.td - op interfaces of the tg dialect ----*- tablegen -*-===//
//
// Two interfaces make passes generic over ops:
// - GradientOpInterface: an op builds its own vector-Jacobian product, so
//   tg-autodiff is one generic reverse sweep and a new op brings its rule;
// - CostOpInterface: FLOPs and bytes moved, used by the rematerialization
//   and fusion passes and by the statistics report;
// - InPlaceOpInterface: which results a kernel may write over an operand,
//   so the memory planner reuses buffers without a list of op names;
// - OptimizerUpdateOpInterface: what every optimizer update reads and
//   writes (parameter, gradient, learning rate, step, the predicate that
//   loss scaling adds), so passes after tg-optimizer need no list of
//   optimizers.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_TD
#define TGC_DIALECT_TG_IR_TGINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::tgc::tg";
  let description = [{
    An op that can be differentiated. Given the cotangents of its results, it
    builds, at the builder's insertion point, the ops computing the
    cotangents of its operands (the vector-Jacobian product).

    `resultGrads` has one entry per result; an entry is null when that result
    does not reach the loss. `needed` has one entry per operand: whether its
    cotangent is requested (it depends on a trainable parameter); an op may
    skip the work of the others (a fused gradient op computes only the
    requested results, by its `output_mask`). The op fills `operandGrads`
    with one entry per operand; it leaves an entry null when the operand is
    not differentiable (indices, predicates), its gradient is identically
    zero, or it was not needed.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Builds the cotangents of the operands from those of the results",
      /*retTy=*/"::mlir::LogicalResult",
      /*methodName=*/"buildVectorJacobianProduct",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
                    "::mlir::ArrayRef<bool>":$needed,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def TG_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::tgc::tg";
  let description = [{
    The cost of executing an op once, for the rematerialization and fusion
    passes and the statistics report.

    FLOPs count floating-point operations as a fused reference kernel would
    execute them: a multiply-add is two, an elementwise arithmetic op or a
    transcendental function one per element, comparisons and selects one per
    element, and data movement (reshape, transpose, slice, cast) zero. Each
    op's description of its count is in its C++ implementation.

    Bytes read and written are the sizes of the operand and result tensors a
    kernel touches (storage size of the element type times the element count;
    i1 counts as one byte). Ops that touch only part of an operand (embedding
    lookups, slices) override the default.

    For the roofline estimate (tgc/Analysis/Roofline.h), an op also says
    which of its FLOPs are matrix products and in which element type they
    run, and what its CUDA kernel moves through scratch memory: those
    describe the kernel tgc's CUDA backend runs, not an ideal one.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution",
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<"Bytes read from memory by one execution",
      "int64_t", "getBytesRead", (ins), [{}], [{
        return ::tgc::tg::getTotalTensorBytes($_op->getOperandTypes());
      }]>,
    InterfaceMethod<"Bytes written to memory by one execution",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::tgc::tg::getTotalTensorBytes($_op->getResultTypes());
      }]>,
    InterfaceMethod<[{
        The part of getFlops() spent in matrix products, which a GPU runs on
        its matrix units (tensor cores) at the peak of getMatmulType()
      }],
      "int64_t", "getMatmulFlops", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        The element type the matrix products of getMatmulFlops() read, which
        selects the matrix units' peak: by default the type of operand 0
      }],
      "::mlir::Type", "getMatmulType", (ins), [{}], [{
        if ($_op->getNumOperands() == 0)
          return ::mlir::Float32Type::get($_op->getContext());
        return ::mlir::getElementTypeOrSelf($_op->getOperand(0).getType());
      }]>,
    InterfaceMethod<[{
        Bytes the CUDA kernel moves through scratch memory beyond its operands
        and results (read plus written), e.g. a materialised score matrix;
        zero for a kernel that keeps its intermediate values on chip
      }],
      "int64_t", "getScratchBytes", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        Bytes one rank sends over the network in one execution, by the ring
        algorithms NCCL and Open MPI use for large messages: zero for every
        op but the collectives
      }],
      "int64_t", "getBytesCommunicated", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        Work items the CUDA backend puts on its stream for one execution
        (kernel launches, cuBLASLt products, device copies and memsets):
        the nodes the op adds to a captured CUDA graph, one by default
      }],
      "int64_t", "getKernelLaunches", (ins), [{}], [{ return 1; }]>,
  ];
}

def TG_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::tgc::tg";
  let description = [{
    An op whose kernels, in every backend, compute a result correctly when
    it is written into the storage of one of its operands (same address,
    same size): each element is read before anything that depends on it is
    written. The memory planner uses it twice: a transient result takes the
    buffer of an operand that no later op reads (in-place reuse), and an
    update of a persistent tensor (a parameter, optimizer state) is written
    over that tensor while the op still reads it.

    The default answers for ops whose result 0 is computed element by
    element from operands of its own type: result 0 may take any operand of
    exactly its type. Ops with several results tied to operands (optimizer
    updates) override it.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Whether result `result` may be written over operand `operand`",
      /*retTy=*/"bool",
      /*methodName=*/"canReuseOperandBuffer",
      /*args=*/(ins "unsigned":$result, "unsigned":$operand),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return result == 0 &&
               $_op->getOperand(operand).getType() ==
                   $_op->getResult(0).getType();
      }]>,
  ];
}

def TG_OptimizerUpdateOpInterface : OpInterface<"OptimizerUpdateOpInterface"> {
  let cppNamespace = "::tgc::tg";
  let description = [{
    One optimizer step of one parameter: it reads the parameter, its
    gradient, the learning rate (an f32 scalar) and the 1-based step number
    (an i64 scalar), and returns the new parameter and its new state, each
    meant to be written over the operand it replaces (InPlaceOpInterface
    says which). With the optional `apply` predicate (an i1 scalar) false,
    the update changes nothing: loss scaling sets it to skip a step whose
    gradients overflowed.
  }];
  let methods = [
    InterfaceMethod<"The parameter this op updates", "::mlir::Value",
      "getParam", (ins), [{}], [{ return $_op.getParam(); }]>,
    InterfaceMethod<"The gradient the update reads", "::mlir::Value",
      "getGrad", (ins), [{}], [{ return $_op.getGrad(); }]>,
    InterfaceMethod<"The learning rate (f32 scalar)", "::mlir::Value",
      "getLr", (ins), [{}], [{ return $_op.getLr(); }]>,
    InterfaceMethod<"The 1-based step number (i64 scalar)", "::mlir::Value",
      "getStep", (ins), [{}], [{ return $_op.getStep(); }]>,
    InterfaceMethod<"The new parameter", "::mlir::Value",
      "getNewParam", (ins), [{}], [{ return $_op.getNewParam(); }]>,
    InterfaceMethod<"The apply predicate, or null", "::mlir::Value",
      "getApply", (ins), [{}], [{ return $_op.getApply(); }]>,
    InterfaceMethod<"Sets the apply predicate (an i1 scalar)", "void",
      "setApply", (ins "::mlir::Value":$predicate), [{}], [{
        $_op.getApplyMutable().assign(predicate);
      }]>,
    InterfaceMethod<[{
        How the update may be split across ranks (tg-data-parallel's ZeRO
        modes): 0 when it may not (its state is not laid out element by
        element with the parameter); otherwise the granule G such that the
        update of any run of consecutive elements starting at a multiple
        of G, with the matching slices of its per-element and per-block
        operands, equals that run of the whole update (1 for elementwise
        updates, the block size for blockwise-quantized state)
      }],
      "int64_t", "getShardGranule", (ins), [{}], [{ return 1; }]>,
    InterfaceMethod<[{
        How operand `operand` is laid out against the parameter: Replicated
        (scalars, code maps: every shard reads all of it), PerElement (one
        value per parameter element, row-major), PerElementPair (one value
        per two elements: packed 4-bit codes; the granule is even) or
        PerBlock (one value per granule of elements)
      }],
      "::tgc::tg::ShardLayout", "getOperandShardLayout",
      (ins "unsigned":$operand)>,
  ];
}

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_TD
