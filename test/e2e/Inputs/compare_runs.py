"""Compares a tgc-run with the PyTorch reference: every step's loss within
TOL relative, and every final parameter tensor within TOL of the
reference in relative 2-norm (||a - b|| <= TOL * ||b||). The norm is per
tensor, not per element: an element whose gradient is nearly zero makes
Adam step by up to lr on rounding noise alone, in both implementations
alike, so its own relative error says nothing about correctness. The
largest elementwise error (relative to the tensor's largest magnitude) is
printed too.
Two tgc runs compare the same way (integer tensors, the step counter, must
then be equal).
Usage: compare_runs.py TGC.jsonl REF.jsonl TGC.safetensors REF.safetensors TOL
           [NAME:BEGIN:END ...]
Each NAME:BEGIN:END names a slice whose gradient is zero in exact
arithmetic (the key part of an attention bias: softmax ignores a shift of
all scores of a query). Adam turns the rounding noise in such gradients into
steps of up to lr, different in every implementation, so those elements are
only checked to have stayed near zero (|x| <= 1e-4) on both sides."""
import json
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

tgc_metrics, ref_metrics, tgc_final, ref_final, tol = sys.argv[1:6]
tol = float(tol)
zero_slices = {}
for spec in sys.argv[6:]:
    name, begin, end = spec.split(":")
    zero_slices.setdefault(name, []).append((int(begin), int(end)))
ours = [json.loads(l)["loss"] for l in open(tgc_metrics)]
theirs = [json.loads(l)["loss"] for l in open(ref_metrics)]
assert len(ours) == len(theirs), (len(ours), len(theirs))
worst_loss = max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))
if worst_loss > tol:
    sys.exit(f"losses differ by {worst_loss:.3g} relative: {ours} vs {theirs}")
a, b = safetensors_io.load(tgc_final), safetensors_io.load(ref_final)
worst_param, worst_name, worst_element = 0.0, "", 0.0
for name, ref in b.items():
    got = a[name].clone()
    ref = ref.clone()
    if not ref.is_floating_point():
        # Counters (two tgc runs compared: optimizer.step) must be equal.
        if not torch.equal(got, ref):
            sys.exit(f"{name} differs: {got.tolist()} vs {ref.tolist()}")
        continue
    for begin, end in zero_slices.get(name, []):
        for side, t in (("tgc", got), ("PyTorch", ref)):
            drift = float(t[begin:end].abs().max())
            if drift > 1e-4:
                sys.exit(f"{name}[{begin}:{end}] moved to {drift:.3g} in {side}")
        got[begin:end] = 0
        ref[begin:end] = 0
    err = float((got - ref).norm() / ref.norm().clamp(min=1e-12))
    worst_element = max(worst_element, float(
        (got - ref).abs().max() / ref.abs().max().clamp(min=1e-12)))
    if err > worst_param:
        worst_param, worst_name = err, name
if worst_param > tol:
    sys.exit(f"parameter {worst_name} differs by {worst_param:.3g} relative")
print(f"{len(ours)} steps match PyTorch: worst loss error {worst_loss:.2e}, "
      f"worst parameter error {worst_param:.2e} ({worst_name or '-'}), "
      f"worst element {worst_element:.2e}")
