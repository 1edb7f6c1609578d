"""PEFT's own LoRA training, the reference for tgc's: the base model of a
Hugging Face directory with the adapters of ADAPTERS (a directory
`tgc-run --save-adapters` wrote, so both start from the same adapters)
loaded trainable by PeftModel.from_pretrained, STEPS steps of
torch.optim.AdamW (tgc's defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8,
weight decay 0.01) over the adapters on the batches of DATA, the mean
cross-entropy of each step's logits (plus a mixture of experts' weighted
load-balancing loss when its config asks for it). Writes the losses as
METRICS (one JSON object per step) and the trained adapters under the
file's own names as FINAL (safetensors).
Runs in .venv-hf47 (transformers 4.47.1, PEFT 0.13).
Usage: peft_train.py BASE ADAPTERS DATA STEPS METRICS FINAL"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peft_setup  # noqa: E402
import safetensors_io  # noqa: E402

if len(sys.argv) != 7:
    sys.exit(__doc__)
base, adapters, data, steps, metrics, final = sys.argv[1:7]
model, opt = peft_setup.trainable(base, adapters)
batches = safetensors_io.load(data)
n = batches["tokens"].shape[0]
config = model.base_model.model.config
with open(metrics, "w") as out:
    for step in range(int(steps)):
        tokens = batches["tokens"][step % n]
        targets = batches["targets"][step % n]
        result = model(input_ids=tokens, use_cache=False)
        logits = result.logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
            ignore_index=-100)
        if getattr(result, "aux_loss", None) is not None:
            loss = loss + config.router_aux_loss_coef * result.aux_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.write(json.dumps({"step": step + 1, "loss": loss.item()}) + "\n")
# The trained adapters under the names of the file they started from.
names = set(load_file(os.path.join(adapters, "adapter_model.safetensors")))
trained = {k.replace(".default.", "."): v.detach().clone()
           for k, v in model.state_dict().items() if "lora_" in k}
if set(trained) != names:
    sys.exit(f"PEFT's adapters {sorted(set(trained) - names)[:4]} are not "
             f"the file's {sorted(names - set(trained))[:4]}")
save_file(trained, final)
