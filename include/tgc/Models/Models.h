//===- Models.h - built-in model architectures ------------------*- C++ -*-===//
//
// Generators of tg models at real sizes: a multi-layer perceptron and GPT-2
// with Hugging Face's parameter names and layouts (Conv1D weights stored
// [in, out], lm_head tied to wte), so weights exchange with other tools.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_MODELS_MODELS_H
#define TGC_MODELS_MODELS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <variant>

namespace tgc {

/// A classifier: Linear layers of the given widths with ReLU between them
/// and a cross-entropy loss, with torch.nn.Linear's names (`layers.0.weight`
/// as [out, in], `layers.0.bias`) and initialisation.
struct MLPConfig {
  /// Input features, hidden widths..., classes; at least two entries.
  llvm::SmallVector<int64_t> widths = {784, 256, 10};
  int64_t batch = 32;
};

/// GPT-2 as Hugging Face's GPT2LMHeadModel (no dropout), with next-token
/// cross-entropy over a [batch, seqLen] token batch.
struct GPT2Config {
  int64_t nLayer = 12;
  int64_t nHead = 12;
  int64_t nEmbd = 768;
  int64_t vocabSize = 50257;
  int64_t blockSize = 1024;
  int64_t batch = 8;
  int64_t seqLen = 1024;
  /// Rows of packed examples: [batch, seqLen] inputs `segments` (each
  /// position's example, ascending from 1 along a row, 0 for padding; the
  /// attention stays within an example) and `positions` (the learned
  /// position of each token, restarting at 0 in each example).
  bool packed = false;
};

/// The named GPT-2 sizes: "124M", "350M", "774M", "1558M" and "tiny".
std::optional<GPT2Config> getGPT2Preset(llvm::StringRef name);

/// The Llama family as Hugging Face's LlamaForCausalLM computes it (and
/// MistralForCausalLM, Qwen2ForCausalLM: the same layout): RMSNorm, rotary
/// position embeddings, grouped-query causal attention and a SwiGLU MLP,
/// with Hugging Face's parameter names (`model.layers.{i}.self_attn.q_proj
/// .weight` as [out, in], ...), next-token cross-entropy over [batch,
/// seqLen] tokens.
struct LlamaConfig {
  /// "llama", "mistral", "qwen2", "qwen3", "phi3", "mixtral" or "gemma2":
  /// recorded, the layout is the same but for Mixtral's experts, Qwen3's
  /// QK-norm, Phi-3's fused projections and Gemma 2's norms and caps.
  std::string modelType = "llama";
  int64_t nLayer = 32;
  int64_t hidden = 4096;
  int64_t intermediate = 11008;
  int64_t nHead = 32;
  /// Key/value heads (grouped-query attention when fewer than nHead).
  int64_t nKVHead = 32;
  /// Per-head width; 0: hidden / nHead.
  int64_t headDim = 0;
  int64_t vocabSize = 32000;
  int64_t maxPositions = 4096;
  double rmsEps = 1e-6;
  double ropeTheta = 10000.0;
  /// Llama 3's rope_scaling ("rope_type": "llama3"); factor 0: none.
  double ropeFactor = 0.0;
  double ropeLowFreqFactor = 1.0;
  double ropeHighFreqFactor = 4.0;
  int64_t ropeOriginalMaxPositions = 8192;
  /// lm_head shares the token embedding (tie_word_embeddings).
  bool tieEmbeddings = false;
  /// Biases on q, k and v (Qwen2).
  bool qkvBias = false;
  /// The embedding row of pad_token_id, which gets no gradient (-1: none).
  int64_t padIdx = -1;
  /// Mistral's sliding window: each position attends to this many keys
  /// back, itself included (0: none).
  int64_t slidingWindow = 0;
  /// Mixtral's sparse MLP: `experts` SwiGLU experts of `intermediate` per
  /// layer, `expertsPerToken` of them per token (0 experts: the dense MLP).
  int64_t experts = 0;
  int64_t expertsPerToken = 2;
  /// The routers' load-balancing loss added to the cross-entropy with this
  /// coefficient (transformers' output_router_logits with
  /// router_aux_loss_coef; 0: not added).
  double routerAuxLoss = 0.0;
  /// Gemma 2 (model_type "gemma2"): RMSNorm on 1 + weight before and after
  /// attention and the MLP, the embedding scaled by sqrt(hidden), a GELU
  /// (tanh) gated MLP, queries scaled by queryPreAttnScalar^-1/2, the
  /// scores and final logits soft-capped (0: none), and the window on the
  /// even layers only.
  double queryPreAttnScalar = 0.0;
  double attnSoftcap = 0.0;
  double finalSoftcap = 0.0;
  bool gemma2() const { return modelType == "gemma2"; }
  /// Qwen3 (model_type "qwen3"): each query and key head RMS-normalized
  /// over its head_dim (q_norm, k_norm: a [head_dim] weight each) before
  /// the rotary embedding.
  bool qwen3() const { return modelType == "qwen3"; }
  /// Phi-3 (model_type "phi3"): q, k and v as one projection (qkv_proj,
  /// [(heads + 2 kv_heads) * head_dim, hidden]) and the MLP's gate and up
  /// as one (gate_up_proj, [2 intermediate, hidden], the gate first).
  bool phi3() const { return modelType == "phi3"; }
  double initializerRange = 0.02;
  int64_t batch = 8;
  int64_t seqLen = 128;
  /// Rows of packed examples, as GPT2Config's: the rotary positions
  /// restart in each example.
  bool packed = false;

