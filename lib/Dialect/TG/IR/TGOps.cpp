//===- TGOps.cpp - ops of the tg dialect ----------------------------------===//
//
// Verifiers of the tg ops. They check shapes, element types and attributes
// and report what was expected and what was found, at the op's location.
// Every diagnostic here has a case in test/Dialect/TG/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "tgc/Support/CheckedMath.h"
#include "tgc/Support/Precision.h"
#include "tgc/Support/Quant4bit.h"
#include "tgc/Support/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InterleavedRange.h"

#include <cmath>

using namespace mlir;
using namespace tgc::tg;
namespace shapes = tgc::shapes;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

FailureOr<SmallVector<int64_t>> tgc::tg::broadcastShapes(ArrayRef<int64_t> a,
                                                        ArrayRef<int64_t> b) {
  std::optional<shapes::Shape> shape = shapes::broadcast(a, b);
  if (!shape)
    return failure();
  return SmallVector<int64_t>(shape->begin(), shape->end());
}

namespace precision = tgc::precision;

/// An element type as tgc/Support/Precision.h tells them apart.
static precision::Float precisionOf(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return precision::Float::F32;
  if (element.isF16())
    return precision::Float::F16;
  if (element.isBF16())
    return precision::Float::BF16;
  return precision::Float::Other;
}

/// The result type of a binary op: the operands' shapes broadcast, their
/// element type (the wider, f32, of a 16-bit float beside f32).
static LogicalResult inferBroadcastType(std::optional<Location> location,
                                        StringRef opName, ValueRange operands,
                                        SmallVectorImpl<Type> &types) {
  auto lhs = dyn_cast<RankedTensorType>(operands[0].getType());
  auto rhs = dyn_cast<RankedTensorType>(operands[1].getType());
  if (!lhs || !rhs)
    return emitOptionalError(location, "'", opName,
                             "' op needs ranked tensor operands");
  std::optional<shapes::Shape> shape =
      shapes::broadcast(lhs.getShape(), rhs.getShape());
  if (!shape)
    return emitOptionalError(location, "'", opName, "' op operand shapes ",
                             shapes::toString(lhs.getShape()), " and ",
                             shapes::toString(rhs.getShape()),
                             " are not broadcast-compatible");
  // A 16-bit lhs beside an f32 rhs computes in (and returns) f32.
  Type element = lhs.getElementType();
  if (element != rhs.getElementType() &&
      precision::mixes(precisionOf(element), precisionOf(rhs)))
    element = rhs.getElementType();
  types.push_back(RankedTensorType::get(*shape, element));
  return success();
}

/// Checks that the operands broadcast together to exactly the result shape.
static LogicalResult verifyBroadcastResult(Operation *op, ValueRange operands,
                                           Value result) {
  SmallVector<int64_t> shape;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    ArrayRef<int64_t> operandShape = tensorType(operand).getShape();
    FailureOr<SmallVector<int64_t>> next = broadcastShapes(shape, operandShape);
    if (failed(next)) {
      if (i == 1)
        return op->emitOpError("operand shapes ")
               << llvm::interleaved_array(shape) << " and "
               << llvm::interleaved_array(operandShape)
               << " are not broadcast-compatible";
      return op->emitOpError("operand #")
             << i << " of shape " << llvm::interleaved_array(operandShape)
             << " does not broadcast with "
             << llvm::interleaved_array(shape)
             << ", the broadcast of the operands before it";
    }
    shape = *next;
  }
  if (ArrayRef<int64_t>(shape) != tensorType(result).getShape())
    return op->emitOpError("result shape ")
           << llvm::interleaved_array(tensorType(result).getShape())
           << " does not match the broadcast shape "
           << llvm::interleaved_array(shape);
  return success();
}

/// Checks that all `values` have the same element type.
static LogicalResult verifySameElementType(Operation *op, ValueRange values) {
  if (values.empty())
    return success();
  Type expected = getElementTypeOrSelf(values.front().getType());
  for (Value value : values.drop_front()) {
    Type found = getElementTypeOrSelf(value.getType());
    if (found != expected)
      return op->emitOpError("element types must match, found ")
             << expected << " and " << found;
  }
  return success();
}

/// Checks that `value` has exactly type `expected`; `what` names it.
static LogicalResult verifyType(Operation *op, Value value, Type expected,
                                StringRef what) {
  if (value.getType() != expected)
    return op->emitOpError() << what << " must have type " << expected
                             << ", found " << value.getType();
  return success();
}

/// Checks that `value` has type `computed`, or its shape in f16 or bf16
/// when `computed` holds f32 (read widened or written rounded, as
/// tgc/Support/Precision.h allows); `what` names it.
static LogicalResult verifyStoredAs(Operation *op, Value value,
                                    Type computed, StringRef what) {
  auto type = cast<RankedTensorType>(value.getType());
  auto expected = cast<RankedTensorType>(computed);
  if (type.getShape() == expected.getShape() &&
      precision::mixes(precisionOf(type), precisionOf(expected)))
    return success();
  return op->emitOpError() << what << " must have type " << expected
                           << " (or its shape in f16 or bf16 when that is "
                              "f32), found "
                           << type;
}

/// Checks an axis against a rank and returns it as a non-negative index.
static FailureOr<int64_t> verifyAxis(Operation *op, int64_t axis,
                                     int64_t rank) {
  if (axis < -rank || axis >= rank) {
    op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// Checks reduction axes (sorted, distinct, in range) and returns the shape a
/// reduction over them produces.
static FailureOr<SmallVector<int64_t>>
verifyReductionAxes(Operation *op, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> axes, bool keepDims) {
  int64_t rank = shape.size();
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank) {
      op->emitOpError("reduction axis ")
          << axis << " is out of range for rank " << rank;
      return failure();
    }
    if (i > 0 && axes[i - 1] >= axis) {
      op->emitOpError("reduction axes must be sorted and distinct, found ")
          << llvm::interleaved_array(axes);
      return failure();
    }
  }
  SmallVector<int64_t> result;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      result.push_back(shape[d]);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

static LogicalResult verifyShape(Operation *op, Value value,
                                 ArrayRef<int64_t> expected, StringRef what) {
  ArrayRef<int64_t> found = tensorType(value).getShape();
  if (found != expected)
    return op->emitOpError() << what << " must have shape "
                             << llvm::interleaved_array(expected) << ", found "
                             << llvm::interleaved_array(found);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinaryOp(Operation *op) {
  // A 16-bit float operand beside an f32 operand and result (widened on
  // load: what tg-fold-casts makes of a widening tg.cast).
  Type lhs = getElementTypeOrSelf(op->getOperand(0).getType());
  Type rhs = getElementTypeOrSelf(op->getOperand(1).getType());
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  if (precision::mixedOperands(precisionOf(lhs), precisionOf(rhs),
                              precisionOf(result)))
    return verifyBroadcastResult(op, op->getOperands(), op->getResult(0));
  if (failed(verifySameElementType(op, op->getOperands())) ||
      failed(verifySameElementType(op, {op->getOperand(0), op->getResult(0)})))
    return failure();
  return verifyBroadcastResult(op, op->getOperands(), op->getResult(0));
}

LogicalResult AddOp::verify() { return verifyBinaryOp(*this); }
LogicalResult SubOp::verify() { return verifyBinaryOp(*this); }
LogicalResult MulOp::verify() { return verifyBinaryOp(*this); }
LogicalResult DivOp::verify() { return verifyBinaryOp(*this); }
LogicalResult MaximumOp::verify() { return verifyBinaryOp(*this); }
LogicalResult MinimumOp::verify() { return verifyBinaryOp(*this); }

LogicalResult WhereOp::verify() {
  if (failed(verifySameElementType(*this, {getLhs(), getRhs(), getResult()})))
    return failure();
  return verifyBroadcastResult(*this, getOperands(), getResult());
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getWeight()})) ||
      failed(verifySameElementType(*this, {getBias(), getResult()})))
    return failure();
  Type operandElement = tensorType(getInput()).getElementType();
  Type resultElement = tensorType(getResult()).getElementType();
  if (resultElement != operandElement && !resultElement.isF32())
    return emitOpError("result must be in the operands' type or f32, found ")
           << resultElement;
  ArrayRef<int64_t> input = tensorType(getInput()).getShape();
  ArrayRef<int64_t> weight = tensorType(getWeight()).getShape();
  ArrayRef<int64_t> bias = tensorType(getBias()).getShape();
  if (input.size() < 2 || weight.size() != 2)
    return emitOpError("needs an input of rank >= 2 and a weight of rank 2");
  if (input.back() != weight[0])
    return emitOpError("contraction sizes differ: ")
           << input.back() << " (input) and " << weight[0] << " (weight)";
  if (bias.size() != 1 || bias[0] != weight[1])
    return emitOpError("bias must be [")
           << weight[1] << "], the weight's columns";
  SmallVector<int64_t> expected(input.drop_back());
  expected.push_back(weight[1]);
  if (tensorType(getResult()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape must be ")
           << llvm::interleaved_array(expected);
  if (getGelu() != bool(getPreactivation()))
    return emitOpError(getGelu() ? "with gelu returns the pre-activation too"
                                 : "without gelu has one result");
  if (getPreactivation())
    return verifyType(*this, getPreactivation(), getResult().getType(),
                      "preactivation");
  return success();
}

/// The product's shape rule (ShapeRules.h) checked against `shaped`, the
/// values of that shape (the result; tg.matmul_add's addend too), whose
/// element type is the operands'.
static LogicalResult verifyProduct(Operation *op, Value lhs, Value rhs,
                                   bool transposeLhs, bool transposeRhs,
                                   ArrayRef<std::pair<Value, StringRef>> shaped) {
  SmallVector<Value> all = {lhs, rhs};
  for (auto [value, name] : shaped)
    all.push_back(value);
  if (failed(verifySameElementType(op, all)))
    return failure();
  shapes::ShapeOrError expected =
      shapes::matmul(tensorType(lhs).getShape(), tensorType(rhs).getShape(),
                     transposeLhs, transposeRhs);
  if (!expected.ok())
    return op->emitOpError(expected.error);
  for (auto [value, name] : shaped)
    if (failed(verifyShape(op, value, expected.shape, name)))
      return failure();
  return success();
}

LogicalResult MatmulOp::verify() {
  return verifyProduct(*this, getLhs(), getRhs(), getTransposeLhs(),
                       getTransposeRhs(), {{getResult(), "result"}});
}

// The result type from the operands' (the shape rule of ShapeRules.h). The
// verifier above checks the same rule with messages that say what
// disagrees, so refining an op's declared type never fails here.
LogicalResult MatmulOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  MatmulOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto lhs = dyn_cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(adaptor.getRhs().getType());
  if (!lhs || !rhs)
    return emitOptionalError(location, "tg.matmul needs ranked operands");
  shapes::ShapeOrError shape =
      shapes::matmul(lhs.getShape(), rhs.getShape(), adaptor.getTransposeLhs(),
                     adaptor.getTransposeRhs());
  if (!shape.ok())
    return emitOptionalError(location, "'tg.matmul' op ", shape.error);
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape.shape, lhs.getElementType()));
  return success();
}

