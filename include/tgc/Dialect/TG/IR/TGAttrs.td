//===- TGAttrs.td - attributes of the tg dialect ------------*- tablegen -*-===//
//
// `#tg.init<...>` says how a parameter is initialised when no checkpoint
// provides it. The runtime draws from a seeded generator so that an
// initialisation is reproducible.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGATTRS_TD
#define TGC_DIALECT_TG_IR_TGATTRS_TD

include "tgc/Dialect/TG/IR/TGDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TG_InitKind : I32EnumAttr<"InitKind", "parameter initialisation", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Normal", 2, "normal">,
    I32EnumAttrCase<"Uniform", 3, "uniform">,
    I32EnumAttrCase<"Constant", 4, "constant">,
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::tgc::tg";
}

/// How a collective combines the ranks' values (tg.all_reduce,
/// tg.reduce_scatter): mean is the sum divided by the number of ranks.
def TG_ReduceKind : I32EnumAttr<"ReduceKind", "collective reduction", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"Max", 3, "max">,
  ]> {
  let cppNamespace = "::tgc::tg";
}

def TG_InitAttr : AttrDef<TG_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "how a parameter is initialised";
  let description = [{
    One of:
    - `#tg.init<zeros>`, `#tg.init<ones>`;
    - `#tg.init<normal(mean, std)>`: independent draws from N(mean, std^2),
      std > 0;
    - `#tg.init<uniform(low, high)>`: independent draws from U[low, high),
      low < high;
    - `#tg.init<constant(value)>`: every element `value` (for state such as
      the loss scale).
    For `zeros` and `ones` the two numbers are unused and zero; `constant`
    uses the first.
  }];
  let parameters = (ins EnumParameter<TG_InitKind>:$kind,
                        APFloatParameter<"first number">:$a,
                        APFloatParameter<"second number">:$b);
  let builders = [
    AttrBuilder<(ins "InitKind":$kind, CArg<"double", "0.0">:$a,
                     CArg<"double", "0.0">:$b), [{
      return $_get($_ctxt, kind, ::llvm::APFloat(a), ::llvm::APFloat(b));
    }]>,
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TGC_DIALECT_TG_IR_TGATTRS_TD
