#!/usr/bin/env python3
"""Fuzzes the option space of tgc-run, tgc-compile and tgc-data (issue 30).

    fuzz/options.py --bin DIR --work DIR [--cases N] [--seed S]
                    [--catalogue] [--table FILE]

Builds a pool of small files a user might have (tiny executables of four
model kinds, checkpoints, adapters, batch files, a token file, a dataset,
JSONL, links to them, a directory; and directories a tool reads whole: a
Hugging Face model directory of config.json and model.safetensors, a
sharded one with its index, a PEFT adapter directory and a tokenizer
directory) and runs:

  --catalogue  the mistakes issues 30 and 49 reported (issue 49: outputs
               aimed at a file inside an input directory), one case each,
               with what
               must happen now (a clear error naming the fault, or a
               correct run), and the files that must keep their bytes;
  --cases N    N command lines drawn at random (seeded) from each tool's
               options, with values drawn from valid ones, invalid ones and
               every file in the pool, inputs included.

Every case must end by itself within 60 s, by an exit status rather than a
signal, with status 0, or 1 and a line `<tool>: error: ...`; every file
of the pool (inside its directories too) that the case does not name as an
output keeps its bytes (an output may be replaced only by a run that
succeeds), and no file appears in an input directory but an output of a
run that succeeds. The pool is restored
after each case. Prints one line per finding and a summary table (Markdown
with --table FILE). Exits 1 when anything was found.
"""
import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import time

PYTHON = "/usr/bin/python3"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TGC_DATA = os.path.join(ROOT, "tools", "python", "tgc-data.py")
TIMEOUT = 60


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes)."""
    header, offset, blobs = {}, 0, []
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run_quiet(command, cwd):
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def build_pool(bin_dir, pool):
    """The user's files: every one is an input of some command line."""
    os.makedirs(pool)
    models = os.path.join(bin_dir, "tgc-models")
    compile_ = os.path.join(bin_dir, "tgc-compile")
    trun = os.path.join(bin_dir, "tgc-run")

    def model(name, *args):
        with open(os.path.join(pool, name), "w") as f:
            subprocess.run([models, *args], check=True, stdout=f)

    model("m.mlir", "mlp", "--widths", "8,4,3", "--batch", "4")
    model("g.mlir", "gpt2", "--n-layer", "1", "--n-head", "2", "--n-embd",
          "16", "--vocab-size", "64", "--seq-len", "8", "--batch", "2")
    model("b.mlir", "bert", "--n-layer", "1", "--n-head", "2", "--hidden",
          "16", "--intermediate", "32", "--vocab-size", "96",
          "--max-positions", "32", "--batch", "2", "--seq-len", "16")
    run_quiet([compile_, "m.mlir", "-o", "m.tgx"], pool)
    run_quiet([compile_, "m.mlir", "-o", "lora.tgx",
               "--lora=rank=2,alpha=4,targets=layers.0"], pool)
    run_quiet([compile_, "g.mlir", "-o", "g.tgx"], pool)
    # Hugging Face directories: one file of weights, and three shards with
    # their index.
    run_quiet([trun, "g.tgx", "--steps", "1", "--save-hf", "hf", "--quiet"],
              pool)
    run_quiet([trun, "g.tgx", "--steps", "1", "--save-hf", "hfs",
               "--save-hf-shard-size", "40KB", "--quiet"], pool)
    run_quiet([compile_, "b.mlir", "-o", "b.tgx", "--seq-buckets=8,16"],
              pool)
    run_quiet([trun, "m.tgx", "--steps", "2", "--save", "a.st", "--quiet"],
              pool)
    run_quiet([trun, "lora.tgx", "--steps", "2", "--save-adapters", "ad.st",
               "--quiet"], pool)
    run_quiet([trun, "lora.tgx", "--steps", "2", "--save-adapters", "ad",
               "--quiet"], pool)
    # A tokenizer directory as tgc-data reads one (the fuzzed tgc-data runs
    # without Hugging Face's tokenizers: it gets as far as its checks).
    os.makedirs(os.path.join(pool, "tok"))
    with open(os.path.join(pool, "tok", "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "model": {"type": "WordLevel",
                                               "vocab": {"[UNK]": 0},
                                               "unk_token": "[UNK]"}}, f)
    with open(os.path.join(pool, "tok", "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "[UNK]", "chat_template":
                   "{% for m in messages %}{{ m.content }}{% endfor %}"}, f)
    rng = random.Random(5)
    floats = struct.pack("<96f", *[rng.gauss(0, 1) for _ in range(96)])
    labels = struct.pack("<12q", *[rng.randrange(3) for _ in range(12)])
    write_safetensors(os.path.join(pool, "d.safetensors"), {
        "inputs": ("F32", [3, 4, 8], floats),
        "targets": ("I64", [3, 4], labels)})
    bad = bytearray(floats)
    bad[4 * 40:4 * 41] = struct.pack("<f", float("nan"))
    write_safetensors(os.path.join(pool, "nan.safetensors"), {
        "inputs": ("F32", [3, 4, 8], bytes(bad)),
        "targets": ("I64", [3, 4], labels)})
    with open(os.path.join(pool, "tokens.bin"), "wb") as f:
        f.write(struct.pack("<400H", *[i % 64 for i in range(400)]))
    with open(os.path.join(pool, "c.jsonl"), "w") as f:
        for i in range(24):
            ids = [5 + (i * 7 + t) % 80 for t in range(2 + i % 12)]
            f.write(json.dumps({"input_ids": ids}) + "\n")
    run_quiet([PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "-o",
               "c.tgcd", "--vocab-size", "96", "--mask-id", "4"], pool)
    with open(os.path.join(pool, "dev.json"), "w") as f:
        json.dump({"name": "dev", "memory_bandwidth": 1e12,
                   "vector_flops": 1e13,
                   "matmul_flops": {"f32": 1e13, "tf32": 1e14,
                                    "bf16": 1e14, "f16": 1e14}}, f)
    os.makedirs(os.path.join(pool, "dir"))
    make_links(pool)


