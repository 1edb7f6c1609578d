"""Trains the model tgc-models generates, in PyTorch, from the same initial
weights and batches as tgc-run, with torch.optim.AdamW, and writes the
per-step losses (JSONL) and the final parameters (safetensors).

Usage:
  torch_reference.py gpt2 N_HEAD INIT DATA STEPS METRICS FINAL [--freeze=GLOBS]
  torch_reference.py mlp - INIT DATA STEPS METRICS FINAL [--freeze=GLOBS]
The optimizer settings are tgc-compile's defaults: lr 1e-3, betas (0.9,
0.999), eps 1e-8, weight decay 0.01 on every trained parameter.
--freeze (comma-separated fnmatch globs on the names) sets requires_grad
False on the parameters it matches and leaves them out of the optimizer,
as a PyTorch user freezes layers. --schedule=KIND,WARMUP,MAX_STEPS,MIN_LR
drives the learning rate with torch.optim.lr_scheduler.LambdaLR and
nanoGPT's get_lr (linear warmup, then constant, cosine or linear decay to
MIN_LR at MAX_STEPS), and writes each step's rate to the metrics.
--eval=M writes, instead of training, the mean forward loss of INIT's
weights over the first M batches. --lora-scale=S applies the LoRA adapters
the checkpoint holds (`<module>.lora_A.weight`, `<module>.lora_B.weight`)
as PEFT's LoraLayer does, y = x W + S (x A^T) B^T, and trains only them.
--clip=MAX clips the gradients' global 2-norm with
torch.nn.utils.clip_grad_norm_ before every update.
--dtype=float64 computes the same problem in float64: INIT's float
parameters and DATA's float inputs upcast (exactly: every f32, bf16 or f16
value is a float64 value), the model, the loss and AdamW in float64; the
final parameters are written as F64. compare_runs.py --exact measures both
f32 implementations (tgc's and PyTorch's) against this run.
--permute=SEED trains on each batch's rows in another order (drawn from
SEED and the step): the same training in exact arithmetic, rounded
differently, so that several f32 runs show how far f32 rounding alone
moves the result (compare_runs.py --exact)."""
import fnmatch
import json
import math
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
kind, n_head, init, data, steps, metrics, final = sys.argv[1:8]
steps = int(steps)
state = safetensors_io.load(init)
dtype = [a[len("--dtype="):] for a in sys.argv[8:] if a.startswith("--dtype=")]
dtype = {"float32": None, "float64": torch.float64}[dtype[0]] if dtype else None


def upcast(t):
    """t in --dtype when it is a float tensor and one was given."""
    return t.to(dtype) if dtype is not None and t.is_floating_point() else t


frozen = [g for a in sys.argv[8:] if a.startswith("--freeze=")
          for g in a[len("--freeze="):].split(",")]
params = {k: upcast(v).clone() for k, v in state.items()
          if not (k.endswith(".exp_avg") or k.endswith(".exp_avg_sq")
                  or k.startswith("optimizer."))}
lora_scale = [float(a[len("--lora-scale="):]) for a in sys.argv[8:]
              if a.startswith("--lora-scale=")]
lora_scale = lora_scale[0] if lora_scale else None
for name, p in params.items():
    trained = not any(fnmatch.fnmatchcase(name, g) for g in frozen)
    if lora_scale is not None:
        trained = ".lora_" in name
    p.requires_grad_(trained)


def linear(x, module, transposed=False):
    """x W (GPT-2's Conv1D [in, out]; nn.Linear's [out, in] when
    `transposed`), plus the module's LoRA update when it has one."""
    w = params[f"{module}.weight"]
    y = x @ (w.t() if transposed else w)
    if f"{module}.lora_A.weight" in params:
        a, b = params[f"{module}.lora_A.weight"], params[f"{module}.lora_B.weight"]
        y = y + lora_scale * ((x @ a.t()) @ b.t())
    return y
batches = {k: upcast(v) for k, v in safetensors_io.load(data).items()}


