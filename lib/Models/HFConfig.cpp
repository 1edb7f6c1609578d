//===- HFConfig.cpp - Hugging Face's config.json, read and written --------===//
//
// Reads a model directory's config.json into the configuration of a tgc
// generator, and writes the config.json of a generated model for
// `tgc-run --save-hf`. A field tgc does not build (an activation other than
// SiLU, biases Llama puts on o_proj, a sliding window shorter than the
// sequence, a rope_scaling type without an implementation here) is an error
// that names the file and the field, never silently ignored. config.json is
// read through ReadFile.h: a FIFO, a device, a file past kMaxConfigFileBytes or
// JSON nested past kMaxJSONNesting is refused by name before it is parsed.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/Models.h"
#include "tgc/Support/ReadFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace tgc {

namespace {
/// Reads the fields of one config.json, recording the first problem.
struct ConfigReader {
  const llvm::json::Object &object;
  std::string file;
  std::string error;

  bool fail(const Twine &message) {
    if (error.empty())
      error = (file + ": " + message).str();
    return false;
  }
  /// An integer field; `required` fields must be present.
  /// A field as `get` reads it (absent or null: left as it is, or an
  /// error when `required`).
  template <typename T, typename Get>
  void read(StringRef key, T &field, bool required, StringRef what, Get get) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null) {
      if (required)
        fail("missing field '" + key + "'");
      return;
    }
    if (std::optional<T> v = get(*value))
      field = *v;
    else
      fail("field '" + key + "' must be " + what);
  }
  void integer(StringRef key, int64_t &field, bool required = true) {
    read(key, field, required, "an integer",
         [](const llvm::json::Value &v) { return v.getAsInteger(); });
  }
  void number(StringRef key, double &field, bool required = false) {
    read(key, field, required, "a number",
         [](const llvm::json::Value &v) { return v.getAsNumber(); });
  }
  void boolean(StringRef key, bool &field) {
    read(key, field, false, "true or false",
         [](const llvm::json::Value &v) { return v.getAsBoolean(); });
  }
  std::string string(StringRef key) {
    if (std::optional<StringRef> v = object.getString(key))
      return v->str();
    return "";
  }
};
} // namespace

/// DIR/config.json as a JSON object; null with `error` set otherwise.
static std::optional<llvm::json::Value> readConfig(StringRef directory,
                                                   std::string &path,
                                                   std::string &error) {
  SmallString<256> file(directory);
  llvm::sys::path::append(file, "config.json");
  path = file.str().str();
  std::string text;
  error = readUserJSONFile(path, kMaxConfigFileBytes, text);
  if (!error.empty())
    return std::nullopt;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = path + ": not valid JSON: " + toString(parsed.takeError());
    return std::nullopt;
  }
  if (!parsed->getAsObject()) {
    error = path + ": not a JSON object";
    return std::nullopt;
  }
  return std::move(*parsed);
}

/// Checks that config.json's model_type is `expected` (or one of them).
static bool checkModelType(ConfigReader &r, ArrayRef<StringRef> expected) {
  std::string type = r.string("model_type");
  if (llvm::is_contained(expected, type))
    return true;
  std::string list;
  for (size_t i = 0; i < expected.size(); ++i)
    list += (i == 0 ? "" : i + 1 == expected.size() ? " or " : ", ") +
            expected[i].str();
  r.fail("model_type '" + type + "' is not " + list);
  return false;
}

std::optional<GPT2Config> readGPT2HFConfig(StringRef directory,
                                           std::string &error) {
  std::string path;
  std::optional<llvm::json::Value> json = readConfig(directory, path, error);
  if (!json)
    return std::nullopt;
  ConfigReader r{*json->getAsObject(), path, ""};
  GPT2Config c;
  if (checkModelType(r, {"gpt2"})) {
    r.integer("n_layer", c.nLayer);
    r.integer("n_head", c.nHead);
    r.integer("n_embd", c.nEmbd);
    r.integer("vocab_size", c.vocabSize);
    r.integer("n_positions", c.blockSize);
    // What tgc's GPT-2 is: the tanh GELU, LayerNorm eps 1e-5, an MLP of 4
    // n_embd, lm_head tied to wte.
    std::string act = r.string("activation_function");
    if (!act.empty() && act != "gelu_new")
      r.fail("activation_function '" + act + "' is not supported (gelu_new)");
    double eps = 1e-5;
    r.number("layer_norm_epsilon", eps);
    if (eps != 1e-5)
      r.fail("layer_norm_epsilon " + std::to_string(eps) + " is not supported (1e-05)");
    int64_t inner = 0;
    r.integer("n_inner", inner, /*required=*/false);
    if (inner != 0 && inner != 4 * c.nEmbd)
      r.fail("n_inner " + Twine(inner) + " is not supported (4 n_embd)");
    bool tied = true;
    r.boolean("tie_word_embeddings", tied);
    if (!tied)
      r.fail("tie_word_embeddings false is not supported (lm_head is wte)");
  }
  if (!r.error.empty()) {
    error = r.error;
    return std::nullopt;
  }
  c.seqLen = std::min(c.seqLen, c.blockSize);
  return c;
}

