//===- GPT2.cpp - GPT-2 as a tg model -------------------------------------===//
//
// GPT-2 as Hugging Face's GPT2LMHeadModel computes it (without dropout):
// token and position embeddings, n_layer pre-norm blocks of causal
// multi-head attention and a GELU MLP, a final layer norm, and logits from
// the token embedding (lm_head tied to wte), with next-token cross-entropy.
// Parameter names, shapes ([in, out] Conv1D weights) and initialisation are
// Hugging Face's, so a 124M model has exactly 124,439,808 parameters and its
// weights load from the safetensors files users already have.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/ModelBuilder.h"
#include "tgc/Models/Models.h"
#include "TensorSizes.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"

#include <cmath>

using namespace mlir;

namespace tgc {

std::optional<GPT2Config> getGPT2Preset(StringRef name) {
  auto preset = [](int64_t layers, int64_t heads, int64_t embd) {
    GPT2Config config;
    config.nLayer = layers;
    config.nHead = heads;
    config.nEmbd = embd;
    return config;
  };
  if (name == "124M")
    return preset(12, 12, 768);
  if (name == "350M")
    return preset(24, 16, 1024);
  if (name == "774M")
    return preset(36, 20, 1280);
  if (name == "1558M")
    return preset(48, 25, 1600);
  if (name == "tiny") {
    GPT2Config config = preset(2, 4, 64);
    config.vocabSize = 256;
    config.blockSize = 64;
    config.batch = 8;
    config.seqLen = 64;
    return config;
  }
  return std::nullopt;
}

std::string validateGPT2Config(const GPT2Config &c) {
  auto positive = [](int64_t v) { return v > 0; };
  if (!positive(c.nLayer) || !positive(c.nHead) || !positive(c.nEmbd) ||
      !positive(c.vocabSize) || !positive(c.blockSize) || !positive(c.batch) ||
      !positive(c.seqLen))
    return "every GPT-2 size must be positive";
  if (c.nEmbd % c.nHead != 0)
    return ("n_embd (" + Twine(c.nEmbd) + ") must be divisible by n_head (" +
            Twine(c.nHead) + ")")
        .str();
  if (c.seqLen > c.blockSize)
    return ("sequence length (" + Twine(c.seqLen) +
            ") must not exceed the block size (" + Twine(c.blockSize) + ")")
        .str();
  std::string largest = checkLargestTensors({
      {"the token embedding [vocab, n_embd]", {c.vocabSize, c.nEmbd}},
      {"the position embedding [block, n_embd]", {c.blockSize, c.nEmbd}},
      {"the MLP weight [n_embd, 4 n_embd]", {c.nEmbd, 4, c.nEmbd}},
      {"the logits [batch, seq, vocab]", {c.batch, c.seqLen, c.vocabSize}},
      {"the attention scores [batch, heads, seq, seq]",
       {c.batch, c.nHead, c.seqLen, c.seqLen}},
      {"the MLP activations [batch, seq, 4 n_embd]",
       {c.batch, c.seqLen, 4, c.nEmbd}}});
  if (!largest.empty())
    return largest;
  if (c.nLayer > 100000)
    return "n_layer must be at most 100000";
  return "";
}

OwningOpRef<ModuleOp> buildGPT2(MLIRContext *context, const GPT2Config &c) {
  ModelBuilder b(context, "gpt2", Float32Type::get(context));
  Builder attrs(context);
  b.setGenerator({attrs.getNamedAttr("model", attrs.getStringAttr("gpt2")),
                  attrs.getNamedAttr("n_layer", attrs.getI64IntegerAttr(c.nLayer)),
                  attrs.getNamedAttr("n_head", attrs.getI64IntegerAttr(c.nHead)),
                  attrs.getNamedAttr("n_embd", attrs.getI64IntegerAttr(c.nEmbd)),
                  attrs.getNamedAttr("vocab_size",
                                     attrs.getI64IntegerAttr(c.vocabSize)),
                  attrs.getNamedAttr("block_size",
                                     attrs.getI64IntegerAttr(c.blockSize)),
                  attrs.getNamedAttr("seq_len", attrs.getI64IntegerAttr(c.seqLen)),
                  attrs.getNamedAttr("batch", attrs.getI64IntegerAttr(c.batch))});
  if (c.packed)
    b.recordGenerator(attrs.getNamedAttr("packed", attrs.getBoolAttr(true)));
  b.setTask(tg::TGDialect::kTaskCausalLM);
  const int64_t B = c.batch, T = c.seqLen, C = c.nEmbd, H = c.nHead,
                D = c.nEmbd / c.nHead, V = c.vocabSize;
  auto normal = [&](double std) {
    return tg::InitAttr::get(context, tg::InitKind::Normal, 0.0, std);
  };
  auto zeros = tg::InitAttr::get(context, tg::InitKind::Zeros);
  auto ones = tg::InitAttr::get(context, tg::InitKind::Ones);
  // GPT-2 scales the init of the residual projections by 1/sqrt(2 n_layer).
  double residualStd = 0.02 / std::sqrt(2.0 * c.nLayer);

  Value tokens = b.input("tokens", {B, T}, IntegerType::get(context, 64));
  Value targets = b.input("targets", {B, T}, IntegerType::get(context, 64));
  Value segments, positions;
  if (c.packed) {
    segments = b.input("segments", {B, T}, IntegerType::get(context, 64));
    positions = b.input("positions", {B, T}, IntegerType::get(context, 64));
  }

  b.setScope("transformer.wte");
  Value wte = b.param("transformer.wte.weight", {V, C}, normal(0.02));
  Value x = b.embedding(wte, tokens);
  b.setScope("transformer.wpe");
  Value wpe = b.param("transformer.wpe.weight", {c.blockSize, C}, normal(0.02));
  x = b.add(x, c.packed ? b.embedding(wpe, positions)
                        : b.slice(wpe, {0, 0}, {T, C}));

  for (int64_t layer = 0; layer < c.nLayer; ++layer) {
    std::string prefix = ("transformer.h." + Twine(layer) + ".").str();
    auto name = [&](StringRef suffix) { return prefix + suffix.str(); };

    // Parameters are declared one statement at a time so that the argument
    // order is Hugging Face's state-dict order on every compiler.
    b.setScope(name("ln_1"));
    Value ln1Weight = b.param(name("ln_1.weight"), {C}, ones);
    Value ln1Bias = b.param(name("ln_1.bias"), {C}, zeros);
    Value h = b.layerNorm(x, ln1Weight, ln1Bias, 1e-5);

    b.setScope(name("attn"));
    Value attnWeight =
        b.param(name("attn.c_attn.weight"), {C, 3 * C}, normal(0.02));
    Value attnBias = b.param(name("attn.c_attn.bias"), {3 * C}, zeros);
    Value qkv = b.add(b.matmul(h, attnWeight), attnBias);
    SmallVector<Value> parts = b.split(qkv, /*axis=*/2, /*pieces=*/3);
    auto heads = [&](Value v) {
      return b.transpose(b.reshape(v, {B, T, H, D}), {0, 2, 1, 3});
    };
    Value q = heads(parts[0]);
    Value k = heads(parts[1]);
    Value v = heads(parts[2]);
    Value y = b.attention(q, k, v, /*causal=*/true, segments, /*window=*/0,
                          /*scale=*/0.0, /*softcap=*/0.0, c.packed);
    y = b.reshape(b.transpose(y, {0, 2, 1, 3}), {B, T, C});
    Value projWeight =
        b.param(name("attn.c_proj.weight"), {C, C}, normal(residualStd));
    Value projBias = b.param(name("attn.c_proj.bias"), {C}, zeros);
    x = b.add(x, b.add(b.matmul(y, projWeight), projBias));

    b.setScope(name("ln_2"));
    Value ln2Weight = b.param(name("ln_2.weight"), {C}, ones);
    Value ln2Bias = b.param(name("ln_2.bias"), {C}, zeros);
    h = b.layerNorm(x, ln2Weight, ln2Bias, 1e-5);

    b.setScope(name("mlp"));
    Value fcWeight = b.param(name("mlp.c_fc.weight"), {C, 4 * C}, normal(0.02));
    Value fcBias = b.param(name("mlp.c_fc.bias"), {4 * C}, zeros);
    h = b.gelu(b.add(b.matmul(h, fcWeight), fcBias));
    Value outWeight =
        b.param(name("mlp.c_proj.weight"), {4 * C, C}, normal(residualStd));
    Value outBias = b.param(name("mlp.c_proj.bias"), {C}, zeros);
    x = b.add(x, b.add(b.matmul(h, outWeight), outBias));
  }

  b.setScope("transformer.ln_f");
  Value lnfWeight = b.param("transformer.ln_f.weight", {C}, ones);
  Value lnfBias = b.param("transformer.ln_f.bias", {C}, zeros);
  x = b.layerNorm(x, lnfWeight, lnfBias, 1e-5);
  b.setScope("lm_head");
  Value logits = b.matmul(x, wte, /*transposeLhs=*/false,
                          /*transposeRhs=*/true);
  b.setScope("loss");
  return b.finish(b.crossEntropy(logits, targets));
}

} // namespace tgc
