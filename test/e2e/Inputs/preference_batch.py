"""Writes the pre-tokenized preference pairs of a JSONL file ({"prompt_ids",
"chosen_ids", "rejected_ids"} lines) as one batch for tgc-run --data and
preference_reference.py, as a preference loss reads them: tokens and
targets [1, 2P, T], rows [0, P) the chosen answers after their prompts,
rows [P, 2P) the rejected ones, right-padded with token 0; targets the
answer's tokens at the positions that predict them, -100 elsewhere. The
reference for tgc-run's own batching of the same pairs from a .tgcd.
Usage: preference_batch.py JSONL OUT T"""
import json
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

path, out, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
pairs = [json.loads(line) for line in open(path) if line.strip()]
P = len(pairs)
tokens = torch.zeros((1, 2 * P, T), dtype=torch.int64)
targets = torch.full((1, 2 * P, T), -100, dtype=torch.int64)
for i, pair in enumerate(pairs):
    prompt = pair["prompt_ids"]
    for row, key in ((i, "chosen_ids"), (P + i, "rejected_ids")):
        ids = prompt + pair[key]
        tokens[0, row, :len(ids)] = torch.tensor(ids)
        targets[0, row, len(prompt) - 1:len(ids) - 1] = torch.tensor(
            pair[key])
safetensors_io.save(out, {"tokens": tokens, "targets": targets})
