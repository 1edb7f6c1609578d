//===- TGAttrs.cpp - attributes of the tg dialect -------------------------===//
//
// Parses, prints and verifies `#tg.init<...>`:
//   #tg.init<zeros>  #tg.init<ones>  #tg.init<constant(value)>
//   #tg.init<normal(mean, std)>  #tg.init<uniform(low, high)>
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGAttrs.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace tgc::tg;

#include "tgc/Dialect/TG/IR/TGEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tgc/Dialect/TG/IR/TGAttrs.cpp.inc"

void TGDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tgc/Dialect/TG/IR/TGAttrs.cpp.inc"
      >();
}

/// How many numbers an init kind takes.
static unsigned numArguments(InitKind kind) {
  switch (kind) {
  case InitKind::Normal:
  case InitKind::Uniform:
    return 2;
  case InitKind::Constant:
    return 1;
  default:
    return 0;
  }
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc, "unknown initialisation '")
        << keyword << "', expected zeros, ones, constant, normal or uniform";
    return {};
  }
  double a = 0.0, b = 0.0;
  if (numArguments(*kind) == 2) {
    if (parser.parseLParen() || parser.parseFloat(a) || parser.parseComma() ||
        parser.parseFloat(b) || parser.parseRParen())
      return {};
  } else if (numArguments(*kind) == 1) {
    if (parser.parseLParen() || parser.parseFloat(a) || parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, llvm::APFloat(a),
                    llvm::APFloat(b));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  if (numArguments(getKind()) > 0) {
    printer << '(';
    printer.printFloat(getA());
    if (numArguments(getKind()) == 2) {
      printer << ", ";
      printer.printFloat(getB());
    }
    printer << ')';
  }
  printer << '>';
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat first,
                               llvm::APFloat second) {
  double a = first.convertToDouble(), b = second.convertToDouble();
  if (!std::isfinite(a) || !std::isfinite(b))
    return emitError() << "initialisation parameters must be finite";
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    if (a != 0.0 || b != 0.0)
      return emitError() << stringifyInitKind(kind) << " takes no parameters";
    return success();
  case InitKind::Normal:
    if (!(b > 0.0))
      return emitError() << "normal initialisation needs std > 0, found " << b;
    return success();
  case InitKind::Uniform:
    if (!(a < b))
      return emitError() << "uniform initialisation needs low < high, found ["
                         << a << ", " << b << ")";
    return success();
  case InitKind::Constant:
    if (b != 0.0)
      return emitError() << "constant takes one number";
    return success();
  }
  return emitError() << "unknown initialisation kind";
}
