//===- TGDialect.td - the tg dialect ------------------------*- tablegen -*-===//
//
// The tg dialect represents training graphs: a model's forward pass and loss,
// and, after tg-autodiff, the whole training step (backward pass, optimizer
// update, loss scaling). Ops have value semantics on builtin ranked tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGDIALECT_TD
#define TGC_DIALECT_TG_IR_TGDIALECT_TD

include "mlir/IR/OpBase.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::tgc::tg";
  let summary = "Training graphs: forward, loss, gradients and optimizer updates";
  let description = [{
    Ops of the `tg` dialect operate on statically shaped builtin tensors.
    Compute ops accept f32, f16 and bf16: precision is chosen by a pass, not
    baked into the ops. Index operands are i32 or i64; ui8 holds the codes
    of 8-bit quantized optimizer state and i1 predicates.

    A model is a `func.func` carrying the unit attribute `tg.model`. Each of
    its arguments is either a parameter (`tg.param = "name"`, optionally
    `tg.frozen` and `tg.init = #tg.init<...>`) or an input
    (`tg.input = "name"`), and it returns the scalar loss.

    A training step (made by tg-autodiff) is a `func.func` marked
    `tg.train_step`. Its arguments are parameters, optimizer or step state
    (`tg.state = "name"`) and inputs. One result is the loss (`tg.loss`).
    Out of tg-autodiff, every other result is a parameter's gradient
    (`tg.grad = "name"`, of the parameter's type); tg-optimizer replaces
    them by updates: results carrying `tg.update = "name"`, the parameter or
    state argument each replaces (same type), which the memory plan writes
    in place. Only a step without gradient results compiles.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Names of the discardable attributes of the model convention.
    static constexpr ::llvm::StringLiteral kModelAttr = "tg.model";
    static constexpr ::llvm::StringLiteral kParamAttr = "tg.param";
    static constexpr ::llvm::StringLiteral kInputAttr = "tg.input";
    static constexpr ::llvm::StringLiteral kFrozenAttr = "tg.frozen";
    /// On a tg.model built by lib/Models (tgc-models): how to build it
    /// again, {model = "gpt2" | "mlp", <its configuration>, batch = B},
    /// so that tools can rebuild it at another batch size.
    static constexpr ::llvm::StringLiteral kGeneratorAttr = "tg.generator";
    /// On a tg.model imported from a Hugging Face directory (tgc-import
    /// --hf): the directory's config.json (a JSON object), which tgc-run
    /// --save-hf writes beside the trained parameters (whose names are the
    /// state dict's).
    static constexpr ::llvm::StringLiteral kHFConfigAttr = "tg.hf_config";
    /// On a tg.model imported from a Hugging Face directory without its
    /// config.json recorded: why (tgc-run --save-hf says it).
    static constexpr ::llvm::StringLiteral kHFConfigRefusedAttr =
        "tg.hf_config_refused";
    static constexpr ::llvm::StringLiteral kInitAttr = "tg.init";
    /// On a tg.model: what its inputs and targets are, which tells the
    /// runtime how to make batches of examples (the collator): `tokens`
    /// and next-token `targets` for a causal LM; `tokens`,
    /// `attention_mask` and masked-token `targets` for a masked LM;
    /// `tokens`, `attention_mask` and one label per example for sequence
    /// classification; `tokens` (the source), `attention_mask` and the
    /// target's tokens as `targets` for an encoder-decoder (seq2seq, whose
    /// decoder inputs the model shifts from the targets itself). Recorded
    /// in the executable.
    static constexpr ::llvm::StringLiteral kTaskAttr = "tg.task";
    static constexpr ::llvm::StringLiteral kTaskCausalLM = "causal-lm";
    static constexpr ::llvm::StringLiteral kTaskMaskedLM = "masked-lm";
    static constexpr ::llvm::StringLiteral kTaskSeqCls =
        "sequence-classification";
    static constexpr ::llvm::StringLiteral kTaskSeq2Seq = "seq2seq";
    /// On a LoRA `lora_B` parameter (tg-lora): {base = "<the adapted
    /// weight>", scale = alpha / rank, fan_in_fan_out = <the base is
    /// [in, out], GPT-2's Conv1D>}; what merging and adapter export need.
    static constexpr ::llvm::StringLiteral kLoraAttr = "tg.lora";
    /// On the codes of a frozen 4-bit weight (tg-quantize-frozen: a ui8
    /// parameter under the weight's name): {rows, cols, block_size, type =
    /// "nf4" | "fp4", absmax = "<parameter>"[, nested_absmax =
    /// "<parameter>", offset = "<parameter>"]}, the weight's layout and
    /// the names of its scales. The runtime draws, loads and exports the
    /// weight by it, wherever the products read it from (zero3 gathers its
    /// parts).
    static constexpr ::llvm::StringLiteral kQuant4Attr = "tg.quant4";
    static constexpr ::llvm::StringLiteral kTrainStepAttr = "tg.train_step";
    static constexpr ::llvm::StringLiteral kStateAttr = "tg.state";
    static constexpr ::llvm::StringLiteral kLossAttr = "tg.loss";
    static constexpr ::llvm::StringLiteral kUpdateAttr = "tg.update";
    /// On a 0-d float result of a model or training step beside its loss:
    /// a value the step reports by the string's name (tg-preference-loss's
    /// rewards and log-probabilities, logged as TRL logs them); nothing is
    /// differentiated through it.
    static constexpr ::llvm::StringLiteral kMetricAttr = "tg.metric";
    /// On a tg.model function whose loss tg-preference-loss made: the
    /// loss ("dpo", "ipo", "simpo" or "orpo"); its batches hold pairs, the
    /// chosen answers' rows first.
    static constexpr ::llvm::StringLiteral kPreferenceAttr = "tg.preference";
    /// On a frozen parameter (tg-preference-loss's frozen-copy reference,
    /// `reference.<name>`): the parameter whose value at the start of
    /// training it holds. The runtime copies it there, unless a checkpoint
    /// the run resumes from holds it; checkpoints keep it, exports do not.
    static constexpr ::llvm::StringLiteral kCopyOfAttr = "tg.copy_of";
    /// On a result of a training step before tg-optimizer: the gradient of
    /// the parameter named by the string, which tg-optimizer consumes.
    static constexpr ::llvm::StringLiteral kGradAttr = "tg.grad";
    /// The persistent tensors of the optimizer that other passes and the
    /// runtime find by name: the 1-based count of applied updates (i64
    /// scalar) and the learning rate the updates read (f32 scalar).
    static constexpr ::llvm::StringLiteral kStepCounterName = "optimizer.step";
    static constexpr ::llvm::StringLiteral kLearningRateName = "optimizer.lr";
    /// Data parallelism (tg-data-parallel). A training step run by every
    /// rank of a job carries `tg.data_parallel = {mode = "ddp" | "zero1" |
    /// "zero2" | "zero3", world_size = N[, shard_group = K]}`. A
    /// persistent argument that holds only this rank's part of a tensor
    /// (ZeRO's optimizer state, zero3's parameters) carries
    /// `tg.shard_of = array<i64: full shape>`: the argument is part
    /// `rank mod K` of the tensor flattened, zero-padded to K times the
    /// argument's elements (K = N without shard_group; with it, each group
    /// of K consecutive ranks holds every part once, and the N / K groups
    /// are replicas); checkpoints gather the parts into the full tensor.
    static constexpr ::llvm::StringLiteral kDataParallelAttr =
        "tg.data_parallel";
    static constexpr ::llvm::StringLiteral kShardOfAttr = "tg.shard_of";
    /// On a state argument of a training step (tg-offload, unit): the
    /// tensor lives in the host's pinned memory, not the device's; the
    /// updates that read and write it reach it over the bus. The memory
    /// plan places such tensors at the end of the persistent region.
    static constexpr ::llvm::StringLiteral kHostAttr = "tg.host";
    /// Gradient accumulation (tg-grad-accum). The gradient micro-step is
    /// a func.func marked `tg.grad_step` (unit): forward and backward on
    /// one micro-batch, adding into accumulators; the tg.train_step it
    /// feeds carries `tg.grad_accum = {steps = K, grad_step = @micro}` and
    /// applies the update once per K micro-batches. Its accumulators are
    /// state whose names start with kGradAccumPrefix: the f32 gradient
    /// sum of each parameter (prefix + parameter name), the loss weighted
    /// by its count of targets (kLossSumName) and that count
    /// (kTargetCountName).
    static constexpr ::llvm::StringLiteral kGradStepAttr = "tg.grad_step";
    /// Activations kept in host memory between the forward and the
    /// backward pass (tg-offload-activations): `tg.host` state whose names
    /// start with kOffloadPrefix, written by tg.offload before they are
    /// read by tg.reload in the same step, so neither initialised nor
    /// checkpointed.
    static constexpr ::llvm::StringLiteral kOffloadPrefix = "offload.";
    static constexpr ::llvm::StringLiteral kGradAccumAttr = "tg.grad_accum";
    static constexpr ::llvm::StringLiteral kGradAccumPrefix = "grad_accum.";
    static constexpr ::llvm::StringLiteral kLossSumName = "grad_accum.loss_sum";
    static constexpr ::llvm::StringLiteral kTargetCountName =
        "grad_accum.target_count";
    /// Marks the tg.fill of ones that seeds the backward pass (the loss's
    /// cotangent), which loss scaling replaces.
    static constexpr ::llvm::StringLiteral kLossSeedAttr = "tg.loss_seed";
    /// Marks an op that tg-remat inserted to recompute a forward value for
    /// the backward pass. The mark keeps CSE from merging it with the
    /// original (their attributes differ), and reports count its FLOPs.
    static constexpr ::llvm::StringLiteral kRematAttr = "tg.remat";
    /// Marks a forward op whose results tg-remat always recomputes for the
    /// backward pass, whatever its policy (tg-chunk-loss's products: one
    /// chunk's logits live at a time).
    static constexpr ::llvm::StringLiteral kRecomputeAttr = "tg.recompute";

    /// Registers the attributes of TGAttrs.td (defined in TGAttrs.cpp).
    void registerAttributes();
  }];
}

#endif // TGC_DIALECT_TG_IR_TGDIALECT_TD
