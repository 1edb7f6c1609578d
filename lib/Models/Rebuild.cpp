//===- Rebuild.cpp - rebuilding a generated model at another shape --------===//
//
// The generators record their configuration on the model (tg.generator);
// rebuilding from it is how tgc-compile changes a model's batch size
// (--batch, --batch=auto) and compiles sequence-length buckets
// (--seq-buckets) without shape inference over arbitrary IR. The
// model must be exactly what its record builds: a hand-edited model is
// refused rather than silently replaced by the unedited one.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Models/Models.h"

#include "llvm/ADT/Twine.h"

#include <type_traits>

using namespace mlir;

namespace tgc {

/// The configuration `record` describes (its recorded batch and sequence
/// length); null with `error` set when the record is not one of the
/// generators'.
static std::optional<ModelConfig> parseRecord(DictionaryAttr record,
                                              std::string &error) {
  auto kindAttr = record.getAs<StringAttr>("model");
  if (!kindAttr) {
    error = "the tg.generator record has no 'model'";
    return std::nullopt;
  }
  StringRef kind = kindAttr.getValue();
  auto integer = [&](StringRef key, int64_t &out) {
    auto value = record.getAs<IntegerAttr>(key);
    if (!value) {
      error = ("the tg.generator record of a " + kind + " has no integer '" +
               key + "'")
                  .str();
      return false;
    }
    out = value.getInt();
    return true;
  };
  if (kind == "gpt2") {
    GPT2Config config;
    if (!integer("n_layer", config.nLayer) || !integer("n_head", config.nHead) ||
        !integer("n_embd", config.nEmbd) ||
        !integer("vocab_size", config.vocabSize) ||
        !integer("block_size", config.blockSize) ||
        !integer("seq_len", config.seqLen))
      return std::nullopt;
    if (!integer("batch", config.batch))
      return std::nullopt;
    if (auto packed = record.getAs<BoolAttr>("packed"))
      config.packed = packed.getValue();
    return ModelConfig(config);
  }
  if (kind == "bert") {
    BERTConfig config;
    auto task = record.getAs<StringAttr>("task");
    std::optional<BERTTask> parsed =
        task ? parseBERTTask(task.getValue()) : std::nullopt;
    if (!parsed) {
      error = "the tg.generator record of a bert has no valid 'task'";
      return std::nullopt;
    }
    config.task = *parsed;
    auto gelu = record.getAs<StringAttr>("gelu");
    if (!gelu || (gelu.getValue() != "exact" && gelu.getValue() != "tanh")) {
      error = "the tg.generator record of a bert has no valid 'gelu'";
      return std::nullopt;
    }
    config.exactGelu = gelu.getValue() == "exact";
    if (!integer("n_layer", config.nLayer) || !integer("n_head", config.nHead) ||
        !integer("hidden", config.hidden) ||
        !integer("intermediate", config.intermediate) ||
        !integer("vocab_size", config.vocabSize) ||
        !integer("max_positions", config.maxPositions) ||
        !integer("num_labels", config.numLabels) ||
        !integer("seq_len", config.seqLen))
      return std::nullopt;
    if (!integer("batch", config.batch))
      return std::nullopt;
    if (auto packed = record.getAs<BoolAttr>("packed"))
      config.packed = packed.getValue();
    return ModelConfig(config);
  }
  if (kind == "llama") {
    LlamaConfig config;
    auto real = [&](StringRef key, double &out) {
      auto value = record.getAs<FloatAttr>(key);
      if (!value) {
        error = ("the tg.generator record of a llama has no number '" + key +
                 "'")
                    .str();
        return false;
      }
      out = value.getValueAsDouble();
      return true;
    };
    auto flag = [&](StringRef key, bool &out) {
      auto value = record.getAs<BoolAttr>(key);
      if (!value) {
        error = ("the tg.generator record of a llama has no flag '" + key +
                 "'")
                    .str();
        return false;
      }
      out = value.getValue();
      return true;
    };
    auto type = record.getAs<StringAttr>("model_type");
    if (!type) {
      error = "the tg.generator record of a llama has no 'model_type'";
      return std::nullopt;
    }
    config.modelType = type.getValue().str();
    if (!integer("n_layer", config.nLayer) ||
        !integer("hidden", config.hidden) ||
        !integer("intermediate", config.intermediate) ||
        !integer("n_head", config.nHead) ||
        !integer("n_kv_head", config.nKVHead) ||
        !integer("head_dim", config.headDim) ||
        !integer("vocab_size", config.vocabSize) ||
        !integer("max_positions", config.maxPositions) ||
        !real("rms_eps", config.rmsEps) ||
        !real("rope_theta", config.ropeTheta) ||
        !real("rope_factor", config.ropeFactor) ||
        !real("rope_low_freq_factor", config.ropeLowFreqFactor) ||
        !real("rope_high_freq_factor", config.ropeHighFreqFactor) ||
        !integer("rope_original_max_positions",
                 config.ropeOriginalMaxPositions) ||
        !flag("tie_embeddings", config.tieEmbeddings) ||
        !flag("qkv_bias", config.qkvBias) ||
        !integer("pad_idx", config.padIdx) ||
        (record.get("sliding_window") &&
         !integer("sliding_window", config.slidingWindow)) ||
        (record.get("experts") && !integer("experts", config.experts)) ||
        (record.get("experts_per_token") &&
         !integer("experts_per_token", config.expertsPerToken)) ||
        (record.get("router_aux_loss") &&
         !real("router_aux_loss", config.routerAuxLoss)) ||
        (record.get("query_pre_attn_scalar") &&
         !real("query_pre_attn_scalar", config.queryPreAttnScalar)) ||
        (record.get("attn_softcap") &&
         !real("attn_softcap", config.attnSoftcap)) ||
        (record.get("final_softcap") &&
         !real("final_softcap", config.finalSoftcap)) ||
        !real("initializer_range", config.initializerRange) ||
        !integer("seq_len", config.seqLen))
      return std::nullopt;
    if (!integer("batch", config.batch))
      return std::nullopt;
    if (auto packed = record.getAs<BoolAttr>("packed"))
      config.packed = packed.getValue();
    return ModelConfig(config);
  }
  if (kind == "mlp") {
    auto widths = record.getAs<DenseI64ArrayAttr>("widths");
    if (!widths) {
      error = "the tg.generator record of an mlp has no 'widths'";
      return std::nullopt;
    }
    MLPConfig config;
    config.widths.assign(widths.asArrayRef().begin(),
                         widths.asArrayRef().end());
    if (!integer("batch", config.batch))
      return std::nullopt;
    return ModelConfig(config);
  }
  error = ("unknown generator '" + kind + "' in tg.generator").str();
  return std::nullopt;
}

/// Validates `config` and builds it; null with `error` set when invalid.
static OwningOpRef<ModuleOp> buildModel(MLIRContext *context,
                                        const ModelConfig &config,
                                        std::string &error) {
  return std::visit(
      [&](const auto &c) -> OwningOpRef<ModuleOp> {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, MLPConfig>) {
          error = validateMLPConfig(c);
          return error.empty() ? buildMLP(context, c) : nullptr;
        } else if constexpr (std::is_same_v<T, GPT2Config>) {
          error = validateGPT2Config(c);
          return error.empty() ? buildGPT2(context, c) : nullptr;
        } else if constexpr (std::is_same_v<T, BERTConfig>) {
          error = validateBERTConfig(c);
          return error.empty() ? buildBERT(context, c) : nullptr;
        } else {
          error = validateLlamaConfig(c);
          return error.empty() ? buildLlama(context, c) : nullptr;
        }
      },
      config);
}


