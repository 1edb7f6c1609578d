//===- MLP.cpp - a multi-layer perceptron as a tg model -------------------===//
//
// Linear layers with ReLU between them and a cross-entropy loss over class
// labels, with torch.nn.Linear's layout ([out, in] weights, used through a
// transposed matmul), names (`layers.<i>.weight`, `layers.<i>.bias`) and
// default initialisation (uniform in +-1/sqrt(in) for weights and biases).
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/ModelBuilder.h"
#include "tgc/Models/Models.h"
#include "tgc/Support/CheckedMath.h"

#include "llvm/ADT/Twine.h"

#include <cmath>

using namespace mlir;

namespace tgc {

std::string validateMLPConfig(const MLPConfig &config) {
  if (config.widths.size() < 2)
    return "an MLP needs at least two widths (inputs and classes)";
  for (int64_t width : config.widths)
    if (width <= 0)
      return "every MLP width must be positive";
  if (config.batch <= 0)
    return "the batch size must be positive";
  if (config.widths.size() > 100000)
    return "an MLP may have at most 100000 layers";
  for (size_t i = 0; i + 1 < config.widths.size(); ++i)
    if (!checkedTensorBytes(std::vector<int64_t>{config.widths[i],
                                                  config.widths[i + 1]},
                            4) ||
        !checkedTensorBytes(std::vector<int64_t>{config.batch,
                                                  config.widths[i]},
                            4))
      return "layer " + std::to_string(i) + " would hold more than " +
             std::to_string(kMaxTensorBytes >> 40) +
             " TiB in one tensor, the largest tgc compiles";
  return "";
}

OwningOpRef<ModuleOp> buildMLP(MLIRContext *context, const MLPConfig &config) {
  ModelBuilder b(context, "mlp", Float32Type::get(context));
  Builder attrs(context);
  b.setGenerator(
      {attrs.getNamedAttr("model", attrs.getStringAttr("mlp")),
       attrs.getNamedAttr("widths", attrs.getDenseI64ArrayAttr(config.widths)),
       attrs.getNamedAttr("batch", attrs.getI64IntegerAttr(config.batch))});
  ArrayRef<int64_t> widths = config.widths;
  Value x = b.input("inputs", {config.batch, widths.front()},
                    Float32Type::get(context));
  Value targets =
      b.input("targets", {config.batch}, IntegerType::get(context, 64));
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    std::string prefix = ("layers." + Twine(i) + ".").str();
    b.setScope(("layers." + Twine(i)).str());
    double bound = 1.0 / std::sqrt(double(widths[i]));
    auto init =
        tg::InitAttr::get(context, tg::InitKind::Uniform, -bound, bound);
    Value weight = b.param(prefix + "weight", {widths[i + 1], widths[i]}, init);
    Value bias = b.param(prefix + "bias", {widths[i + 1]}, init);
    x = b.add(b.matmul(x, weight, /*transposeLhs=*/false,
                       /*transposeRhs=*/true),
              bias);
    if (i + 2 < widths.size())
      x = b.relu(x);
  }
  b.setScope("loss");
  return b.finish(b.crossEntropy(x, targets));
}

} // namespace tgc
