//===- Data.h - batches for a training step ---------------------*- C++ -*-===//
//
// Data sources fill a program's input tensors before each step. Two kinds
// of programs are fed: language models (inputs `tokens` and `targets`, both
// [B, T] integer tensors: next-token prediction) and classifiers (`inputs`,
// a [B, F] float tensor, and `targets`, [B] class labels). Batches are a
// pure function of (seed, batch index), so a run resumed at step N sees the
// same batches as an uninterrupted one.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_H
#define TGC_RUNTIME_DATA_H

#include "tgc/runtime/Session.h"

#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

class DataSource {
public:
  virtual ~DataSource();
  /// Writes batch `index` into the session's input tensors.
  virtual Status fill(Session &session, int64_t index) = 0;
  /// One line for the run's header.
  virtual std::string describe() const = 0;
  /// Tokens (or examples) per batch, for throughput.
  virtual int64_t itemsPerBatch() const = 0;
  /// What an item is: "tokens" or "examples".
  virtual const char *itemName() const { return "tokens"; }
};

/// The built-in learnable tasks: for language models, arithmetic sequences
/// `(start + stride * t) mod V` with a random start and a stride of 1 to 3,
/// so the next token follows from the previous two; for classifiers, labels
/// given by the argmax of a fixed random linear map of Gaussian inputs.
Status createSyntheticData(const Program &program, uint64_t seed,
                           std::unique_ptr<DataSource> &source);

/// Random windows of T+1 tokens from a token file: an llm.c shard (a
/// 256-int32 header with magic 20240520 and the token count, then uint16
/// tokens) or a raw uint16 file as nanoGPT writes them.
Status createTokenFileData(const Program &program, const std::string &path,
                           uint64_t seed, std::unique_ptr<DataSource> &source);

/// The tokens of a token file's bytes (`path` names it in errors): at
/// least `length` + 1 of them, each below `limit` (the vocabulary).
Status parseTokenFile(const std::string &path, const char *data, size_t size,
                      int64_t limit, int64_t length,
                      std::vector<uint16_t> &tokens);

/// Batches stored in a safetensors file: for every input X of the program
/// with shape S, a tensor X of shape [N, S...] and the same dtype; batch i
/// is X[i mod N]. This is how exact batches are shared with other tools.
Status createTensorFileData(const Program &program, const std::string &path,
                            std::unique_ptr<DataSource> &source);

/// The source for tgc-run's --data: "synthetic", a .safetensors file of
/// batches, or a token file.
Status createDataSource(const Program &program, const std::string &spec,
                        uint64_t seed, std::unique_ptr<DataSource> &source);

} // namespace tgc::rt

#endif // TGC_RUNTIME_DATA_H
