"""Compares two validation losses (the "eval_loss" of the last line of two
JSONL files) within TOL relative. Usage: compare_eval.py A.jsonl B.jsonl TOL"""
import json
import sys


def last_eval(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    return [line["eval_loss"] for line in lines if "eval_loss" in line][-1]


a, b, tol = last_eval(sys.argv[1]), last_eval(sys.argv[2]), float(sys.argv[3])
error = abs(a - b) / abs(b)
if error > tol:
    sys.exit(f"eval loss {a!r} against {b!r}: {error:.3g} relative")
print(f"eval losses match ({error:.2g} relative)")
