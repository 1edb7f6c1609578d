//===- QuantizeOptimizerState.cpp - the tg-quantize-optimizer-state pass --===//
//
// 8-bit optimizer state as bitsandbytes keeps it (Dettmers et al., "8-bit
// Optimizers via Block-wise Quantization"): each state tensor becomes ui8
// codes into a 256-entry dynamic tree map, scaled by an f32 absmax per
// block of elements. 4-bit AdamW state as Li et al. ("Memory Efficient
// Optimizers with 4-bit States") and torchao's AdamW4bit keep it: codes
// into 16-entry maps, packed two a byte, an f32 scale per block of 128.
// The rewrite swaps each optimizer update for its quantized form and each
// f32 state argument for two arguments (codes and absmax); the fused update
// dequantizes, updates and requantizes a block at a time.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Summary.h"

#include "OptionErrors.h"

#include "TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

#define DEBUG_TYPE "tg-quantize-optimizer-state"

namespace tgc::tg {
#define GEN_PASS_DEF_TGQUANTIZEOPTIMIZERSTATE
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

/// torch.linspace(start, end, steps) on f32 as its scalar kernel computes
/// it: the first half counts up from `start`, the second down from `end`.
/// (Its vectorized path can differ in the last bit, so bitsandbytes' own
/// map differs by an ulp between machines; this is the exact definition.)
SmallVector<float> linspace(float start, float end, int64_t steps) {
  float step = (end - start) / float(steps - 1);
  int64_t halfway = steps / 2;
  SmallVector<float> values;
  for (int64_t i = 0; i < steps; ++i)
    values.push_back(i < halfway ? start + step * float(i)
                                 : end - step * float(steps - i - 1));
  return values;
}

/// bitsandbytes' create_dynamic_map(signed, max_exponent_bits, total_bits)
/// (7 and 8 for 8-bit state; 3 and 4 for torchao's 4-bit first moment):
/// for each exponent i below max_exponent_bits, the midpoints of a linear
/// split of [0.1, 1] into 2^i (signed) or 2^(i+1) (unsigned) intervals,
/// scaled by 10^(i - max_exponent_bits + 1) (and negated too, when signed);
/// then 0 and 1, padding zeros to 2^total_bits entries, sorted. Arithmetic
/// in f32 as torch does it. (Both widths use every exponent bit, so the
/// map has no entries of bitsandbytes' "additional items".)
SmallVector<float> dynamicMap(bool isSigned, int exponentBits = 7,
                              int totalBits = 8) {
  SmallVector<float> data;
  for (int i = 0; i < exponentBits; ++i) {
    int64_t items = isSigned ? (int64_t(1) << i) + 1 : (int64_t(1) << (i + 1)) + 1;
    SmallVector<float> bounds = linspace(0.1f, 1.0f, items);
    float scale = float(std::pow(10.0, double(i - exponentBits + 1)));
    for (int64_t k = 0; k + 1 < items; ++k) {
      float mean = (bounds[k] + bounds[k + 1]) / 2.0f;
      data.push_back(scale * mean);
      if (isSigned)
        data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  data.resize(size_t(1) << totalBits, 0.0f);
  std::sort(data.begin(), data.end());
  return data;
}

/// torchao's 4-bit second-moment map: torch.linspace(0, 1, 17)[1:], linear
/// without zero.
SmallVector<float> linearMap4() {
  SmallVector<float> values = linspace(0.0f, 1.0f, kQuant4MapSize + 1);
  values.erase(values.begin());
  return values;
}

/// What the state `<name>` becomes: `<name>.q8` (ui8 codes) or `<name>.q4`
/// (packed 4-bit codes), and `<name>.absmax` (f32 per block).
constexpr StringLiteral kAbsmaxSuffix = ".absmax";

struct Config {
  StateFormat format;
  int64_t blockSize, minSize;
  bool print;

  bool fourBit() const { return format == StateFormat::Int4; }
  StringRef codesSuffix() const { return fourBit() ? ".q4" : ".q8"; }
  StringRef bitsName() const { return fourBit() ? "4-bit" : "8-bit"; }
};

/// One f32 state operand of an update and what replaces it.
struct StateSlot {
  unsigned operand; // operand index in the f32 update
  unsigned result;  // result index in the f32 update
};

/// Rewrites one step. The signature is changed once, at the end: new state
/// arguments are added to the body as each update is rewritten, and the
/// function type, argument and result attributes and the return are
/// rebuilt in one go (per update they would make the pass quadratic in the
/// number of parameters: a 1558M GPT-2 has 580).
class Rewriter {
public:
  Rewriter(func::FuncOp step, const Config &config)
      : step(step), config(config), builder(step.getContext()) {}

  LogicalResult run();

private:
  Value map(bool isSigned);
  /// Adds codes and absmax arguments named after the state argument read
  /// as `operand` (which is erased at the end); returns them.
  FailureOr<std::pair<BlockArgument, BlockArgument>>
  quantizeArgument(Operation *update, Value operand);
  LogicalResult rewrite(AdamWUpdateOp op);
  LogicalResult rewrite(SGDUpdateOp op);
  /// Records that the step returns `replacement`'s results where it
  /// returned `op`'s, each old state result expanded to its codes and
  /// absmax; `op` is erased at the end.
  LogicalResult replaceResults(Operation *op, Operation *replacement,
                               ArrayRef<unsigned> stateResults);
  /// The new return, result attributes, argument attributes and type.
  LogicalResult finish();

  func::FuncOp step;
  const Config &config;
  OpBuilder builder;
  Value signedMap, unsignedMap;
  SmallVector<unsigned> erasedArgs;
  /// Attributes of the arguments added to the body, in order.
  SmallVector<DictionaryAttr> addedArgAttrs;
  /// Old result -> new results (param -> param; a state result -> its
  /// codes and absmax).
  llvm::DenseMap<Value, SmallVector<Value, 2>> expansion;
  SmallVector<Operation *> replaced;

public:
  int64_t quantized = 0, kept = 0;
  int64_t bytesBefore = 0, bytesAfter = 0;
};

Value Rewriter::map(bool isSigned) {
  Value &cached = isSigned ? signedMap : unsignedMap;
  if (cached)
    return cached;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&step.getBody().front());
  SmallVector<float> values =
      !config.fourBit() ? dynamicMap(isSigned)
      : isSigned        ? dynamicMap(/*isSigned=*/true, /*exponentBits=*/3,
                                     /*totalBits=*/4)
                        : linearMap4();
  auto type = RankedTensorType::get({int64_t(values.size())},
                                    builder.getF32Type());
  cached = ConstantOp::create(builder, step.getLoc(),
                              DenseElementsAttr::get(type, ArrayRef(values)));
  return cached;
}

FailureOr<std::pair<BlockArgument, BlockArgument>>
Rewriter::quantizeArgument(Operation *update, Value operand) {
  auto arg = dyn_cast<BlockArgument>(operand);
  StringAttr name =
      arg ? step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                              TGDialect::kStateAttr)
          : StringAttr();
  if (!name)
    return update->emitOpError("reads optimizer state that is not a state "
                               "argument of the step; cannot quantize it");
  if (!operand.hasOneUse())
    return update->emitOpError("state '")
           << name.getValue()
           << "' is read by other ops too; cannot quantize it";
  if (step.getArgAttr(arg.getArgNumber(), TGDialect::kInitAttr))
    return update->emitOpError("state '")
           << name.getValue()
           << "' has an initializer; " << config.bitsName()
           << " state starts from zero";
  auto type = cast<RankedTensorType>(arg.getType());
  int64_t count = type.getNumElements();
  int64_t blocks = (count + config.blockSize - 1) / config.blockSize;
  // 4-bit codes: two a byte, in a flat tensor.
  SmallVector<int64_t> codesShape =
      config.fourBit() ? SmallVector<int64_t>{(count + 1) / 2}
                       : llvm::to_vector(type.getShape());
  auto codesType = RankedTensorType::get(
      codesShape,
      IntegerType::get(step.getContext(), 8, IntegerType::Unsigned));
  auto absmaxType = RankedTensorType::get({blocks}, builder.getF32Type());
  auto attrs = [&](StringRef suffix) {
    return builder.getDictionaryAttr(builder.getNamedAttr(
        TGDialect::kStateAttr,
        builder.getStringAttr(name.getValue() + suffix)));
  };
  // Appended: the old argument is erased at the end, when no index held
  // elsewhere can move.
  Block &body = step.getBody().front();
  BlockArgument codes = body.addArgument(codesType, arg.getLoc());
  BlockArgument absmax = body.addArgument(absmaxType, arg.getLoc());
  addedArgAttrs.push_back(attrs(config.codesSuffix()));
  addedArgAttrs.push_back(attrs(kAbsmaxSuffix));
  erasedArgs.push_back(arg.getArgNumber());
  bytesBefore += count * int64_t(type.getElementTypeBitWidth() / 8);
  bytesAfter += codesType.getNumElements() + 4 * blocks;
  return std::make_pair(codes, absmax);
}

LogicalResult Rewriter::replaceResults(Operation *op, Operation *replacement,
                                       ArrayRef<unsigned> stateResults) {
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  for (Value result : op->getResults())
    for (OpOperand &use : result.getUses())
      if (use.getOwner() != ret && result != op->getResult(0))
        return op->emitOpError("its updated state is read by another op; "
                               "cannot quantize it");
  for (unsigned result : stateResults)
    for (OpOperand &use : op->getResult(result).getUses())
      if (!step.getResultAttrOfType<StringAttr>(use.getOperandNumber(),
                                                TGDialect::kUpdateAttr))
        return op->emitOpError("the step returns its updated state without "
                               "'tg.update'");
  op->getResult(0).replaceUsesWithIf(
      replacement->getResult(0),
      [&](OpOperand &use) { return use.getOwner() != ret; });
  expansion[op->getResult(0)] = {replacement->getResult(0)};
  for (auto [k, result] : llvm::enumerate(stateResults))
    expansion[op->getResult(result)] = {replacement->getResult(1 + 2 * k),
                                        replacement->getResult(2 + 2 * k)};
  replaced.push_back(op);
  return success();
}

LogicalResult Rewriter::finish() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    DictionaryAttr attrs = step.getResultAttrDict(i)
                               ? step.getResultAttrDict(i)
                               : builder.getDictionaryAttr({});
    auto it = expansion.find(value);
    if (it == expansion.end() || it->second.size() == 1) {
      results.push_back(it == expansion.end() ? value : it->second.front());
      resultAttrs.push_back(attrs);
      continue;
    }
    // Checked in replaceResults.
    auto name = step.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    const StringRef suffixes[] = {config.codesSuffix(), kAbsmaxSuffix};
    for (auto [value, suffix] : llvm::zip(it->second, suffixes)) {
      results.push_back(value);
      resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
          TGDialect::kUpdateAttr,
          builder.getStringAttr(name.getValue() + suffix))));
    }
  }
  ret->setOperands(results);
  for (Operation *op : replaced)
    op->erase();

  SmallVector<Attribute> argAttrs;
  unsigned oldArgs = body.getNumArguments() - addedArgAttrs.size();
  for (unsigned i = 0; i < oldArgs; ++i) {
    DictionaryAttr attrs = step.getArgAttrDict(i);
    argAttrs.push_back(attrs ? attrs : builder.getDictionaryAttr({}));
  }
  argAttrs.append(addedArgAttrs.begin(), addedArgAttrs.end());
  step.setType(builder.getFunctionType(body.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);

  llvm::BitVector erase(body.getNumArguments());
  for (unsigned index : erasedArgs)
    erase.set(index);
  if (failed(step.eraseArguments(erase)))
    return step.emitOpError("cannot remove the f32 state arguments");
  return success();
}

