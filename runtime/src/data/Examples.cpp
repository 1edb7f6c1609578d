//===- Examples.cpp - batches of variable-length examples -----------------===//
//
// Datasets of examples (token sequences of different lengths, with labels
// for classification) and how they become batches: an epoch's order (a
// seeded shuffle, or length groups in shuffled order), the shape bucket of
// each batch (the smallest that holds its longest example, or the largest),
// and the collation for the program's task, with padding that changes
// nothing: attention mask 0 and target -100 on every padded position.
//
// The dataset file (.tgcd, written by tools/python/tgc-data.py; the layout is
// documented in tools/python/tgcd.py) is read into memory and checked once when
// it is opened: header, sizes, offsets, every token against the model's
// vocabulary and every label against its classes.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Data.h"

#include "FileIO.h"
#include "ModelInputs.h"
#include "Random.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace tgc::rt {

namespace {

constexpr int64_t kIgnoreIndex = -100;

/// The examples a source batches, whatever holds them.
class ExampleSet {
public:
  virtual ~ExampleSet() = default;
  virtual int64_t size() const = 0;
  virtual int64_t length(int64_t i) const = 0;
  virtual int64_t token(int64_t i, int64_t t) const = 0;
  virtual int64_t label(int64_t i) const = 0;
  virtual bool hasLabels() const = 0;
  /// Whether the loss predicts token t of example i (a .tgcd file of
  /// version 2 marks prompts and other context 0); without a loss mask,
  /// every token.
  virtual bool trained(int64_t i, int64_t t) const { return true; }
  virtual bool hasLossMask() const { return false; }
  /// Whether the examples are preference pairs (a .tgcd file of version 3):
  /// example 2i the chosen answer, 2i + 1 the rejected one.
  virtual bool pairs() const { return false; }
  virtual std::string describe() const = 0;
  int64_t padId = -1, maskId = -1, clsId = -1, sepId = -1;
};

//===----------------------------------------------------------------------===//
// The .tgcd file
//===----------------------------------------------------------------------===//

struct TgcdHeader {
  char magic[8];
  uint32_t version;
  uint32_t tokenBytes;
  uint64_t examples;
  uint64_t tokens;
  uint64_t vocab;
  int64_t numLabels;
  int32_t padId, maskId, clsId, sepId;
};
static_assert(sizeof(TgcdHeader) == 64, "the .tgcd header is 64 bytes");

/// The examples of a .tgcd file's bytes (which it reads in place), checked
/// against a model's vocabulary.
class DatasetView : public ExampleSet {
public:
  Status parse(const std::string &filePath, const char *data, size_t size,
               int64_t modelVocab) {
    path = filePath;
    auto bad = [&](const std::string &message) {
      return Status::failure("dataset '" + path + "': " + message);
    };
    if (size < sizeof(TgcdHeader))
      return bad("too short for a .tgcd header (" + std::to_string(size) +
                 " bytes)");
    TgcdHeader h;
    std::memcpy(&h, data, sizeof(h));
    if (std::memcmp(h.magic, "TGCTOK01", 8) != 0)
      return bad("not a .tgcd file (no TGCTOK01 magic); write it with "
                 "tgc-data encode");
    if (h.version < 1 || h.version > 3)
      return bad("unsupported version " + std::to_string(h.version));
    if (h.tokenBytes != 2 && h.tokenBytes != 4)
      return bad("token width " + std::to_string(h.tokenBytes) +
                 " is not 2 or 4 bytes");
    if (h.examples == 0)
      return bad("holds no example");
    if (h.numLabels < 0)
      return bad("a negative number of labels");
    // Sizes, checked without overflow against the file's.
    uint64_t limit = uint64_t(1) << 56;
    if (h.examples > limit || h.tokens > limit)
      return bad("implausible sizes in the header");
    uint64_t offsetsAt = sizeof(TgcdHeader);
    uint64_t labelsAt = offsetsAt + 8 * (h.examples + 1);
    uint64_t labelBytes = h.numLabels > 0 ? 4 * h.examples : 0;
    uint64_t tokensAt = labelsAt + (labelBytes + 7) / 8 * 8;
    // Versions 2 and 3: one byte per token after the tokens, the loss mask;
    // version 3 holds (chosen, rejected) pairs.
    uint64_t maskAt = tokensAt + h.tokens * h.tokenBytes;
    uint64_t expected = maskAt + (h.version >= 2 ? h.tokens : 0);
    if (size != expected)
      return bad("is " + std::to_string(size) + " bytes but its header "
                 "describes " + std::to_string(expected) +
                 " (truncated or corrupt)");
    count = int64_t(h.examples);
    tokenBytes = h.tokenBytes;
    numLabels = h.numLabels;
    padId = h.padId;
    maskId = h.maskId;
    clsId = h.clsId;
    sepId = h.sepId;
    offsets.resize(size_t(count) + 1);
    std::memcpy(offsets.data(), data + offsetsAt, 8 * offsets.size());
    labels = data + labelsAt;
    tokens = data + tokensAt;
    mask = h.version >= 2 ? data + maskAt : nullptr;
    isPairs = h.version == 3;
    if (isPairs && (count % 2 != 0 || numLabels != 0))
      return bad("holds preference pairs (version 3), but " +
                 std::string(count % 2 != 0 ? "an odd number of examples, " +
                                                  std::to_string(count)
                                            : "labels"));
    if (offsets[0] != 0 || offsets[count] != h.tokens)
      return bad("the offsets do not span the tokens");
    for (int64_t i = 0; i < count; ++i)
      if (offsets[i + 1] <= offsets[i])
        return bad("example " + std::to_string(i) +
                   " is empty or its offsets decrease");
    for (int64_t i = 0; i < count; ++i)
      for (int64_t t = 0, n = length(i); t < n; ++t) {
        int64_t id = token(i, t);
        if (id >= modelVocab)
          return bad("example " + std::to_string(i) + " has token " +
                     std::to_string(id) + ", outside the model's vocabulary "
                     "of " + std::to_string(modelVocab));
      }
    if (mask)
      for (uint64_t t = 0; t < h.tokens; ++t)
        if (uint8_t(mask[t]) > 1)
          return bad("the loss mask holds " +
                     std::to_string(int(uint8_t(mask[t]))) +
                     " at token " + std::to_string(t) + " (only 0 or 1)");
    for (int32_t special : {h.padId, h.maskId, h.clsId, h.sepId})
      if (special < -1 || special >= modelVocab)
        return bad("special token id " + std::to_string(special) +
                   " is outside the model's vocabulary of " +
                   std::to_string(modelVocab));
    if (numLabels > 0)
      for (int64_t i = 0; i < count; ++i)
        if (label(i) < 0 || label(i) >= numLabels)
          return bad("example " + std::to_string(i) + " has label " +
                     std::to_string(label(i)) + ", outside its " +
                     std::to_string(numLabels) + " labels");
    return Status::success();
  }

