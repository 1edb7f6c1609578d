"""What the benchmark scripts share: running the tools, the small GPT-2
whose CPU step time they measure, and that measurement."""
import json
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SIZE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size_bytes(size):
    """Bytes of a size as tgc prints it ("1.96 GiB")."""
    number, unit = size.split()
    return float(number) * SIZE_UNITS[unit]


def run(cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def cpu_name():
    return run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]
               ).stdout.strip()


def cpu_isa():
    """The widest vector instruction set the CPU reports."""
    flags = run(["sh", "-c", "grep -m1 '^flags' /proc/cpuinfo"]).stdout.split()
    if all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
        return "AVX-512"
    if "avx2" in flags and "fma" in flags:
        return "AVX2"
    if "avx" in flags:
        return "AVX"
    return "SSE2"


def kernel_set(bins):
    """The kernels tgc-run runs here: OpenBLAS's core type and the vector
    math's instruction set, as tgc-run reports them (environment
    variables OPENBLAS_CORETYPE and TGC_VECMATH included)."""
    with tempfile.TemporaryDirectory() as tmp:
        model, exe = os.path.join(tmp, "m.mlir"), os.path.join(tmp, "m.tgx")
        run([f"{bins}/tgc-models", "mlp", "--batch", "2", "-o", model])
        run([f"{bins}/tgc-compile", model, "-o", exe])
        out = run([f"{bins}/tgc-run", exe, "--steps", "1", "--device", "cpu"]
                  ).stdout
    core = re.search(r"OpenBLAS (\S+) kernels", out)
    math = re.search(r"vector math (\S+)", out)
    return (core.group(1) if core else "?", math.group(1) if math else "?")


def machine(bins):
    """The identity every table states, so that figures from different
    machines are never compared as if from one: the CPU's model, its cores
    and widest ISA, and the kernel set tgc ran."""
    core, math = kernel_set(bins)
    return (f"{cpu_name()}, {len(os.sched_getaffinity(0))} cores, {cpu_isa()}; "
            f"OpenBLAS {core} kernels, vector math {math}")


def small_gpt2(bins, path):
    """Writes the GPT-2 the CPU step times are measured on (4 layers,
    C=256, 4 heads, T=256, B=8, V=512)."""
    run([f"{bins}/tgc-models", "gpt2", "--n-layer", "4", "--n-head", "4",
         "--n-embd", "256", "--vocab-size", "512", "--block-size", "256",
         "--seq-len", "256", "--batch", "8", "-o", path])


def compile_report(bins, model, tmp, flags, name="m.tgx"):
    """Compiles `model` with `flags` and a memory report. Returns the
    executable, the training step's report, its persistent bytes by kind,
    and the reports of every entry point (train_step, and grad_step and
    eval_step where the executable has them)."""
    exe = os.path.join(tmp, name)
    report = exe + ".json"
    run([f"{bins}/tgc-compile", model, "-o", exe, "--memory-report", report]
        + flags)
    step = json.load(open(report))
    entries = {"train_step": step}
    for entry in ("grad_step", "eval_step"):
        path = f"{report}.{entry}.json"
        if os.path.exists(path):
            entries[entry] = json.load(open(path))
    kinds = {}
    for tensor in step["persistent"]:
        kinds[tensor["kind"]] = kinds.get(tensor["kind"], 0) + tensor["bytes"]
    return exe, step, kinds, entries


def allocated(step, entries):
    """What tgc-run allocates: the persistent region and the largest arena
    of the entry points."""
    return step["persistent_bytes"] + max(e["arena_bytes"]
                                          for e in entries.values())


def best_step_times(bins, exes, steps, tmp):
    """The CPU step time of each executable of `exes` (name -> path): the
    mean of `steps` steps after 2 warm-up steps, best of 3 rounds that
    interleave the executables."""
    times = {name: float("inf") for name in exes}
    for _ in range(3):
        for name, exe in exes.items():
            metrics = os.path.join(tmp, "m.jsonl")
            run([f"{bins}/tgc-run", exe, "--steps", str(steps + 2), "--quiet",
                 "--device", "cpu", "--metrics", metrics])
            rows = [json.loads(line) for line in open(metrics)]
            mean = (rows[-1]["elapsed_s"] - rows[1]["elapsed_s"]) / steps
            times[name] = min(times[name], mean)
    return times