def make_links(pool):
    os.symlink("a.st", os.path.join(pool, "link.st"))
    os.link(os.path.join(pool, "a.st"), os.path.join(pool, "hard.st"))


def digests(pool):
    """Every regular file of the pool, in its directories too, by its path
    relative to the pool."""
    result = {}
    for directory, subdirectories, names in os.walk(pool):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    result[os.path.relpath(path, pool)] = \
                        hashlib.sha256(f.read()).hexdigest()
    return result


def restore(pristine, pool):
    shutil.rmtree(pool, ignore_errors=True)
    shutil.copytree(pristine, pool, symlinks=True)
    os.unlink(os.path.join(pool, "hard.st"))
    os.link(os.path.join(pool, "a.st"), os.path.join(pool, "hard.st"))


# --- drawing command lines ----------------------------------------------------

EXECUTABLES = ["m.tgx", "lora.tgx", "g.tgx", "b.tgx"]
POOL_FILES = ["m.tgx", "lora.tgx", "g.tgx", "b.tgx", "m.mlir", "g.mlir",
              "a.st", "ad.st", "link.st", "hard.st", "d.safetensors",
              "nan.safetensors", "tokens.bin", "c.tgcd", "c.jsonl",
              "dev.json", "hf/config.json", "hf/model.safetensors",
              "hfs/model.safetensors.index.json",
              "hfs/model-00002-of-00003.safetensors",
              "ad/adapter_model.safetensors", "tok/tokenizer_config.json"]
# Directories a tool reads whole (Hugging Face, PEFT, a tokenizer's).
DIRECTORIES = ["hf", "hfs", "ad", "tok"]
ELSEWHERE = ["dir", "missing.st", "./a.st", "dir/../a.st"] + DIRECTORIES
# Devices are drawn as inputs only: a tool that wrongly renamed a file over
# /dev/null (tgc-data did, before issue 30) would break the machine.
DEVICES = ["/dev/zero", "/dev/null"]
NEW = ["new.st", "new2.st", "new.jsonl", "dir/new.st",
       # Files a reader of the directory would look for, not there yet.
       "hf/model.safetensors.index.json", "tok/special_tokens_map.json"]


def any_path(rng, new_weight=0.5):
    """A path to write: new, or any file of the pool."""
    if rng.random() < new_weight:
        return rng.choice(NEW)
    return rng.choice(POOL_FILES + ELSEWHERE)


