"""Start-up: the wall time of `tgc-run --dry-run` (everything set up, no
step) from exec to exit, against one read of the weights and Hugging
Face's from_pretrained of the same files: bench/STARTUP.md.

Rows: GPT-2 124M and 1558M, each initialised (no file) and loading a
model.safetensors saved by transformers in f32 and in bf16; a Llama with
Llama-3.2-1B's shape, saved by transformers 4.47 in bf16 as three shards
and an index (max_shard_size 1GB), loaded into f32. Each figure twice:
warm (the files in the page cache) and cold (the page cache dropped before
each measurement, where this process may write /proc/sys/vm/drop_caches).

  /usr/bin/python3 bench/startup.py [--build build] [--no-1558m]
"""
import argparse
import glob
import os
import subprocess
import tempfile
import time

from common import ROOT, machine, run

HF = os.path.join(ROOT, ".venv-hf", "bin", "python")
HF47 = os.path.join(ROOT, ".venv-hf47", "bin", "python")
GPT2 = os.path.join(ROOT, "bench", "torch_gpt2.py")
LLAMA = os.path.join(ROOT, "bench", "torch_llama.py")
DROP = "/proc/sys/vm/drop_caches"
WARM_RUNS = 3

NOTES = """## Reading the table

- *exec to exit*: the wall time of `tgc-run EXE --dry-run --load-weights
  FILE|DIR` around the process: the dynamic loader, reading the
  executable, allocating the persistent region and the arena, drawing
  what no file provides, loading and checking every tensor, and the exit.
  Warm: the best of {runs} runs; cold: one run after dropping the cache.
- *one read*: reading every file of the weights once, front to back, in
  64 MiB pieces into one reused buffer, in this (already started)
  process. *one read into fresh memory*: the same into new memory of each
  file's size, which the kernel zeroes page by page as the read first
  touches it: what a loader must at least do, since the weights have to
  end up in memory of their own (tgc's go into 2 MiB pages, this read's
  into 4 KiB ones). *ratio*: tgc's time over the column before it. A
  bf16 file loaded into f32 weights fills twice the file's bytes.
- *from_pretrained*: timed inside Python around the call alone (torch and
  transformers already imported, which costs another 1-2 s), into f32 for
  tgc's f32 weights; one run.
- tgc reads the tensors in each file's order on max(4, threads) threads,
  a piece of at most 16 MiB each, each reader converting (bf16 to f32)
  and checking (no NaN or infinity) its own pieces, so that a cold file
  has several requests in flight and a warm one is copied on every core.
  The regions are fresh zero pages in 2 MiB huge pages; AdamW's moments
  and everything else no file provides and that starts at zero are not
  written at all. Initial values (the rows without weights) are drawn on
  every thread, Box-Muller's log and cos vectorized (SLEEF) with libm's
  bits kept.
- The process itself costs {floor:.3f} s on this machine (the dry run of
  a 12-parameter MLP). It was 0.065 s warm and 0.55 s cold while tgc-run
  linked cuBLASLt, whose static initialisers ran in every process; the
  CUDA backend now opens it only when a GPU is used.
- The machine is a virtual machine: a cold read comes from the host's
  disk cache as often as from its disk, and the time the guest kernel
  takes to give out fresh pages varies from run to run (the warm figures
  are the best of several runs for that reason).
"""


def can_drop():
    return os.geteuid() == 0 and os.access(DROP, os.W_OK)


def drop():
    os.sync()
    with open(DROP, "w") as f:
        f.write("3\n")


def weight_files(path):
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "*.safetensors")))
    return [path]


def read_once(path):
    """One read of every file into one reused 64 MiB buffer."""
    buffer = bytearray(64 << 20)
    view = memoryview(buffer)
    start = time.perf_counter()
    for name in weight_files(path):
        with open(name, "rb", buffering=0) as f:
            while f.readinto(view):
                pass
    return time.perf_counter() - start


def read_fresh(path):
    """One read of every file into new memory of its size (fresh pages the
    kernel must zero as the read first touches them), as a loader must."""
    start = time.perf_counter()
    for name in weight_files(path):
        with open(name, "rb", buffering=0) as f:
            data = bytearray(os.path.getsize(name))
            f.readinto(data)
            del data
    return time.perf_counter() - start


def tgc_wall(bins, exe, weights=None):
    cmd = [f"{bins}/tgc-run", exe, "--dry-run", "--quiet"]
    if weights:
        cmd += ["--load-weights", weights]
    start = time.perf_counter()
    run(cmd)
    return time.perf_counter() - start


def from_pretrained(kind, folder, dtype):
    if kind == "gpt2":
        cmd = [HF, GPT2, "load", folder]
    else:
        cmd = [HF47, LLAMA, "load", folder, dtype]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def measure(bins, exe, weights, kind, folder, cold):
    """(tgc, read, read into fresh memory, from_pretrained) seconds, warm
    or cold."""
    if cold:
        drop()
        tgc = tgc_wall(bins, exe, weights)
        drop()
        once = read_once(weights)
        drop()
        fresh = read_fresh(weights)
        drop()
        hf = from_pretrained(kind, folder, "f32")
        return tgc, once, fresh, hf
    read_once(weights)  # into the cache
    os.sync()
    tgc = min(tgc_wall(bins, exe, weights) for _ in range(WARM_RUNS))
    once = min(read_once(weights) for _ in range(WARM_RUNS))
    fresh = min(read_fresh(weights) for _ in range(WARM_RUNS))
    hf = from_pretrained(kind, folder, "f32")
    return tgc, once, fresh, hf


