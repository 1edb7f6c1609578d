//===- TGGradients.cpp - vector-Jacobian products of tg ops ---------------===//
//
// Implements GradientOpInterface: each differentiable op builds the ops that
// turn the cotangents of its results into those of its operands. Where a
// forward op broadcast an operand, its cotangent is summed back with
// tg.sum_to. Index and predicate operands get no cotangent.
//
// Reverse mode needs only what the forward pass kept: ops whose VJP needs a
// forward value (an operand or a result) reference it, and the memory
// planner accounts for keeping it alive ("activations saved for backward").
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace tgc::tg;

namespace {

/// Creates ops at the builder's insertion point, at one location, computing
/// result types from the operands.
class GradBuilder {
public:
  GradBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  /// A tensor of `type` filled with `value`.
  Value fill(Type type, double value) {
    return FillOp::create(b, loc, type, b.getF64FloatAttr(value));
  }

  /// A rank-0 tensor of `v`'s element type filled with `value`.
  Value scalarLike(Value v, double value) {
    return fill(RankedTensorType::get({}, typeOf(v).getElementType()), value);
  }

  /// A binary op of the operands' broadcast shape.
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return OpTy::create(b, loc, lhs, rhs);
  }
  Value mul(Value lhs, Value rhs) { return MulOp::create(b, loc, lhs, rhs); }
  Value div(Value lhs, Value rhs) { return DivOp::create(b, loc, lhs, rhs); }
  Value neg(Value v) { return NegOp::create(b, loc, v); }
  Value scale(Value v, double factor) { return mul(v, scalarLike(v, factor)); }

  /// `grad` summed down to `type` when a broadcast widened it, and
  /// rounded to its element type when a 16-bit operand stood beside f32.
  Value sumTo(Value grad, Type type) {
    if (grad.getType() == type)
      return grad;
    auto target = cast<RankedTensorType>(type);
    RankedTensorType from = typeOf(grad);
    if (from.getShape() != target.getShape())
      grad = SumToOp::create(
          b, loc, target.clone(from.getElementType()), grad);
    if (typeOf(grad).getElementType() != target.getElementType())
      grad = CastOp::create(b, loc, target, grad);
    return grad;
  }

  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (typeOf(v).getShape() == shape)
      return v;
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(shape, typeOf(v).getElementType()), v);
  }

  Value matmul(Value lhs, Value rhs, bool transposeLhs, bool transposeRhs) {
    return MatmulOp::create(b, loc, lhs, rhs, transposeLhs, transposeRhs);
  }

  OpBuilder &b;
  Location loc;
};

/// Collapses all but the last dimension: [B..., M, K] -> [B*...*M, K].
Value flattenRows(GradBuilder &g, Value v) {
  ArrayRef<int64_t> shape = GradBuilder::typeOf(v).getShape();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  return g.reshape(v, {rows, shape.back()});
}

} // namespace

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// C = op(A) op(B), op(X) = X or X^T. Then d op(A) = dC op(B)^T and
// d op(B) = op(A)^T dC, each transposed back when the operand was.
LogicalResult MatmulOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value dc = resultGrads[0];
  Value a = getLhs(), b = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  int64_t rankA = GradBuilder::typeOf(a).getRank();
  int64_t rankB = GradBuilder::typeOf(b).getRank();

  Value da = ta ? g.matmul(b, dc, tb, /*transposeRhs=*/true)
                : g.matmul(dc, b, /*transposeLhs=*/false, !tb);
  // A weight shared by every batch (rank 2 against a batched lhs) gets its
  // gradient from one GEMM over the flattened rows rather than a batched
  // product summed afterwards.
  Value db;
  if (rankB == 2 && rankA > 2 && !ta) {
    Value a2 = flattenRows(g, a), dc2 = flattenRows(g, dc);
    db = tb ? g.matmul(dc2, a2, /*transposeLhs=*/true, false)
            : g.matmul(a2, dc2, /*transposeLhs=*/true, false);
  } else {
    db = tb ? g.matmul(dc, a, /*transposeLhs=*/true, ta)
            : g.matmul(a, dc, !ta, /*transposeRhs=*/false);
  }
  operandGrads.push_back(g.sumTo(da, a.getType()));
  operandGrads.push_back(g.sumTo(db, b.getType()));
  return success();
}