std::optional<BERTConfig> readBERTHFConfig(StringRef directory,
                                           std::optional<BERTTask> task,
                                           std::string &error) {
  std::string path;
  std::optional<llvm::json::Value> json = readConfig(directory, path, error);
  if (!json)
    return std::nullopt;
  ConfigReader r{*json->getAsObject(), path, ""};
  BERTConfig c;
  if (checkModelType(r, {"bert"})) {
    r.integer("num_hidden_layers", c.nLayer);
    r.integer("num_attention_heads", c.nHead);
    r.integer("hidden_size", c.hidden);
    r.integer("intermediate_size", c.intermediate);
    r.integer("vocab_size", c.vocabSize);
    r.integer("max_position_embeddings", c.maxPositions);
    std::string act = r.string("hidden_act");
    if (act == "gelu" || act.empty())
      c.exactGelu = true;
    else if (act == "gelu_new")
      c.exactGelu = false;
    else
      r.fail("hidden_act '" + act + "' is not supported (gelu, gelu_new)");
    double eps = 1e-12;
    r.number("layer_norm_eps", eps);
    if (eps != 1e-12)
      r.fail("layer_norm_eps " + std::to_string(eps) + " is not supported (1e-12)");
    // The head: the flag's, or the architecture's.
    std::string architecture;
    if (const llvm::json::Array *list =
            r.object.getArray("architectures"); list && !list->empty())
      if (std::optional<StringRef> first = list->front().getAsString())
        architecture = first->str();
    if (task)
      c.task = *task;
    else if (architecture == "BertForMaskedLM")
      c.task = BERTTask::MaskedLM;
    else if (architecture == "BertForSequenceClassification")
      c.task = BERTTask::SequenceClassification;
    else
      r.fail("architectures '" + architecture + "' has no head tgc builds; " +
             "name one with --task=mlm or --task=seq-cls");
    if (const llvm::json::Object *labels = r.object.getObject("id2label");
        labels && !labels->empty())
      c.numLabels = int64_t(labels->size());
  }
  if (!r.error.empty()) {
    error = r.error;
    return std::nullopt;
  }
  c.seqLen = std::min(c.seqLen, c.maxPositions);
  return c;
}

