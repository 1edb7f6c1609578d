//===- TGCost.cpp - cost of tg ops ----------------------------------------===//
//
// Implements CostOpInterface for every tg op. FLOP counts follow the
// convention of the interface's description: a multiply-add is two FLOPs,
// other arithmetic, transcendental functions, comparisons and selects one
// each, data movement none. The per-element counts below are those of a
// reference kernel that makes one pass with its intermediate values in
// registers; they are estimates for the planners, not measurements.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "tgc/Support/FusedAttention.h"
#include "tgc/Support/ShapeRules.h"
#include "tgc/Support/GemmBatch.h"
#include "tgc/Support/MultiTensor.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace tgc::tg;

static int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Number of independent problems in the leading `rank - 2` dimensions.
static int64_t batchCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape.drop_back(2))
    count *= d;
  return count;
}

//===----------------------------------------------------------------------===//
// Linear algebra and elementwise
//===----------------------------------------------------------------------===//

int64_t MatmulOp::getFlops() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  int64_t k = lhs[lhs.size() - (getTransposeLhs() ? 2 : 1)];
  return 2 * numElements(getResult()) * k;
}

int64_t MatmulOp::getMatmulFlops() { return getFlops(); }

// The product's; the dequantization (a lookup and a multiply an element
// of the weight, per tile of the output that reads it) is not counted.
int64_t Matmul4bitOp::getFlops() {
  int64_t k = static_cast<int64_t>(getTransposeRhs() ? getCols() : getRows());
  return 2 * numElements(getResult()) * k;
}

// On tensor cores for 16-bit inputs; the f32 kernel is a SIMT one.
int64_t Matmul4bitOp::getMatmulFlops() {
  return getElementTypeOrSelf(getInput().getType()).isF32() ? 0 : getFlops();
}

// An offload reads its source only (the destination is overwritten).
int64_t OffloadOp::getBytesRead() {
  return getTensorBytes(getSource().getType());
}

// The product and one add per output.
int64_t MatmulAddOp::getFlops() {
  return getMatmulFlops() + numElements(getResult());
}
int64_t MatmulAddOp::getMatmulFlops() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  int64_t k = lhs[lhs.size() - (getTransposeLhs() ? 2 : 1)];
  return 2 * numElements(getResult()) * k;
}

// The product, the bias (1 per output) and GELU (9, as tg.gelu).
int64_t LinearOp::getFlops() {
  return getMatmulFlops() + numElements(getResult()) * (getGelu() ? 10 : 1);
}
int64_t LinearOp::getMatmulFlops() {
  return 2 * numElements(getResult()) * shapeOf(getInput()).back();
}

// A selection pass per kept index over each row.
int64_t TopKOp::getFlops() { return numElements(getInput()) * getK(); }
// Routing counts and places integers.
int64_t MoeRouteOp::getFlops() { return 0; }
// M rows of products whatever their split between the experts. Not matrix
// FLOPs: the grouped kernels (runtime/src/cuda/Experts.cu) run on the CUDA
// cores, so the estimate costs them at the vector peak.
int64_t ExpertLinearOp::getFlops() {
  return 2 * numElements(getResult()) * shapeOf(getInput()).back();
}
int64_t ExpertLinearWeightGradOp::getFlops() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  return 2 * lhs[0] * lhs[1] * rhs[1];
}

// The product and one add per summed element.
int64_t MatmulBiasGradOp::getFlops() {
  ArrayRef<int64_t> summed = shapeOf(getBiasOfLhs() ? getLhs() : getRhs());
  return getMatmulFlops() + summed[0] * summed[1];
}
int64_t MatmulBiasGradOp::getMatmulFlops() {
  return 2 * numElements(getProduct()) * shapeOf(getLhs())[0];
}

// The product, GELU's gradient (as tg.gelu_grad: 15) and the bias sum (1)
// per element.
int64_t MatmulGeluGradOp::getFlops() {
  return getMatmulFlops() + 16 * numElements(getResult());
}
int64_t MatmulGeluGradOp::getMatmulFlops() {
  return 2 * numElements(getResult()) * shapeOf(getGrad()).back();
}

// Binary ops and the unary ops of TG_UnaryOp and TG_Activation: their FLOPs
// per element are in TGOps.td. Where: one select per element.
int64_t WhereOp::getFlops() { return numElements(getResult()); }

// x^3 (2), * 0.044715, + x, * sqrt(2/pi), tanh, + 1, * x, * 0.5.
int64_t GeluOp::getFlops() { return 9 * numElements(getResult()); }

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, attention, loss
//===----------------------------------------------------------------------===//

