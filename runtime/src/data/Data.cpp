//===- Data.cpp - batches for a training step -----------------------------===//
//
// The synthetic tasks and token files behind tgc-run's --data. Both find
// their input tensors by name and the vocabulary (or class count) from the
// program itself: the table embedded with `tokens`, the classes of the
// cross-entropy that reads `targets`.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Data.h"

#include "ModelInputs.h"
#include "Random.h"
#include "FileIO.h"
#include "Safetensors.h"
#include "cpu/Common.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <fstream>

namespace tgc::rt {

DataSource::~DataSource() = default;

void fillWholeRows(Session &session, const ModelInputs &inputs) {
  if (inputs.segments < 0)
    return;
  TensorRef segments = session.hostView(inputs.segments);
  TensorRef positions = session.hostView(inputs.positions);
  int64_t length = segments.shape.back();
  for (int64_t i = 0, n = segments.numElements(); i < n; ++i) {
    storeI64(segments, i, 1);
    storeI64(positions, i, i % length);
  }
}

Status findModelInputs(const Program &program, ModelInputs &inputs) {
  inputs.tokens = program.findPersistent("tokens");
  inputs.targets = program.findPersistent("targets");
  inputs.features = program.findPersistent("inputs");
  inputs.segments = program.findPersistent("segments");
  inputs.positions = program.findPersistent("positions");
  if (inputs.targets < 0 || (inputs.tokens < 0) == (inputs.features < 0))
    return Status::failure(
        "the model's inputs are neither a language model's ('tokens', "
        "'targets') nor a classifier's ('inputs', 'targets')");
  if ((inputs.segments < 0) != (inputs.positions < 0))
    return Status::failure("a model of packed rows has inputs 'segments' "
                           "and 'positions' both");
  for (int32_t index :
       {inputs.tokens, inputs.targets, inputs.segments, inputs.positions}) {
    if (index < 0)
      continue;
    DType dtype = program.tensors[index].dtype;
    if ((dtype != DType::I64 && dtype != DType::I32) ||
        program.tensors[index].role != Role::Input)
      return Status::failure("input '" + program.tensors[index].name +
                             "' must be an i32 or i64 input");
  }
  if (inputs.segments >= 0 && (inputs.tokens < 0 ||
                               program.tensors[inputs.segments].shape !=
                                   program.tensors[inputs.tokens].shape ||
                               program.tensors[inputs.positions].shape !=
                                   program.tensors[inputs.tokens].shape))
    return Status::failure("'segments' and 'positions' must have the shape "
                           "of 'tokens'");
  // The step that reads the batch: the training step, or with gradient
  // accumulation its micro-step.
  // The targets may reach the loss reshaped and split into pieces (a loss
  // in chunks, tg-chunk-loss).
  const EntryPoint *micro = program.findEntry("grad_step");
  std::vector<int32_t> targets = {inputs.targets};
  auto isTargets = [&](int32_t tensor) {
    return std::find(targets.begin(), targets.end(), tensor) != targets.end();
  };
  for (const Instruction &inst :
       micro ? micro->instructions : program.instructions) {
    if (inst.kernel == Kernel::Embedding && inst.operands[1] == inputs.tokens)
      inputs.vocab = program.tensors[inst.operands[0]].shape[0];
    if ((inst.kernel == Kernel::Reshape || inst.kernel == Kernel::Split) &&
        !inst.operands.empty() && isTargets(inst.operands[0]))
      targets.insert(targets.end(), inst.results.begin(), inst.results.end());
    if (inst.kernel == Kernel::CrossEntropy && inst.operands.size() > 1 &&
        isTargets(inst.operands[1]))
      inputs.classes = program.tensors[inst.operands[0]].shape.back();
  }
  if (inputs.classes <= 0)
    return Status::failure("cannot find the loss that reads 'targets'");
  if (inputs.tokens >= 0 && inputs.vocab <= 0)
    return Status::failure("cannot find the embedding that reads 'tokens'");
  return Status::success();
}


Status DataSource::fillBatch(Session &session, int64_t index,
                             BatchInfo &info) {
  info = BatchInfo();
  if (!session.program().buckets.empty())
    info.bucket = &session.program().buckets.back();
  return fill(session, index);
}

namespace {

using Rng = SplitMix64;

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A generator for batch `index` of a run seeded with `seed`.
Rng batchRng(uint64_t seed, int64_t index) {
  Rng mix{seed * 0x2545F4914F6CDD1Dull + uint64_t(index)};
  return Rng{mix.next()};
}

/// The rows of this rank in a global batch of `rows` x ranks: row g of the
/// global batch is local row g - first when it lies in [first, first +
/// rows).
struct RankRows {
  int64_t first = 0, rows = 0, global = 0;
  RankRows(int64_t rows, const DataOptions &options)
      : first(options.rank * rows), rows(rows), global(rows * options.ranks) {}
  bool mine(int64_t g) const { return g >= first && g < first + rows; }
};

class SyntheticSequences : public DataSource {
public:
  SyntheticSequences(const Program &program, ModelInputs inputs, uint64_t seed,
                     const DataOptions &options)
      : inputs(inputs), seed(seed),
        shape(program.tensors[inputs.tokens].shape), options(options) {}