  int64_t size() const override { return count; }
  int64_t length(int64_t i) const override {
    return int64_t(offsets[i + 1] - offsets[i]);
  }
  int64_t token(int64_t i, int64_t t) const override {
    uint64_t at = offsets[i] + uint64_t(t);
    if (tokenBytes == 2) {
      uint16_t v;
      std::memcpy(&v, tokens + 2 * at, 2);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, tokens + 4 * at, 4);
    return v;
  }
  int64_t label(int64_t i) const override {
    int32_t v;
    std::memcpy(&v, labels + 4 * i, 4);
    return v;
  }
  bool hasLabels() const override { return numLabels > 0; }
  bool trained(int64_t i, int64_t t) const override {
    return !mask || mask[offsets[i] + uint64_t(t)] != 0;
  }
  bool hasLossMask() const override { return mask != nullptr; }
  bool pairs() const override { return isPairs; }
  std::string describe() const override {
    std::string what = isPairs ? std::to_string(count / 2) + " pairs"
                               : std::to_string(count) + " examples";
    return "'" + path + "' (" + what + ", " + std::to_string(offsets[count]) +
           " tokens)";
  }

  int64_t numLabels = 0;

private:
  std::string path;
  int64_t count = 0;
  uint32_t tokenBytes = 2;
  std::vector<uint64_t> offsets;
  const char *labels = nullptr;
  const char *tokens = nullptr;
  const char *mask = nullptr;
  bool isPairs = false;
};

/// A .tgcd file, read into memory when it is opened. (Not mapped: a
/// mapped file that another process truncates during the run would end it
/// with SIGBUS at the next token read; the check at open reads every token
/// anyway.)
class DatasetFile : public DatasetView {
public:
  Status open(const std::string &path, int64_t modelVocab) {
    Status status = readRegularFile(path, bytes, kMaxDatasetBytes);
    return status.ok() ? parse(path, bytes.data(), bytes.size(), modelVocab)
                       : status;
  }

private:
  /// 1 TiB: the largest dataset file accepted.
  static constexpr uint64_t kMaxDatasetBytes = uint64_t(1) << 40;
  std::vector<char> bytes;
};

} // namespace

