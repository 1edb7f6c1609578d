"""8-bit and 4-bit optimizer state (tgc-compile --optimizer-state=8bit|4bit)
against f32 state, and Adafactor beside them, in one run: training curves
(a tiny GPT-2 on the built-in task, a 2-layer GPT-2 on a token file of
text), the 4-bit state against torchao's AdamW4bit on the text task over
several seeds (PyTorch's side in bench/torchao_optim.py, in the venv
scripts/setup-torchao.sh makes; skipped without it), the optimizer state
and planned peak of GPT-2 124M and 1558M, and the CPU time of the update
itself.
Writes bench/OPTIM8.md and its plots.

Usage: python3 bench/optim8.py [--build DIR] [--quick]"""
import argparse
import glob
import json
import os
import struct
import subprocess
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import ROOT, machine, run  # noqa: E402

GiB = 1024 ** 3
MiB = 1024 ** 2


def train(bins, model, tmp, flags, steps, data=None, seed=1):
    exe = os.path.join(tmp, "train.tgx")
    run([f"{bins}/tgc-compile", model, "-o", exe] + flags)
    metrics = os.path.join(tmp, "train.jsonl")
    cmd = [f"{bins}/tgc-run", exe, "--steps", str(steps), "--quiet",
           "--device", "cpu", "--seed", str(seed), "--metrics", metrics]
    if data:
        cmd += ["--data", data]
    run(cmd)
    rows = [json.loads(line) for line in open(metrics)]
    return [row["loss"] for row in rows], rows[-1]["elapsed_s"]


def smooth(values, window):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def text_tokens(path):
    """A token file of real text: the bytes of this repository's C++ and
    Markdown sources as raw uint16 tokens (vocabulary 256)."""
    data = b""
    for pattern in ("lib/**/*.cpp", "runtime/src/**/*.cpp", "*.md",
                    "bench/*.md"):
        for name in sorted(glob.glob(os.path.join(ROOT, pattern),
                                     recursive=True)):
            data += open(name, "rb").read()
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{len(data)}H", *data))
    return len(data)


# The text task's model: GPT-2, 2 layers, 4 heads, C=128, V=256, T=128, B=8
# (bench/torchao_optim.py builds the same in PyTorch).
TEXT_MODEL = (2, 4, 128, 256, 128, 8)


def text_model(bins, tmp):
    L, H, C, V, T, B = TEXT_MODEL
    two = os.path.join(tmp, "two.mlir")
    run([f"{bins}/tgc-models", "gpt2", "--n-layer", str(L), "--n-head",
         str(H), "--n-embd", str(C), "--vocab-size", str(V), "--block-size",
         str(T), "--seq-len", str(T), "--batch", str(B), "-o", two])
    return two


