"""Trains a user's PyTorch module as tgc-import imports it, in PyTorch, as
the reference for the imported model's training: FACTORY() from FILE (the
same initialisation the import's --weights holds), torch.optim.AdamW with
tgc's defaults (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on
every parameter) on DATA's batches as tgc-run takes them (step i: batch i
mod N), the loss the cross-entropy of the logits against the batch's
targets (-100 ignored); writes each step's loss (METRICS, JSON lines) and
the final parameters (FINAL, by state-dict name).
Usage: import_reference.py FILE.py:FACTORY classify|causal-lm DATA STEPS
       METRICS FINAL"""
import importlib.util
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

spec, task, data, steps, metrics, final = sys.argv[1:7]
path, name = spec.rsplit(":", 1)
loader = importlib.util.spec_from_file_location("user_module", path)
module = importlib.util.module_from_spec(loader)
loader.loader.exec_module(module)
model = getattr(module, name)()
model.train()
torch.set_num_threads(1)
batches = safetensors_io.load(data)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                        eps=1e-8, weight_decay=0.01)
first = "inputs" if task == "classify" else "tokens"
n = batches[first].shape[0]
with open(metrics, "w") as out:
    for step in range(int(steps)):
        x, y = batches[first][step % n], batches["targets"][step % n]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               y.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.write(json.dumps({"step": step + 1, "loss": loss.item()}) + "\n")
safetensors_io.save(final, {k: v.detach().clone()
                            for k, v in model.named_parameters()})