Status parseDataset(const std::string &path, const char *data, size_t size,
                    int64_t modelVocab, DatasetSummary &summary) {
  DatasetView view;
  Status status = view.parse(path, data, size, modelVocab);
  if (!status.ok())
    return status;
  summary = DatasetSummary();
  summary.examples = view.size();
  summary.numLabels = view.numLabels;
  for (int64_t i = 0; i < view.size(); ++i) {
    summary.longest = std::max(summary.longest, view.length(i));
    summary.lengths.push_back(view.length(i));
    summary.tokens += view.length(i);
    for (int64_t t = 0; t < view.length(i); ++t)
      summary.largestToken = std::max(summary.largestToken, view.token(i, t));
    if (view.hasLabels())
      summary.largestLabel = std::max(summary.largestLabel, view.label(i));
  }
  return Status::success();
}

namespace {

//===----------------------------------------------------------------------===//
// The synthetic set
//===----------------------------------------------------------------------===//

/// Examples `[CLS] w1 ... wn [SEP]` of log-normally distributed lengths
/// whose words are drawn from one of a few topics (the ids above the four
/// special ones whose residue modulo the number of topics is the topic);
/// the label is the topic. A classifier learns it from any word, and a
/// masked LM learns that a masked word shares its neighbours' topic.
class SyntheticSet : public ExampleSet {
public:
  SyntheticSet(uint64_t seed, int64_t examples, int64_t maxLength,
               int64_t vocab, int64_t classes)
      : seed(seed), count(examples), vocab(vocab), classes(classes),
        topics(classes > 0 ? classes : 4) {
    padId = 0;
    maskId = vocab > 1 ? 1 : -1;
    clsId = vocab > 2 ? 2 : -1;
    sepId = vocab > 3 ? 3 : -1;
    first = std::min<int64_t>(4, vocab - 1);
    span = std::max<int64_t>(1, vocab - first);
    lengths.resize(size_t(examples));
    SplitMix64 rng{seed ^ 0x1E6C7A5ull};
    double median = std::max(3.0, double(maxLength) / 4.0);
    for (int64_t &n : lengths) {
      double drawn = median * std::exp(0.6 * rng.normal());
      n = std::clamp<int64_t>(int64_t(drawn), std::min<int64_t>(3, maxLength),
                              maxLength);
    }
  }
  int64_t size() const override { return count; }
  int64_t length(int64_t i) const override { return lengths[size_t(i)]; }
  int64_t token(int64_t i, int64_t t) const override {
    int64_t n = length(i);
    if (t == 0 && clsId >= 0)
      return clsId;
    if (t == n - 1 && sepId >= 0)
      return sepId;
    SplitMix64 rng{(seed + 0x9E3779B97F4A7C15ull * uint64_t(i)) ^
                   (0xBF58476D1CE4E5B9ull * uint64_t(t + 1))};
    int64_t words = std::max<int64_t>(1, (span - topic(i) + topics - 1) / topics);
    int64_t w = int64_t(rng.below(uint64_t(words)));
    return first + std::min(span - 1, topic(i) + topics * w);
  }
  int64_t label(int64_t i) const override { return topic(i); }
  bool hasLabels() const override { return classes > 0; }
  std::string describe() const override {
    return "synthetic examples (" + std::to_string(count) + " of " +
           std::to_string(topics) + " topics, log-normal lengths)";
  }

private:
  int64_t topic(int64_t i) const {
    SplitMix64 rng{seed * 0x94D049BB133111EBull + uint64_t(i)};
    return int64_t(rng.below(uint64_t(topics)));
  }
  uint64_t seed;
  int64_t count, vocab, classes, topics;
  int64_t first = 0, span = 1;
  std::vector<int64_t> lengths;
};

//===----------------------------------------------------------------------===//
// Batching and collation
//===----------------------------------------------------------------------===//

enum class Task { CausalLM, MaskedLM, SequenceClassification, Seq2Seq };

/// The length of example e's source for an encoder-decoder: its tokens
/// before the first the loss reads (a .tgcd of sources and targets, or of
/// prompts and responses); synthetic examples, which mark none, are split
/// in half.
int64_t sourceLengthOf(const ExampleSet &set, int64_t e) {
  int64_t n = set.length(e);
  if (!set.hasLossMask())
    return (n + 1) / 2;
  int64_t t = 0;
  while (t < n && !set.trained(e, t))
    ++t;
  return t;
}

/// The task of a program: named in the executable; a program that names
/// none (compiled before tasks were recorded) is a causal LM.
Task taskOf(const Program &program) {
  if (program.task == "masked-lm")
    return Task::MaskedLM;
  if (program.task == "sequence-classification")
    return Task::SequenceClassification;
  if (program.task == "seq2seq")
    return Task::Seq2Seq;
  return Task::CausalLM;
}

class ExampleBatches : public DataSource {
public:
  ExampleBatches(const Program &program, std::unique_ptr<ExampleSet> set,
                 Task task, uint64_t seed, DataOptions options,
                 int64_t vocab)
      : program(program), set(std::move(set)), task(task), seed(seed),
        options(options), vocab(vocab) {
    const Bucket &largest = program.buckets.back();
    // The global batch of every rank's rows (DataOptions::rank): its
    // examples, longest example and random draws are every rank's.
    localRows = program.tensors[largest.input("tokens")].shape[0];
    firstRow = options.rank * localRows;
    rows = localRows * options.ranks;
    maxLength = largest.seqLen;
    if (options.padding == Padding::Pack)
      packRows();
    // Pairs: each rank's rows are its pairs' chosen answers, then their
    // rejected ones.
    pairs = this->set->pairs();
    int64_t perBatch = pairs ? rows / 2 : rows;
    batchesPerEpoch = (units() + perBatch - 1) / perBatch;
  }

