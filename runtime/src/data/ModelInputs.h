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
#include "tgc/runtime/Session.h"

namespace tgc::rt {

/// A language model's (`tokens`, `targets`) or a classifier's (`inputs`,
/// `targets`) input tensors, -1 where absent.
struct ModelInputs {
  int32_t tokens = -1, targets = -1, features = -1;
  /// A model of packed rows (tgc-models --packed): each token's example
  /// (1, 2, ... along a row, 0 padding) and its position in it.
  int32_t segments = -1, positions = -1;
  int64_t vocab = 0;   // rows of the table `tokens` index
  int64_t classes = 0; // classes of the loss `targets` feeds
};

/// Finds them in `program` (of its training step's shapes); fails when the
/// program is neither kind or the embedding or loss cannot be found.
Status findModelInputs(const Program &program, ModelInputs &inputs);

/// For sources whose rows are each one sequence: a model of packed rows
/// gets segment 1 and positions 0, 1, ... on every row (no-op otherwise).
void fillWholeRows(Session &session, const ModelInputs &inputs);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_DATA_MODELINPUTS_H