// max, subtract, exp, sum, divide per element.
int64_t SoftmaxOp::getFlops() { return 5 * numElements(getResult()); }
// One add per element.
int64_t CumsumOp::getFlops() { return numElements(getResult()); }

// mean, subtract, square, variance sum, normalize, scale, shift.
int64_t LayerNormOp::getFlops() { return 7 * numElements(getResult()); }
// Square-accumulate (2), normalize and scale (2).
int64_t RmsNormOp::getFlops() { return 4 * numElements(getResult()); }
// Two products and a sum per element (the angles are per position).
int64_t RopeOp::getFlops() { return 3 * numElements(getResult()); }

int64_t EmbeddingOp::getFlops() { return 0; }

// Reads the indices and only the table rows they select.
int64_t EmbeddingOp::getBytesRead() {
  return getTensorBytes(getIndices().getType()) +
         getTensorBytes(getResult().getType());
}

/// sum over i in [0, n) of min(i + 1, c).
static int64_t clippedTriangle(int64_t n, int64_t c) {
  if (n <= c)
    return n * (n + 1) / 2;
  return c * (c + 1) / 2 + (n - c) * c;
}

namespace {
/// An attention's sizes in the [B..., T, D] order of its rules (a bshd
/// operand's T and H swapped back).
struct AttentionSizes {
  int64_t heads, kvHeads; // query heads and key/value heads, batch included
  int64_t tq, tk, d, dv;
  unsigned bits; // of the operands' element type
  bool bshd;
  bool causal;
  int64_t window;
  bool softcap; // the scores soft-capped
};
} // namespace

template <typename OpT> static AttentionSizes attentionSizes(OpT op) {
  bool bshd = op.getBshd();
  SmallVector<SmallVector<int64_t>, 3> heads = op.getHeadShapes();
  tgc::shapes::Shape q = tgc::shapes::attentionView(heads[0], bshd);
  tgc::shapes::Shape k = tgc::shapes::attentionView(heads[1], bshd);
  AttentionSizes sizes;
  sizes.heads = batchCount(q);
  sizes.kvHeads = batchCount(k);
  sizes.tq = q[q.size() - 2];
  sizes.tk = k[k.size() - 2];
  sizes.d = q.back();
  sizes.dv = heads[2].back();
  sizes.bits =
      getElementTypeOrSelf(op.getQuery().getType()).getIntOrFloatBitWidth();
  sizes.bshd = bshd;
  sizes.causal = op.getCausal();
  sizes.window = op.getWindow();
  sizes.softcap = op.getSoftcap().has_value();
  return sizes;
}

/// Score entries an attention computes per batch: all Tq x Tk, or, when
/// causal, the keys each query sees: j <= i, and with a window W only
/// i - W < j (the fused kernels skip the tiles outside both).
static int64_t attentionScores(const AttentionSizes &sizes) {
  int64_t tq = sizes.tq, tk = sizes.tk, window = sizes.window;
  if (!sizes.causal)
    return tq * tk;
  if (tq <= tk)
    return clippedTriangle(tq, window > 0 ? std::min(window, tk) : tk);
  // More queries than keys: row i sees keys [max(0, i - W + 1), min(i, tk - 1)].
  int64_t scores = 0;
  for (int64_t i = 0; i < tq; ++i) {
    int64_t lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
    scores += std::max<int64_t>(0, std::min(i, tk - 1) - lo + 1);
  }
  return scores;
}

// Q K^T and P V (two FLOPs per multiply-add) plus scale and softmax (6 per
// score), and a soft-cap's divide, tanh and multiply (3); a causal kernel
// skips the masked half.
int64_t AttentionOp::getFlops() {
  AttentionSizes sizes = attentionSizes(*this);
  return sizes.heads * attentionScores(sizes) *
         (2 * sizes.d + 2 * sizes.dv + 6 + (sizes.softcap ? 3 : 0));
}

//===----------------------------------------------------------------------===//
// Attention as the CUDA backend runs it
//
// 16-bit heads of a multiple of 16 up to 64 elements run the fused kernels
// (runtime/src/cuda/FlashAttention.cu; the condition is shared through
// tgc/Support/FusedAttention.h), grouped-query heads included (each query
// head reads its group's key/value head): the products on tensor cores in
// the operands' type, causal tiles above the diagonal skipped, and no
// score matrix in memory. The tiles of K and V (forward) and of Q, dO and the
// row statistics (backward) that a block reads again after the first are
// taken to come from the L2 cache (a head's K and V are 256 KiB at
// T=1024, d=64), so the memory traffic is the operands and results once
// plus the backward pass's f32 query-gradient accumulator and statistics.
//
// Every other attention runs cuBLASLt GEMMs in f32 over every head's full
// Tq x Tk score matrix, masked or not, materialised in scratch memory, on
// f32 copies of 16-bit operands; a bshd one on [B, H, T, D] copies of its
// operands, its results transposed back (the fused kernels read and write
// bshd heads in place).
//===----------------------------------------------------------------------===//