  Status fill(Session &session, int64_t index) override {
    BatchInfo info;
    return fillBatch(session, index, info);
  }

  Status fillBatch(Session &session, int64_t index, BatchInfo &info) override {
    if (index < 0)
      return Status::failure("batch index " + std::to_string(index) +
                             " is negative");
    int64_t epoch = index / batchesPerEpoch;
    int64_t within = index % batchesPerEpoch;
    if (epoch != orderEpoch || order.empty())
      orderEpoch = epoch, order = epochOrder(epoch);
    // This batch's examples (-1: an empty row at the end of an epoch).
    std::vector<int64_t> examples(size_t(rows), -1);
    for (int64_t r = 0; r < rows && !pairs; ++r) {
      int64_t at = within * rows + r;
      if (at < int64_t(order.size()))
        examples[r] = order[size_t(at)];
    }
    // A pair's rows: rank k's local rows i and P + i (P pairs a rank). An
    // epoch's last batch is filled with pairs from its start, as an empty
    // pair would count in the mean over pairs.
    for (int64_t g = 0; g < rows && pairs; ++g) {
      int64_t P = localRows / 2, i = g % localRows;
      int64_t slot = within * (rows / 2) + g / localRows * P + i % P;
      int64_t pair = slot < int64_t(order.size()) ? order[size_t(slot)] : -1;
      if (pair < 0)
        pair = slot % units();
      examples[size_t(g)] = 2 * pair + (i >= P ? 1 : 0);
    }
    // The examples of each row, one after the other: a packed row's (the
    // order holds packed rows then), or the one example.
    std::vector<std::vector<int64_t>> rowExamples(static_cast<size_t>(rows));
    int64_t longest = 1;
    for (int64_t r = 0; r < rows; ++r) {
      if (examples[r] < 0)
        continue;
      if (options.padding == Padding::Pack)
        rowExamples[r] = packedRows[size_t(examples[r])];
      else
        rowExamples[r] = {examples[r]};
      int64_t length = 0;
      for (int64_t e : rowExamples[r])
        length += lengthOf(e);
      longest = std::max(longest, length);
    }
    const Bucket *bucket = options.padding == Padding::Max
                               ? &program.buckets.back()
                               : program.bucketFor(longest);
    if (!bucket)
      bucket = &program.buckets.back();
    if (task == Task::Seq2Seq)
      return fillPairs(session, *bucket, examples, info);
    int64_t L = bucket->seqLen;
    TensorRef tokens = session.hostView(bucket->input("tokens"));
    TensorRef targets = session.hostView(bucket->input("targets"));
    auto optional = [&](const char *name) {
      int32_t at = bucket->input(name);
      return at >= 0 ? session.hostView(at) : TensorRef();
    };
    TensorRef mask = optional("attention_mask"),
              segments = optional("segments"),
              positions = optional("positions");
    int64_t pad = std::max<int64_t>(set->padId, 0);
    info.bucket = bucket;
    info.realTokens = 0;
    info.paddedTokens = rows * L;
    info.predicted = 0;
    SplitMix64 rng{seed * 0xD1B54A32D192ED03ull + uint64_t(index)};
    for (int64_t g = 0; g < rows; ++g) {
      // This rank's row, or -1 (the draws are made all the same).
      int64_t r = g >= firstRow && g < firstRow + localRows ? g - firstRow : -1;
      // Padding first; each example then writes its positions.
      if (r >= 0)
        for (int64_t t = 0; t < L; ++t) {
          storeI64(tokens, r * L + t, pad);
          if (task != Task::SequenceClassification)
            storeI64(targets, r * L + t, kIgnoreIndex);
          if (mask.data)
            storeI64(mask, r * L + t, 0);
          if (segments.data) {
            storeI64(segments, r * L + t, 0);
            storeI64(positions, r * L + t, 0);
          }
        }
      int64_t offset = 0, segment = 0;
      for (int64_t e : rowExamples[size_t(g)]) {
        int64_t n = lengthOf(e);
        ++segment;
        info.realTokens += n;
        for (int64_t t = 0; t < n; ++t) {
          int64_t id = tokenOf(e, t, n);
          int64_t target = kIgnoreIndex;
          if (task == Task::CausalLM && t + 1 < n && trainedOf(e, t + 1, n))
            target = tokenOf(e, t + 1, n);
          if (task == Task::MaskedLM && !isSpecial(id)) {
            // Hugging Face's DataCollatorForLanguageModeling: 15% of the
            // real tokens are predicted; of those, 80% [MASK], 10% a
            // random token, 10% stay.
            if (rng.uniform() < 0.15) {
              target = id;
              double u = rng.uniform();
              if (u < 0.8)
                id = set->maskId;
              else if (u < 0.9)
                id = int64_t(rng.below(uint64_t(vocab)));
            }
          }
          info.predicted += target != kIgnoreIndex;
          if (r < 0)
            continue;
          int64_t at = r * L + offset + t;
          storeI64(tokens, at, id);
          if (task != Task::SequenceClassification)
            storeI64(targets, at, target);
          if (mask.data)
            storeI64(mask, at, 1);
          if (segments.data) {
            storeI64(segments, at, segment);
            storeI64(positions, at, t);
          }
        }
        offset += n;
      }
      if (task == Task::SequenceClassification) {
        int64_t e = examples[size_t(g)];
        info.predicted += e >= 0;
        if (r >= 0)
          storeI64(targets, r, e < 0 ? kIgnoreIndex : set->label(e));
      }
    }
    return Status::success();
  }

