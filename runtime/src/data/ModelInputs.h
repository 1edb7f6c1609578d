//===- ModelInputs.h - the inputs a program's batches fill ------*- C++ -*-===//
//
// Internal to runtime/src/data: the input tensors data sources write, found
// by name, with the vocabulary of the embedding that reads `tokens` and the
// classes of the loss that reads `targets`.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_DATA_MODELINPUTS_H
#define TGC_RUNTIME_SRC_DATA_MODELINPUTS_H

#include "tgc/runtime/Program.h"

namespace tgc::rt {

/// A language model's (`tokens`, `targets`) or a classifier's (`inputs`,
/// `targets`) input tensors, -1 where absent.
struct ModelInputs {
  int32_t tokens = -1, targets = -1, features = -1;
  int64_t vocab = 0;   // rows of the table `tokens` index
  int64_t classes = 0; // classes of the loss `targets` feeds
};

/// Finds them in `program` (of its training step's shapes); fails when the
/// program is neither kind or the embedding or loss cannot be found.
Status findModelInputs(const Program &program, ModelInputs &inputs);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_DATA_MODELINPUTS_H
