"""final_loss_within.py REFERENCE.jsonl RUN.jsonl BOUND: the final loss
(mean of the last 5% of steps) of RUN against REFERENCE's, relative, and
whether it is within BOUND (e.g. 0.02 for 2%)."""
import json
import sys


def final(path):
    losses = [json.loads(line)["loss"] for line in open(path)]
    k = max(1, len(losses) // 20)
    return sum(losses[-k:]) / k, len(losses)


(ref, n), (got, m) = final(sys.argv[1]), final(sys.argv[2])
bound = float(sys.argv[3])
rel = (got - ref) / ref
verdict = "within" if abs(rel) <= bound and n == m else "NOT within"
print(f"final loss {got:.4f} against {ref:.4f} after {m} steps: "
      f"{rel:+.2%}, {verdict} {bound:.0%}")