  std::string describe() const override {
    static const char *names[] = {"max", "dynamic", "grouped", "pack"};
    std::string lengths;
    for (const Bucket &bucket : program.buckets)
      lengths += (lengths.empty() ? "" : ",") + std::to_string(bucket.seqLen);
    std::string packed;
    if (options.padding == Padding::Pack)
      packed = " (" + std::to_string(packedRows.size()) + " rows of " +
               std::to_string(maxLength) + ")";
    return set->describe() + ", padding " + names[int(options.padding)] +
           packed + " over lengths " + lengths +
           (pairs ? ", chosen answers' rows first" : "") + ", " +
           std::to_string(batchesPerEpoch) + " batches an epoch";
  }
  int64_t itemsPerBatch() const override { return rows * maxLength; }

private:
  /// An encoder-decoder's batch (Task::Seq2Seq): each example's source (its
  /// tokens before the first one the loss reads) as `tokens`, right-padded
  /// with `attention_mask` 0, and its target (the rest) as `targets`,
  /// -100 after its end; each cut to the model's lengths, as a tokenizer
  /// with truncation cuts source and target. The model shifts the targets
  /// into its decoder's inputs itself (tgc-import, as transformers does).
  Status fillPairs(Session &session, const Bucket &bucket,
                   const std::vector<int64_t> &examples, BatchInfo &info) {
    int32_t tokensIndex = bucket.input("tokens");
    int32_t targetsIndex = bucket.input("targets");
    TensorRef tokens = session.hostView(tokensIndex);
    TensorRef targets = session.hostView(targetsIndex);
    TensorRef mask = session.hostView(bucket.input("attention_mask"));
    int64_t S = program.tensors[size_t(tokensIndex)].shape[1];
    int64_t T = program.tensors[size_t(targetsIndex)].shape[1];
    int64_t pad = std::max<int64_t>(set->padId, 0);
    info.bucket = &bucket;
    info.realTokens = 0;
    info.paddedTokens = rows * (S + T);
    info.predicted = 0;
    for (int64_t g = 0; g < rows; ++g) {
      int64_t e = examples[size_t(g)];
      int64_t split = e < 0 ? 0 : sourceLengthOf(*set, e);
      int64_t n = e < 0 ? 0 : std::min(split, S);
      int64_t m = e < 0 ? 0 : std::min(set->length(e) - split, T);
      info.realTokens += n + m;
      info.predicted += m;
      int64_t r = g - firstRow;
      if (r < 0 || r >= localRows)
        continue;
      for (int64_t t = 0; t < S; ++t) {
        storeI64(tokens, r * S + t, t < n ? set->token(e, t) : pad);
        storeI64(mask, r * S + t, t < n ? 1 : 0);
      }
      for (int64_t t = 0; t < T; ++t)
        storeI64(targets, r * T + t,
                 t < m ? set->token(e, split + t) : kIgnoreIndex);
    }
    return Status::success();
  }

