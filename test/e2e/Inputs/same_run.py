"""Checks that training runs are bitwise identical: the same loss at every
step (JSONL metrics written by tgc-run, losses printed with 9 significant
digits, which round-trips an f32), the same evaluation losses where the
base run evaluated, and byte-identical final checkpoints.
Usage: same_run.py BASE.jsonl BASE.safetensors OTHER.jsonl OTHER.safetensors...
Prints one line per other run."""
import json
import sys


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def losses(path):
    return [row["loss"] for row in rows(path)]


def evals(path):
    return [(row["step"], row["eval_loss"]) for row in rows(path)
            if "eval_loss" in row]


base_losses = losses(sys.argv[1])
base_evals = evals(sys.argv[1])
base_weights = open(sys.argv[2], "rb").read()
ok = True
for jsonl, weights in zip(sys.argv[3::2], sys.argv[4::2]):
    other = losses(jsonl)
    if len(other) != len(base_losses):
        print(f"{jsonl}: {len(other)} steps, expected {len(base_losses)}")
        ok = False
        continue
    diff = [i for i, (a, b) in enumerate(zip(base_losses, other)) if a != b]
    same_weights = open(weights, "rb").read() == base_weights
    if base_evals and evals(jsonl) != base_evals:
        print(f"{jsonl}: evaluations differ")
        ok = False
        continue
    if diff or not same_weights:
        first = diff[0] if diff else None
        print(f"{jsonl}: losses differ from step {first + 1 if diff else '-'}"
              f", weights {'identical' if same_weights else 'differ'}")
        ok = False
    else:
        evaluated = (f" and {len(base_evals)} evaluations" if base_evals
                     else "")
        print(f"{jsonl}: {len(other)} steps{evaluated} bitwise identical")
sys.exit(0 if ok else 1)
