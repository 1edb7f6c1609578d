//===- Passes.td - passes on tg training graphs -------------*- tablegen -*-===//
//
// Every tg pass is declared here and usable alone in tgc-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGModelStats : Pass<"tg-model-stats", "mlir::ModuleOp"> {
  let summary = "Reports parameter counts, op counts and cost of tg models";
  let description = [{
    For every `func.func` marked `tg.model`, prints to stderr its parameter
    count (all, trainable and frozen, with the bytes they occupy), its inputs,
    the number of ops of each kind, and the FLOPs and bytes moved of one
    execution as the ops' CostOpInterface gives them. With `per-op`, also
    prints the cost of every op in IR order. The IR is not changed.
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also print the FLOPs and bytes of every op">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
