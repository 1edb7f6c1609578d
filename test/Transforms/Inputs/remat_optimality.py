"""Compares tg-remat's budget solver with the exact optimum of the Checkmate
MILP (checkmate.py, solved by CBC) on one training step.

For budgets from tgc's floor (the smallest peak tg-remat reaches) up to the
peak without recomputation, runs `tgc-opt --tg-remat=policy=budget=B` and
the MILP at the same budget (minus the persistent bytes, which the exported
graph leaves out), and prints, per budget, both added FLOPs and their
ratio. Fails (exit 1) when tgc adds more than RATIO times the optimum, or
when the MILP finds a budget feasible that tgc does not.

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


def tgc_budget(args, budget):
    """(added FLOPs, None) when tgc meets `budget`, else (None, floor)."""
    proc = subprocess.run(
        [args.tgc_opt, args.model,
         f"--tgc-train-pipeline={args.pipeline} remat=budget={budget}",
         "-o", os.devnull],
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
    results = milp(args, [b - persistent for b in budgets])

    print(f"{graph.get('function', args.model)}: {len(graph['nodes'])} nodes, peak without "
          f"recomputation {top} bytes, tgc's floor {floor} bytes")
    print("budget      tgc added FLOPs   MILP optimum   ratio   MILP solve")
    failures, worst = 0, 1.0
    for budget, result in zip(budgets, results):
        added, _ = tgc_budget(args, budget)
        optimum = result["added_flops"]
        status = result["status"]
        if status == "infeasible":
            line = "MILP: infeasible"
            if added is not None:
                line += " (tgc found a schedule: the models disagree)"
                failures += 1
        elif added is None:
            line = f"tgc: infeasible, MILP: {optimum}"
            failures += 1
        elif status != "optimal":
            line = f"{added:>15} {optimum:>14}  (MILP {status}, not proven)"
        else:
            ratio = added / optimum if optimum else (1.0 if added == 0
                                                     else float("inf"))
            worst = max(worst, ratio)
            if ratio > args.ratio:
                failures += 1
            line = f"{added:>15} {optimum:>14}  {ratio:6.3f}"
        print(f"{budget:<11} {line}   {result['solve_seconds']:.1f} s")
    print(f"worst ratio {worst:.3f}; {failures} budgets fail "
          f"(limit {args.ratio})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
