"""GPU benchmark: the GPT-2 124M training step (AdamW, T=1024) at B=8 and
B=16, in f32 and in bf16 mixed precision, tgc-run on the CUDA backend next
to the same model and optimizer in PyTorch eager (bf16: torch.autocast) on
the same GPU, in one run. Writes bench/gpu/README.md (or --out) with the
device name.

  /usr/bin/python3 bench/gpu/bench_gpu.py [--build build] [--steps 20]
      [--prebuilt DIR] [--bins DIR] [--out FILE]
  /usr/bin/python3 bench/gpu/bench_gpu.py --prepare DIR

A GPU machine without MLIR (or without network to install it) runs the
executables compiled elsewhere: `--prepare DIR` writes
DIR/gpt2-b{8,16}-{f32,bf16,bf16-fused}.tgx here, and `--prebuilt DIR` benchmarks them
there with only tgc-run (from --bins). scripts/gpu-bundle.sh packs all of
it.

Needs a GPU. PyTorch needs CUDA support (torch.cuda.is_available()); when it
has none the PyTorch column says so.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GiB = 1024 ** 3

TORCH = r'''
import math, sys, time, torch, torch.nn.functional as F
B, T, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
precision = sys.argv[4]
L, H, C, V = 12, 12, 768, 50257
dev = "cuda"
torch.manual_seed(0)
def p(*s, std=0.02): return (torch.randn(*s, device=dev) * std).requires_grad_(True)
def z(*s): return torch.zeros(*s, device=dev, requires_grad=True)
def o(*s): return torch.ones(*s, device=dev, requires_grad=True)
wte, wpe = p(V, C), p(1024, C)
blocks = [dict(l1w=o(C), l1b=z(C), aw=p(C, 3*C), ab=z(3*C), pw=p(C, C), pb=z(C),
               l2w=o(C), l2b=z(C), fw=p(C, 4*C), fb=z(4*C), mw=p(4*C, C), mb=z(C))
          for _ in range(L)]
lfw, lfb = o(C), z(C)
params = [wte, wpe, lfw, lfb] + [t for b in blocks for t in b.values()]
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
tokens = torch.randint(0, V, (B, T), device=dev); targets = torch.roll(tokens, -1, 1)
def forward():
    x = wte[tokens] + wpe[:T]
    for b in blocks:
        h = F.layer_norm(x, (C,), b["l1w"], b["l1b"], 1e-5)
        q, k, v = (h @ b["aw"] + b["ab"]).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) \
            if hasattr(F, "scaled_dot_product_attention") else None
        if y is None:
            a = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
            a = a.masked_fill(torch.ones(T, T, device=dev, dtype=torch.bool).tril().logical_not(), float("-inf")).softmax(-1)
            y = a @ v
        x = x + (y.transpose(1, 2).reshape(B, T, C) @ b["pw"] + b["pb"])
        h = F.layer_norm(x, (C,), b["l2w"], b["l2b"], 1e-5)
        x = x + (F.gelu(h @ b["fw"] + b["fb"], approximate="tanh") @ b["mw"] + b["mb"])
    x = F.layer_norm(x, (C,), lfw, lfb, 1e-5)
    return F.cross_entropy((x @ wte.t()).view(B * T, V), targets.view(-1))
def step():
    if precision == "bf16":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward()
    else:
        loss = forward()
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
for _ in range(3): step()
torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
start = time.perf_counter()
for _ in range(steps): step()
torch.cuda.synchronize()
print(json.dumps({"step_s": (time.perf_counter() - start) / steps,
                  "peak_bytes": torch.cuda.max_memory_allocated(),
                  "device": torch.cuda.get_device_name(0),
                  "torch": torch.__version__}))
'''.replace("import math, sys", "import json, math, sys")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw)


PRECISIONS = ("f32", "bf16", "bf16-fused")
# tgc-compile's flags for each row; PyTorch runs the precision before "-".
FLAGS = {"f32": [], "bf16": ["--amp=bf16"],
         "bf16-fused": ["--amp=bf16", "--fuse"]}
BATCHES = (8, 16)

# Plans measured on the device: what tgc-compile planned, what tgc-run
# allocated, and the most the GPU's memory held while it ran (nvidia-smi,
# less what it held before: the CUDA context and cuBLAS's own workspace are
# in it, the plan does not count them). (name, file stem, tgc-models
# arguments, tgc-compile flags, steps)
PLANS = [
    ("GPT-2 124M, B=8: bf16, 8-bit state", "plan-gpt2-124m-8bit",
     ["gpt2", "--preset", "124M", "--batch", "8"],
     ["--amp=bf16", "--optimizer-state=8bit"], 20),
    ("the same, state in host memory (`--offload=optimizer`)",
     "plan-gpt2-124m-8bit-offload",
     ["gpt2", "--preset", "124M", "--batch", "8"],
     ["--amp=bf16", "--optimizer-state=8bit", "--offload=optimizer"], 20),
    ("GPT-2 124M, B=8: bf16, 8-bit state, checkpointing (`--remat=blocks`)",
     "plan-gpt2-124m-8bit-remat",
     ["gpt2", "--preset", "124M", "--batch", "8"],
     ["--amp=bf16", "--optimizer-state=8bit", "--remat=blocks"], 20),
    ("the same, the state and the checkpoints in host memory "
     "(`--offload=all`)", "plan-gpt2-124m-8bit-remat-offload-all",
     ["gpt2", "--preset", "124M", "--batch", "8"],
     ["--amp=bf16", "--optimizer-state=8bit", "--remat=blocks",
      "--offload=all"], 20),
    ("GPT-2 1558M, B=8, T=1024: `--fit=10GiB --fit-allow=all`",
     "plan-gpt2-1558m-fit",
     ["gpt2", "--preset", "1558M", "--batch", "8", "--seq-len", "1024"],
     ["--fit=10GiB", "--fit-allow=all"], 5),
    ("Llama-3-8B, B=2, T=2048: `--fit=18GiB --fit-allow=all`",
     "plan-llama3-8b-fit",
     ["llama", "--preset", "llama-3-8b", "--batch", "2", "--seq-len", "2048"],
     ["--fit=18GiB", "--fit-allow=all"], 3),
]


def prepare_plans(bins, directory, large):
    """Compiles PLANS into DIRECTORY (the two large models only with
    LARGE); each executable gets STEM.tgx.plan.json with the compile
    summary's planned bytes and the configuration chosen."""
    for name, stem, model_args, flags, steps in PLANS:
        if not large and "124m" not in stem:
            continue
        model = os.path.join(directory, stem + ".mlir")
        exe = os.path.join(directory, stem + ".tgx")
        run([f"{bins}/tgc-models"] + model_args + ["-o", model])
        done = run([f"{bins}/tgc-compile", model, "-o", exe,
                    "--estimate=h100", f"--estimate-json={exe}.estimate.json"]
                   + flags)
        summary = [l for l in done.stderr.splitlines() if "allocates" in l][-1]
        chose = re.search(r"--fit chose (.*?): [\d.]+ \w+ \(", done.stderr)
        json.dump({"summary": summary.strip(),
                   "planned": re.search(r"allocates ([\d.]+ \w+)",
                                        summary).group(1),
                   "chose": chose.group(1) if chose else
                   " ".join(flags)},
                  open(exe + ".plan.json", "w"))
        os.remove(model)
        print(exe)