  int64_t headWidth() const { return headDim ? headDim : hidden / nHead; }
};

/// The named Llama-family sizes: "tiny" (test-sized, grouped-query) and
/// "llama-3-8b", "llama-3-70b", "mistral-7b", "qwen2-7b", "qwen3-0.6b",
/// "qwen3-8b", "phi-3-mini", "mixtral-8x7b", "mixtral-tiny" (tiny with 4
/// experts, 2 per token) and "gemma-2-2b".
std::optional<LlamaConfig> getLlamaPreset(llvm::StringRef name);

/// The rotary frequencies of `config`, as Hugging Face computes them in
/// f32: 1 / theta^(2i / D), then Llama 3's scaling when it has one.
llvm::SmallVector<float> llamaInvFreq(const LlamaConfig &config);

/// The head on top of a BERT encoder.
enum class BERTTask { MaskedLM, SequenceClassification };

/// A BERT encoder (Hugging Face's BertModel, no dropout, token type 0) with a masked-LM head (BertForMaskedLM) or a sequence
/// classification head (BertForSequenceClassification), over [batch,
/// seqLen] tokens and a [batch, seqLen] attention mask (1 real, 0 padding).
struct BERTConfig {
  int64_t nLayer = 12;
  int64_t nHead = 12;
  int64_t hidden = 768;
  int64_t intermediate = 3072;
  int64_t vocabSize = 30522;
  int64_t maxPositions = 512;
  int64_t batch = 8;
  int64_t seqLen = 512;
  BERTTask task = BERTTask::MaskedLM;
  int64_t numLabels = 2;
  /// GELU's erf form (BERT's "gelu"), or the tanh approximation
  /// ("gelu_new").
  bool exactGelu = true;
  /// Rows of packed examples (masked LM): inputs `segments`, which replaces
  /// the attention mask, and `positions`, as GPT2Config's.
  bool packed = false;
};

/// The named BERT sizes: "base" (bert-base) and "tiny".
std::optional<BERTConfig> getBERTPreset(llvm::StringRef name);
/// "mlm" or "seq-cls".
std::optional<BERTTask> parseBERTTask(llvm::StringRef name);
llvm::StringRef bertTaskName(BERTTask task);

/// The configuration in a Hugging Face model directory's config.json
/// (model_type gpt2; bert, its head from `task` or else `architectures`;
/// llama, mistral or qwen2 for sequences of `seqLen`); batch and sequence
/// length are left for the caller. A field tgc does not build is an error
/// that names the file and the field.
std::optional<GPT2Config> readGPT2HFConfig(llvm::StringRef directory,
                                           std::string &error);
std::optional<BERTConfig> readBERTHFConfig(llvm::StringRef directory,
                                           std::optional<BERTTask> task,
                                           std::string &error);
std::optional<LlamaConfig> readLlamaHFConfig(llvm::StringRef directory,
                                             int64_t seqLen,
                                             std::string &error);

/// Returns an empty string when `config` is valid, otherwise the problem.
std::string validateMLPConfig(const MLPConfig &config);
std::string validateGPT2Config(const GPT2Config &config);
std::string validateBERTConfig(const BERTConfig &config);
std::string validateLlamaConfig(const LlamaConfig &config);

/// Build the model as a module holding one tg.model function; null (with
/// diagnostics emitted) when the built IR does not verify.
mlir::OwningOpRef<mlir::ModuleOp> buildMLP(mlir::MLIRContext *context,
                                           const MLPConfig &config);
mlir::OwningOpRef<mlir::ModuleOp> buildGPT2(mlir::MLIRContext *context,
                                            const GPT2Config &config);
mlir::OwningOpRef<mlir::ModuleOp> buildBERT(mlir::MLIRContext *context,
                                            const BERTConfig &config);
mlir::OwningOpRef<mlir::ModuleOp> buildLlama(mlir::MLIRContext *context,
                                             const LlamaConfig &config);

/// The configuration of one of the generators.
using ModelConfig =
    std::variant<MLPConfig, GPT2Config, BERTConfig, LlamaConfig>;

/// The configuration `model`'s tg.generator record describes, when `model`
/// is exactly what that configuration builds (and then, with `built`, the
/// module built from it). Fails (with `error` set) when `model` has no
/// record, the record is not one these generators wrote, or `model` was
/// edited after it was generated (the record no longer describes it).
std::optional<ModelConfig>
generatedConfig(mlir::func::FuncOp model, std::string &error,
                mlir::OwningOpRef<mlir::ModuleOp> *built = nullptr);

/// The config.json of a Hugging Face model directory holding `config`'s
/// model (its `architectures` the head's class: GPT2LMHeadModel,
/// BertForMaskedLM or BertForSequenceClassification, LlamaForCausalLM,
/// MistralForCausalLM, Qwen2ForCausalLM), so that transformers'
/// from_pretrained builds the same model; without `torch_dtype`, which is
/// the saved tensors'. Fails (with `error` set) when the model has no
/// Hugging Face form (an mlp; q/k/v biases on a model_type other than
/// qwen2).
std::optional<std::string> writeHFConfig(const ModelConfig &config,
                                         std::string &error);

/// Builds the model that `model`'s tg.generator record describes again,
/// at micro-batch size `batch` and, when `seqLen` is given, that sequence
/// length (a sequence model's shape bucket; its position embeddings keep
/// the model's maximum). Fails (with `error` set) when `model` has no
/// record, the record is not one these generators wrote, `model` is not
/// what its record builds (an edited model: rebuilding would drop the
/// edits), or the model has no sequence length to change.
mlir::OwningOpRef<mlir::ModuleOp>
rebuildWithShape(mlir::func::FuncOp model, int64_t batch,
                 std::optional<int64_t> seqLen, std::string &error);
inline mlir::OwningOpRef<mlir::ModuleOp>
rebuildWithBatch(mlir::func::FuncOp model, int64_t batch, std::string &error) {
  return rebuildWithShape(model, batch, std::nullopt, error);
}

} // namespace tgc

#endif // TGC_MODELS_MODELS_H
