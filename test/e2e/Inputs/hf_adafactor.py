"""Replays tgc's Adafactor steps with Hugging Face's own implementation
(transformers.optimization.Adafactor) on the linear model of
linear-awkward.mlir, whose gradient is exactly each batch, and compares the
parameters and the second-moment state (same names as Hugging Face's state:
exp_avg_sq_row, exp_avg_sq_col, exp_avg_sq) with tgc's checkpoint.
Usage: hf_adafactor.py INIT DATA STEPS TGC_CKPT [key=value ...] where the
keys are Adafactor's arguments (relative_step, scale_parameter,
warmup_init, lr, weight_decay, clip_threshold, decay_rate)."""
import re
import sys

import torch
from transformers.optimization import Adafactor

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

init, data, steps, tgc_path = sys.argv[1:5]
kwargs = dict(lr=None, relative_step=True, scale_parameter=True,
              warmup_init=False)
for arg in sys.argv[5:]:
    key, value = arg.split("=")
    kwargs[key] = (value == "true" if value in ("true", "false")
                   else float(value))
steps = int(steps)
state = safetensors_io.load(init)
data = safetensors_io.load(data)
tgc = safetensors_io.load(tgc_path)
names = sorted(k for k in state if re.fullmatch(r"w\d+", k))
params = [torch.nn.Parameter(state[k].clone().float()) for k in names]
optimizer = Adafactor(params, **kwargs)
for t in range(steps):
    for name, p in zip(names, params):
        batch = data["x" + name[1:]]
        p.grad = batch[t % batch.shape[0]].reshape(p.shape).clone()
    optimizer.step()

worst = 0.0
for name, p in zip(names, params):
    checks = [(name, p.detach())]
    hf_state = optimizer.state[p]
    for key in ("exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq"):
        if key in hf_state:
            checks.append((f"{name}.{key}", hf_state[key]))
    for key, want in checks:
        if key not in tgc:
            sys.exit(f"tgc's checkpoint has no '{key}'")
        got = tgc[key].reshape(want.shape)
        err = ((got - want).abs() / (want.abs() + 1e-6)).max().item()
        worst = max(worst, err)
        # Adafactor's update is elementwise on a parameter's own gradient
        # (no sum over a batch here: the gradients are given) and its row and
        # column means of g^2, sums of at most 64 terms; each value passes
        # through about ten f32 operations a step, for the test's steps:
        # rtol 2e-5 is about 300 roundings of 2^-24, atol 1e-7 covers
        # values that cancel to near zero (a few ulps of the 1e-3 steps).
        if not torch.allclose(got, want, rtol=2e-5, atol=1e-7):
            sys.exit(f"{key}: differs from Hugging Face's Adafactor by "
                     f"{(got - want).abs().max().item():.3g}")
print(f"adafactor: {steps} steps match Hugging Face's Adafactor "
      f"({len(names)} parameters and their state, {len(tgc)} tensors)")