  /// The length an example has in a batch: cut to the largest bucket.
  int64_t lengthOf(int64_t e) const {
    return std::min(set->length(e), maxLength);
  }
  /// Token t of example e as batched at length n (a cut example keeps its
  /// closing [SEP]).
  int64_t tokenOf(int64_t e, int64_t t, int64_t n) const {
    if (t == n - 1 && n < set->length(e) && set->sepId >= 0 &&
        set->token(e, set->length(e) - 1) == set->sepId)
      return set->sepId;
    return set->token(e, t);
  }
  /// Whether the loss predicts token t of example e as batched at length
  /// n (a cut example's closing [SEP] is trained as its last token was).
  bool trainedOf(int64_t e, int64_t t, int64_t n) const {
    if (t == n - 1 && n < set->length(e) && set->sepId >= 0 &&
        set->token(e, set->length(e) - 1) == set->sepId)
      return set->trained(e, set->length(e) - 1);
    return set->trained(e, t);
  }
  bool isSpecial(int64_t id) const {
    return id == set->padId || id == set->clsId || id == set->sepId ||
           id == set->maskId;
  }
  /// What an epoch orders: examples, packed rows, or pairs.
  int64_t units() const {
    return options.padding == Padding::Pack ? int64_t(packedRows.size())
           : pairs                          ? set->size() / 2
                                            : set->size();
  }
  /// The length a unit takes in a batch: a pair's, its longer answer's.
  int64_t unitLength(int64_t u) const {
    return pairs ? std::max(lengthOf(2 * u), lengthOf(2 * u + 1)) : lengthOf(u);
  }
  /// Packs the examples into rows of maxLength (packExamples).
  void packRows() {
    std::vector<int64_t> lengths(static_cast<size_t>(set->size()));
    for (size_t i = 0; i < lengths.size(); ++i)
      lengths[i] = lengthOf(int64_t(i));
    packedRows = packExamples(lengths, maxLength);
  }

  /// The examples (or packed rows) of epoch `epoch` in batch order.
  std::vector<int64_t> epochOrder(int64_t epoch) const {
    std::vector<int64_t> order(static_cast<size_t>(units()));
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = int64_t(i);
    SplitMix64 rng{seed ^ (0xA0761D6478BD642Full * uint64_t(epoch + 1))};
    auto shuffle = [&](auto begin, auto end) {
      for (auto n = end - begin; n > 1; --n)
        std::swap(begin[n - 1], begin[rng.below(uint64_t(n))]);
    };
    shuffle(order.begin(), order.end());
    if (options.padding != Padding::Grouped)
      return order;
    // Sorted by length (ties in the shuffled order), cut into batches,
    // whose order is then shuffled.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return unitLength(a) < unitLength(b);
    });
    std::vector<int64_t> batches(static_cast<size_t>(batchesPerEpoch), 0);
    for (size_t b = 0; b < batches.size(); ++b)
      batches[b] = int64_t(b);
    shuffle(batches.begin(), batches.end());
    // The short batch keeps its empty rows (-1) wherever it lands.
    std::vector<int64_t> grouped;
    grouped.reserve(size_t(batchesPerEpoch * rows));
    int64_t perBatch = pairs ? rows / 2 : rows;
    for (int64_t b : batches)
      for (int64_t r = 0; r < perBatch; ++r) {
        size_t at = size_t(b * perBatch + r);
        grouped.push_back(at < order.size() ? order[at] : -1);
      }
    return grouped;
  }

  const Program &program;
  std::unique_ptr<ExampleSet> set;
  Task task;
  uint64_t seed;
  DataOptions options;
  int64_t vocab;
  /// Rows of the global batch, of this rank's, and its first global row.
  int64_t rows = 0, localRows = 0, firstRow = 0;
  int64_t maxLength = 0, batchesPerEpoch = 1;
  /// The examples are (chosen, rejected) pairs (a preference loss's).
  bool pairs = false;
  int64_t orderEpoch = -1;
  std::vector<int64_t> order;
  /// With Padding::Pack, the examples of each packed row.
  std::vector<std::vector<int64_t>> packedRows;
};

