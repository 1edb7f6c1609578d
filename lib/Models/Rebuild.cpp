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

using namespace mlir;

namespace tgc {

/// Builds the model `record` describes at `batch` (and `seqLen`, when
/// given); null with `error` set when the record is not one of the
/// generators' or the model has no sequence length.
static OwningOpRef<ModuleOp> build(MLIRContext *context, DictionaryAttr record,
                                   int64_t batch, std::optional<int64_t> seqLen,
                                   std::string &error) {
  StringRef kind = record.getAs<StringAttr>("model").getValue();
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
      return nullptr;
    config.batch = batch;
    if (seqLen)
      config.seqLen = *seqLen;
    error = validateGPT2Config(config);
    return error.empty() ? buildGPT2(context, config) : nullptr;
  }
  if (kind == "bert") {
    BERTConfig config;
    auto task = record.getAs<StringAttr>("task");
    std::optional<BERTTask> parsed =
        task ? parseBERTTask(task.getValue()) : std::nullopt;
    if (!parsed) {
      error = "the tg.generator record of a bert has no valid 'task'";
      return nullptr;
    }
    config.task = *parsed;
    auto gelu = record.getAs<StringAttr>("gelu");
    if (!gelu || (gelu.getValue() != "exact" && gelu.getValue() != "tanh")) {
      error = "the tg.generator record of a bert has no valid 'gelu'";
      return nullptr;
    }
    config.exactGelu = gelu.getValue() == "exact";
    if (!integer("n_layer", config.nLayer) || !integer("n_head", config.nHead) ||
        !integer("hidden", config.hidden) ||
        !integer("intermediate", config.intermediate) ||
        !integer("vocab_size", config.vocabSize) ||
        !integer("max_positions", config.maxPositions) ||
        !integer("num_labels", config.numLabels) ||
        !integer("seq_len", config.seqLen))
      return nullptr;
    config.batch = batch;
    if (seqLen)
      config.seqLen = *seqLen;
    error = validateBERTConfig(config);
    return error.empty() ? buildBERT(context, config) : nullptr;
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
      return nullptr;
    }
    config.modelType = type.getValue().str();
    if (!integer("n_layer", config.nLayer) || !integer("hidden", config.hidden) ||
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
        !real("initializer_range", config.initializerRange) ||
        !integer("seq_len", config.seqLen))
      return nullptr;
    config.batch = batch;
    if (seqLen)
      config.seqLen = *seqLen;
    error = validateLlamaConfig(config);
    return error.empty() ? buildLlama(context, config) : nullptr;
  }
  if (kind == "mlp") {
    if (seqLen) {
      error = "an mlp has no sequence length to compile buckets of";
      return nullptr;
    }
    auto widths = record.getAs<DenseI64ArrayAttr>("widths");
    if (!widths) {
      error = "the tg.generator record of an mlp has no 'widths'";
      return nullptr;
    }
    MLPConfig config;
    config.widths.assign(widths.asArrayRef().begin(),
                         widths.asArrayRef().end());
    config.batch = batch;
    error = validateMLPConfig(config);
    return error.empty() ? buildMLP(context, config) : nullptr;
  }
  error = ("unknown generator '" + kind + "' in tg.generator").str();
  return nullptr;
}

static std::string printed(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().assumeVerified());
  return text;
}

OwningOpRef<ModuleOp> rebuildWithShape(func::FuncOp model, int64_t batch,
                                       std::optional<int64_t> seqLen,
                                       std::string &error) {
  auto record =
      model->getAttrOfType<DictionaryAttr>(tg::TGDialect::kGeneratorAttr);
  if (!record) {
    error = ("@" + model.getSymName() +
             " has no tg.generator record of how it was built; only models "
             "from tgc-models can be rebuilt at another batch size or "
             "sequence length")
                .str();
    return nullptr;
  }
  int64_t recorded = record.getAs<IntegerAttr>("batch").getInt();
  OwningOpRef<ModuleOp> same =
      build(model.getContext(), record, recorded, std::nullopt, error);
  if (!same)
    return nullptr;
  auto rebuilt = *same->getOps<func::FuncOp>().begin();
  if (rebuilt.getSymName() != model.getSymName() ||
      printed(rebuilt) != printed(model)) {
    error = ("@" + model.getSymName() +
             " is not the model its tg.generator record builds (edited by "
             "hand?); rebuilding it at another shape would lose the edits")
                .str();
    return nullptr;
  }
  if (batch == recorded && !seqLen)
    return same;
  return build(model.getContext(), record, batch, seqLen, error);
}

} // namespace tgc
