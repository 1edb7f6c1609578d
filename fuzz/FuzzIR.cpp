//===- FuzzIR.cpp - fuzzing the parsing and verification of tg IR ---------===//
//
// What tgc-opt and tgc-compile do first with a user's file: bound the
// nesting (tgc/Support/Nesting.h), parse with the tg and func dialects, and
// verify. Diagnostics are expected and discarded; crashes are not.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Support/Nesting.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <memory>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = reinterpret_cast<const char *>(data);
  if (tgc::findExcessNesting(text, size))
    return 0;
  // A context interns every type and attribute it parses, forever: start a
  // fresh one every few thousand inputs so that memory stays bounded.
  static std::unique_ptr<MLIRContext> context;
  static unsigned uses = 0;
  if (!context || ++uses % 4096 == 0) {
    context = std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED);
    context->loadDialect<tgc::tg::TGDialect, func::FuncDialect>();
    context->printOpOnDiagnostic(false);
  }
  ScopedDiagnosticHandler quiet(context.get(), [](Diagnostic &) { return success(); });
  // As the tools read files: a null-terminated buffer (MLIR's lexer looks
  // for the terminator; parseSourceString's buffer has none).
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text, size),
                                           "fuzz.mlir"),
      llvm::SMLoc());
  ParserConfig config(context.get());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (module)
    (void)verify(*module);
  return 0;
}
