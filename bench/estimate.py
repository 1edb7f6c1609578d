"""The roofline estimate of GPT-2 124M's training step on an H100.

tgc-compile --estimate=h100 predicts each op's time from its FLOPs and the
bytes its CUDA kernel moves (tgc/Analysis/Roofline.h). This script compiles
GPT-2 124M (T=1024, AdamW) at B=16 and B=8 in f32, f32 with --allow-tf32
and --amp=bf16, and tabulates the estimated step time, the model FLOPs
utilisation, the planned memory, and the op kinds that take the time.

The estimate of the code as it stood before the GPU-speed work (issue 14)
is kept in bench/estimate-baseline.json (written by --save-baseline at
that commit) and printed beside the current one.

Writes bench/ESTIMATE.md.

  /usr/bin/python3 bench/estimate.py [--build build] [--save-baseline]
"""
import argparse
import json
import os
import tempfile

from common import ROOT, allocated, compile_report, run

GiB = 1024 ** 3
BASELINE = os.path.join(ROOT, "bench", "estimate-baseline.json")
CONFIGS = [("f32", []), ("f32, --allow-tf32", ["--allow-tf32"]),
           ("bf16 (--amp=bf16)", ["--amp=bf16"]),
           ("bf16, --fuse", ["--amp=bf16", "--fuse"])]
BATCHES = (16, 8)


def estimate(bins, tmp, model, flags):
    out = os.path.join(tmp, "estimate.json")
    exe, step, _, entries = compile_report(
        bins, model, tmp, flags + ["--estimate=h100", f"--estimate-json={out}"])
    result = json.load(open(out))
    result["allocated_bytes"] = allocated(step, entries)
    for entry in result["entries"]:
        del entry["ops"]  # the kinds are what the tables show
    return result


def measure(bins, tmp):
    results = {}
    for batch in BATCHES:
        model = os.path.join(tmp, f"gpt2-{batch}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", "124M", "--batch",
             str(batch), "--seq-len", "1024", "-o", model])
        for name, flags in CONFIGS:
            results[f"B={batch} {name}"] = estimate(bins, tmp, model, flags)
    return results


def kinds_of(result):
    """Seconds by op kind over the whole optimizer step."""
    kinds = {}
    for entry in result["entries"]:
        for kind in entry["kinds"]:
            kinds[kind["kind"]] = kinds.get(kind["kind"], 0) + \
                entry["runs_per_step"] * kind["seconds"]
    return kinds


def launches(result):
    """Kernels, products and copies a step puts on the stream."""
    return result["launches"]


def moved(result):
    """Bytes a step moves through device memory."""
    return sum(entry["runs_per_step"] * entry["bytes"]
               for entry in result["entries"])


def launch_table(result, top=14):
    """Kernels a step by op kind, most first."""
    kinds = {}
    for entry in result["entries"]:
        for kind in entry["kinds"]:
            kinds[kind["kind"]] = kinds.get(kind["kind"], 0) + \
                entry["runs_per_step"] * kind["launches"]
    names = sorted(kinds, key=lambda k: (-kinds[k], k))
    lines = ["| op kind | kernels a step | share |", "|---|---|---|"]
    total = sum(kinds.values())
    for name in names[:top]:
        lines.append(f"| `{name}` | {kinds[name]:,} | "
                     f"{100 * kinds[name] / total:.1f}% |")
    rest = sum(kinds[k] for k in names[top:])
    if rest:
        lines.append(f"| (other kinds) | {rest:,} | {100 * rest / total:.1f}% |")
    return "\n".join(lines)


def ms(seconds):
    return f"{seconds * 1e3:.2f}"


def summary_table(results, baseline):
    lines = ["| configuration | estimated step (ms) | MFU | tokens/s "
             "(estimated) | planned memory (GiB) | kernels a step | "
             "GB moved a step |"
             + (" baseline step (ms) | baseline MFU | baseline memory (GiB) |"
                if baseline else ""),
             "|---|---|---|---|---|---|---|" +
             ("---|---|---|" if baseline else "")]
    for name, result in results.items():
        batch = int(name.split()[0][2:])
        tokens = batch * 1024 / result["step_seconds"]
        row = (f"| {name} | {ms(result['step_seconds'])} | "
               f"{100 * result['mfu']:.1f}% of {result['peak_type']} | "
               f"{tokens:,.0f} | {result['allocated_bytes'] / GiB:.2f} | "
               f"{launches(result):,} | {moved(result) / 1e9:.1f} |")
        if baseline:
            old = baseline["results"].get(name)
            row += (f" {ms(old['step_seconds'])} | "
                    f"{100 * old['mfu']:.1f}% | "
                    f"{old['allocated_bytes'] / GiB:.2f} |" if old else
                    " | | |")
        lines.append(row)
    return "\n".join(lines)


