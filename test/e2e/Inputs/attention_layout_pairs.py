"""attention_layout_pairs.py TOOLS DIR RUN MODEL:OPTIONS...: for each MODEL
(DIR/MODEL.mlir) and tgc-compile OPTIONS, rewrites the model with tgc-opt's
tg-attention-layout (attention in the bshd layout, the transposes around it
gone), compiles the model as it was and as rewritten with the same OPTIONS
(tg-autodiff builds each one's gradient), trains both 6 steps with RUN (a
tool in TOOLS and its arguments, e.g. "tgc-run-cuda-emu --device cuda") and
prints the tg.transpose ops of both training steps, the bshd attention ops,
and whether the trainings are bitwise identical (test/e2e/Inputs/
same_run.py: losses and checkpoints)."""
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
    for index, spec in enumerate(sys.argv[4:]):
        model, options = spec.split(":", 1)
        stem = f"{directory}/{model}.{index}"
        run([os.path.join(tools, "tgc-opt"), f"{directory}/{model}.mlir",
             "--tg-attention-layout", "-o", f"{stem}.bshd-model.mlir"])
        transposes, bshd = [], 0
        for name, source in (("plain", f"{directory}/{model}.mlir"),
                             ("bshd", f"{stem}.bshd-model.mlir")):
            compile_args = [os.path.join(tools, "tgc-compile"), source,
                            *shlex.split(options)]
            run([*compile_args, "--emit=mlir", "-o", f"{stem}.{name}.mlir"])
            run([*compile_args, "-o", f"{stem}.{name}.tgx"])
            with open(f"{stem}.{name}.mlir") as f:
                text = f.read()
            transposes.append(len(re.findall(r"= tg\.transpose ", text)))
            bshd = len(re.findall(r"= tg\.attention(_grad)? [^\n]*bshd = true",
                                  text))
            run([*runner, f"{stem}.{name}.tgx", "--steps", str(STEPS),
                 "--seed", "3", "--metrics", f"{stem}.{name}.jsonl",
                 "--save", f"{stem}.{name}.st"])
        print(f"{model} {options}: transposes {transposes[0]} -> "
              f"{transposes[1]}, {bshd} bshd attention ops", flush=True)
        print(run([sys.executable, os.path.join(here, "same_run.py"),
                   f"{stem}.plain.jsonl", f"{stem}.plain.st",
                   f"{stem}.bshd.jsonl", f"{stem}.bshd.st"]).strip()
              .replace(f"{stem}.", ""), flush=True)


if __name__ == "__main__":
    main()
