//===- Data.h - batches for a training step ---------------------*- C++ -*-===//
//
// Data sources fill a program's input tensors before each step. The kinds
// of programs fed: language models (inputs `tokens` and `targets`, both
// [B, T] integer tensors: next-token prediction), classifiers (`inputs`,
// a [B, F] float tensor, and `targets`, [B] class labels), and models of
// padded token sequences named by their task (masked LM, sequence
// classification: `tokens`, `attention_mask` and `targets`), which read
// datasets of examples in shape buckets. Batches are a pure function of
// (seed, batch index), so a run resumed at step N sees the same batches as
// an uninterrupted one.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_H
#define TGC_RUNTIME_DATA_H

#include "tgc/runtime/Session.h"

#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

/// What one batch of a data source holds: the shape bucket whose inputs
/// it was written into (the program's own step when it has none), and its
/// real and padded token positions (both 0 for sources without padding).
struct BatchInfo {
  const Bucket *bucket = nullptr;
  int64_t realTokens = 0;
  int64_t paddedTokens = 0;
  /// Positions of the global batch the loss predicts (targets other than
  /// -100), or -1 where every position counts. 0: the batch has nothing to
  /// predict (a masked-LM batch in which no token was masked), and its
  /// loss is undefined.
  int64_t predicted = -1;
};

class DataSource {
public:
  virtual ~DataSource();
  /// Writes batch `index` into the session's input tensors (of the
  /// program's largest bucket).
  virtual Status fill(Session &session, int64_t index) = 0;
  /// Writes batch `index` into the inputs of the bucket it chooses and
  /// says which (sources of examples choose per batch; the others fill()
  /// the largest bucket).
  virtual Status fillBatch(Session &session, int64_t index, BatchInfo &info);
  /// One line for the run's header.
  virtual std::string describe() const = 0;
  /// Tokens (or examples) per batch, for throughput.
  virtual int64_t itemsPerBatch() const = 0;
  /// What an item is: "tokens" or "examples".
  virtual const char *itemName() const { return "tokens"; }
};

/// How examples of different lengths are batched (tgc-run --padding):
/// every batch padded to the largest bucket; each batch, in random order,
/// to the smallest bucket that holds its longest example; the same after
/// sorting the epoch by length into batches whose order is then shuffled
/// (uniform length grouping); or several examples packed into each row of
/// the largest bucket's length (best fit decreasing, rows in random
/// order), kept apart by the model's `segments` and `positions` inputs
/// (a model of packed rows: tgc-models --packed).
enum class Padding { Max, Dynamic, Grouped, Pack };

/// Options of data sources.
struct DataOptions {
  /// Data parallelism: this process is rank `rank` of `ranks`, and its
  /// batch is rows [rank B, (rank + 1) B) of the global batch of ranks x B
  /// rows (B the program's batch) that a single process with a ranks-times
  /// larger batch would see: the job trains on the same data whatever the
  /// number of ranks. Every source draws the global batch (the same random
  /// numbers as one process) and keeps its rows; sources that pick a shape
  /// bucket pick it from the global batch, so every rank runs the same
  /// step. Throughput counts the global batch.
  int64_t rank = 0, ranks = 1;
  // Sources of examples:
  Padding padding = Padding::Dynamic;
  /// Examples longer than the largest bucket are cut to it (true) or
  /// rejected when the dataset is opened.
  bool truncate = true;
  /// Examples in the synthetic set (masked LMs and classifiers).
  int64_t syntheticExamples = 4096;
};

/// The built-in learnable tasks: for language models, arithmetic sequences
/// `(start + stride * t) mod V` with a random start and a stride of 1 to 3,
/// so the next token follows from the previous two; for classifiers, labels
/// given by the argmax of a fixed random linear map of Gaussian inputs.
Status createSyntheticData(const Program &program, uint64_t seed,
                           std::unique_ptr<DataSource> &source,
                           const DataOptions &options = {});