std::optional<LlamaConfig> readLlamaHFConfig(StringRef directory,
                                             int64_t seqLen,
                                             std::string &error) {
  std::string path;
  std::optional<llvm::json::Value> json = readConfig(directory, path, error);
  if (!json)
    return std::nullopt;
  const llvm::json::Object *object = json->getAsObject();
  ConfigReader r{*object, path, ""};
  LlamaConfig c;
  c.modelType = r.string("model_type");
  if (!checkModelType(r, {"llama", "mistral", "qwen2", "qwen3", "phi3",
                          "mixtral", "gemma2"})) {
    error = r.error;
    return std::nullopt;
  }
  r.integer("num_hidden_layers", c.nLayer);
  r.integer("hidden_size", c.hidden);
  r.integer("intermediate_size", c.intermediate);
  r.integer("num_attention_heads", c.nHead);
  c.nKVHead = c.nHead;
  r.integer("num_key_value_heads", c.nKVHead, /*required=*/false);
  r.integer("head_dim", c.headDim, /*required=*/false);
  if (c.headDim != 0 && c.nHead > 0 && c.headDim == c.hidden / c.nHead)
    c.headDim = 0;
  r.integer("vocab_size", c.vocabSize);
  r.integer("max_position_embeddings", c.maxPositions);
  r.number("rms_norm_eps", c.rmsEps);
  r.number("rope_theta", c.ropeTheta);
  r.number("initializer_range", c.initializerRange);
  // The embedding's padding_idx (Hugging Face's LlamaModel passes
  // pad_token_id to nn.Embedding): that row gets no gradient.
  r.integer("pad_token_id", c.padIdx, /*required=*/false);
  // Gemma 2 ties its embeddings and pads with token 0 unless it says
  // otherwise (its config's defaults).
  c.tieEmbeddings = c.modelType == "gemma2";
  if (c.modelType == "gemma2" && !object->get("pad_token_id"))
    c.padIdx = 0;
  // Phi-3's padding is token 32000 unless it says otherwise (null: none).
  if (c.modelType == "phi3" && !object->get("pad_token_id"))
    c.padIdx = 32000;
  r.boolean("tie_word_embeddings", c.tieEmbeddings);
  c.qkvBias = c.modelType == "qwen2";
  if (c.modelType == "mixtral") {
    r.integer("num_local_experts", c.experts);
    r.integer("num_experts_per_tok", c.expertsPerToken);
    bool routerLogits = false;
    double jitter = 0.0, coefficient = 0.001; // transformers' default
    r.boolean("output_router_logits", routerLogits);
    r.number("router_aux_loss_coef", coefficient);
    r.number("router_jitter_noise", jitter, /*required=*/false);
    // With output_router_logits the loss adds the routers' load-balancing
    // loss, as transformers' MixtralForCausalLM does given labels.
    if (routerLogits)
      c.routerAuxLoss = coefficient;
    if (jitter != 0.0)
      r.fail("router_jitter_noise (random noise on the router's input) is "
             "not supported; set it to 0");
  }
  if (c.modelType == "gemma2") {
    r.number("query_pre_attn_scalar", c.queryPreAttnScalar,
             /*required=*/true);
    // A soft-cap of null is none.
    for (auto [key, field] : {std::pair<const char *, double *>{
                                  "attn_logit_softcapping", &c.attnSoftcap},
                              {"final_logit_softcapping", &c.finalSoftcap}})
      if (const llvm::json::Value *cap = object->get(key);
          cap && cap->kind() != llvm::json::Value::Null)
        r.number(key, *field);
    // Gemma 2's MLP: GELU in its tanh form (hidden_activation, else the
    // older hidden_act).
    std::string act = r.string("hidden_activation");
    if (act.empty())
      act = r.string("hidden_act");
    if (!act.empty() && act != "gelu_pytorch_tanh")
      r.fail("hidden_activation '" + act +
             "' is not supported (only gelu_pytorch_tanh)");
  } else {
    std::string act = r.string("hidden_act");
    if (!act.empty() && act != "silu")
      r.fail("hidden_act '" + act + "' is not supported (only silu)");
  }
  bool attentionBias = false, mlpBias = false;
  r.boolean("attention_bias", attentionBias);
  r.boolean("mlp_bias", mlpBias);
  if (attentionBias)
    r.fail("attention_bias true (biases on q, k, v and o) is not supported");
  if (mlpBias)
    r.fail("mlp_bias true is not supported");
  // Sliding-window attention: Mistral's (every layer). Qwen2's applies to
  // the layers from max_window_layers on only; not built here, so only a
  // window that covers the sequence (where it changes nothing) is taken.
  int64_t window = 0;
  bool useWindow = c.modelType == "mistral" || c.modelType == "mixtral" ||
                   c.modelType == "gemma2" || c.modelType == "phi3";
  r.boolean("use_sliding_window", useWindow);
  r.integer("sliding_window", window, /*required=*/false);
  if (useWindow && window < 0)
    r.fail("sliding_window must be positive, found " + Twine(window));
  else if (useWindow && c.modelType != "qwen2" && c.modelType != "qwen3")
    c.slidingWindow = window;
  else if (useWindow && window > 0 && window < seqLen)
    r.fail("sliding_window " + Twine(window) + " is shorter than the " +
           "sequence (" + Twine(seqLen) + "); " + c.modelType + "'s " +
           "windowed attention is not supported");
  if (const llvm::json::Value *scaling = object->get("rope_scaling");
      scaling && scaling->kind() != llvm::json::Value::Null) {
    const llvm::json::Object *s = scaling->getAsObject();
    if (!s) {
      r.fail("rope_scaling must be an object or null");
    } else {
      ConfigReader rs{*s, "rope_scaling", ""};
      std::string type = rs.string("rope_type");
      if (type.empty())
        type = rs.string("type");
      // A positive, finite factor: a factor of 0 would build the model
      // unscaled, a negative or infinite one nonsense. Llama 3's needs all
      // four fields, as transformers does.
      auto show = [](double value) {
        char text[32];
        std::snprintf(text, sizeof(text), "%g", value);
        return std::string(text);
      };
      auto positive = [&](StringRef key, double value) {
        if (!(value > 0.0) || !std::isfinite(value))
          rs.fail(key + " must be a positive, finite number, found " +
                  show(value));
      };
      double factor = 1.0;
      rs.number("factor", factor, /*required=*/type == "llama3");
      positive("factor", factor);
      if (type == "llama3") {
        c.ropeFactor = factor;
        rs.number("low_freq_factor", c.ropeLowFreqFactor, /*required=*/true);
        rs.number("high_freq_factor", c.ropeHighFreqFactor,
                  /*required=*/true);
        rs.integer("original_max_position_embeddings",
                   c.ropeOriginalMaxPositions);
        positive("low_freq_factor", c.ropeLowFreqFactor);
        positive("high_freq_factor", c.ropeHighFreqFactor);
        if (!(c.ropeHighFreqFactor > c.ropeLowFreqFactor))
          rs.fail("high_freq_factor (" + show(c.ropeHighFreqFactor) +
                  ") must be more than low_freq_factor (" +
                  show(c.ropeLowFreqFactor) + ")");
        if (c.ropeOriginalMaxPositions <= 0)
          rs.fail("original_max_position_embeddings must be positive, "
                  "found " +
                  Twine(c.ropeOriginalMaxPositions));
      } else if (type != "default") {
        rs.fail("rope_type '" + type + "' is not supported (llama3, default)");
      }
      if (!rs.error.empty())
        r.fail(rs.error);
    }
  }
  if (!r.error.empty()) {
    error = r.error;
    return std::nullopt;
  }
  return c;
}