LogicalResult MatmulOp::refineReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &) {
  return success();
}

LogicalResult Matmul4bitOp::verify() {
  int64_t rows = static_cast<int64_t>(getRows());
  int64_t cols = static_cast<int64_t>(getCols());
  shapes::ShapeOrError expected = shapes::matmul4bit(
      tensorType(getInput()).getShape(), rows, cols, getTransposeRhs());
  if (!expected.ok())
    return emitOpError(expected.error);
  if (failed(verifyType(*this, getResult(),
                        tensorType(getInput()).clone(expected.shape),
                        "result")))
    return failure();
  int64_t blockSize = static_cast<int64_t>(getBlockSize());
  if (blockSize <= 0 || blockSize % 2 || blockSize > quant4::kMaxBlockSize)
    return emitOpError("block_size must be even and in [2, ")
           << quant4::kMaxBlockSize << "], found " << blockSize;
  if (rows > tgc::kMaxTensorBytes / cols)
    return emitOpError("the weight's ") << rows << " x " << cols
                                        << " elements are too many";
  quant4::Layout layout{rows * cols, blockSize};
  if (failed(verifyShape(*this, getCodes(), {layout.codeBytes()}, "codes")) ||
      failed(verifyShape(*this, getAbsmax(), {layout.blocks()}, "absmax")) ||
      failed(verifyShape(*this, getQuantMap(), {quant4::kValues},
                         "quant_map")))
    return failure();
  bool nested = !tensorType(getAbsmax()).getElementType().isF32();
  if (getNested().size() != (nested ? 3u : 0u))
    return emitOpError(nested ? "a double-quantized (ui8) absmax needs the "
                                "three nested operands (nested_absmax, "
                                "nested_map, offset), found "
                              : "an f32 absmax takes no nested operands, "
                                "found ")
           << getNested().size();
  if (nested &&
      (failed(verifyShape(*this, getNested()[0], {layout.nestedBlocks()},
                          "nested_absmax")) ||
       failed(verifyShape(*this, getNested()[1], {quant4::kNestedValues},
                          "nested_map")) ||
       failed(verifyShape(*this, getNested()[2], {}, "offset"))))
    return failure();
  return success();
}

LogicalResult MatmulAddOp::verify() {
  return verifyProduct(*this, getLhs(), getRhs(), getTransposeLhs(),
                       getTransposeRhs(),
                       {{getAddend(), "addend"}, {getResult(), "result"}});
}

// The result has the addend's type (the verifier checks it against the
// product's shape).
LogicalResult MatmulAddOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  MatmulAddOp::Adaptor adaptor(operands, attributes, properties, regions);
  inferredReturnTypes.push_back(adaptor.getAddend().getType());
  return success();
}

LogicalResult MatmulAddOp::refineReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &) {
  return success();
}

LogicalResult MatmulBiasGradOp::verify() {
  if (failed(verifySameElementType(*this, getOperation()->getOperands())) ||
      failed(verifySameElementType(*this,
                                   {getLhs(), getProduct(), getBiasGrad()})))
    return failure();
  shapes::BiasGradShapes expected =
      shapes::matmulBiasGrad(tensorType(getLhs()).getShape(),
                             tensorType(getRhs()).getShape(), getBiasOfLhs());
  if (!expected.ok())
    return emitOpError(expected.error);
  if (failed(verifyShape(*this, getProduct(), expected.product, "product")))
    return failure();
  return verifyShape(*this, getBiasGrad(), expected.bias, "bias_grad");
}

LogicalResult MatmulGeluGradOp::verify() {
  if (failed(verifySameElementType(*this, getOperation()->getOperands())) ||
      failed(verifySameElementType(*this,
                                   {getGrad(), getResult(), getBiasGrad()})))
    return failure();
  shapes::BiasGradShapes expected = shapes::matmulGeluGrad(
      tensorType(getGrad()).getShape(), tensorType(getWeight()).getShape(),
      tensorType(getPreactivation()).getShape(), getTransposeRhs());
  if (!expected.ok())
    return emitOpError(expected.error);
  if (failed(verifyShape(*this, getResult(), expected.product, "result")))
    return failure();
  return verifyShape(*this, getBiasGrad(), expected.bias, "bias_grad");
}

// The copy lands in the host tensor it updates, never over the source.
bool OffloadOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  return result == 0 && operand == 1;
}

// Each thread reads gate, up and grad at its element before writing
// either gradient there: gate_grad may take gate's or grad's storage,
// up_grad up's or grad's.
bool SwigluGradOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  return operand == 2 || operand == result;
}

// The GEMM reads lhs and rhs throughout: only the addend's buffer, which
// it reads element by element before writing, may hold the result.
bool MatmulAddOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  return result == 0 && operand == 2;
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), tensorType(getInput()).getRank());
}

/// Checks layer norm's input against its `[D]`-shaped weight (and bias).
static LogicalResult verifyLayerNormOperands(Operation *op, Value input,
                                             ValueRange perFeature,
                                             StringRef perFeatureName,
                                             double epsilon) {
  SmallVector<Value> same{input};
  llvm::append_range(same, perFeature);
  if (failed(verifySameElementType(op, same)))
    return failure();
  RankedTensorType type = tensorType(input);
  if (type.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  for (Value value : perFeature)
    if (failed(verifyShape(op, value, {type.getShape().back()},
                           perFeatureName)))
      return failure();
  if (!(epsilon >= 0.0) || !std::isfinite(epsilon))
    return op->emitOpError("epsilon must be non-negative and finite, found ")
           << epsilon;
  return success();
}

/// The value a norm normalizes: its input, or with an addend the sum it
/// returns, checked to be what tg.add makes of the input and the addend.
static FailureOr<Value> verifyNormAddend(Operation *op, Value input,
                                         Value addend, Value sum) {
  if (!addend && !sum)
    return input;
  if (!addend || !sum) {
    op->emitOpError("has a sum result exactly when it has an addend");
    return failure();
  }
  auto inputType = tensorType(input), addendType = tensorType(addend);
  if (addendType.getShape() != inputType.getShape()) {
    op->emitOpError("addend shape ")
        << llvm::interleaved_array(addendType.getShape())
        << " must be the input's, "
        << llvm::interleaved_array(inputType.getShape());
    return failure();
  }
  SmallVector<Type> inferred;
  if (failed(inferBroadcastType(op->getLoc(), op->getName().getStringRef(),
                                {input, addend}, inferred)))
    return failure();
  Type element = getElementTypeOrSelf(inferred.front());
  if (inputType.getElementType() != addendType.getElementType() &&
      !precision::mixedOperands(precisionOf(inputType),
                                precisionOf(addendType),
                                precisionOf(element))) {
    op->emitOpError("input and addend element types do not mix, found ")
        << inputType.getElementType() << " and "
        << addendType.getElementType();
    return failure();
  }
  if (failed(verifyType(op, sum, inferred.front(), "sum")))
    return failure();
  return sum;
}

bool RmsNormOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  // The sum, element by element; the normalized result reads whole rows.
  return result == 1 && getSum() && (operand == 0 || operand == 2) &&
         getOperand(operand).getType() == (*this)->getResult(1).getType();
}

