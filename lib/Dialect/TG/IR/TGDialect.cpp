//===- TGDialect.cpp - the tg dialect -------------------------------------===//
//
// Registers the tg ops and attributes and verifies the two function
// conventions:
// - a model: a `func.func` marked `tg.model` whose arguments are named
//   parameters (`tg.param`, with optional `tg.frozen` and `tg.init`) or
//   named inputs (`tg.input`) and which returns the scalar loss;
// - a training step: a `func.func` marked `tg.train_step` whose arguments
//   are parameters, state (`tg.state`) and inputs, and whose results are the
//   loss (`tg.loss`) and in-place updates (`tg.update = "name"`).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Support/Quant4bit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace tgc::tg;

#include "tgc/Dialect/TG/IR/TGDialect.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tgc/Dialect/TG/IR/TGOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// Argument attributes
//===----------------------------------------------------------------------===//

/// Whether `type` is a statically shaped tensor of f32, f16 or bf16.
static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         isa<Float32Type, Float16Type, BFloat16Type>(tensor.getElementType());
}

/// Whether `type` is a statically shaped tensor of an element type tg knows.
static bool isTGTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return false;
  Type element = tensor.getElementType();
  return isa<Float32Type, Float16Type, BFloat16Type>(element) ||
         element.isSignlessInteger(64) || element.isSignlessInteger(32) ||
         element.isSignlessInteger(8) || element.isSignlessInteger(1);
}

/// Whether `type` holds the codes of 8-bit optimizer state (ui8), valid
/// only as state.
static bool isCodeTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         tensor.getElementType().isUnsignedInteger(8);
}

LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitOpError("'")
           << attr.getName().getValue()
           << "' is only valid on the arguments of a function";
  StringRef name = attr.getName().getValue();
  Type argType = function.getArgumentTypes()[argIndex];
  auto emitArgError = [&]() {
    return op->emitOpError("argument #") << argIndex << ": ";
  };

  if (name == kParamAttr || name == kInputAttr || name == kStateAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || str.getValue().empty())
      return emitArgError() << "'" << name
                            << "' must be a non-empty string, found "
                            << attr.getValue();
    // The names become checkpoint (safetensors) names.
    if (str.getValue() == "__metadata__" ||
        llvm::any_of(str.getValue(), [](char c) {
          return c < 0x20 || c > 0x7e || c == '"' || c == '\\';
        }))
      return emitArgError() << "'" << name << "' = " << str
                            << " cannot name a tensor in a checkpoint: use "
                               "printable ASCII without quotes or "
                               "backslashes, other than __metadata__";
    if (failed(verifyTensorSize(argType, [&]() { return emitArgError(); })))
      return failure();
    // Report a clash once, on the first of the roles in this order.
    StringRef roles[] = {kParamAttr, kStateAttr, kInputAttr};
    for (StringRef other : roles) {
      if (other == name)
        break;
      if (function.getArgAttr(argIndex, other))
        return success();
    }
    for (StringRef other : roles)
      if (other != name && function.getArgAttr(argIndex, other))
        return emitArgError()
               << "carries both '" << name << "' and '" << other
               << "'; an argument is a parameter, a state or an input";
    if (name == kParamAttr) {
      // A frozen parameter may be ui8 codes: a 4-bit weight's, or its
      // double-quantized absmax (tg-quantize-frozen).
      bool frozenCodes = isCodeTensor(argType) &&
                         function.getArgAttr(argIndex, kFrozenAttr);
      if (!isFloatTensor(argType) && !frozenCodes)
        return emitArgError() << "parameter '" << str.getValue()
                              << "' must be a statically shaped f32, f16 or "
                                 "bf16 tensor (or, frozen, ui8 codes), found "
                              << argType;
    } else if (!isTGTensor(argType) &&
               !(name == kStateAttr && isCodeTensor(argType))) {
      return emitArgError() << (name == kInputAttr ? "input '" : "state '")
                            << str.getValue()
                            << "' must be a statically shaped tensor of a tg "
                               "element type, found "
                            << argType;
    }
    return success();
  }

  if (name == kFrozenAttr || name == kInitAttr) {
    if (name == kFrozenAttr && !isa<UnitAttr>(attr.getValue()))
      return emitArgError() << "'tg.frozen' is a unit attribute, found "
                            << attr.getValue();
    if (name == kInitAttr && !isa<InitAttr>(attr.getValue()))
      return emitArgError() << "'tg.init' must be a #tg.init attribute, found "
                            << attr.getValue();
    if (name == kFrozenAttr && !function.getArgAttr(argIndex, kParamAttr))
      return emitArgError() << "'" << name
                            << "' is only valid on a parameter ('tg.param')";
    if (name == kInitAttr && !function.getArgAttr(argIndex, kParamAttr) &&
        !function.getArgAttr(argIndex, kStateAttr))
      return emitArgError() << "'" << name
                            << "' is only valid on a parameter ('tg.param') "
                               "or a state ('tg.state')";
    return success();
  }

  if (name == kCopyOfAttr) {
    auto source = dyn_cast<StringAttr>(attr.getValue());
    if (!source || source.getValue().empty())
      return emitArgError() << "'tg.copy_of' must be a parameter's name, found "
                            << attr.getValue();
    if (!function.getArgAttr(argIndex, kParamAttr) ||
        !function.getArgAttr(argIndex, kFrozenAttr))
      return emitArgError() << "'tg.copy_of' is only valid on a frozen "
                               "parameter ('tg.param', 'tg.frozen')";
    return success();
  }

  if (name == kLoraAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto base = dict ? dict.getAs<StringAttr>("base") : StringAttr();
    auto scale = dict ? dict.getAs<FloatAttr>("scale") : FloatAttr();
    auto layout = dict ? dict.getAs<BoolAttr>("fan_in_fan_out") : BoolAttr();
    if (!base || base.getValue().empty() || !scale ||
        !(scale.getValueAsDouble() > 0.0) || !layout || dict.size() != 3)
      return emitArgError() << "'tg.lora' must be {base = \"<weight>\", "
                               "scale = <positive f64>, fan_in_fan_out = "
                               "<bool>}, found "
                            << attr.getValue();
    if (!function.getArgAttr(argIndex, kParamAttr))
      return emitArgError() << "'tg.lora' is only valid on a parameter "
                               "('tg.param')";
    return success();
  }

  if (name == kQuant4Attr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto positive = [&](StringRef key) {
      auto value = dict ? dict.getAs<IntegerAttr>(key) : IntegerAttr();
      return value && value.getInt() > 0 ? value.getInt() : int64_t(0);
    };
    auto named = [&](StringRef key) {
      auto value = dict ? dict.getAs<StringAttr>(key) : StringAttr();
      return value && !value.getValue().empty();
    };
    auto type = dict ? dict.getAs<StringAttr>("type") : StringAttr();
    int64_t rows = positive("rows"), cols = positive("cols"),
            block = positive("block_size");
    bool nested = named("nested_absmax") && named("offset");
    if (!rows || !cols || !block || block % 2 ||
        block > quant4::kMaxBlockSize || !type ||
        (type.getValue() != "nf4" && type.getValue() != "fp4") ||
        !named("absmax") || dict.size() != (nested ? 7u : 5u))
      return emitArgError()
             << "'tg.quant4' must be {rows = <positive>, cols = <positive>, "
                "block_size = <even in [2, 4096]>, type = \"nf4\" | \"fp4\", "
                "absmax = \"<parameter>\"[, nested_absmax = \"<parameter>\", "
                "offset = \"<parameter>\"]}, found "
             << attr.getValue();
    auto type1d = dyn_cast<RankedTensorType>(argType);
    if (!function.getArgAttr(argIndex, kParamAttr) ||
        !function.getArgAttr(argIndex, kFrozenAttr) || !type1d ||
        type1d.getRank() != 1 || !isCodeTensor(argType))
      return emitArgError() << "'tg.quant4' is only valid on the 1-D ui8 "
                               "codes of a frozen parameter ('tg.param', "
                               "'tg.frozen')";
    // The codes hold two weights a byte (zero3: a part of them).
    int64_t codes = type1d.getDimSize(0);
    auto whole =
        function.getArgAttrOfType<DenseI64ArrayAttr>(argIndex, kShardOfAttr);
    if (whole)
      codes = whole.size() == 1 ? whole[0] : -1;
    if (rows > (int64_t(1) << 40) / cols)
      return emitArgError() << "'tg.quant4' of a " << rows << " x " << cols
                            << " weight: more than 2^40 weights";
    if (codes != (rows * cols + 1) / 2) {
      InFlightDiagnostic diag = emitArgError()
                                << "'tg.quant4' of a " << rows << " x " << cols
                                << " weight needs " << (rows * cols + 1) / 2
                                << " bytes of codes, found ";
      if (whole)
        return diag << "a part of " << whole;
      return diag << argType;
    }
    return success();
  }

  if (name == kHostAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return emitArgError() << "'tg.host' is a unit attribute, found "
                            << attr.getValue();
    auto state = function.getArgAttrOfType<StringAttr>(argIndex, kStateAttr);
    if (!state || state.getValue().starts_with(kGradAccumPrefix))
      return emitArgError() << "'tg.host' is only valid on optimizer state "
                               "('tg.state', not an accumulator)";
    return success();
  }

  if (name == kShardOfAttr) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto type = dyn_cast<RankedTensorType>(argType);
    if (!shape || llvm::any_of(shape.asArrayRef(),
                               [](int64_t d) { return d < 0; }))
      return emitArgError() << "'tg.shard_of' must be the whole tensor's "
                               "shape (array<i64>), found "
                            << attr.getValue();
    if (!(function.getArgAttr(argIndex, kStateAttr) ||
          function.getArgAttr(argIndex, kParamAttr)) ||
        !type || type.getRank() != 1)
      return emitArgError() << "'tg.shard_of' is only valid on a 1-D "
                               "parameter or state ('tg.param', 'tg.state'), "
                               "a part of the flattened whole";
    int64_t whole = 1;
    for (int64_t d : shape.asArrayRef())
      whole *= d;
    if (whole > 0 && type.getDimSize(0) == 0)
      return emitArgError() << "'tg.shard_of' on an empty part of a "
                               "non-empty tensor";
    return success();
  }

  return emitArgError() << "unknown tg argument attribute '" << name << "'";
}