/// The task of `program`, checked to take padded examples, with its
/// vocabulary and classes.
Status checkProgram(const Program &program, Task &task, ModelInputs &inputs) {
  task = taskOf(program);
  if (program.buckets.empty())
    return Status::failure("the program has no sequence lengths to batch "
                           "examples for");
  Status status = findModelInputs(program, inputs);
  if (!status.ok())
    return status;
  if (inputs.tokens < 0)
    return Status::failure("datasets of examples feed models with inputs "
                           "'tokens' and 'targets'");
  const Bucket &largest = program.buckets.back();
  const TensorInfo &t = program.tensors[inputs.tokens];
  const TensorInfo &y = program.tensors[inputs.targets];
  bool shaped = task == Task::SequenceClassification
                    ? y.shape == std::vector<int64_t>{t.shape[0]}
                : task == Task::Seq2Seq
                    ? y.shape.size() == 2 && y.shape[0] == t.shape[0]
                    : y.shape == t.shape;
  if (t.shape.size() != 2 || !shaped)
    return Status::failure("the model's 'tokens' and 'targets' do not have "
                           "the shapes its task batches");
  if (inputs.segments >= 0 && task != Task::CausalLM && task != Task::MaskedLM)
    return Status::failure("packed rows ('segments') are for causal and "
                           "masked language models; this model is a " +
                           program.task);
  if (task != Task::CausalLM && inputs.segments < 0 &&
      largest.input("attention_mask") < 0)
    return Status::failure("a " + program.task +
                           " model needs an 'attention_mask' input");
  return Status::success();
}

/// Whether the padding `options` ask for suits the program: packing needs
/// a model of packed rows.
Status checkPacking(const ModelInputs &inputs, const DataOptions &options) {
  if (options.padding == Padding::Pack && inputs.segments < 0)
    return Status::failure(
        "--padding=pack needs a model of packed rows, with inputs "
        "'segments' and 'positions' (tgc-models --packed); this one has "
        "none");
  return Status::success();
}

} // namespace

std::vector<std::vector<int64_t>>
packExamples(const std::vector<int64_t> &lengths, int64_t rowLength) {
  std::vector<int64_t> byLength(lengths.size());
  for (size_t i = 0; i < byLength.size(); ++i)
    byLength[i] = int64_t(i);
  auto length = [&](int64_t e) {
    return std::min(lengths[size_t(e)], rowLength);
  };
  std::stable_sort(byLength.begin(), byLength.end(),
                   [&](int64_t a, int64_t b) { return length(a) > length(b); });
  std::vector<std::vector<int64_t>> rows;
  std::multimap<int64_t, size_t> room; // room left -> row
  for (int64_t e : byLength) {
    int64_t n = length(e);
    auto it = room.lower_bound(n);
    size_t row;
    int64_t left;
    if (it == room.end()) {
      row = rows.size();
      rows.emplace_back();
      left = rowLength - n;
    } else {
      row = it->second;
      left = it->first - n;
      room.erase(it);
    }
    rows[row].push_back(e);
    if (left > 0)
      room.emplace(left, row);
  }
  return rows;
}