LogicalResult RmsNormOp::verify() {
  FailureOr<Value> normalized =
      verifyNormAddend(*this, getInput(), getAddend(), getSum());
  if (failed(normalized) ||
      failed(verifyLayerNormOperands(*this, *normalized, {getWeight()},
                                     "weight",
                                     getEpsilon().convertToDouble())))
    return failure();
  return verifyStoredAs(*this, getResult(), normalized->getType(), "result");
}

LogicalResult RopeOp::verify() {
  RankedTensorType type = tensorType(getInput());
  if (type.getRank() < 2)
    return emitOpError("input must have rank >= 2 ([..., T, D]), found rank ")
           << type.getRank();
  if (getBshd() && type.getRank() != 4)
    return emitOpError("bshd input must be [B, T, H, D], found rank ")
           << type.getRank();
  int64_t d = type.getShape().back();
  if (d % 2 != 0)
    return emitOpError("the head dimension must be even, found ") << d;
  RankedTensorType freq = tensorType(getInvFreq());
  if (!freq.getElementType().isF32() || freq.getRank() != 1 ||
      freq.getDimSize(0) != d / 2)
    return emitOpError("inv_freq must be tensor<")
           << d / 2 << "xf32> (D/2 frequencies), found " << freq;
  if (Value positions = getPositions()) {
    ArrayRef<int64_t> x = type.getShape();
    int64_t t = x[x.size() - (getBshd() ? 3 : 2)];
    ArrayRef<int64_t> p = tensorType(positions).getShape();
    if (x.size() < 3 || p.size() != 2 || p[0] != x[0] || p[1] != t)
      return emitOpError("positions must be [")
             << x[0] << ", " << t << "] (the input's first dimension and its "
             << "positions), found " << tensorType(positions);
  }
  return verifyType(*this, getResult(), getInput().getType(), "result");
}

bool LayerNormOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  // The sum, element by element; the normalized result reads whole rows.
  return result == 1 && getSum() && (operand == 0 || operand == 3) &&
         getOperand(operand).getType() == (*this)->getResult(1).getType();
}

LogicalResult LayerNormOp::verify() {
  FailureOr<Value> normalized =
      verifyNormAddend(*this, getInput(), getAddend(), getSum());
  if (failed(normalized) ||
      failed(verifyLayerNormOperands(*this, *normalized,
                                     {getWeight(), getBias()},
                                     "weight and bias",
                                     getEpsilon().convertToDouble())))
    return failure();
  return verifyStoredAs(*this, getResult(), normalized->getType(), "result");
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = tensorType(getTable());
  if (table.getRank() != 2)
    return emitOpError("table must have rank 2, found rank ")
           << table.getRank();
  // A 16-bit table may give f32 rows (a frozen table stored in 16 bits,
  // widened as it is read).
  Type tableElement = table.getElementType();
  Type resultElement = tensorType(getResult()).getElementType();
  if (tableElement != resultElement &&
      !(resultElement.isF32() &&
        (tableElement.isBF16() || tableElement.isF16())))
    return emitOpError("result must have the table's element type (or f32 "
                       "from a 16-bit table), found ")
           << resultElement << " from " << tableElement;
  if (std::optional<int64_t> pad = getPaddingIdx();
      pad && (*pad < 0 || *pad >= table.getDimSize(0)))
    return emitOpError("padding_idx must be a row of the table, in [0, ")
           << table.getDimSize(0) << "), found " << *pad;
  SmallVector<int64_t> expected(tensorType(getIndices()).getShape());
  expected.push_back(table.getDimSize(1));
  return verifyShape(*this, getResult(), expected, "result");
}

/// Checks an attention's row log-sum-exp `lse` (absent: nothing to check):
/// f32, the query's shape `query` without its last dimension.
static LogicalResult verifyAttentionLse(Operation *op, Value lse,
                                        ArrayRef<int64_t> query) {
  if (!lse)
    return success();
  if (!getElementTypeOrSelf(lse.getType()).isF32())
    return op->emitOpError("lse must be f32, found ") << lse.getType();
  return verifyShape(op, lse, query.drop_back(), "lse");
}

/// The query, key and value shapes of an attention whose operands are
/// `query`, `key` and `value`: theirs, or with `packed` those of the heads
/// of `query` ([B, T, Hq + 2 Hkv, D]) with `queryHeads` Hq of them first;
/// empty shapes when `packed` heads do not split so (the verifier says so).
static SmallVector<SmallVector<int64_t>, 3>
attentionHeadShapes(Value query, Value key, Value value, bool packed,
                    int64_t queryHeads) {
  if (!packed)
    return {SmallVector<int64_t>(tensorType(query).getShape()),
            SmallVector<int64_t>(tensorType(key).getShape()),
            SmallVector<int64_t>(tensorType(value).getShape())};
  shapes::Shape q, kv;
  if (!shapes::packedHeads(tensorType(query).getShape(), queryHeads, q, kv))
    return {{}, {}, {}};
  return {SmallVector<int64_t>(q.begin(), q.end()),
          SmallVector<int64_t>(kv.begin(), kv.end()),
          SmallVector<int64_t>(kv.begin(), kv.end())};
}

/// The heads of the result (or `output`) of an attention, bshd [B, T, H,
/// Dv]: Hq when its operands are packed.
static int64_t packedQueryHeads(Value result) {
  ArrayRef<int64_t> shape = tensorType(result).getShape();
  return shape.size() == 4 ? shape[2] : 0;
}

SmallVector<SmallVector<int64_t>, 3> AttentionOp::getHeadShapes() {
  return attentionHeadShapes(getQuery(), getKey(), getValue(), getPacked(),
                             packedQueryHeads(getResult()));
}

SmallVector<SmallVector<int64_t>, 3> AttentionGradOp::getHeadShapes() {
  return attentionHeadShapes(getQuery(), getKey(), getValue(), getPacked(),
                             packedQueryHeads(getOutput()));
}

/// Checks that packed operands are one bshd value whose heads split into
/// `heads` (empty when they do not; absent: nothing to check).
static LogicalResult verifyPacked(Operation *op, bool packed, bool bshd,
                                  Value query, Value key, Value value,
                                  ArrayRef<SmallVector<int64_t>> heads) {
  if (!packed)
    return success();
  if (!bshd)
    return op->emitOpError("packed query, key and value need bshd");
  if (key != query || value != query)
    return op->emitOpError("packed query, key and value must be one value");
  if (heads[0].empty())
    return op->emitOpError("packed heads must be [B, T, Hq + 2 Hkv, D] with "
                           "Hq the result's heads, found ")
           << query.getType();
  return success();
}

