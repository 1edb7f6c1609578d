"""The CPU backend against PyTorch eager and its per-op profile:
bench/CPU.md.

Table 1 times a training step (AdamW, f32) of two GPT-2s at 1 and 2
threads: tgc (tgc-run --threads N; its GEMMs cut into shape-fixed tiles on
its own threads, and for comparison with TGC_GEMM=openblas, each GEMM
threaded by OpenBLAS itself) and Hugging Face's GPT2LMHeadModel on
Debian's PyTorch 1.13 (torch.set_num_threads(N), OPENBLAS_NUM_THREADS=N),
both as they come and with OpenBLAS made to run the kernels of this CPU's
instruction sets (OPENBLAS_CORETYPE, what tgc-run sets by itself).

Table 2 is tgc-run --profile's time per op kind on the small GPT-2 at 2
threads, with this issue's changes (vectorized math, threaded kernels,
OpenBLAS's kernels chosen from the instruction sets) and without them
(TGC_VECMATH=libm, --threads 1, OpenBLAS's own choice of kernels).

Start-up (loading weights, initialising) is bench/startup.py's
(bench/STARTUP.md).

  /usr/bin/python3 bench/cpu.py [--build build]
"""
import argparse
import json
import os
import subprocess
import tempfile

from common import ROOT, kernel_set, machine, run

# The step-time note when OpenBLAS does not know the CPU model (common in
# virtual machines) and falls back to slower kernels than tgc-run picks.
FALLBACK_NOTE = """  PyTorch as installed gets OpenBLAS's fallback kernels on a CPU model
  OpenBLAS 0.3.21 does not know, so the fair comparison is against the
  OPENBLAS_CORETYPE column."""
NOTES = """## Reading the tables

- **Step time.** tgc's GEMMs run on OpenBLAS's kernels for this CPU's
  instruction sets.{fallback} PyTorch's 2-thread times are worse
  than its 1-thread ones here: its OpenMP threads and OpenBLAS's pthreads
  contend for the two cores. tgc runs its kernels and its GEMM tiles on
  one OpenMP team. Tiling costs about 2% against OpenBLAS's own threading
  (the two tgc columns), and makes the results the same bits at any thread
  count on every kernel set.
- **Profile.** The matrix products are most of the step once the rest is
  threaded and vectorized; GELU and its gradient (tanh) and the
  elementwise kernels shrink the most.
- **Start-up** (loading weights, initialising): see
  [STARTUP.md](STARTUP.md).
"""
VENV_PY = os.path.join(ROOT, ".venv-hf", "bin", "python")
TORCH = os.path.join(ROOT, "bench", "torch_gpt2.py")
SHAPES = {"small": dict(L=4, H=4, C=256, V=512, T=128, B=8),
          "124M": dict(L=12, H=12, C=768, V=50257, T=128, B=2)}
STEPS = {"small": 12, "124M": 5}


def openblas_detects():
    """The kernels OpenBLAS picks by itself on this CPU."""
    code = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
            "l.openblas_get_corename.restype = ctypes.c_char_p; "
            "print(l.openblas_get_corename().decode())")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    return subprocess.run(["/usr/bin/python3", "-c", code], env=env,
                          check=True, capture_output=True,
                          text=True).stdout.strip()


def tgc_model(bins, tmp, name, shape, flags=()):
    mlir = os.path.join(tmp, f"{name}.mlir")
    exe = os.path.join(tmp, f"{name}.tgx")
    s = shape
    run([f"{bins}/tgc-models", "gpt2", "--n-layer", str(s["L"]), "--n-head",
         str(s["H"]), "--n-embd", str(s["C"]), "--vocab-size", str(s["V"]),
         "--block-size", str(max(s["T"], 1024) if s["V"] > 1000 else s["T"]),
         "--seq-len", str(s["T"]), "--batch", str(s["B"]), "-o", mlir])
    run([f"{bins}/tgc-compile", mlir, "-o", exe] + list(flags))
    return exe


def tgc_step_ms(bins, exe, threads, steps, tmp, env=None, profile=False):
    metrics = os.path.join(tmp, "m.jsonl")
    cmd = [f"{bins}/tgc-run", exe, "--steps", str(steps), "--threads",
           str(threads), "--quiet", "--metrics", metrics]
    if profile:
        cmd.append("--profile")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, **(env or {})})
    rows = [json.loads(line) for line in open(metrics)]
    steps_rows = [r for r in rows if "loss" in r]
    ms = (steps_rows[-1]["elapsed_s"] - steps_rows[1]["elapsed_s"]) / (
        len(steps_rows) - 2) * 1000
    prof = rows[-1].get("profile", {}).get("step") if profile else None
    return ms, prof


