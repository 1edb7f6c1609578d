"""fold_casts_pairs.py TOOLS DIR RUN [--passes=P,...] MODEL:OPTIONS...: for
each MODEL (DIR/MODEL.mlir) and tgc-compile OPTIONS, compiles the training
step without --fuse (--emit=mlir: every cast and add there), lowers it with
tgc-opt with and without passes of --fuse that run on the finished step
(by default its cast passes, tg-fold-casts and tg-group-casts; --passes
names others), trains both 6 steps with RUN (a tool in TOOLS and its
arguments, e.g. "tgc-run-cuda-emu --device cuda") and prints the tg.cast
ops before and after, the tg.multi_cast ops made, both planned arenas, the
tg.add ops before and after, the tg.attention_grad ops reading the forward
pass's log-sum-exp and those reading packed operands, and whether the
trainings are bitwise
identical (test/e2e/Inputs/same_run.py: losses and checkpoints)."""
import os
import re
import shlex
import subprocess
import sys

STEPS = 6


def run(args, **kwargs):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kwargs).stdout


def main():
    tools, directory, runner = sys.argv[1:4]
    runner = shlex.split(runner)
    runner[0] = os.path.join(tools, runner[0])
    here = os.path.dirname(os.path.abspath(__file__))
    specs = sys.argv[4:]
    fused = ["--tg-fold-casts", "--tg-group-casts"]
    if specs and specs[0].startswith("--passes="):
        fused = ["--" + p for p in specs[0][len("--passes="):].split(",")]
        specs = specs[1:]
    for index, spec in enumerate(specs):
        model, options = spec.split(":", 1)
        stem = f"{directory}/{model}.{index}"
        run([os.path.join(tools, "tgc-compile"), f"{directory}/{model}.mlir",
             "--emit=mlir", "-o", stem + ".step.mlir",
             *shlex.split(options)])
        casts, adds, multi, arenas = [], [], 0, []
        for name, passes in (("plain", []), ("folded", fused)):
            run([os.path.join(tools, "tgc-opt"), stem + ".step.mlir", *passes,
                 "--tg-plan-memory=print=false",
                 f"--tgc-lower-to-tgx=output={stem}.{name}.tgx",
                 "-o", f"{stem}.{name}.mlir"])
            with open(f"{stem}.{name}.mlir") as f:
                text = f.read()
            casts.append(len(re.findall(r"= tg\.cast ", text)))
            adds.append(len(re.findall(r"= tg\.add ", text)))
            kept = len(re.findall(r"= tg\.attention_grad [^\n]* lse ", text))
            packed = len(re.findall(
                r"= tg\.attention_grad [^\n]*packed = true", text))
            multi = len(re.findall(r"= tg\.multi_cast ", text))
            out = run([*runner, f"{stem}.{name}.tgx", "--steps", str(STEPS),
                       "--seed", "3", "--metrics", f"{stem}.{name}.jsonl",
                       "--save", f"{stem}.{name}.st"])
            arenas.append(re.search(r"high-water mark \d+ bytes \(planned peak (\d+)",
                                     out).group(1))
        print(f"{model} {options}: casts {casts[0]} -> {casts[1]} and {multi} "
              f"multi_cast, arena {arenas[0]} -> {arenas[1]} bytes, adds "
              f"{adds[0]} -> {adds[1]}, {kept} attention_grad reading lse, "
              f"{packed} packed",
              flush=True)
        print(run([sys.executable, os.path.join(here, "same_run.py"),
                   f"{stem}.plain.jsonl", f"{stem}.plain.st",
                   f"{stem}.folded.jsonl", f"{stem}.folded.st"]).strip()
              .replace(f"{stem}.", ""), flush=True)


if __name__ == "__main__":
    main()
