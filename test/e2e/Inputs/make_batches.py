"""Writes N random batches as a safetensors data file for tgc-run --data.
Usage: make_batches.py OUT gpt2 N B T VOCAB   (tokens, targets: [N, B, T])
       make_batches.py OUT padded N B T VOCAB (the same, right-padded: each
           row ends at a random length, padding token 0 after it with
           targets -100, as a batch of unequal texts is)
       make_batches.py OUT packed N B T VOCAB (rows of packed examples of 2
           to T/2 tokens, as tgc-run --padding=pack makes them: `segments`
           1, 2, ... along a row and 0 for the padding after the last
           example that fits, `positions` restarting at 0 in each example,
           targets the next token of the same example, -100 at each
           example's last token, on padding and on a few prompt tokens)
       make_batches.py OUT packed-mlm N B T VOCAB (the same rows for a
           masked LM: the targets the tokens themselves at about 15% of the
           positions, whose tokens become [MASK], 4; -100 elsewhere)
       make_batches.py OUT pairs N B T VOCAB (preference pairs, as a
           preference loss reads them: rows [0, B/2) chosen answers, rows
           [B/2, B) rejected answers to the same prompts, a prompt of 2 to
           T/2 tokens then an answer of 1 or more, padding token 0 after;
           targets the answer's tokens at the positions that predict them,
           -100 elsewhere)
       make_batches.py OUT mlp N B F CLASSES  (inputs [N, B, F], targets)
A few targets are -100 (ignored) to exercise ignore_index."""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

out, kind = sys.argv[1], sys.argv[2]
n, b, width, classes = (int(v) for v in sys.argv[3:7])
g = torch.Generator().manual_seed(1234)
if kind in ("gpt2", "padded"):
    tokens = torch.randint(0, classes, (n, b, width), generator=g)
    targets = torch.roll(tokens, -1, dims=2)
    targets[:, :, -1] = -100
    if kind == "padded":
        lengths = torch.randint(width // 4, width + 1, (n, b), generator=g)
        position = torch.arange(width).expand(n, b, width)
        pad = position >= lengths.unsqueeze(-1)
        tokens[pad] = 0
        targets[position >= lengths.unsqueeze(-1) - 1] = -100
    safetensors_io.save(out, {"tokens": tokens, "targets": targets})
elif kind in ("packed", "packed-mlm"):
    tokens = torch.zeros(n, b, width, dtype=torch.int64)
    targets = torch.full((n, b, width), -100, dtype=torch.int64)
    segments = torch.zeros(n, b, width, dtype=torch.int64)
    positions = torch.zeros(n, b, width, dtype=torch.int64)
    for i in range(n):
        for r in range(b):
            at, segment = 0, 0
            while True:
                length = int(torch.randint(2, width // 2 + 1, (1,),
                                           generator=g))
                if at + length > width:
                    break
                segment += 1
                ids = torch.randint(1, classes, (length,), generator=g)
                tokens[i, r, at:at + length] = ids
                targets[i, r, at:at + length - 1] = ids[1:]
                # The first target of every other example is a prompt's.
                if segment % 2 == 0:
                    targets[i, r, at] = -100
                segments[i, r, at:at + length] = segment
                positions[i, r, at:at + length] = torch.arange(length)
                at += length
    if kind == "packed-mlm":
        chosen = (torch.rand(n, b, width, generator=g) < 0.15) & (segments > 0)
        targets = torch.where(chosen, tokens, torch.full_like(tokens, -100))
        tokens = torch.where(chosen, torch.full_like(tokens, 4), tokens)
    safetensors_io.save(out, {"tokens": tokens, "targets": targets,
                              "segments": segments, "positions": positions})
elif kind == "pairs":
    tokens = torch.zeros(n, b, width, dtype=torch.int64)
    targets = torch.full((n, b, width), -100, dtype=torch.int64)
    pairs = b // 2
    for i in range(n):
        for p in range(pairs):
            prompt_length = int(torch.randint(2, width // 2 + 1, (1,),
                                              generator=g))
            prompt = torch.randint(1, classes, (prompt_length,), generator=g)
            for row in (p, pairs + p):
                length = int(torch.randint(1, width - prompt_length + 1, (1,),
                                           generator=g))
                answer = torch.randint(1, classes, (length,), generator=g)
                end = prompt_length + length
                tokens[i, row, :prompt_length] = prompt
                tokens[i, row, prompt_length:end] = answer
                targets[i, row, prompt_length - 1:end - 1] = answer
    safetensors_io.save(out, {"tokens": tokens, "targets": targets})
else:
    inputs = torch.randn(n, b, width, generator=g)
    targets = torch.randint(0, classes, (n, b), generator=g)
    targets[:, 0] = -100
    safetensors_io.save(out, {"inputs": inputs, "targets": targets})
