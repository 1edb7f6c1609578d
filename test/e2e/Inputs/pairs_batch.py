"""Writes the source/target pairs of a JSONL file ({"source_ids",
"target_ids"} lines) as one batch for tgc-run --data and hf_train.py, as an
encoder-decoder reads them: tokens and attention_mask [1, B, S] (the
sources, right-padded with PAD, mask 0 there) and targets [1, B, T] (-100
after each target's end). The reference for tgc-run's own batching of the
same pairs from a .tgcd.
Usage: pairs_batch.py JSONL OUT S T PAD"""
import json
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

path, out, S, T, pad = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
pairs = [json.loads(line) for line in open(path) if line.strip()]
B = len(pairs)
tokens = torch.full((1, B, S), pad, dtype=torch.int64)
mask = torch.zeros((1, B, S), dtype=torch.int64)
targets = torch.full((1, B, T), -100, dtype=torch.int64)
for b, pair in enumerate(pairs):
    source, target = pair["source_ids"][:S], pair["target_ids"][:T]
    tokens[0, b, :len(source)] = torch.tensor(source)
    mask[0, b, :len(source)] = 1
    targets[0, b, :len(target)] = torch.tensor(target)
safetensors_io.save(out, {"tokens": tokens, "attention_mask": mask,
                          "targets": targets})