def torch_step_ms(shape, threads, steps, coretype=None):
    s = shape
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads),
           "OMP_NUM_THREADS": str(threads)}
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([VENV_PY, TORCH, "step"] + [str(s[k]) for k in
                         "LHCVTB"] + [str(threads), str(steps)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def step_table(bins, tmp, lines, coretype):
    lines += ["## Step time: tgc against PyTorch eager", "",
              "A training step (forward, loss, backward, AdamW), f32, the "
              "mean of the steps after the first two; one run each (tgc's "
              "two columns: best of two interleaved runs). "
              "*PyTorch* is Hugging Face's GPT2LMHeadModel (transformers "
              "4.30, eager attention) on Debian's torch 1.13, as installed "
              f"(its OpenBLAS picks its kernels by itself: here "
              f"{openblas_detects()}) and with OPENBLAS_CORETYPE={coretype}, "
              "the kernels tgc-run picks from the CPU's instruction sets. "
              "*tgc, OpenBLAS threads*: tgc with TGC_GEMM=openblas, each "
              "GEMM one OpenBLAS call threaded by OpenBLAS (its results "
              "depend on the thread count on some kernel sets); *tgc*: the "
              "GEMM cut into tiles fixed by its shape, one single-threaded "
              "OpenBLAS call each on tgc's threads (the same bits at any "
              "thread count). "
              "*ratio*: tgc's time over PyTorch's best at any thread count.",
              "",
              "| model | threads | tgc ms | tgc, OpenBLAS threads, ms | "
              f"PyTorch ms | PyTorch ms ({coretype}) | ratio |",
              "|---|---|---|---|---|---|---|"]
    for name, shape in SHAPES.items():
        exe = tgc_model(bins, tmp, name, shape)
        rows = []
        for threads in (1, 2):
            # The two GEMM designs interleaved, best of 2 runs each: the
            # difference between them is the figure asked for.
            tgc, blas = float("inf"), float("inf")
            for _ in range(2):
                tgc = min(tgc, tgc_step_ms(bins, exe, threads, STEPS[name],
                                           tmp)[0])
                blas = min(blas, tgc_step_ms(bins, exe, threads, STEPS[name],
                                             tmp,
                                             env={"TGC_GEMM": "openblas"})[0])
            plain = torch_step_ms(shape, threads, STEPS[name])
            forced = torch_step_ms(shape, threads, STEPS[name], coretype)
            rows.append((threads, tgc, blas, plain, forced))
        best = min(min(r[3], r[4]) for r in rows)
        label = ("GPT-2 L=4 H=4 C=256 V=512, B=8 T=128" if name == "small"
                 else "GPT-2 124M, B=2 T=128")
        for threads, tgc, blas, plain, forced in rows:
            lines.append(f"| {label} | {threads} | {tgc:.0f} | {blas:.0f} "
                         f"| {plain:.0f} | {forced:.0f} | {tgc / best:.2f} |")
            print(lines[-1], flush=True)
    lines.append("")


def profile_table(bins, tmp, lines, detected):
    exe = tgc_model(bins, tmp, "small", SHAPES["small"])
    off_env = {"TGC_VECMATH": "libm", "OPENBLAS_CORETYPE": detected}
    before_ms, before = tgc_step_ms(bins, exe, 1, 8, tmp, off_env, True)
    after_ms, after = tgc_step_ms(bins, exe, 2, 8, tmp, None, True)
    lines += ["## Where the step's time goes, per op kind", "",
              "tgc-run --profile on the small GPT-2 (B=8, T=128), ms per "
              "step (the mean over steps 2 to 8). *without*: the math "
              "through libm (TGC_VECMATH=libm), one thread, and OpenBLAS's "
              f"own choice of kernels ({detected}); *with*: SLEEF's "
              "vectorized math, 2 threads for every kernel and OpenBLAS's "
              "kernels chosen from the instruction sets.", "",
              f"Step time: {before_ms:.0f} ms without, {after_ms:.0f} ms "
              "with.", "",
              "| op kind | ops | without, ms | with, ms | speed-up |",
              "|---|---|---|---|---|"]
    kinds_after = {k["kind"]: k for k in after["kinds"]}
    for kind in before["kinds"]:
        now = kinds_after.get(kind["kind"], {"ms": 0.0})
        speed = kind["ms"] / now["ms"] if now["ms"] > 0 else float("inf")
        lines.append(f"| {kind['kind']} | {kind['ops']} | {kind['ms']:.2f} "
                     f"| {now['ms']:.2f} | {speed:.1f}x |")
    lines.append(f"| **total** | | {before['ms']:.1f} | {after['ms']:.1f} | "
                 f"{before['ms'] / after['ms']:.1f}x |")
    lines.append("")
    print("\n".join(lines[-8:]), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench",
                                                      "CPU.md"))
    args = parser.parse_args()
    bins = os.path.join(args.build, "bin")
    lines = ["# CPU speed", "",
             "Generated by `/usr/bin/python3 bench/cpu.py` on "
             f"{machine(bins)}; every figure is "
             "from one run of the script. Debian's torch 1.13 and "
             "transformers 4.30 (the `.venv-hf` that "
             "scripts/install-deps.sh makes).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        coretype = kernel_set(bins)[0]
        detected = openblas_detects()
        step_table(bins, tmp, lines, coretype)
        profile_table(bins, tmp, lines, detected)
    lines.append(NOTES.format(
        fallback="" if detected == coretype else "\n" + FALLBACK_NOTE))
    open(args.out, "w").write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
