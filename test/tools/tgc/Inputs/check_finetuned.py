"""Loads what `tgc finetune` wrote as its users will and checks it: a
model directory with transformers (AutoModelForCausalLM, no key missing or
left over), or an adapter directory with PEFT over BASE (every tensor of
adapter_model.safetensors is the loaded adapter's); then the model's loss
on the examples of EVAL.tgcd (the next token wherever the loss mask
trains it, averaged over those positions, as tgc's eval_step computes it)
is the `eval loss` tgc printed in LOG, within 1e-4.
Usage: check_finetuned.py OUT EVAL.tgcd LOG [BASE]"""
import os
import re
import sys

import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tools", "python"))
import tgcd  # noqa: E402

out, data, log = sys.argv[1], sys.argv[2], sys.argv[3]
base = sys.argv[4] if len(sys.argv) > 4 else None
if base is None:
    model, info = AutoModelForCausalLM.from_pretrained(
        out, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    assert not problems, f"{out}: {problems}"
    print(f"{out}: transformers loads it, no key missing or left over")
else:
    from peft import PeftModel
    from safetensors.torch import load_file
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), out)
    loaded = dict(model.named_parameters())
    saved = load_file(os.path.join(out, "adapter_model.safetensors"))
    for name, tensor in saved.items():
        key = "base_model.model." + name[len("base_model.model."):].replace(
            ".weight", ".default.weight")
        assert key in loaded, f"{name}: not an adapter PEFT loaded"
        assert torch.equal(loaded[key].detach(), tensor), f"{name} differs"
    print(f"{out}: PEFT loads its {len(saved)} adapter tensors over {base}")
model.eval()

dataset = tgcd.read_tgcd(data)
total, count = 0.0, 0
with torch.no_grad():
    for i in range(dataset["num_examples"]):
        ids = [int(t) for t in tgcd.example(dataset, i)]
        mask = [int(m) for m in tgcd.example_mask(dataset, i)]
        logits = model(torch.tensor([ids])).logits[0].double()
        for t in range(len(ids) - 1):
            if mask[t + 1]:
                total -= torch.log_softmax(logits[t], -1)[ids[t + 1]].item()
                count += 1
mine = total / count
printed = float(re.findall(r"eval loss ([0-9.]+)", open(log).read())[-1])
assert abs(mine - printed) <= 1e-4, f"eval loss {mine} against tgc's {printed}"
print(f"eval loss agrees with tgc's within 1e-4 over {count} positions")
