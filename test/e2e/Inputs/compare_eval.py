"""Compares two validation losses (the "eval_loss" of the last line of two
JSONL files) within TOL relative. Usage: compare_eval.py A.jsonl B.jsonl TOL
With --exact=REF64.jsonl (B then PyTorch's f32 run, REF64 the same
evaluation in float64, torch_reference.py --dtype=float64), TOL is a
FACTOR: A's relative error against REF64 must be at most
max(FACTOR * B's, FLOOR), as compare_runs.py --exact checks (where FACTOR
and FLOOR = 16 * 2^-24, the resolution of stored f32 values, are argued).
Usage: compare_eval.py A.jsonl B.jsonl FACTOR --exact=REF64.jsonl"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402

FLOOR = bounds.FLOOR_F32


def last_eval(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    return [line["eval_loss"] for line in lines if "eval_loss" in line][-1]


a, b, tol = last_eval(sys.argv[1]), last_eval(sys.argv[2]), float(sys.argv[3])
exact = [x[len("--exact="):] for x in sys.argv[4:] if x.startswith("--exact=")]
if exact:
    truth = last_eval(exact[0])
    ours, theirs = abs(a - truth) / abs(truth), abs(b - truth) / abs(truth)
    if ours > max(tol * theirs, FLOOR):
        sys.exit(f"eval loss {a!r}: {ours:.3g} relative to float64's {truth!r}, "
                 f"more than {tol:g} times PyTorch f32's {theirs:.3g} "
                 f"(and the floor {FLOOR:.3g})")
    print(f"eval losses match to PyTorch's f32 accuracy (ratio "
          f"{ours / max(theirs, FLOOR / tol):.2f}, bound {tol:g}: {ours:.2g} "
          f"against {theirs:.2g} relative to float64)")
    sys.exit(0)
error = abs(a - b) / abs(b)
if error > tol:
    sys.exit(f"eval loss {a!r} against {b!r}: {error:.3g} relative")
print(f"eval losses match ({error:.2g} relative)")
