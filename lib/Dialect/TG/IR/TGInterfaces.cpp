//===- TGInterfaces.cpp - op interfaces of the tg dialect -----------------===//
//
// Defines the gradient and cost interfaces and the byte-counting helpers the
// cost interface's default implementations use.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

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

#include "tgc/Dialect/TG/IR/TGInterfaces.cpp.inc"
