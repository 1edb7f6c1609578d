"""DPO on the CPU: tgc's compiled step beside the same step in PyTorch
(transformers' Llama, PEFT's adapters), in one run, and the planned memory
of Llama-3-8B's DPO steps.

A small Llama (4 layers, hidden 256, 8 heads of which 4 key/value, vocab
2048; written by transformers) trains on 64 pre-tokenized preference pairs
(prompts of 16 to 64 tokens, answers of 8 to 64), 4 pairs a batch (8 rows
of 128 tokens), for 20 steps of each of:
  - tgc, LoRA (rank 16 on q, k, v, o) with the LoRA-off reference
    (--loss=dpo): one forward pass more, no weights more;
  - tgc, full fine-tuning with the frozen-copy reference;
  - tgc, the same LoRA model trained by its own cross-entropy on rows of
    the same shape (supervised fine-tuning: the step DPO adds to);
  - PyTorch 1.13 (Debian's), the DPO paper's loss on transformers' model:
    LoRA through PEFT with disable_adapter() as the reference, and full
    fine-tuning with a deep copy, as TRL computes them.
The step time is the median of steps 3 to 20 (2 threads each). Then
`tgc-compile` plans Llama-3-8B's DPO steps at B=4 (2 pairs), T=1024:
LoRA over a bf16 or NF4 base against full fine-tuning, whose reference is a
second copy of the trained weights. Writes bench/PREFERENCE.md.

  /usr/bin/python3 bench/preference.py [--build build]
"""
import argparse
import json
import os
import random
import re
import statistics
import tempfile

from common import ROOT, machine, run

HF47 = os.path.join(ROOT, ".venv-hf47", "bin", "python")
LORA = "rank=16,alpha=32,targets=q_proj,k_proj,v_proj,o_proj"
T, BATCH, STEPS, PAIRS, VOCAB = 128, 8, 20, 64, 2048

MAKE_MODEL = """
import sys, torch, transformers
torch.manual_seed(0)
transformers.LlamaForCausalLM(transformers.LlamaConfig(
    vocab_size=2048, hidden_size=256, intermediate_size=688,
    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
    max_position_embeddings=256)).save_pretrained(sys.argv[1],
                                                   safe_serialization=True)
"""

TORCH_DPO = """
import copy, json, statistics, sys, time
import torch, torch.nn.functional as F, transformers
from peft import LoraConfig, get_peft_model
torch.set_num_threads(2)
torch.manual_seed(0)
model_dir, pairs_path, mode, steps, T, B = sys.argv[1:7]
steps, T, B = int(steps), int(T), int(B)
model = transformers.AutoModelForCausalLM.from_pretrained(
    model_dir, torch_dtype=torch.float32, attn_implementation="eager")
if mode == "lora":
    model = get_peft_model(model, LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    frozen = None
else:
    frozen = copy.deepcopy(model).eval()
    for p in frozen.parameters():
        p.requires_grad_(False)
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                        lr=1e-3, weight_decay=0.01)
pairs = [json.loads(l) for l in open(pairs_path)]
P = B // 2


def batch(i):
    tokens = torch.zeros(B, T, dtype=torch.long)
    targets = torch.full((B, T), -100, dtype=torch.long)
    for k in range(P):
        pair = pairs[(i * P + k) % len(pairs)]
        prompt = pair["prompt_ids"]
        for row, key in ((k, "chosen_ids"), (P + k, "rejected_ids")):
            ids = prompt + pair[key]
            tokens[row, :len(ids)] = torch.tensor(ids)
            targets[row, len(prompt) - 1:len(ids) - 1] = torch.tensor(pair[key])
    return tokens, targets


def logps(m, tokens, targets):
    mask = targets != -100
    lp = torch.log_softmax(m(input_ids=tokens, use_cache=False).logits, -1)
    return (lp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            * mask).sum(-1)


times = []
for i in range(steps):
    tokens, targets = batch(i)
    start = time.perf_counter()
    pi = logps(model, tokens, targets)
    with torch.no_grad():
        if frozen is None:
            with model.disable_adapter():
                ref = logps(model, tokens, targets)
        else:
            ref = logps(frozen, tokens, targets)
    z = (pi[:P] - pi[P:]) - (ref[:P] - ref[P:])
    loss = -F.logsigmoid(0.1 * z).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - start)
print(json.dumps({"step_ms": 1000 * statistics.median(times[2:]),
                  "loss": loss.item()}))
"""


def write_pairs(path):
    rng = random.Random(1)
    with open(path, "w") as f:
        for _ in range(PAIRS):
            prompt = [rng.randrange(3, VOCAB) for _ in range(rng.randint(16, 64))]
            answers = [[rng.randrange(3, VOCAB)
                        for _ in range(rng.randint(8, 64))] for _ in range(2)]
            f.write(json.dumps({"prompt_ids": prompt,
                                "chosen_ids": answers[0],
                                "rejected_ids": answers[1]}) + "\n")


def planned(output):
    """The bytes tgc-compile's summary says the executable allocates."""
    found = re.search(r"allocates ([0-9.]+ [KMG]iB)", output)
    return found.group(1) if found else "?"


