//===- TGXWriter.cpp - lowering a planned training step to .tgx -----------===//
//
// Walks the schedule of a planned training step and emits the FlatBuffers
// program the runtime executes. Every value gets a tensor entry: function
// arguments and in-place updates point into the persistent region, other
// values into the arena at their planned offset (a reshape that aliases its
// operand shares the offset and needs no instruction).
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/TGX.h"

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Support/ProgramLimits.h"
#include "tgc/format/TGXFile.h"
#include "tgc/format/tgx_generated.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;

namespace tgc {
namespace {

class TGXWriter {
public:
  TGXWriter(func::FuncOp train, const MemoryPlan &trainPlan)
      : step(train), plan(&trainPlan), trainStep(train),
        trainPlan(trainPlan) {}

  LogicalResult write(const TGXInfo &info,
                      llvm::ArrayRef<TGXEntry> entries,
                      std::vector<uint8_t> &out);

private:
  FailureOr<tgx::DType> dtypeOf(Operation *where, Type type);
  LogicalResult addArguments();
  FailureOr<int32_t> addValue(Value value);
  LogicalResult addInstruction(Operation *op);
  FailureOr<flatbuffers::Offset<tgx::Attr>> convertAttr(Operation *op,
                                                        NamedAttribute attr);
  LogicalResult addConstant(tg::ConstantOp op,
                            std::vector<flatbuffers::Offset<tgx::Attr>> &attrs);
  LogicalResult addBody(func::FuncOp function);
  FailureOr<flatbuffers::Offset<tgx::Entry>> addEntry(const TGXEntry &entry);

  /// The function being lowered and its plan: the training step, then each
  /// other entry in turn.
  func::FuncOp step;
  const MemoryPlan *plan;
  func::FuncOp trainStep;
  const MemoryPlan &trainPlan;
  flatbuffers::FlatBufferBuilder fbb{1 << 16};