/// Whether the CUDA backend runs this attention with the fused kernels:
/// 16-bit heads the kernels take, not soft-capped.
static bool runsFused(const AttentionSizes &sizes) {
  return !sizes.softcap &&
         tgc::runsFusedAttention(sizes.bits, sizes.d, sizes.dv);
}

/// Score entries the unfused CUDA kernels compute per batch: all Tq x Tk.
static int64_t computedScores(const AttentionSizes &sizes) {
  return sizes.tq * sizes.tk;
}

/// Bytes the unfused kernels move transposing a bshd attention's `operands`
/// into [B, H, T, D] copies and its `results` back: each written and read.
static int64_t bshdCopyBytes(const AttentionSizes &sizes,
                             ArrayRef<Value> operands,
                             ArrayRef<Value> results) {
  if (!sizes.bshd)
    return 0;
  int64_t bytes = 0;
  for (ArrayRef<Value> values : {operands, results})
    for (Value value : values)
      bytes += 2 * getTensorBytes(value.getType());
  return bytes;
}

/// Scratch traffic of running on f32 copies of 16-bit `operands` and
/// rounding f32 `results` into 16 bits: each copy is written and read
/// again (8 bytes per element).
static int64_t widenedCopyBytes(ValueRange operands, ValueRange results) {
  int64_t elements = 0;
  for (Value value : operands)
    if (!getElementTypeOrSelf(value.getType()).isF32())
      elements += numElements(value);
  for (Value value : results)
    if (!getElementTypeOrSelf(value.getType()).isF32())
      elements += numElements(value);
  return 8 * elements;
}

/// Whether `grad` computes its gradient of operand `index`: as its output
/// mask says, or all three with packed operands (into result 0).
static bool computesGrad(AttentionGradOp grad, unsigned index) {
  return grad.getPacked() || computesResult(grad, index);
}

/// Bytes an attention reads from `operands`: each operand's, except that
/// packed query, key and value are one tensor, read once.
static int64_t attentionBytesRead(OperandRange operands, bool packed) {
  int64_t bytes = 0;
  for (auto [index, operand] : llvm::enumerate(operands))
    if (!packed || index == 0 || index > 2)
      bytes += getTensorBytes(operand.getType());
  return bytes;
}

int64_t AttentionOp::getBytesRead() {
  return attentionBytesRead(getOperation()->getOperands(), getPacked());
}

int64_t AttentionGradOp::getBytesRead() {
  return attentionBytesRead(getOperation()->getOperands(), getPacked());
}

// Only the results the output mask computes are written.
int64_t AttentionGradOp::getBytesWritten() {
  int64_t bytes = 0;
  for (OpResult result : getOperation()->getResults())
    if (computesResult(*this, result.getResultNumber()))
      bytes += getTensorBytes(result.getType());
  return bytes;
}

int64_t AttentionOp::getMatmulFlops() {
  AttentionSizes sizes = attentionSizes(*this);
  int64_t scores =
      runsFused(sizes) ? attentionScores(sizes) : computedScores(sizes);
  return sizes.heads * scores * (2 * sizes.d + 2 * sizes.dv);
}

Type AttentionOp::getMatmulType() {
  if (runsFused(attentionSizes(*this)))
    return getElementTypeOrSelf(getQuery().getType());
  return Float32Type::get(getContext());
}

// Unfused: S is written by the GEMM, read and written by the softmax and
// read by the P V GEMM, 16 bytes per f32 score.
int64_t AttentionOp::getScratchBytes() {
  AttentionSizes sizes = attentionSizes(*this);
  if (runsFused(sizes))
    return 0;
  SmallVector<Value> operands = {getQuery(), getKey(), getValue()};
  SmallVector<Value> results = {getResult()};
  return 16 * sizes.heads * computedScores(sizes) +
         widenedCopyBytes(operands, results) +
         bshdCopyBytes(sizes, operands, results);
}

