"""Compares tgc's preference-loss metrics (tgc-run --metrics) with
preference_reference.py's, step by step: the loss and the log-probabilities
(and ORPO's NLL) within TOL relative; the rewards, their margin and ORPO's
log-odds within TOL of the log-probabilities they are differences of
(beta |logp|: a reward is beta times a difference of two log-probabilities
of that size, so f32 rounding of the log-probabilities, not of the reward,
bounds its error); the accuracy equal wherever no pair's margin is within
that bound of 0. Prints the largest errors.
Usage: compare_preference.py TGC.jsonl REF.jsonl TOL BETA"""
import json
import sys

if len(sys.argv) != 5:
    sys.exit(__doc__)
tgc = [json.loads(line) for line in open(sys.argv[1])]
ref = [json.loads(line) for line in open(sys.argv[2])]
tol, beta = float(sys.argv[3]), float(sys.argv[4])
if len(tgc) != len(ref):
    sys.exit(f"{len(tgc)} tgc steps, {len(ref)} reference steps")
worst = {"relative": 0.0, "scaled": 0.0}
failures = []
for a, b in zip(tgc, ref):
    logp = max(abs(b[k]) for k in b if k.startswith("logps/"))
    for key, want in b.items():
        # The loss and its metrics (a tgc run as the reference also has
        # timings).
        if not (key in ("loss", "nll_loss") or key.startswith(
                ("rewards/", "logps/", "log_odds"))):
            continue
        if key not in a or a[key] is None:
            failures.append(f"step {b['step']}: tgc has no {key}")
            continue
        got = a[key]
        if key == "rewards/accuracies":
            if abs(b["rewards/margins"]) > tol * beta * logp and got != want:
                failures.append(f"step {b['step']}: {key} {got} != {want}")
            continue
        relative = not (key.startswith("rewards/") or
                        key.startswith("log_odds"))
        scale = abs(want) if relative else (beta if key.startswith(
            "rewards/") else 1.0) * logp
        error = abs(got - want) / max(scale, 1e-30)
        kind = "relative" if relative else "scaled"
        worst[kind] = max(worst[kind], error)
        if error > tol:
            failures.append(f"step {b['step']}: {key} {got} vs {want} "
                            f"(error {error:.3g} > {tol})")
if failures:
    sys.exit("\n".join(failures[:10]))
print(f"{len(ref)} steps match: loss and log-probabilities within "
      f"{worst['relative']:.2g} relative, rewards within "
      f"{worst['scaled']:.2g} of beta |logp|")