def any_input(rng, new_weight=0.1):
    """A path to read: any file of the pool, a device, or a missing one."""
    if rng.random() < new_weight:
        return rng.choice(NEW)
    return rng.choice(POOL_FILES + ELSEWHERE + DEVICES)


RUN_OPTIONS = {
    "--steps": lambda r: r.choice(["0", "1", "2", "5", "-1", "x", "1e3",
                                   "4611686018427387905"]),
    "--seed": lambda r: r.choice(["0", "1", "-1", "x",
                                  "18446744073709551616"]),
    "--device": lambda r: r.choice(["cpu", "auto", "cuda", "gpu"]),
    "--max-memory": lambda r: r.choice(["1K", "16G", "0", "-5", "1Q",
                                        "99999999999999999999"]),
    "--threads": lambda r: r.choice(["1", "2", "0", "-1", "100000"]),
    "--data": lambda r: r.choice(["synthetic", "d.safetensors",
                                  "nan.safetensors", "tokens.bin", "c.tgcd",
                                  "/dev/zero", "dir", "missing.bin",
                                  "a.st", "c.jsonl"]),
    "--padding": lambda r: r.choice(["max", "dynamic", "grouped", "x"]),
    "--overlong": lambda r: r.choice(["truncate", "reject", "x"]),
    "--lr-schedule": lambda r: r.choice(["constant", "cosine", "linear",
                                         "x"]),
    "--warmup-steps": lambda r: r.choice(["0", "2", "-1"]),
    "--min-lr": lambda r: r.choice(["0", "1e-5", "-1", "nan", "inf"]),
    "--max-steps": lambda r: r.choice(["3", "0", "-2"]),
    "--eval-data": lambda r: r.choice(["synthetic", "d.safetensors",
                                       "c.tgcd", "missing.bin"]),
    "--eval-every": lambda r: r.choice(["1", "2", "0"]),
    "--eval-batches": lambda r: r.choice(["1", "2", "0", "-1"]),
    "--eval-only": None,
    "--save": any_path,
    "--save-every": lambda r: r.choice(["1", "2", "0", "-3"]),
    "--resume": any_input,
    "--load-weights": any_input,
    "--load-adapters": any_input,
    "--save-adapters": lambda r: r.choice(["newad", "ad"]) \
        if r.random() < 0.3 else any_path(r),
    "--export-merged": any_path,
    "--save-hf": lambda r: r.choice(["newhf", "dir/hf"] + DIRECTORIES +
                                    ["a.st"]),
    "--metrics": any_path,
    "--log-every": lambda r: r.choice(["1", "0"]),
    "--quiet": None,
    "--profile": None,
    "--profile-top": lambda r: r.choice(["1", "0"]),
}
RUN_OUTPUTS = {"--save", "--save-adapters", "--export-merged", "--metrics",
               "--save-hf"}

COMPILE_OPTIONS = {
    "-o": lambda r: any_path(r, 0.6),
    "--memory-report": any_path,
    "--estimate": lambda r: r.choice(["h100", "a100", "dev.json",
                                      "/dev/zero", "missing.json", "x"]),
    "--estimate-json": any_path,
    "--lr": lambda r: r.choice(["1e-3", "0", "-1", "nan", "1e30", "x"]),
    "--optimizer": lambda r: r.choice(["adamw", "sgd", "adafactor", "x"]),
    "--amp": lambda r: r.choice(["none", "bf16", "f16", "x"]),
    "--remat": lambda r: r.choice(["none", "selective", "blocks",
                                   "budget=1MiB", "budget=0", "x"]),
    "--batch": lambda r: r.choice(["auto", "2", "0", "-1"]),
    "--global-batch": lambda r: r.choice(["0", "4", "-2", "3"]),
    "--memory-budget": lambda r: r.choice(["1GiB", "0", "x"]),
    "--lora": lambda r: r.choice(["rank=2,targets=layers.0",
                                  "rank=100,targets=layers.0", "rank=0",
                                  "targets=nothing", "garbage"]),
    "--grad-accum": lambda r: r.choice(["1", "2", "0", "-1"]),
    "--seq-buckets": lambda r: r.choice(["4,8", "0", "x"]),
    "--optimizer-state": lambda r: r.choice(["8bit", "4bit", "x"]),
    "--world-size": lambda r: r.choice(["2", "0"]),
    "--data-parallel": lambda r: r.choice(["ddp", "zero2", "x"]),
}
COMPILE_OUTPUTS = {"-o", "--memory-report", "--estimate-json"}

