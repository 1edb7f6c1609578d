//===- Passes.td - passes on tg training graphs -------------*- tablegen -*-===//
//
// Every tg pass is declared here and usable alone in tgc-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGModelStats : Pass<"tg-model-stats", "mlir::ModuleOp"> {
  let summary = "Reports parameter counts, op counts and cost of tg models";
  let description = [{
    For every `func.func` marked `tg.model`, prints to stderr its parameter
    count (all, trainable and frozen, with the bytes they occupy), its inputs,
    the number of ops of each kind, and the FLOPs and bytes moved of one
    execution as the ops' CostOpInterface gives them. With `per-op`, also
    prints the cost of every op in IR order. The IR is not changed.
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also print the FLOPs and bytes of every op">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGEstimate : Pass<"tg-estimate", "mlir::ModuleOp"> {
  let summary = "Prints a roofline estimate of every function's GPU time";
  let description = [{
    For every `func.func` of tensors, prints to stderr a roofline estimate
    of one execution on a GPU (tgc/Analysis/Roofline.h): each op takes the
    longer of its compute time (matrix FLOPs at the matrix peak of their
    type, other FLOPs at the vector peak) and its memory time (bytes read,
    written and moved through scratch, over the bandwidth), all from the
    ops' CostOpInterface. The report groups ops by kind, most time first,
    with the function's total and its model FLOPs utilisation. `device` is
    `h100`, `a100` or a JSON device file; with `per-op`, every op's FLOPs,
    bytes and time are printed in IR order. The IR is not changed.
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"h100\"",
           "h100, a100, or a JSON file of peak rates">,
    Option<"allowTF32", "allow-tf32", "bool", /*default=*/"false",
           "f32 matrix products run on the tf32 matrix units">,
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also print every op's FLOPs, bytes and estimated time">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGMasterWeights : Pass<"tg-master-weights", "mlir::ModuleOp"> {
  let summary = "Stores trainable parameters in bf16, with no f32 copy";
  let description = [{
    On every `tg.model` function (after tg-amp, before tg-autodiff), with
    `dtype=bf16`: every trainable f32 parameter becomes a bf16 argument.
    Where the model read its bf16 working copy (tg-amp's cast) it reads the
    parameter itself; a `tg.embedding` reads the bf16 table, widening the
    rows it looks up (no f32 copy of the table; its gradient still sums in
    f32 and is rounded once); where it read f32 otherwise (layer norms,
    biases of f32 ops) it reads one exact widening cast. tg-autodiff then
    returns bf16 gradients (the widening cast's gradient narrows them), and tg-optimizer keeps f32
    moments and rounds each AdamW update to bf16 stochastically (its
    `stochastic-rounding` option), as torchao's bf16 AdamW does: the
    parameters take 2 bytes instead of 4 plus a 2-byte working copy, and
    their gradients 2 instead of 4. Frozen parameters are left to
    tg-freeze's `frozen-dtype`. `dtype=f32` changes nothing.
  }];
  let options = [
    Option<"dtype", "dtype", "::tgc::tg::MasterWeights",
           /*default=*/"::tgc::tg::MasterWeights::BF16",
           "How trainable parameters are stored: f32 or bf16">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGPreferenceLoss : Pass<"tg-preference-loss", "mlir::ModuleOp"> {
  let summary = "Replaces a causal LM's mean cross-entropy by a preference "
                "loss over pairs of answers (DPO, IPO, SimPO, ORPO)";
  let description = [{
    On every `tg.model` function of a causal language model (after tg-lora,
    tg-freeze, tg-amp; before tg-autodiff), whose batch holds pairs of
    answers to the same prompts (the first half of the rows the chosen
    answers, the second half the rejected ones, the targets -100 but on
    each answer's tokens): the model's `tg.cross_entropy` becomes one per
    row, whose mean times its count of targets is the row's summed answer
    log-probability `pi` (the mean itself is the averaged `pi~`), and the
    loss becomes, over the P pairs of chosen c and rejected r answers:

      dpo:   z = (pi_c - pi_r) - (ref_c - ref_r),
             mean(-(1-e) log sigmoid(beta z) - e log sigmoid(-beta z))
      ipo:   mean((z~ - 1/(2 beta))^2), z~ from averaged log-probabilities
      simpo: mean(-log sigmoid(beta (pi~_c - pi~_r) - gamma))
      orpo:  NLL(chosen) - beta mean(log sigmoid(log_odds)),
             log_odds = (pi~_c - pi~_r) - (log(1 - exp pi~_c) -
                                           log(1 - exp pi~_r))

    (Rafailov et al. 2023; Azar et al. 2023; Meng et al. 2024; Hong et al.
    2024). DPO's and IPO's reference log-probabilities `ref` are those of
    the model as training starts: with LoRA adapters, the same model with
    them off (the forward pass is cloned once without the adapters'
    products, over the same frozen, maybe quantized, base weights, so the
    reference adds no weights and no gradients); each trainable parameter
    that is not an adapter is read by the reference as a new frozen
    parameter `reference.<name>` marked `tg.copy_of` it, which the runtime
    fills with the parameter's starting value (a frozen copy). The loss's metrics are returned after it (`tg.metric`), as
    TRL logs them: rewards/chosen, rewards/rejected, rewards/accuracies,
    rewards/margins, logps/chosen, logps/rejected (ORPO adds nll_loss,
    log_odds_ratio and log_odds_chosen).
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"none\"",
           "The preference loss: none, dpo, ipo, simpo or orpo">,
    Option<"beta", "beta", "double", /*default=*/"0.0",
           "The loss's beta (0: its default, 0.1 for dpo, ipo and orpo, "
           "2.0 for simpo)">,
    Option<"gamma", "gamma", "double", /*default=*/"0.5",
           "SimPO's target margin gamma">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "DPO's label smoothing e (conservative DPO), in [0, 0.5)">,
    Option<"recomputeLogits", "recompute-logits", "bool", /*default=*/"false",
           "Mark each row's classifier product tg.recompute, so that one "
           "row's logits live at a time (as tg-chunk-loss)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGChunkLoss : Pass<"tg-chunk-loss", "mlir::ModuleOp"> {
  let summary = "Splits the classifier and its cross-entropy into chunks of "
                "rows";
  let description = [{
    On every `tg.model` function (after tg-amp, before tg-autodiff), each
    `tg.cross_entropy` of a `tg.matmul` by a matrix (the classifier: hidden
    states [..., C] by the vocabulary's weights) becomes `chunks` products
    and cross-entropies over consecutive pieces of the rows, so that the
    [rows, vocabulary] logits never exist whole (Liger's fused linear
    cross-entropy, torchtune's chunked loss). Each chunk's mean is weighted
    by its count of targets (`tg.target_count`) and the loss is their sum
    over the total count: the mean over all targets, as before, up to the
    order of the sums. The chunks' products are marked `tg.recompute`, so
    tg-remat computes each again just before its gradient instead of
    keeping every chunk's logits for the backward pass.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", /*default=*/"8",
           "Pieces of the rows (1: leave the loss whole)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFuse : Pass<"tg-fuse", "mlir::ModuleOp"> {
  let summary = "Fuses matmul + bias (+ GELU) into tg.linear";
  let description = [{
    In every `tg.model` function (after tg-amp, before tg-autodiff), rewrites
    `tg.matmul` of an input `[B..., M, K]` by a weight `[K, N]` (no
    transposes) whose result, possibly widened by a `tg.cast` (mixed
    precision), only feeds a `tg.add` of a bias `[N]`, into one `tg.linear`;
    when the sum only feeds a `tg.gelu`, the GELU joins it and the op also
    returns the pre-activation for the gradient. The CUDA backend runs a
    tg.linear as one cuBLASLt GEMM with the bias (and GELU) epilogue, so the
    product is not written, read back and written again; tg-autodiff
    differentiates it through its own rule (gelu_grad on the pre-activation,
    the bias's row sum, the two products).
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGAttentionLayout : Pass<"tg-attention-layout", "mlir::ModuleOp"> {
  let summary = "Attention reads and writes its heads where the "
                "projections put them (the bshd layout)";
  let description = [{
    Sets `bshd` on every `tg.attention` whose query, key and value are
    `tg.transpose`s (0, 2, 1, 3) of `[B, T, H, D]` tensors: the attention
    reads those tensors directly, and the readers of its result that
    transpose it back to `[B, T, H, D]` read the bshd result instead (any
    other reader gets one transpose of it). A `tg.rope` between such a
    transpose and the attention (rotary queries and keys), and the
    `tg.cast`s around it, move before the transpose: a bshd rope of the
    `[B, T, H, D]` tensor. Transposes
    move elements without arithmetic and the rope rotates each row by its
    position either way, so the step computes the same bits, with four
    copying kernels fewer a layer forward; run before tg-autodiff, the
    gradient's `tg.attention_grad` inherits the layout and the backward
    pass's four transposes are never built.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFoldCasts : Pass<"tg-fold-casts", "mlir::ModuleOp"> {
  let summary = "Casts fold into the ops that read or write 16-bit values";
  let description = [{
    Ops that compute in f32 may read an f16 or bf16 operand or write an
    f16 or bf16 result themselves (tgc/Support/Precision.h), so the
    `tg.cast` kernels that mixed precision leaves between them fold away:
    - a widening cast (f16/bf16 to f32) into its reader: an optimizer
      update's gradient, an operand of a binary float op whose other
      operand is f32 (the residual add after a 16-bit linear layer), a
      norm's residual addend beside an f32 input, and the incoming
      gradient of `tg.layer_norm_grad` and `tg.rms_norm_grad`;
    - narrowing casts (f32 to f16/bf16) of a `tg.layer_norm` or
      `tg.rms_norm` result into the norm, when they are all its readers
      and agree on the type;
    - narrowing casts of a `tg.layer_norm_grad`'s or `tg.rms_norm_grad`'s
      f32 input gradient into its `rounded_input_grad`, a 16-bit copy the
      op stores beside the f32 gradient (which the residual stream's
      gradient goes on reading);
    - a widening cast into a `tg.rope` whose result only casts back to
      the same 16-bit type read: the rope rotates the 16-bit heads,
      widening on load and rounding once on store as the casts did.
    Widening is exact and a norm (or norm gradient) rounds its f32 result
    once to nearest even, as the cast did, so the step computes the same
    bits; each folded
    cast's kernel and its copy of the tensor (written and read) are gone.
    A cast that keeps other readers stays. Run on the finished step (after
    data parallelism, whose collectives then sit between a cast and its
    reader and keep it, and after tg-fuse-residuals, whose fused norm
    gradients compute the whole residual gradient the casts read).
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFuseResiduals : Pass<"tg-fuse-residuals", "mlir::ModuleOp"> {
  let summary = "Residual adds join the norms and norm gradients beside them";
  let description = [{
    Rewrites `tg.add` of two tensors of one shape whose sum a
    `tg.layer_norm` (or `tg.rms_norm`) normalizes (the residual stream
    entering a pre-norm block) into the norm with the add's second operand
    as its `addend`: its kernel writes the sum and normalizes it as stored,
    so the stream and the norm's gradient read the same sum and the step
    computes the same bits without the add's kernel and the norm's second
    pass over the sum.

    Rewrites `tg.add` of a `tg.layer_norm_grad`'s (or `tg.rms_norm_grad`'s)
    input gradient, which only the add reads, and another tensor of its
    type (the gradient a residual connection brings to the norm's input)
    into the norm gradient with that tensor as its `addend`: its kernel
    adds it to the input gradient it computes, rounded to its type first,
    as the add did, so the step computes the same bits without the add's
    kernel and its passes over three tensors. Run on the finished step.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGKeepAttentionLse : Pass<"tg-keep-attention-lse", "mlir::ModuleOp"> {
  let summary = "Attention keeps its row log-sum-exp for its gradient";
  let description = [{
    Each `tg.attention` that a `tg.attention_grad` differentiates (the same
    operands, mask and attributes, its result as the gradient's output),
    and that the CUDA backend runs fused (tgc/Support/FusedAttention.h),
    also returns its query rows' log-sum-exp (`lse`, f32, a few hundred KiB
    a layer), and the gradient reads it instead of running the forward
    kernel again over Q and K to recompute it. The statistic is computed
    the same way either way, so the step computes the same bits. Run on
    the finished step.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGPackQkv : Pass<"tg-pack-qkv", "mlir::ModuleOp"> {
  let summary = "Attention reads a fused QKV projection's output in place";
  let description = [{
    Where a `tg.split` along the last axis takes a fused QKV projection's
    [B, T, (Hq + 2 Hkv) D] output apart into the query, key and value that
    bshd attentions (and their gradients) read as [B, T, H, D] heads, the
    attentions read the output itself as [B, T, Hq + 2 Hkv, D] (`packed`),
    and each gradient writes the three gradients side by side into one
    result, which replaces the `tg.concat` that joined them: no split and
    no concat, the same bits. Only attentions the CUDA backend runs fused
    take part (they address the packed heads in place), and only where
    every reader of the pieces does. Run on the finished step.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFuseLoss : Pass<"tg-fuse-loss", "mlir::ModuleOp"> {
  let summary = "The loss and its gradient in one pass over the logits";
  let description = [{
    A `tg.cross_entropy_grad` that differentiates a `tg.cross_entropy` (the
    same logits, targets and ignore_index), when nothing else reads the
    logits, joins it: the loss takes the gradient's seed as `grad` and also
    returns the gradient (`logits_grad`, which may be written over the
    logits), so the [rows, vocabulary] logits are read once fewer. Scalar
    ops that compute the seed (the loss scale, a micro-batch's weight) move
    before the loss; a seed computed from anything else leaves the pair
    alone. The same bits as before. Run on the finished step.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFuseBiasGrads : Pass<"tg-fuse-bias-grads", "mlir::ModuleOp"> {
  let summary = "Bias gradients and GELU's gradient in the GEMMs' epilogues";
  let description = [{
    A linear layer's bias gradient is the sum over its rows of the
    output's gradient, which the weight gradient's GEMM reads anyway: a
    `tg.sum_to` of an operand of a `tg.matmul {transpose_lhs}` of rank-2
    operands (directly or through the reshape that flattens its leading
    dimensions) joins the GEMM as a `tg.matmul_bias_grad`. A `tg.gelu_grad`
    (tanh) of a `tg.matmul`'s product that nothing else reads becomes a
    `tg.matmul_gelu_grad`, the product kept in f32 until GELU's gradient
    (one rounding instead of two), and the `tg.sum_to` of its result that
    gives the bias gradient of the layer before comes out of the same GEMM.
    cuBLASLt runs each as one GEMM with the BGRADA/BGRADB or DGELU_BGRAD
    epilogue. The same bits in f32 on the CPU; in 16 bits GELU's gradient
    reads the unrounded product. Run on the finished step.
  }];
  let options = [
    Option<"printSummary", "print-summary", "bool", "false",
           "Print how many sums and GELU gradients joined their GEMMs">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGGroupCasts : Pass<"tg-group-casts", "mlir::ModuleOp"> {
  let summary = "The casts of a step's parameters become one tg.multi_cast";
  let description = [{
    A mixed-precision step casts each parameter to 16 bits where the
    forward pass first reads it: one kernel launch a parameter. The forward
    pass's casts of function arguments (those before the op marked
    `tg.loss_seed`; all of an evaluation step's) whose results the backward
    pass reads again (the 16-bit weights) become one `tg.multi_cast` at
    the first one's place, 32 tensors a kernel launch,
    each converted exactly as before. Their lifetimes already span the
    forward pass, so the plan's peak does not grow. A cast whose value dies
    earlier joins only when small (a bias: at most 64 KiB, 16 MiB in all);
    a large one (recomputed for the backward pass by tg-remat) stays.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGGroupUpdates : Pass<"tg-group-updates", "mlir::ModuleOp"> {
  let summary = "Adjacent tg.adamw_update ops become one "
                "tg.multi_adamw_update";
  let description = [{
    Each run of adjacent `tg.adamw_update` ops that share the learning
    rate, the step, the `apply` predicate and the hyper-parameters, and do
    not round stochastically, becomes one `tg.multi_adamw_update` at the
    run's place: the same arithmetic per element, bit for bit, in a kernel
    launch per 32 tensors instead of one per parameter. Only adjacent
    updates are grouped, so no operand lives longer than the schedule
    said (an update run inside the backward pass, --optimizer-in-backward,
    stays where it is).
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGOverlapCollectives : Pass<"tg-overlap-collectives", "mlir::ModuleOp"> {
  let summary = "A collective's readers placed after the next collective";
  let description = [{
    A collective over several ranks (`tg.all_reduce`, `tg.reduce_scatter`,
    `tg.all_gather`) runs on the link while the compute goes on; the ops
    that read its result wait for it. Placed right after it (as the
    optimizer step in the backward pass places a bucket's updates right
    after its reduce-scatter) they make the compute wait for the link at
    once. This pass moves, for each collective but the last, the ops
    between it and the next collective that depend on it to just after
    that next collective, in their order: by then the collective has run
    while the compute produced what the next one sends (one collective of
    lookahead, as FSDP and DeepSpeed overlap a bucket's reduction with the
    next bucket's backward computation). Nothing the next collective reads
    is moved (that would delay it). The ops are pure: the step computes
    the same values; the memory plan follows the new order.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGStreamApply : Pass<"tg-stream-apply", "mlir::ModuleOp"> {
  let summary = "Gradient accumulation's apply step one gradient at a time";
  let description = [{
    tg-grad-accum's apply step turns each f32 accumulator into its
    gradient (a division by the count, then loss scaling's unscale, a
    cast, clipping's scale: elementwise ops with scalar operands), and the
    global reductions over the gradients (the clipping norm, the
    finiteness check) read every gradient before any update may run: as
    written, every gradient is a whole f32 copy living at once (Llama-3-8B:
    29.9 GiB of arena beside the accumulators). This pass gives each
    update its own copy of its gradient's chain, computed from the
    accumulator right before the update, and splits each reduction into
    one per tensor, right after the tensor's chain (the norm: the square
    root of the sum of the tensors' squared norms, as PyTorch's
    clip_grad_norm_ computes it; the check: the least of the tensors'),
    each chain made contiguous. Each gradient is then computed twice, and
    at most one lives at a time. Steps that are not an apply step, and
    gradients that do not come from an argument through such a chain
    (ddp's and zero1's all-reduced buckets), are left as they are.
  }];
  let options = [
    Option<"printSummary", "print-summary", "bool", /*default=*/"false",
           "Print the updates that read their own gradient copy">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGShareGathers : Pass<"tg-share-gathers", "mlir::ModuleOp"> {
  let summary = "zero3 with remat: one gather per parameter in the backward "
                "pass";
  let description = [{
    Under zero3, a block that tg-remat recomputes in the backward pass
    gathers its parameters again (the forward pass's gathers are
    recomputable), and the backward pass gathers them once more for the
    block's gradients: the same parts sent twice. From the backward pass's
    start on, a `tg.all_gather` equal to an earlier one (the same group of
    ranks; operands that are the same arguments through the same casts,
    concatenations and reshapes, pass marks aside) is removed and its
    readers read the earlier one's result, as FSDP gathers a parameter
    once for a block's recomputation and gradient. The gathered copy lives
    from the first reader to the last; the memory plan follows. Gathers of
    the forward pass are never shared with the backward pass's.
  }];
  let options = [
    Option<"printSummary", "print-summary", "bool", /*default=*/"false",
           "Print how many gathers were shared and the bytes saved">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRaiseAttention : Pass<"tg-raise-attention", "mlir::ModuleOp"> {
  let summary = "Turns attention written as matmuls, a mask and a softmax "
                "into tg.attention";
  let description = [{
    Finds `softmax(mask(scale * Q K^T)) V` over `[B, H, T, D]` heads (on
    the heads or on `[B*H, T, D]` reshapes of them, K transposed by
    `transpose_rhs` or a `tg.transpose`, the scale a multiplication or
    division by a scalar constant) and replaces it by one `tg.attention`:
    a constant mask that is causal becomes `causal` (and a sliding window
    `window`), one that hides nothing disappears, and a mask computed from
    an integer `[B, Tk]` padding mask (BERT's `(1 - mask) * lowest`, or a
    `tg.where` on it) becomes `key_mask`; keys and values repeated for
    grouped-query attention are used unrepeated. A chain with another
    user of an intermediate value, or with a mask of any other form, is
    left alone. This is how attention that tgc-import traces from a
    model's eager code gets the fused kernels and memory plan of
    tgc-models' own.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRaiseRmsNorm : Pass<"tg-raise-rms-norm", "mlir::ModuleOp"> {
  let summary = "Turns RMSNorm written as elementwise ops into tg.rms_norm";
  let description = [{
    Finds `weight * (x * rsqrt(reduce_mean(x * x, last axis, kept) + eps))`
    (products in either order; the weight any tensor of x's last dimension,
    Gemma's `1 + weight` included) and replaces it by one `tg.rms_norm`
    with that epsilon: what tgc-import gets from Hugging Face's RMSNorm.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRaiseGelu : Pass<"tg-raise-gelu", "mlir::ModuleOp"> {
  let summary = "Turns GELU's tanh form written as elementwise ops into "
                "tg.gelu";
  let description = [{
    Finds `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x)))`
    (operands in either order, constants within f32 rounding) and replaces
    it by one `tg.gelu` (its tanh approximation): what tgc-import gets from
    GPT-2's `gelu_new`.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRaiseSwiglu : Pass<"tg-raise-swiglu", "mlir::ModuleOp"> {
  let summary = "Turns silu(gate) * up into tg.swiglu";
  let description = [{
    Finds `tg.mul` of a `tg.silu` result (either operand, the silu read by
    nothing else) and a tensor of the same type, and replaces the two by
    one `tg.swiglu`, whose value is theirs bit for bit: what tgc-import
    gets from Llama's, Mistral's and Qwen's MLP
    (`down_proj(act_fn(gate_proj(x)) * up_proj(x))`). The backward pass
    then keeps the gate and up projections where it kept silu(gate) too,
    and runs one kernel each way where it ran two and three.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRaiseLogitSoftcap : Pass<"tg-raise-logit-softcap", "mlir::ModuleOp"> {
  let summary = "Turns a soft-cap of the logits written as elementwise ops "
                "into tg.cross_entropy's softcap";
  let description = [{
    Finds `tg.cross_entropy` of `c * tanh(logits / c)` (through reshapes,
    the division also as a product by `1 / c`, `c` a scalar constant) and
    gives the cross-entropy the logits themselves and `softcap = c`:
    Gemma 2's `final_logit_softcapping`, which would otherwise keep three
    tensors of the logits' size (and stop tg-chunk-loss from chunking the
    classifier). A chain whose intermediate values have other users is
    left.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGFreeze : Pass<"tg-freeze", "mlir::ModuleOp"> {
  let summary = "Marks parameters frozen by glob patterns on their names";
  let description = [{
    For every `func.func` marked `tg.model` (before tg-autodiff), marks
    `tg.frozen` the parameters whose `tg.param` name matches a `freeze`
    pattern, and, when `train-only` is given, every parameter that matches
    none of its patterns. Patterns are globs on the Hugging Face names
    (`*`, `?`, `[0-5]`, `{a,b}`), e.g. `transformer.wte.*,
    transformer.h.[0-5].*`; lists are comma separated. A pattern that
    matches no parameter, a parameter both frozen and listed to train, and
    freezing every parameter are errors.

    With `frozen-dtype=bf16|f16`, frozen f32 parameters (never updated) are
    stored in 16 bits: the argument becomes 16-bit and one `tg.cast` widens
    it where the model reads it (tg-amp folds the cast away where it wants
    16 bits anyway; tg-remat sinks it to its first reader).

    Freezing is what tg-autodiff prunes by: a frozen parameter gets no
    gradient, no optimizer state and no update, and no backward op is built
    for values that no trainable parameter reaches (freezing the embeddings
    and the first k blocks stops the backward pass at block k), so the
    activations only that work would read are not kept either.
  }];
  let options = [
    ListOption<"freeze", "freeze", "std::string",
               "Parameters to freeze (globs on their names)">,
    ListOption<"trainOnly", "train-only", "std::string",
               "Train only the parameters matching these globs; freeze the "
               "rest">,
    Option<"frozenDtype", "frozen-dtype", "::tgc::tg::Half",
           /*default=*/"::tgc::tg::Half::None",
           "Store frozen f32 parameters in 16 bits: none, bf16 or f16">,
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print how many parameters and elements are frozen to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGQuantizeFrozen : Pass<"tg-quantize-frozen", "mlir::ModuleOp"> {
  let summary = "Stores frozen matmul weights in 4 bits (QLoRA's NF4)";
  let description = [{
    For every `func.func` marked `tg.model` (after tg-lora and tg-freeze,
    before tg-amp and tg-autodiff): each frozen 2-D parameter read only as
    the right operand of `tg.matmul`s (directly, or through the `tg.cast`
    that tg-freeze's `frozen-dtype` adds) is stored as bitsandbytes stores
    a QLoRA base weight, and each of those matmuls becomes a
    `tg.matmul_4bit` that dequantizes it inside the GEMM. The parameter
    `<name>` becomes `<name>` (ui8 codes, two a byte), `<name>.absmax` and,
    with `double-quant` (the default, as in QLoRA), `<name>.nested_absmax`
    and `<name>.nested_offset`: bitsandbytes' names, so a checkpoint
    transformers saved from a 4-bit model loads by name, and a 16-bit one
    is quantized as it loads (the runtime quantizes `<name>` with
    bitsandbytes' rules; a parameter drawn from its initializer is drawn in
    f32 and quantized the same way). The codebooks are `tg.constant`s.

    `weights` (globs on parameter names) chooses the weights; each pattern
    must match a parameter, and a matched parameter that is trained, or
    read other than by a matmul, is an error. Without it, every eligible
    frozen weight is quantized except the output head (a module named
    `lm_head`, or a product whose result is, through reshapes and a
    bias's add, the logits of a `tg.cross_entropy`), which transformers'
    bitsandbytes quantizer also
    leaves in 16 bits; it is an error when none is eligible.
  }];
  let options = [
    Option<"type", "type", "::tgc::tg::FrozenQuant",
           /*default=*/"::tgc::tg::FrozenQuant::NF4",
           "The 4-bit type: nf4 or fp4">,
    Option<"doubleQuant", "double-quant", "bool", /*default=*/"true",
           "Quantize the absmax values in 8 bits too (QLoRA's double "
           "quantization)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"64",
           "Elements per absmax block">,
    ListOption<"weights", "weights", "std::string",
               "Weights to quantize (globs on names; default: every frozen "
               "matmul weight but the output head)">,
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print how many weights and bytes were quantized to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGLora : Pass<"tg-lora", "mlir::ModuleOp"> {
  let summary = "Adds LoRA adapters to matmuls and trains only them";
  let description = [{
    For every `func.func` marked `tg.model` (before tg-freeze and
    tg-autodiff): each `tg.matmul` whose right operand is a parameter of a
    `targets` module (the parameter's name without `.weight` ends with
    `.<target>` or is `<target>`, as PEFT matches target_modules) gets a
    low-rank update, `y = x W + (alpha / rank) * (x A^T) B^T`, with two new
    parameters named as PEFT names them: `<module>.lora_A.weight` of shape
    [rank, in] initialised as PEFT does (Kaiming-uniform with a = sqrt(5):
    U(-1/sqrt(in), 1/sqrt(in))) and `<module>.lora_B.weight` of shape
    [out, rank], zeros; `in` and `out` follow the weight's layout (GPT-2's
    Conv1D [in, out], or nn.Linear's [out, in] with `transpose_rhs`). Every
    other parameter is frozen, except those matching `train-only`. A target
    that matches no matmul, a non-positive rank or alpha are errors.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"8", "LoRA rank r">,
    Option<"alpha", "alpha", "double", /*default=*/"8.0",
           "LoRA alpha (the update is scaled by alpha / rank)">,
    ListOption<"targets", "targets", "std::string",
               "Modules to adapt (e.g. c_attn,c_proj)">,
    ListOption<"trainOnly", "train-only", "std::string",
               "Base parameters to train as well (globs on their names)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGAutodiff : Pass<"tg-autodiff", "mlir::ModuleOp"> {
  let summary = "Turns a tg.model (forward + loss) into a gradient step";
  let description = [{
    For every `func.func` marked `tg.model`, adds `@<name>_train_step`,
    marked `tg.train_step`: a function from (parameters, inputs) to (loss,
    the gradient of every trainable parameter). Each gradient result
    carries `tg.grad = "<name>"`, the parameter it belongs to, and has its
    type. tg-optimizer then turns the gradients into updates.

    The backward pass is reverse mode through GradientOpInterface: the
    cotangents of values used more than once are summed, and nothing is
    computed for inputs or for `tg.frozen` parameters (they get no
    gradient), nor for values that no trainable parameter reaches.
  }];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGOptimizer : Pass<"tg-optimizer", "mlir::ModuleOp"> {
  let summary = "Turns the gradients of a training step into updates";
  let description = [{
    For every `func.func` marked `tg.train_step` (the output of
    tg-autodiff), replaces each gradient result (`tg.grad = "<name>"`) by
    the update of that parameter: results carrying `tg.update`, the
    argument each replaces in place. The optimizer's state is new
    arguments marked `tg.state`, named as torch.optim names it:
    `<param>.exp_avg`, `<param>.exp_avg_sq` (AdamW),
    `<param>.momentum_buffer` (SGD with momentum), and as Hugging Face
    names Adafactor's: `<param>.exp_avg_sq_row` and `<param>.exp_avg_sq_col`
    (factored, for matrices: n + m values for an n x m matrix) or
    `<param>.exp_avg_sq` (vectors). Every update reads two
    persistent scalars: the learning rate `optimizer.lr` (f32, initialised
    to `lr`) and the 1-based step, one more than the counter
    `optimizer.step` (i64, from 0), which the step also advances. With
    `clip-grad-norm`, gradients are first scaled as
    torch.nn.utils.clip_grad_norm_ does.
  }];
  let options = [
    Option<"optimizer", "optimizer", "::tgc::tg::OptimizerKind",
           /*default=*/"::tgc::tg::OptimizerKind::AdamW",
           "Optimizer: adamw, sgd or adafactor">,
    Option<"lr", "lr", "double", /*default=*/"1e-3",
           "Learning rate (the initial value of optimizer.lr)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (default: 0.01 for adamw and 0 for sgd, as "
           "torch.optim)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"dampening", "dampening", "double", /*default=*/"0.0",
           "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD Nesterov momentum">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the global 2-norm of the gradients to this value (0: off)">,
    Option<"decayRate", "decay-rate", "double", /*default=*/"-0.8",
           "Adafactor: the second moment's decay exponent">,
    Option<"clipThreshold", "clip-threshold", "double", /*default=*/"1.0",
           "Adafactor: the largest RMS of an update">,
    Option<"relativeStep", "relative-step", "bool", /*default=*/"true",
           "Adafactor: the step size min(1e-2, 1/sqrt(t)) instead of lr">,
    Option<"scaleParameter", "scale-parameter", "bool", /*default=*/"true",
           "Adafactor: scale the step by the parameter's RMS">,
    Option<"warmupInit", "warmup-init", "bool", /*default=*/"false",
           "Adafactor: relative step 1e-6 t during warm-up">,
    Option<"stochasticRounding", "stochastic-rounding", "bool",
           /*default=*/"true",
           "AdamW: round the updates of bf16 parameters stochastically "
           "(false: to nearest)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGQuantizeOptimizerState : Pass<"tg-quantize-optimizer-state",
                                    "mlir::ModuleOp"> {
  let summary = "Keeps optimizer state in 8 or 4 bits (blockwise "
                "quantization)";
  let description = [{
    For every `func.func` marked `tg.train_step` (after tg-optimizer), each
    `tg.adamw_update` and each `tg.sgd_update` with a momentum buffer whose
    parameter has at least `min-size` elements gets quantized state.

    `format=8bit` (bitsandbytes' blockwise dynamic quantization, Dettmers
    et al.): the update becomes `tg.adamw_8bit_update` /
    `tg.sgd_8bit_update`, and every f32 state tensor `<state>` (say
    `w.exp_avg`) is replaced by `<state>.q8`, ui8 codes of the parameter's
    shape, and `<state>.absmax`, one f32 per block of `block-size`
    elements (default 256). The maps are bitsandbytes' dynamic tree maps
    (signed for the first moment and momentum, unsigned for the second
    moment), constants of the step.

    `format=4bit` (Li et al., "Memory Efficient Optimizers with 4-bit
    States", as torchao's AdamW4bit keeps them; AdamW only): the update
    becomes `tg.adamw_4bit_update`, and `<state>` becomes `<state>.q4`, the
    codes packed two a byte, and `<state>.absmax`, one f32 scale per block
    (default 128). The first moment's map is the signed dynamic tree map
    with 3 exponent bits; the second moment's is linear without zero
    (1/16 .. 1).

    Smaller tensors keep f32 state, as bitsandbytes and torchao keep it
    below 4096 elements. `format=f32` (or `none`) changes nothing; `print`
    reports what was quantized to stderr.
  }];
  let options = [
    Option<"format", "format", "::tgc::tg::StateFormat",
           /*default=*/"::tgc::tg::StateFormat::Int8",
           "State format: 8bit (blockwise dynamic), 4bit (AdamW: dynamic "
           "first moment, linear zero-free second moment), or f32 / none "
           "(unchanged)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "Elements per absmax block (a power of two up to 4096; even for "
           "4bit; 0: the format's, 256 for 8bit and 128 for 4bit)">,
    Option<"minSize", "min-size", "int64_t", /*default=*/"4096",
           "Parameters with fewer elements keep f32 state">,
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print the state bytes before and after to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGAmp : Pass<"tg-amp", "mlir::ModuleOp"> {
  let summary = "Lowers the precision of a model's compute, autocast style";
  let description = [{
    Rewrites every `tg.model` function (run it before tg-autodiff, which then
    differentiates the mixed-precision forward pass) with an op policy in the
    spirit of torch.autocast:
    - `low-precision-ops` (default matmul, expert_linear, attention) compute in `dtype`
      (bf16 or f16): their float operands are cast down;
    - `f32-ops` (default softmax, layer_norm, rms_norm, reductions, exp, log, rsqrt)
      compute in f32: their operands are cast up;
    - `f32-math-ops` (default cross_entropy, embedding) have kernels that
      read any float type and compute in f32: their operands are left as
      they are, so a 16-bit operand is never widened in memory. The loss
      reads the 16-bit logits and its gradient is written over them in 16
      bits (the fused classifier of llm.c), where an f32 copy of the logits
      would live from the forward pass to the backward pass; an embedding
      keeps the type its rows have (f32 rows of a frozen 16-bit table);
    - every other op runs in the widest float type among its operands,
      except an add of a low-precision product and a rank-1 parameter (a
      linear layer's bias), which joins the product's precision as
      autocast's linear does: the layer's output, and what the backward
      pass keeps of it, stay 16-bit.
    Casts are inserted only at these boundaries and shared by all users of a
    value, so each f32 parameter gets one low-precision working copy per
    step; redundant cast chains are then folded away. Parameters stay f32
    (the master weights): their gradients arrive through the casts'
    gradients and tg-autodiff accumulates them in f32. Op kinds are named
    without the dialect prefix.
  }];
  let options = [
    Option<"dtype", "dtype", "::tgc::tg::Half",
           /*default=*/"::tgc::tg::Half::BF16",
           "Low precision: bf16 or f16 (none: leave the pass out)">,
    ListOption<"lowPrecisionOps", "low-precision-ops", "std::string",
               "Op kinds computed in the low precision (default: matmul, "
               "attention)">,
    ListOption<"f32Ops", "f32-ops", "std::string",
               "Op kinds computed in f32 (default: softmax, layer_norm, rms_norm, "
               "reduce_sum, reduce_mean, reduce_max, exp, log, rsqrt)">,
    ListOption<"f32MathOps", "f32-math-ops", "std::string",
               "Op kinds whose kernels compute in f32 from operands of any "
               "float type: left uncast (default: cross_entropy, "
               "embedding)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGGradAccum : Pass<"tg-grad-accum", "mlir::ModuleOp"> {
  let summary = "Gradient accumulation: K micro-batches per optimizer step";
  let description = [{
    Splits every `tg.train_step` out of tg-autodiff (before tg-optimizer)
    into two entry points over the same persistent tensors:
    - a gradient micro-step (`<model>_grad_step`, marked `tg.grad_step`):
      the forward and backward pass on one micro-batch, adding each
      parameter's gradient into an f32 accumulator
      (`grad_accum.<param>`), and the loss into a weighted sum;
    - the training step itself, which now reads no batch: it turns the
      sums into the gradients of the whole batch and returns them (with
      the mean loss) to tg-optimizer, which adds clipping and the update
      as for any step, then zeroes the accumulators.
    The result equals one step on the K-times-larger batch. When the loss
    is a tg.cross_entropy, each micro-batch's backward pass is seeded with
    its number of counted targets (`tg.target_count`) and the sums are
    divided by the total, so `ignore_index` targets spread unevenly over
    micro-batches count exactly as in the large batch; any other loss is
    a mean over equal micro-batches (each weighs 1). Loss scaling
    (tg-loss-scale, run later) scales the micro-steps' seeds and checks
    the accumulated gradients once per optimizer step.
  }];
  let options = [
    Option<"steps", "steps", "int64_t", /*default=*/"2",
           "Micro-batches per optimizer step (>= 2; 1 is no accumulation)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGLossScale : Pass<"tg-loss-scale", "mlir::ModuleOp"> {
  let summary = "Inserts loss scaling into training steps (GradScaler)";
  let description = [{
    On every `tg.train_step` (run it after tg-autodiff), as
    torch.cuda.amp.GradScaler does by hand:
    - the backward pass starts from the loss scale S instead of 1 (the
      gradient of S * loss);
    - every parameter gradient is unscaled (multiplied by 1/S, in f32) as
      soon as it is complete, so clipping and the optimizer see true
      gradients;
    - `tg.all_finite` checks them all; when one is inf or NaN the optimizer
      updates are skipped (their `apply` predicate is false), leaving
      parameters and optimizer state untouched, and the step counter does
      not advance;
    - with `mode=dynamic`, S and its growth tracker are step state
      (`amp.loss_scale`, initialised to `init-scale`, and
      `amp.growth_tracker`), updated by `tg.update_loss_scale`: x
      `backoff-factor` on overflow, x `growth-factor` after
      `growth-interval` finite steps in a row. They are saved in
      checkpoints with the rest of the state.
    `mode=static:<value>` uses a constant S (still skipping non-finite
    steps); `mode=none` leaves the step unchanged.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"dynamic\"",
           "dynamic, static:<value> or none">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial loss scale (dynamic)">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Scale growth factor (dynamic)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Scale backoff factor on overflow (dynamic)">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"2000",
           "Finite steps in a row before the scale grows (dynamic)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGRemat : Pass<"tg-remat", "mlir::ModuleOp"> {
  let summary = "Rematerialization: recomputes forward values in the backward "
                "pass to lower the peak";
  let description = [{
    On every `tg.train_step` (after tg-autodiff and tg-loss-scale, before
    tg-plan-memory), chooses which forward values the backward pass reads
    are kept and which are dropped and recomputed, then rewrites the step:
    before the first backward op reading a dropped value, the ops defining
    it (and any dropped operands) run again, marked `tg.remat` (the mark
    keeps CSE from merging them with the originals), and later backward
    reads use that copy. Forward ops that read only persistent tensors and
    are cheap (the 16-bit working copies of parameters tg-amp makes) also
    move down to just before their first reader. Policies:
    - `none`: no recomputation (cheap persistent-only ops are still sunk);
    - `selective`: recompute values of cheap ops (FLOPs per byte moved at
      most 4: elementwise, layer norm, casts, data movement) that a single
      forward op reads, as llm.c's recompute; the residual stream and the
      outputs of matmuls and attention are kept;
    - `blocks`: keep the inputs and outputs of each block and recompute its
      inside, as Hugging Face's gradient checkpointing; blocks are the name
      scopes of the forward ops' locations with an index (`layers.3`,
      `transformer.h.3`);
    - `budget=<size>` (B, KiB, MiB, GiB, TiB): the planned peak
      (persistent tensors plus the transient arena) at most `size`, with as
      few added FLOPs as the solver finds (see tgc/Analysis/Remat.h). The
      solver may also recompute a dropped value for each backward use, and
      sink a backward op to just before its first reader (free: its result
      is then not live while unrelated ops run); `reorder=false` keeps the
      order of the backward ops, as Checkmate's formulation does. A budget
      below what any choice reaches is an error that states the smallest
      peak.
    Numbers are unchanged: the same kernels run on the same operands. A
    summary line (ops recomputed, added FLOPs, peak before and after) goes
    to stderr; `export-graph` writes the step's buffer graph as JSON (the
    input of test/Transforms/Inputs/checkmate.py).
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, selective, blocks or budget=<size>">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "Buffer alignment of the planner, in bytes">,
    Option<"exportGraph", "export-graph", "std::string", /*default=*/"",
           "Write the step's buffer graph (before rematerialization) as "
           "JSON to this file">,
    Option<"printSummary", "print", "bool", /*default=*/"true",
           "Print a summary line to stderr">,
    Option<"reorder", "reorder", "bool", /*default=*/"true",
           "Let the budget solver sink backward ops (false: recompute only)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGOffload : Pass<"tg-offload", "mlir::ModuleOp"> {
  let summary = "Keeps the optimizer state in the host's pinned memory";
  let description = [{
    On every `tg.train_step` (after tg-optimizer, the state's quantization
    and tg-data-parallel, before tg-remat), with `what=optimizer`: each
    optimizer state tensor that only optimizer updates read (AdamW's
    moments, their 8-bit codes and scales, Adafactor's factors, SGD's
    momentum) gets `tg.host`. The memory plan puts those tensors in a
    region of their own at the end of the persistent region, which the
    CUDA backend allocates in pinned host memory mapped into the device's
    address space: the update kernels read and write the state over the
    bus (PCIe, NVLink-C2C) while the parameters and gradients stay on the
    device, so the device holds no optimizer state and no copy of it is
    staged. The numbers are unchanged (the same kernels on the same
    bytes); the estimate charges the state's traffic at the host link's
    bandwidth. Scalars (the step count, the learning rate) stay on the
    device. `what=none` changes nothing.
  }];
  let options = [
    Option<"what", "what", "::tgc::tg::Offload",
           /*default=*/"::tgc::tg::Offload::Optimizer",
           "What lives in host memory: none, optimizer, activations or all "
           "(this pass moves the optimizer state: with optimizer or all)">,
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print what moved to host memory to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGOffloadActivations : Pass<"tg-offload-activations", "mlir::ModuleOp"> {
  let summary = "Keeps the activations the backward pass reads in host "
                "memory while they wait";
  let description = [{
    On every `tg.train_step` (after tg-remat, whose checkpoints are then
    what waits): each value the forward pass computes and the backward pass
    reads, of at least `min-bytes` and idle for at least `min-idle-ops` ops
    between its last forward read and its first backward read, gets a
    `tg.host` state tensor named `offload.<step>.<k>`. `tg.offload` copies
    the value into it right after the value is computed (the result updates
    the host tensor in place) and `tg.reload` copies it back just before
    the backward pass first reads it, which then reads the copy. The device
    holds the value only until its last forward read and from the reload
    on; the host tensors (pinned, on the CUDA backend) are written before
    they are read in every step, so they are neither initialised nor
    checkpointed. The numbers are unchanged; each offloaded byte crosses
    the host link twice, which the estimate charges. Not with gradient
    accumulation yet.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1048576",
           "Smallest activation moved, in bytes">,
    Option<"minIdleOps", "min-idle-ops", "int64_t", /*default=*/"8",
           "Fewest ops between an activation's last forward read and its "
           "first backward read for it to move">,
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print what moved to host memory to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGAccumulateProducts : Pass<"tg-accumulate-products", "mlir::ModuleOp"> {
  let summary = "Adds matrix products onto their accumulators in the GEMM";
  let description = [{
    On every `tg.train_step` (after tg-autodiff; the pipeline runs it after
    tg-remat), rewrites `tg.add` of an accumulator and a `tg.matmul` used
    only there, both of the sum's type, into `tg.matmul_add`: the GEMM adds
    the product onto the accumulator (beta = 1), so the product is never
    stored, and the memory plan may write the sum over the accumulator when
    nothing reads it later. Sums of gradients are the case that matters:
    tg-chunk-loss's chunks each add a classifier-sized product onto the
    classifier's weight gradient, which without this pass needs a second
    buffer of that size. The fused op is placed where the product was, so
    the product's operands live no longer; a product computed before its
    accumulator (a tied embedding's gradient comes at the end of the
    backward pass) is left alone, since fusing it would keep the operands
    alive until then. The sum is rounded once instead of twice (the
    product's own rounding is gone). Likewise a `tg.add` of an accumulator
    and a `tg.embedding_grad` used only there (a tied embedding's table
    gradient plus the classifier's weight gradient) becomes the
    `tg.embedding_grad` with that `addend`, in the scatter's place: one
    pass over the table instead of two, the same values.
  }];
  let options = [
    Option<"printSummary", "print", "bool", /*default=*/"false",
           "Print how many products were fused to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGOptimizerInBackward : Pass<"tg-optimizer-in-backward",
                                  "mlir::ModuleOp"> {
  let summary = "Runs each parameter's update as soon as its gradient is "
                "complete, inside the backward pass";
  let description = [{
    On every `tg.train_step` (after every pass that adds ops to the step,
    tg-remat included, before tg-plan-memory), reorders the step so that
    each optimizer update (OptimizerUpdateOpInterface), with the ops that
    exist only to feed it (its gradient's last sum, a dequantization, the
    step count and other scalars), runs as soon as its gradient and operands
    exist and every other reader of what it writes in place has run (a
    `tg.all_gather` of a parameter the update writes, zero3's, travels with
    it to just before it where nothing before that place reads the gathered
    copy, so the copy is not held across the update's gradient); then
    the gradient dies at once, and the peak holds about one block's
    gradients instead of the model's (torchtune's optimizer-in-backward, as
    a schedule). Only the order changes: the same kernels run on the same
    operands, so losses and parameters are bitwise those of the step
    without the pass.

    An update that needs every gradient first stays after the backward pass
    on its own, through its operands: with global-norm clipping (the norm
    reads every gradient), with dynamic loss scaling (GradScaler skips the
    whole step when any gradient overflowed), and in the last micro-step of
    gradient accumulation (the accumulators are summed and reset together).
    The summary line says how many updates moved and, when some did not,
    the op they wait for.
  }];
  let options = [
    Option<"printSummary", "print", "bool", /*default=*/"true",
           "Print a summary line to stderr">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

def TGPlanMemory : Pass<"tg-plan-memory", "mlir::ModuleOp"> {
  let summary = "Plans the memory of training steps and reports it";
  let description = [{
    For every `func.func` marked `tg.train_step` (or `tg.model`), computes
    the static memory plan (see tgc/Analysis/MemoryPlan.h): the schedule is
    the IR order, persistent tensors (parameters, optimizer and step state,
    inputs) live in their own region and are updated in place, and every
    other value gets a static offset in one transient arena. Prints the
    report to stderr: persistent bytes by kind, the arena size next to the
    peak of simultaneously live bytes, the breakdown at the peak
    (parameters, gradients, optimizer state, activations saved for backward,
    workspace) and the largest buffers live there. With `memory-report`,
    also writes the report as JSON to that file and a Chrome-trace timeline
    next to it (`<file>.trace.json`). Fails with a diagnostic when an update
    cannot be written in place, and on ops with regions (not planned yet).
    A result takes the buffer of an operand that dies at its op when the op
    allows it (InPlaceOpInterface). The IR is not changed and the plan is
    kept as an analysis for the lowering that follows.
  }];
  let options = [
    Option<"memoryReport", "memory-report", "std::string", /*default=*/"",
           "Write the report as JSON to this file, and a Chrome trace to "
           "<file>.trace.json">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "Alignment of every buffer, in bytes (a power of two)">,
    Option<"topBuffers", "top", "unsigned", /*default=*/"10",
           "How many of the largest buffers live at the peak to list">,
    Option<"printReport", "print", "bool", /*default=*/"true",
           "Print the text report to stderr">,
    Option<"inPlace", "in-place", "bool", /*default=*/"true",
           "Let results take the buffer of a dying operand "
           "(InPlaceOpInterface); false measures what that saves">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}


def TGDataParallel : Pass<"tg-data-parallel", "mlir::ModuleOp"> {
  let summary = "Data parallelism: DDP and ZeRO stages 1 and 2 over N ranks";
  let description = [{
    Turns every `tg.train_step` (after tg-optimizer, and after
    tg-quantize-optimizer-state and tg-loss-scale when they run) into the
    step each of `world-size` ranks runs on its own part of the batch, the
    ranks talking through collective ops (`tg.all_reduce`,
    `tg.reduce_scatter`, `tg.all_gather`):
    - `ddp`: each parameter's gradient is averaged across ranks before
      anything reads it (clipping, the finiteness check, the update);
    - `zero1` (ZeRO stage 1): the optimizer state is split across ranks.
      Each gradient is flattened and zero-padded to a multiple of the world
      size (of the world size times the block size for 8-bit state); after
      the backward pass the gradients are reduce-scattered, so each rank
      holds the averaged gradient of its part; it updates that part of the
      parameter with its part of the state, and the parts are all-gathered
      into the whole parameter. The state arguments become parts
      (`tg.shard_of` records the whole shape);
    - `zero2` (stage 2): the same, with each bucket of gradients
      reduce-scattered as soon as the backward pass has computed it, so the
      whole gradients die early.
    - `zero3` (stage 3, FSDP's full sharding): the parameters are split
      too. Each parameter argument (trainable or frozen; float, or a 4-bit
      weight's codes and scales as `tg.quant4` names them) becomes this
      rank's part (`tg.shard_of`), and the new part is what the step
      returns: no all-gather after the update.
      Before the forward pass reads a bucket of parameters, one
      `tg.all_gather` rebuilds them whole, and again before the backward
      pass reads them, so each gathered copy dies after its last reader in
      its pass; a bucket's gather is issued where the bucket before it is
      first read (one bucket of prefetch). A parameter of `bucket-mb` or
      more is a bucket alone and the small ones around it share one,
      whose copy lives from the first of them to the last. A parameter
      that a pass reads only through casts (mixed precision) is cast
      before it is gathered.
      Values computed from a parameter alone by casts, reshapes and
      transposes that the backward pass reads are computed again there
      from its own gather. The model's evaluation function (`tg.model`)
      reads the same parts, gathered once.
    With `shard-group` K (dividing the world size, below it), the ZeRO
    modes split across each group of K consecutive ranks (rank r holds part
    r mod K) and the N / K groups are replicas (FSDP's hybrid sharding):
    a bucket's gradients are reduce-scattered within the group and each
    part then averaged across the replicas (`tg.all_reduce` with
    `rank_stride` K); the gathers stay within the group.
    Gradients travel in buckets of at most `bucket-mb` MiB (in the order
    the backward pass completes them), each one collective on one flat
    buffer, not one per parameter. A global gradient norm (clipping) and
    the finiteness check of loss scaling become a local one combined across
    ranks. The loss is averaged across ranks, so every rank reports the
    loss of the whole batch.
  }];
  let options = [
    Option<"mode", "mode", "::tgc::tg::ParallelMode",
           /*default=*/"::tgc::tg::ParallelMode::DDP",
           "ddp, zero1, zero2 or zero3 (none: leave the pass out)">,
    Option<"worldSize", "world-size", "int64_t", /*default=*/"2",
           "Number of ranks (>= 1)">,
    Option<"shardGroup", "shard-group", "int64_t", /*default=*/"0",
           "ZeRO modes: split across groups of this many consecutive ranks, "
           "replicated across the groups (0: the world size)">,
    Option<"bucketMB", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket of gradients per collective, in MiB (PyTorch "
           "DDP's default)">,
  ];
  let dependentDialects = ["::tgc::tg::TGDialect"];
}

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
