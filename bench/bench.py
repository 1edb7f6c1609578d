"""tgc's benchmarks. Runs each measurement side by side with its
alternative in one run and writes the tables in bench/README.md.

  /usr/bin/python3 bench/bench.py [--build build] [--quick]

1. Compile time of the full pipeline (tgc-compile: parse, autodiff, memory
   plan, lowering) for GPT-2 124M and 1558M at B=8, T=1024.
2. The planned memory of the GPT-2 124M training step (B=8, T=1024,
   AdamW) next to the analytic count 4P params + 4P grads + 8P Adam state +
   activations, with the activations counted by hand below.
3. CPU step time of the tiny GPT-2 in tgc-run and in PyTorch eager, same
   model, same batch size, same optimizer, same thread count.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

from common import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GiB = 1024 ** 3
MiB = 1024 ** 2


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw)


def compile_times(bins, tmp, repeats):
    rows = []
    for preset in ["124M", "1558M"]:
        model = os.path.join(tmp, f"gpt2-{preset}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "-o", model])
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run([f"{bins}/tgc-compile", model, "-o",
                 os.path.join(tmp, f"gpt2-{preset}.tgx")])
            times.append(time.perf_counter() - start)
        gen = []
        for _ in range(repeats):
            start = time.perf_counter()
            run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "-o",
                 os.path.join(tmp, "scratch.mlir")])
            gen.append(time.perf_counter() - start)
        ops = len(open(model).read().splitlines())
        rows.append((preset, statistics.median(gen), statistics.median(times),
                     os.path.getsize(os.path.join(tmp, f"gpt2-{preset}.tgx"))))
    return rows


def memory_plan(bins, tmp):
    model = os.path.join(tmp, "gpt2-124M.mlir")
    report = os.path.join(tmp, "plan.json")
    run([f"{bins}/tgc-compile", model, "-o", os.path.join(tmp, "p.tgx"),
         "--memory-report", report])
    plan = json.load(open(report))
    P = 124_439_808
    B, T, C, L, V = 8, 1024, 768, 12, 50257
    unit = B * T * C * 4
    # Saved for backward per block (f32, in units of B*T*C): the block's
    # input and ln_1 output (1+1), q, k, v and the attention output (4), the
    # attention output back in [B,T,C] (1), the residual and ln_2 output
    # (1+1), c_fc's output and GELU's output (4+4): 17. Then ln_f's input
    # and output (2) and the logits [B,T,V].
    activations = L * 17 * unit + 2 * unit + B * T * V * 4
    analytic = {"params": 4 * P, "grads": 4 * P, "optimizer_state": 8 * P,
                "activations": activations}
    peak = plan["peak"]["breakdown"]
    return plan, analytic, peak


TORCH_STEP = r'''
import math, sys, time, torch, torch.nn.functional as F
threads, steps, B, T, L, H, C, V = (int(v) for v in sys.argv[1:9])
torch.set_num_threads(threads)
torch.manual_seed(0)
def p(*shape, std=0.02): return (torch.randn(*shape) * std).requires_grad_(True)
def z(*shape): return torch.zeros(*shape, requires_grad=True)
def o(*shape): return torch.ones(*shape, requires_grad=True)
wte, wpe = p(V, C), p(T, C)
blocks = [dict(l1w=o(C), l1b=z(C), aw=p(C, 3*C), ab=z(3*C), pw=p(C, C), pb=z(C),
               l2w=o(C), l2b=z(C), fw=p(C, 4*C), fb=z(4*C), mw=p(4*C, C), mb=z(C))
          for _ in range(L)]
lfw, lfb = o(C), z(C)
params = [wte, wpe, lfw, lfb] + [t for b in blocks for t in b.values()]
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
mask = torch.ones(T, T, dtype=torch.bool).tril()
tokens = torch.randint(0, V, (B, T)); targets = torch.roll(tokens, -1, 1)
def step():
    x = wte[tokens] + wpe[:T]
    for b in blocks:
        h = F.layer_norm(x, (C,), b["l1w"], b["l1b"], 1e-5)
        q, k, v = (h @ b["aw"] + b["ab"]).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        a = ((q @ k.transpose(-2, -1)) / math.sqrt(C // H)).masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + ((a @ v).transpose(1, 2).reshape(B, T, C) @ b["pw"] + b["pb"])
        h = F.layer_norm(x, (C,), b["l2w"], b["l2b"], 1e-5)
        x = x + (F.gelu(h @ b["fw"] + b["fb"], approximate="tanh") @ b["mw"] + b["mb"])
    x = F.layer_norm(x, (C,), lfw, lfb, 1e-5)
    loss = F.cross_entropy((x @ wte.t()).view(B * T, V), targets.view(-1))
    opt.zero_grad(); loss.backward(); opt.step()
for _ in range(5): step()
start = time.perf_counter()
for _ in range(steps): step()
print((time.perf_counter() - start) / steps)
'''


def cpu_step(bins, tmp, steps, threads):
    cfg = dict(B=8, T=64, L=2, H=4, C=64, V=256)
    model = os.path.join(tmp, "tiny.mlir")
    run([f"{bins}/tgc-models", "gpt2", "--preset", "tiny", "-o", model])
    exe = os.path.join(tmp, "tiny.tgx")
    run([f"{bins}/tgc-compile", model, "-o", exe])
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    metrics = os.path.join(tmp, "tiny.jsonl")
    run([f"{bins}/tgc-run", exe, "--steps", str(steps + 5), "--quiet",
         "--metrics", metrics], env=env)
    rows = [json.loads(l) for l in open(metrics)]
    # Time the steps after the first five, as for PyTorch.
    tgc = (rows[-1]["elapsed_s"] - rows[4]["elapsed_s"]) / steps
    torch_s = float(run(["/usr/bin/python3", "-c", TORCH_STEP, str(threads),
                         str(steps), *(str(cfg[k]) for k in "BTLHCV")],
                        env=env).stdout)
    return tgc, torch_s, cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bins = os.path.join(args.build, "bin")
    repeats = 1 if args.quick else 5
    steps = 20 if args.quick else 100
    with tempfile.TemporaryDirectory() as tmp:
        compile_rows = compile_times(bins, tmp, repeats)
        plan, analytic, peak = memory_plan(bins, tmp)
        step_rows = [(t,) + cpu_step(bins, tmp, steps, t) for t in (1, 2)]

    import torch
    lines = ["# tgc benchmarks", "",
             f"Measured by `/usr/bin/python3 bench/bench.py` on {machine(bins)}, "
             f"{platform.system()} "
             f"{platform.release()}; PyTorch {torch.__version__} (CPU). "
             f"Medians of {repeats} runs where repeated.", "",
             "Mixed precision and memory: [AMP.md](AMP.md) (`bench/amp.py`). "
             "GPU: `bench/gpu/bench_gpu.py` writes gpu/README.md on a GPU "
             "machine. Rematerialization and in-place reuse: "
             "[REMAT.md](REMAT.md) (`bench/remat.py`). Freezing and LoRA: "
             "[FREEZE.md](FREEZE.md) (`bench/freeze.py`). 8-bit and 4-bit "
             "optimizer state (4-bit beside torchao's AdamW4bit): "
             "[OPTIM8.md](OPTIM8.md) (`bench/optim8.py`). Gradient "
             "accumulation and the batch for a memory budget: "
             "[ACCUM.md](ACCUM.md) (`bench/accum.py`). The roofline "
             "estimate of GPT-2 124M on an H100: [ESTIMATE.md](ESTIMATE.md) "
             "(`bench/estimate.py`). Padding (max, dynamic, "
             "length-grouped) on a skewed dataset: [PADDING.md](PADDING.md) "
             "(`bench/padding.py`). Data parallelism (memory per rank at 1 "
             "to 64 ranks, step time at 1 and 2 ranks): "
             "[DISTRIBUTED.md](DISTRIBUTED.md) (`bench/distributed.py`). CPU "
             "speed against PyTorch eager (1 and 2 threads), the per-op "
             "profile with and without vectorized math and threads, and the "
             "time to the first step against `from_pretrained`: "
             "[CPU.md](CPU.md) (`bench/cpu.py`). The Llama family (planned "
             "memory of 7-8B models by technique, CPU step time against "
             "transformers): [MODELS.md](MODELS.md) (`bench/models.py`). "
             "Importing PyTorch models (import time and memory of GPT-2 124M "
             "and a 1B Llama, the imported plan beside tgc-models'): "
             "[IMPORT.md](IMPORT.md) (`bench/import.py`). "
             "Fitting full fine-tuning in a budget (each technique alone "
             "and combined, and what `--fit` chooses, for GPT-2 1558M and "
             "Llama-3-8B): [FIT.md](FIT.md) (`bench/fit.py`). "
             "Fuzzing record: "
             "[FUZZ.md](FUZZ.md) (`scripts/fuzz.sh`).", "",
             "## Compile time (GPT-2, B=8, T=1024, AdamW)", "",
             "`tgc-models` generates and verifies the model; `tgc-compile` "
             "parses it, runs tg-autodiff, plans memory and writes the .tgx.",
             "", "| model | tgc-models | tgc-compile | .tgx size |",
             "|---|---|---|---|"]
    for preset, gen, comp, size in compile_rows:
        lines.append(f"| {preset} | {gen:.3f} s | {comp:.3f} s | "
                     f"{size / 1024:.0f} KiB |")
    lines += ["", "## Planned memory of the GPT-2 124M step (B=8, T=1024, "
              "AdamW, f32)", "",
              "Analytic: 4 bytes per parameter for weights and for gradients, "
              "8 for Adam's two moments (P = 124,439,808), and the "
              "activations saved for backward counted by hand (17 f32 "
              "[B,T,C] tensors per block, ln_f's input and output, and the "
              "[B,T,V] logits; see bench.py). Planned: tg-plan-memory's "
              "breakdown at the peak, where the backward pass has just "
              "started, so no parameter gradient exists yet and the "
              "workspace is the logits' gradient.", "",
              "| | analytic | planned (at the peak) |", "|---|---|---|"]
    for key in ["params", "grads", "optimizer_state", "activations"]:
        lines.append(f"| {key} | {analytic[key] / GiB:.2f} GiB | "
                     f"{peak[key] / GiB:.2f} GiB |")
    lines.append(f"| workspace | - | {peak['workspace'] / GiB:.2f} GiB |")
    total_analytic = sum(analytic.values())
    total_plan = plan["persistent_bytes"] + plan["arena_bytes"]
    lines += [f"| **total** | **{total_analytic / GiB:.2f} GiB** | "
              f"**{total_plan / GiB:.2f} GiB** (persistent "
              f"{plan['persistent_bytes'] / GiB:.2f} + arena "
              f"{plan['arena_bytes'] / GiB:.2f}) |", "",
              f"Arena {plan['arena_bytes']:,} bytes against a peak of "
              f"simultaneously live bytes of {plan['peak_live_bytes']:,}: "
              f"ratio {plan['arena_bytes'] / plan['peak_live_bytes']:.4f} "
              "(the requirement is at most 1.02).", "",
              "## CPU step time, tiny GPT-2 (2 layers, 4 heads, 64 wide, "
              "vocabulary 256, B=8, T=64, AdamW)", "",
              f"Mean of {steps} steps after 5 warm-up steps; tgc-run on the "
              "built-in task, PyTorch eager on random tokens (same shapes, "
              "same work).", "",
              "| threads | tgc-run | PyTorch eager | tgc / PyTorch |",
              "|---|---|---|---|"]
    for threads, tgc, torch_s, cfg in step_rows:
        lines.append(f"| {threads} | {tgc * 1e3:.2f} ms | "
                     f"{torch_s * 1e3:.2f} ms | {tgc / torch_s:.2f} |")
    out = os.path.join(ROOT, "bench", "README.md")
    open(out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
