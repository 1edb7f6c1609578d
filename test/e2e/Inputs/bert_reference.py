"""Trains the BERT model tgc-models bert generates, in PyTorch, from the same
initial weights and batches as tgc-run, with torch.optim.AdamW, and writes
the per-step losses (JSONL) and the final parameters (safetensors): the
BERT counterpart of torch_reference.py.

Usage:
  bert_reference.py mlm|seq-cls N_HEAD INIT DATA STEPS METRICS FINAL
      [--eval=M | --grads=FILE] [--dtype=float32|float64] [--permute=SEED]
The model is Hugging Face's BertForMaskedLM (mlm) or
BertForSequenceClassification (seq-cls) without dropout, written out with
torch functions over INIT's tensors (Hugging Face names, nn.Linear's
[out, in] layout): post-norm layers, LayerNorm eps 1e-12, the erf GELU
(BERT's "gelu"), token type 0 everywhere, padded keys (attention_mask 0)
left out of every softmax. mlm's decoder is tied to the word embeddings;
seq-cls classifies tanh(pooler(x[:, 0])). The loss is the cross entropy
with ignore_index -100, averaged over the targets not ignored.
hf_bert_check.py checks this forward against transformers' models.
DATA holds tokens and attention_mask [N, B, T] and targets [N, B, T] (mlm)
or [N, B] (seq-cls), all int64; step i trains on batch i mod N.
The optimizer settings are tgc-compile's defaults: lr 1e-3, betas (0.9,
0.999), eps 1e-8, weight decay 0.01 on every parameter. INIT's optimizer
state (names ending .exp_avg or .exp_avg_sq, or starting optimizer.) is
ignored, as torch_reference.py does.
--eval=M writes, instead of training, the mean forward loss of INIT's
weights over the first M batches to METRICS ({"eval_loss": ...}).
--grads=FILE writes, instead of training, batch 0's loss (a scalar named
loss) and the gradient of every parameter of INIT (grad.<name>; zero for a
parameter the task does not use) to the safetensors FILE; STEPS, METRICS
and FINAL are then not used.
--dtype=float64 computes the same problem in float64: INIT's float
parameters upcast (exactly: every f32, bf16 or f16 value is a float64
value), the model, the loss and AdamW in float64; the parameters (and
--grads) are written as F64. compare_runs.py --exact measures both f32
implementations (tgc's and PyTorch's) against this run.
--permute=SEED trains on each batch's examples in another order (drawn
from SEED and the step): the same training in exact arithmetic, rounded
differently, so that several f32 runs show how far f32 rounding alone
moves the result (compare_runs.py --exact).

The functions logits(), forward() and batch() are imported by
hf_bert_check.py."""
import json
import math
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

LN_EPS = 1e-12
TASKS = ("mlm", "seq-cls")


def is_optimizer_state(name):
    return (name.endswith(".exp_avg") or name.endswith(".exp_avg_sq")
            or name.startswith("optimizer."))


def num_layers(params):
    layers = 0
    while f"bert.encoder.layer.{layers}.attention.self.query.weight" in params:
        layers += 1
    return layers


def logits(params, batch, task, n_head):
    """The model's logits for one batch: [B, T, V] for mlm, [B, K] for
    seq-cls. params maps Hugging Face names to tensors; batch holds
    tokens and attention_mask [B, T] (targets are not used here)."""
    p = params
    tokens, mask = batch["tokens"], batch["attention_mask"]
    B, T = tokens.shape
    H = int(n_head)
    e = "bert.embeddings"
    wte = p[f"{e}.word_embeddings.weight"]
    C = wte.shape[1]
    D = C // H

    def dense(x, name):
        return F.linear(x, p[f"{name}.weight"], p[f"{name}.bias"])

    def norm(x, name):
        return F.layer_norm(x, (C,), p[f"{name}.weight"], p[f"{name}.bias"], LN_EPS)

    # Hugging Face's order: (word + token type) + position, then LayerNorm.
    x = wte[tokens] + p[f"{e}.token_type_embeddings.weight"][0]
    x = x + p[f"{e}.position_embeddings.weight"][:T]
    x = norm(x, f"{e}.LayerNorm")
    # A key is visible to every query of its row where its mask is 1.
    padded = (mask == 0).view(B, 1, 1, T)
    for i in range(num_layers(p)):
        layer = f"bert.encoder.layer.{i}"

        def heads(t):
            return t.view(B, T, H, D).transpose(1, 2)
        q = heads(dense(x, f"{layer}.attention.self.query"))
        k = heads(dense(x, f"{layer}.attention.self.key"))
        v = heads(dense(x, f"{layer}.attention.self.value"))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(padded, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = norm(x + dense(y, f"{layer}.attention.output.dense"),
                 f"{layer}.attention.output.LayerNorm")
        h = F.gelu(dense(x, f"{layer}.intermediate.dense"))
        x = norm(x + dense(h, f"{layer}.output.dense"), f"{layer}.output.LayerNorm")
    if task == "mlm":
        h = F.gelu(dense(x, "cls.predictions.transform.dense"))
        h = norm(h, "cls.predictions.transform.LayerNorm")
        return h @ wte.t() + p["cls.predictions.bias"]
    if task == "seq-cls":
        pooled = torch.tanh(dense(x[:, 0], "bert.pooler.dense"))
        return dense(pooled, "classifier")
    raise ValueError(f"unknown task {task!r} (mlm or seq-cls)")


def forward(params, batch, task, n_head):
    """The mean cross-entropy loss of one batch (targets -100 ignored)."""
    out = logits(params, batch, task, n_head)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]),
                           batch["targets"].reshape(-1), ignore_index=-100)