// Fused: a forward pass that writes only the row log-sum-exp (S; not when
// the forward pass kept it, `lse`), then S again, dP, and dV, dK (always
// computed), dQ (when asked for). Unfused: S, dV, and dP, dQ, dK as the
// output mask asks.
int64_t AttentionGradOp::getMatmulFlops() {
  AttentionSizes sizes = attentionSizes(*this);
  int64_t d = sizes.d, dv = sizes.dv;
  bool query = computesGrad(*this, 0), key = computesGrad(*this, 1);
  int64_t batches = sizes.heads;
  if (runsFused(sizes))
    return batches * attentionScores(sizes) *
           ((getLse() ? 0 : 2 * d) + 2 * d + 2 * dv + 2 * dv + 2 * d +
            (query ? 2 * d : 0));
  int64_t perScore = 2 * d; // S = Q K^T
  if (computesGrad(*this, 2))
    perScore += 2 * dv; // dV = P^T dO
  if (query || key)
    perScore += 2 * dv + (query ? 2 * d : 0) + (key ? 2 * d : 0);
  return batches * computedScores(sizes) * perScore;
}

Type AttentionGradOp::getMatmulType() {
  if (runsFused(attentionSizes(*this)))
    return getElementTypeOrSelf(getQuery().getType());
  return Float32Type::get(getContext());
}

// Fused: the log-sum-exp pass (none with `lse`, an operand) reads Q and K
// again and the row dots read dO and the output again; the log-sum-exp and
// row dots are written and read (8 bytes a row each); the f32
// query-gradient accumulator is zeroed, read and rounded (8 bytes an
// element). Unfused: P recomputed (16 bytes per
// score, as in the forward pass); dV reads P (4); dP is written (4), dS =
// P * (dP - rowdot) reads two and writes one (12); dQ and dK each read dS
// (4). The row dots are written and read once. A bshd attention's
// operands are transposed into copies and its gradients back.
int64_t AttentionGradOp::getScratchBytes() {
  AttentionSizes sizes = attentionSizes(*this);
  bool query = computesGrad(*this, 0), key = computesGrad(*this, 1);
  int64_t rows = sizes.heads * sizes.tq;
  if (runsFused(sizes)) {
    // Q and K of one head each (the output's and a key/value head's size).
    int64_t headBytes =
                tg::getTensorBytes(getOutput().getType()) / sizes.dv * sizes.d,
            keyBytes = headBytes / sizes.heads * sizes.kvHeads;
    return (getLse() ? 0 : headBytes + keyBytes + 8 * rows) +
           tg::getTensorBytes(getGrad().getType()) +
           tg::getTensorBytes(getOutput().getType()) + 8 * rows +
           (query ? 8 * rows * sizes.d : 0);
  }
  int64_t perScore = 16;
  if (computesGrad(*this, 2))
    perScore += 4;
  if (query || key)
    perScore += 16 + (query ? 4 : 0) + (key ? 4 : 0);
  SmallVector<Value> computed;
  for (OpResult result : getOperation()->getResults())
    if (computesResult(*this, result.getResultNumber()))
      computed.push_back(result);
  SmallVector<Value> operands = {getQuery(), getKey(), getValue(),
                                 getOutput(), getGrad()};
  return perScore * sizes.heads * computedScores(sizes) + 8 * rows +
         widenedCopyBytes({getQuery(), getKey(), getValue(), getGrad()},
                          computed) +
         bshdCopyBytes(sizes, operands, computed);
}

// max, subtract, exp and sum per logit; log and pick per row; with the
// gradient, subtract, exp and scale per logit again. A soft-cap: divide,
// tanh and multiply per logit read (twice with the gradient, whose slope
// adds three).
int64_t CrossEntropyOp::getFlops() {
  ArrayRef<int64_t> shape = shapeOf(getLogits());
  int64_t cap = getSoftcap() ? (getGrad() ? 9 : 3) : 0;
  return ((getGrad() ? 7 : 4) + cap) * numElements(getLogits()) +
         2 * (numElements(getLogits()) / std::max<int64_t>(1, shape.back()));
}

// One comparison per target.
int64_t TargetCountOp::getFlops() { return numElements(getTargets()); }

//===----------------------------------------------------------------------===//
// Shape ops, casts and constants: data movement only
//===----------------------------------------------------------------------===//

int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t OffloadOp::getFlops() { return 0; }
int64_t ReloadOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t BroadcastToOp::getFlops() { return 0; }
int64_t CastOp::getFlops() { return 0; }
int64_t MultiCastOp::getFlops() { return 0; }
int64_t ConstantOp::getFlops() { return 0; }
int64_t FillOp::getFlops() { return 0; }

// Reads only the elements of the box.
int64_t SliceOp::getBytesRead() { return getTensorBytes(getResult().getType()); }