//===----------------------------------------------------------------------===//
// The model convention
//===----------------------------------------------------------------------===//

/// Checks that every argument of `function` has a role (parameter, input
/// and, if allowed, state) and that names are unique across all arguments.
/// The form of each attribute is checked by verifyRegionArgAttribute.
static LogicalResult verifyArgumentNames(func::FuncOp function,
                                         bool allowState) {
  StringRef kind = allowState ? "tg.train_step" : "tg.model";
  llvm::StringMap<unsigned> seen;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    Attribute param = function.getArgAttr(i, TGDialect::kParamAttr);
    Attribute input = function.getArgAttr(i, TGDialect::kInputAttr);
    Attribute state = function.getArgAttr(i, TGDialect::kStateAttr);
    if (state && !allowState)
      return function.emitOpError("argument #")
             << i << ": 'tg.state' is only valid in a tg.train_step function";
    Attribute named = param ? param : (state ? state : input);
    if (!named)
      return function.emitOpError("argument #")
             << i << " of a " << kind << " function must carry 'tg.param'"
             << (allowState ? ", 'tg.state'" : "") << " or 'tg.input'";
    auto name = dyn_cast<StringAttr>(named);
    if (!name)
      continue;
    auto [it, inserted] = seen.try_emplace(name.getValue(), i);
    if (!inserted)
      return function.emitOpError(param   ? "parameter"
                                  : state ? "state"
                                          : "input")
             << " name '" << name.getValue() << "' is used by arguments #"
             << it->second << " and #" << i;
  }
  return success();
}