def batch(batches, i):
    """Batch i mod N of a data file's [N, B, ...] tensors."""
    n = batches["tokens"].shape[0]
    return {k: batches[k][i % n] for k in ("tokens", "attention_mask", "targets")}


def permuted_rows(rows, seed, step):
    """The batch's examples in another order (the same one for every
    tensor of the batch): the same loss and gradients in exact arithmetic,
    summed over the examples in another order (--permute)."""
    g = torch.Generator().manual_seed(seed * 1000003 + step)
    order = torch.randperm(rows["tokens"].shape[0], generator=g)
    return {k: v[order] for k, v in rows.items()}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    task, n_head, init, data, steps, metrics, final = sys.argv[1:8]
    if task not in TASKS:
        sys.exit(f"unknown task {task!r} (mlm or seq-cls)")
    dtype = [a[len("--dtype="):] for a in sys.argv[8:] if a.startswith("--dtype=")]
    permute = [int(a[len("--permute="):]) for a in sys.argv[8:]
               if a.startswith("--permute=")]
    rest = [a for a in sys.argv[8:] if not a.startswith(("--dtype=", "--permute="))]
    options = dict(a[2:].split("=", 1) for a in rest
                   if a.startswith(("--eval=", "--grads=")))
    if len(options) != len(rest) or len(options) > 1 or len(dtype) > 1 or \
            not set(dtype) <= {"float32", "float64"}:
        sys.exit("options: --eval=M or --grads=FILE, --dtype=float32|float64, "
                 f"--permute=SEED, not {sys.argv[8:]}")
    dtype = torch.float64 if dtype == ["float64"] else torch.float32
    steps = int(steps)
    params = {k: v.to(dtype).clone().requires_grad_()
              for k, v in safetensors_io.load(init).items()
              if not is_optimizer_state(k)}
    batches = safetensors_io.load(data)

    if "eval" in options:
        # The validation loss of INIT's weights: the mean forward loss of
        # the first M batches, as `tgc-run --eval-only --eval-batches M`
        # reports it.
        count = int(options["eval"])
        with torch.no_grad():
            losses = [forward(params, batch(batches, b), task, n_head).item()
                      for b in range(count)]
        with open(metrics, "w") as out:
            out.write(json.dumps({"eval_loss": sum(losses) / len(losses)}) + "\n")
        return

    if "grads" in options:
        loss = forward(params, batch(batches, 0), task, n_head)
        loss.backward()
        grads = {"loss": loss.detach()}
        for name, p in params.items():
            grads[f"grad.{name}"] = p.grad if p.grad is not None else torch.zeros_like(p)
        safetensors_io.save(options["grads"], grads)
        return

    opt = torch.optim.AdamW(list(params.values()), lr=1e-3, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    with open(metrics, "w") as out:
        for step in range(steps):
            rows = batch(batches, step)
            if permute:
                rows = permuted_rows(rows, permute[0], step)
            loss = forward(params, rows, task, n_head)
            opt.zero_grad()
            loss.backward()
            lr = opt.param_groups[0]["lr"]
            opt.step()
            out.write(json.dumps({"step": step + 1, "loss": loss.item(), "lr": lr}) + "\n")
    safetensors_io.save(final, params)


if __name__ == "__main__":
    main()