LogicalResult Rewriter::rewrite(AdamWUpdateOp op) {
  auto m = quantizeArgument(op, op.getExpAvg());
  if (failed(m))
    return failure();
  auto v = quantizeArgument(op, op.getExpAvgSq());
  if (failed(v))
    return failure();
  builder.setInsertionPoint(op);
  // Plain values, not structured bindings: the lambda below captures them.
  Value mCodes = m->first, mAbsmax = m->second;
  Value vCodes = v->first, vAbsmax = v->second;
  // The maps made in a fixed order (the order a call's arguments are
  // evaluated in is the compiler's): each goes to the top of the step, so
  // the signed one, made last, comes first.
  Value unsignedCodebook = map(/*isSigned=*/false);
  Value signedCodebook = map(/*isSigned=*/true);
  // The 8- and 4-bit updates take the same operands and attributes.
  auto create = [&](auto null) -> Operation * {
    return decltype(null)::create(
        builder, op.getLoc(),
        TypeRange{op.getParam().getType(), mCodes.getType(), mAbsmax.getType(),
                  vCodes.getType(), vAbsmax.getType()},
        op.getParam(), op.getGrad(), mCodes, mAbsmax, vCodes, vAbsmax,
        signedCodebook, unsignedCodebook, op.getLr(), op.getStep(),
        op.getPart(), op.getApply(), op.getBeta1Attr(), op.getBeta2Attr(),
        op.getEpsAttr(), op.getWeightDecayAttr(),
        builder.getI64IntegerAttr(config.blockSize), op.getRoundingSeedAttr());
  };
  Operation *update = config.fourBit() ? create(AdamW4bitUpdateOp())
                                       : create(AdamW8bitUpdateOp());
  return replaceResults(op, update, {1, 2});
}