  Status fill(Session &session, int64_t index) override {
    TensorRef tokens = session.hostView(inputs.tokens);
    TensorRef targets = session.hostView(inputs.targets);
    int64_t length = shape.back();
    RankRows part(tokens.numElements() / length, options);
    int64_t vocab = std::min(inputs.vocab, inputs.classes);
    Rng rng = batchRng(seed, index);
    for (int64_t g = 0; g < part.global; ++g) {
      int64_t start = int64_t(rng.below(vocab));
      int64_t stride = 1 + int64_t(rng.below(3));
      if (!part.mine(g))
        continue;
      int64_t r = g - part.first;
      for (int64_t t = 0; t < length; ++t) {
        storeI64(tokens, r * length + t, (start + stride * t) % vocab);
        storeI64(targets, r * length + t, (start + stride * (t + 1)) % vocab);
      }
    }
    fillWholeRows(session, inputs);
    return Status::success();
  }
  std::string describe() const override {
    return "synthetic arithmetic sequences (vocabulary " +
           std::to_string(std::min(inputs.vocab, inputs.classes)) + ")";
  }
  int64_t itemsPerBatch() const override {
    return product(shape) * options.ranks;
  }

private:
  ModelInputs inputs;
  uint64_t seed;
  std::vector<int64_t> shape;
  DataOptions options;
};

class SyntheticClasses : public DataSource {
public:
  SyntheticClasses(const Program &program, ModelInputs inputs, uint64_t seed,
                   const DataOptions &options)
      : inputs(inputs), seed(seed), options(options) {
    const TensorInfo &x = program.tensors[inputs.features];
    features = x.shape.back();
    // The fixed map that defines the labels.
    Rng rng{seed ^ 0x5EEDC1A55ull};
    weights.resize(size_t(inputs.classes * features));
    for (double &w : weights)
      w = rng.normal();
  }

  Status fill(Session &session, int64_t index) override {
    TensorRef x = session.hostView(inputs.features);
    TensorRef y = session.hostView(inputs.targets);
    RankRows part(y.numElements(), options);
    Rng rng = batchRng(seed, index);
    std::vector<double> row(features);
    for (int64_t g = 0; g < part.global; ++g) {
      for (int64_t f = 0; f < features; ++f)
        row[f] = rng.normal();
      if (!part.mine(g))
        continue;
      int64_t r = g - part.first;
      for (int64_t f = 0; f < features; ++f)
        storeF32(x, r * features + f, float(row[f]));
      int64_t best = 0;
      double bestScore = -INFINITY;
      for (int64_t c = 0; c < inputs.classes; ++c) {
        double score = 0.0;
        for (int64_t f = 0; f < features; ++f)
          score += weights[c * features + f] * row[f];
        if (score > bestScore) {
          bestScore = score;
          best = c;
        }
      }
      storeI64(y, r, best);
    }
    return Status::success();
  }
  std::string describe() const override {
    return "synthetic classification (" + std::to_string(features) +
           " features, " + std::to_string(inputs.classes) + " classes)";
  }
  int64_t itemsPerBatch() const override {
    return rowsPerBatch * options.ranks;
  }
  const char *itemName() const override { return "examples"; }