// d input = d result W (W^T when the forward product was untransposed):
// the same dequantizing product, transposed the other way. The weight is
// frozen: its operands (codes, scales, maps) get no gradient.
LogicalResult Matmul4bitOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &operandGrads) {
  for (unsigned i = 1; i < getNumOperands(); ++i)
    if (needed[i])
      return emitOpError("a 4-bit weight is frozen: operand ")
             << i << " has no gradient";
  operandGrads.push_back(
      needed[0] ? Value(Matmul4bitOp::create(
                      builder, getLoc(), getInput().getType(), resultGrads[0],
                      getCodes(), getAbsmax(), getQuantMap(), getNested(),
                      getRows(), getCols(), getBlockSize(),
                      !getTransposeRhs()))
                : Value());
  operandGrads.append(getNumOperands() - 1, Value());
  return success();
}

// The GELU's gradient from the saved pre-activation, the bias's as a sum
// over rows, then the product's gradients in the operands' type (as the
// unfused matmul -> cast -> add -> gelu would give them).
LogicalResult LinearOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value grad = resultGrads[0];
  if (getGelu()) {
    if (grad)
      grad = GeluGradOp::create(builder, getLoc(), getPreactivation(), grad,
                                /*exact=*/false);
    if (resultGrads.size() > 1 && resultGrads[1])
      grad = grad ? g.binary<AddOp>(grad, resultGrads[1]) : resultGrads[1];
  }
  Value x = getInput(), w = getWeight();
  Type operandElement = GradBuilder::typeOf(x).getElementType();
  Value dm = grad;
  if (GradBuilder::typeOf(grad).getElementType() != operandElement)
    dm = CastOp::create(builder, getLoc(),
                        GradBuilder::typeOf(grad).clone(operandElement), grad);
  operandGrads.push_back(needed[0] ? g.matmul(dm, w, false, true) : Value());
  operandGrads.push_back(needed[1]
                             ? g.matmul(flattenRows(g, x), flattenRows(g, dm),
                                        /*transposeLhs=*/true, false)
                             : Value());
  operandGrads.push_back(needed[2] ? g.sumTo(grad, getBias().getType())
                                   : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.sumTo(resultGrads[0], getLhs().getType()));
  operandGrads.push_back(g.sumTo(resultGrads[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.sumTo(resultGrads[0], getLhs().getType()));
  operandGrads.push_back(
      g.sumTo(g.neg(resultGrads[0]), getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value dc = resultGrads[0];
  operandGrads.push_back(g.sumTo(g.mul(dc, getRhs()), getLhs().getType()));
  operandGrads.push_back(g.sumTo(g.mul(dc, getLhs()), getRhs().getType()));
  return success();
}

// d(a / b) = da / b - dc * (a / b) / b.
LogicalResult DivOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value dc = resultGrads[0];
  Value dcOverB = g.div(dc, getRhs());
  operandGrads.push_back(g.sumTo(dcOverB, getLhs().getType()));
  operandGrads.push_back(
      g.sumTo(g.neg(g.mul(dcOverB, getResult())), getRhs().getType()));
  return success();
}

/// The VJP of max (or min) as torch defines it: the cotangent goes to the
/// larger (smaller) operand, split evenly on ties. `x > y` is expressed as
/// relu_grad's mask of `x - y`, which is positive exactly when x > y.
/// The `output_mask` of a fused gradient op with one result per operand
/// of the forward op: null when every result is needed.
static DenseBoolArrayAttr outputMaskOf(OpBuilder &builder,
                                       ArrayRef<bool> needed) {
  if (llvm::all_of(needed, [](bool n) { return n; }))
    return {};
  return builder.getDenseBoolArrayAttr(needed);
}

/// Appends the results of such an op that are needed (null for the others).
static void appendNeeded(SmallVectorImpl<Value> &operandGrads,
                         ResultRange results, ArrayRef<bool> needed) {
  for (auto [result, isNeeded] : llvm::zip(results, needed))
    operandGrads.push_back(isNeeded ? Value(result) : Value());
}

static LogicalResult buildMinMaxVJP(Operation *op, OpBuilder &builder,
                                    Value dc, bool maximum,
                                    SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, op->getLoc());
  Value a = op->getOperand(0), b = op->getOperand(1);
  auto strictly = [&](Value x, Value y) {
    Value diff = g.binary<SubOp>(x, y);
    return ReluGradOp::create(builder, op->getLoc(), diff, dc).getResult();
  };
  Value da = maximum ? strictly(a, b) : strictly(b, a);
  Value db = maximum ? strictly(b, a) : strictly(a, b);
  Value ties = g.binary<SubOp>(g.binary<SubOp>(dc, da), db);
  Value half = g.scale(ties, 0.5);
  operandGrads.push_back(g.sumTo(g.binary<AddOp>(da, half), a.getType()));
  operandGrads.push_back(g.sumTo(g.binary<AddOp>(db, half), b.getType()));
  return success();
}

LogicalResult MaximumOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  return buildMinMaxVJP(*this, builder, resultGrads[0], /*maximum=*/true,
                        operandGrads);
}

