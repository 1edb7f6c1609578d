"""Checks that two tgc-run metrics files agree step by step within TOL
relative: a number, or order:N:L, the bound of bounds.py on two f32 runs
that differ only in the order of their sums.
A line without a training loss is read by its eval_loss (tgc-run
--eval-only).
Usage: compare_losses.py A.jsonl B.jsonl TOL"""
import json
import os
import sys

# bounds.py beside this file (the GPU bundle) or in the source tree.
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..", "e2e", "Inputs")]
import bounds  # noqa: E402



def losses(path):
    lines = [json.loads(line) for line in open(path)]
    return [line["loss"] if "loss" in line else line["eval_loss"]
            for line in lines]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
tol = bounds.tolerance(sys.argv[3])
if len(a) != len(b):
    sys.exit(f"{len(a)} steps against {len(b)}")
worst = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))
if worst > tol:
    sys.exit(f"losses differ by {worst:.3g} relative, more than "
             f"{bounds.describe(sys.argv[3])}")
print(f"{len(a)} steps agree: worst relative difference {worst:.2e} "
      f"(bound {bounds.describe(sys.argv[3])})")