LogicalResult Rewriter::rewrite(SGDUpdateOp op) {
  if (config.fourBit())
    return op.emitOpError("4-bit optimizer state is for AdamW; keep SGD's "
                          "momentum buffer in 8 bits (--optimizer-state=8bit)");
  auto buffer = quantizeArgument(op, op.getMomentumBuffer());
  if (failed(buffer))
    return failure();
  builder.setInsertionPoint(op);
  auto [codes, absmax] = *buffer;
  auto update = SGD8bitUpdateOp::create(
      builder, op.getLoc(),
      TypeRange{op.getParam().getType(), codes.getType(), absmax.getType()},
      op.getParam(), op.getGrad(), codes, absmax, map(/*isSigned=*/true),
      op.getLr(), op.getStep(), op.getApply(), op.getMomentumAttr(),
      op.getDampeningAttr(), op.getWeightDecayAttr(), op.getNesterovAttr(),
      builder.getI64IntegerAttr(config.blockSize));
  return replaceResults(op, update, {1});
}

LogicalResult Rewriter::run() {
  SmallVector<Operation *> updates;
  AdafactorUpdateOp adafactor;
  step.walk([&](Operation *op) {
    if (isa<AdamWUpdateOp>(op) ||
        (isa<SGDUpdateOp>(op) && cast<SGDUpdateOp>(op).getMomentumBuffer()))
      updates.push_back(op);
    if (auto update = dyn_cast<AdafactorUpdateOp>(op); update && !adafactor)
      adafactor = update;
  });
  // There is no quantized Adafactor update: leaving its state in f32 while
  // the user asked for 8 or 4 bits would change nothing and say nothing.
  if (adafactor)
    return adafactor.emitOpError()
           << config.bitsName()
           << " optimizer state is for "
           << (config.fourBit() ? "AdamW" : "AdamW and SGD")
           << "; Adafactor keeps its "
              "factored second moment in f32 (--optimizer-state=f32)";
  for (Operation *op : updates) {
    auto param = cast<RankedTensorType>(op->getOperand(0).getType());
    if (param.getNumElements() < config.minSize) {
      ++kept;
      continue;
    }
    ++quantized;
    LogicalResult result = isa<AdamWUpdateOp>(op)
                               ? rewrite(cast<AdamWUpdateOp>(op))
                               : rewrite(cast<SGDUpdateOp>(op));
    if (failed(result))
      return failure();
  }
  return finish();
}

