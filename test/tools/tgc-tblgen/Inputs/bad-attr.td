// An attribute a .tgx file cannot hold: tgc-tblgen refuses the ODS.
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"

def Test_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::test";
}

def Test_NamedOp : Op<Test_Dialect, "named"> {
  let arguments = (ins AnyType:$a, StrAttr:$label);
}