def tgc_step(bins, tmp, name, compile_args, run_args):
    model = os.path.join(tmp, "llama.mlir")
    exe = os.path.join(tmp, name + ".tgx")
    compiled = run([f"{bins}/tgc-compile", model, "-o", exe] + compile_args)
    metrics = os.path.join(tmp, name + ".jsonl")
    run([f"{bins}/tgc-run", exe, "--steps", str(STEPS), "--metrics", metrics,
         "--quiet", "--threads", "2"] + run_args)
    rows = [json.loads(line) for line in open(metrics)]
    elapsed = [row["elapsed_s"] for row in rows]
    steps = [b - a for a, b in zip(elapsed, elapsed[1:])][1:]
    return {"step_ms": 1000 * statistics.median(steps),
            "loss": rows[-1]["loss"],
            "planned": planned(compiled.stdout + compiled.stderr)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench",
                                                      "PREFERENCE.md"))
    args = parser.parse_args()
    bins = os.path.join(args.build, "bin")
    data_tool = os.path.join(ROOT, "tools", "python", "tgc-data.py")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "llama")
        run([HF47, "-c", MAKE_MODEL, model_dir])
        pairs = os.path.join(tmp, "pairs.jsonl")
        write_pairs(pairs)
        data = os.path.join(tmp, "pairs.tgcd")
        run(["/usr/bin/python3", data_tool, "encode", "--input", pairs, "-o",
             data, "--vocab-size", str(VOCAB)])
        with open(os.path.join(tmp, "llama.mlir"), "w") as f:
            f.write(run([f"{bins}/tgc-models", "llama", "--from-hf",
                         model_dir, "--batch", str(BATCH), "--seq-len",
                         str(T)]).stdout)
        weights = ["--load-weights", model_dir]
        rows.append(("tgc, LoRA, supervised (the model's own loss)",
                     tgc_step(bins, tmp, "sft", [f"--lora={LORA}"],
                              weights + ["--data", "synthetic"])))
        rows.append(("tgc, LoRA, DPO (reference: adapters off)",
                     tgc_step(bins, tmp, "dpo-lora",
                              [f"--lora={LORA}", "--loss=dpo"],
                              weights + ["--data", data])))
        rows.append(("tgc, full, DPO (reference: frozen copy)",
                     tgc_step(bins, tmp, "dpo-full", ["--loss=dpo"],
                              weights + ["--data", data])))
        for mode, label in (("lora", "PyTorch + PEFT, LoRA, DPO "
                             "(disable_adapter)"),
                            ("full", "PyTorch, full, DPO (deep copy)")):
            out = run([HF47, "-c", TORCH_DPO, model_dir, pairs, mode,
                       str(STEPS), str(T), str(BATCH)]).stdout
            result = json.loads(out.strip().splitlines()[-1])
            result["planned"] = "-"
            rows.append((label, result))

        # Llama-3-8B, planned only.
        big = os.path.join(tmp, "llama3.mlir")
        with open(big, "w") as f:
            f.write(run([f"{bins}/tgc-models", "llama", "--preset",
                         "llama-3-8b", "--batch", "4", "--seq-len", "1024"]
                        ).stdout)
        common = ["--amp=bf16", "--remat=blocks", "--fuse"]
        plans = [
            ("LoRA, bf16 base, supervised",
             [f"--lora={LORA}", "--frozen-dtype=bf16"]),
            ("LoRA, bf16 base, DPO (adapters off)",
             [f"--lora={LORA}", "--frozen-dtype=bf16", "--loss=dpo"]),
            ("LoRA, NF4 base, DPO (adapters off)",
             [f"--lora={LORA}", "--frozen-dtype=bf16",
              "--quantize-frozen=nf4", "--loss=dpo"]),
            ("full, bf16 weights, 8-bit AdamW, supervised",
             ["--master-weights=bf16", "--optimizer-state=8bit"]),
            ("full, bf16 weights, 8-bit AdamW, DPO (frozen copy)",
             ["--master-weights=bf16", "--optimizer-state=8bit",
              "--loss=dpo"]),
        ]
        big_rows = []
        for label, flags in plans:
            out = run([f"{bins}/tgc-compile", big, "-o", "/dev/null"] +
                      common + flags)
            big_rows.append((label, planned(out.stdout + out.stderr)))

    lines = [
        "# DPO: tgc's compiled step beside PyTorch's",
        "",
        "Generated by `/usr/bin/python3 bench/preference.py` on "
        f"{machine(bins)}; PyTorch 1.13 (Debian's), transformers 4.47.1, "
        "PEFT 0.13. Method: the script's docstring. Correctness is "
        "`test/e2e/torch/preference-vs-peft.test` (the same losses and "
        "metrics as the papers' formulas on transformers' model).",
        "",
        f"A small Llama (4 layers, hidden 256, vocab 2048), {BATCH // 2} "
        f"pairs a batch ({BATCH} rows of {T} tokens), 2 threads, median "
        f"step of {STEPS}:",
        "",
        "| run | step (ms) | planned memory | loss at the last step |",
        "|---|---|---|---|",
    ]
    for label, result in rows:
        lines.append(f"| {label} | {result['step_ms']:.1f} | "
                     f"{result['planned']} | {result['loss']:.4f} |")
    lines += [
        "",
        "The losses of tgc's and PyTorch's runs differ because their "
        "adapters start from other random draws and PyTorch's batches are "
        "taken in file order; the step times compare the same work.",
        "",
        "Llama-3-8B, B=4 (2 pairs), T=1024, `--amp=bf16 --remat=blocks "
        "--fuse`, as `tgc-compile` plans it (not run):",
        "",
        "| step | planned memory |",
        "|---|---|",
    ]
    for label, size in big_rows:
        lines.append(f"| {label} | {size} |")
    lines += [
        "",
        "With LoRA, DPO's reference is the same weights with the adapters "
        "off: it adds one forward pass and its transient activations, no "
        "weights. Full fine-tuning's reference is a frozen copy of the "
        "trained weights as they start (TRL's deep copy): their bytes once "
        "more.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
