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

Value ModelBuilder::swiglu(Value gate, Value up) {
  return tg::SwigluOp::create(builder, loc, gate, up);
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

Value ModelBuilder::scalar(double value) {
  return tg::FillOp::create(builder, loc, tensorOf({}, elementType),
                            builder.getF64FloatAttr(value));
}

Value ModelBuilder::rope(Value input, Value invFreq, Value positions) {
  return tg::RopeOp::create(builder, loc, input.getType(), input, invFreq,
                            positions, /*inverse=*/false);
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

Value ModelBuilder::attention(Value query, Value key, Value value, bool causal,
                              Value keyMask, int64_t window, double scale,
                              double softcap, bool segments) {
  SmallVector<int64_t> shape(typeOf(query).getShape().drop_back());
  shape.push_back(typeOf(value).getShape().back());
  return tg::AttentionOp::create(
             builder, loc, tensorOf(shape, typeOf(query).getElementType()),
             /*lse=*/Type(), query, key, value, keyMask,
             builder.getBoolAttr(causal),
             window ? builder.getI64IntegerAttr(window) : IntegerAttr(),
             scale > 0.0 ? builder.getF64FloatAttr(scale) : FloatAttr(),
             /*bshd=*/BoolAttr(), /*packed=*/BoolAttr(),
             softcap > 0.0 ? builder.getF64FloatAttr(softcap) : FloatAttr(),
             segments ? builder.getBoolAttr(true) : BoolAttr())
      .getResult();
}

Value ModelBuilder::crossEntropy(Value logits, Value targets, double softcap) {
  return tg::CrossEntropyOp::create(
             builder, loc, tensorOf({}, builder.getF32Type()),
             /*logits_grad=*/Type(), logits, targets,
             /*grad=*/Value(), /*ignore_index=*/-100,
             softcap > 0.0 ? builder.getF64FloatAttr(softcap) : FloatAttr())
      .getResult();
}

Value ModelBuilder::mixtureOfExperts(Value tokens, Value router,
                                     ArrayRef<Value> gate, ArrayRef<Value> up,
                                     ArrayRef<Value> down, int64_t topK,
                                     bool normalize, RouterBalance *balance) {
  RankedTensorType type = typeOf(tokens);
  const int64_t N = type.getDimSize(0), C = type.getDimSize(1);
  const int64_t E = int64_t(gate.size()), M = N * topK;
  const int64_t I = typeOf(gate.front()).getDimSize(0);
  Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
  auto reduceSum = [&](Value v, int64_t axis, bool keep) {
    SmallVector<int64_t> shape(typeOf(v).getShape());
    if (keep)
      shape[size_t(axis)] = 1;
    else
      shape.erase(shape.begin() + axis);
    return tg::ReduceSumOp::create(
               builder, loc, tensorOf(shape, typeOf(v).getElementType()), v,
               builder.getDenseI64ArrayAttr({axis}), keep)
        .getResult();
  };
  // The router: softmax in f32, the top k of each token, renormalized.
  Value logits = matmul(tokens, router, false, true);
  if (typeOf(logits).getElementType() != f32)
    logits = tg::CastOp::create(builder, loc, tensorOf({N, E}, f32), logits);
  Value probs = tg::SoftmaxOp::create(builder, loc, logits, int64_t(-1));
  Value choices =
      tg::TopKOp::create(builder, loc, tensorOf({N, topK}, i64), probs, topK);
  Value weights = tg::GatherOp::create(builder, loc, tensorOf({N, topK}, f32),
                                       probs, choices, int64_t(1));
  if (balance) {
    // Each token's choices counted per expert (ones added where chosen),
    // and both means over the tokens.
    auto meanOverTokens = [&](Value v) {
      return tg::ReduceMeanOp::create(builder, loc, tensorOf({E}, f32), v,
                                      builder.getDenseI64ArrayAttr({0}), false)
          .getResult();
    };
    Value ones = tg::FillOp::create(builder, loc, tensorOf({N, topK}, f32),
                                    builder.getF64FloatAttr(1.0));
    Value counts = tg::GatherGradOp::create(builder, loc, tensorOf({N, E}, f32),
                                            ones, choices, int64_t(1));
    balance->tokensPerExpert = meanOverTokens(counts);
    balance->probPerExpert = meanOverTokens(probs);
  }
  if (normalize)
    weights = tg::DivOp::create(builder, loc, typeOf(weights), weights,
                                reduceSum(weights, 1, true));
  if (type.getElementType() != f32)
    weights = tg::CastOp::create(
        builder, loc, tensorOf({N, topK}, type.getElementType()), weights);
  // Every choice routed, each expert's SwiGLU over its rows.
  auto route = tg::MoeRouteOp::create(builder, loc, tensorOf({M, 1}, i64),
                                      tensorOf({N, topK}, i64),
                                      tensorOf({E + 1}, i64), choices);
  Value rows = tg::GatherOp::create(builder, loc,
                                    tensorOf({M, C}, type.getElementType()),
                                    tokens, route.getRows(), int64_t(0));
  auto experts = [&](Value input, ArrayRef<Value> matrices, int64_t out) {
    return tg::ExpertLinearOp::create(
               builder, loc, tensorOf({M, out}, type.getElementType()), input,
               route.getOffsets(), matrices, /*transpose_weight=*/true)
        .getResult();
  };
  Value hidden = swiglu(experts(rows, gate, I), experts(rows, up, I));
  Value results = experts(hidden, down, C);
  // Each token's k results, weighted and summed.
  Value picked = tg::GatherOp::create(
      builder, loc, tensorOf({M, C}, type.getElementType()), results,
      reshape(route.getPositions(), {M, 1}), int64_t(0));
  Value weighted =
      mul(reshape(picked, {N, topK, C}), reshape(weights, {N, topK, 1}));
  return reduceSum(weighted, 1, false);
}

Value ModelBuilder::sumAll(Value input) {
  RankedTensorType type = typeOf(input);
  SmallVector<int64_t> axes;
  for (int64_t axis = 0; axis < type.getRank(); ++axis)
    axes.push_back(axis);
  return tg::ReduceSumOp::create(builder, loc,
                                 tensorOf({}, type.getElementType()), input,
                                 builder.getDenseI64ArrayAttr(axes), false)
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

void ModelBuilder::recordGenerator(NamedAttribute entry) {
  NamedAttrList record(
      function->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr));
  record.set(entry.getName(), entry.getValue());
  function->setAttr(tg::TGDialect::kGeneratorAttr,
                    record.getDictionary(builder.getContext()));
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
