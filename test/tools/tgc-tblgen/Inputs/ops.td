// A dialect of a few ops for tgc-tblgen's tests: each form of operand,
// result and attribute the generators handle.
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"

def Test_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::test";
}

class Test_Op<string mnemonic> : Op<Test_Dialect, mnemonic>;

def Test_PlainOp : Test_Op<"plain"> {
  let arguments = (ins AnyType:$a, AnyType:$b, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<BoolAttr, "true">:$keep_dims,
                       OptionalAttr<F64Attr>:$soft_cap,
                       DenseI64ArrayAttr:$offsets,
                       OptionalAttr<DenseBoolArrayAttr>:$output_mask);
  let results = (outs AnyType:$r, AnyType:$s);
}

def Test_SomeOp : Test_Op<"some"> {
  let arguments = (ins AnyType:$a, Optional<AnyType>:$mask,
                       Variadic<AnyType>:$rest);
  let results = (outs Variadic<AnyType>:$parts);
}

class Test_UnaryOp<string mnemonic, string kernel = ""> : Test_Op<mnemonic> {
  string kernelValue = kernel;
  let arguments = (ins AnyType:$x);
  let results = (outs AnyType:$y);
}

def Test_HandOp : Test_UnaryOp<"hand">;
def Test_HalveOp : Test_UnaryOp<"halve_it", "x * 0.5f">;
def Test_ReluOp : Test_UnaryOp<"relu", "x < 0.0f ? 0.0f : x"> {
  string kernelGradient = "x > 0.0f ? g : 0.0f";
}
def Test_ReluGradOp : Test_Op<"relu_grad"> {
  let arguments = (ins AnyType:$x, AnyType:$g);
  let results = (outs AnyType:$y);
}