def curves(bins, tmp, quick):
    results = []
    tiny = os.path.join(tmp, "tiny.mlir")
    run([f"{bins}/tgc-models", "gpt2", "--preset", "tiny", "-o", tiny])
    two = text_model(bins, tmp)
    tokens = os.path.join(tmp, "text.bin")
    count = text_tokens(tokens)
    runs = [("tiny GPT-2 (2 layers, C=64), built-in task", tiny, None,
             100 if quick else 1000, "optim8-tiny.png"),
            (f"GPT-2 2 layers, C=128, T=128 on a token file ({count} "
             "byte tokens of text)", two, tokens, 60 if quick else 1000,
             "optim8-tokens.png")]
    for title, model, data, steps, image in runs:
        f32, f32_time = train(bins, model, tmp, [], steps, data)
        q8, q8_time = train(bins, model, tmp, ["--optimizer-state=8bit"],
                            steps, data)
        q4, q4_time = train(bins, model, tmp, ["--optimizer-state=4bit"],
                            steps, data)
        # The run-to-run spread the comparison sits in: f32 state again,
        # with another seed (initialisation and data order).
        other, _ = train(bins, model, tmp, [], steps, data, seed=2)
        factor, factor_time = train(bins, model, tmp,
                                    ["--optimizer=adafactor"], steps, data)
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(smooth(f32, 20), label="AdamW, f32 state")
        ax.plot(smooth(q8, 20), label="AdamW, 8-bit state", linestyle="--")
        ax.plot(smooth(q4, 20), label="AdamW, 4-bit state", linestyle="-.")
        ax.plot(smooth(other, 20), label="AdamW, f32 state, seed 2",
                linestyle=":", alpha=0.7)
        ax.plot(smooth(factor, 20), label="Adafactor", alpha=0.7)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (mean of 20 steps)")
        ax.set_title(title, fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(ROOT, "bench", image), dpi=100)
        plt.close(fig)
        last = max(1, steps // 20)

        def end(losses):
            return sum(losses[-last:]) / last
        results.append((title, steps, end(f32), end(q8), end(q4),
                        end(other), end(factor), f32_time, q8_time, q4_time,
                        factor_time, image))
    return results, tokens, two


TORCH2 = os.path.join(ROOT, ".venv-torch2", "bin", "python")


def final(losses):
    last = max(1, len(losses) // 20)
    return sum(losses[-last:]) / last


def against_torchao(bins, tmp, tokens, model, steps, seeds):
    """Each seed: tgc's text-task model with f32, 8-bit and 4-bit state, and
    PyTorch's with torch.optim.AdamW and torchao's AdamW8bit and AdamW4bit;
    final losses. None without the torch 2 venv."""
    if not os.path.exists(TORCH2):
        return None
    rows = []
    for seed in seeds:
        row = {}
        for name, flags in (("f32", []), ("8bit", ["--optimizer-state=8bit"]),
                            ("4bit", ["--optimizer-state=4bit"])):
            losses, _ = train(bins, model, tmp, flags, steps, tokens, seed)
            row["tgc " + name] = final(losses)
        for name in ("f32", "8bit", "4bit"):
            out = os.path.join(tmp, "torch.json")
            subprocess.run([TORCH2, os.path.join(ROOT, "bench",
                                                 "torchao_optim.py"), tokens]
                           + [str(x) for x in TEXT_MODEL]
                           + [str(steps), str(seed), name, out], check=True,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            row["torch " + name] = final(json.load(open(out))["losses"])
        rows.append((seed, row))
        print(seed, row, flush=True)
    versions = subprocess.run(
        [TORCH2, "-c", "import torch, torchao; "
         "print(torch.__version__, torchao.__version__)"],
        capture_output=True, text=True, check=True).stdout.split()
    return rows, versions


def memory(bins, tmp, presets):
    rows = []
    for preset in presets:
        model = os.path.join(tmp, f"{preset}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "--batch", "8",
             "--seq-len", "1024", "-o", model])
        for amp in ([], ["--amp=bf16"]):
            line = {}
            for name, flags in (("f32", []),
                                ("8bit", ["--optimizer-state=8bit"]),
                                ("4bit", ["--optimizer-state=4bit"]),
                                ("adafactor", ["--optimizer=adafactor"])):
                exe = os.path.join(tmp, "m.tgx")
                report = exe + ".json"
                run([f"{bins}/tgc-compile", model, "-o", exe,
                     "--memory-report", report] + amp + flags)
                data = json.load(open(report))
                state = sum(t["bytes"] for t in data["persistent"]
                            if t["kind"] == "optimizer_state")
                params = sum(t["bytes"] for t in data["persistent"]
                             if t["kind"] == "params")
                line[name] = (state, params,
                              data["persistent_bytes"] + data["arena_bytes"])
            rows.append((preset, "bf16 autocast" if amp else "f32", line))
    return rows


def update_times(bins, tmp, quick):
    """A step that is almost only the update: loss = sum(w * x) over one
    16M-element parameter (gradient = x)."""
    n = 1 << 22 if quick else 1 << 24
    model = os.path.join(tmp, "update.mlir")
    with open(model, "w") as f:
        f.write(f"""func.func @update(%x: tensor<{n}xf32> {{tg.input = "x"}},
    %w: tensor<{n}xf32> {{tg.param = "w", tg.init = #tg.init<normal(0.0, 0.02)>}}) -> tensor<f32> attributes {{tg.model}} {{
  %0 = tg.mul %x, %w : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  %1 = tg.reduce_sum %0 {{axes = array<i64: 0>}} : tensor<{n}xf32> -> tensor<f32>
  return %1 : tensor<f32>
}}
""")
    # Two batches of gradients: a .safetensors file of [2, n] (raw f32).
    data = os.path.join(tmp, "update.safetensors")
    header = json.dumps({"x": {"dtype": "F32", "shape": [2, n],
                               "data_offsets": [0, 8 * n]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(data, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        values = [((i * 7919) % 1000 - 500) * 1e-4 for i in range(1000)]
        chunk = struct.pack("<1000f", *values)
        for _ in range(2 * n // 1000):
            f.write(chunk)
        f.write(chunk[:4 * (2 * n % 1000)])
    configs = [("AdamW, f32 state", []),
               ("AdamW, 8-bit state", ["--optimizer-state=8bit"]),
               ("AdamW, 4-bit state", ["--optimizer-state=4bit"]),
               ("SGD momentum, f32 state", ["--optimizer=sgd",
                                            "--momentum=0.9"]),
               ("SGD momentum, 8-bit state", ["--optimizer=sgd",
                                              "--momentum=0.9",
                                              "--optimizer-state=8bit"]),
               ("Adafactor (a vector: full second moment)",
                ["--optimizer=adafactor"])]
    exes = {}
    for name, flags in configs:
        exe = os.path.join(tmp, f"update{len(exes)}.tgx")
        run([f"{bins}/tgc-compile", model, "-o", exe] + flags)
        exes[name] = exe
    steps = 5
    times = {name: float("inf") for name in exes}
    for _ in range(3):
        for name, exe in exes.items():
            metrics = os.path.join(tmp, "u.jsonl")
            run([f"{bins}/tgc-run", exe, "--steps", str(steps + 1),
                 "--quiet", "--device", "cpu", "--data", data,
                 "--metrics", metrics])
            rows = [json.loads(line) for line in open(metrics)]
            mean = (rows[-1]["elapsed_s"] - rows[0]["elapsed_s"]) / steps
            times[name] = min(times[name], mean)
    return n, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true",
                    help="fewer steps, 124M only (a smoke run)")
    args = ap.parse_args()
    bins = os.path.join(args.build, "bin")
    with tempfile.TemporaryDirectory() as tmp:
        trained, tokens, two = curves(bins, tmp, args.quick)
        compared = against_torchao(bins, tmp, tokens, two,
                                   60 if args.quick else 1000,
                                   [1] if args.quick else [1, 2, 3])
        mem = memory(bins, tmp, ["124M"] if args.quick else ["124M", "1558M"])
        n, times = update_times(bins, tmp, args.quick)

    def rel(x, ref):
        return f"{(x - ref) / ref * 100:+.2f}%"

    out = ["# 8-bit and 4-bit optimizer state against f32 state", "",
           "Measured by `python3 bench/optim8.py` on one machine in one run "
           f"({machine(bins)}); nothing here is copied from elsewhere. "
           "`tgc-compile --optimizer-state=8bit` runs tg-quantize-optimizer-"
           "state: bitsandbytes' blockwise dynamic quantization, block 256; "
           "`--optimizer-state=4bit` the 4-bit AdamW state of Li et al. as "
           "torchao's AdamW4bit keeps it (signed dynamic map for the first "
           "moment, linear map without zero for the second, block 128, two "
           "codes a byte); tensors under 4096 elements keep f32 state.", "",
           "## Training: final loss", "",
           "AdamW with f32, 8-bit and 4-bit state from the same seed, "
           "the f32 run again with another seed (the spread between runs "
           "that differ only in initialisation and data order), and "
           "Adafactor (factored second moment, Hugging Face's defaults).", "",
           "| run | steps | AdamW f32 | 8-bit | 8-bit vs f32 | 4-bit | "
           "4-bit vs f32 | f32, seed 2 | seed 2 vs f32 | Adafactor | time "
           "f32 / 8-bit / 4-bit / Adafactor |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (title, steps, f32_end, q8_end, q4_end, other_end, factor_end,
         f32_time, q8_time, q4_time, factor_time, _) in trained:
        out.append(f"| {title} | {steps} | {f32_end:.4f} | {q8_end:.4f} | "
                   f"{rel(q8_end, f32_end)} | {q4_end:.4f} | "
                   f"{rel(q4_end, f32_end)} | {other_end:.4f} | "
                   f"{rel(other_end, f32_end)} | {factor_end:.4f} | "
                   f"{f32_time:.1f} / {q8_time:.1f} / {q4_time:.1f} / "
                   f"{factor_time:.1f} s |")
    out += ["", "Final loss: the mean of the last 5% of steps. Curves (mean "
            "of 20 steps):", ""]
    for title, *_, image in trained:
        out.append(f"![{title}]({image})")
    out += ["", "## 4-bit state against torchao's AdamW4bit", ""]
    if compared is None:
        out.append("Not measured: `bash scripts/setup-torchao.sh` makes the "
                   "venv with torch 2 and torchao that this part needs.")
    else:
        rows, (torch_version, torchao_version) = compared
        L, H, C, V, T, B = TEXT_MODEL
        out += [f"The text task's model (GPT-2, {L} layers, C={C}, T={T}, "
                f"B={B}, 1000 steps unless --quick) in tgc and in PyTorch "
                f"{torch_version} (`bench/torchao_optim.py`: the same shapes "
                "and initialisation, random windows of the same token file), "
                "each with f32 AdamW state and with 8-bit and 4-bit state: "
                f"tgc's, and torchao {torchao_version}'s AdamW8bit and "
                "AdamW4bit. The two frameworks draw different initial "
                "weights and windows from a seed, so compare each one's "
                "quantized runs with its own f32 run. Final loss: the mean "
                "of the last 5% of steps.", "",
                "| seed | tgc f32 | tgc 8-bit | vs f32 | tgc 4-bit | vs f32 | "
                "PyTorch f32 | torchao 8-bit | vs f32 | torchao 4-bit | "
                "vs f32 |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        gaps = {k: [] for k in ("tgc 8bit", "tgc 4bit", "torch 8bit",
                                "torch 4bit")}
        for seed, r in rows:
            cells = [str(seed)]
            for side in ("tgc", "torch"):
                ref = r[f"{side} f32"]
                cells.append(f"{ref:.4f}")
                for bits in ("8bit", "4bit"):
                    value = r[f"{side} {bits}"]
                    gaps[f"{side} {bits}"].append((value - ref) / ref)
                    cells += [f"{value:.4f}", rel(value, ref)]
            out.append("| " + " | ".join(cells) + " |")

        def mean(key):
            return f"{sum(gaps[key]) / len(gaps[key]) * 100:+.2f}%"
        out.append(f"| mean | | | {mean('tgc 8bit')} | | {mean('tgc 4bit')} "
                   f"| | | {mean('torch 8bit')} | | {mean('torch 4bit')} |")
    out += ["", "## Memory: optimizer state and planned peak (B=8, T=1024, "
            "AdamW)", "",
            "| model | compute | params | AdamW state f32 | 8-bit | "
            "ratio | 4-bit | ratio | Adafactor state | planned peak f32 | "
            "8-bit | 4-bit | Adafactor |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for preset, compute, line in mem:
        s32, p32, peak32 = line["f32"]
        s8, _, peak8 = line["8bit"]
        s4, _, peak4 = line["4bit"]
        sf, _, peakf = line["adafactor"]
        out.append(f"| GPT-2 {preset} | {compute} | {p32 / GiB:.2f} GiB | "
                   f"{s32 / GiB:.3f} GiB | {s8 / GiB:.3f} GiB | "
                   f"{s8 / s32:.3f}x | {s4 / GiB:.3f} GiB | "
                   f"{s4 / s32:.3f}x | {sf / MiB:.1f} MiB | "
                   f"{peak32 / GiB:.2f} GiB | {peak8 / GiB:.2f} GiB | "
                   f"{peak4 / GiB:.2f} GiB | {peakf / GiB:.2f} GiB |")
    out += ["", "The state counts every byte the plan holds for the optimizer: "
            "moments, absmax, the f32 state of small tensors, the step and the "
            "learning rate. With bf16 autocast the master weights and the "
            "state stay f32 (8-bit, 4-bit), so the state is the same; the peak "
            "differs by the activations. Adafactor keeps n + m values for "
            "an n x m matrix and a full second moment for vectors (no first "
            "moment).", "",
            f"## CPU time of the update ({n} elements, "
            f"{len(os.sched_getaffinity(0))} threads)", "",
            "A step whose work is almost only the update (loss = sum(w * x)); "
            "mean of 5 steps, best of 3 interleaved rounds.", "",
            "| optimizer | step time | per element |", "|---|---|---|"]
    for name, t in times.items():
        out.append(f"| {name} | {t * 1e3:.1f} ms | {t / n * 1e9:.2f} ns |")
    path = os.path.join(ROOT, "bench", "OPTIM8.md")
    open(path, "w").write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