/// Checks attention's query, key and value, read as `heads` (their shapes,
/// or the packed value's heads), and returns the result shape (as stored:
/// [B, T, H, Dv] with `bshd`).
static FailureOr<SmallVector<int64_t>> verifyAttentionOperands(
    Operation *op, ArrayRef<SmallVector<int64_t>> heads, Value keyMask,
    bool causal, int64_t window, std::optional<double> scale, bool bshd,
    std::optional<double> softcap, bool segments, Value lse = Value()) {
  SmallVector<Value> floats(op->getOperands());
  llvm::erase(floats, keyMask);
  if (lse)
    llvm::erase(floats, lse);
  if (failed(verifySameElementType(op, floats)))
    return failure();
  // The rules read [B..., T, D] heads: a bshd operand's T and H swapped.
  shapes::Shape qView = shapes::attentionView(heads[0], bshd),
                kView = shapes::attentionView(heads[1], bshd),
                vView = shapes::attentionView(heads[2], bshd);
  ArrayRef<int64_t> q = qView, k = kView, v = vView;
  if (bshd && (q.size() != 4 || k.size() != 4 || v.size() != 4)) {
    op->emitOpError("bshd attention takes query, key and value of rank 4 "
                    "([B, T, H, D]), found ranks ")
        << q.size() << ", " << k.size() << " and " << v.size();
    return failure();
  }
  if (q.size() < 2 || q.size() != k.size() || q.size() != v.size()) {
    op->emitOpError("query, key and value must have the same rank >= 2, "
                    "found ranks ")
        << q.size() << ", " << k.size() << " and " << v.size();
    return failure();
  }
  if (k.drop_back(2) != v.drop_back(2) ||
      shapes::attentionGroup(q.drop_back(2), k.drop_back(2)) == 0) {
    op->emitOpError("query, key and value must have the same batch "
                    "dimensions (key and value may have fewer heads, the "
                    "last, dividing the query's), found ")
        << llvm::interleaved_array(q.drop_back(2)) << ", "
        << llvm::interleaved_array(k.drop_back(2)) << " and "
        << llvm::interleaved_array(v.drop_back(2));
    return failure();
  }
  if (q.back() != k.back()) {
    op->emitOpError("query and key head sizes differ: ")
        << q.back() << " and " << k.back();
    return failure();
  }
  int64_t tq = q[q.size() - 2], tk = k[k.size() - 2];
  if (tk != v[v.size() - 2]) {
    op->emitOpError("key and value sequence lengths differ: ")
        << tk << " and " << v[v.size() - 2];
    return failure();
  }
  if (causal && tq != tk) {
    op->emitOpError("causal attention needs equal query and key lengths, "
                    "found ")
        << tq << " and " << tk;
    return failure();
  }
  if (window < 0 || (window > 0 && !causal)) {
    op->emitOpError("window must be 0 (none) or positive with causal, "
                    "found ")
        << window << (causal ? "" : " without causal");
    return failure();
  }
  if (scale && !(*scale > 0.0 && std::isfinite(*scale))) {
    op->emitOpError("scale must be positive and finite, found ") << *scale;
    return failure();
  }
  if (softcap && !(*softcap > 0.0 && std::isfinite(*softcap))) {
    op->emitOpError("softcap must be positive and finite, found ") << *softcap;
    return failure();
  }
  if (keyMask) {
    // [P..., Tk] with P... a prefix of the batch dimensions.
    ArrayRef<int64_t> m = tensorType(keyMask).getShape();
    ArrayRef<int64_t> batch = q.drop_back(2);
    if (m.empty() || m.size() - 1 > batch.size() ||
        m.drop_back() != batch.take_front(m.size() - 1) || m.back() != tk) {
      op->emitOpError("key_mask must be [P..., ")
          << tk << "] with P... a prefix of the batch dimensions ["
          << llvm::interleaved(batch) << "], found ["
          << llvm::interleaved(m) << "]";
      return failure();
    }
  }
  if (segments && (!keyMask || tq != tk)) {
    if (!keyMask)
      op->emitOpError("segments needs the segment ids as key_mask");
    else
      op->emitOpError("segments needs equal query and key lengths, found ")
          << tq << " and " << tk;
    return failure();
  }
  SmallVector<int64_t> result(q.drop_back());
  result.push_back(v.back());
  if (bshd)
    std::swap(result[1], result[2]);
  return result;
}

static std::optional<double> toDouble(std::optional<APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}

LogicalResult AttentionOp::verify() {
  SmallVector<SmallVector<int64_t>, 3> heads = getHeadShapes();
  if (failed(verifyPacked(*this, getPacked(), getBshd(), getQuery(), getKey(),
                          getValue(), heads)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = verifyAttentionOperands(
      *this, heads, getKeyMask(), getCausal(), getWindow(),
      toDouble(getScale()), getBshd(), toDouble(getSoftcap()), getSegments());
  if (failed(shape) ||
      failed(verifySameElementType(*this, {getQuery(), getResult()})) ||
      failed(verifyShape(*this, getResult(), *shape, "result")))
    return failure();
  return verifyAttentionLse(*this, getLse(), heads[0]);
}

double AttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(double(tensorType(getQuery()).getShape().back()));
}

/// Checks that `targets` has the shape of `logits` without the class axis.
static LogicalResult verifyTargets(Operation *op, Value logits,
                                   Value targets) {
  ArrayRef<int64_t> shape = tensorType(logits).getShape();
  if (shape.empty())
    return op->emitOpError("logits must have rank >= 1 (the class axis last)");
  return verifyShape(op, targets, shape.drop_back(), "targets");
}

bool CrossEntropyOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  // The gradient is written row by row after the row is read.
  return result == 1 && operand == 0 && getLogitsGrad() &&
         getLogitsGrad().getType() == getLogits().getType();
}

/// Checks a cross-entropy's optional logit soft-cap.
static LogicalResult verifyLogitSoftcap(Operation *op,
                                        std::optional<APFloat> softcap) {
  if (softcap && !(softcap->convertToDouble() > 0.0 && softcap->isFinite()))
    return op->emitOpError("softcap must be positive and finite, found ")
           << softcap->convertToDouble();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyTargets(*this, getLogits(), getTargets())) ||
      failed(verifyLogitSoftcap(*this, getSoftcap())))
    return failure();
  if (bool(getGrad()) != bool(getLogitsGrad()))
    return emitOpError("has ")
           << (getGrad() ? "grad but no logits_grad result"
                         : "a logits_grad result but no grad operand");
  if (!getLogitsGrad())
    return success();
  return verifyType(*this, getLogitsGrad(), getLogits().getType(),
                    "logits_grad");
}

//===----------------------------------------------------------------------===//
// Shape ops, casts and constants
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()})))
    return failure();
  int64_t in = tensorType(getInput()).getNumElements();
  int64_t out = tensorType(getResult()).getNumElements();
  if (in != out)
    return emitOpError("element counts differ: ")
           << in << " (operand) and " << out << " (result)";
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()})))
    return failure();
  ArrayRef<int64_t> shape = tensorType(getInput()).getShape();
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<bool> seen(shape.size(), false);
  bool valid = perm.size() == shape.size();
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= int64_t(shape.size()) || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOpError("permutation ")
           << llvm::interleaved_array(perm)
           << " is not a permutation of the operand's " << shape.size()
           << " dimensions";
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(shape[p]);
  return verifyShape(*this, getResult(), expected, "result");
}

/// Checks that a box of shape `box` at `offsets` lies inside `full`.
static LogicalResult verifyBox(Operation *op, ArrayRef<int64_t> full,
                               ArrayRef<int64_t> box,
                               ArrayRef<int64_t> offsets) {
  if (box.size() != full.size() || offsets.size() != full.size())
    return op->emitOpError("offsets, slice and full shape must have the same "
                           "rank, found ")
           << offsets.size() << ", " << box.size() << " and " << full.size();
  for (size_t d = 0; d < full.size(); ++d)
    if (offsets[d] < 0 || offsets[d] > full[d] - box[d])
      return op->emitOpError("slice of size ")
             << llvm::interleaved_array(box) << " at offsets "
             << llvm::interleaved_array(offsets)
             << " does not fit in shape " << llvm::interleaved_array(full);
  return success();
}

LogicalResult SliceOp::verify() {
  if (failed(verifySameElementType(*this, {getInput(), getResult()})))
    return failure();
  return verifyBox(*this, tensorType(getInput()).getShape(),
                   tensorType(getResult()).getShape(), getOffsets());
}

