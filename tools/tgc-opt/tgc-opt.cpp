//===- tgc-opt.cpp - the tgc optimizer driver -----------------------------===//
//
// mlir-opt for training graphs: parses tg IR (with func, arith, scf and
// tensor), runs the requested passes and pipelines, and prints the result.
// Every standard mlir-opt flag is available. Before parsing, the input's
// bracket nesting is bounded (tgc/Support/Nesting.h), so that deeply nested
// hostile input is a diagnostic rather than a stack overflow.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Support/Nesting.h"
#include "tgc/Support/UserFiles.h"
#include "tgc/Target/LowerToTGX.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  // A closed standard stream must not become the output file.
  tgc::reopenClosedStandardStreams();
  llvm::InitLLVM init(argc, argv);
  mlir::registerTransformsPasses();
  tgc::tg::registerTGPasses();
  tgc::registerTrainPipeline();
  tgc::registerLowerToTGXPass();

  mlir::DialectRegistry registry;
  registry.insert<tgc::tg::TGDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "tgc optimizer driver for tg training graphs\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "tgc-opt: error: " << error << "\n";
    return 1;
  }
  if (auto deep = tgc::findExcessNesting(input->getBufferStart(),
                                         input->getBufferSize())) {
    llvm::errs() << input->getBufferIdentifier() << ":" << deep->line << ":"
                 << deep->column << ": error: brackets nest deeper than "
                 << tgc::kMaxIRNesting << " levels; refusing to parse\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "tgc-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return 1;
  output->os().flush();
  if (output->os().has_error()) {
    llvm::errs() << "tgc-opt: error: could not write '" << outputFile
                 << "': " << output->os().error().message() << "\n";
    output->os().clear_error();
    return 1;
  }
  output->keep();
  return 0;
}