DATA_OPTIONS = {
    "--input": lambda r: r.choice(["c.jsonl", "/dev/zero", "dir",
                                   "missing.jsonl", "a.st", "m.mlir"]),
    "--tokenizer": lambda r: r.choice(["tok", "tok/tokenizer.json", "hf",
                                       "missing", "c.jsonl"]),
    "-o": lambda r: any_path(r, 0.6),
    "--vocab-size": lambda r: r.choice(["96", "10", "0", "-1",
                                        "99999999999"]),
    "--num-labels": lambda r: r.choice(["0", "3", "-1"]),
    "--max-length": lambda r: r.choice(["4", "0"]),
    "--overlong": lambda r: r.choice(["truncate", "reject", "x"]),
    "--mask-id": lambda r: r.choice(["4", "-1", "1000"]),
}


def draw(rng, options, at_most):
    chosen = rng.sample(sorted(options), rng.randint(0, at_most))
    args, outputs = [], []
    for name in chosen:
        value = options[name]
        if value is None:
            args.append(name)
            continue
        text = value(rng)
        args += [name, text] if rng.random() < 0.5 else [f"{name}={text}"]
        outputs.append((name, text))
    return args, outputs


def draw_case(rng, bin_dir):
    tool = rng.choice(["tgc-run", "tgc-run", "tgc-compile", "tgc-data"])
    if tool == "tgc-run":
        program = rng.choice(EXECUTABLES * 4 + POOL_FILES + ELSEWHERE +
                             DEVICES)
        args, named = draw(rng, RUN_OPTIONS, 6)
        outputs = {v for n, v in named if n in RUN_OUTPUTS}
        return tool, [os.path.join(bin_dir, tool), program] + args, outputs
    if tool == "tgc-compile":
        source = rng.choice(["m.mlir"] * 4 + ["g.mlir"] * 2 +
                            ["b.mlir", "a.st", "/dev/zero", "dir",
                             "missing.mlir"])
        args, named = draw(rng, COMPILE_OPTIONS, 5)
        outputs = {v for n, v in named if n in COMPILE_OUTPUTS}
        if not any(n == "-o" for n, _ in named):
            outputs.add("model.tgx")
        if any(n == "--memory-report" for n, _ in named):
            report = next(v for n, v in named if n == "--memory-report")
            outputs |= {report + ".trace.json", report + ".eval_step.json",
                        report + ".grad_step.json"}
        return tool, [os.path.join(bin_dir, tool), source] + args, outputs
    args, named = draw(rng, DATA_OPTIONS, 7)
    # Mostly with the required flags, so that runs get past them.
    for name in ("--input", "-o", "--vocab-size"):
        if rng.random() < 0.8 and not any(n == name for n, _ in named):
            value = DATA_OPTIONS[name](rng)
            args += [name, value]
            named.append((name, value))
    outputs = {v for n, v in named if n == "-o"}
    return tool, [PYTHON, TGC_DATA, "encode"] + args, outputs


# --- the catalogue ----------------------------------------------------