struct QuantizeOptimizerStatePass
    : tgc::tg::impl::TGQuantizeOptimizerStateBase<QuantizeOptimizerStatePass> {
  using TGQuantizeOptimizerStateBase::TGQuantizeOptimizerStateBase;

  void runOnOperation() override {
    if (format == StateFormat::F32)
      return markAllAnalysesPreserved();
    bool fourBit = format == StateFormat::Int4;
    int64_t block = blockSize ? int64_t(blockSize) : fourBit ? 128 : 256;
    int64_t smallest = fourBit ? 2 : 1;
    if (block < smallest || !llvm::isPowerOf2_64(uint64_t(block)) ||
        block > kMaxQuantBlockSize) {
      emitOptionError(getOperation(), "tg-quantize-optimizer-state: block-size must "
                               "be a power of two in [")
          << smallest << ", " << kMaxQuantBlockSize << "]"
          << (fourBit ? " for 4-bit state" : "") << ", found " << block;
      return signalPassFailure();
    }
    if (minSize < 0) {
      emitOptionError(getOperation(), "tg-quantize-optimizer-state: min-size must be "
                               "non-negative, found ")
          << int64_t(minSize);
      return signalPassFailure();
    }
    Config config{format, block, minSize, printSummary};
    auto rewrite = [&](func::FuncOp step) -> LogicalResult {
      Rewriter rewriter(step, config);
      if (failed(rewriter.run()))
        return failure();
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "@" << step.getSymName() << ": " << rewriter.quantized
         << " updates with " << config.bitsName() << " state (block "
         << config.blockSize << "), "
         << rewriter.kept << " kept in f32 (< " << config.minSize
         << " elements); their state " << rewriter.bytesBefore << " -> "
         << rewriter.bytesAfter << " bytes";
      reportSummary(step.getLoc(), "tg-quantize-optimizer-state",
                    step.getSymName(), line,
                    {{"quantized_updates", int64_t(rewriter.quantized)},
                     {"state_bytes_before", int64_t(rewriter.bytesBefore)},
                     {"state_bytes_after", int64_t(rewriter.bytesAfter)}},
                    config.print);
      return success();
    };
    if (failed(forEachTrainStep(getOperation(), "tg-quantize-optimizer-state",
                                "tg-optimizer", rewrite)))
      return signalPassFailure();
  }
};

} // namespace
