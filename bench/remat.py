"""Rematerialization: memory against recomputation, and what it costs in time.

1. GPT-2 124M and 1558M (B=8, T=1024, AdamW), f32 and bf16 (tg-amp): the
   planned peak (persistent region + transient arena) and the FLOPs tg-remat
   adds (% of the step's FLOPs) for --remat=none, selective, blocks, and
   budgets at 75%, 50% and 35% of the no-remat peak, with the solve time of
   tg-remat (the whole pass: solver, rewrite and its check). An infeasible
   budget shows the smallest peak tgc reaches instead.
2. In-place reuse alone: the planned peak of each model without it (the
   `in-place=false` planner) and with it.
3. Measured CPU step time of a small GPT-2 (4 layers, C=256, T=256, B=8)
   with each policy, all in one run, against none.
4. The budget solver against the exact optimum of Checkmate's MILP (CBC,
   test/Transforms/Inputs/checkmate.py) on an MLP and a 1-layer GPT-2: the
   tables of test/Transforms/Inputs/remat_optimality.py, with a longer
   time limit than the lit test's.

Writes bench/REMAT.md.

  /usr/bin/python3 bench/remat.py [--build build] [--quick]
"""
import argparse
import json
import os
import re
import tempfile

from common import ROOT, best_step_times, machine, run, small_gpt2

GiB = 1024 ** 3


def plan(bins, model, amp, remat, tmp):
    """Runs the training pipeline with `remat`; returns a dict with the
    planned peak, arena, added FLOPs, solve time, or the floor."""
    report = os.path.join(tmp, "plan.json")
    proc = run([f"{bins}/tgc-opt", model,
                f"--tgc-train-pipeline=amp={amp} remat={remat}",
                f"--tg-plan-memory=memory-report={report} print=false",
                "-o", os.devnull], check=False)
    if proc.returncode != 0:
        floor = re.search(r"smallest planned peak tgc reaches is [^(]+\((\d+) "
                          r"bytes", proc.stderr)
        if not floor:
            raise RuntimeError(proc.stderr)
        return {"floor": int(floor.group(1))}
    data = json.load(open(report))
    summary = re.search(r"added FLOPs (\d+) .*?, ([0-9.]+) ms", proc.stderr)
    added = int(summary.group(1)) if summary else 0
    return {"peak": data["persistent_bytes"] + data["arena_bytes"],
            "added": added,
            "flops": data["flops"] - added,
            "ms": float(summary.group(2)) if summary else None}


def no_reuse_peak(bins, model, amp, tmp):
    report = os.path.join(tmp, "noreuse.json")
    run([f"{bins}/tgc-opt", model, f"--tgc-train-pipeline=amp={amp}",
         f"--tg-plan-memory=memory-report={report} print=false in-place=false",
         "-o", os.devnull])
    data = json.load(open(report))
    return data["persistent_bytes"] + data["arena_bytes"]


def memory_table(bins, tmp, presets):
    lines = ["| model | precision | policy | planned peak | vs none | "
             "added FLOPs (% of step) | solve time |",
             "|---|---|---|---|---|---|---|"]
    reuse = ["| model | precision | peak without in-place reuse | with it | "
             "change |", "|---|---|---|---|---|"]
    for preset in presets:
        model = os.path.join(tmp, f"{preset}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "--batch", "8",
             "-o", model])
        for amp, label in (("none", "f32"), ("bf16", "bf16")):
            base = plan(bins, model, amp, "none", tmp)
            before = no_reuse_peak(bins, model, amp, tmp)
            reuse.append(f"| GPT-2 {preset} | {label} | {before / GiB:.2f} GiB "
                         f"| {base['peak'] / GiB:.2f} GiB | "
                         f"{(base['peak'] - before) / before * 100:+.1f}% |")
            policies = [("none", "none"), ("selective", "selective"),
                        ("blocks", "blocks")]
            for share in (75, 50, 35):
                budget = base["peak"] * share // 100
                policies.append((f"budget={budget}",
                                 f"budget {share}% ({budget / GiB:.2f} GiB)"))
            for remat, name in policies:
                row = plan(bins, model, amp, remat, tmp)
                if "floor" in row:
                    lines.append(
                        f"| GPT-2 {preset} | {label} | {name} | infeasible: "
                        f"the floor is {row['floor'] / GiB:.2f} GiB | "
                        f"{(row['floor'] - base['peak']) / base['peak'] * 100:+.1f}% "
                        f"| | |")
                    continue
                ms = f"{row['ms']:.0f} ms" if row["ms"] is not None else ""
                lines.append(
                    f"| GPT-2 {preset} | {label} | {name} | "
                    f"{row['peak'] / GiB:.2f} GiB | "
                    f"{(row['peak'] - base['peak']) / base['peak'] * 100:+.1f}% | "
                    f"{row['added'] / 1e12:.2f} TFLOP "
                    f"({row['added'] / row['flops'] * 100:.1f}%) | {ms} |")
    return lines, reuse