def catalogue(bin_dir):
    """(class, what, command, outputs allowed to change, expected text)."""
    run = os.path.join(bin_dir, "tgc-run")
    comp = os.path.join(bin_dir, "tgc-compile")
    ins = "outputs never overwrite inputs"
    inside = "outputs inside input directories"
    div = "a diverged run stops"
    streams = "standard streams"
    bounded = "bounded readers"
    small = "smaller"
    return [
        (ins, "--metrics names the dataset",
         [run, "b.tgx", "--data", "c.tgcd", "--metrics", "c.tgcd"], set(),
         "would overwrite --data"),
        (ins, "--metrics names the checkpoint resumed",
         [run, "m.tgx", "--resume", "a.st", "--metrics", "a.st"], set(),
         "would overwrite --resume"),
        (ins, "... with --eval-only",
         [run, "m.tgx", "--resume", "a.st", "--eval-only", "--metrics",
          "a.st"], set(), "would overwrite --resume"),
        (ins, "--metrics names the weights (through a link)",
         [run, "m.tgx", "--load-weights", "a.st", "--metrics", "link.st"],
         set(), "would overwrite --load-weights"),
        (ins, "--save names the weights (a hard link)",
         [run, "m.tgx", "--load-weights", "a.st", "--save", "hard.st"],
         set(), "would overwrite --load-weights"),
        (ins, "--save names the executable",
         [run, "m.tgx", "--save", "m.tgx"], set(),
         "would overwrite the executable"),
        (ins, "--metrics names the executable",
         [run, "m.tgx", "--metrics", "./m.tgx"], set(),
         "would overwrite the executable"),
        (ins, "--export-merged names the executable",
         [run, "lora.tgx", "--export-merged", "lora.tgx"], set(),
         "would overwrite the executable"),
        (ins, "--save and --save-adapters name one file",
         [run, "lora.tgx", "--save", "same.st", "--save-adapters",
          "same.st"], set(), "name the same file"),
        (ins, "tgc-compile -o names its input",
         [comp, "m.mlir", "-o", "m.mlir"], set(),
         "would overwrite the input"),
        (ins, "tgc-data -o names its input",
         [PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "-o", "c.jsonl",
          "--vocab-size", "96"], set(), "would overwrite --input"),
        (inside, "--save names the weights of --load-weights DIR",
         [run, "g.tgx", "--load-weights", "hf", "--save",
          "hf/model.safetensors"], set(),
         "would overwrite a file of --load-weights"),
        (inside, "--metrics names the index of a sharded directory",
         [run, "g.tgx", "--load-weights", "hfs", "--metrics",
          "hfs/model.safetensors.index.json"], set(),
         "would overwrite a file of --load-weights"),
        (inside, "--save names a shard",
         [run, "g.tgx", "--load-weights", "hfs", "--save",
          "./hfs/model-00002-of-00003.safetensors"], set(),
         "would overwrite a file of --load-weights"),
        (inside, "--save names an index the directory may have",
         [run, "g.tgx", "--load-weights", "hf", "--save",
          "hf/model.safetensors.index.json"], set(),
         "would overwrite a file of --load-weights"),
        (inside, "--export-merged names the adapters of --load-adapters DIR",
         [run, "lora.tgx", "--load-adapters", "ad", "--export-merged",
          "ad/adapter_model.safetensors"], set(),
         "would overwrite a file of --load-adapters"),
        (inside, "tgc-data -o names the tokenizer's config",
         [PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "--tokenizer",
          "tok", "-o", "tok/tokenizer_config.json"], set(),
         "would overwrite a file of --tokenizer"),
        (inside, "tgc-data -o names a file a tokenizer directory may have",
         [PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "--tokenizer",
          "tok", "-o", "tok/special_tokens_map.json"], set(),
         "would overwrite a file of --tokenizer"),
        (inside, "tgc-data -o names the weights of a model directory",
         [PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "--tokenizer",
          "hf", "-o", "hf/model.safetensors"], set(),
         "would overwrite a file of --tokenizer"),
        (ins, "--save over the checkpoint resumed (allowed: atomic)",
         [run, "m.tgx", "--resume", "a.st", "--save", "a.st", "--steps",
          "3", "--quiet"], {"a.st", "hard.st"}, None),
        (div, "--lr=1e30 with --save-every 1",
         [run, "huge.tgx", "--steps", "20", "--save", "new.st",
          "--save-every", "1"], {"new.st"},
         "step 2 has a non-finite loss"),
        (div, "NaN in a batch file",
         [run, "m.tgx", "--data", "nan.safetensors", "--steps", "3"], set(),
         "holds a non-finite value"),
        (streams, "tgc-compile 2>&-",
         ["sh", "-c", f"'{comp}' m.mlir -o new.tgx 2>&- && '{run}' new.tgx "
          "--steps 1 --quiet"], {"new.tgx"}, None),
        (streams, "tgc-run >&- 2>&- --metrics",
         ["sh", "-c", f"'{run}' m.tgx --steps 2 --metrics new.jsonl >&- "
          f"2>&- && {PYTHON} -c \"import json; [json.loads(l) for l in "
          "open('new.jsonl')]\""], {"new.jsonl"}, None),
        (bounded, "tgc-compile --estimate=/dev/zero",
         [comp, "m.mlir", "-o", "new.tgx", "--estimate=/dev/zero"], set(),
         "not a file"),
        (bounded, "tgc-data encode --input /dev/zero",
         [PYTHON, TGC_DATA, "encode", "--input", "/dev/zero", "-o",
          "new.tgcd", "--vocab-size", "96"], set(), "is a device"),
        (bounded, "tgc-data -o a directory",
         [PYTHON, TGC_DATA, "encode", "--input", "c.jsonl", "-o", "dir",
          "--vocab-size", "96"], set(), "is a directory"),
        (small, "--padding for data without examples",
         [run, "m.tgx", "--padding", "max"], set(),
         "apply to datasets of examples"),
        (small, "--global-batch=0 with --batch=auto",
         [comp, "g.mlir", "-o", "new.tgx", "--batch=auto",
          "--memory-budget=1GiB", "--global-batch=0"], set(),
         "must be positive"),
        (small, "a LoRA rank above the weight's size",
         [comp, "m.mlir", "-o", "new.tgx", "--lora=rank=9,targets=layers.0"],
         set(), "is above the size"),
        (small, "--threads -1",
         [run, "m.tgx", "--threads", "-1"], set(), "not -1"),
        (small, "--steps 0",
         [run, "m.tgx", "--steps", "0"], set(), "ok: no step to run"),
    ]


