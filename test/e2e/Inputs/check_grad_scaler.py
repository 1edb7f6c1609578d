"""Checks a tgc-run metrics file of a loss-scaled run against GradScaler's
algorithm (torch.cuda.amp.GradScaler.update): from the initial scale and the
run's own overflow pattern (the steps it skipped), the scale after every
step must be exactly what GradScaler computes. Also checks that overflow
steps are exactly the skipped ones and that some steps overflowed and some
grew the scale, so the test covers both branches.
Usage: check_grad_scaler.py METRICS INIT GROWTH BACKOFF INTERVAL"""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1])]
scale, growth, backoff = (float(v) for v in sys.argv[2:5])
interval = int(sys.argv[5])
tracker = 0
grew = 0
for row in rows:
    found_inf = row["skipped"]
    # GradScaler.update (_amp_update_scale_): back off on inf and reset the
    # tracker; otherwise count the step and grow after `interval` of them.
    if found_inf:
        scale *= backoff
        tracker = 0
    else:
        tracker += 1
        if tracker == interval:
            scale *= growth
            tracker = 0
            grew += 1
    got = row["loss_scale"]
    if got != scale:
        sys.exit(f"step {row['step']}: scale {got}, GradScaler gives {scale}")
skips = sum(r["skipped"] for r in rows)
if not skips or not grew:
    sys.exit(f"the run should both overflow and grow ({skips} skipped, "
             f"{grew} growths)")
print(f"{len(rows)} scales match GradScaler ({skips} skipped, {grew} growths)")
