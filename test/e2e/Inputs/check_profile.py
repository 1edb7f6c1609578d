"""Checks the profile row tgc-run --profile writes into its metrics: the
op kinds' times add up to the step's, and the slowest ops are sorted."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
profile = rows[-1]["profile"]["step"]
total = sum(kind["ms"] for kind in profile["kinds"])
if abs(total - profile["ms"]) > 1e-6 * max(1.0, profile["ms"]):
    sys.exit(f"kinds add up to {total} ms, the step is {profile['ms']} ms")
top = [op["ms"] for op in profile["top"]]
if top != sorted(top, reverse=True) or not top:
    sys.exit(f"top ops not sorted: {top}")
if abs(sum(k["share"] for k in profile["kinds"]) - 1.0) > 1e-6:
    sys.exit("shares do not add up to 1")
print(f"profile of step: {profile['runs']} runs, kinds add up to the total, "
      f"top {len(top)} sorted")
