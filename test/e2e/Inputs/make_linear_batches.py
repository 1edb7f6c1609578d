"""Batches for linear-awkward.mlir: make_linear_batches.py OUT SEED N.
Gradients of scales from 1e-4 to 10 across steps, 5% exact zeros."""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402
g = torch.Generator().manual_seed(int(sys.argv[2]))
n = int(sys.argv[3])
# Gradients of varied scale per step and per element, with exact zeros.
def batch(*shape):
    x = torch.randn(n, *shape, generator=g) * torch.logspace(-4, 1, n)[(...,) + (None,) * len(shape)]
    x[torch.rand(n, *shape, generator=g) < 0.05] = 0
    return x
safetensors_io.save(sys.argv[1], {"x1": batch(77, 131), "x2": batch(5000), "x3": batch(40)})
