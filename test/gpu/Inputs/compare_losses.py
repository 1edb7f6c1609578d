"""Checks that two tgc-run metrics files agree step by step within TOL
relative. Usage: compare_losses.py A.jsonl B.jsonl TOL"""
import json
import sys

a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
tol = float(sys.argv[3])
if len(a) != len(b):
    sys.exit(f"{len(a)} steps against {len(b)}")
worst = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))
if worst > tol:
    sys.exit(f"losses differ by {worst:.3g} relative")
print(f"{len(a)} steps agree: worst relative difference {worst:.2e}")
