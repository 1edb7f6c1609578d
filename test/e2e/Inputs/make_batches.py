"""Writes N random batches as a safetensors data file for tgc-run --data.
Usage: make_batches.py OUT gpt2 N B T VOCAB   (tokens, targets: [N, B, T])
       make_batches.py OUT mlp N B F CLASSES  (inputs [N, B, F], targets)
A few targets are -100 (ignored) to exercise ignore_index."""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

out, kind = sys.argv[1], sys.argv[2]
n, b, width, classes = (int(v) for v in sys.argv[3:7])
g = torch.Generator().manual_seed(1234)
if kind == "gpt2":
    tokens = torch.randint(0, classes, (n, b, width), generator=g)
    targets = torch.roll(tokens, -1, dims=2)
    targets[:, :, -1] = -100
    safetensors_io.save(out, {"tokens": tokens, "targets": targets})
else:
    inputs = torch.randn(n, b, width, generator=g)
    targets = torch.randint(0, classes, (n, b), generator=g)
    targets[:, 0] = -100
    safetensors_io.save(out, {"inputs": inputs, "targets": targets})