/// Checks that `pieces` concatenate along `axis` to `whole`.
static LogicalResult verifyConcatenation(Operation *op, ValueRange pieces,
                                         Value whole, int64_t axis) {
  if (pieces.empty())
    return op->emitOpError("needs at least one piece");
  SmallVector<Value> all(pieces);
  all.push_back(whole);
  if (failed(verifySameElementType(op, all)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(whole).getShape();
  FailureOr<int64_t> dim = verifyAxis(op, axis, shape.size());
  if (failed(dim))
    return failure();
  int64_t total = 0;
  for (Value piece : pieces) {
    ArrayRef<int64_t> pieceShape = tensorType(piece).getShape();
    bool compatible = pieceShape.size() == shape.size();
    for (size_t d = 0; compatible && d < shape.size(); ++d)
      compatible = int64_t(d) == *dim || pieceShape[d] == shape[d];
    if (!compatible)
      return op->emitOpError("piece shape ")
             << llvm::interleaved_array(pieceShape) << " does not match "
             << llvm::interleaved_array(shape) << " outside axis " << *dim;
    total += pieceShape[*dim];
  }
  if (total != shape[*dim])
    return op->emitOpError("pieces add up to ")
           << total << " along axis " << *dim << ", expected " << shape[*dim];
  return success();
}

LogicalResult SplitOp::verify() {
  return verifyConcatenation(*this, getResults(), getInput(), getAxis());
}

LogicalResult ConcatOp::verify() {
  return verifyConcatenation(*this, getInputs(), getResult(), getAxis());
}

static LogicalResult verifyReduceOp(Operation *op, Value input, Value result,
                                    ArrayRef<int64_t> axes, bool keepDims,
                                    StringRef resultName = "result") {
  if (failed(verifySameElementType(op, {input, result})))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      verifyReductionAxes(op, tensorType(input).getShape(), axes, keepDims);
  if (failed(shape))
    return failure();
  return verifyShape(op, result, *shape, resultName);
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduceOp(*this, getInput(), getResult(), getAxes(),
                        getKeepDims());
}
LogicalResult ReduceMeanOp::verify() {
  return verifyReduceOp(*this, getInput(), getResult(), getAxes(),
                        getKeepDims());
}
LogicalResult ReduceMaxOp::verify() {
  return verifyReduceOp(*this, getInput(), getResult(), getAxes(),
                        getKeepDims());
}

LogicalResult CumsumOp::verify() {
  return verifyAxis(*this, getAxis(), tensorType(getInput()).getRank());
}

/// Checks a gather of `operand` by `index` into `gathered` along `axis`
/// (tg.gather_grad's result is the gathered operand).
static LogicalResult verifyGather(Operation *op, Value operand, Value index,
                                  Value gathered, int64_t axis) {
  if (failed(verifySameElementType(op, {operand, gathered})))
    return failure();
  std::string error = shapes::gather(tensorType(operand).getShape(),
                                     tensorType(index).getShape(),
                                     tensorType(gathered).getShape(), axis);
  return error.empty() ? success() : op->emitOpError(error);
}

LogicalResult GatherOp::verify() {
  return verifyGather(*this, getInput(), getIndex(), getResult(), getAxis());
}

LogicalResult GatherGradOp::verify() {
  // The element types are compared in operand order (grad, then result).
  if (failed(verifySameElementType(*this, {getGrad(), getResult()})))
    return failure();
  return verifyGather(*this, getResult(), getIndex(), getGrad(), getAxis());
}

LogicalResult TopKOp::verify() {
  std::string error = shapes::topK(tensorType(getInput()).getShape(),
                                   tensorType(getResult()).getShape(), getK());
  return error.empty() ? success() : emitOpError(error);
}

LogicalResult MoeRouteOp::verify() {
  std::string error = shapes::moeRoute(tensorType(getChoices()).getShape(),
                                       tensorType(getRows()).getShape(),
                                       tensorType(getPositions()).getShape(),
                                       tensorType(getOffsets()).getShape());
  return error.empty() ? success() : emitOpError(error);
}

/// The shapes of `values`.
static SmallVector<ArrayRef<int64_t>> shapesOf(ValueRange values) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value value : values)
    shapes.push_back(tensorType(value).getShape());
  return shapes;
}

LogicalResult ExpertLinearOp::verify() {
  SmallVector<Value> floats = {getInput(), getResult()};
  llvm::append_range(floats, getWeights());
  if (failed(verifySameElementType(*this, floats)))
    return failure();
  std::string error = shapes::expertLinear(
      tensorType(getInput()).getShape(), tensorType(getOffsets()).getShape(),
      shapesOf(getWeights()), tensorType(getResult()).getShape(),
      getTransposeWeight());
  return error.empty() ? success() : emitOpError(error);
}

LogicalResult ExpertLinearWeightGradOp::verify() {
  SmallVector<Value> floats = {getLhs(), getRhs()};
  llvm::append_range(floats, getResults());
  if (failed(verifySameElementType(*this, floats)))
    return failure();
  std::string error = shapes::expertOuter(
      tensorType(getLhs()).getShape(), tensorType(getRhs()).getShape(),
      tensorType(getOffsets()).getShape(), shapesOf(getResults()));
  return error.empty() ? success() : emitOpError(error);
}

/// Checks that `small` broadcasts to exactly `large`.
static LogicalResult verifyBroadcastsTo(Operation *op, Value small,
                                        Value large) {
  if (failed(verifySameElementType(op, {small, large})))
    return failure();
  ArrayRef<int64_t> from = tensorType(small).getShape();
  ArrayRef<int64_t> to = tensorType(large).getShape();
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(from, to);
  if (failed(shape) || ArrayRef<int64_t>(*shape) != to)
    return op->emitOpError("shape ")
           << llvm::interleaved_array(from) << " does not broadcast to "
           << llvm::interleaved_array(to);
  return success();
}

LogicalResult BroadcastToOp::verify() {
  return verifyBroadcastsTo(*this, getInput(), getResult());
}

LogicalResult CastOp::verify() {
  return verifyShape(*this, getResult(), tensorType(getInput()).getShape(),
                     "result");
}

/// Whether converting `from` to `to` loses nothing (a float widening).
static bool isExactWidening(Type from, Type to) {
  return (from.isF16() || from.isBF16()) && to.isF32();
}

LogicalResult MultiCastOp::verify() {
  if (getInputs().empty() || getInputs().size() != getResults().size())
    return emitOpError("expects as many results as operands, at least one, "
                       "found ")
           << getInputs().size() << " operands and " << getResults().size()
           << " results";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), getResults())))
    if (tensorType(std::get<0>(pair)).getShape() !=
        tensorType(std::get<1>(pair)).getShape())
      return emitOpError("result ")
             << i << " must have the shape of operand " << i << ", found "
             << std::get<1>(pair).getType() << " for "
             << std::get<0>(pair).getType();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Type original = getElementTypeOrSelf(inner.getInput().getType());
    Type middle = getElementTypeOrSelf(inner.getType());
    if (inner.getInput().getType() == getType() &&
        isExactWidening(original, middle))
      return inner.getInput();
  }
  return {};
}

LogicalResult ConstantOp::verify() {
  return verifyType(*this, getResult(), getValue().getType(), "result");
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange, DictionaryAttr,
    OpaqueProperties properties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  auto *props = properties.as<Properties *>();
  if (!props || !props->value)
    return failure();
  inferredReturnTypes.push_back(props->value.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult SumToOp::verify() {
  return verifyBroadcastsTo(*this, getResult(), getInput());
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), tensorType(getOutput()).getRank());
}

/// A fused gradient op's `output_mask`: one entry per result, at least one
/// computed, and no use of a result that is not.
static LogicalResult verifyOutputMask(Operation *op,
                                      std::optional<ArrayRef<bool>> mask) {
  if (!mask)
    return success();
  if (mask->size() != op->getNumResults())
    return op->emitOpError("output_mask has ")
           << mask->size() << " entries for " << op->getNumResults()
           << " results";
  if (llvm::none_of(*mask, [](bool computed) { return computed; }))
    return op->emitOpError("output_mask computes no result");
  for (auto [result, computed] : llvm::zip(op->getResults(), *mask))
    if (!computed && !result.use_empty())
      return op->emitOpError("result #")
             << result.getResultNumber()
             << " is not computed (output_mask) but has uses";
  return success();
}

bool tgc::tg::computesResult(Operation *op, unsigned index) {
  auto mask = op->getAttrOfType<DenseBoolArrayAttr>(kOutputMaskAttr);
  return !mask || index >= mask.size() || mask[index];
}

/// A norm gradient's optional 16-bit copy of its f32 input gradient.
static LogicalResult verifyRoundedInputGrad(Operation *op, Value inputGrad,
                                            Value rounded) {
  if (!rounded)
    return success();
  auto type = cast<RankedTensorType>(inputGrad.getType());
  auto roundedType = cast<RankedTensorType>(rounded.getType());
  if (!type.getElementType().isF32() ||
      roundedType.getShape() != type.getShape() ||
      !(roundedType.getElementType().isF16() ||
        roundedType.getElementType().isBF16()))
    return op->emitOpError("rounded_input_grad must be an f32 input_grad's "
                           "shape in f16 or bf16, found ")
           << roundedType << " for " << type;
  if (!computesResult(op, 0))
    return op->emitOpError("rounded_input_grad needs input_grad computed");
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyOutputMask(*this, getOutputMask())) ||
      failed(verifyRoundedInputGrad(*this, getInputGrad(),
                                    getRoundedInputGrad())))
    return failure();
  if (failed(verifyLayerNormOperands(*this, getInput(), {getWeight()},
                                     "weight",
                                     getEpsilon().convertToDouble())) ||
      failed(verifyStoredAs(*this, getGrad(), getInput().getType(),
                            "grad")) ||
      failed(verifyType(*this, getInputGrad(), getInput().getType(),
                        "input_grad")) ||
      (getAddend() && failed(verifyType(*this, getAddend(),
                                        getInput().getType(), "addend"))) ||
      failed(verifyType(*this, getWeightGrad(), getWeight().getType(),
                        "weight_grad")))
    return failure();
  return verifyType(*this, getBiasGrad(), getWeight().getType(), "bias_grad");
}