  flatbuffers::Offset<flatbuffers::String> str(llvm::StringRef s) {
    return fbb.CreateString(s.data(), s.size());
  }
  std::vector<flatbuffers::Offset<tgx::Tensor>> tensors;
  std::vector<flatbuffers::Offset<tgx::Instruction>> instructions;
  llvm::DenseMap<Value, int32_t> tensorOf;
  /// The inputs of shape buckets (`tokens@64`), shared by their steps.
  llvm::StringMap<int32_t> bucketInputs;
  std::vector<uint8_t> constants;
};

FailureOr<tgx::DType> TGXWriter::dtypeOf(Operation *where, Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return tgx::DType::F32;
  if (element.isF16())
    return tgx::DType::F16;
  if (element.isBF16())
    return tgx::DType::BF16;
  if (element.isSignlessInteger(64))
    return tgx::DType::I64;
  if (element.isSignlessInteger(32))
    return tgx::DType::I32;
  if (element.isSignlessInteger(8))
    return tgx::DType::I8;
  if (element.isUnsignedInteger(8))
    return tgx::DType::U8;
  if (element.isSignlessInteger(1))
    return tgx::DType::I1;
  return where->emitOpError("the executable format has no element type ")
         << element;
}

static tgx::InitKind convertInit(tg::InitKind kind) {
  switch (kind) {
  case tg::InitKind::Zeros:
    return tgx::InitKind::Zeros;
  case tg::InitKind::Ones:
    return tgx::InitKind::Ones;
  case tg::InitKind::Normal:
    return tgx::InitKind::Normal;
  case tg::InitKind::Uniform:
    return tgx::InitKind::Uniform;
  case tg::InitKind::Constant:
    return tgx::InitKind::Constant;
  }
  return tgx::InitKind::None;
}

static tgx::Role convertRole(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Param:
  case MemoryKind::FrozenParam:
    return tgx::Role::Param;
  case MemoryKind::OptimizerState:
    return tgx::Role::State;
  case MemoryKind::GradAccumulator:
    return tgx::Role::Accumulator;
  case MemoryKind::OffloadedActivation:
    return tgx::Role::Scratch;
  case MemoryKind::Input:
    return tgx::Role::Input;
  default:
    return tgx::Role::Transient;
  }
}

LogicalResult TGXWriter::addArguments() {
  Block &body = step.getBody().front();
  for (const PersistentTensor &persistent : trainPlan.persistent) {
    BlockArgument arg = body.getArgument(persistent.argNumber);
    auto type = cast<RankedTensorType>(arg.getType());
    FailureOr<tgx::DType> dtype = dtypeOf(step, type);
    if (failed(dtype))
      return failure();
    tgx::InitKind init = tgx::InitKind::None;
    double a = 0.0, b = 0.0;
    if (auto attr = step.getArgAttrOfType<tg::InitAttr>(
            persistent.argNumber, tg::TGDialect::kInitAttr)) {
      init = convertInit(attr.getKind());
      a = attr.getA().convertToDouble();
      b = attr.getB().convertToDouble();
    }
    bool frozen = bool(
        step.getArgAttr(persistent.argNumber, tg::TGDialect::kFrozenAttr));
    flatbuffers::Offset<flatbuffers::String> loraBase;
    double loraScale = 0.0;
    bool fanInFanOut = false;
    if (auto lora = step.getArgAttrOfType<DictionaryAttr>(
            persistent.argNumber, tg::TGDialect::kLoraAttr)) {
      loraBase = str(lora.getAs<StringAttr>("base").getValue());
      loraScale = lora.getAs<FloatAttr>("scale").getValueAsDouble();
      fanInFanOut = lora.getAs<BoolAttr>("fan_in_fan_out").getValue();
    }
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> shardOf;
    if (auto whole = step.getArgAttrOfType<DenseI64ArrayAttr>(
            persistent.argNumber, tg::TGDialect::kShardOfAttr))
      shardOf = fbb.CreateVector(whole.asArrayRef().vec());
    // A frozen copy is state to the runtime: checkpointed, not a weight
    // loaded or exported.
    tgx::Role role = convertRole(persistent.kind);
    flatbuffers::Offset<flatbuffers::String> copyOf;
    if (auto source = step.getArgAttrOfType<StringAttr>(
            persistent.argNumber, tg::TGDialect::kCopyOfAttr)) {
      copyOf = str(source.getValue());
      role = tgx::Role::State;
    }
    auto name = str(persistent.name);
    auto shape = fbb.CreateVector(type.getShape().vec());
    tensorOf[arg] = tensors.size();
    tensors.push_back(
        tgx::CreateTensor(fbb, name, *dtype, shape, tgx::Storage::Persistent,
                          persistent.offset, role, init, a, b, frozen, loraBase,
                          loraScale, fanInFanOut, shardOf, copyOf));
  }
  return success();
}

FailureOr<int32_t> TGXWriter::addValue(Value value) {
  auto known = tensorOf.find(value);
  if (known != tensorOf.end())
    return known->second;
  auto donated = plan->donatedTo.find(value);
  if (donated != plan->donatedTo.end()) {
    int32_t index = tensorOf.lookup(
        step.getBody().front().getArgument(donated->second));
    tensorOf[value] = index;
    return index;
  }
  Operation *def = value.getDefiningOp();
  auto buffer = plan->bufferOfValue.find(value);
  if (!def || buffer == plan->bufferOfValue.end())
    return step.emitOpError("internal error: a value has no planned buffer");
  auto type = cast<RankedTensorType>(value.getType());
  FailureOr<tgx::DType> dtype = dtypeOf(def, type);
  if (failed(dtype))
    return failure();
  std::string name = (def->getName().getStringRef() + "#" +
                      llvm::Twine(tensors.size()))
                         .str();
  int64_t offset = plan->buffers[buffer->second].offset;
  tensorOf[value] = tensors.size();
  tensors.push_back(tgx::CreateTensor(
      fbb, str(name), *dtype,
      fbb.CreateVector(type.getShape().vec()), tgx::Storage::Arena, offset,
      tgx::Role::Transient));
  return int32_t(tensors.size() - 1);
}

FailureOr<flatbuffers::Offset<tgx::Attr>>
TGXWriter::convertAttr(Operation *op, NamedAttribute attr) {
  auto name = str(attr.getName().getValue());
  Attribute value = attr.getValue();
  if (auto b = dyn_cast<BoolAttr>(value))
    return tgx::CreateAttr(fbb, name, tgx::AttrKind::Bool, b.getValue());
  if (auto i = dyn_cast<IntegerAttr>(value))
    return tgx::CreateAttr(fbb, name, tgx::AttrKind::Int, i.getInt());
  if (auto f = dyn_cast<FloatAttr>(value))
    return tgx::CreateAttr(fbb, name, tgx::AttrKind::Float, 0,
                           f.getValueAsDouble());
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(value))
    return tgx::CreateAttr(fbb, name, tgx::AttrKind::Ints, 0, 0.0,
                           fbb.CreateVector(ints.asArrayRef().vec()));
  return op->emitOpError("the executable format cannot express attribute '")
         << attr.getName().getValue() << "'";
}

