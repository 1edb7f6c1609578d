"""Checks a LoRA adapter directory that `tgc-run --save-adapters DIR` wrote
with PEFT's own loader: PeftModel.from_pretrained over the base model of
BASE (a Hugging Face model directory) reads adapter_config.json and takes
every adapter tensor of the directory (each lora_A/lora_B weight of the
PEFT model equals the file's), and its merge_and_unload equals the merged
model tgc-run --save-hf wrote to MERGED within 1e-6 (relative to each
tensor's largest magnitude).
Runs in the transformers/PEFT venv of scripts/install-deps.sh.
Usage: peft_directory.py BASE ADAPTERS MERGED"""
import json
import sys

import torch
import transformers
from peft import PeftModel
from safetensors.torch import load_file

if len(sys.argv) != 4:
    sys.exit(__doc__)
base, adapters, merged = sys.argv[1:4]
config = json.load(open(f"{base}/config.json"))
cls = getattr(transformers, config["architectures"][0])
model = PeftModel.from_pretrained(cls.from_pretrained(base), adapters)
saved = load_file(f"{adapters}/adapter_model.safetensors")
state = {k.replace(".default.", "."): v
         for k, v in model.state_dict().items() if "lora_" in k}
if set(state) != set(saved):
    sys.exit(f"PEFT's adapters {sorted(set(state) - set(saved))} are not in "
             f"the file; the file's {sorted(set(saved) - set(state))} are "
             f"not PEFT's")
for name, tensor in saved.items():
    if not torch.equal(state[name], tensor):
        sys.exit(f"PEFT did not load {name}")
reference = model.merge_and_unload().state_dict()
ours = cls.from_pretrained(merged).state_dict()
worst = 0.0
for name, tensor in ours.items():
    scale = reference[name].abs().max().clamp(min=1e-12)
    worst = max(worst, float((tensor - reference[name]).abs().max() / scale))
if worst > 1e-6:
    sys.exit(f"tgc's merged model differs from PEFT's merge by {worst:.3g}")
print(f"PEFT loads {adapters} ({len(saved)} adapter tensors, "
      f"{json.load(open(f'{adapters}/adapter_config.json'))['target_modules']}); "
      f"its merge_and_unload equals tgc's --save-hf model (worst relative "
      f"error {worst:.1e})")