Status createExampleData(const Program &program, const std::string &path,
                         uint64_t seed, const DataOptions &options,
                         std::unique_ptr<DataSource> &source) {
  Task task;
  ModelInputs inputs;
  Status status = checkProgram(program, task, inputs);
  if (!status.ok())
    return status;
  status = checkPacking(inputs, options);
  if (!status.ok())
    return status;
  int64_t vocab = inputs.vocab, classes = inputs.classes;
  auto set = std::make_unique<DatasetFile>();
  status = set->open(path, vocab);
  if (!status.ok())
    return status;
  auto bad = [&](const std::string &message) {
    return Status::failure("dataset '" + path + "': " + message);
  };
  if (task == Task::SequenceClassification) {
    if (!set->hasLabels())
      return bad("has no labels for a sequence classifier (encode it with "
                 "--num-labels)");
    if (set->numLabels > classes)
      return bad("has " + std::to_string(set->numLabels) +
                 " labels, more than the model's " + std::to_string(classes) +
                 " classes");
    // Every label lies below the file's count of labels (DatasetView).
  }
  if (task == Task::Seq2Seq) {
    if (!set->hasLossMask())
      return bad("has no sources and targets for an encoder-decoder "
                 "(encode {\"source\", \"target\"} or {\"prompt\", "
                 "\"response\"} lines)");
    if (program.buckets.size() > 1)
      return bad("an encoder-decoder is batched at its one source and "
                 "target length, not over shape buckets");
  }
  if (task != Task::CausalLM && task != Task::Seq2Seq && set->hasLossMask())
    return bad("marks prompts that the loss does not read (prompt and "
               "response, or conversations), which only a causal LM "
               "trains on; this model is a " + program.task);
  if (task == Task::MaskedLM && set->maskId < 0)
    return bad("has no mask token id for masked-LM training (a tokenizer "
               "with [MASK], or --mask-id)");
  if (set->pairs() != !program.preference.empty())
    return bad(
        set->pairs()
            ? "holds preference pairs, which a model compiled with "
              "--loss=dpo, ipo, simpo or orpo trains on; this one "
              "has its own loss"
            : "holds examples, but the model's --loss=" + program.preference +
                  " trains on preference pairs (encode {\"prompt\", "
                  "\"chosen\", \"rejected\"} lines)");
  if (set->pairs()) {
    if (options.padding == Padding::Pack)
      return bad("holds preference pairs, which are not packed (a pair's "
                 "answers are rows i and P + i of a batch)");
    // Every answer keeps a trained token within the rows: a prompt that
    // fills them leaves it nothing to score.
    int64_t rowLength = program.buckets.back().seqLen;
    for (int64_t i = 0; i < set->size(); ++i) {
      int64_t first = 1;
      while (first < set->length(i) && !set->trained(i, first))
        ++first;
      if (first >= std::min(set->length(i), rowLength))
        return bad("pair " + std::to_string(i / 2) + "'s " +
                   (i % 2 ? "rejected" : "chosen") + " answer has " +
                   (first >= set->length(i)
                        ? std::string("no token to score")
                        : "no token within the model's rows of " +
                              std::to_string(rowLength) + " (its prompt has " +
                              std::to_string(first) + ")"));
    }
  }
  if (task == Task::CausalLM && classes < vocab)
    vocab = classes;
  if (task == Task::Seq2Seq) {
    int64_t S = program.tensors[size_t(inputs.tokens)].shape[1];
    int64_t T = program.tensors[size_t(inputs.targets)].shape[1];
    for (int64_t i = 0; i < set->size(); ++i) {
      int64_t split = sourceLengthOf(*set, i);
      int64_t target = set->length(i) - split;
      if (split == 0 || target == 0)
        return bad("example " + std::to_string(i) + " has " +
                   (split == 0 ? "no source" : "no target") +
                   " (an encoder-decoder reads both)");
      if (!options.truncate && (split > S || target > T))
        return bad(
            "example " + std::to_string(i) + " has a " +
            (split > S
                 ? "source of " + std::to_string(split) +
                       " tokens, more than the model's " + std::to_string(S)
                 : "target of " + std::to_string(target) +
                       " tokens, more than the model's " + std::to_string(T)) +
            " (--overlong=truncate cuts it)");
    }
  }
  int64_t largest = program.buckets.back().seqLen;
  if (!options.truncate && task != Task::Seq2Seq)
    for (int64_t i = 0; i < set->size(); ++i)
      if (set->length(i) > largest)
        return bad("example " + std::to_string(i) + " has " +
                   std::to_string(set->length(i)) +
                   " tokens, more than the largest sequence length " +
                   std::to_string(largest) + " (--overlong=truncate cuts it)");
  source.reset(
      new ExampleBatches(program, std::move(set), task, seed, options, vocab));
  return Status::success();
}

Status createSyntheticExampleData(const Program &program, uint64_t seed,
                                  const DataOptions &options,
                                  std::unique_ptr<DataSource> &source) {
  Task task;
  ModelInputs inputs;
  Status status = checkProgram(program, task, inputs);
  if (!status.ok())
    return status;
  status = checkPacking(inputs, options);
  if (!status.ok())
    return status;
  auto set = std::make_unique<SyntheticSet>(
      seed, options.syntheticExamples, program.buckets.back().seqLen,
      inputs.vocab,
      task == Task::SequenceClassification ? inputs.classes : 0);
  source.reset(new ExampleBatches(program, std::move(set), task, seed, options,
                                  inputs.vocab));
  return Status::success();
}

} // namespace tgc::rt
