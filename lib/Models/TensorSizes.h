//===- TensorSizes.h - checking a generated model's largest tensors -*- C++ -*-===//
//
// Internal to lib/Models: the generators validate a configuration by the
// sizes of its largest tensors (f32), checked without overflow.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_LIB_MODELS_TENSORSIZES_H
#define TGC_LIB_MODELS_TENSORSIZES_H

#include "tgc/Support/CheckedMath.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <string>
#include <vector>

namespace tgc {

/// One of a model's largest tensors, described for the error.
struct NamedShape {
  const char *what;
  std::vector<int64_t> shape;
};

/// An empty string when every tensor fits tgc's largest, else the error
/// naming the first that does not.
inline std::string checkLargestTensors(llvm::ArrayRef<NamedShape> tensors) {
  for (const NamedShape &tensor : tensors)
    if (!checkedTensorBytes(tensor.shape, 4))
      return (llvm::Twine(tensor.what) + " would hold more than " +
              llvm::Twine(kMaxTensorBytes >> 40) +
              " TiB, the largest tensor tgc compiles")
          .str();
  return "";
}

} // namespace tgc

#endif // TGC_LIB_MODELS_TENSORSIZES_H