  int64_t rowsPerBatch = 0;

private:
  ModelInputs inputs;
  uint64_t seed;
  DataOptions options;
  int64_t features = 0;
  std::vector<double> weights;
};

class TokenFile : public DataSource {
public:
  TokenFile(const Program &program, ModelInputs inputs, uint64_t seed,
            std::string path, std::vector<uint16_t> tokens,
            const DataOptions &options)
      : inputs(inputs), seed(seed), path(std::move(path)),
        tokens(std::move(tokens)), shape(program.tensors[inputs.tokens].shape),
        options(options) {}

  Status fill(Session &session, int64_t index) override {
    TensorRef x = session.hostView(inputs.tokens);
    TensorRef y = session.hostView(inputs.targets);
    int64_t length = shape.back();
    RankRows part(x.numElements() / length, options);
    Rng rng = batchRng(seed, index);
    uint64_t windows = tokens.size() - uint64_t(length);
    for (int64_t g = 0; g < part.global; ++g) {
      uint64_t start = rng.below(windows);
      if (!part.mine(g))
        continue;
      int64_t r = g - part.first;
      for (int64_t t = 0; t < length; ++t) {
        storeI64(x, r * length + t, tokens[start + t]);
        storeI64(y, r * length + t, tokens[start + t + 1]);
      }
    }
    fillWholeRows(session, inputs);
    return Status::success();
  }
  std::string describe() const override {
    return "'" + path + "' (" + std::to_string(tokens.size()) + " tokens)";
  }
  int64_t itemsPerBatch() const override {
    return product(shape) * options.ranks;
  }

private:
  ModelInputs inputs;
  uint64_t seed;
  std::string path;
  std::vector<uint16_t> tokens;
  std::vector<int64_t> shape;
  DataOptions options;
};

class TensorFile : public DataSource {
public:
  TensorFile(std::string path, SafetensorsFile file,
             std::vector<std::pair<int32_t, size_t>> inputs, int64_t batches,
             int64_t items, const DataOptions &options)
      : path(std::move(path)), file(std::move(file)),
        inputs(std::move(inputs)), batches(batches), items(items),
        options(options) {}

  Status fill(Session &session, int64_t index) override {
    if (index < 0)
      return Status::failure("batch index " + std::to_string(index) +
                             " is negative");
    for (auto &[tensor, entry] : inputs) {
      TensorRef view = session.hostView(tensor);
      // Global batch i holds ranks x this rank's bytes; this rank's rows
      // follow the lower ranks'.
      // Read from the file as batches are drawn (pread: the page cache
      // keeps a file that fits in memory), never held whole.
      uint64_t bytes = view.numBytes();
      uint64_t offset = uint64_t(index % batches) * bytes *
                            uint64_t(options.ranks) +
                        uint64_t(options.rank) * bytes;
      Status status =
          file.read(file.entries[entry], offset, view.data, bytes);
      if (!status.ok())
        return status;
      // A NaN or Inf in a batch would reach the loss and the weights.
      if (isFloat(view.dtype))
        if (int64_t i = cpu::firstNonFinite(view); i >= 0)
          return Status::failure(
                "'" + path + "': batch " + std::to_string(index % batches) +
                " of '" + session.program().tensors[tensor].name +
                "' holds a non-finite value (NaN or Inf) at element " +
                std::to_string(i) + " of this rank's rows");
      if (session.program().tensors[tensor].name == "segments" ||
          session.program().tensors[tensor].name == "positions") {
        Status checked = checkPacked(session, tensor, view, index % batches);
        if (!checked.ok())
          return checked;
      }
    }
    return Status::success();
  }
  /// Packed rows as the kernels take them: along each row, segment ids
  /// that never descend but to trailing padding (0), and positions that
  /// are not negative.
  Status checkPacked(Session &session, int32_t tensor, const TensorRef &view,
                     int64_t batch) const {
    const std::string &name = session.program().tensors[tensor].name;
    int64_t length = view.shape.back();
    for (int64_t i = 0, n = view.numElements(); i < n; ++i) {
      int64_t value = loadI64(view, i), t = i % length;
      auto where = [&] {
        return "'" + path + "': batch " + std::to_string(batch) + ", row " +
               std::to_string(i / length) + " of this rank's, position " +
               std::to_string(t);
      };
      if (name == "positions" && value < 0)
        return Status::failure(where() + ": position " + std::to_string(value) +
                               " is negative");
      if (name != "segments" || t == 0)
        continue;
      int64_t before = loadI64(view, i - 1);
      if (value < 0 || (value < before && value != 0) ||
          (before == 0 && value != 0))
        return Status::failure(
            where() + ": segment id " + std::to_string(value) + " after " +
            std::to_string(before) +
            " (the ids of a row ascend, 1, 2, ..., and only padding, 0, "
            "follows the last example)");
    }
    return Status::success();
  }
  std::string describe() const override {
    return "'" + path + "' (" + std::to_string(batches) + " batches)";
  }
  int64_t itemsPerBatch() const override { return items * options.ranks; }
  const char *itemName() const override {
    return tokens ? "tokens" : "examples";
  }

