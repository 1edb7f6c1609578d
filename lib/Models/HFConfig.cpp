//===- HFConfig.cpp - model configurations from Hugging Face directories --===//
//
// Reads a model directory's config.json into the configuration of a tgc
// generator. A field tgc does not build (an activation other than SiLU,
// biases Llama puts on o_proj, a sliding window shorter than the sequence,
// a rope_scaling type without an implementation here) is an error that
// names the file and the field, never silently ignored.
//
//===----------------------------------------------------------------------===//

#include "tgc/Models/Models.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

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
  void integer(StringRef key, int64_t &field, bool required = true) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null) {
      if (required)
        fail("missing field '" + key + "'");
      return;
    }
    std::optional<int64_t> v = value->getAsInteger();
    if (!v)
      fail("field '" + key + "' must be an integer");
    else
      field = *v;
  }
  void number(StringRef key, double &field) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return;
    std::optional<double> v = value->getAsNumber();
    if (!v)
      fail("field '" + key + "' must be a number");
    else
      field = *v;
  }
  void boolean(StringRef key, bool &field) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return;
    std::optional<bool> v = value->getAsBoolean();
    if (!v)
      fail("field '" + key + "' must be true or false");
    else
      field = *v;
  }
  std::string string(StringRef key) {
    if (std::optional<StringRef> v = object.getString(key))
      return v->str();
    return "";
  }
};
} // namespace

std::optional<LlamaConfig> readLlamaHFConfig(StringRef directory,
                                             int64_t seqLen,
                                             std::string &error) {
  SmallString<256> path(directory);
  llvm::sys::path::append(path, "config.json");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = (path + ": " + buffer.getError().message()).str();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = (path + ": not valid JSON: " + toString(parsed.takeError())).str();
    return std::nullopt;
  }
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object) {
    error = (path + ": not a JSON object").str();
    return std::nullopt;
  }
  ConfigReader r{*object, path.str().str(), ""};
  LlamaConfig c;
  c.modelType = r.string("model_type");
  if (c.modelType != "llama" && c.modelType != "mistral" &&
      c.modelType != "qwen2") {
    error = r.file + ": model_type '" + c.modelType +
            "' is not one this build reads (llama, mistral or qwen2)";
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
  c.tieEmbeddings = false;
  r.boolean("tie_word_embeddings", c.tieEmbeddings);
  c.qkvBias = c.modelType == "qwen2";
  std::string act = r.string("hidden_act");
  if (!act.empty() && act != "silu")
    r.fail("hidden_act '" + act + "' is not supported (only silu)");
  bool attentionBias = false, mlpBias = false;
  r.boolean("attention_bias", attentionBias);
  r.boolean("mlp_bias", mlpBias);
  if (attentionBias)
    r.fail("attention_bias true (biases on q, k, v and o) is not supported");
  if (mlpBias)
    r.fail("mlp_bias true is not supported");
  // Sliding-window attention: only a window that covers the sequence,
  // where it changes nothing.
  int64_t window = 0;
  bool useWindow = c.modelType == "mistral";
  r.boolean("use_sliding_window", useWindow);
  r.integer("sliding_window", window, /*required=*/false);
  if (useWindow && window > 0 && window < seqLen)
    r.fail("sliding_window " + Twine(window) + " is shorter than the " +
           "sequence (" + Twine(seqLen) + "); windowed attention is not " +
           "supported yet");
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
      rs.number("factor", c.ropeFactor);
      if (type == "llama3") {
        rs.number("low_freq_factor", c.ropeLowFreqFactor);
        rs.number("high_freq_factor", c.ropeHighFreqFactor);
        rs.integer("original_max_position_embeddings",
                   c.ropeOriginalMaxPositions);
      } else if (type != "default") {
        rs.fail("rope_type '" + type + "' is not supported (llama3, default)");
      }
      if (type == "default")
        c.ropeFactor = 0.0;
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

} // namespace tgc
