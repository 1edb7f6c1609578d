//===- Llama.cpp - the Llama family as a tg model -------------------------===//
//
// Llama (2 and 3), Mistral, Qwen2 and Mixtral as Hugging Face's
// *ForCausalLM compute them (eager attention, no dropout): token embedding,
// n_layer pre-norm blocks of RMSNorm, rotary-embedded grouped-query causal
// attention and a SwiGLU MLP (down(silu(gate(x)) * up(x)); Mixtral's a
// mixture of such experts, ModelBuilder::mixtureOfExperts), a final RMSNorm
// and lm_head
// (or the tied embedding), with next-token cross-entropy. Parameter names
// and layouts (nn.Linear weights [out, in]) are Hugging Face's, so
// save_pretrained's safetensors load as they are.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/ModelBuilder.h"
#include "tgc/Models/Models.h"
#include "TensorSizes.h"

#include "llvm/ADT/Twine.h"

#include <cmath>

using namespace mlir;

namespace tgc {

std::optional<LlamaConfig> getLlamaPreset(StringRef name) {
  LlamaConfig c;
  if (name == "tiny") {
    c.nLayer = 2;
    c.hidden = 64;
    c.intermediate = 128;
    c.nHead = 4;
    c.nKVHead = 2;
    c.vocabSize = 256;
    c.maxPositions = 128;
    c.batch = 8;
    c.seqLen = 64;
    return c;
  }
  if (name == "llama-3-8b") {
    c.hidden = 4096;
    c.intermediate = 14336;
    c.nKVHead = 8;
    c.vocabSize = 128256;
    c.maxPositions = 8192;
    c.rmsEps = 1e-5;
    c.ropeTheta = 500000.0;
    return c;
  }
  if (name == "llama-3-70b") {
    // Llama-3-8B's vocabulary, context and RoPE, wider and deeper.
    c = *getLlamaPreset("llama-3-8b");
    c.hidden = 8192;
    c.intermediate = 28672;
    c.nLayer = 80;
    c.nHead = 64;
    return c;
  }
  if (name == "mistral-7b") {
    c.modelType = "mistral";
    c.intermediate = 14336;
    c.nKVHead = 8;
    c.maxPositions = 32768;
    c.rmsEps = 1e-5;
    c.ropeTheta = 1000000.0;
    return c;
  }
  if (name == "mixtral-8x7b") {
    c.modelType = "mixtral";
    c.intermediate = 14336;
    c.nKVHead = 8;
    c.maxPositions = 32768;
    c.rmsEps = 1e-5;
    c.ropeTheta = 1000000.0;
    c.experts = 8;
    c.expertsPerToken = 2;
    return c;
  }
  if (name == "mixtral-tiny") {
    c = *getLlamaPreset("tiny");
    c.modelType = "mixtral";
    c.intermediate = 96;
    c.experts = 4;
    c.expertsPerToken = 2;
    return c;
  }
  if (name == "gemma-2-2b") {
    c.modelType = "gemma2";
    c.nLayer = 26;
    c.hidden = 2304;
    c.intermediate = 9216;
    c.nHead = 8;
    c.nKVHead = 4;
    c.headDim = 256;
    c.vocabSize = 256000;
    c.maxPositions = 8192;
    c.tieEmbeddings = true;
    c.padIdx = 0;
    c.slidingWindow = 4096;
    c.queryPreAttnScalar = 256;
    c.attnSoftcap = 50.0;
    c.finalSoftcap = 30.0;
    return c;
  }
  if (name == "qwen3-0.6b" || name == "qwen3-8b") {
    bool small = name == "qwen3-0.6b";
    c.modelType = "qwen3";
    c.nLayer = small ? 28 : 36;
    c.hidden = small ? 1024 : 4096;
    c.intermediate = small ? 3072 : 12288;
    c.nHead = small ? 16 : 32;
    c.nKVHead = 8;
    c.headDim = small ? 128 : 0; // 0.6B's heads are wider than hidden / 16
    c.vocabSize = 151936;
    c.maxPositions = 40960;
    c.ropeTheta = 1000000.0;
    c.tieEmbeddings = small;
    return c;
  }
  if (name == "phi-3-mini") { // Phi-3-mini-4k-instruct
    c.modelType = "phi3";
    c.hidden = 3072;
    c.intermediate = 8192;
    c.vocabSize = 32064;
    c.rmsEps = 1e-5;
    c.padIdx = 32000;
    c.slidingWindow = 2047;
    return c;
  }
  if (name == "qwen2-7b") {
    c.modelType = "qwen2";
    c.hidden = 3584;
    c.intermediate = 18944;
    c.nLayer = 28;
    c.nHead = 28;
    c.nKVHead = 4;
    c.vocabSize = 152064;
    c.maxPositions = 32768;
    c.ropeTheta = 1000000.0;
    c.qkvBias = true;
    return c;
  }
  return std::nullopt;
}

SmallVector<float> llamaInvFreq(const LlamaConfig &c) {
  // As transformers computes it: every operation in f32.
  int64_t dim = c.headWidth();
  SmallVector<float> invFreq;
  for (int64_t i = 0; i < dim; i += 2) {
    float exponent = float(i) / float(dim);
    invFreq.push_back(1.0f / std::pow(float(c.ropeTheta), exponent));
  }
  if (c.ropeFactor == 0.0)
    return invFreq;
  // Llama 3: long wavelengths slowed by `factor`, short ones kept, those
  // between interpolated.
  const float pi = 3.14159265358979323846f;
  float factor = float(c.ropeFactor), low = float(c.ropeLowFreqFactor),
        high = float(c.ropeHighFreqFactor),
        old = float(c.ropeOriginalMaxPositions);
  float lowWavelen = old / low, highWavelen = old / high;
  for (float &f : invFreq) {
    float wavelen = 2.0f * pi / f;
    float scaled = wavelen > lowWavelen ? f / factor : f;
    if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
      float smooth = (old / wavelen - low) / (high - low);
      scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
    f = scaled;
  }
  return invFreq;
}

std::string validateLlamaConfig(const LlamaConfig &c) {
  for (int64_t size : {c.nLayer, c.hidden, c.intermediate, c.nHead, c.nKVHead,
                       c.vocabSize, c.maxPositions, c.batch, c.seqLen})
    if (size <= 0)
      return "every Llama size must be positive";
  if (c.headDim < 0)
    return "head_dim must be positive";
  if (!c.headDim && c.hidden % c.nHead != 0)
    return ("hidden_size (" + Twine(c.hidden) +
            ") must be divisible by num_attention_heads (" + Twine(c.nHead) +
            ")")
        .str();
  if (c.nHead % c.nKVHead != 0)
    return ("num_attention_heads (" + Twine(c.nHead) +
            ") must be a multiple of num_key_value_heads (" +
            Twine(c.nKVHead) + ")")
        .str();
  if (c.headWidth() % 2 != 0)
    return ("the head width (" + Twine(c.headWidth()) +
            ") must be even for rotary embeddings")
        .str();
  if (c.seqLen > c.maxPositions)
    return ("sequence length (" + Twine(c.seqLen) +
            ") must not exceed max_position_embeddings (" +
            Twine(c.maxPositions) + ")")
        .str();
  if (!(c.rmsEps >= 0.0) || !std::isfinite(c.rmsEps))
    return "rms_norm_eps must be non-negative and finite";
  if (!(c.ropeTheta > 0.0) || !std::isfinite(c.ropeTheta))
    return "rope_theta must be positive and finite";
  if (c.ropeFactor != 0.0 &&
      (!(c.ropeFactor > 0.0) || !(c.ropeLowFreqFactor > 0.0) ||
       !(c.ropeHighFreqFactor > c.ropeLowFreqFactor) ||
       c.ropeOriginalMaxPositions <= 0))
    return "rope_scaling needs factor > 0, 0 < low_freq_factor < "
           "high_freq_factor and original_max_position_embeddings > 0";
  if (!(c.initializerRange > 0.0) || !std::isfinite(c.initializerRange))
    return "initializer_range must be positive and finite";
  int64_t D = c.headWidth();
  std::string largest = checkLargestTensors({
      {"the token embedding [vocab, hidden]", {c.vocabSize, c.hidden}},
      {"the MLP weight [intermediate, hidden]", {c.intermediate, c.hidden}},
      {"the attention weight [heads * head_dim, hidden]",
       {c.nHead, D, c.hidden}},
      {"the logits [batch, seq, vocab]", {c.batch, c.seqLen, c.vocabSize}},
      {"the attention scores [batch, heads, seq, seq]",
       {c.batch, c.nHead, c.seqLen, c.seqLen}},
      {"the MLP activations [batch, seq, intermediate]",
       {c.batch, c.seqLen, c.intermediate}}});
  if (!largest.empty())
    return largest;
  if (c.slidingWindow < 0)
    return "sliding_window must be positive (or 0: none)";
  if (c.padIdx < -1 || c.padIdx >= c.vocabSize)
    return ("pad_token_id (" + Twine(c.padIdx) + ") must be a token of the "
            "vocabulary, below " + Twine(c.vocabSize))
        .str();
  if (c.nLayer > 100000)
    return "num_hidden_layers must be at most 100000";
  if (c.gemma2() &&
      !(c.queryPreAttnScalar > 0.0 && std::isfinite(c.queryPreAttnScalar)))
    return "query_pre_attn_scalar must be positive and finite";
  if (!(c.attnSoftcap >= 0.0) || !std::isfinite(c.attnSoftcap) ||
      !(c.finalSoftcap >= 0.0) || !std::isfinite(c.finalSoftcap))
    return "the soft-caps must be positive and finite (or none)";
  if (!c.gemma2() && (c.attnSoftcap > 0.0 || c.finalSoftcap > 0.0 ||
                      c.queryPreAttnScalar > 0.0))
    return "soft-caps and query_pre_attn_scalar are Gemma 2's";
  if ((c.experts > 0) != (c.modelType == "mixtral"))
    return "experts (num_local_experts) are Mixtral's: a mixtral needs them, "
           "other models have none";
  if (!(c.routerAuxLoss >= 0.0) || !std::isfinite(c.routerAuxLoss) ||
      (c.routerAuxLoss > 0.0 && c.experts == 0))
    return "router_aux_loss_coef must be finite and not negative, and is a "
           "mixture of experts' (output_router_logits)";
  if (c.experts < 0 || c.experts > 4096 ||
      (c.experts > 0 &&
       (c.expertsPerToken < 1 || c.expertsPerToken > c.experts)))
    return ("num_experts_per_tok (" + Twine(c.expertsPerToken) +
            ") must be in [1, num_local_experts (" + Twine(c.experts) +
            ")], and num_local_experts at most 4096")
        .str();
  return "";
}

OwningOpRef<ModuleOp> buildLlama(MLIRContext *context, const LlamaConfig &c) {
  ModelBuilder b(context, c.modelType, Float32Type::get(context));
  Builder attrs(context);
  auto i64 = [&](StringRef name, int64_t v) {
    return attrs.getNamedAttr(name, attrs.getI64IntegerAttr(v));
  };
  auto f64 = [&](StringRef name, double v) {
    return attrs.getNamedAttr(name, attrs.getF64FloatAttr(v));
  };
  auto flag = [&](StringRef name, bool v) {
    return attrs.getNamedAttr(name, attrs.getBoolAttr(v));
  };
  b.setGenerator(
      {attrs.getNamedAttr("model", attrs.getStringAttr("llama")),
       attrs.getNamedAttr("model_type", attrs.getStringAttr(c.modelType)),
       i64("n_layer", c.nLayer),
       i64("hidden", c.hidden),
       i64("intermediate", c.intermediate),
       i64("n_head", c.nHead),
       i64("n_kv_head", c.nKVHead),
       i64("head_dim", c.headDim),
       i64("vocab_size", c.vocabSize),
       i64("max_positions", c.maxPositions),
       f64("rms_eps", c.rmsEps),
       f64("rope_theta", c.ropeTheta),
       f64("rope_factor", c.ropeFactor),
       f64("rope_low_freq_factor", c.ropeLowFreqFactor),
       f64("rope_high_freq_factor", c.ropeHighFreqFactor),
       i64("rope_original_max_positions", c.ropeOriginalMaxPositions),
       flag("tie_embeddings", c.tieEmbeddings),
       flag("qkv_bias", c.qkvBias),
       i64("pad_idx", c.padIdx),
       i64("sliding_window", c.slidingWindow),
       i64("experts", c.experts),
       i64("experts_per_token", c.expertsPerToken),
       f64("router_aux_loss", c.routerAuxLoss),
       f64("query_pre_attn_scalar", c.queryPreAttnScalar),
       f64("attn_softcap", c.attnSoftcap),
       f64("final_softcap", c.finalSoftcap),
       f64("initializer_range", c.initializerRange),
       i64("seq_len", c.seqLen),
       i64("batch", c.batch)});
  if (c.packed)
    b.recordGenerator(flag("packed", true));
  b.setTask(tg::TGDialect::kTaskCausalLM);
  const int64_t B = c.batch, T = c.seqLen, C = c.hidden, H = c.nHead,
                KV = c.nKVHead, D = c.headWidth(), I = c.intermediate,
                V = c.vocabSize;
  auto normal = tg::InitAttr::get(context, tg::InitKind::Normal, 0.0,
                                  c.initializerRange);
  auto zeros = tg::InitAttr::get(context, tg::InitKind::Zeros);
  // Gemma 2's norms scale by 1 + weight, their weights initialised to 0.
  const bool gemma = c.gemma2();
  auto ones = gemma ? zeros : tg::InitAttr::get(context, tg::InitKind::Ones);
  auto norm = [&](Value input, Value weight) {
    return b.rmsNorm(input, gemma ? b.add(weight, b.scalar(1.0)) : weight,
                     c.rmsEps);
  };
  SmallVector<float> invFreq = llamaInvFreq(c);

  Value tokens = b.input("tokens", {B, T}, IntegerType::get(context, 64));
  Value targets = b.input("targets", {B, T}, IntegerType::get(context, 64));
  Value segments, positions;
  if (c.packed) {
    segments = b.input("segments", {B, T}, IntegerType::get(context, 64));
    positions = b.input("positions", {B, T}, IntegerType::get(context, 64));
  }

  // The rotary frequencies, one constant that every layer's rope reads.
  b.setScope("model.rotary_emb");
  Value frequencies = b.constant(invFreq);
  b.setScope("model.embed_tokens");
  Value embed = b.param("model.embed_tokens.weight", {V, C}, normal);
  // The routers' load-balancing terms of every layer, summed.
  ModelBuilder::RouterBalance balance;
  Value x = b.embedding(embed, tokens,
                        c.padIdx >= 0 ? std::optional<int64_t>(c.padIdx)
                                      : std::nullopt);
  if (gemma) // scaled by sqrt(hidden), rounded to the element type
    x = b.mul(x, b.scalar(std::sqrt(double(C))));

  for (int64_t layer = 0; layer < c.nLayer; ++layer) {
    std::string prefix = ("model.layers." + Twine(layer) + ".").str();
    auto name = [&](StringRef suffix) { return prefix + suffix.str(); };
    // Parameters in Hugging Face's state-dict order (the module's
    // registration order), one statement at a time.
    struct Linear {
      Value weight, bias;
    };
    auto linearParams = [&](StringRef proj, int64_t out, int64_t in,
                            bool bias) {
      Linear l;
      l.weight = b.param(name(proj.str() + ".weight"), {out, in}, normal);
      if (bias)
        l.bias = b.param(name(proj.str() + ".bias"), {out}, zeros);
      return l;
    };
    Linear qProj, kProj, vProj, oProj, qkvProj, gateUpProj;
    if (c.phi3()) { // Phi3Attention registers o_proj first
      oProj = linearParams("self_attn.o_proj", C, H * D, false);
      qkvProj = linearParams("self_attn.qkv_proj", (H + 2 * KV) * D, C, false);
    } else {
      qProj = linearParams("self_attn.q_proj", H * D, C, c.qkvBias);
      kProj = linearParams("self_attn.k_proj", KV * D, C, c.qkvBias);
      vProj = linearParams("self_attn.v_proj", KV * D, C, c.qkvBias);
      oProj = linearParams("self_attn.o_proj", C, H * D, false);
    }
    Value qNorm, kNorm;
    if (c.qwen3()) {
      qNorm = b.param(name("self_attn.q_norm.weight"), {D}, ones);
      kNorm = b.param(name("self_attn.k_norm.weight"), {D}, ones);
    }
    // The MLP: dense, or Mixtral's router and experts (w1 the gate, w3 up,
    // w2 down).
    Linear gateProj, upProj, downProj, router;
    SmallVector<Value> expertGate, expertUp, expertDown;
    if (c.phi3()) {
      gateUpProj = linearParams("mlp.gate_up_proj", 2 * I, C, false);
      downProj = linearParams("mlp.down_proj", C, I, false);
    } else if (c.experts == 0) {
      gateProj = linearParams("mlp.gate_proj", I, C, false);
      upProj = linearParams("mlp.up_proj", I, C, false);
      downProj = linearParams("mlp.down_proj", C, I, false);
    } else {
      router = linearParams("block_sparse_moe.gate", c.experts, C, false);
      for (int64_t e = 0; e < c.experts; ++e) {
        std::string expert =
            ("block_sparse_moe.experts." + Twine(e) + ".").str();
        expertGate.push_back(linearParams(expert + "w1", I, C, false).weight);
        expertDown.push_back(linearParams(expert + "w2", C, I, false).weight);
        expertUp.push_back(linearParams(expert + "w3", I, C, false).weight);
      }
    }
    Value inputNorm = b.param(name("input_layernorm.weight"), {C}, ones);
    Value postNorm =
        b.param(name("post_attention_layernorm.weight"), {C}, ones);
    Value preFeedforwardNorm, postFeedforwardNorm;
    if (gemma) {
      preFeedforwardNorm =
          b.param(name("pre_feedforward_layernorm.weight"), {C}, ones);
      postFeedforwardNorm =
          b.param(name("post_feedforward_layernorm.weight"), {C}, ones);
    }
    // nn.Linear: y = x W^T (+ b), W [out, in].
    auto linear = [&](Value input, const Linear &l) {
      Value y = b.matmul(input, l.weight, /*transposeLhs=*/false,
                         /*transposeRhs=*/true);
      return l.bias ? b.add(y, l.bias) : y;
    };

    b.setScope(name("input_layernorm"));
    Value h = norm(x, inputNorm);
    b.setScope(name("self_attn"));
    // Qwen3 normalizes each query and key head before the rotation.
    auto heads = [&](Value v, int64_t count, Value headNorm = {}) {
      Value split = b.reshape(v, {B, T, count, D});
      if (headNorm)
        split = b.rmsNorm(split, headNorm, c.rmsEps);
      return b.transpose(split, {0, 2, 1, 3});
    };
    Value qOut, kOut, vOut;
    if (c.phi3()) { // one product, its columns q, then k, then v
      Value qkv = linear(h, qkvProj);
      qOut = b.slice(qkv, {0, 0, 0}, {B, T, H * D});
      kOut = b.slice(qkv, {0, 0, H * D}, {B, T, KV * D});
      vOut = b.slice(qkv, {0, 0, (H + KV) * D}, {B, T, KV * D});
    } else {
      qOut = linear(h, qProj);
      kOut = linear(h, kProj);
      vOut = linear(h, vProj);
    }
    Value q = b.rope(heads(qOut, H, qNorm), frequencies, positions);
    Value k = b.rope(heads(kOut, KV, kNorm), frequencies, positions);
    Value v = heads(vOut, KV);
    // Grouped-query attention: KV heads, each shared by H / KV query heads,
    // in tg.attention itself (no repeated keys or values).
    // A window that covers the sequence changes nothing.
    // Gemma 2 windows its even layers only.
    int64_t window = c.slidingWindow < T ? c.slidingWindow : 0;
    if (gemma && layer % 2 != 0)
      window = 0;
    double scale = gemma ? 1.0 / std::sqrt(c.queryPreAttnScalar) : 0.0;
    Value y = b.attention(q, k, v, /*causal=*/true, segments, window, scale,
                          c.attnSoftcap, c.packed);
    y = b.reshape(b.transpose(y, {0, 2, 1, 3}), {B, T, H * D});
    if (gemma) {
      // Normed after attention and around the MLP: x + post(attn(in(x))),
      // then x + post_ff(mlp(pre_ff(x))).
      y = linear(y, oProj);
      b.setScope(name("post_attention_layernorm"));
      x = b.add(x, norm(y, postNorm));
      b.setScope(name("pre_feedforward_layernorm"));
      h = norm(x, preFeedforwardNorm);
      b.setScope(name("mlp"));
      Value gate = b.gelu(linear(h, gateProj));
      y = linear(b.mul(gate, linear(h, upProj)), downProj);
      b.setScope(name("post_feedforward_layernorm"));
      x = b.add(x, norm(y, postFeedforwardNorm));
      continue;
    }
    x = b.add(x, linear(y, oProj));

    b.setScope(name("post_attention_layernorm"));
    h = b.rmsNorm(x, postNorm, c.rmsEps);
    if (c.phi3()) {
      b.setScope(name("mlp"));
      SmallVector<Value> gateUp = b.split(linear(h, gateUpProj), 2, 2);
      x = b.add(x, linear(b.swiglu(gateUp[0], gateUp[1]), downProj));
    } else if (c.experts == 0) {
      b.setScope(name("mlp"));
      Value gate = linear(h, gateProj);
      x = b.add(x, linear(b.swiglu(gate, linear(h, upProj)), downProj));
    } else {
      b.setScope(name("block_sparse_moe"));
      ModelBuilder::RouterBalance layerBalance;
      Value y = b.mixtureOfExperts(
          b.reshape(h, {B * T, C}), router.weight, expertGate, expertUp,
          expertDown, c.expertsPerToken, /*normalize=*/true,
          c.routerAuxLoss > 0.0 ? &layerBalance : nullptr);
      if (c.routerAuxLoss > 0.0)
        for (auto [sum, term] :
             {std::pair{&balance.tokensPerExpert, layerBalance.tokensPerExpert},
              std::pair{&balance.probPerExpert, layerBalance.probPerExpert}})
          *sum = *sum ? b.add(*sum, term) : term;
      x = b.add(x, b.reshape(y, {B, T, C}));
    }
  }

  Value finalNorm = b.param("model.norm.weight", {C}, ones);
  Value head =
      c.tieEmbeddings ? embed : b.param("lm_head.weight", {V, C}, normal);
  b.setScope("model.norm");
  x = norm(x, finalNorm);
  b.setScope("lm_head");
  Value logits = b.matmul(x, head, /*transposeLhs=*/false,
                          /*transposeRhs=*/true);
  b.setScope("loss");
  Value loss = b.crossEntropy(logits, targets, c.finalSoftcap);
  if (c.routerAuxLoss > 0.0) {
    // transformers' load_balancing_loss_func over the layers' routers
    // together (every layer's tokens concatenated): E * sum_e f_e * P_e,
    // f and P the means over all of them (the layers' means averaged), then
    // scaled by router_aux_loss_coef.
    double layers = double(c.nLayer);
    Value product = b.mul(balance.tokensPerExpert, balance.probPerExpert);
    Value aux = b.sumAll(product);
    loss = b.add(loss, b.mul(aux, b.scalar(c.routerAuxLoss * double(c.experts) /
                                           (layers * layers))));
  }
  return b.finish(loss);
}

} // namespace tgc