  bool tokens = false;

private:
  std::string path;
  SafetensorsFile file;
  std::vector<std::pair<int32_t, size_t>> inputs;
  int64_t batches, items;
  DataOptions options;
};

} // namespace

Status createTensorFileData(const Program &program, const std::string &path,
                            std::unique_ptr<DataSource> &source,
                            const DataOptions &options) {
  SafetensorsFile file;
  Status status = readSafetensors(path, file);
  if (!status.ok())
    return status;
  int64_t batches = -1, items = 0;
  std::vector<std::pair<int32_t, size_t>> inputs;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (info.role != Role::Input)
      continue;
    const SafetensorsEntry *entry = file.find(info.name);
    if (!entry)
      return Status::failure("'" + path + "' has no tensor '" + info.name +
                             "' for the model's input of that name");
    if (entry->shape.empty())
      return Status::failure("'" + path + "': tensor '" + info.name +
                             "' needs a leading batch-count dimension");
    // [batches, ranks x B, ...]: global batches.
    std::vector<int64_t> expected = info.shape;
    if (!expected.empty())
      expected[0] *= options.ranks;
    else if (options.ranks > 1)
      return Status::failure("'" + path + "': input '" + info.name +
                             "' is a scalar, which ranks cannot split");
    expected.insert(expected.begin(), entry->shape[0]);
    status = checkEntry(*entry, info.dtype, expected);
    if (!status.ok())
      return Status::failure("'" + path + "': " + status.error);
    if (batches >= 0 && entry->shape[0] != batches)
      return Status::failure("'" + path + "': the inputs hold different "
                             "numbers of batches");
    batches = entry->shape[0];
    if (batches <= 0)
      return Status::failure("'" + path + "' holds no batch");
    if (info.name == "tokens" || (items == 0 && !info.shape.empty()))
      items = info.name == "tokens" ? info.numElements() : info.shape[0];
    inputs.push_back({int32_t(i), size_t(entry - file.entries.data())});
  }
  auto *data =
      new TensorFile(path, std::move(file), std::move(inputs), batches, items,
                     options);
  data->tokens = program.findPersistent("tokens") >= 0;
  source.reset(data);
  return Status::success();
}

namespace {
/// For programs without inputs (a loss of parameters alone).
class NoInputs : public DataSource {
public:
  Status fill(Session &, int64_t) override { return Status::success(); }
  std::string describe() const override { return "none (the model has no "
                                                 "inputs)"; }
  int64_t itemsPerBatch() const override { return 1; }
  const char *itemName() const override { return "steps"; }
};
} // namespace

