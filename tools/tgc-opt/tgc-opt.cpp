//===- tgc-opt.cpp - the tgc optimizer driver -----------------------------===//
//
// mlir-opt for training graphs: parses tg IR (with func, arith, scf and
// tensor), runs the requested passes and pipelines, and prints the result.
// Every standard mlir-opt flag is available.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Pipelines/TrainPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  tgc::tg::registerTGPasses();
  tgc::registerTrainPipeline();

  mlir::DialectRegistry registry;
  registry.insert<tgc::tg::TGDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tgc optimizer driver for tg training graphs\n", registry));
}