/// Checks a function marked `tg.model`: every argument is named exactly once
/// as a parameter or an input, and the function returns the scalar loss.
/// Result `i` of `function` is a metric: a 0-d float carrying tg.metric.
static LogicalResult verifyMetricResult(func::FuncOp function, unsigned i) {
  Type type = function.getFunctionType().getResult(i);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!function.getResultAttr(i, TGDialect::kMetricAttr))
    return function.emitOpError("result #")
           << i
           << " must be a metric (carry 'tg.metric'): only the loss "
              "and metrics are returned";
  if (!tensor || tensor.getRank() != 0 || !isFloatTensor(tensor))
    return function.emitOpError("metric result #")
           << i << " must be a 0-d f32, f16 or bf16 tensor, found " << type;
  return success();
}

static LogicalResult verifyModelFunction(func::FuncOp function) {
  if (function.isExternal())
    return function.emitOpError("a tg.model function must have a body");

  if (failed(verifyArgumentNames(function, /*allowState=*/false)))
    return failure();

  FunctionType type = function.getFunctionType();
  auto loss = type.getNumResults() >= 1
                  ? dyn_cast<RankedTensorType>(type.getResult(0))
                  : RankedTensorType();
  if (!loss || loss.getRank() != 0 || !isFloatTensor(loss))
    return function.emitOpError(
               "a tg.model function must return one scalar loss (a 0-d f32, "
               "f16 or bf16 tensor), found ")
           << type.getResults();
  // After the loss, only metrics.
  for (unsigned i = 1, e = type.getNumResults(); i < e; ++i)
    if (failed(verifyMetricResult(function, i)))
      return failure();
  return success();
}

/// Checks a function marked `tg.train_step`: arguments as in a model plus
/// state; one result is the loss, every other one updates a distinct
/// parameter or state argument of the same type.
static LogicalResult verifyTrainStepFunction(func::FuncOp function) {
  if (function.isExternal())
    return function.emitOpError("a tg.train_step function must have a body");
  if (failed(verifyArgumentNames(function, /*allowState=*/true)))
    return failure();

  llvm::StringMap<unsigned> persistent;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    for (StringRef role : {TGDialect::kParamAttr, TGDialect::kStateAttr})
      if (auto name = function.getArgAttrOfType<StringAttr>(i, role))
        persistent.try_emplace(name.getValue(), i);

  FunctionType type = function.getFunctionType();
  std::optional<unsigned> loss;
  llvm::StringMap<unsigned> updated, gradients;
  for (unsigned i = 0, e = type.getNumResults(); i < e; ++i) {
    if (function.getResultAttr(i, TGDialect::kLossAttr)) {
      auto lossType = dyn_cast<RankedTensorType>(type.getResult(i));
      if (loss)
        return function.emitOpError("results #")
               << *loss << " and #" << i << " both carry 'tg.loss'";
      if (!lossType || lossType.getRank() != 0 || !isFloatTensor(lossType))
        return function.emitOpError("the loss (result #")
               << i << ") must be a 0-d f32, f16 or bf16 tensor, found "
               << type.getResult(i);
      loss = i;
      continue;
    }
    if (auto grad = function.getResultAttrOfType<StringAttr>(
            i, TGDialect::kGradAttr)) {
      auto target = persistent.find(grad.getValue());
      if (target == persistent.end() ||
          !function.getArgAttr(target->second, TGDialect::kParamAttr))
        return function.emitOpError("result #")
               << i << " is the gradient of '" << grad.getValue()
               << "', which is not a parameter argument";
      if (type.getResult(i) != type.getInput(target->second))
        return function.emitOpError("result #")
               << i << " is the gradient of '" << grad.getValue()
               << "' of type " << type.getInput(target->second)
               << " but has type " << type.getResult(i);
      auto [it, inserted] = gradients.try_emplace(grad.getValue(), i);
      if (!inserted)
        return function.emitOpError("results #")
               << it->second << " and #" << i << " are both the gradient of '"
               << grad.getValue() << "'";
      continue;
    }
    if (function.getResultAttr(i, TGDialect::kMetricAttr)) {
      if (failed(verifyMetricResult(function, i)))
        return failure();
      continue;
    }
    auto name = function.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    if (!name)
      return function.emitOpError("result #")
             << i
             << " of a tg.train_step function must carry 'tg.loss', "
                "'tg.grad', 'tg.update' or 'tg.metric'";
    auto target = persistent.find(name.getValue());
    if (target == persistent.end())
      return function.emitOpError("result #")
             << i << " updates '" << name.getValue()
             << "', which is not a parameter or state argument";
    if (type.getResult(i) != type.getInput(target->second))
      return function.emitOpError("result #")
             << i << " updates '" << name.getValue() << "' of type "
             << type.getInput(target->second) << " with a value of type "
             << type.getResult(i);
    // A returned argument must be the tensor the result names (it is then
    // unchanged); the planner writes nothing for it.
    Block &body = function.getBody().front();
    auto ret = body.empty() ? func::ReturnOp()
                            : dyn_cast<func::ReturnOp>(body.back());
    BlockArgument arg;
    if (ret && i < ret.getNumOperands())
      arg = dyn_cast<BlockArgument>(ret.getOperand(i));
    if (arg && arg.getArgNumber() != target->second)
      return function.emitOpError("result #")
             << i << " updates '" << name.getValue()
             << "' but returns argument #" << arg.getArgNumber()
             << ", not that tensor";
    auto [it, inserted] = updated.try_emplace(name.getValue(), i);
    if (!inserted)
      return function.emitOpError("results #")
             << it->second << " and #" << i << " both update '"
             << name.getValue() << "'";
  }
  if (!loss)
    return function.emitOpError(
        "a tg.train_step function must return the loss (a result carrying "
        "'tg.loss')");
  return success();
}

