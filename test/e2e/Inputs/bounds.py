"""Tolerances that follow from arithmetic: what the comparison scripts
(compare_runs.py, compare_losses.py) accept as TOL.

A plain number is a relative tolerance whose reason the test states
beside it. `order:N:L` is the bound on two f32 computations of the same
training run that differ only in the order of their sums (reductions and
GEMM contractions grouped differently: padded lengths, ranks, backends,
OpenBLAS kernel sets): a sum of L f32 terms regrouped moves by about
sqrt(L) roundings of its terms (u = 2^-24; the probabilistic bound of
Higham and Mary, 2019, rather than the worst case L u that independent
roundings do not reach); Adam's update m / sqrt(v) moves by at most twice
its gradient's relative change; and N optimizer steps add up such moves:
2 N sqrt(L) u. L is the longest sum whose grouping differs."""
import math

U_F32 = 2.0 ** -24
# A few ulps of a stored f32 value: the least error that can be asked of an
# f32 result where the reference it is measured against happens to be
# nearly exact (compare_runs.py and compare_eval.py --exact).
FLOOR_F32 = 16 * U_F32


def order_bound(steps, length):
    return 2.0 * steps * math.sqrt(length) * U_F32


def tolerance(arg):
    """TOL as given on a command line: a number, or order:N:L."""
    if arg.startswith("order:"):
        _, steps, length = arg.split(":")
        return order_bound(int(steps), int(length))
    return float(arg)


def describe(arg):
    if arg.startswith("order:"):
        _, steps, length = arg.split(":")
        return (f"2*{steps}*sqrt({length})*2^-24 = "
                f"{order_bound(int(steps), int(length)):.2e}")
    return arg