LogicalResult RmsNormGradOp::verify() {
  if (failed(verifyOutputMask(*this, getOutputMask())) ||
      failed(verifyRoundedInputGrad(*this, getInputGrad(),
                                    getRoundedInputGrad())))
    return failure();
  if (failed(verifyLayerNormOperands(*this, getInput(), {getWeight()},
                                     "weight",
                                     getEpsilon().convertToDouble())) ||
      failed(verifyStoredAs(*this, getGrad(), getInput().getType(),
                            "grad")) ||
      failed(verifyType(*this, getInputGrad(), getInput().getType(),
                        "input_grad")) ||
      (getAddend() && failed(verifyType(*this, getAddend(),
                                        getInput().getType(), "addend"))))
    return failure();
  return verifyType(*this, getWeightGrad(), getWeight().getType(),
                    "weight_grad");
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = tensorType(getResult());
  if (table.getRank() != 2)
    return emitOpError("result (the table gradient) must have rank 2, found "
                       "rank ")
           << table.getRank();
  if (failed(verifySameElementType(*this, {getGrad(), getResult()})))
    return failure();
  if (std::optional<int64_t> pad = getPaddingIdx();
      pad && (*pad < 0 || *pad >= table.getDimSize(0)))
    return emitOpError("padding_idx must be a row of the table, in [0, ")
           << table.getDimSize(0) << "), found " << *pad;
  if (getAddend() &&
      failed(verifyStoredAs(*this, getAddend(), table, "addend")))
    return failure();
  SmallVector<int64_t> expected(tensorType(getIndices()).getShape());
  expected.push_back(table.getDimSize(1));
  return verifyShape(*this, getGrad(), expected, "grad");
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyOutputMask(*this, getOutputMask())))
    return failure();
  SmallVector<SmallVector<int64_t>, 3> heads = getHeadShapes();
  if (failed(verifyPacked(*this, getPacked(), getBshd(), getQuery(), getKey(),
                          getValue(), heads)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      verifyAttentionOperands(*this, heads, getKeyMask(), getCausal(),
                              getWindow(), toDouble(getScale()), getBshd(),
                              toDouble(getSoftcap()), getSegments(), getLse());
  if (failed(shape) ||
      failed(verifyShape(*this, getOutput(), *shape, "output")) ||
      failed(verifyType(*this, getGrad(), getOutput().getType(), "grad")) ||
      failed(verifyType(*this, getQueryGrad(), getQuery().getType(),
                        "query_grad")) ||
      failed(verifyAttentionLse(*this, getLse(), heads[0])))
    return failure();
  if (getPacked()) {
    // query_grad holds the three gradients; the others are not computed.
    std::optional<ArrayRef<bool>> mask = getOutputMask();
    if (!mask || !(*mask)[0] || (*mask)[1] || (*mask)[2])
      return emitOpError("with packed operands computes query_grad only "
                         "(output_mask [true, false, false])");
  }
  Type element = getElementTypeOrSelf(getQuery().getType());
  if (failed(verifyType(*this, getKeyGrad(),
                        RankedTensorType::get(heads[1], element), "key_grad")))
    return failure();
  return verifyType(*this, getValueGrad(),
                    RankedTensorType::get(heads[2], element), "value_grad");
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyTargets(*this, getLogits(), getTargets())) ||
      failed(verifyLogitSoftcap(*this, getSoftcap())))
    return failure();
  return verifyType(*this, getResult(), getLogits().getType(), "result");
}

LogicalResult ReduceMaxGradOp::verify() {
  if (failed(verifyReduceOp(*this, getInput(), getOutput(), getAxes(),
                            getKeepDims(), "output")) ||
      failed(verifyType(*this, getGrad(), getOutput().getType(), "grad")))
    return failure();
  return verifyType(*this, getResult(), getInput().getType(), "result");
}