/// Appends a constant's elements to the blob in the runtime's layout and
/// points the instruction at them.
LogicalResult
TGXWriter::addConstant(tg::ConstantOp op,
                       std::vector<flatbuffers::Offset<tgx::Attr>> &attrs) {
  auto elements = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!elements)
    return op.emitOpError("only dense constants can be compiled");
  // The executable is one FlatBuffer, which cannot exceed 2 GiB: the
  // constants may take at most kMaxConstantBytes of it.
  int64_t bytesNeeded = tg::getTensorBytes(op.getType());
  if (int64_t(constants.size()) + bytesNeeded > kMaxConstantBytes)
    return op.emitOpError("brings the executable's constants to ")
           << int64_t(constants.size()) + bytesNeeded
           << " bytes, more than the format's limit of " << kMaxConstantBytes;
  size_t start = constants.size();
  Type element = elements.getElementType();
  auto append = [&](uint64_t bits, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      constants.push_back(uint8_t(bits >> (8 * i)));
  };
  if (isa<FloatType>(element)) {
    unsigned bytes = element.getIntOrFloatBitWidth() / 8;
    for (APFloat v : elements.getValues<APFloat>())
      append(v.bitcastToAPInt().getZExtValue(), bytes);
  } else {
    unsigned bytes = std::max(1u, element.getIntOrFloatBitWidth() / 8);
    for (APInt v : elements.getValues<APInt>())
      append(v.getZExtValue(), bytes);
  }
  attrs.push_back(tgx::CreateAttr(fbb, str("blob_offset"),
                                  tgx::AttrKind::Int, int64_t(start)));
  attrs.push_back(tgx::CreateAttr(fbb, str("blob_bytes"),
                                  tgx::AttrKind::Int,
                                  int64_t(constants.size() - start)));
  return success();
}

