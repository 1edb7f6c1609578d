//===- ModelBuilder.cpp - building tg models from C++ ---------------------===//
//
// Creates tg ops with their result types computed from the operands, so the
// model generators read like the PyTorch code they mirror.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/ModelBuilder.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace tgc {

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

ModelBuilder::ModelBuilder(MLIRContext *context, StringRef name,
                           Type elementType)
    : context(context), elementType(elementType),
      module(ModuleOp::create(UnknownLoc::get(context))), builder(context),
      loc(NameLoc::get(StringAttr::get(context, name))) {
  context->loadDialect<tg::TGDialect, func::FuncDialect>();
  builder.setInsertionPointToEnd(module->getBody());
  function = func::FuncOp::create(builder, loc, name,
                                  builder.getFunctionType({}, {}));
  function->setAttr(tg::TGDialect::kModelAttr, builder.getUnitAttr());
  builder.setInsertionPointToStart(function.addEntryBlock());
}

void ModelBuilder::setScope(StringRef scope) {
  loc = NameLoc::get(StringAttr::get(context, scope));
}

RankedTensorType ModelBuilder::tensorOf(ArrayRef<int64_t> shape,
                                        Type element) {
  return RankedTensorType::get(shape, element);
}

Value ModelBuilder::addArgument(Type type, NamedAttrList attrs) {
  argAttrs.push_back(attrs.getDictionary(context));
  return function.getBody().front().addArgument(type, loc);
}

Value ModelBuilder::param(StringRef name, ArrayRef<int64_t> shape,
                          tg::InitAttr init) {
  NamedAttrList attrs;
  attrs.set(tg::TGDialect::kParamAttr, builder.getStringAttr(name));
  attrs.set(tg::TGDialect::kInitAttr, init);
  return addArgument(tensorOf(shape, elementType), attrs);
}

Value ModelBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                          Type element) {
  NamedAttrList attrs;
  attrs.set(tg::TGDialect::kInputAttr, builder.getStringAttr(name));
  return addArgument(tensorOf(shape, element), attrs);
}

Value ModelBuilder::matmul(Value lhs, Value rhs, bool transposeLhs,
                           bool transposeRhs) {
  return tg::MatmulOp::create(builder, loc, lhs, rhs, transposeLhs,
                              transposeRhs);
}

Value ModelBuilder::add(Value lhs, Value rhs) {
  return tg::AddOp::create(builder, loc, lhs, rhs);
}

Value ModelBuilder::mul(Value lhs, Value rhs) {
  return tg::MulOp::create(builder, loc, lhs, rhs);
}

Value ModelBuilder::silu(Value input) {
  return tg::SiluOp::create(builder, loc, input);
}

Value ModelBuilder::rmsNorm(Value input, Value weight, double epsilon) {
  return tg::RmsNormOp::create(builder, loc, input.getType(), /*sum=*/Type(),
                               input, weight, /*addend=*/Value(),
                               builder.getF64FloatAttr(epsilon))
      .getResult();
}

Value ModelBuilder::constant(ArrayRef<float> values) {
  auto type = tensorOf({int64_t(values.size())}, builder.getF32Type());
  return tg::ConstantOp::create(builder, loc,
                                DenseElementsAttr::get(type, values));
}

Value ModelBuilder::rope(Value input, Value invFreq) {
  return tg::RopeOp::create(builder, loc, input.getType(), input, invFreq,
                            /*inverse=*/false);
}

Value ModelBuilder::relu(Value input) {
  return tg::ReluOp::create(builder, loc, input);
}

Value ModelBuilder::gelu(Value input, bool exact) {
  return tg::GeluOp::create(builder, loc, input, exact);
}

Value ModelBuilder::tanh(Value input) {
  return tg::TanhOp::create(builder, loc, input);
}

Value ModelBuilder::layerNorm(Value input, Value weight, Value bias,
                              double epsilon) {
  return tg::LayerNormOp::create(builder, loc, input.getType(),
                                 /*sum=*/Type(), input, weight, bias,
                                 /*addend=*/Value(),
                                 builder.getF64FloatAttr(epsilon))
      .getResult();
}

Value ModelBuilder::embedding(Value table, Value indices,
                              std::optional<int64_t> paddingIdx) {
  SmallVector<int64_t> shape(typeOf(indices).getShape());
  shape.push_back(typeOf(table).getDimSize(1));
  return tg::EmbeddingOp::create(
      builder, loc, tensorOf(shape, typeOf(table).getElementType()), table,
      indices,
      paddingIdx ? builder.getI64IntegerAttr(*paddingIdx) : IntegerAttr());
}

Value ModelBuilder::attention(Value query, Value key, Value value,
                              bool causal, Value keyMask, int64_t window) {
  SmallVector<int64_t> shape(typeOf(query).getShape().drop_back());
  shape.push_back(typeOf(value).getShape().back());
  return tg::AttentionOp::create(
             builder, loc, tensorOf(shape, typeOf(query).getElementType()),
             /*lse=*/Type(), query, key, value, keyMask,
             builder.getBoolAttr(causal),
             window ? builder.getI64IntegerAttr(window) : IntegerAttr(),
             /*scale=*/FloatAttr(), /*bshd=*/BoolAttr(), /*packed=*/BoolAttr(),
             /*softcap=*/FloatAttr())
      .getResult();
}

Value ModelBuilder::crossEntropy(Value logits, Value targets) {
  return tg::CrossEntropyOp::create(builder, loc,
                                    tensorOf({}, builder.getF32Type()),
                                    /*logits_grad=*/Type(), logits, targets,
                                    /*grad=*/Value(), /*ignore_index=*/-100,
                                    /*softcap=*/nullptr)
      .getResult();
}

Value ModelBuilder::reshape(Value input, ArrayRef<int64_t> shape) {
  return tg::ReshapeOp::create(
      builder, loc, tensorOf(shape, typeOf(input).getElementType()), input);
}

Value ModelBuilder::transpose(Value input, ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(typeOf(input).getDimSize(p));
  return tg::TransposeOp::create(
      builder, loc, tensorOf(shape, typeOf(input).getElementType()), input,
      permutation);
}

Value ModelBuilder::slice(Value input, ArrayRef<int64_t> offsets,
                          ArrayRef<int64_t> sizes) {
  return tg::SliceOp::create(
      builder, loc, tensorOf(sizes, typeOf(input).getElementType()), input,
      offsets);
}

SmallVector<Value> ModelBuilder::split(Value input, int64_t axis,
                                       int64_t pieces) {
  SmallVector<int64_t> shape(typeOf(input).getShape());
  shape[axis] /= pieces;
  SmallVector<Type> types(pieces,
                          tensorOf(shape, typeOf(input).getElementType()));
  auto op = tg::SplitOp::create(builder, loc, types, input, axis);
  return SmallVector<Value>(op.getResults());
}

void ModelBuilder::setGenerator(ArrayRef<NamedAttribute> generator) {
  function->setAttr(tg::TGDialect::kGeneratorAttr,
                    builder.getDictionaryAttr(generator));
}

void ModelBuilder::setTask(StringRef task) {
  function->setAttr(tg::TGDialect::kTaskAttr, builder.getStringAttr(task));
}

OwningOpRef<ModuleOp> ModelBuilder::finish(Value loss) {
  func::ReturnOp::create(builder, loc, loss);
  function.setType(builder.getFunctionType(
      function.getBody().front().getArgumentTypes(), {loss.getType()}));
  function.setAllArgAttrs(argAttrs);
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

} // namespace tgc