LogicalResult TGDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kLossAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("result #")
             << resultIndex << ": 'tg.loss' is a unit attribute, found "
             << attr.getValue();
    return success();
  }
  if (name == kUpdateAttr || name == kGradAttr || name == kMetricAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || str.getValue().empty())
      return op->emitOpError("result #")
             << resultIndex << ": '" << name
             << "' must be a non-empty string, found " << attr.getValue();
    return success();
  }
  return op->emitOpError("result #")
         << resultIndex << ": unknown tg result attribute '" << name << "'";
}

LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kTrainStepAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'tg.train_step' is a unit attribute, found ")
             << attr.getValue();
    auto function = dyn_cast<func::FuncOp>(op);
    if (!function)
      return op->emitOpError("'tg.train_step' is only valid on a func.func");
    return verifyTrainStepFunction(function);
  }
  if (name == kHFConfigRefusedAttr) {
    if (!isa<StringAttr>(attr.getValue()) || !op->hasAttr(kModelAttr))
      return op->emitOpError("'tg.hf_config_refused' is a string on a "
                             "tg.model function, found ")
             << attr.getValue();
    return success();
  }
  if (name == kHFConfigAttr) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || !op->hasAttr(kModelAttr))
      return op->emitOpError("'tg.hf_config' is a string on a tg.model "
                             "function, found ")
             << attr.getValue();
    llvm::Expected<llvm::json::Value> config =
        llvm::json::parse(text.getValue());
    if (!config) {
      std::string why = llvm::toString(config.takeError());
      return op->emitOpError("'tg.hf_config' is not JSON: ") << why;
    }
    if (!config->getAsObject())
      return op->emitOpError("'tg.hf_config' is not a JSON object");
    return success();
  }
  if (name == kGeneratorAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dict || !dict.getAs<StringAttr>("model") ||
        !dict.getAs<IntegerAttr>("batch") || !op->hasAttr(kModelAttr))
      return op->emitOpError("'tg.generator' is a dictionary with a string "
                             "'model' and an integer 'batch' on a tg.model "
                             "function, found ")
             << attr.getValue();
    return success();
  }
  if (name == kTaskAttr) {
    auto task = dyn_cast<StringAttr>(attr.getValue());
    if (!task ||
        !llvm::is_contained({StringRef(kTaskCausalLM), StringRef(kTaskMaskedLM),
                             StringRef(kTaskSeqCls), StringRef(kTaskSeq2Seq)},
                            task.getValue()))
      return op->emitOpError("'tg.task' is one of \"")
             << kTaskCausalLM << "\", \"" << kTaskMaskedLM << "\", \""
             << kTaskSeqCls << "\" or \"" << kTaskSeq2Seq << "\", found "
             << attr.getValue();
    return success();
  }
  if (name == kPreferenceAttr) {
    auto loss = dyn_cast<StringAttr>(attr.getValue());
    if (!loss || !op->hasAttr(kModelAttr) ||
        !llvm::is_contained({"dpo", "ipo", "simpo", "orpo"}, loss.getValue()))
      return op->emitOpError("'tg.preference' is one of \"dpo\", \"ipo\", "
                             "\"simpo\" or \"orpo\" on a tg.model function, "
                             "found ")
             << attr.getValue();
    return success();
  }
  if (name == kGradStepAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'tg.grad_step' is a unit attribute, found ")
             << attr.getValue();
    auto function = dyn_cast<func::FuncOp>(op);
    if (!function || function->hasAttr(kTrainStepAttr))
      return op->emitOpError("'tg.grad_step' marks a func.func that is not "
                             "a tg.train_step");
    // A micro-step follows the conventions of a training step.
    return verifyTrainStepFunction(function);
  }
  if (name == kGradAccumAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto steps = dict ? dict.getAs<IntegerAttr>("steps") : IntegerAttr();
    auto micro = dict ? dict.getAs<FlatSymbolRefAttr>("grad_step")
                      : FlatSymbolRefAttr();
    if (!steps || !micro || dict.size() != 2 || steps.getInt() < 2)
      return op->emitOpError("'tg.grad_accum' must be {steps = K (>= 2), "
                             "grad_step = @micro_step}, found ")
             << attr.getValue();
    if (!op->hasAttr(kTrainStepAttr))
      return op->emitOpError("'tg.grad_accum' belongs on a tg.train_step");
    return success();
  }
  if (name == kDataParallelAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto mode = dict ? dict.getAs<StringAttr>("mode") : StringAttr();
    auto ranks = dict ? dict.getAs<IntegerAttr>("world_size") : IntegerAttr();
    // Hybrid sharding: parts among groups of shard_group ranks (K dividing
    // N; absent: the whole job).
    auto group = dict ? dict.getAs<IntegerAttr>("shard_group") : IntegerAttr();
    if (!mode || !ranks || dict.size() != (group ? 3u : 2u) ||
        ranks.getInt() < 1 ||
        !llvm::is_contained({"ddp", "zero1", "zero2", "zero3"},
                            mode.getValue()) ||
        (group && (group.getInt() < 1 || mode.getValue() == "ddp" ||
                   ranks.getInt() % group.getInt() != 0)))
      return op->emitOpError("'tg.data_parallel' must be {mode = \"ddp\" | "
                             "\"zero1\" | \"zero2\" | \"zero3\", "
                             "world_size = N (>= 1)[, shard_group = K (a "
                             "ZeRO mode, K dividing N)]}, found ")
             << attr.getValue();
    if (!op->hasAttr(kTrainStepAttr))
      return op->emitOpError("'tg.data_parallel' belongs on a tg.train_step");
    return success();
  }
  if (name == kLossSeedAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FillOp>(op))
      return op->emitOpError("'tg.loss_seed' is a unit attribute on the "
                             "tg.fill that seeds the backward pass");
    return success();
  }
  if (name == kRematAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<TGDialect>(op->getDialect()) ||
        op->getNumResults() == 0)
      return op->emitOpError("'tg.remat' is a unit attribute on a tg op that "
                             "recomputes a value");
    return success();
  }
  if (name == kRecomputeAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<TGDialect>(op->getDialect()) ||
        op->getNumResults() == 0)
      return op->emitOpError("'tg.recompute' is a unit attribute on a tg op "
                             "whose results tg-remat recomputes");
    return success();
  }
  if (name == kModelAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'tg.model' is a unit attribute, found ")
             << attr.getValue();
    auto function = dyn_cast<func::FuncOp>(op);
    if (!function)
      return op->emitOpError("'tg.model' is only valid on a func.func");
    return verifyModelFunction(function);
  }
  return op->emitOpError("unknown tg attribute '") << name << "'";
}