LogicalResult TGXWriter::addInstruction(Operation *op) {
  // A reshape sharing its operand's buffer is a view: nothing to run.
  if (isa<tg::ReshapeOp>(op)) {
    auto in = plan->bufferOfValue.find(op->getOperand(0));
    auto out = plan->bufferOfValue.find(op->getResult(0));
    if (in != plan->bufferOfValue.end() && out != plan->bufferOfValue.end() &&
        in->second == out->second) {
      return success(succeeded(addValue(op->getResult(0))));
    }
  }
  // The runtime knows a 4-bit weight by its codes' tg.quant4 (what it
  // draws, loads and quantizes), not by the products that read it.
  if (auto product = dyn_cast<tg::Matmul4bitOp>(op))
    if (auto codes = dyn_cast<BlockArgument>(product.getCodes()))
      if (auto name = step.getArgAttrOfType<StringAttr>(
              codes.getArgNumber(), tg::TGDialect::kParamAttr);
          name &&
          !step.getArgAttr(codes.getArgNumber(), tg::TGDialect::kQuant4Attr))
        return op->emitOpError("reads the 4-bit codes '")
               << name.getValue()
               << "', which carry no 'tg.quant4' layout (tg-quantize-frozen "
                  "makes both)";
  std::vector<int32_t> operands, results;
  for (Value operand : op->getOperands()) {
    FailureOr<int32_t> index = addValue(operand);
    if (failed(index))
      return failure();
    operands.push_back(*index);
  }
  for (OpResult result : op->getResults()) {
    // A result the op does not compute (output_mask) has no tensor: -1.
    if (!tg::computesResult(op, result.getResultNumber())) {
      results.push_back(-1);
      continue;
    }
    FailureOr<int32_t> index = addValue(result);
    if (failed(index))
      return failure();
    results.push_back(*index);
  }
  std::vector<flatbuffers::Offset<tgx::Attr>> attrs;
  if (auto constant = dyn_cast<tg::ConstantOp>(op)) {
    if (failed(addConstant(constant, attrs)))
      return failure();
  } else {
    for (NamedAttribute attr : op->getAttrDictionary()) {
      if (attr.getName() == "scale" &&
          isa<tg::AttentionOp, tg::AttentionGradOp>(op))
        continue;
      // Only the op's own (ODS) attributes, as the runtime's kernelSpec
      // lists them: discardable ones (marks for passes such as tg.remat)
      // mean nothing to it. Optional operands are told apart by type in
      // the runtime; output_mask becomes results not computed.
      if (!llvm::is_contained(op->getName().getAttributeNames(),
                              attr.getName()) ||
          attr.getName() == "operandSegmentSizes" ||
          attr.getName() == tg::kOutputMaskAttr)
        continue;
      FailureOr<flatbuffers::Offset<tgx::Attr>> converted =
          convertAttr(op, attr);
      if (failed(converted))
        return failure();
      attrs.push_back(*converted);
    }
  }
  // Attention's default scale is resolved here, once, for every backend.
  if (isa<tg::AttentionOp, tg::AttentionGradOp>(op)) {
    auto scaleAttr = op->getAttrOfType<FloatAttr>("scale");
    int64_t headSize =
        cast<RankedTensorType>(op->getOperand(0).getType()).getShape().back();
    double scale = scaleAttr ? scaleAttr.getValueAsDouble()
                             : 1.0 / std::sqrt(double(headSize));
    attrs.push_back(tgx::CreateAttr(fbb, str("scale"),
                                    tgx::AttrKind::Float, 0, scale));
  }
  instructions.push_back(tgx::CreateInstruction(
      fbb, str(op->getName().getStringRef()),
      fbb.CreateVector(operands), fbb.CreateVector(results),
      fbb.CreateVector(attrs)));
  return success();
}

LogicalResult TGXWriter::addBody(func::FuncOp function) {
  for (Operation &op : function.getBody().front().without_terminator()) {
    if (op.getDialect() && op.getDialect()->getNamespace() != "tg")
      return op.emitOpError("cannot be compiled to the executable format: "
                            "only tg ops run in the runtime");
    if (failed(addInstruction(&op)))
      return failure();
  }
  return success();
}

/// The loss of `function`: its result marked tg.loss, or the first result
/// of a model (its forward pass and loss, then its metrics).
static Value lossOf(func::FuncOp function) {
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (function.getResultAttr(i, tg::TGDialect::kLossAttr))
      return value;
  if (function->hasAttr(tg::TGDialect::kModelAttr) && ret.getNumOperands() >= 1)
    return ret.getOperand(0);
  return Value();
}