# The longest one plan's run may take (Llama-3-8B initialises 8 billion
# parameters on the host first).
TIMEOUT_S = 150


def profile_kinds(bins, exe):
    """tgc-run --profile's time per op kind for EXE on the GPU: rows of
    (op kind, ms a step, share), or the error's last line."""
    try:
        out = run([f"{bins}/tgc-run", exe, "--device", "cuda", "--steps", "5",
                   "--profile"], timeout=TIMEOUT_S).stdout
    except subprocess.CalledProcessError as e:
        return (e.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired:
        return f"not done in {TIMEOUT_S} s"
    rows = re.findall(r"^\s+(tg\.\w+)\s+([\d.]+)\s+([\d.]+%)", out, re.M)
    total = re.search(r"CUDA events\): ([\d.]+) ms a run", out)
    return rows, total.group(1) if total else "?"


# Start-up on the device: the executables whose start-up is measured (a
# checkpoint of their own initial values is saved there first).
STARTUP = [("GPT-2 124M, bf16, B=8", "gpt2-b8-bf16"),
           ("GPT-2 1558M, `--fit=10GiB`", "plan-gpt2-1558m-fit")]

SAFETENSORS_LOAD = r'''
import sys, torch
from safetensors.torch import load_file
tensors = load_file(sys.argv[1], device="cuda")
torch.cuda.synchronize()
'''


def wall(cmd, timeout=TIMEOUT_S):
    """The better of two runs' wall seconds from exec to exit."""
    best = None
    for _ in range(2):
        start = time.perf_counter()
        run(cmd, timeout=timeout)
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    return best


def read_once(path):
    start = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass
    return time.perf_counter() - start


def measure_startup(bins, exe, tmp):
    """`tgc-run --device cuda --dry-run`'s wall time from exec to exit,
    without weights and with --load-weights of a checkpoint of the
    executable's own initial values; one read of that file (warm page
    cache: it was just written); safetensors' load_file to the GPU in a
    fresh Python, exec to exit (n/a without safetensors). Returns (file
    MiB, none s, weights s, read s, torch s or None), or the error's last
    line."""
    path = os.path.join(tmp, os.path.basename(exe) + ".safetensors")
    base = [f"{bins}/tgc-run", exe, "--device", "cuda"]
    try:
        run(base + ["--steps", "0", "--save", path], timeout=TIMEOUT_S)
        os.sync()
        none = wall(base + ["--dry-run", "--quiet"])
        loaded = wall(base + ["--dry-run", "--quiet", "--load-weights", path])
    except subprocess.CalledProcessError as e:
        return (e.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired:
        return f"not done in {TIMEOUT_S} s"
    once = min(read_once(path), read_once(path))
    try:
        torch = wall(["python3", "-c", SAFETENSORS_LOAD, path])
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        torch = None
    mib = os.path.getsize(path) / 2 ** 20
    os.remove(path)
    return mib, none, loaded, once, torch


def gpu_memory_mib():
    return int(run(["nvidia-smi", "--query-gpu=memory.used",
                    "--format=csv,noheader,nounits"]).stdout.split()[0])


def measure_plan(bins, exe, steps, tmp):
    """Runs EXE on the GPU while nvidia-smi samples the memory in use every
    20 ms: (step seconds, bytes tgc-run allocated, peak bytes over the
    baseline, host bytes), or the error's last line."""
    metrics = os.path.join(tmp, os.path.basename(exe) + ".jsonl")
    base = gpu_memory_mib()
    poll = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used",
                             "--format=csv,noheader,nounits", "-lms", "20"],
                            stdout=subprocess.PIPE, text=True)
    try:
        out = run([f"{bins}/tgc-run", exe, "--device", "cuda", "--steps",
                   str(steps + 2), "--metrics", metrics],
                  timeout=TIMEOUT_S).stdout
    except subprocess.CalledProcessError as e:
        return (e.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired:
        return f"not done in {TIMEOUT_S} s"
    finally:
        if poll.poll() is None:
            poll.terminate()
    samples = [int(l) for l in poll.communicate()[0].split() if l.isdigit()]
    allocated = int(re.search(r"(\d+) bytes of device memory", out).group(1))
    host = re.search(r"([\d.]+ \w+) of it in host memory", out)
    lines = [json.loads(l) for l in open(metrics)]
    step = (lines[-1]["elapsed_s"] - lines[1]["elapsed_s"]) / steps
    peak = (max(samples) - base) * 2 ** 20 if samples else 0
    return step, allocated, peak, host.group(1) if host else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--bins", help="where tgc-run is (default: BUILD/bin)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--prepare", metavar="DIR")
    ap.add_argument("--prebuilt", metavar="DIR")
    ap.add_argument("--no-large", action="store_true",
                    help="--prepare: leave out the 1558M and 8B plans")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "gpu",
                                                  "README.md"))
    args = ap.parse_args()
    bins = args.bins or os.path.join(args.build, "bin")

    def compile_step(batch, precision, directory):
        model = os.path.join(directory, f"gpt2-b{batch}.mlir")
        exe = os.path.join(directory, f"gpt2-b{batch}-{precision}.tgx")
        run([f"{bins}/tgc-models", "gpt2", "--preset", "124M", "--batch",
             str(batch), "-o", model])
        amp = FLAGS[precision]
        # The roofline estimate of the same step on an H100, printed beside
        # the measurement (the executable carries it to a GPU machine).
        run([f"{bins}/tgc-compile", model, "-o", exe, "--estimate=h100",
             f"--estimate-json={exe}.estimate.json"] + amp)
        return exe

    def estimated(exe):
        path = exe + ".estimate.json"
        if not os.path.exists(path):
            return "n/a"
        return f"{json.load(open(path))['step_seconds'] * 1e3:.1f} ms"

    if args.prepare:
        os.makedirs(args.prepare, exist_ok=True)
        for precision in PRECISIONS:
            for batch in BATCHES:
                print(compile_step(batch, precision, args.prepare))
        prepare_plans(bins, args.prepare, not args.no_large)
        return 0
    device = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
                 ).stdout.strip().splitlines()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision in PRECISIONS:
            for batch in BATCHES:
                metrics = os.path.join(tmp, f"b{batch}-{precision}.jsonl")
                exe = (os.path.join(args.prebuilt,
                                    f"gpt2-b{batch}-{precision}.tgx")
                       if args.prebuilt else
                       compile_step(batch, precision, tmp))
                def measure(extra):
                    try:
                        out = run([f"{bins}/tgc-run", exe, "--device", "cuda",
                                   "--steps", str(args.steps + 3), "--metrics",
                                   metrics, *extra]).stdout
                        allocated = int(re.search(
                            r"(\d+) bytes of device memory", out).group(1))
                        lines = [json.loads(l) for l in open(metrics)]
                        step = ((lines[-1]["elapsed_s"] -
                                 lines[2]["elapsed_s"]) / args.steps)
                        return (step, allocated)
                    except subprocess.CalledProcessError as e:
                        return e.stderr.strip().splitlines()[-1]
                # The step as one CUDA graph (the default), and kernel by
                # kernel.
                ours = measure([])
                kernels = measure(["--cuda-graphs=off"])
                try:
                    ref = json.loads(run(["python3", "-c", TORCH, str(batch),
                                          "1024", str(args.steps),
                                          precision.split("-")[0]]).stdout)
                except (subprocess.CalledProcessError, ValueError):
                    ref = None
                rows.append((precision, batch, ours, kernels, ref,
                             estimated(exe)))
        plans = []
        if not args.prebuilt:
            prepare_plans(bins, tmp, True)
        for name, stem, model_args, flags, steps in PLANS:
            exe = os.path.join(args.prebuilt or tmp, stem + ".tgx")
            if not os.path.exists(exe):
                continue
            info = json.load(open(exe + ".plan.json"))
            plans.append((name, info, measure_plan(bins, exe, steps, tmp),
                          estimated(exe)))
        profiled = profile_kinds(bins, os.path.join(
            args.prebuilt or tmp, "gpt2-b8-bf16-fused.tgx"))
        startup = []
        for name, stem in STARTUP:
            exe = os.path.join(args.prebuilt or tmp, stem + ".tgx")
            if os.path.exists(exe):
                startup.append((name, measure_startup(bins, exe, tmp)))

    tokens = lambda b, s: b * 1024 / s
    lines = ["# GPU benchmarks", "",
             f"GPT-2 124M training step, AdamW, T=1024, on {device}. "
             f"Measured by `python3 bench/gpu/bench_gpu.py`: mean of "
             f"{args.steps} steps after 3 warm-up steps. bf16 is tgc's "
             "`--amp=bf16` (bf16-fused adds `--fuse`) against "
             "`torch.autocast(dtype=torch.bfloat16)`, "
             "both with f32 master weights. tgc's step runs as one CUDA "
             "graph (the default); *kernel by kernel* is the same run "
             "with `--cuda-graphs=off`. tgc's memory is what its CUDA "
             "backend allocated (persistent region, arena, GEMM workspace, "
             "input staging); PyTorch's is "
             "`torch.cuda.max_memory_allocated()`. The estimate is "
             "`tgc-compile --estimate=h100` of the same executable: the "
             "roofline of an H100 SXM (bench/ESTIMATE.md), a lower bound of "
             "the step.", "",
             "| precision | B | tgc step | tgc tokens/s | tgc memory | "
             "tgc step, kernel by kernel | "
             "tgc estimate (H100 roofline) | "
             "PyTorch step | PyTorch tokens/s | PyTorch peak memory |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for precision, batch, ours, kernels, ref, estimate in rows:
        if isinstance(ours, tuple):
            step, allocated = ours
            mine = (f"{step * 1e3:.1f} ms | {tokens(batch, step):,.0f} | "
                    f"{allocated / GiB:.2f} GiB")
        else:
            mine = f"failed: {ours} | | "
        mine += (f" | {kernels[0] * 1e3:.1f} ms" if isinstance(kernels, tuple)
                 else f" | failed: {kernels}")
        if ref:
            theirs = (f"{ref['step_s'] * 1e3:.1f} ms | "
                      f"{tokens(batch, ref['step_s']):,.0f} | "
                      f"{ref['peak_bytes'] / GiB:.2f} GiB")
        else:
            theirs = "n/a (no CUDA PyTorch here) | | "
        lines.append(f"| {precision} | {batch} | {mine} | {estimate} | "
                     f"{theirs} |")
    lines += ["", "## Plans on the device", "",
              "Each configuration compiled by `tgc-compile` (the `--fit` rows "
              "search as `bench/FIT.md` does) and run by `tgc-run --device "
              "cuda` in the same run as the table above. *Planned* is the "
              "compile summary's figure; *allocated* is what the CUDA "
              "backend allocated (the plan plus the GEMM workspace and input "
              "staging); *GPU peak* is the most `nvidia-smi` saw in use "
              "while it ran, sampled every 20 ms, less what was in use "
              "before: it includes the CUDA context and cuBLAS's own "
              "memory, which no plan counts.", "",
              "| configuration | chosen | planned | allocated | GPU peak | "
              "host memory | tgc step | estimate (H100 roofline) |",
              "|---|---|---|---|---|---|---|---|"]
    for name, info, measured, estimate in plans:
        if isinstance(measured, tuple):
            step, allocated, peak, host = measured
            cells = (f"{allocated / GiB:.2f} GiB | {peak / GiB:.2f} GiB | "
                     f"{host} | {step * 1e3:.1f} ms")
        else:
            cells = f"failed: {measured} | | |"
        lines.append(f"| {name} | `{info['chose']}` | {info['planned']} | "
                     f"{cells} | {estimate} |")
    lines += ["", "## Where the step's time goes", "",
              "The bf16-fused step at B=8 above, `tgc-run --profile` "
              "(CUDA events around every op, 4 steps after the first; the "
              "events' own cost makes the total a little larger than the "
              "step time above): time per op kind, the largest first.", ""]
    if isinstance(profiled, tuple):
        rows, total = profiled
        lines += [f"Profiled step: {total} ms.", "",
                  "| op kind | ms a step | share |", "|---|---|---|"]
        lines += [f"| `{kind}` | {ms} | {share} |" for kind, ms, share in rows]
    else:
        lines.append(f"Profile failed: {profiled}")
    lines += ["", "## Start-up on the device", "",
              "Wall seconds from exec to exit of `tgc-run --device cuda "
              "--dry-run` (executable, device memory, initial values or the "
              "checkpoint, all on the GPU; no step), the better of two "
              "runs: without weights, and with `--load-weights` of a "
              "checkpoint of the same model's initial values that "
              "`tgc-run --save` wrote there. Beside them one read of that "
              "file (warm page cache) and safetensors' `load_file(path, "
              "device=\"cuda\")` in a fresh Python, exec to exit (importing "
              "torch included).", "",
              "| executable | file MiB | tgc, no weights | "
              "tgc, --load-weights | read once | ratio to one read | "
              "safetensors load_file to cuda |",
              "|---|---|---|---|---|---|---|"]
    for name, measured in startup:
        if isinstance(measured, tuple):
            mib, none, loaded, once, torch = measured
            theirs = f"{torch:.2f} s" if torch is not None else "n/a"
            lines.append(f"| {name} | {mib:.0f} | {none:.2f} s | "
                         f"{loaded:.2f} s | {once:.2f} s | "
                         f"{loaded / once:.2f} | {theirs} |")
        else:
            lines.append(f"| {name} | failed: {measured} | | | | | |")
    open(args.out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