Status createDataSource(const Program &program, const std::string &spec,
                        uint64_t seed, std::unique_ptr<DataSource> &source,
                        const DataOptions &options) {
  bool hasInputs = false;
  for (const TensorInfo &info : program.tensors)
    hasInputs |= info.role == Role::Input;
  if (!hasInputs) {
    if (spec != "synthetic")
      return Status::failure("the model has no inputs to read from '" + spec +
                             "'");
    source.reset(new NoInputs());
    return Status::success();
  }
  bool padded = program.padsExamples();
  if (spec == "synthetic")
    return padded ? createSyntheticExampleData(program, seed, options, source)
                  : createSyntheticData(program, seed, source, options);
  auto endsWith = [&](const std::string &suffix) {
    return spec.size() > suffix.size() &&
           spec.compare(spec.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  if (endsWith(".safetensors"))
    return createTensorFileData(program, spec, source, options);
  if (endsWith(".tgcd"))
    return createExampleData(program, spec, seed, options, source);
  if (padded)
    return Status::failure("'" + spec + "': a " + program.task +
                           " model reads a dataset of examples (.tgcd, "
                           "from tgc-data), .safetensors batches "
                           "or 'synthetic'");
  return createTokenFileData(program, spec, seed, source, options);
}

Status createSyntheticData(const Program &program, uint64_t seed,
                           std::unique_ptr<DataSource> &source,
                           const DataOptions &options) {
  ModelInputs inputs;
  Status status = findModelInputs(program, inputs);
  if (!status.ok())
    return status;
  if (inputs.tokens >= 0) {
    if (program.tensors[inputs.tokens].shape !=
        program.tensors[inputs.targets].shape)
      return Status::failure("'tokens' and 'targets' differ in shape");
    source.reset(new SyntheticSequences(program, inputs, seed, options));
    return Status::success();
  }
  const TensorInfo &x = program.tensors[inputs.features];
  const TensorInfo &y = program.tensors[inputs.targets];
  if (x.shape.size() != 2 || !isFloat(x.dtype) || y.shape.size() != 1 ||
      y.shape[0] != x.shape[0])
    return Status::failure("a classifier's 'inputs' must be [B, F] floats "
                           "and its 'targets' [B] labels");
  auto *classes = new SyntheticClasses(program, inputs, seed, options);
  classes->rowsPerBatch = y.shape[0];
  source.reset(classes);
  return Status::success();
}

Status parseTokenFile(const std::string &path, const char *data,
                      size_t size, int64_t limit, int64_t length,
                      std::vector<uint16_t> &tokens) {
  int32_t header[256];
  if (size >= sizeof(header)) {
    std::memcpy(header, data, sizeof(header));
    if (header[0] == 20240520) {
      if (header[1] != 1 && header[1] != 2)
        return Status::failure("'" + path + "': unsupported llm.c shard "
                               "version " + std::to_string(header[1]));
      int64_t count = header[2];
      if (count < 0 || uint64_t(size - sizeof(header)) != uint64_t(count) * 2)
        return Status::failure(
            "'" + path + "' is truncated or corrupt: its header promises " +
            std::to_string(count) + " tokens (" + std::to_string(count * 2) +
            " bytes) but " + std::to_string(size - sizeof(header)) +
            " bytes follow it");
      data += sizeof(header);
      size -= sizeof(header);
    }
  }
  if (size % 2 != 0)
    return Status::failure("'" + path + "' is truncated: a raw token file "
                           "holds uint16 tokens, but its size is odd");
  tokens.assign(size / 2, 0);
  if (size)
    std::memcpy(tokens.data(), data, size);
  if (int64_t(tokens.size()) < length + 1)
    return Status::failure("'" + path + "' holds " +
                           std::to_string(tokens.size()) +
                           " tokens, fewer than one window of " +
                           std::to_string(length + 1));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= limit)
      return Status::failure("'" + path + "': token " +
                             std::to_string(tokens[i]) + " at position " +
                             std::to_string(i) +
                             " is outside the model's vocabulary of " +
                             std::to_string(limit));
  return Status::success();
}

Status createTokenFileData(const Program &program, const std::string &path,
                           uint64_t seed, std::unique_ptr<DataSource> &source,
                           const DataOptions &options) {
  ModelInputs inputs;
  Status status = findModelInputs(program, inputs);
  if (!status.ok())
    return status;
  if (inputs.tokens < 0)
    return Status::failure("token files feed language models (inputs "
                           "'tokens' and 'targets'); this model is a "
                           "classifier");
  std::vector<char> bytes;
  Status read = readRegularFile(path, bytes, uint64_t(1) << 40);
  if (!read.ok())
    return Status::failure("token file: " + read.error);
  std::vector<uint16_t> tokens;
  status = parseTokenFile(path, bytes.data(), bytes.size(),
                          std::min(inputs.vocab, inputs.classes),
                          program.tensors[inputs.tokens].shape.back(), tokens);
  if (!status.ok())
    return status;
  source.reset(
      new TokenFile(program, inputs, seed, path, std::move(tokens), options));
  return Status::success();
}

} // namespace tgc::rt