# --- running ------------------------------------------------------------------

ANY = object()  # a random case may succeed or fail
MEMORY_LIMIT = 0  # bytes of address space per case; 0: no limit


def limit_memory():
    if MEMORY_LIMIT:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(command, pool, outputs, expect=ANY):
    """Returns (outcome, finding or None, output). `expect`: text the
    output must hold, None for success, ANY for either."""
    before = digests(pool)
    # An output may be written through any name of its file (hard links).
    inodes = set()
    for output in outputs:
        with_pool = os.path.join(pool, output)
        if os.path.exists(with_pool):
            inodes.add(os.stat(with_pool).st_ino)
    aliases = {name for name in before
               if os.stat(os.path.join(pool, name)).st_ino in inodes}
    try:
        done = subprocess.run(command, cwd=pool, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                              preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return "hang", f"still running after {TIMEOUT} s", ""
    text = done.stdout.decode(errors="replace")
    code = done.returncode
    after = digests(pool)
    allowed = ({os.path.normpath(o) for o in outputs} | aliases
               if code == 0 else set())

    def written(name):  # an output, or a file of an output directory
        return any(name == o or name.startswith(o + "/") for o in allowed)
    changed = [name for name in before
               if after.get(name) != before[name] and not written(name)]
    changed += [name for name in after
                if name not in before and name.split("/")[0] in DIRECTORIES
                and not written(name)]
    for device in DEVICES:
        if not stat.S_ISCHR(os.stat(device).st_mode):
            sys.exit(f"options.py: {device} is no longer a device: the "
                     f"case replaced it ({' '.join(command)}); restore it "
                     "(mknod) before anything else")
    if code < 0:
        return "signal", f"died of signal {-code}", text
    if changed:
        return "input changed", "changed " + ", ".join(changed), text
    if code not in (0, 1):
        return "bad status", f"exit status {code}", text
    tool = "tgc-data" if command[0] == PYTHON else \
        os.path.basename(command[0])
    if code == 1 and command[0] != "sh" and \
            f"{tool}: error: " not in text:
        return "unclear error", "status 1 without an error line", text
    succeed = expect is None or (isinstance(expect, str) and
                                 expect.startswith("ok: "))
    if isinstance(expect, str) and expect.startswith("ok: "):
        expect = expect[4:]
    if expect not in (None, ANY) and expect not in text:
        return "unexpected", f"no '{expect}' in the output", text
    if succeed and code != 0:
        return "unexpected", f"status {code}, expected success", text
    if expect not in (None, ANY) and not succeed and code == 0:
        return "unexpected", f"success, expected '{expect}'", text
    return ("error" if code else "success"), None, text


def main():
    global TGC_DATA, MEMORY_LIMIT
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="tgc's tools")
    parser.add_argument("--work", required=True, help="a scratch directory")
    parser.add_argument("--cases", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--catalogue", action="store_true")
    parser.add_argument("--table", help="write the summary as Markdown")
    parser.add_argument("--update", help="replace the block between "
                        "'<!-- options.py BLOCK: begin -->' and '<!-- "
                        "options.py BLOCK: end -->' in this Markdown file "
                        "with the summary")
    parser.add_argument("--memory-limit-gib", type=float, default=0,
                        help="cap each case's address space (for tools "
                        "that may read a device until memory runs out; not "
                        "for sanitizer builds)")
    parser.add_argument("--block", default="now",
                        help="the block --update replaces (default: now)")
    parser.add_argument("--tgc-data", default=TGC_DATA,
                        help="the tgc-data.py to run (default: this "
                        "checkout's)")
    args = parser.parse_args()
    TGC_DATA = os.path.abspath(args.tgc_data)
    MEMORY_LIMIT = int(args.memory_limit_gib * (1 << 30))
    bin_dir = os.path.abspath(args.bin)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    pristine, pool = os.path.join(work, "pristine"), os.path.join(work, "pool")
    build_pool(bin_dir, pristine)
    run_quiet([os.path.join(bin_dir, "tgc-compile"), "m.mlir", "-o",
               "huge.tgx", "--lr=1e30"], pristine)
    restore(pristine, pool)

    findings = []
    rows = []  # (class, what, outcome)
    tally = collections.defaultdict(collections.Counter)
    if args.catalogue:
        for klass, what, command, outputs, expect in catalogue(bin_dir):
            outcome, finding, text = run_case(command, pool, outputs, expect)
            ok = finding is None
            rows.append((klass, what, outcome if ok else
                         f"**{outcome}: {finding}**"))
            if not ok:
                findings.append((what, command, finding, text))
            restore(pristine, pool)
    rng = random.Random(args.seed)
    start = time.monotonic()
    for _ in range(args.cases):
        tool, command, outputs = draw_case(rng, bin_dir)
        outcome, finding, text = run_case(command, pool, outputs)
        tally[tool][outcome] += 1
        if finding:
            findings.append((tool, command, finding, text))
        restore(pristine, pool)
    elapsed = time.monotonic() - start

    for what, command, finding, text in findings:
        shown = " ".join(os.path.basename(c) if c.startswith(bin_dir) else c
                         for c in command)
        print(f"finding: {what}: {finding}: {shown}")
        for line in text.strip().splitlines()[-3:]:
            print(f"    {line}")
    lines = []
    if rows:
        lines += ["| class | case | outcome |", "|---|---|---|"]
        lines += [f"| {k} | {w} | {o} |" for k, w, o in rows]
        lines.append("")
    if args.cases:
        outcomes = ["success", "error", "signal", "hang", "input changed",
                    "unclear error", "bad status", "unexpected"]
        lines += ["| tool | cases | " + " | ".join(outcomes) + " |",
                  "|---" * (len(outcomes) + 2) + "|"]
        for tool in sorted(tally):
            counts = tally[tool]
            lines.append(f"| {tool} | {sum(counts.values())} | " +
                         " | ".join(str(counts[o]) for o in outcomes) + " |")
        lines += ["", f"{args.cases} random cases (seed {args.seed}) in "
                  f"{elapsed:.0f} s."]
    print("\n".join(lines))
    print(f"options fuzzing: {len(rows)} catalogue cases, {args.cases} "
          f"random cases, {len(findings)} findings")
    if args.table:
        with open(args.table, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.update:
        begin = f"<!-- options.py {args.block}: begin -->"
        end = f"<!-- options.py {args.block}: end -->"
        with open(args.update) as f:
            text = f.read()
        if begin not in text or end not in text:
            sys.exit(f"options.py: {args.update} has no {begin} ... {end}")
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        with open(args.update, "w") as f:
            f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end +
                    tail)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
