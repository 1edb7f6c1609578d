"""Checks that two memory reports (tgc-compile --memory-report) plan the
same memory within TOL (relative): the persistent region plus the arena.
Usage: same_plan.py IMPORTED.json BUILT.json TOL"""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
tol = float(sys.argv[3])
total_a = a["persistent_bytes"] + a["arena_bytes"]
total_b = b["persistent_bytes"] + b["arena_bytes"]
difference = abs(total_a - total_b) / total_b
print(f"planned {total_a} and {total_b} bytes (relative difference "
      f"{difference:.2e})")
if difference > tol:
    sys.exit(f"the plans differ by more than {tol}")
print("same plan")