LogicalResult SliceGradOp::verify() {
  if (failed(verifySameElementType(*this, {getGrad(), getResult()})))
    return failure();
  return verifyBox(*this, tensorType(getResult()).getShape(),
                   tensorType(getGrad()).getShape(), getOffsets());
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// Checks that a hyper-parameter lies in [low, high) (or [low, high]).
static LogicalResult verifyRange(Operation *op, StringRef name, double value,
                                 double low, double high,
                                 bool highInclusive = false) {
  bool inside = value >= low && (highInclusive ? value <= high : value < high);
  if (!inside)
    return op->emitOpError() << name << " must be in [" << low << ", " << high
                             << (highInclusive ? "]" : ")") << ", found "
                             << value;
  return success();
}

LogicalResult SGDUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  double inf = std::numeric_limits<double>::infinity();
  if (failed(verifyRange(*this, "momentum", momentum, 0.0, inf)) ||
      failed(verifyRange(*this, "dampening", dampening, 0.0, 1.0, true)) ||
      failed(verifyRange(*this, "weight_decay",
                         getWeightDecay().convertToDouble(), 0.0, inf)))
    return failure();
  if (getNesterov() && (momentum <= 0.0 || dampening != 0.0))
    return emitOpError("nesterov momentum needs momentum > 0 and dampening "
                       "0, found momentum ")
           << momentum << " and dampening " << dampening;
  bool hasBuffer = bool(getMomentumBuffer());
  if (hasBuffer != (momentum != 0.0))
    return emitOpError(hasBuffer
                           ? "has a momentum buffer but momentum is 0"
                           : "needs a momentum buffer when momentum is "
                             "non-zero");
  if (hasBuffer != bool(getNewMomentumBuffer()))
    return emitOpError("must return an updated momentum buffer exactly when "
                       "it takes one");
  ArrayRef<int64_t> shape = tensorType(getParam()).getShape();
  if (failed(verifyShape(*this, getGrad(), shape, "grad")) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")))
    return failure();
  if (hasBuffer &&
      (failed(verifyShape(*this, getMomentumBuffer(), shape,
                          "momentum_buffer")) ||
       failed(verifyType(*this, getNewMomentumBuffer(),
                         getMomentumBuffer().getType(),
                         "new_momentum_buffer"))))
    return failure();
  return success();
}

/// The ranges of AdamW's hyper-parameters (f32 and 8-bit updates).
template <typename AdamWOp>
static LogicalResult verifyAdamWAttributes(AdamWOp op) {
  double inf = std::numeric_limits<double>::infinity();
  if (failed(verifyRange(op, "beta1", op.getBeta1().convertToDouble(), 0.0,
                         1.0)) ||
      failed(verifyRange(op, "beta2", op.getBeta2().convertToDouble(), 0.0,
                         1.0)) ||
      failed(verifyRange(op, "eps", op.getEps().convertToDouble(), 0.0,
                         inf)))
    return failure();
  if (op.getRoundingSeed() != 0 &&
      !tensorType(op.getParam()).getElementType().isBF16())
    return op.emitOpError("rounds stochastically (rounding_seed ")
           << op.getRoundingSeed() << ") a parameter of type "
           << op.getParam().getType() << "; only bf16 parameters are";
  if (op.getPart() && op.getRoundingSeed() == 0)
    return op.emitOpError("takes a part number, which only stochastic "
                          "rounding reads, with rounding_seed 0");
  return verifyRange(op, "weight_decay", op.getWeightDecay().convertToDouble(),
                     0.0, inf);
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(verifyAdamWAttributes(*this)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(getParam()).getShape();
  if (failed(verifyShape(*this, getGrad(), shape, "grad")) ||
      failed(verifyShape(*this, getExpAvg(), shape, "exp_avg")) ||
      failed(verifyShape(*this, getExpAvgSq(), shape, "exp_avg_sq")) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")) ||
      failed(verifyType(*this, getNewExpAvg(), getExpAvg().getType(),
                        "new_exp_avg")))
    return failure();
  return verifyType(*this, getNewExpAvgSq(), getExpAvgSq().getType(),
                    "new_exp_avg_sq");
}

LogicalResult MultiAdamWUpdateOp::verify() {
  double inf = std::numeric_limits<double>::infinity();
  if (failed(verifyRange(*this, "beta1", getBeta1().convertToDouble(), 0.0,
                         1.0)) ||
      failed(verifyRange(*this, "beta2", getBeta2().convertToDouble(), 0.0,
                         1.0)) ||
      failed(verifyRange(*this, "eps", getEps().convertToDouble(), 0.0,
                         inf)) ||
      failed(verifyRange(*this, "weight_decay",
                         getWeightDecay().convertToDouble(), 0.0, inf)))
    return failure();
  size_t n = getParams().size();
  if (n == 0)
    return emitOpError("updates no parameter");
  if (getGrads().size() != n || getExpAvgs().size() != n ||
      getExpAvgSqs().size() != n)
    return emitOpError("needs as many grads, exp_avgs and exp_avg_sqs as "
                       "params (")
           << n << "), found " << getGrads().size() << ", "
           << getExpAvgs().size() << " and " << getExpAvgSqs().size();
  if (getResults().size() != 3 * n)
    return emitOpError("has ") << getResults().size()
                               << " results; 3 x " << n
                               << " params expected (the new params, "
                                  "exp_avgs and exp_avg_sqs)";
  for (size_t i = 0; i < n; ++i) {
    Value param = getParams()[i];
    ArrayRef<int64_t> shape = tensorType(param).getShape();
    std::string at = " #" + std::to_string(i);
    if (failed(verifyShape(*this, getGrads()[i], shape, ("grad" + at).c_str())) ||
        failed(verifyShape(*this, getExpAvgs()[i], shape,
                           ("exp_avg" + at).c_str())) ||
        failed(verifyShape(*this, getExpAvgSqs()[i], shape,
                           ("exp_avg_sq" + at).c_str())) ||
        failed(verifyType(*this, getResults()[i], param.getType(),
                          ("new_param" + at).c_str())) ||
        failed(verifyType(*this, getResults()[n + i],
                          getExpAvgs()[i].getType(),
                          ("new_exp_avg" + at).c_str())) ||
        failed(verifyType(*this, getResults()[2 * n + i],
                          getExpAvgSqs()[i].getType(),
                          ("new_exp_avg_sq" + at).c_str())))
      return failure();
  }
  return success();
}

LogicalResult AdafactorUpdateOp::verify() {
  double inf = std::numeric_limits<double>::infinity();
  double decay = getDecayRate().convertToDouble();
  if (!(decay < 0.0) || !std::isfinite(decay))
    return emitOpError("decay_rate must be negative, found ") << decay;
  if (failed(verifyRange(*this, "clip_threshold",
                         getClipThreshold().convertToDouble(), 0.0, inf)) ||
      failed(verifyRange(*this, "eps1", getEps1().convertToDouble(), 0.0,
                         inf)) ||
      failed(verifyRange(*this, "eps2", getEps2().convertToDouble(), 0.0,
                         inf)) ||
      failed(verifyRange(*this, "weight_decay",
                         getWeightDecay().convertToDouble(), 0.0, inf)))
    return failure();
  if (getClipThreshold().convertToDouble() == 0.0)
    return emitOpError("clip_threshold must be positive");
  auto type = tensorType(getParam());
  ArrayRef<int64_t> shape = type.getShape();
  if (failed(verifyShape(*this, getGrad(), shape, "grad")) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")))
    return failure();
  SmallVector<SmallVector<int64_t>> expected;
  if (shape.size() >= 2) {
    expected.emplace_back(shape.drop_back());
    SmallVector<int64_t> col(shape.drop_back(2));
    col.push_back(shape.back());
    expected.push_back(col);
  } else {
    expected.emplace_back(shape);
  }
  if (getState().size() != expected.size())
    return emitOpError("a parameter of rank ")
           << shape.size() << " has " << expected.size()
           << (expected.size() == 2 ? " state tensors (row and column "
                                      "second moments)"
                                    : " state tensor (the second moment)")
           << ", found " << getState().size();
  if (getNewState().size() != getState().size())
    return emitOpError("must return one new state tensor per state operand");
  for (auto [i, state] : llvm::enumerate(getState())) {
    if (failed(verifyShape(*this, state, expected[i], "state")) ||
        failed(verifyType(*this, getNewState()[i], state.getType(),
                          "new state")))
      return failure();
    if (getElementTypeOrSelf(state.getType()) !=
        Float32Type::get(getContext()))
      return emitOpError("Adafactor state must be f32, found ")
             << state.getType();
  }
  return success();
}

/// Checks the block size, the absmax vector (one f32 per block of the
/// parameter) and the 256-entry maps of an 8-bit update.
/// With `bits` 4, the codes are packed two a byte into a 1-D tensor, the
/// maps have 16 entries and blocks are even.
static LogicalResult verifyQuantizedState(Operation *op, Value param,
                                          int64_t blockSize,
                                          ArrayRef<std::pair<Value, Value>>
                                              codesAndAbsmax,
                                          ArrayRef<Value> maps,
                                          int bits = 8) {
  int64_t smallest = bits == 4 ? 2 : 1;
  if (blockSize < smallest || !llvm::isPowerOf2_64(uint64_t(blockSize)) ||
      blockSize > kMaxQuantBlockSize)
    return op->emitOpError("block_size must be a power of two in [")
           << smallest << ", " << kMaxQuantBlockSize << "], found "
           << blockSize;
  auto type = tensorType(param);
  int64_t count = type.getNumElements();
  int64_t blocks = (count + blockSize - 1) / blockSize;
  for (auto [codes, absmax] : codesAndAbsmax) {
    if (bits == 8 &&
        failed(verifyShape(op, codes, type.getShape(), "quantized state")))
      return failure();
    if (bits == 4 && failed(verifyShape(op, codes, {(count + 1) / 2},
                                        "packed 4-bit state")))
      return failure();
    if (tensorType(absmax).getDimSize(0) != blocks)
      return op->emitOpError("an absmax must hold one value per block of ")
             << blockSize << " elements: " << blocks << " for " << count
             << " elements, found " << tensorType(absmax).getDimSize(0);
  }
  int64_t entries = bits == 4 ? kQuant4MapSize : kQuantMapSize;
  for (Value map : maps)
    if (tensorType(map).getDimSize(0) != entries)
      return op->emitOpError("a quantization map must have ")
             << entries << " entries, found " << tensorType(map).getDimSize(0);
  return success();
}

LogicalResult AdamW8bitUpdateOp::verify() {
  if (failed(verifyAdamWAttributes(*this)))
    return failure();
  if (failed(verifyShape(*this, getGrad(), tensorType(getParam()).getShape(),
                         "grad")) ||
      failed(verifyQuantizedState(
          *this, getParam(), getBlockSize(),
          {{getExpAvg(), getExpAvgAbsmax()},
           {getExpAvgSq(), getExpAvgSqAbsmax()}},
          {getMapSigned(), getMapUnsigned()})) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")) ||
      failed(verifyType(*this, getNewExpAvg(), getExpAvg().getType(),
                        "new_exp_avg")) ||
      failed(verifyType(*this, getNewExpAvgAbsmax(),
                        getExpAvgAbsmax().getType(), "new_exp_avg_absmax")) ||
      failed(verifyType(*this, getNewExpAvgSq(), getExpAvgSq().getType(),
                        "new_exp_avg_sq")))
    return failure();
  return verifyType(*this, getNewExpAvgSqAbsmax(),
                    getExpAvgSqAbsmax().getType(), "new_exp_avg_sq_absmax");
}

LogicalResult AdamW4bitUpdateOp::verify() {
  if (failed(verifyAdamWAttributes(*this)))
    return failure();
  if (failed(verifyShape(*this, getGrad(), tensorType(getParam()).getShape(),
                         "grad")) ||
      failed(verifyQuantizedState(
          *this, getParam(), getBlockSize(),
          {{getExpAvg(), getExpAvgScale()},
           {getExpAvgSq(), getExpAvgSqScale()}},
          {getMapSigned(), getMapUnsigned()}, /*bits=*/4)) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")) ||
      failed(verifyType(*this, getNewExpAvg(), getExpAvg().getType(),
                        "new_exp_avg")) ||
      failed(verifyType(*this, getNewExpAvgScale(), getExpAvgScale().getType(),
                        "new_exp_avg_scale")) ||
      failed(verifyType(*this, getNewExpAvgSq(), getExpAvgSq().getType(),
                        "new_exp_avg_sq")))
    return failure();
  return verifyType(*this, getNewExpAvgSqScale(), getExpAvgSqScale().getType(),
                    "new_exp_avg_sq_scale");
}

LogicalResult SGD8bitUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  double inf = std::numeric_limits<double>::infinity();
  if (failed(verifyRange(*this, "dampening", dampening, 0.0, 1.0, true)) ||
      failed(verifyRange(*this, "weight_decay",
                         getWeightDecay().convertToDouble(), 0.0, inf)))
    return failure();
  if (!(momentum > 0.0) || !std::isfinite(momentum))
    return emitOpError("momentum must be > 0 (8-bit state is the momentum "
                       "buffer), found ")
           << momentum;
  if (getNesterov() && dampening != 0.0)
    return emitOpError("nesterov momentum needs dampening 0, found ")
           << dampening;
  if (failed(verifyShape(*this, getGrad(), tensorType(getParam()).getShape(),
                         "grad")) ||
      failed(verifyQuantizedState(*this, getParam(), getBlockSize(),
                                  {{getMomentumBuffer(), getMomentumAbsmax()}},
                                  {getMap()})) ||
      failed(verifyType(*this, getNewParam(), getParam().getType(),
                        "new_param")) ||
      failed(verifyType(*this, getNewMomentumBuffer(),
                        getMomentumBuffer().getType(),
                        "new_momentum_buffer")))
    return failure();
  return verifyType(*this, getNewMomentumAbsmax(),
                    getMomentumAbsmax().getType(), "new_momentum_absmax");
}

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

LogicalResult UnscaleOp::verify() {
  return verifyShape(*this, getResult(), tensorType(getGrad()).getShape(),
                     "result");
}

LogicalResult AllFiniteOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return success();
}

LogicalResult UpdateLossScaleOp::verify() {
  double growth = getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  if (!(growth > 1.0) || !std::isfinite(growth))
    return emitOpError("growth_factor must be > 1, found ") << growth;
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("backoff_factor must be in (0, 1), found ") << backoff;
  if (getGrowthInterval() < 1)
    return emitOpError("growth_interval must be >= 1, found ")
           << getGrowthInterval();
  return success();
}

//===----------------------------------------------------------------------===//
// In-place updates (InPlaceOpInterface)
//===----------------------------------------------------------------------===//

// Each updated tensor is written over the operand it replaces; the kernels
// read an element of every operand before writing that element.
bool SGDUpdateOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  if (result == 0)
    return operand == 0;
  // The momentum buffer operand (ODS operand group 4).
  return result == 1 && getMomentumBuffer() &&
         operand == getODSOperandIndexAndLength(4).first;
}