static std::string printed(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().assumeVerified());
  return text;
}

std::optional<ModelConfig> generatedConfig(func::FuncOp model,
                                           std::string &error,
                                           OwningOpRef<ModuleOp> *built) {
  auto record =
      model->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr);
  if (!record) {
    error = ("@" + model.getSymName() +
             " has no tg.generator record of how it was built")
                .str();
    return std::nullopt;
  }
  std::optional<ModelConfig> config = parseRecord(record, error);
  if (!config)
    return std::nullopt;
  OwningOpRef<ModuleOp> same = buildModel(model.getContext(), *config, error);
  if (!same)
    return std::nullopt;
  auto rebuilt = *same->getOps<func::FuncOp>().begin();
  if (rebuilt.getSymName() != model.getSymName() ||
      printed(rebuilt) != printed(model)) {
    error = ("@" + model.getSymName() +
             " is not the model its tg.generator record builds (edited by "
             "hand?); using the record would lose the edits")
                .str();
    return std::nullopt;
  }
  if (built)
    *built = std::move(same);
  return config;
}

OwningOpRef<ModuleOp> rebuildWithShape(func::FuncOp model, int64_t batch,
                                       std::optional<int64_t> seqLen,
                                       std::string &error) {
  OwningOpRef<ModuleOp> same;
  std::optional<ModelConfig> config = generatedConfig(model, error, &same);
  if (!config) {
    if (!model->hasAttr(tg::TGDialect::kGeneratorAttr))
      error += "; only models from tgc-models can be rebuilt at another "
               "batch size or sequence length";
    return nullptr;
  }
  int64_t recorded = std::visit([](const auto &c) { return c.batch; }, *config);
  if (batch == recorded && !seqLen)
    return same;
  bool sequences = std::visit(
      [&](auto &c) {
        c.batch = batch;
        if constexpr (std::is_same_v<std::decay_t<decltype(c)>, MLPConfig>) {
          return false;
        } else {
          if (seqLen)
            c.seqLen = *seqLen;
          return true;
        }
      },
      *config);
  if (seqLen && !sequences) {
    error = "an mlp has no sequence length to compile buckets of";
    return nullptr;
  }
  return buildModel(model.getContext(), *config, error);
}

} // namespace tgc
