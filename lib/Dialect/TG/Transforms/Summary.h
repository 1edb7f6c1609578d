//===- Summary.h - what a pass did, as a remark -----------------*- C++ -*-===//
//
// A pass that changes what a step costs says what it did as an MLIR
// analysis remark: category the pass's name, name "summary", the function
// it rewrote, the one-line text and its numbers as metrics. Remarks are
// off unless asked for (`tgc-opt --remarks-filter=tg-remat
// --remark-format=emitRemark`, or yaml to a file), so they cost nothing
// otherwise, and tests check them by text. A pass's `print` option also
// writes the line to stderr, as it always has.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_SUMMARY_H
#define TGC_DIALECT_TG_TRANSFORMS_SUMMARY_H

#include "mlir/IR/Remarks.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc::tg {

/// Emits `line` as pass `pass`'s summary remark for `function` (at
/// `loc`), with `metrics`; prints "<pass>: <line>" to stderr when `print`.
inline void reportSummary(
    mlir::Location loc, llvm::StringRef pass, llvm::StringRef function,
    const std::string &line,
    const std::vector<std::pair<const char *, int64_t>> &metrics, bool print) {
  {
    auto remark = mlir::remark::analysis(
        loc, mlir::remark::RemarkOpts::name("summary")
                 .category(pass)
                 .function(function));
    remark << mlir::remark::add("{0}", line);
    for (const auto &[key, value] : metrics)
      remark << mlir::remark::metric(key, value);
  }
  if (print)
    llvm::errs() << pass << ": " << line << "\n";
}

} // namespace tgc::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_SUMMARY_H