bool AdamWUpdateOp::canReuseOperandBuffer(unsigned result, unsigned operand) {
  static const unsigned tied[] = {0, 2, 3}; // param, exp_avg, exp_avg_sq
  return result < 3 && operand == tied[result];
}

// New parameter i takes params[i] (operand i); new moments i take
// exp_avgs[i] and exp_avg_sqs[i] (operands 2N + i and 3N + i).
bool MultiAdamWUpdateOp::canReuseOperandBuffer(unsigned result,
                                               unsigned operand) {
  unsigned n = unsigned(getParams().size());
  if (result >= 3 * n)
    return false;
  return operand == (result < n ? result : result + n);
}

bool AdafactorUpdateOp::canReuseOperandBuffer(unsigned result,
                                              unsigned operand) {
  if (result == 0)
    return operand == 0;
  // State k (ODS operand group 2) becomes result 1 + k.
  auto [first, count] = getODSOperandIndexAndLength(2);
  return result - 1 < count && operand == first + (result - 1);
}

bool AdamW8bitUpdateOp::canReuseOperandBuffer(unsigned result,
                                              unsigned operand) {
  // param, exp_avg and its absmax, exp_avg_sq and its absmax.
  static const unsigned tied[] = {0, 2, 3, 4, 5};
  return result < 5 && operand == tied[result];
}

bool AdamW4bitUpdateOp::canReuseOperandBuffer(unsigned result,
                                              unsigned operand) {
  // param, exp_avg and its scale, exp_avg_sq and its scale.
  static const unsigned tied[] = {0, 2, 3, 4, 5};
  return result < 5 && operand == tied[result];
}

bool SGD8bitUpdateOp::canReuseOperandBuffer(unsigned result,
                                            unsigned operand) {
  static const unsigned tied[] = {0, 2, 3}; // param, codes, absmax
  return result < 3 && operand == tied[result];
}

bool UpdateLossScaleOp::canReuseOperandBuffer(unsigned result,
                                              unsigned operand) {
  return result < 2 && operand == result; // scale, growth tracker
}


//===----------------------------------------------------------------------===//
// How optimizer updates split across ranks
//===----------------------------------------------------------------------===//

ShardLayout SGDUpdateOp::getOperandShardLayout(unsigned operand) {
  Value value = getOperand(operand);
  return value == getParam() || value == getGrad() ||
                 value == getMomentumBuffer()
             ? ShardLayout::PerElement
             : ShardLayout::Replicated;
}

ShardLayout AdamWUpdateOp::getOperandShardLayout(unsigned operand) {
  return operand < 4 ? ShardLayout::PerElement : ShardLayout::Replicated;
}

// Adafactor's factored second moment is per row and per column: a run of
// elements does not own a slice of it.
int64_t AdafactorUpdateOp::getShardGranule() { return 0; }
ShardLayout AdafactorUpdateOp::getOperandShardLayout(unsigned operand) {
  return ShardLayout::Replicated;
}

// Blockwise state splits at block boundaries: a shard that starts at a
// multiple of the block size holds whole blocks and their absmax values.
int64_t AdamW8bitUpdateOp::getShardGranule() { return getBlockSize(); }
ShardLayout AdamW8bitUpdateOp::getOperandShardLayout(unsigned operand) {
  // param, grad, exp_avg, its absmax, exp_avg_sq, its absmax; then the
  // maps and scalars.
  static const ShardLayout layout[] = {
      ShardLayout::PerElement, ShardLayout::PerElement,
      ShardLayout::PerElement, ShardLayout::PerBlock,
      ShardLayout::PerElement, ShardLayout::PerBlock};
  return operand < 6 ? layout[operand] : ShardLayout::Replicated;
}

// Blocks are even, so a shard at a block boundary starts at a byte of the
// packed codes.
int64_t AdamW4bitUpdateOp::getShardGranule() { return getBlockSize(); }
ShardLayout AdamW4bitUpdateOp::getOperandShardLayout(unsigned operand) {
  static const ShardLayout layout[] = {
      ShardLayout::PerElement,     ShardLayout::PerElement,
      ShardLayout::PerElementPair, ShardLayout::PerBlock,
      ShardLayout::PerElementPair, ShardLayout::PerBlock};
  return operand < 6 ? layout[operand] : ShardLayout::Replicated;
}

int64_t SGD8bitUpdateOp::getShardGranule() { return getBlockSize(); }
ShardLayout SGD8bitUpdateOp::getOperandShardLayout(unsigned operand) {
  static const ShardLayout layout[] = {
      ShardLayout::PerElement, ShardLayout::PerElement,
      ShardLayout::PerElement, ShardLayout::PerBlock};
  return operand < 4 ? layout[operand] : ShardLayout::Replicated;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static LogicalResult verifyWorldSize(Operation *op, int64_t worldSize) {
  if (worldSize < 1)
    return op->emitOpError("needs a world size of at least 1, found ")
           << worldSize;
  auto stride = op->getAttrOfType<IntegerAttr>("rank_stride");
  if (stride && stride.getInt() < 1)
    return op->emitOpError("needs a rank stride of at least 1, found ")
           << stride.getInt();
  return success();
}

/// `whole` is `parts` with its leading dimension `worldSize` times larger:
/// what reduce_scatter, all_gather and shard divide or multiply.
static LogicalResult verifyLeadingSplit(Operation *op, RankedTensorType whole,
                                        RankedTensorType part,
                                        int64_t worldSize) {
  if (failed(verifyWorldSize(op, worldSize)))
    return failure();
  if (whole.getElementType() != part.getElementType())
    return op->emitOpError("operand and result element types differ");
  if (whole.getRank() == 0 || whole.getRank() != part.getRank() ||
      whole.getShape().drop_front() != part.getShape().drop_front())
    return op->emitOpError("operand and result must have the same rank "
                           "(at least 1) and agree after the leading "
                           "dimension, found ")
           << whole << " and " << part;
  if (whole.getDimSize(0) % worldSize != 0)
    return op->emitOpError("leading dimension ")
           << whole.getDimSize(0) << " is not divisible by the world size "
           << worldSize << " (pad it to a multiple first)";
  if (part.getDimSize(0) * worldSize != whole.getDimSize(0))
    return op->emitOpError("leading dimension of ")
           << part << " must be " << whole.getDimSize(0) << " / " << worldSize
           << " = " << whole.getDimSize(0) / worldSize;
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyWorldSize(*this, getWorldSize());
}

LogicalResult ReduceScatterOp::verify() {
  return verifyLeadingSplit(*this, getInput().getType(),
                            getResult().getType(), getWorldSize());
}

LogicalResult AllGatherOp::verify() {
  return verifyLeadingSplit(*this, getResult().getType(),
                            getInput().getType(), getWorldSize());
}

LogicalResult ShardOp::verify() {
  return verifyLeadingSplit(*this, getInput().getType(),
                            getResult().getType(), getWorldSize());
}

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.cpp.inc"