def step_times(bins, tmp, steps):
    model = os.path.join(tmp, "small.mlir")
    small_gpt2(bins, model)
    base = plan(bins, model, "none", "none", tmp)
    blocks = plan(bins, model, "none", "blocks", tmp)
    # A budget halfway between the peaks of none and blocks.
    policies = ["none", "selective", "blocks",
                f"budget={(base['peak'] + blocks['peak']) // 2}"]
    exes = {}
    for remat in policies:
        exe = os.path.join(tmp, f"small-{remat}.tgx")
        report = exe + ".json"
        run([f"{bins}/tgc-compile", model, "-o", exe, f"--remat={remat}",
             "--memory-report", report])
        data = json.load(open(report))
        exes[remat] = (exe, data["persistent_bytes"] + data["arena_bytes"],
                       data["remat"]["recomputed_flops"], data["flops"])
    times = best_step_times(bins, {remat: exes[remat][0] for remat in policies},
                            steps, tmp)
    lines = ["| policy | planned peak | recomputed FLOPs (% of step) | "
             "step time | vs none |", "|---|---|---|---|---|"]
    for remat in policies:
        _, peak, added, flops = exes[remat]
        name = remat if not remat.startswith("budget") else \
            "budget halfway between none and blocks"
        lines.append(f"| {name} | {peak / 1024 ** 2:.1f} MiB | "
                     f"{added / (flops - added) * 100:.1f}% | "
                     f"{times[remat] * 1e3:.1f} ms | "
                     f"{(times[remat] / times['none'] - 1) * 100:+.1f}% |")
    return lines


def optimality(bins, tmp, time_limit):
    driver = os.path.join(ROOT, "test", "Transforms", "Inputs",
                          "remat_optimality.py")
    lines = []
    for title, models_args in (
            ("MLP 64-128-128-128-10, batch 256, f32, AdamW",
             ["mlp", "--widths=64,128,128,128,10", "--batch=256"]),
            ("GPT-2, 1 layer (preset tiny), B=4, T=64, f32, AdamW",
             ["gpt2", "--preset=tiny", "--n-layer=1", "--batch=4",
              "--seq-len=64"])):
        model = os.path.join(tmp, "opt.mlir")
        graph = os.path.join(tmp, "opt.json")
        run([f"{bins}/tgc-models"] + models_args + ["-o", model])
        run([f"{bins}/tgc-opt", model, "--tgc-train-pipeline=",
             f"--tg-remat=export-graph={graph}", "-o", os.devnull])
        proc = run(["/usr/bin/python3", driver, f"{bins}/tgc-opt", model,
                    graph, "6", "1.05", "--time-limit", str(time_limit)],
                   check=False)
        lines += [f"### {title}", "", "```", proc.stdout.strip(), "```", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true",
                    help="124M only and fewer timed steps")
    args = ap.parse_args()
    bins = os.path.join(args.build, "bin")
    presets = ["124M"] if args.quick else ["124M", "1558M"]
    with tempfile.TemporaryDirectory() as tmp:
        memory, reuse = memory_table(bins, tmp, presets)
        times = step_times(bins, tmp, 5 if args.quick else 20)
        time_limit = 10 if args.quick else 60
        best = optimality(bins, tmp, time_limit)
    cpu = machine(bins)
    out = ["# Rematerialization", "",
           "Generated by `/usr/bin/python3 bench/remat.py`; every figure "
           "below is measured in the run that wrote this file.", "",
           "## Planned peak against added FLOPs", "",
           "GPT-2, B=8, T=1024, AdamW. The planned peak is what the device "
           "needs: the persistent region (weights, AdamW state, batch) plus "
           "the transient arena, from tg-plan-memory's report. Added FLOPs "
           "are those of the ops `tg-remat` inserts, as a share of the "
           "step's FLOPs without them (the cost interface's count). Budgets "
           "are 75%, 50% and 35% of the `none` peak; the solve time is the "
           "whole tg-remat pass on this machine (solver, IR rewrite, and "
           "its re-planning check).", ""] + memory + [
           "", "## In-place reuse", "",
           "The planned peak with `--remat=none`, without and with results "
           "taking the buffer of an operand that dies at their op "
           "(InPlaceOpInterface; `--tg-plan-memory=in-place=false` turns "
           "it off). The `none` rows above include reuse and tg-remat's "
           "sinking of the 16-bit weight copies.", ""] + reuse + [
           "", "## CPU step time", "",
           "GPT-2 with 4 layers, C=256, 4 heads, T=256, B=8, V=512, on the "
           f"CPU backend ({cpu}); mean of {5 if args.quick else 20} steps "
           "after 2 warm-up steps, best of 3 interleaved rounds. The losses "
           "of every policy are bitwise those of `none` "
           "(test/e2e/remat-training.test).", ""] + times + [
           "", "The time recomputation costs here is far above its FLOP "
           "share: what `selective` recomputes (layer norms, GeLUs, "
           "transposes, casts) moves bytes rather than doing FLOPs, the "
           "cost model counts a transpose as free, and the CPU backend's "
           "elementwise kernels are bound by memory where its GEMMs are "
           "bound by arithmetic. The solver minimises FLOPs, as the table "
           "above reports them; weighing bytes moved as well is the next "
           "step for time on a real device.", "",
           "## Against the optimum", "",
           "The budget solver's added FLOPs against Checkmate's MILP (Jain "
           "et al., MLSys 2020) solved by CBC over the buffer graph tgc "
           "exports, at six budgets from tgc's floor to the peak without "
           f"recomputation, CBC limited to {time_limit} s per budget. "
           "`tgc` is tg-remat as it runs; `fixed order` is the solver with "
           "`reorder=false`, Checkmate's setting (recompute only, no op "
           "moves); `MILP` is CBC's proven optimum (`optimal`) or the best "
           "schedule it found (`timeout`), and `proven` divides tgc's "
           "FLOPs by CBC's lower bound, a proven upper bound on tgc's "
           "distance from the optimum. A dash: no schedule meets the "
           "budget. The last lines probe a budget 5% below tgc's floor.",
           ""] + best
    with open(os.path.join(ROOT, "bench", "REMAT.md"), "w") as f:
        f.write("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
