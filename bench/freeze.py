"""Freezing: what training part of a model saves, in memory and in time.

1. GPT-2 124M and 1558M (B=8, T=1024, AdamW, --amp=bf16): the planned peak
   (persistent region + transient arena, by category) with everything
   trained, with the bottom half frozen (the embeddings and the first half
   of the blocks: --freeze), with the frozen half stored in bf16
   (--frozen-dtype=bf16), with LoRA rank 8 on the attention projections
   (c_attn, attn.c_proj), with LoRA over a bf16 base, and that with
   activation checkpointing (--remat=blocks).
2. Measured CPU step time of a small GPT-2 (4 layers, C=256, T=256, B=8),
   everything trained against the bottom half frozen, in one run.

Writes bench/FREEZE.md.

  /usr/bin/python3 bench/freeze.py [--build build] [--quick]
"""
import argparse
import json
import os
import tempfile

from common import ROOT, best_step_times, cpu_name, run, small_gpt2

GiB = 1024 ** 3
MiB = 1024 ** 2


def bottom_half(layers):
    """--freeze patterns for the embeddings and the first half of the
    blocks."""
    blocks = ",".join(f"transformer.h.{i}.*" for i in range(layers // 2))
    return f"transformer.wte.*,transformer.wpe.*,{blocks}"


def compile_report(bins, model, tmp, flags):
    exe = os.path.join(tmp, "m.tgx")
    report = exe + ".json"
    run([f"{bins}/tgc-compile", model, "-o", exe, "--memory-report", report]
        + flags)
    data = json.load(open(report))
    kinds = {}
    for tensor in data["persistent"]:
        kinds[tensor["kind"]] = kinds.get(tensor["kind"], 0) + tensor["bytes"]
    return exe, data, kinds


def memory_table(bins, tmp, presets):
    lines = ["| model | configuration | trained params | frozen params | "
             "optimizer state | transient arena | planned peak | vs all "
             "trained |", "|---|---|---|---|---|---|---|---|"]
    for preset, layers in presets:
        model = os.path.join(tmp, f"{preset}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "--batch", "8",
             "--seq-len", "1024", "-o", model])
        lora = "--lora=rank=8,alpha=16,targets=attn.c_attn,attn.c_proj"
        configs = [("everything trained", []),
                   ("bottom half frozen", [f"--freeze={bottom_half(layers)}"]),
                   ("bottom half frozen, stored in bf16",
                    [f"--freeze={bottom_half(layers)}", "--frozen-dtype=bf16"]),
                   ("LoRA r=8 on attention", [lora]),
                   ("LoRA r=8 on attention, base in bf16",
                    [lora, "--frozen-dtype=bf16"]),
                   ("LoRA r=8, base in bf16, --remat=blocks",
                    [lora, "--frozen-dtype=bf16", "--remat=blocks"])]
        base = None
        for name, flags in configs:
            _, data, kinds = compile_report(bins, model, tmp,
                                            ["--amp=bf16"] + flags)
            peak = data["persistent_bytes"] + data["arena_bytes"]
            base = base or peak
            lines.append(
                f"| GPT-2 {preset} | {name} | "
                f"{kinds.get('params', 0) / GiB:.2f} GiB | "
                f"{kinds.get('frozen_params', 0) / GiB:.2f} GiB | "
                f"{kinds.get('optimizer_state', 0) / GiB:.2f} GiB | "
                f"{data['arena_bytes'] / GiB:.2f} GiB | {peak / GiB:.2f} GiB | "
                f"{(peak - base) / base * 100:+.1f}% |")
    return lines


def step_times(bins, tmp, steps):
    model = os.path.join(tmp, "small.mlir")
    small_gpt2(bins, model)
    configs = [("everything trained", []),
               ("bottom half frozen", [f"--freeze={bottom_half(4)}"])]
    exes = {}
    for name, flags in configs:
        exe = os.path.join(tmp, f"small-{len(exes)}.tgx")
        report = exe + ".json"
        run([f"{bins}/tgc-compile", model, "-o", exe, "--memory-report",
             report] + flags)
        data = json.load(open(report))
        exes[name] = (exe, data["persistent_bytes"] + data["arena_bytes"],
                      data["flops"])
    times = best_step_times(bins, {name: exes[name][0] for name, _ in configs},
                            steps, tmp)
    base = configs[0][0]
    lines = ["| configuration | planned peak | step FLOPs | step time | vs all "
             "trained |", "|---|---|---|---|---|"]
    for name, _ in configs:
        _, peak, flops = exes[name]
        lines.append(f"| {name} | {peak / MiB:.1f} MiB | {flops / 1e9:.2f} "
                     f"GFLOP | {times[name] * 1e3:.1f} ms | "
                     f"{(times[name] / times[base] - 1) * 100:+.1f}% |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true",
                    help="124M only and fewer timed steps")
    args = ap.parse_args()
    bins = os.path.join(args.build, "bin")
    presets = [("124M", 12)] if args.quick else [("124M", 12), ("1558M", 48)]
    steps = 5 if args.quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        memory = memory_table(bins, tmp, presets)
        times = step_times(bins, tmp, steps)
    cpu = cpu_name()
    out = ["# Freezing", "",
           "Generated by `/usr/bin/python3 bench/freeze.py`; every figure "
           "below is measured in the run that wrote this file.", "",
           "## Planned memory", "",
           "GPT-2, B=8, T=1024, AdamW, `--amp=bf16`, from tg-plan-memory's "
           "report. The bottom half is the embeddings (wte, tied to the LM "
           "head, and wpe) and the first half of the blocks "
           "(`--freeze=transformer.wte.*,transformer.wpe.*,"
           "transformer.h.0.*,...`). A frozen parameter has no gradient, no "
           "AdamW state and no update, and the backward pass stops at the "
           "first trained block, so the activations below it are not kept: "
           "the arena shrinks as well as the persistent region. "
           "`--frozen-dtype=bf16` stores the frozen weights in 2 bytes. "
           "LoRA (`--lora=rank=8,alpha=16,targets=attn.c_attn,attn.c_proj`) "
           "freezes the whole base and trains the adapters: trained params "
           "are the adapters, and the backward pass still runs through "
           "every block (the adapters of block 0 need it), so the arena "
           "keeps the activations LoRA's matmuls read.", ""] + memory + [
           "", "## CPU step time", "",
           "GPT-2 with 4 layers, C=256, 4 heads, T=256, B=8, V=512, f32, on "
           f"the CPU backend ({cpu}); mean of {steps} steps after 2 warm-up "
           "steps, best of 3 interleaved rounds. Step FLOPs are the cost "
           "interface's count of the compiled step.", ""] + times + [""]
    with open(os.path.join(ROOT, "bench", "FREEZE.md"), "w") as f:
        f.write("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
