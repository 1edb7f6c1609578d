"""Checks a tg-plan-memory JSON report: arena <= LIMIT x peak live bytes,
the persistent region covers params (4 B/param) and AdamW state (8 B/param,
plus the step counter and the learning rate),
and no two buffers live at the same time overlap in the arena.
Usage: check_arena.py REPORT.json LIMIT"""
import json
import sys

report = json.load(open(sys.argv[1]))
limit = float(sys.argv[2])
arena, peak = report["arena_bytes"], report["peak_live_bytes"]
if arena > limit * peak:
    sys.exit(f"arena {arena} exceeds {limit} x peak {peak}")

params = sum(t["bytes"] for t in report["persistent"] if t["kind"] == "params")
state = sum(t["bytes"] for t in report["persistent"]
            if t["kind"] == "optimizer_state")
if state != 2 * params + 8 + 4:
    sys.exit(f"optimizer state {state} != 2 x params {params} + step counter "
             "+ learning rate")

# Pairwise overlap check with a sweep over offsets for each step.
buffers = report["buffers"]
events = sorted(buffers, key=lambda b: b["offset"])
for i, a in enumerate(events):
    for b in events[i + 1:]:
        if b["offset"] >= a["offset"] + max(a["bytes"], 1):
            break
        if a["start"] <= b["end"] and b["start"] <= a["end"] and a["bytes"] and b["bytes"]:
            sys.exit(f"buffers at {a['offset']} and {b['offset']} overlap")
print(f"arena within {limit} of the peak: {arena} / {peak} = {arena / peak:.4f}")
