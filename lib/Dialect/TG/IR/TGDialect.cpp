//===- TGDialect.cpp - the tg dialect -------------------------------------===//
//
// Registers the tg ops and attributes and verifies the model convention: a
// `func.func` marked `tg.model` whose arguments are named parameters
// (`tg.param`, with optional `tg.frozen` and `tg.init`) or named inputs
// (`tg.input`) and which returns the scalar loss.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"

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

  if (name == kParamAttr || name == kInputAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || str.getValue().empty())
      return emitArgError() << "'" << name
                            << "' must be a non-empty string, found "
                            << attr.getValue();
    if (name == kParamAttr) {
      if (function.getArgAttr(argIndex, kInputAttr))
        return emitArgError()
               << "carries both 'tg.param' and 'tg.input'; an argument is "
                  "either a parameter or an input";
      if (!isFloatTensor(argType))
        return emitArgError() << "parameter '" << str.getValue()
                              << "' must be a statically shaped f32, f16 or "
                                 "bf16 tensor, found "
                              << argType;
    } else if (!isTGTensor(argType)) {
      return emitArgError() << "input '" << str.getValue()
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
    if (!function.getArgAttr(argIndex, kParamAttr))
      return emitArgError() << "'" << name
                            << "' is only valid on a parameter ('tg.param')";
    return success();
  }

  return emitArgError() << "unknown tg argument attribute '" << name << "'";
}

//===----------------------------------------------------------------------===//
// The model convention
//===----------------------------------------------------------------------===//

/// Checks a function marked `tg.model`: every argument is named exactly once
/// as a parameter or an input, and the function returns the scalar loss.
static LogicalResult verifyModelFunction(func::FuncOp function) {
  if (function.isExternal())
    return function.emitOpError("a tg.model function must have a body");

  llvm::StringMap<unsigned> paramArgs, inputArgs;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto param = function.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttr);
    auto input = function.getArgAttrOfType<StringAttr>(i, TGDialect::kInputAttr);
    if (!param && !input)
      return function.emitOpError("argument #")
             << i << " of a tg.model function must carry 'tg.param' or "
                     "'tg.input'";
    auto &seen = param ? paramArgs : inputArgs;
    StringRef name = param ? param.getValue() : input.getValue();
    auto [it, inserted] = seen.try_emplace(name, i);
    if (!inserted)
      return function.emitOpError(param ? "parameter" : "input")
             << " name '" << name << "' is used by arguments #" << it->second
             << " and #" << i;
  }

  FunctionType type = function.getFunctionType();
  auto loss = type.getNumResults() == 1
                  ? dyn_cast<RankedTensorType>(type.getResult(0))
                  : RankedTensorType();
  if (!loss || loss.getRank() != 0 || !isFloatTensor(loss))
    return function.emitOpError(
               "a tg.model function must return one scalar loss (a 0-d f32, "
               "f16 or bf16 tensor), found ")
           << type.getResults();
  return success();
}

LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
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