FailureOr<flatbuffers::Offset<tgx::Entry>>
TGXWriter::addEntry(const TGXEntry &entry) {
  step = entry.function;
  plan = entry.plan;
  // Its arguments are the training step's persistent tensors of the same
  // names, with the same types.
  Block &trainBody = trainStep.getBody().front();
  Block &body = step.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    StringAttr name;
    for (StringRef role : {tg::TGDialect::kParamAttr, tg::TGDialect::kInputAttr,
                           tg::TGDialect::kStateAttr})
      if (!name)
        name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role);
    const PersistentTensor *shared = nullptr;
    for (const PersistentTensor &persistent : trainPlan.persistent)
      if (name && persistent.name == name.getValue())
        shared = &persistent;
    if (!shared)
      return step.emitOpError("entry '")
             << entry.name << "': argument #" << arg.getArgNumber()
             << " is not a tensor of the training step";
    BlockArgument trainArg = trainBody.getArgument(shared->argNumber);
    if (entry.seqLen > 0 && shared->kind == MemoryKind::Input) {
      // A bucket's input: its own [.., L] tensor at the offset of the
      // training step's input, which holds at least as many elements.
      auto type = cast<RankedTensorType>(arg.getType());
      auto trainType = cast<RankedTensorType>(trainArg.getType());
      if (type.getElementType() != trainType.getElementType() ||
          type.getNumElements() > trainType.getNumElements())
        return step.emitOpError("entry '")
               << entry.name << "': input '" << name.getValue()
               << "' of type " << type
               << " does not fit in the training step's " << trainType;
      // The bucket's training and evaluation steps share it.
      std::string bucketName = (name.getValue() + "@" + Twine(entry.seqLen)).str();
      auto [known, added] = bucketInputs.try_emplace(bucketName, tensors.size());
      if (!added) {
        tensorOf[arg] = known->second;
        continue;
      }
      FailureOr<tgx::DType> dtype = dtypeOf(step, type);
      if (failed(dtype))
        return failure();
      tensorOf[arg] = tensors.size();
      tensors.push_back(tgx::CreateTensor(
          fbb, str(bucketName), *dtype,
          fbb.CreateVector(type.getShape().vec()), tgx::Storage::Persistent,
          shared->offset, tgx::Role::Input));
      continue;
    }
    if (trainArg.getType() != arg.getType())
      return step.emitOpError("entry '")
             << entry.name << "': '" << name.getValue() << "' has type "
             << arg.getType() << ", the training step's "
             << trainArg.getType();
    tensorOf[arg] = tensorOf.lookup(trainArg);
  }
  std::vector<flatbuffers::Offset<tgx::Instruction>> trainInstructions;
  std::swap(instructions, trainInstructions);
  if (failed(addBody(step)))
    return failure();
  Value loss = lossOf(step);
  if (!loss)
    return step.emitOpError("entry '") << entry.name << "' has no loss";
  FailureOr<int32_t> lossIndex = addValue(loss);
  if (failed(lossIndex))
    return failure();
  auto offset = tgx::CreateEntry(
      fbb, str(entry.name), fbb.CreateVector(instructions),
      plan->layout.arenaSize, plan->layout.peakLive, *lossIndex, entry.seqLen,
      entry.trains);
  std::swap(instructions, trainInstructions);
  return offset;
}

