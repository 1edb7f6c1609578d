"""Compares two training runs: a tgc-run with PyTorch's, or two tgc runs.

Usage:
  compare_runs.py TGC.jsonl REF.jsonl TGC.safetensors REF.safetensors TOL
      [NAME:BEGIN:END ...]
  compare_runs.py TGC.jsonl REF.jsonl TGC.safetensors REF.safetensors FACTOR
      --exact=REF64.jsonl,REF64.safetensors
      [--f32=OTHER.jsonl,OTHER.safetensors ...] [NAME:BEGIN:END ...]

With TOL (two tgc runs that differ only in the order of their sums): every
step's loss within TOL relative, and every final float tensor within TOL
in relative 2-norm (||a - b|| <= TOL * ||b||); integer tensors (the step
counter) equal. TOL is a number whose reason the test states, or
order:N:L, the bound of bounds.py on sums regrouped over N Adam steps.

With --exact (tgc against PyTorch): REF64 is the same training in float64
(torch_reference.py or bert_reference.py --dtype=float64), exact for this
purpose (its rounding, 2^-53, is 2^29 times finer than f32's). Each f32
run is measured against it: the loss by its largest relative error over
the steps, each float tensor by ||x - ref64|| / ||ref64||. How far f32
rounding alone moves a quantity depends on the problem: its reduction
lengths, its conditioning, and Adam, which divides each gradient element
by its own running RMS, so that where a gradient is small beside eps or
beside its own rounding, rounding noise becomes a step of up to lr. That
scale is measured on the problem itself: REF and every --f32 run are
PyTorch f32 runs of it whose sums run in other orders (--permute: each
batch's rows shuffled, the same training in exact arithmetic), and the
scale of a quantity is the largest error any of them makes. tgc's error
must be at most FACTOR times that scale (or FLOOR). FACTOR 4: tgc is
another f32 order of the same sums, plus a few roundings PyTorch does not
make (gradients accumulated over micro-batches, vectorized exp/tanh/erf
within 1-2 ulps); an error beyond 4 times the largest of PyTorch's is a
different computation, not rounding. FLOOR = 16 * 2^-24 (9.5e-7), a few
ulps of a stored f32 value: where every PyTorch run happens to be nearly
exact, no less can be asked.

The per-tensor norm rather than a per-element test: an element whose
gradient is nearly zero steps by up to lr on rounding noise alone, in
every implementation alike, so its own relative error says nothing.
Each NAME:BEGIN:END names a slice whose gradient is zero in exact
arithmetic (the key part of an attention bias: softmax ignores a shift of
all scores of a query); its elements are pure rounding noise turned into
steps, so they are only checked to have stayed near zero (|x| <= 1e-4, or
NAME:BEGIN:END:BOUND) in every run, then left out. Adam turns even tiny
noise into steps of up to lr, so how far such a slice drifts depends on
how small its noise is, which differs between kernels."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounds  # noqa: E402
import safetensors_io  # noqa: E402

FLOOR = bounds.FLOOR_F32

tgc_metrics, ref_metrics, tgc_final, ref_final, tol_arg = sys.argv[1:6]
exact, others, zero_slices = None, [], {}
for spec in sys.argv[6:]:
    if spec.startswith("--exact="):
        exact = spec[len("--exact="):].split(",")
    elif spec.startswith("--f32="):
        others.append(spec[len("--f32="):].split(","))
    else:
        name, begin, end, *bound = spec.split(":")
        zero_slices.setdefault(name, []).append(
            (int(begin), int(end), float(bound[0]) if bound else 1e-4))


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if line.strip()]


def zero_out(name, sides):
    """Checks the named zero-gradient slices of `name` stayed near zero in
    every run (label, tensor), then zeroes them there."""
    for begin, end, bound in zero_slices.get(name, []):
        for side, t in sides:
            drift = float(t[begin:end].abs().max())
            if drift > bound:
                sys.exit(f"{name}[{begin}:{end}] moved to {drift:.3g} in {side}")
            t[begin:end] = 0


def relative(x, y):
    return float((x - y).norm() / y.norm().clamp(min=1e-30))


ours, theirs = losses(tgc_metrics), losses(ref_metrics)
if len(ours) != len(theirs):
    sys.exit(f"{len(ours)} steps against {len(theirs)}")
a, b = safetensors_io.load(tgc_final), safetensors_io.load(ref_final)
for name in b:
    if name not in a:
        sys.exit(f"{name} is missing from {tgc_final}")
    if not b[name].is_floating_point() and not torch.equal(a[name], b[name]):
        sys.exit(f"{name} differs: {a[name].tolist()} vs {b[name].tolist()}")
floats = [name for name in b if b[name].is_floating_point()]

if exact is None:
    tol = bounds.tolerance(tol_arg)
    worst_loss = max(abs(x - y) / abs(y) for x, y in zip(ours, theirs))
    if worst_loss > tol:
        sys.exit(f"losses differ by {worst_loss:.3g} relative, more than "
                 f"{bounds.describe(tol_arg)}: {ours} vs {theirs}")
    worst_param, worst_name, worst_element = 0.0, "", 0.0
    for name in floats:
        got, ref = a[name].double(), b[name].double()
        zero_out(name, (("the first run", got), ("the second run", ref)))
        err = relative(got, ref)
        worst_element = max(worst_element, float(
            (got - ref).abs().max() / ref.abs().max().clamp(min=1e-30)))
        if err > worst_param:
            worst_param, worst_name = err, name
    if worst_param > tol:
        sys.exit(f"parameter {worst_name} differs by {worst_param:.3g} "
                 f"relative, more than {bounds.describe(tol_arg)}")
    print(f"{len(ours)} steps match: worst loss error {worst_loss:.2e}, "
          f"worst parameter error {worst_param:.2e} ({worst_name or '-'}), "
          f"worst element {worst_element:.2e} (bound "
          f"{bounds.describe(tol_arg)})")
    sys.exit(0)

factor = float(tol_arg)
truth = losses(exact[0])
c = safetensors_io.load(exact[1])
f32_runs = [(theirs, b)] + [(losses(m), safetensors_io.load(f))
                            for m, f in others]
for run_losses, _ in f32_runs:
    if len(run_losses) != len(truth) or len(ours) != len(truth):
        sys.exit("the runs have different step counts")


def loss_error(values):
    return max(abs(x - t) / abs(t) for x, t in zip(values, truth))


# (quantity, tgc's error, the largest PyTorch f32 error), against float64.
rows = [("loss", loss_error(ours), max(loss_error(l) for l, _ in f32_runs))]
for name in floats:
    if name not in c:
        sys.exit(f"{name} is missing from {exact[1]}")
    ref64 = c[name].double()
    got = a[name].double()
    runs = [f[name].double() for _, f in f32_runs]
    zero_out(name, [("tgc", got), ("PyTorch f64", ref64)] +
             [(f"PyTorch f32 run {i + 1}", r) for i, r in enumerate(runs)])
    rows.append((name, relative(got, ref64),
                 max(relative(r, ref64) for r in runs)))


def ratio(row):
    return row[1] / max(row[2], FLOOR / factor)


name, ours_err, scale = max(rows, key=ratio)
if ours_err > max(factor * scale, FLOOR):
    sys.exit(f"{name}: tgc's error against float64 is {ours_err:.3g} "
             f"relative, more than {factor:g} times the largest of "
             f"{len(f32_runs)} PyTorch f32 runs' ({scale:.3g})")
print(f"{len(ours)} steps match PyTorch to f32 accuracy: worst ratio "
      f"{ratio((name, ours_err, scale)):.2f} (bound {factor:g}) on {name}: tgc "
      f"{ours_err:.2e}, PyTorch f32 (largest of {len(f32_runs)}) {scale:.2e} "
      f"against float64; loss: tgc {rows[0][1]:.2e}, PyTorch f32 "
      f"{rows[0][2]:.2e}")
