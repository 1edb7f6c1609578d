"""Compares tg-remat's budget solver with the exact optimum of the Checkmate
MILP (checkmate.py, solved by CBC) on one training step.

For COUNT budgets from tgc's floor (the smallest peak tg-remat reaches) up
to the peak without recomputation, runs `tgc-opt --tgc-train-pipeline=...
remat=budget=B` and the MILP at the same budget (minus the persistent bytes,
which the exported graph leaves out), and prints, per budget, tgc's added
FLOPs, the MILP's and their ratio. Where CBC proves its optimum, the ratio
is tgc's against the optimum. Where it stops at the time limit, the best
schedule it found and its proven lower bound are shown: tgc / bound bounds
the true ratio from above. Also probes one budget below tgc's floor, and
says whether the MILP meets it.

tgc's schedules may also sink backward ops (Checkmate keeps the order
fixed), so tgc can need fewer FLOPs than the MILP, and meet budgets the
MILP finds infeasible. The solver alone is measured by tg-remat with
`reorder=false` (the MILP's setting), shown beside it as "fixed order".

Exits 1 when tgc adds more than RATIO times the MILP's proven optimum or
its best schedule found, or when the MILP meets a budget at or above tgc's
floor that tgc does not.

Usage: remat_optimality.py TGC_OPT MODEL.mlir GRAPH.json COUNT RATIO
       [--pipeline OPTIONS] [--time-limit SECONDS]
GRAPH.json is what `--tg-remat=export-graph=...` wrote for the same step.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tgc_budget(args, budget, reorder=True):
    """(added FLOPs, None) when tgc meets `budget`, else (None, floor)."""
    if reorder:
        passes = [f"--tgc-train-pipeline={args.pipeline} remat=budget={budget}"]
    else:
        passes = [f"--tgc-train-pipeline={args.pipeline}",
                  f"--tg-remat=policy=budget={budget} reorder=false"]
    proc = subprocess.run(
        [args.tgc_opt, args.model] + passes + ["-o", os.devnull],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode == 0:
        added = re.search(r"added FLOPs (\d+)", proc.stderr)
        return int(added.group(1)) if added else 0, None
    floor = re.search(r"smallest planned peak tgc reaches is [^(]+\((\d+) bytes",
                      proc.stderr)
    if not floor:
        sys.exit(proc.stderr)
    return None, int(floor.group(1))


def milp(args, budgets):
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "checkmate.py"), args.graph,
         "--time-limit", str(args.time_limit)] +
        [a for b in budgets for a in ("--budget", str(b))],
        stdout=subprocess.PIPE, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tgc_opt")
    ap.add_argument("model")
    ap.add_argument("graph")
    ap.add_argument("count", type=int)
    ap.add_argument("ratio", type=float)
    ap.add_argument("--pipeline", default="")
    ap.add_argument("--time-limit", type=float, default=600)
    args = ap.parse_args()

    graph = json.load(open(args.graph))
    persistent = graph["persistent_bytes"]
    plain = int(subprocess.run(
        [sys.executable, os.path.join(HERE, "checkmate.py"), args.graph,
         "--no-remat-peak"], stdout=subprocess.PIPE, text=True,
        check=True).stdout)
    _, floor = tgc_budget(args, 1)
    top = persistent + plain
    budgets = sorted({floor + (top - floor) * i // args.count
                      for i in range(args.count)})
    below = persistent + (floor - persistent) * 19 // 20
    results = milp(args, [b - persistent for b in [below] + budgets])

    print(f"{graph.get('function', args.model)}: {len(graph['nodes'])} nodes, "
          f"peak without recomputation {top} bytes, tgc's floor {floor} bytes")
    print("added FLOPs per budget (bytes); ratio: tgc / MILP; 'proven': tgc / "
          "the MILP's lower bound")
    print(f"{'budget':>9} {'tgc':>11} {'fixed order':>11} {'MILP':>11} "
          f"{'status':>10} {'ratio':>7} {'fixed':>7} {'proven':>7} {'solve':>7}")

    def ratio_of(added, found):
        if added is None or found is None:
            return None
        return added / found if found else (1.0 if added == 0 else float("inf"))

    def show(value, width, digits=None):
        if value is None:
            return f"{'-':>{width}}"
        return f"{value:>{width}.{digits}f}" if digits else f"{value:>{width}}"

    failures, worst, worst_fixed, fixed_short = 0, 0.0, 0.0, 0
    for budget, result in zip(budgets, results[1:]):
        added, _ = tgc_budget(args, budget)
        fixed, _ = tgc_budget(args, budget, reorder=False)
        found, status = result["added_flops"], result["status"]
        bound = result["bound"]
        ratio, ratio_fixed = ratio_of(added, found), ratio_of(fixed, found)
        # A bound below one FLOP proves nothing (the tie-break costs).
        proven = ratio_of(added, bound) if bound is not None and bound >= 1 else None
        if found is not None and added is None:
            failures += 1
        if ratio is not None and ratio > args.ratio:
            failures += 1
        if found is not None and fixed is None:
            fixed_short += 1
        if status == "optimal":
            worst = max(worst, ratio or 0.0)
            worst_fixed = max(worst_fixed, ratio_fixed or 0.0)
        print(f"{budget:>9} {show(added, 11)} {show(fixed, 11)} {show(found, 11)} "
              f"{status:>10} {show(ratio, 7, 3)} {show(ratio_fixed, 7, 3)} "
              f"{show(proven, 7, 3)} {result['solve_seconds']:>6.1f}s")
    low = results[0]
    print(f"below tgc's floor, at {below} bytes: MILP "
          f"{'meets it' if low['peak'] is not None else low['status']}"
          + (f" adding {low['added_flops']} FLOPs" if low["peak"] is not None else ""))
    print(f"worst ratio to a proven optimum: {worst:.3f} (fixed order "
          f"{worst_fixed:.3f}); budgets the MILP meets and fixed order does "
          f"not: {fixed_short}")
    print(f"{failures} budgets fail (limit {args.ratio})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