LogicalResult MinimumOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  return buildMinMaxVJP(*this, builder, resultGrads[0], /*maximum=*/false,
                        operandGrads);
}

LogicalResult NegOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GradBuilder(builder, getLoc()).neg(resultGrads[0]));
  return success();
}

LogicalResult ExpOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.mul(resultGrads[0], getResult()));
  return success();
}

LogicalResult LogOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.div(resultGrads[0], getInput()));
  return success();
}

// d sqrt(x) = dc / (2 sqrt(x)).
LogicalResult SqrtOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.div(g.scale(resultGrads[0], 0.5), getResult()));
  return success();
}

// y = x^(-1/2): dy/dx = -0.5 y^3.
LogicalResult RsqrtOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value y = getResult();
  Value cube = g.mul(g.mul(y, y), y);
  operandGrads.push_back(g.mul(g.scale(resultGrads[0], -0.5), cube));
  return success();
}

LogicalResult TanhOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TanhGradOp::create(builder, getLoc(), getResult(), resultGrads[0]));
  return success();
}

LogicalResult GeluOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(
      builder, getLoc(), getInput(), resultGrads[0], getExactAttr()));
  return success();
}

LogicalResult SwigluOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &operandGrads) {
  auto grads = SwigluGradOp::create(builder, getLoc(), getGate(), getUp(),
                                    resultGrads[0]);
  operandGrads.append({grads.getGateGrad(), grads.getUpGrad()});
  return success();
}

// The condition selects where the cotangent goes; it has none itself.
LogicalResult WhereOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  Value dc = resultGrads[0];
  Value zero = g.scalarLike(dc, 0.0);
  auto select = [&](Value onTrue, Value onFalse) {
    return WhereOp::create(builder, getLoc(), dc.getType(), getCondition(),
                           onTrue, onFalse);
  };
  operandGrads.push_back(nullptr);
  operandGrads.push_back(g.sumTo(select(dc, zero), getLhs().getType()));
  operandGrads.push_back(g.sumTo(select(zero, dc), getRhs().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxGradOp::create(
      builder, getLoc(), getResult(), resultGrads[0], getAxis()));
  return success();
}

// Each element reaches every prefix sum that includes it: the cotangent
// summed the other way.
LogicalResult CumsumOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &operandGrads) {
  if (!isa<FloatType>(getElementTypeOrSelf(getInput().getType()))) {
    operandGrads.push_back(nullptr);
    return success();
  }
  operandGrads.push_back(CumsumOp::create(builder, getLoc(),
                                          getInput().getType(), resultGrads[0],
                                          getAxis(), !getReverse()));
  return success();
}

// Each picked element's cotangent goes back where it was picked from; the
// indices have none.
LogicalResult GatherOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &operandGrads) {
  if (!isa<FloatType>(getElementTypeOrSelf(getInput().getType())))
    operandGrads.push_back(nullptr);
  else
    operandGrads.push_back(
        GatherGradOp::create(builder, getLoc(), getInput().getType(),
                             resultGrads[0], getIndex(), getAxis()));
  operandGrads.push_back(nullptr);
  return success();
}