// Reductions: one accumulation per input element (mean adds a divide per
// output element).
int64_t ReduceSumOp::getFlops() { return numElements(getInput()); }
int64_t ReduceMaxOp::getFlops() { return numElements(getInput()); }
int64_t ReduceMeanOp::getFlops() {
  return numElements(getInput()) + numElements(getResult());
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

int64_t SumToOp::getFlops() { return numElements(getInput()); }

// Recomputes tanh(u) (6) and the derivative polynomial and product (9).
int64_t GeluGradOp::getFlops() { return 15 * numElements(getResult()); }
// silu(gate) (5), grad * up, silu's gradient (9) and grad * silu(gate).
int64_t SwigluGradOp::getFlops() { return 16 * numElements(getGrad()); }

// square, subtract, multiply.
int64_t TanhGradOp::getFlops() { return 3 * numElements(getResult()); }

// product, row sum, subtract, multiply.
int64_t SoftmaxGradOp::getFlops() { return 4 * numElements(getResult()); }

// Statistics recomputed (5), g = grad * w, two row means, the dx formula
// (4), dw multiply-accumulate (2) and db accumulate (1); without
// input_grad (output_mask), only the statistics and dw, db.
int64_t LayerNormGradOp::getFlops() {
  int64_t perElement = computesResult(*this, 0) ? 16 : 8;
  return perElement * numElements(getInput());
}

// The statistic (2), xhat, g = grad * w, the row mean of g * xhat (2), the
// dx formula (3) and dw multiply-accumulate (2).
int64_t RmsNormGradOp::getFlops() {
  int64_t perElement = computesResult(*this, 0) ? 11 : 5;
  return perElement * numElements(getInput());
}

// One accumulation per gradient element.
int64_t EmbeddingGradOp::getFlops() { return numElements(getGrad()); }
// Gather moves elements; its gradient adds each one where it was picked.
int64_t GatherOp::getFlops() { return 0; }
int64_t GatherGradOp::getFlops() { return numElements(getGrad()); }

// Recomputes S = Q K^T and P (2d + 6 per score), then dV = P^T dO,
// dP = dO V^T (2dv each), dS (3) and dQ, dK (2d each); the results an
// output_mask leaves out (and dP, dS without dQ and dK) are not computed.
int64_t AttentionGradOp::getFlops() {
  AttentionSizes sizes = attentionSizes(*this);
  int64_t d = sizes.d, dv = sizes.dv;
  int64_t scores = attentionScores(sizes);
  bool query = computesGrad(*this, 0), key = computesGrad(*this, 1);
  int64_t perScore = 2 * d + 6 + (sizes.softcap ? 3 : 0);
  if (computesGrad(*this, 2))
    perScore += 2 * dv;
  if (query || key)
    perScore += 2 * dv + 3 + (query ? 2 * d : 0) + (key ? 2 * d : 0) +
                (sizes.softcap ? 4 : 0); // the cap's slope
  return sizes.heads * scores * perScore;
}

// Softmax recomputed (4 per logit), subtract the one-hot and scale (2); a
// soft-cap's divide, tanh and multiply and its slope (6).
int64_t CrossEntropyGradOp::getFlops() {
  return (getSoftcap() ? 12 : 6) * numElements(getLogits());
}

// Compare with the maximum, count ties, divide.
int64_t ReduceMaxGradOp::getFlops() { return 3 * numElements(getInput()); }

int64_t SliceGradOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// Optimizer updates and mixed precision
//===----------------------------------------------------------------------===//

// Weight decay (2), momentum (3), nesterov (2), the update (2).
int64_t SGDUpdateOp::getFlops() {
  int64_t perElement = 2;
  if (!getWeightDecay().isZero())
    perElement += 2;
  if (getMomentumBuffer())
    perElement += 3;
  if (getNesterov())
    perElement += 2;
  return perElement * numElements(getParam());
}

// Decay (1), first moment (3), second moment (4), sqrt, bias correction,
// eps, divide, step size, subtract (6).
int64_t AdamWUpdateOp::getFlops() { return 14 * numElements(getParam()); }

int64_t MultiAdamWUpdateOp::getFlops() {
  int64_t flops = 0;
  for (Value param : getParams())
    flops += 14 * numElements(param);
  return flops;
}

// Per element: the gradient square and eps (2), the row and column sums
// (2), the factored rsqrt product and the gradient (3), rms of the update
// (2), clip and lr (2), the parameter norm (2), the update (1), weight
// decay (2).
int64_t AdafactorUpdateOp::getFlops() {
  int64_t perElement = 16;
  if (!getWeightDecay().isZero())
    perElement += 2;
  return perElement * numElements(getParam());
}

// AdamW's 14, two dequantizing multiplies, two absmax comparisons, two
// scalings by the reciprocal absmax; the 8-step code searches compare, they
// do not compute.
int64_t AdamW8bitUpdateOp::getFlops() { return 20 * numElements(getParam()); }

// As the 8-bit update, with a divide by the scale in place of the multiply
// by its reciprocal; the 4-step code searches and the nibble packing do
// not compute.
int64_t AdamW4bitUpdateOp::getFlops() { return 20 * numElements(getParam()); }

// SGD with momentum (see SGDUpdateOp) plus dequantize, absmax and scale (3).
int64_t SGD8bitUpdateOp::getFlops() {
  int64_t perElement = 2 + 3 + 3;
  if (!getWeightDecay().isZero())
    perElement += 2;
  if (getNesterov())
    perElement += 2;
  return perElement * numElements(getParam());
}

// Square and accumulate per element, one square root.
int64_t GlobalNormOp::getFlops() {
  int64_t total = 1;
  for (Value input : getInputs())
    total += 2 * numElements(input);
  return total;
}

int64_t ScaleLossOp::getFlops() { return 1; }
int64_t UnscaleOp::getFlops() { return numElements(getGrad()) + 1; }

int64_t AllFiniteOp::getFlops() {
  int64_t total = 0;
  for (Value input : getInputs())
    total += numElements(input);
  return total;
}

int64_t UpdateLossScaleOp::getFlops() { return 2; }

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// A reduction adds one value per element received; gathering and taking a
// shard move data only. Bytes sent per rank follow the ring algorithms:
// an all-reduce is a reduce-scatter then an all-gather, each sending
// (N - 1) / N of the tensor.
int64_t AllReduceOp::getFlops() { return numElements(getInput()); }
int64_t ReduceScatterOp::getFlops() { return numElements(getInput()); }
int64_t AllGatherOp::getFlops() { return 0; }
int64_t ShardOp::getFlops() { return 0; }

static int64_t ringBytes(int64_t bytes, int64_t worldSize, int64_t passes) {
  return worldSize <= 1 ? 0 : passes * (bytes * (worldSize - 1) / worldSize);
}
int64_t AllReduceOp::getBytesCommunicated() {
  return ringBytes(getTensorBytes(getInput().getType()), getWorldSize(), 2);
}
int64_t ReduceScatterOp::getBytesCommunicated() {
  return ringBytes(getTensorBytes(getInput().getType()), getWorldSize(), 1);
}
int64_t AllGatherOp::getBytesCommunicated() {
  return ringBytes(getTensorBytes(getResult().getType()), getWorldSize(), 1);
}
int64_t ShardOp::getBytesCommunicated() { return 0; }

//===----------------------------------------------------------------------===//
// Kernel launches
//
// The work items the CUDA backend (runtime/src/cuda) puts on its stream for
// one execution: each kernel launch, cuBLASLt product, device copy, memset
// and stream-ordered allocation or free is one node of the CUDA graph the
// backend captures. Every op not below launches one kernel. The counts
// take the buffers as the planner places them: a result over an operand
// that a kernel cannot write in place costs it a staging copy not counted
// here, and a linear's epilogue is taken to find its vectors aligned.
//===----------------------------------------------------------------------===//

/// How many of `values` hold any element.
static int64_t nonEmpty(ValueRange values) {
  return llvm::count_if(values, [](Value v) { return numElements(v) > 0; });
}

/// cuBLASLt calls of `lhs @ rhs -> result` (tgc/Support/GemmBatch.h).
static int64_t matmulLaunches(Value lhs, Value rhs, Value result,
                              bool transposeLhs) {
  if (numElements(result) == 0)
    return 0;
  ArrayRef<int64_t> l = shapeOf(lhs), r = shapeOf(rhs), o = shapeOf(result);
  int64_t m = l[l.size() - (transposeLhs ? 1 : 2)];
  int64_t k = l[l.size() - (transposeLhs ? 2 : 1)];
  int64_t n = o.back();
  std::vector<int64_t> lhsBatch(l.begin(), l.end() - 2),
      rhsBatch(r.begin(), r.end() - 2), batch(o.begin(), o.end() - 2);
  return tgc::gemmCalls(
      tgc::collapseBatch(lhsBatch, rhsBatch, batch, m * k, k * n, m * n),
      transposeLhs, m, k);
}

int64_t MatmulOp::getKernelLaunches() {
  return matmulLaunches(getLhs(), getRhs(), getResult(), getTransposeLhs());
}

// The addend is the result's buffer (in place): no copy first.
int64_t MatmulAddOp::getKernelLaunches() {
  return matmulLaunches(getLhs(), getRhs(), getResult(), getTransposeLhs());
}

// One GEMM with the bias (and GELU) epilogue where cuBLASLt takes it (N a
// multiple of 8), else the GEMM and a bias/GELU pass.
int64_t LinearOp::getKernelLaunches() {
  if (numElements(getResult()) == 0)
    return 0;
  int64_t k = shapeOf(getInput()).back(), n = shapeOf(getWeight()).back();
  return k > 0 && n % 8 == 0 ? 1 : 2;
}

/// Whether the CUDA backend runs a GEMM of `n` output columns (in its
/// row-major terms) with a bias-gradient epilogue: cuBLASLt's vectors need
/// 16-byte alignment, which the planner gives every buffer, and the
/// auxiliary input a leading dimension that is a multiple of 8. Otherwise
/// the GEMM is followed by the kernels of the unfused ops.
static bool biasGradEpilogue(int64_t n) { return n % 8 == 0; }

// One GEMM with the BGRADA/BGRADB epilogue, else the GEMM and the sum.
int64_t MatmulBiasGradOp::getKernelLaunches() {
  if (numElements(getProduct()) == 0)
    return numElements(getBiasGrad()) > 0 ? 1 : 0;
  return biasGradEpilogue(shapeOf(getProduct()).back()) ? 1 : 2;
}

// One GEMM with the DGELU_BGRAD epilogue, else the GEMM (f32, into the
// workspace), GELU's gradient and the bias sum.
int64_t MatmulGeluGradOp::getKernelLaunches() {
  if (numElements(getResult()) == 0)
    return numElements(getBiasGrad()) > 0 ? 1 : 0;
  return biasGradEpilogue(shapeOf(getResult()).back()) ? 1 : 3;
}

// The index check, then the gather.
int64_t EmbeddingOp::getKernelLaunches() {
  return 1 + (shapeOf(getResult()).back() > 0 ? 1 : 0);
}

// Zero an f32 accumulator, check the indices, scatter-add, and round into
// a 16-bit result.
// The f32 sums zeroed, the scatter-add (which checks the indices), and
// their rounding into a 16-bit result.
int64_t GatherGradOp::getKernelLaunches() {
  bool f32 = getElementTypeOrSelf(getResult().getType()).isF32();
  return 2 + (f32 ? 0 : 1);
}

int64_t EmbeddingGradOp::getKernelLaunches() {
  if (numElements(getResult()) == 0)
    return 1;
  bool f32 = getElementTypeOrSelf(getResult().getType()).isF32();
  return 3 + (f32 ? 0 : 1);
}

/// The unfused attention's chunks of heads: `scoreMatrices` f32 score
/// matrices per key/value head, as tgc/Support/FusedAttention.h bounds
/// them.
static int64_t attentionChunks(const AttentionSizes &sizes,
                               int64_t scoreMatrices) {
  int64_t heads = sizes.kvHeads;
  int64_t group = heads > 0 ? sizes.heads / heads : 1;
  int64_t chunk = tgc::attentionHeadsPerChunk(heads, group * sizes.tq,
                                              sizes.tk, scoreMatrices);
  return (heads + chunk - 1) / chunk;
}

// Fused: one kernel. Unfused: a bshd attention's transposed copies (their
// allocation and free, three operands, the result and lse back), f32 copies of 16-bit operands, then per chunk
// of heads the scores' GEMM, the softmax, P V's GEMM and (16-bit) the
// rounding of the output.
int64_t AttentionOp::getKernelLaunches() {
  if (numElements(getResult()) == 0 &&
      (!getLse() || numElements(getLse()) == 0))
    return 0;
  AttentionSizes sizes = attentionSizes(*this);
  if (runsFused(sizes))
    return 1;
  bool f32 = sizes.bits == 32;
  // Packed operands: their dense copies' allocation, split and free.
  return (getPacked() ? 3 : 0) + (sizes.bshd ? 6 + (getLse() ? 1 : 0) : 0) +
         (f32 ? 0 : 3) + attentionChunks(sizes, 1) * (3 + (f32 ? 0 : 1));
}

// Fused: the log-sum-exp pass (unless the forward pass kept it), the row
// dots (clearing dQ's f32 accumulator) and the backward kernel, and dQ
// rounded. Unfused: a bshd
// attention's transposed copies (their allocation and free, five operands,
// the computed gradients back), the row dots, f32 copies of 16-bit operands, then per chunk P
// recomputed (GEMM and softmax), dV's GEMM, dP's GEMM and dS, dQ's and
// dK's GEMMs, and the roundings of 16-bit gradients.
int64_t AttentionGradOp::getKernelLaunches() {
  bool query = computesGrad(*this, 0), key = computesGrad(*this, 1),
       value = computesGrad(*this, 2);
  AttentionSizes sizes = attentionSizes(*this);
  if (runsFused(sizes))
    return (getLse() ? 2 : 3) + (query ? 1 : 0);
  bool f32 = sizes.bits == 32;
  // A soft-cap's slope: the scores' GEMM again and one kernel.
  int64_t perChunk = 2 + (value ? 1 : 0) + (query || key ? 2 : 0) +
                     (query || key) * (sizes.softcap ? 2 : 0) +
                     (query ? 1 : 0) + (key ? 1 : 0) +
                     (f32 ? 0 : int64_t(query) + key + value);
  // Packed operands: their dense copies' and gradients' allocation, split,
  // concat and free.
  return (getPacked() ? 4 : 0) +
         (sizes.bshd ? 7 + int64_t(query) + key + value : 0) + 1 +
         (f32 ? 0 : 4) + attentionChunks(sizes, 2) * perChunk;
}

// The per-row losses, then their mean; with the gradient, the scale from
// the target count first, and the rows' kernel writes the gradient too.
int64_t CrossEntropyOp::getKernelLaunches() {
  return (numElements(getLogits()) > 0 ? 2 : 1) +
         (getGrad() && numElements(getTargets()) > 0 ? 1 : 0);
}

// The scale from the target count, then the gradient.
int64_t CrossEntropyGradOp::getKernelLaunches() {
  return 1 + (shapeOf(getLogits()).back() > 0 ? 1 : 0);
}

// A view of its operand's buffer.
int64_t ReshapeOp::getKernelLaunches() { return 0; }

/// A split or concat: one kernel for up to kPiecesPerLaunch pieces, one
/// copy per non-empty piece past that.
static int64_t piecesLaunches(Value whole, ValueRange pieces) {
  if (int64_t(pieces.size()) <= tgc::kPiecesPerLaunch)
    return numElements(whole) > 0 ? 1 : 0;
  return nonEmpty(pieces);
}

int64_t SplitOp::getKernelLaunches() {
  return piecesLaunches(getInput(), getResults());
}

int64_t ConcatOp::getKernelLaunches() {
  return piecesLaunches(getResult(), getInputs());
}

/// Layer and RMS norm gradients: the row statistics (which clear the f32
/// parameter-gradient accumulators), the parameter gradients (whose last
/// block of each 256 columns rounds them into their results: norms of up
/// to 4096 such blocks, the CUDA context's reduction counters) and the
/// input gradient. With no rows, a memset and a rounding pass write zeros.
static int64_t normGradLaunches(Value input, bool wantInput, bool weight,
                                bool bias) {
  int64_t length = shapeOf(input).back();
  if (length == 0)
    return 0;
  bool rows = numElements(input) > 0, params = weight || bias;
  if (!rows)
    return params ? 2 : 0;
  // Past 4096 blocks of columns (a norm over a million elements), a
  // rounding pass of its own.
  bool roundingPass = params && (length + 255) / 256 > 4096;
  return 1 + int64_t(params) + int64_t(wantInput) + int64_t(roundingPass);
}

int64_t LayerNormGradOp::getKernelLaunches() {
  return normGradLaunches(getInput(), computesResult(*this, 0),
                          computesResult(*this, 1), computesResult(*this, 2));
}

int64_t RmsNormGradOp::getKernelLaunches() {
  return normGradLaunches(getInput(), computesResult(*this, 0),
                          computesResult(*this, 1), false);
}

// Zero the result, then place the gradient's box.
int64_t SliceGradOp::getKernelLaunches() {
  return 1 + (numElements(getGrad()) > 0 ? 1 : 0);
}

// A scratch allocation and its free around two kernels.
int64_t ReduceMaxGradOp::getKernelLaunches() { return 4; }

// Scratch allocated and freed, the sum zeroed, a sum of squares per
// non-empty operand, the square root.
int64_t GlobalNormOp::getKernelLaunches() {
  return 4 + nonEmpty(getInputs());
}

// The flag zeroed, then one check per non-empty operand.
int64_t AllFiniteOp::getKernelLaunches() {
  return 1 + nonEmpty(getInputs());
}

// Scratch allocated and freed, its sums zeroed, the parameter's squares
// (and a factored state's row and column sums), the state, the update's
// squares and the update.
int64_t AdafactorUpdateOp::getKernelLaunches() {
  bool any = numElements(getParam()) > 0;
  bool factored = shapeOf(getParam()).size() >= 2;
  return 5 + (any ? 2 : 0) + (any && factored ? 1 : 0);
}

// Up to kTensorsPerLaunch tensors per kernel (tgc/Support/MultiTensor.h).
int64_t MultiCastOp::getKernelLaunches() {
  return tgc::multiTensorLaunches(int64_t(getInputs().size()));
}

int64_t MultiAdamWUpdateOp::getKernelLaunches() {
  return tgc::multiTensorLaunches(int64_t(getParams().size()));
}
