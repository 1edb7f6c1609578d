"""Compares the learning rate of every step of two runs' metrics (JSONL
with "lr"): within TOL relative. Usage: compare_lrs.py A.jsonl B.jsonl TOL"""
import json
import sys

a = [json.loads(line)["lr"] for line in open(sys.argv[1]) if line.strip()]
b = [json.loads(line)["lr"] for line in open(sys.argv[2]) if line.strip()]
tol = float(sys.argv[3])
assert len(a) == len(b), (len(a), len(b))
worst = 0.0
for step, (x, y) in enumerate(zip(a, b), 1):
    error = abs(x - y) / abs(y) if y else abs(x)
    worst = max(worst, error)
    if error > tol:
        sys.exit(f"step {step}: lr {x!r} against {y!r} ({error:.3g} relative)")
print(f"{len(a)} learning rates match (largest relative difference {worst:.2g})")