LogicalResult TGXWriter::write(const TGXInfo &info,
                               llvm::ArrayRef<TGXEntry> entries,
                               std::vector<uint8_t> &out) {
  if (failed(addArguments()) || failed(addBody(trainStep)))
    return failure();
  Value lossValue = lossOf(trainStep);
  if (!lossValue)
    return step.emitOpError("has no result marked tg.loss to compile");
  FailureOr<int32_t> loss = addValue(lossValue);
  if (failed(loss))
    return failure();
  std::vector<flatbuffers::Offset<tgx::Metric>> metrics;
  auto ret = cast<func::ReturnOp>(trainStep.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = trainStep.getResultAttrOfType<StringAttr>(
        i, tg::TGDialect::kMetricAttr);
    if (!name)
      continue;
    FailureOr<int32_t> tensor = addValue(value);
    if (failed(tensor))
      return failure();
    metrics.push_back(tgx::CreateMetric(fbb, str(name.getValue()), *tensor));
  }
  Block &body = trainStep.getBody().front();
  int32_t counter = -1;
  for (const PersistentTensor &persistent : trainPlan.persistent)
    if (persistent.name == tg::TGDialect::kStepCounterName)
      counter = tensorOf.lookup(body.getArgument(persistent.argNumber));
  // The 4-bit weights, as their codes' tg.quant4 names them.
  llvm::StringMap<int32_t> persistentNamed;
  for (const PersistentTensor &persistent : trainPlan.persistent)
    persistentNamed[persistent.name] =
        tensorOf.lookup(body.getArgument(persistent.argNumber));
  std::vector<flatbuffers::Offset<tgx::Weight4bit>> weights4bit;
  for (const PersistentTensor &persistent : trainPlan.persistent) {
    auto layout = trainStep.getArgAttrOfType<DictionaryAttr>(
        persistent.argNumber, tg::TGDialect::kQuant4Attr);
    if (!layout)
      continue;
    static constexpr StringLiteral kScales[] = {"absmax", "nested_absmax",
                                                "offset"};
    int32_t scales[3] = {-1, -1, -1};
    for (auto [key, scale] : llvm::zip(kScales, scales)) {
      auto name = layout.getAs<StringAttr>(key);
      if (!name)
        continue;
      auto found = persistentNamed.find(name.getValue());
      if (found == persistentNamed.end())
        return trainStep.emitOpError("has the 4-bit weight '")
               << persistent.name << "' whose " << key << " '"
               << name.getValue() << "' is not a persistent tensor of it";
      scale = found->second;
    }
    auto integer = [&](StringRef key) {
      return layout.getAs<IntegerAttr>(key).getInt();
    };
    weights4bit.push_back(tgx::CreateWeight4bit(
        fbb, tensorOf.lookup(body.getArgument(persistent.argNumber)), scales[0],
        scales[1], scales[2], integer("rows"), integer("cols"),
        integer("block_size"),
        layout.getAs<StringAttr>("type").getValue() == "fp4"));
  }
  auto trainInstructions = fbb.CreateVector(instructions);
  instructions.clear();

  // Every entry runs in the one arena, at its own offsets.
  int64_t arena = trainPlan.layout.arenaSize;
  std::vector<flatbuffers::Offset<tgx::Entry>> entryOffsets;
  for (const TGXEntry &entry : entries) {
    FailureOr<flatbuffers::Offset<tgx::Entry>> offset = addEntry(entry);
    if (failed(offset))
      return failure();
    entryOffsets.push_back(*offset);
    arena = std::max(arena, entry.plan->layout.arenaSize);
  }

  // The loader's limits on the regions (a vocabulary of 2^40 plans one
  // past them): refused here rather than written for tgc-run to refuse.
  if (std::string past = checkRegionBytes(trainPlan.persistentSize, arena);
      !past.empty())
    return trainStep.emitError("tgc-lower-to-tgx: ")
           << past << "; tgc-run would not load the executable";

  // Gradient accumulation: K micro-steps (the grad_step entry) per step.
  int64_t accumSteps = 1;
  if (auto accum = trainStep->getAttrOfType<DictionaryAttr>(
          tg::TGDialect::kGradAccumAttr)) {
    accumSteps = accum.getAs<IntegerAttr>("steps").getInt();
    if (!llvm::any_of(entries, [](const TGXEntry &entry) {
          return entry.name == "grad_step";
        }))
      return trainStep.emitOpError("accumulates gradients but the "
                                   "executable has no grad_step entry");
  }

  int64_t worldSize = 1, shardGroup = 0;
  flatbuffers::Offset<flatbuffers::String> dataParallel;
  if (auto parallel = trainStep->getAttrOfType<DictionaryAttr>(
          tg::TGDialect::kDataParallelAttr)) {
    worldSize = parallel.getAs<IntegerAttr>("world_size").getInt();
    dataParallel = str(parallel.getAs<StringAttr>("mode").getValue());
    if (auto group = parallel.getAs<IntegerAttr>("shard_group"))
      shardGroup = group.getInt();
  }

  auto program = tgx::CreateProgram(
      fbb, tgx::kFormatVersion, str(info.model), str(info.options),
      fbb.CreateVector(tensors), trainPlan.persistentSize, arena,
      trainPlan.layout.peakLive, trainPlan.alignment, trainInstructions, *loss,
      counter, fbb.CreateVector(constants), fbb.CreateVector(entryOffsets),
      accumSteps, info.allowTF32, str(info.task), info.seqLen, worldSize,
      dataParallel, str(info.hfConfig), str(info.hfConfigError),
      trainPlan.hostSize, fbb.CreateVector(metrics), str(info.preference),
      shardGroup, fbb.CreateVector(weights4bit));
  tgx::FinishProgramBuffer(fbb, program);
  out.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  tgx::appendTrailer(out);
  return success();
}

} // namespace

LogicalResult writeTGX(func::FuncOp step, const MemoryPlan &plan,
                       const TGXInfo &info,
                       llvm::ArrayRef<TGXEntry> entries,
                       std::vector<uint8_t> &out) {
  return TGXWriter(step, plan).write(info, entries, out);
}

} // namespace tgc
