"""in_backward_pairs.py TOOLS DIR MODEL OPTIONS...: compiles MODEL.mlir in DIR with each option set, without and with
--optimizer-in-backward, trains both 20 steps and prints whether their
losses and final checkpoints are bitwise identical."""
import json
import os
import shlex
import subprocess
import sys


def run(args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main():
    tools, directory, model = sys.argv[1:4]
    compile_, train = (os.path.join(tools, t) for t in ("tgc-compile", "tgc-run"))
    for index, options in enumerate(sys.argv[4:]):
        outputs = []
        for flag in ([], ["--optimizer-in-backward"]):
            stem = f"{directory}/{model}.{index}.{len(flag)}"
            run([compile_, f"{directory}/{model}.mlir", "-o",
                 stem + ".tgx", *shlex.split(options), *flag])
            run([train, stem + ".tgx", "--steps", "20", "--seed", "3",
                 "--metrics", stem + ".jsonl", "--save", stem + ".st",
                 "--quiet"])
            with open(stem + ".jsonl") as f:
                losses = [json.loads(line)["loss"] for line in f]
            with open(stem + ".st", "rb") as f:
                outputs.append((losses, f.read()))
        (a, wa), (b, wb) = outputs
        if len(a) != 20:
            print(f"{options!r}: {len(a)} steps, expected 20")
        elif a == b and wa == wb:
            print(f"{options!r}: 20 steps bitwise identical")
        else:
            steps = sum(x != y for x, y in zip(a, b))
            print(f"{options!r}: DIFFERENT ({steps} losses differ, "
                  f"checkpoints {'equal' if wa == wb else 'differ'})")


if __name__ == "__main__":
    main()
