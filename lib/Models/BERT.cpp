//===- BERT.cpp - a BERT encoder as a tg model ----------------------------===//
//
// A BERT encoder as Hugging Face's BertModel computes it (without dropout):
// word, position and token-type embeddings with a layer norm, n_layer
// post-norm blocks of bidirectional multi-head attention over a key padding
// mask and a GELU MLP, and one of two heads:
//   - masked LM (BertForMaskedLM): a dense + GELU + layer norm transform and
//     logits from the word embeddings (the decoder is tied to them) plus a
//     bias, with cross-entropy over the masked positions (targets -100
//     elsewhere);
//   - sequence classification (BertForSequenceClassification): the pooler
//     (dense + tanh over the first token) and a linear classifier, with
//     cross-entropy over the labels.
// Parameter names and nn.Linear's [out, in] layout are Hugging Face's, so
// checkpoints exchange with transformers. GELU is BERT's erf form ("gelu"),
// or the tanh approximation ("gelu_new"); every example has token type 0.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/ModelBuilder.h"
#include "tgc/Models/Models.h"
#include "TensorSizes.h"

#include "llvm/ADT/Twine.h"

using namespace mlir;

namespace tgc {

std::optional<BERTConfig> getBERTPreset(StringRef name) {
  BERTConfig config;
  if (name == "base")
    return config;
  if (name == "tiny") {
    config.nLayer = 2;
    config.nHead = 4;
    config.hidden = 64;
    config.intermediate = 256;
    config.vocabSize = 256;
    config.maxPositions = 128;
    config.batch = 8;
    config.seqLen = 64;
    return config;
  }
  return std::nullopt;
}

std::optional<BERTTask> parseBERTTask(StringRef name) {
  if (name == "mlm")
    return BERTTask::MaskedLM;
  if (name == "seq-cls")
    return BERTTask::SequenceClassification;
  return std::nullopt;
}

StringRef bertTaskName(BERTTask task) {
  return task == BERTTask::MaskedLM ? "mlm" : "seq-cls";
}

std::string validateBERTConfig(const BERTConfig &c) {
  if (c.nLayer <= 0 || c.nHead <= 0 || c.hidden <= 0 || c.intermediate <= 0 ||
      c.vocabSize <= 0 || c.maxPositions <= 0 || c.batch <= 0 ||
      c.seqLen <= 0 || c.numLabels <= 0)
    return "every BERT size must be positive";
  if (c.hidden % c.nHead != 0)
    return ("hidden size (" + Twine(c.hidden) +
            ") must be divisible by the number of heads (" + Twine(c.nHead) +
            ")")
        .str();
  if (c.seqLen > c.maxPositions)
    return ("sequence length (" + Twine(c.seqLen) +
            ") must not exceed the position embeddings (" +
            Twine(c.maxPositions) + ")")
        .str();
  if (c.nLayer > 100000)
    return "the number of layers must be at most 100000";
  if (c.packed && c.task != BERTTask::MaskedLM)
    return "packed rows are for the masked-LM task (a classifier reads one "
           "example a row)";
  return checkLargestTensors({
      {"the word embedding [vocab, hidden]", {c.vocabSize, c.hidden}},
      {"the MLP weight [intermediate, hidden]", {c.intermediate, c.hidden}},
      {"the logits [batch, seq, vocab]", {c.batch, c.seqLen, c.vocabSize}},
      {"the attention scores [batch, heads, seq, seq]",
       {c.batch, c.nHead, c.seqLen, c.seqLen}},
      {"the MLP activations [batch, seq, intermediate]",
       {c.batch, c.seqLen, c.intermediate}}});
}

OwningOpRef<ModuleOp> buildBERT(MLIRContext *context, const BERTConfig &c) {
  ModelBuilder b(context, "bert", Float32Type::get(context));
  Builder attrs(context);
  auto integer = [&](StringRef name, int64_t value) {
    return attrs.getNamedAttr(name, attrs.getI64IntegerAttr(value));
  };
  b.setGenerator(
      {attrs.getNamedAttr("model", attrs.getStringAttr("bert")),
       attrs.getNamedAttr("task", attrs.getStringAttr(bertTaskName(c.task))),
       integer("n_layer", c.nLayer), integer("n_head", c.nHead),
       integer("hidden", c.hidden), integer("intermediate", c.intermediate),
       integer("vocab_size", c.vocabSize),
       integer("max_positions", c.maxPositions),
       integer("num_labels", c.numLabels), integer("seq_len", c.seqLen),
       attrs.getNamedAttr("gelu",
                          attrs.getStringAttr(c.exactGelu ? "exact" : "tanh")),
       integer("batch", c.batch)});
  if (c.packed)
    b.recordGenerator(attrs.getNamedAttr("packed", attrs.getBoolAttr(true)));
  b.setTask(c.task == BERTTask::MaskedLM ? tg::TGDialect::kTaskMaskedLM
                                          : tg::TGDialect::kTaskSeqCls);
  const int64_t B = c.batch, T = c.seqLen, C = c.hidden, H = c.nHead,
                D = c.hidden / c.nHead, V = c.vocabSize, I = c.intermediate;
  auto normal = tg::InitAttr::get(context, tg::InitKind::Normal, 0.0, 0.02);
  auto zeros = tg::InitAttr::get(context, tg::InitKind::Zeros);
  auto ones = tg::InitAttr::get(context, tg::InitKind::Ones);
  const double eps = 1e-12;
  Type i64 = IntegerType::get(context, 64);

  Value tokens = b.input("tokens", {B, T}, i64);
  // Packed rows: the segment ids mask the attention (0, padding, as the
  // attention mask's 0) and keep the examples apart.
  Value mask = b.input(c.packed ? "segments" : "attention_mask", {B, T}, i64);
  Value positionIds = c.packed ? b.input("positions", {B, T}, i64) : Value();
  Value targets = c.task == BERTTask::MaskedLM ? b.input("targets", {B, T}, i64)
                                               : b.input("targets", {B}, i64);

  // nn.Linear: y = x W^T + b with W [out, in].
  auto linear = [&](Value x, Value weight, Value bias) {
    return b.add(b.matmul(x, weight, /*transposeLhs=*/false,
                          /*transposeRhs=*/true),
                 bias);
  };
  auto layerNorm = [&](StringRef prefix, Value x) {
    Value weight = b.param((prefix + ".weight").str(), {C}, ones);
    Value bias = b.param((prefix + ".bias").str(), {C}, zeros);
    return b.layerNorm(x, weight, bias, eps);
  };

  b.setScope("bert.embeddings");
  Value words = b.param("bert.embeddings.word_embeddings.weight", {V, C},
                        normal);
  Value positions = b.param("bert.embeddings.position_embeddings.weight",
                            {c.maxPositions, C}, normal);
  Value types = b.param("bert.embeddings.token_type_embeddings.weight",
                        {2, C}, normal);
  Value x = b.embedding(words, tokens);
  x = b.add(x, b.reshape(b.slice(types, {0, 0}, {1, C}), {C}));
  x = b.add(x, c.packed ? b.embedding(positions, positionIds)
                        : b.slice(positions, {0, 0}, {T, C}));
  x = layerNorm("bert.embeddings.LayerNorm", x);

  for (int64_t layer = 0; layer < c.nLayer; ++layer) {
    std::string prefix = ("bert.encoder.layer." + Twine(layer) + ".").str();
    auto name = [&](StringRef suffix) { return prefix + suffix.str(); };
    // Parameters are declared one statement at a time so that the argument
    // order is Hugging Face's state-dict order on every compiler.
    b.setScope(name("attention.self"));
    auto heads = [&](StringRef which) {
      Value weight = b.param(name(("attention.self." + which + ".weight").str()),
                             {C, C}, normal);
      Value bias = b.param(name(("attention.self." + which + ".bias").str()),
                           {C}, zeros);
      return b.transpose(b.reshape(linear(x, weight, bias), {B, T, H, D}),
                         {0, 2, 1, 3});
    };
    Value q = heads("query");
    Value k = heads("key");
    Value v = heads("value");
    Value y = b.attention(q, k, v, /*causal=*/false, mask, /*window=*/0,
                          /*scale=*/0.0, /*softcap=*/0.0, c.packed);
    y = b.reshape(b.transpose(y, {0, 2, 1, 3}), {B, T, C});
    b.setScope(name("attention.output"));
    Value outWeight = b.param(name("attention.output.dense.weight"), {C, C},
                              normal);
    Value outBias = b.param(name("attention.output.dense.bias"), {C}, zeros);
    x = layerNorm(name("attention.output.LayerNorm"),
                  b.add(x, linear(y, outWeight, outBias)));

    b.setScope(name("intermediate"));
    Value upWeight = b.param(name("intermediate.dense.weight"), {I, C}, normal);
    Value upBias = b.param(name("intermediate.dense.bias"), {I}, zeros);
    Value h = b.gelu(linear(x, upWeight, upBias), c.exactGelu);
    b.setScope(name("output"));
    Value downWeight = b.param(name("output.dense.weight"), {C, I}, normal);
    Value downBias = b.param(name("output.dense.bias"), {C}, zeros);
    x = layerNorm(name("output.LayerNorm"),
                  b.add(x, linear(h, downWeight, downBias)));
  }

  if (c.task == BERTTask::MaskedLM) {
    b.setScope("cls.predictions");
    Value weight =
        b.param("cls.predictions.transform.dense.weight", {C, C}, normal);
    Value bias = b.param("cls.predictions.transform.dense.bias", {C}, zeros);
    Value h = b.gelu(linear(x, weight, bias), c.exactGelu);
    h = layerNorm("cls.predictions.transform.LayerNorm", h);
    Value decoderBias = b.param("cls.predictions.bias", {V}, zeros);
    Value logits = b.add(b.matmul(h, words, /*transposeLhs=*/false,
                                  /*transposeRhs=*/true),
                         decoderBias);
    b.setScope("loss");
    return b.finish(b.crossEntropy(logits, targets));
  }
  b.setScope("bert.pooler");
  Value poolWeight = b.param("bert.pooler.dense.weight", {C, C}, normal);
  Value poolBias = b.param("bert.pooler.dense.bias", {C}, zeros);
  Value first = b.reshape(b.slice(x, {0, 0, 0}, {B, 1, C}), {B, C});
  Value pooled = b.tanh(linear(first, poolWeight, poolBias));
  b.setScope("classifier");
  Value classWeight =
      b.param("classifier.weight", {c.numLabels, C}, normal);
  Value classBias = b.param("classifier.bias", {c.numLabels}, zeros);
  Value logits = linear(pooled, classWeight, classBias);
  b.setScope("loss");
  return b.finish(b.crossEntropy(logits, targets));
}

} // namespace tgc
