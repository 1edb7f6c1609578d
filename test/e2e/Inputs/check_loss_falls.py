"""Checks a tgc-run metrics file: one JSON object per step with 'step' and
'loss', and the mean loss of the last five steps at most RATIO times that
of the first five. Usage: check_loss_falls.py METRICS.jsonl RATIO"""
import json
import math
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
ratio = float(sys.argv[2])
steps = [r["step"] for r in rows]
if steps != list(range(steps[0], steps[0] + len(steps))):
    sys.exit("steps are not consecutive")
losses = [r["loss"] for r in rows]
if not all(math.isfinite(l) for l in losses):
    sys.exit("non-finite loss")
first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
if last > ratio * first:
    sys.exit(f"loss did not fall enough: {first:.4f} -> {last:.4f}")
print(f"{len(rows)} steps: mean loss of the last 5 / first 5 = {last / first:.4f}")
