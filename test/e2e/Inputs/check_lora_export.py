"""Checks tgc-run's LoRA exports against torch's arithmetic.
Usage: check_lora_export.py FINAL ADAPTERS MERGED SCALE conv1d|linear
FINAL is the checkpoint saved at the end of training (--save), ADAPTERS
what --save-adapters wrote, MERGED what --export-merged wrote. The adapter
file holds exactly the lora_A/lora_B tensors under PEFT's names
(base_model.model.<name>), bitwise; the merged file holds every parameter
but the adapters, each adapted weight equal to W + SCALE * (B @ A) (its
transpose for GPT-2's [in, out] Conv1D weights), computed by torch in
float64, within 1e-6 relative, and the others bitwise."""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

final, adapters, merged = (safetensors_io.load(p) for p in sys.argv[1:4])
scale, layout = float(sys.argv[4]), sys.argv[5]
lora = {k: v for k, v in final.items()
        if k.endswith((".lora_A.weight", ".lora_B.weight"))}
want_keys = {"base_model.model." + k for k in lora}
if set(adapters) != want_keys:
    sys.exit(f"adapter names {sorted(adapters)} != {sorted(want_keys)}")
for k, v in lora.items():
    if not torch.equal(adapters["base_model.model." + k], v):
        sys.exit(f"adapter {k} differs from the trained tensor")
params = {k: v for k, v in final.items()
          if ".lora_" not in k and not k.endswith((".exp_avg", ".exp_avg_sq"))
          and not k.startswith("optimizer.")}
if set(merged) != set(params):
    sys.exit(f"merged names {sorted(merged)} != {sorted(params)}")
adapted = 0
for k, w in params.items():
    module = k[:-len(".weight")] if k.endswith(".weight") else k
    if module + ".lora_A.weight" not in lora:
        if not torch.equal(merged[k], w):
            sys.exit(f"{k} is not adapted but changed in the merged file")
        continue
    a = lora[module + ".lora_A.weight"].double()
    b = lora[module + ".lora_B.weight"].double()
    delta = scale * (b @ a)
    want = w.double() + (delta.t() if layout == "conv1d" else delta)
    err = float((merged[k].double() - want).abs().max() / want.abs().max())
    # tgc's merge is one f32 rank-r product and one addition per element:
    # a few roundings of 2^-24 against float64; 1e-6 is 16 of them.
    if err > 1e-6:
        sys.exit(f"merged {k} differs from W + scale B A by {err:.3g}")
    adapted += 1
print(f"{len(lora)} adapter tensors under PEFT's names; {adapted} merged "
      f"weights equal W + scale (B A){'^T' if layout == 'conv1d' else ''}")