def kind_table(result, old, top=12):
    kinds = kinds_of(result)
    old_kinds = kinds_of(old) if old else {}
    total = result["step_seconds"]
    # Most time first (now or in the baseline), ties by name.
    names = sorted(sorted(set(kinds) | set(old_kinds)),
                   key=lambda k: -max(kinds.get(k, 0), old_kinds.get(k, 0)))
    lines = ["| op kind | estimated time (ms) | share |"
             + (" baseline (ms) |" if old else ""),
             "|---|---|---|" + ("---|" if old else "")]
    for name in names[:top]:
        row = (f"| `{name}` | {ms(kinds.get(name, 0))} | "
               f"{100 * kinds.get(name, 0) / total:.1f}% |")
        if old:
            row += f" {ms(old_kinds.get(name, 0))} |"
        lines.append(row)
    rest = sum(v for k, v in kinds.items() if k not in names[:top])
    if rest:
        lines.append(f"| (other kinds) | {ms(rest)} | "
                     f"{100 * rest / total:.1f}% |" + (" |" if old else ""))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--save-baseline", action="store_true")
    args = parser.parse_args()
    bins = os.path.join(args.build, "bin")
    commit = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]
                 ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        results = measure(bins, tmp)
    if args.save_baseline:
        json.dump({"commit": commit, "results": results},
                  open(BASELINE, "w"), indent=1)
        return
    baseline = json.load(open(BASELINE)) if os.path.exists(BASELINE) else None
    device = results[next(iter(results))]["device"]
    out = [
        "# The roofline estimate of GPT-2 124M on an H100",
        "",
        "Generated by `bench/estimate.py` (`/usr/bin/python3 bench/estimate.py`)"
        f" at commit {commit}. The baseline columns "
        "(`bench/estimate-baseline.json`) are the same cost model applied to "
        f"the CUDA backend and pipeline of commit {baseline['commit']}, before "
        "the GPU-speed work: attention in f32 GEMMs over a materialised score "
        "matrix (on f32 copies of 16-bit operands), and under `--amp` an f32 "
        "copy of the logits for the loss and a second [B, T, V] buffer for "
        "its gradient. Since then, 16-bit attention runs fused on tensor "
        "cores, the loss reads and overwrites the 16-bit logits, and "
        "`--fuse` puts bias and GELU into the GEMMs' epilogues. No GPU has "
        "measured any of it yet." if baseline else "",
        "",
        f"`tgc-compile --estimate=h100` on GPT-2 124M (T=1024, AdamW), device "
        f"{device['description']}: {device['memory_bandwidth'] / 1e9:,.0f} GB/s, "
        f"matrix TFLOP/s f32 {device['matmul_flops']['f32'] / 1e12:g}, tf32 "
        f"{device['matmul_flops']['tf32'] / 1e12:g}, bf16 "
        f"{device['matmul_flops']['bf16'] / 1e12:g}. Each op takes the longer "
        "of its compute time and its memory time (its operands, results and "
        "the scratch traffic of the kernel tgc runs); the step is their sum. "
        "It is a lower bound that assumes every kernel reaches its roofline "
        "and no launch gaps; a GPU run measures how far each kernel is from "
        "it. MFU is the model's FLOPs (without recomputation) over the "
        "estimated time and the matrix peak of the type most matrix FLOPs "
        "run in. Planned memory is what `tgc-run` allocates: the persistent "
        "region and the largest arena. *Kernels a step* counts what the "
        "step puts on the GPU's stream (kernels, cuBLASLt products, copies, "
        "memsets, scratch allocations), the nodes of the CUDA graph "
        "`tgc-run` captures and launches once a step (on the emulator the "
        "captured graph holds exactly this count: "
        "test/cuda-emu/estimate-launches.test); *GB moved* is the bytes "
        "its ops read and write.",
        "",
        summary_table(results, baseline),
        "",
    ]
    for name in ("B=16 f32", "B=16 bf16 (--amp=bf16)", "B=16 bf16, --fuse"):
        out += [f"## Where the time goes: {name}", "",
                kind_table(results[name],
                           baseline["results"].get(name) if baseline else None),
                ""]
    out += ["## What a step launches: B=8 bf16, --fuse", "",
            "With `--fuse`, mixed precision's casts fold into the ops "
            "beside them (tg-fold-casts: optimizer updates, residual adds "
            "and norm gradients read 16-bit values, norms write them), the "
            "parameters' casts to 16 bits run as one multi-tensor op "
            "(tg-group-casts) and adjacent AdamW updates as another "
            "(tg-group-updates), 256 tensors a launch; the residual adds "
            "run in the norms' kernels (tg-fuse-residuals), attention "
            "reads the fused QKV projection's output in place and writes "
            "one gradient, so no split or concat runs (tg-pack-qkv), the "
            "bias gradients and GELU's gradient come out of the backward "
            "GEMMs' epilogues (tg-fuse-bias-grads: BGRADA, DGELU_BGRAD), "
            "and the loss computes its gradient in the same pass over the "
            "logits (tg-fuse-loss). In every configuration the tied "
            "embedding's scatter starts from the classifier's gradient "
            "(tg-accumulate-products).", "",
            launch_table(results["B=8 bf16, --fuse"]), ""]
    path = os.path.join(ROOT, "bench", "ESTIMATE.md")
    open(path, "w").write("\n".join(out))
    print(open(path).read())


if __name__ == "__main__":
    main()