def row(lines, model, weights, mib, cache, tgc, once=None, fresh=None,
        hf=None):
    def ratio(base):
        return f"{tgc / base:.2f}" if base else "-"
    cells = [model, weights, f"{mib:.0f}" if mib else "-", cache,
             f"{tgc:.2f}", f"{once:.2f}" if once else "-", ratio(once),
             f"{fresh:.2f}" if fresh else "-", ratio(fresh),
             f"{hf:.2f}" if hf else "-"]
    lines.append("| " + " | ".join(cells) + " |")
    print(lines[-1], flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--no-1558m", action="store_true")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench",
                                                      "STARTUP.md"))
    args = parser.parse_args()
    bins = os.path.join(args.build, "bin")
    caches = ["warm", "cold"] if can_drop() else ["warm"]
    lines = ["# Start-up", "",
             "Generated by `/usr/bin/python3 bench/startup.py` on "
             f"{machine(bins)}; every figure is from one run of the script. "
             "Seconds; tgc-run --dry-run sets up everything a step needs "
             "(executable, memory, initial values or the weights, data) and "
             "exits before the first step." +
             ("" if "cold" in caches else " The page cache could not be "
              "dropped (not root): warm figures only."), "",
             "| model | weights | file MiB | page cache | tgc-run --dry-run, "
             "exec to exit | one read | ratio | one read into fresh memory "
             "| ratio | from_pretrained |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        mlp = os.path.join(tmp, "mlp.tgx")
        run([f"{bins}/tgc-models", "mlp", "--widths", "4,3", "--batch", "2",
             "-o", mlp + ".mlir"])
        run([f"{bins}/tgc-compile", mlp + ".mlir", "-o", mlp])
        floor = min(tgc_wall(bins, mlp) for _ in range(5))
        models = [("GPT-2 124M", "gpt2", dict(L=12, H=12, C=768, V=50257),
                   ["--preset", "124M", "--batch", "2"], [])]
        if not args.no_1558m:
            # 8-bit AdamW state keeps the plan within this machine's
            # memory beside the page cache (the dry run touches only the
            # parameters).
            models.append(("GPT-2 1558M", "gpt2",
                           dict(L=48, H=25, C=1600, V=50257),
                           ["--preset", "1558M", "--batch", "1"],
                           ["--optimizer-state", "8bit"]))
        models.append(("Llama 1.24B (Llama-3.2-1B's shape)", "llama", None,
                       ["--batch", "1"], ["--optimizer-state", "8bit"]))
        for name, kind, s, model_flags, flags in models:
            mlir = os.path.join(tmp, "model.mlir")
            exe = os.path.join(tmp, "model.tgx")
            dtypes = ["f32", "bf16"] if kind == "gpt2" else ["bf16"]
            folders = {}
            for dtype in dtypes:
                folder = os.path.join(tmp, f"hf-{dtype}")
                if kind == "gpt2":
                    cmd = [HF, GPT2, "save", str(s["L"]), str(s["H"]),
                           str(s["C"]), str(s["V"]), folder, dtype]
                else:
                    cmd = [HF47, LLAMA, "save", folder, dtype, "1GB"]
                subprocess.run(cmd, check=True, capture_output=True)
                folders[dtype] = folder
            if kind == "gpt2":
                run([f"{bins}/tgc-models", "gpt2", "--seq-len", "128",
                     "-o", mlir] + model_flags)
            else:
                run([f"{bins}/tgc-models", "llama", "--from-hf",
                     folders["bf16"], "--seq-len", "128", "-o", mlir] +
                    model_flags)
            run([f"{bins}/tgc-compile", mlir, "-o", exe] + flags)
            if kind == "gpt2":
                wall = min(tgc_wall(bins, exe) for _ in range(WARM_RUNS))
                row(lines, name, "none (initialised)", None, "-", wall)
            for dtype, folder in folders.items():
                weights = (os.path.join(folder, "model.safetensors")
                           if kind == "gpt2" else folder)
                shards = len(weight_files(weights))
                label = (f"{dtype} file" if shards == 1 else
                         f"{dtype}, {shards} shards")
                mib = sum(os.path.getsize(f)
                          for f in weight_files(weights)) / 2**20
                for cache in caches:
                    tgc, once, fresh, hf = measure(bins, exe, weights, kind,
                                                   folder, cache == "cold")
                    row(lines, name, label, mib, cache, tgc, once, fresh, hf)
            for folder in folders.values():
                subprocess.run(["rm", "-rf", folder], check=True)
    lines.append("")
    lines.append(NOTES.format(runs=WARM_RUNS, floor=floor))
    open(args.out, "w").write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
