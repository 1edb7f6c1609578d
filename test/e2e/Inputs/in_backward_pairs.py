"""in_backward_pairs.py [--flag F] [--steps N] [--run-args A] TOOLS DIR MODEL
OPTIONS...: compiles MODEL.mlir in DIR with each option set, without and
with the flag F (default --optimizer-in-backward), trains both N steps
(default 20; tgc-run given the extra arguments A, e.g. "--device cuda" with
TGC_RUN naming the emulator's tgc-run) and prints whether their losses and
final checkpoints are bitwise identical."""
import json
import os
import shlex
import subprocess
import sys


def run(args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main():
    args = sys.argv[1:]
    flagged, steps, run_args = "--optimizer-in-backward", 20, []
    while args and args[0] in ("--flag", "--steps", "--run-args"):
        if args[0] == "--flag":
            flagged = args[1]
        elif args[0] == "--steps":
            steps = int(args[1])
        else:
            run_args = shlex.split(args[1])
        args = args[2:]
    tools, directory, model = args[:3]
    compile_ = os.path.join(tools, "tgc-compile")
    train = os.path.join(tools, os.environ.get("TGC_RUN", "tgc-run"))
    for index, options in enumerate(args[3:]):
        outputs = []
        for flag in ([], shlex.split(flagged)):
            stem = f"{directory}/{model}.{index}.{len(flag)}"
            run([compile_, f"{directory}/{model}.mlir", "-o",
                 stem + ".tgx", *shlex.split(options), *flag])
            run([train, stem + ".tgx", *run_args, "--steps", str(steps), "--seed", "3",
                 "--metrics", stem + ".jsonl", "--save", stem + ".st",
                 "--quiet"])
            with open(stem + ".jsonl") as f:
                losses = [json.loads(line)["loss"] for line in f]
            with open(stem + ".st", "rb") as f:
                outputs.append((losses, f.read()))
        (a, wa), (b, wb) = outputs
        if len(a) != steps:
            print(f"{options!r}: {len(a)} steps, expected {steps}")
        elif a == b and wa == wb:
            print(f"{options!r}: {steps} steps bitwise identical")
        else:
            steps = sum(x != y for x, y in zip(a, b))
            print(f"{options!r}: DIFFERENT ({steps} losses differ, "
                  f"checkpoints {'equal' if wa == wb else 'differ'})")


if __name__ == "__main__":
    main()
