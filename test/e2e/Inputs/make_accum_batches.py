"""Writes the batches of a gradient-accumulation test twice: N batches of
K*B sequences ([N, K*B, T], what one large step reads) and the same
sequences as N*K micro-batches of B ([N*K, B, T], micro-batch k of step n
at index n*K + k, what tgc-run --grad-accum=K reads). Targets set to -100
(ignored) are spread unevenly over the micro-batches: one loses most of its
targets, one only the last position, one a random 30%, and in every third
step one micro-batch has no target at all.
Usage: make_accum_batches.py MICRO BIG N K B T VOCAB"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

micro, big = sys.argv[1:3]
n, k, b, t, vocab = (int(v) for v in sys.argv[3:8])
g = torch.Generator().manual_seed(4321)
tokens = torch.randint(0, vocab, (n, k * b, t), generator=g)
targets = torch.roll(tokens, -1, dims=2)
targets[:, :, -1] = -100
for step in range(n):
    for m in range(k):
        rows = targets[step, m * b:(m + 1) * b]
        if m % 4 == 0:
            rows[:, : (3 * t) // 4] = -100
        elif m % 4 == 2:
            drop = torch.rand(rows.shape, generator=g) < 0.3
            rows[drop] = -100
        elif m % 4 == 3 and step % 3 == 0:
            rows[:] = -100
safetensors_io.save(big, {"tokens": tokens, "targets": targets})
safetensors_io.save(micro, {"tokens": tokens.reshape(n * k, b, t),
                            "targets": targets.reshape(n * k, b, t)})
