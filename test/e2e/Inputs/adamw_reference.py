"""The PyTorch training loop the reference scripts share (hf_train.py,
import_reference.py): torch.optim.AdamW with tgc's defaults (lr 1e-3,
betas 0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter), step i on
batch i mod N, the loss the mean cross-entropy of the logits against the
batch's targets (-100 ignored); each step's loss to METRICS (JSON lines),
the final parameters to FINAL by name."""
import json

import torch
import torch.nn.functional as F

import safetensors_io


def train(model, batches, steps, metrics, final, logits_of):
    """`logits_of(model, batches, i)`: the logits of batch i."""
    model.train()
    torch.set_num_threads(1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    n = batches["targets"].shape[0]
    with open(metrics, "w") as out:
        for step in range(int(steps)):
            logits = logits_of(model, batches, step % n)
            targets = batches["targets"][step % n]
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   targets.reshape(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.write(json.dumps({"step": step + 1, "loss": loss.item()})
                      + "\n")
    safetensors_io.save(final, {k: v.detach().clone()
                                for k, v in model.named_parameters()})
