"""Writes a .tgcd dataset as one batch of a safetensors data file, the way
tgc-run batches it for a causal LM with --padding max: its N examples as
the N rows of tokens [1, N, T] (padded with the pad id, or 0), and targets
[1, N, T] the next token where the loss mask trains it, -100 elsewhere (a
prompt, another turn, padding, the last position).
Usage: tgcd_to_batches.py DATA.tgcd T OUT.safetensors"""
import os
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tools", "python"))
import safetensors_io  # noqa: E402
import tgcd  # noqa: E402

data, length, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dataset = tgcd.read_tgcd(data)
n = dataset["num_examples"]
pad = max(dataset["pad_id"], 0)
tokens = torch.full((1, n, length), pad, dtype=torch.int64)
targets = torch.full((1, n, length), -100, dtype=torch.int64)
for i in range(n):
    ids = [int(t) for t in tgcd.example(dataset, i)][:length]
    mask = [int(m) for m in tgcd.example_mask(dataset, i)][:length]
    tokens[0, i, :len(ids)] = torch.tensor(ids)
    for t in range(len(ids) - 1):
        if mask[t + 1]:
            targets[0, i, t] = ids[t + 1]
safetensors_io.save(out, {"tokens": tokens, "targets": targets})
print(f"{out}: {n} rows, {int((targets != -100).sum())} targets")