/// The fields every config.json has: the head's class and the model type.
static nlohmann::ordered_json header(StringRef architecture, StringRef type) {
  return nlohmann::ordered_json{
      {"architectures", nlohmann::ordered_json::array({architecture.str()})},
      {"model_type", type.str()}};
}

static nlohmann::ordered_json hfConfig(const GPT2Config &c) {
  nlohmann::ordered_json o = header("GPT2LMHeadModel", "gpt2");
  o["n_layer"] = c.nLayer;
  o["n_head"] = c.nHead;
  o["n_embd"] = c.nEmbd;
  o["vocab_size"] = c.vocabSize;
  o["n_positions"] = c.blockSize;
  o["n_ctx"] = c.blockSize;
  // What tgc's GPT-2 is (readGPT2HFConfig accepts only these).
  o["activation_function"] = "gelu_new";
  o["layer_norm_epsilon"] = 1e-5;
  o["tie_word_embeddings"] = true;
  return o;
}

static nlohmann::ordered_json hfConfig(const BERTConfig &c) {
  bool mlm = c.task == BERTTask::MaskedLM;
  nlohmann::ordered_json o = header(
      mlm ? "BertForMaskedLM" : "BertForSequenceClassification", "bert");
  o["num_hidden_layers"] = c.nLayer;
  o["num_attention_heads"] = c.nHead;
  o["hidden_size"] = c.hidden;
  o["intermediate_size"] = c.intermediate;
  o["vocab_size"] = c.vocabSize;
  o["max_position_embeddings"] = c.maxPositions;
  o["type_vocab_size"] = 2;
  o["hidden_act"] = c.exactGelu ? "gelu" : "gelu_new";
  o["layer_norm_eps"] = 1e-12;
  if (!mlm) {
    // The classes under Hugging Face's default names (a directory read by
    // --from-hf gives its count only).
    nlohmann::ordered_json id2label = nlohmann::ordered_json::object(),
                           label2id = nlohmann::ordered_json::object();
    for (int64_t i = 0; i < c.numLabels; ++i) {
      std::string label = ("LABEL_" + Twine(i)).str();
      id2label[std::to_string(i)] = label;
      label2id[label] = i;
    }
    o["id2label"] = std::move(id2label);
    o["label2id"] = std::move(label2id);
  }
  return o;
}