// The input's cotangent goes back through the same experts' weights
// (transposed the other way); each weight's is the outer product summed
// over its expert's rows. The offsets have none.
LogicalResult ExpertLinearOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> needed,
    SmallVectorImpl<Value> &operandGrads) {
  Value grad = resultGrads[0];
  bool transposed = getTransposeWeight();
  operandGrads.push_back(needed[0]
                             ? ExpertLinearOp::create(builder, getLoc(),
                                                      getInput().getType(),
                                                      grad, getOffsets(),
                                                      getWeights(), !transposed)
                                   .getResult()
                             : Value());
  operandGrads.push_back(nullptr);
  bool anyWeight = llvm::any_of(needed.drop_front(2), [](bool b) { return b; });
  if (!anyWeight) {
    operandGrads.append(getWeights().size(), nullptr);
    return success();
  }
  // [N, K] weights (transposed) take grad^T input; [K, N] input^T grad.
  Value lhs = transposed ? grad : getInput();
  Value rhs = transposed ? getInput() : grad;
  auto weightGrads = ExpertLinearWeightGradOp::create(
      builder, getLoc(), TypeRange(getWeights()), lhs, rhs, getOffsets());
  for (auto [i, result] : llvm::enumerate(weightGrads.getResults()))
    operandGrads.push_back(needed[2 + i] ? result : Value());
  return success();
}

LogicalResult LayerNormOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  if (getAddend())
    return emitOpError("has no gradient with an addend: tg-fuse-residuals "
                       "adds it to the finished step");
  auto grad = LayerNormGradOp::create(
      builder, getLoc(),
      TypeRange{getInput().getType(), getWeight().getType(),
                getWeight().getType()},
      getInput(), getWeight(), resultGrads[0], /*addend=*/Value(),
      getEpsilonAttr(), outputMaskOf(builder, needed));
  appendNeeded(operandGrads, grad->getResults(), needed);
  return success();
}

LogicalResult RmsNormOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  if (getAddend())
    return emitOpError("has no gradient with an addend: tg-fuse-residuals "
                       "adds it to the finished step");
  auto grad = RmsNormGradOp::create(
      builder, getLoc(),
      TypeRange{getInput().getType(), getWeight().getType()}, getInput(),
      getWeight(), resultGrads[0], /*addend=*/Value(), getEpsilonAttr(),
      outputMaskOf(builder, needed));
  appendNeeded(operandGrads, grad->getResults(), needed);
  return success();
}

// A rotation's transpose is the rotation by the negative angle.
LogicalResult RopeOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      RopeOp::create(builder, getLoc(), getType(), resultGrads[0], getInvFreq(),
                     getPositions(), !getInverse(), getBshd()));
  operandGrads.push_back(nullptr);
  if (getPositions())
    operandGrads.push_back(nullptr);
  return success();
}

LogicalResult EmbeddingOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  if (!needed[0]) {
    operandGrads.append(2, Value());
    return success();
  }
  // A 16-bit table read into f32 rows: the gradient sums in f32 and is
  // rounded once, as the table's gradient through an f32 copy of it was.
  auto table = cast<RankedTensorType>(getTable().getType());
  Type element = getElementTypeOrSelf(getResult().getType());
  Value grad = EmbeddingGradOp::create(builder, getLoc(), table.clone(element),
                                       getIndices(), resultGrads[0],
                                       /*addend=*/Value(), getPaddingIdxAttr());
  if (element != table.getElementType())
    grad = CastOp::create(builder, getLoc(), table, grad);
  operandGrads.push_back(grad);
  operandGrads.push_back(nullptr);
  return success();
}

