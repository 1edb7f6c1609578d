//===- TGInterfaces.cpp - op interfaces of the tg dialect -----------------===//
//
// Defines the gradient and cost interfaces and the byte-counting helpers the
// cost interface's default implementations use.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGInterfaces.h"

#include "tgc/Support/CheckedMath.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

int64_t tgc::tg::getElementByteSize(Type elementType) {
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

int64_t tgc::tg::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  return tensor.getNumElements() * getElementByteSize(tensor.getElementType());
}

int64_t tgc::tg::getTotalTensorBytes(TypeRange types) {
  int64_t total = 0;
  for (Type type : types)
    total += getTensorBytes(type);
  return total;
}

LogicalResult tgc::tg::verifyTensorSize(
    Type type, llvm::function_ref<InFlightDiagnostic()> emitError) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return success();
  if (!checkedTensorBytes(tensor.getShape(),
                          getElementByteSize(tensor.getElementType())))
    return emitError() << "type " << type << " holds more than "
                       << (kMaxTensorBytes >> 40)
                       << " TiB, the largest tensor tgc compiles";
  return success();
}

LogicalResult tgc::tg::verifyTensorSizes(Operation *op) {
  auto emit = [&]() { return op->emitOpError(); };
  for (Type type : op->getOperandTypes())
    if (failed(verifyTensorSize(type, emit)))
      return failure();
  for (Type type : op->getResultTypes())
    if (failed(verifyTensorSize(type, emit)))
      return failure();
  return success();
}

#include "tgc/Dialect/TG/IR/TGInterfaces.cpp.inc"