/// Random windows of T+1 tokens from a token file: an llm.c shard (a
/// 256-int32 header with magic 20240520 and the token count, then uint16
/// tokens) or a raw uint16 file as nanoGPT writes them.
Status createTokenFileData(const Program &program, const std::string &path,
                           uint64_t seed, std::unique_ptr<DataSource> &source,
                           const DataOptions &options = {});

/// The tokens of a token file's bytes (`path` names it in errors): at
/// least `length` + 1 of them, each below `limit` (the vocabulary).
Status parseTokenFile(const std::string &path, const char *data, size_t size,
                      int64_t limit, int64_t length,
                      std::vector<uint16_t> &tokens);

/// Batches stored in a safetensors file: for every input X of the program
/// with shape S, a tensor X of shape [N, S...] and the same dtype; batch i
/// is X[i mod N]. This is how exact batches are shared with other tools.
/// With ranks (DataOptions), X is [N, ranks x B, ...]: global batches, of
/// which each rank reads its rows.
Status createTensorFileData(const Program &program, const std::string &path,
                            std::unique_ptr<DataSource> &source,
                            const DataOptions &options = {});

/// Examples from a dataset file of tgc-data (`.tgcd`: token sequences with
/// offsets and optional labels; see tools/python/tgcd.py), read into memory and
/// checked against the program (vocabulary, labels, the task's special
/// tokens), batched per `options` and collated for the program's task:
/// next-token targets for a causal LM, Hugging Face's masked-LM rule (15%
/// of real tokens; of those 80% [MASK], 10% a random token, 10% kept) for
/// a masked LM, one label per example for sequence classification; padded
/// positions have target -100 and attention mask 0. Every example is in
/// exactly one batch of each epoch (the last batch of an epoch may hold
/// empty rows, which count for nothing).
Status createExampleData(const Program &program, const std::string &path,
                         uint64_t seed, const DataOptions &options,
                         std::unique_ptr<DataSource> &source);
/// What a dataset file holds, as parseDataset found it.
struct DatasetSummary {
  int64_t examples = 0, tokens = 0, longest = 0;
  int64_t numLabels = 0;
  int64_t largestToken = -1, largestLabel = -1;
  /// Each example's length, in order.
  std::vector<int64_t> lengths;
};

/// Packs examples of `lengths` (each cut to `rowLength`) into rows of
/// `rowLength` tokens, best fit decreasing (as TRL's packing and axolotl's
/// multipack do): longest first, each into the row whose room left is the
/// smallest that holds it, else into a new row. Returns each row's
/// examples (indices into `lengths`, in the order placed); every example
/// is in exactly one row. --padding=pack batches these rows.
std::vector<std::vector<int64_t>>
packExamples(const std::vector<int64_t> &lengths, int64_t rowLength);
/// Checks the bytes of a .tgcd file (`path` names it in errors) as
/// createExampleData does, against a vocabulary of `modelVocab` tokens:
/// header, sizes, offsets (every example non-empty), tokens and labels.
/// Exposed for the fuzzing harness and tools.
Status parseDataset(const std::string &path, const char *data, size_t size,
                    int64_t modelVocab, DatasetSummary &summary);

/// The same over a built-in synthetic set of examples of varied lengths,
/// for masked LMs and sequence classifiers (tgc-run's default data).
Status createSyntheticExampleData(const Program &program, uint64_t seed,
                                  const DataOptions &options,
                                  std::unique_ptr<DataSource> &source);

/// The source for tgc-run's --data: "synthetic", a .safetensors file of
/// batches, a .tgcd dataset of examples, or a token file.
Status createDataSource(const Program &program, const std::string &spec,
                        uint64_t seed, std::unique_ptr<DataSource> &source,
                        const DataOptions &options = {});

} // namespace tgc::rt

#endif // TGC_RUNTIME_DATA_H