def gpt2(tokens, targets):
    p = params
    B, T = tokens.shape
    wte = p["transformer.wte.weight"]
    C = wte.shape[1]
    H = int(n_head)
    x = wte[tokens] + p["transformer.wpe.weight"][:T]
    layer = 0
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    while f"transformer.h.{layer}.ln_1.weight" in p:
        q = lambda s: p[f"transformer.h.{layer}.{s}"]  # noqa: E731
        h = F.layer_norm(x, (C,), q("ln_1.weight"), q("ln_1.bias"), 1e-5)
        qkv = linear(h, f"transformer.h.{layer}.attn.c_attn") + q("attn.c_attn.bias")
        qq, kk, vv = qkv.split(C, dim=2)
        heads = lambda t: t.view(B, T, H, C // H).transpose(1, 2)  # noqa: E731
        qq, kk, vv = heads(qq), heads(kk), heads(vv)
        att = (qq @ kk.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ vv).transpose(1, 2).reshape(B, T, C)
        x = x + (linear(y, f"transformer.h.{layer}.attn.c_proj") + q("attn.c_proj.bias"))
        h = F.layer_norm(x, (C,), q("ln_2.weight"), q("ln_2.bias"), 1e-5)
        h = F.gelu(linear(h, f"transformer.h.{layer}.mlp.c_fc") + q("mlp.c_fc.bias"),
                   approximate="tanh")
        x = x + (linear(h, f"transformer.h.{layer}.mlp.c_proj") + q("mlp.c_proj.bias"))
        layer += 1
    x = F.layer_norm(x, (C,), p["transformer.ln_f.weight"],
                     p["transformer.ln_f.bias"], 1e-5)
    logits = x @ wte.t()
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1),
                           ignore_index=-100)


def mlp(inputs, targets):
    x, i = inputs, 0
    while f"layers.{i}.weight" in params:
        x = linear(x, f"layers.{i}", transposed=True) + params[f"layers.{i}.bias"]
        if f"layers.{i + 1}.weight" in params:
            x = torch.relu(x)
        i += 1
    return F.cross_entropy(x, targets, ignore_index=-100)


evaluate = [int(a[len("--eval="):]) for a in sys.argv[8:] if a.startswith("--eval=")]
if evaluate:
    # The validation loss of INIT's weights: the mean forward loss of the
    # first M batches, as `tgc-run --eval-only --eval-batches M` reports it.
    with torch.no_grad():
        losses = []
        for b in range(evaluate[0]):
            if kind == "gpt2":
                n = batches["tokens"].shape[0]
                losses.append(gpt2(batches["tokens"][b % n], batches["targets"][b % n]).item())
            else:
                n = batches["inputs"].shape[0]
                losses.append(mlp(batches["inputs"][b % n], batches["targets"][b % n]).item())
    with open(metrics, "w") as out:
        out.write(json.dumps({"eval_loss": sum(losses) / len(losses)}) + "\n")
    sys.exit(0)

opt = torch.optim.AdamW([p for p in params.values() if p.requires_grad], lr=1e-3, betas=(0.9, 0.999),
                        eps=1e-8, weight_decay=0.01)
schedule = [a[len("--schedule="):].split(",") for a in sys.argv[8:]
            if a.startswith("--schedule=")]
clip = [float(a[len("--clip="):]) for a in sys.argv[8:] if a.startswith("--clip=")]
permute = [int(a[len("--permute="):]) for a in sys.argv[8:]
           if a.startswith("--permute=")]


def rows_of(*tensors, step):
    """The batch's rows, in another order under --permute (the same order
    for every tensor of the batch)."""
    if not permute:
        return tensors
    g = torch.Generator().manual_seed(permute[0] * 1000003 + step)
    order = torch.randperm(tensors[0].shape[0], generator=g)
    return tuple(t[order] for t in tensors)
scheduler = None
if schedule:
    kind_, warmup, max_steps, min_lr = schedule[0]
    warmup, max_steps, min_lr, peak = int(warmup), int(max_steps), float(min_lr), 1e-3

    def get_lr(it):
        # nanoGPT's train.py get_lr, with the decay's shape a parameter.
        if it < warmup:
            return peak * (it + 1) / (warmup + 1)
        if kind_ == "constant":
            return peak
        if it > max_steps:
            return min_lr
        ratio = (it - warmup) / (max_steps - warmup)
        coeff = 0.5 * (1.0 + math.cos(math.pi * ratio)) if kind_ == "cosine" else 1.0 - ratio
        return min_lr + coeff * (peak - min_lr)

    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: get_lr(it) / peak)
with open(metrics, "w") as out:
    for step in range(steps):
        if kind == "gpt2":
            n = batches["tokens"].shape[0]
            loss = gpt2(*rows_of(batches["tokens"][step % n],
                                 batches["targets"][step % n], step=step))
        else:
            n = batches["inputs"].shape[0]
            loss = mlp(*rows_of(batches["inputs"][step % n],
                                batches["targets"][step % n], step=step))
        opt.zero_grad()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(
                [p for p in params.values() if p.requires_grad], clip[0])
        lr = opt.param_groups[0]["lr"]
        opt.step()
        if scheduler:
            scheduler.step()
        out.write(json.dumps({"step": step + 1, "loss": loss.item(), "lr": lr}) + "\n")
safetensors_io.save(final, params)