LogicalResult AttentionOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  // The row log-sum-exp is kept for the gradient, after differentiation.
  if (getLse())
    return emitOpError("is differentiated before its lse result is kept "
                       "(tg-keep-attention-lse runs after tg-autodiff)");
  if (getPacked())
    return emitOpError("is differentiated before its operands are packed "
                       "(tg-pack-qkv runs on the finished step)");
  auto grad = AttentionGradOp::create(
      builder, getLoc(),
      TypeRange{getQuery().getType(), getKey().getType(), getValue().getType()},
      getQuery(), getKey(), getValue(), getResult(), resultGrads[0],
      getKeyMask(), /*lse=*/Value(), getCausalAttr(), getWindowAttr(),
      getScaleAttr(), outputMaskOf(builder, needed.take_front(3)),
      getBshdAttr(), /*packed=*/BoolAttr(), getSoftcapAttr(),
      getSegmentsAttr());
  appendNeeded(operandGrads, grad->getResults(), needed.take_front(3));
  if (getKeyMask())
    operandGrads.push_back(nullptr);
  return success();
}

LogicalResult CrossEntropyOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  if (getGrad())
    return emitOpError("has no gradient with grad: tg-fuse-loss runs on the "
                       "finished step");
  operandGrads.push_back(CrossEntropyGradOp::create(
      builder, getLoc(), getLogits().getType(), getLogits(), getTargets(),
      resultGrads[0], getIgnoreIndexAttr(), getSoftcapAttr()));
  operandGrads.push_back(nullptr);
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops and casts
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReshapeOp::create(builder, getLoc(),
                                           getInput().getType(),
                                           resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(TransposeOp::create(
      builder, getLoc(), getInput().getType(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SliceGradOp::create(
      builder, getLoc(), getInput().getType(), resultGrads[0], getOffsets()));
  return success();
}

// The pieces' cotangents concatenate; a piece that does not reach the loss
// contributes zeros.
LogicalResult SplitOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  SmallVector<Value> pieces;
  for (auto [result, grad] : llvm::zip(getResults(), resultGrads))
    pieces.push_back(grad ? grad : g.fill(result.getType(), 0.0));
  operandGrads.push_back(ConcatOp::create(
      builder, getLoc(), getInput().getType(), pieces, getAxis()));
  return success();
}

LogicalResult ConcatOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  int64_t rank = GradBuilder::typeOf(getResult()).getRank();
  int64_t axis = getAxis() < 0 ? getAxis() + rank : getAxis();
  SmallVector<int64_t> offsets(rank, 0);
  for (Value input : getInputs()) {
    operandGrads.push_back(SliceOp::create(
        builder, getLoc(), input.getType(), resultGrads[0], offsets));
    offsets[axis] += GradBuilder::typeOf(input).getDimSize(axis);
  }
  return success();
}

/// The cotangent of a reduction, broadcast back over the reduced axes.
static Value broadcastReduced(GradBuilder &g, Value grad, Value input,
                              ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(GradBuilder::typeOf(input).getShape());
  for (int64_t axis : axes)
    kept[axis] = 1;
  Value reshaped = g.reshape(grad, kept);
  return BroadcastToOp::create(g.b, g.loc, input.getType(), reshaped);
}

LogicalResult ReduceSumOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(
      broadcastReduced(g, resultGrads[0], getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMeanOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= GradBuilder::typeOf(getInput()).getDimSize(axis);
  Value scaled = g.scale(resultGrads[0], 1.0 / double(count));
  operandGrads.push_back(broadcastReduced(g, scaled, getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMaxOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReduceMaxGradOp::create(
      builder, getLoc(), getInput().getType(), getInput(), getResult(),
      resultGrads[0], getAxesAttr(), getKeepDimsAttr()));
  return success();
}

LogicalResult BroadcastToOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  GradBuilder g(builder, getLoc());
  operandGrads.push_back(g.sumTo(resultGrads[0], getInput().getType()));
  return success();
}

// Only float-to-float casts carry a cotangent; it is cast back.
LogicalResult CastOp::buildVectorJacobianProduct(
    OpBuilder &builder, ArrayRef<Value> resultGrads,
    ArrayRef<bool> needed, SmallVectorImpl<Value> &operandGrads) {
  Type from = getElementTypeOrSelf(getInput().getType());
  Type to = getElementTypeOrSelf(getResult().getType());
  if (!isa<FloatType>(from) || !isa<FloatType>(to)) {
    operandGrads.push_back(nullptr);
    return success();
  }
  operandGrads.push_back(CastOp::create(builder, getLoc(),
                                        getInput().getType(),
                                        resultGrads[0]));
  return success();
}