static std::optional<nlohmann::ordered_json> hfConfig(const LlamaConfig &c,
                                                  std::string &error) {
  StringRef type = c.modelType;
  if (c.qkvBias != (type == "qwen2")) {
    error = c.qkvBias ? ("a " + type + " with q/k/v biases has no Hugging "
                         "Face form: only qwen2 has them")
                            .str()
                      : "a qwen2 without q/k/v biases has no Hugging Face "
                        "form";
    return std::nullopt;
  }
  if (c.slidingWindow > 0 && type != "mistral" && type != "mixtral" &&
      type != "gemma2" && type != "phi3") {
    error = ("a " + type +
             " with a sliding window has no Hugging Face form "
             "here (only mistral's and mixtral's windows are written)")
                .str();
    return std::nullopt;
  }
  if (c.headDim != 0 && type == "qwen2") {
    error = "a qwen2 with a head_dim other than hidden / heads has no "
            "Hugging Face form";
    return std::nullopt;
  }
  StringRef architecture = type == "mistral"   ? "MistralForCausalLM"
                           : type == "qwen2"   ? "Qwen2ForCausalLM"
                           : type == "qwen3"   ? "Qwen3ForCausalLM"
                           : type == "phi3"    ? "Phi3ForCausalLM"
                           : type == "mixtral" ? "MixtralForCausalLM"
                           : type == "gemma2"  ? "Gemma2ForCausalLM"
                                               : "LlamaForCausalLM";
  nlohmann::ordered_json o = header(architecture, type);
  o["num_hidden_layers"] = c.nLayer;
  o["hidden_size"] = c.hidden;
  o["intermediate_size"] = c.intermediate;
  o["num_attention_heads"] = c.nHead;
  o["num_key_value_heads"] = c.nKVHead;
  if (c.headDim != 0)
    o["head_dim"] = c.headDim;
  o["vocab_size"] = c.vocabSize;
  o["max_position_embeddings"] = c.maxPositions;
  o["rms_norm_eps"] = c.rmsEps;
  o["rope_theta"] = c.ropeTheta;
  if (c.ropeFactor != 0.0)
    o["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", c.ropeFactor},
        {"low_freq_factor", c.ropeLowFreqFactor},
        {"high_freq_factor", c.ropeHighFreqFactor},
        {"original_max_position_embeddings", c.ropeOriginalMaxPositions}};
  else
    o["rope_scaling"] = nullptr;
  o["tie_word_embeddings"] = c.tieEmbeddings;
  o["hidden_act"] = type == "gemma2" ? "gelu_pytorch_tanh" : "silu";
  o["initializer_range"] = c.initializerRange;
  if (c.padIdx >= 0)
    o["pad_token_id"] = c.padIdx;
  if (type == "llama") {
    o["attention_bias"] = false;
    o["mlp_bias"] = false;
  } else if (type == "gemma2") {
    o["head_dim"] = c.headWidth();
    o["hidden_activation"] = "gelu_pytorch_tanh";
    o["query_pre_attn_scalar"] = c.queryPreAttnScalar;
    auto cap = [](double value) {
      return value > 0.0 ? nlohmann::ordered_json(value)
                         : nlohmann::ordered_json(nullptr);
    };
    o["attn_logit_softcapping"] = cap(c.attnSoftcap);
    o["final_logit_softcapping"] = cap(c.finalSoftcap);
    o["sliding_window"] =
        c.slidingWindow > 0 ? c.slidingWindow : c.maxPositions;
    o["attention_bias"] = false;
  } else if (type == "mistral" || type == "mixtral") {
    if (c.slidingWindow > 0)
      o["sliding_window"] = c.slidingWindow;
    else
      o["sliding_window"] = nullptr;
    if (type == "mixtral") {
      o["num_local_experts"] = c.experts;
      o["num_experts_per_tok"] = c.expertsPerToken;
      o["output_router_logits"] = c.routerAuxLoss > 0.0;
      if (c.routerAuxLoss > 0.0)
        o["router_aux_loss_coef"] = c.routerAuxLoss;
      o["router_jitter_noise"] = 0.0;
    }
  } else if (type == "phi3") {
    o["sliding_window"] = c.slidingWindow > 0
                              ? nlohmann::ordered_json(c.slidingWindow)
                              : nlohmann::ordered_json(nullptr);
    o["original_max_position_embeddings"] = c.maxPositions;
    if (c.padIdx < 0) // transformers' default would be 32000
      o["pad_token_id"] = nullptr;
  } else if (type == "qwen3") {
    // Qwen3's head_dim is its own (not hidden / heads in every size).
    o["head_dim"] = c.headWidth();
    o["attention_bias"] = false;
    o["attention_dropout"] = 0.0;
    o["use_sliding_window"] = false;
    o["sliding_window"] = nullptr;
    o["max_window_layers"] = c.nLayer;
  } else {
    o["use_sliding_window"] = false;
  }
  return o;
}

std::optional<std::string> writeHFConfig(const ModelConfig &config,
                                         std::string &error) {
  std::optional<nlohmann::ordered_json> object;
  if (const auto *gpt2 = std::get_if<GPT2Config>(&config))
    object = hfConfig(*gpt2);
  else if (const auto *bert = std::get_if<BERTConfig>(&config))
    object = hfConfig(*bert);
  else if (const auto *llama = std::get_if<LlamaConfig>(&config))
    object = hfConfig(*llama, error);
  else
    error = "an mlp has no Hugging Face form";
  if (!object)
    return std::nullopt;
  // nlohmann writes a double with its decimal point ("factor": 8.0):
  // transformers checks that rope_scaling's factors are floats.
  return object->dump(2) + "\n";
}

} // namespace tgc
