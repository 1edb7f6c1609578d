"""Writes N random padded BERT batches as a safetensors data file for
tgc-run --data and bert_reference.py.
Usage: make_bert_batches.py OUT mlm|seq-cls|seq2seq N B T VOCAB
           [--num-labels K] [--seed S] [--mask-id M] [--min-len A]
           [--ignore-rows R] [--pad-id P] [--target-len U]
Writes tokens and attention_mask [N, B, T] and targets [N, B, T] (mlm) or
[N, B] (seq-cls), all int64. Every example's length is uniform in [A, T]
(A default 2), and one example of every batch has the full length T; the
examples are padded on the right. Real tokens are uniform in [5, VOCAB)
(ids 0-4 stand for [PAD], [UNK], [CLS], [SEP], [MASK]); padding is token P
(default 0; RoBERTa's is 1, and it counts positions from it) with
attention_mask 0 (1 on real tokens).
mlm masks as transformers' DataCollatorForLanguageModeling does (with
mlm_probability 0.15): every real token is chosen with probability 0.15
(padding never; a row where none was chosen gets one, uniformly among its
real tokens, so that every row has a target), a chosen token becomes the
mask id M (default 4) with probability 0.8, else a random token with
probability 0.5 (drawn from [5, VOCAB) here, from the whole vocabulary
there), else stays; targets are the original tokens where chosen and -100
(ignored) everywhere else, padding included.
seq-cls targets are uniform in [0, K) (K default 2); --ignore-rows R makes
the first R rows of every batch -100 (ignored) to exercise ignore_index.
seq2seq (an encoder-decoder's source and target) writes targets [N, B, U]
(U default T): each row's target tokens uniform in [5, VOCAB), its length
uniform in [1, U] (one row of every batch full), -100 after its end.
Seeded with a torch.Generator (default seed 1234): the same arguments write
the same file."""
import argparse
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

FIRST_REAL_TOKEN = 5


def make_batches(task, n, b, t, vocab, num_labels=2, seed=1234, mask_id=4,
                 min_len=2, ignore_rows=0, pad_id=0, target_len=None):
    if not 1 <= min_len <= t:
        raise ValueError(f"--min-len {min_len} is not in [1, {t}]")
    if vocab <= FIRST_REAL_TOKEN:
        raise ValueError(f"the vocabulary needs more than {FIRST_REAL_TOKEN} tokens")
    if not 0 <= mask_id < vocab:
        raise ValueError(f"--mask-id {mask_id} is not in [0, {vocab})")
    if not 0 <= pad_id < FIRST_REAL_TOKEN:
        raise ValueError(f"--pad-id {pad_id} is not in [0, {FIRST_REAL_TOKEN})")
    if not 0 <= ignore_rows < b:
        raise ValueError(f"--ignore-rows {ignore_rows} leaves no row of {b} to train on")
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, t + 1, (n, b), generator=g)
    full = torch.randint(0, b, (n,), generator=g)
    lengths[torch.arange(n), full] = t
    position = torch.arange(t)
    real = position < lengths.unsqueeze(-1)
    tokens = torch.randint(FIRST_REAL_TOKEN, vocab, (n, b, t), generator=g)
    tokens[~real] = pad_id
    data = {"tokens": tokens, "attention_mask": real.long()}
    if task == "mlm":
        chosen = torch.bernoulli(real * 0.15, generator=g).bool()
        # A row with no target would make no difference to the loss: choose
        # one of its real tokens.
        pick = (torch.rand((n, b), generator=g) * lengths).long()
        pick = torch.minimum(pick, lengths - 1)
        none = ~chosen.any(dim=-1)
        chosen |= none.unsqueeze(-1) & (position == pick.unsqueeze(-1))
        data["targets"] = torch.where(chosen, tokens, torch.full_like(tokens, -100))
        inputs = tokens.clone()
        replaced = torch.bernoulli(torch.full(tokens.shape, 0.8), generator=g).bool() & chosen
        inputs[replaced] = mask_id
        randomized = (torch.bernoulli(torch.full(tokens.shape, 0.5), generator=g).bool()
                      & chosen & ~replaced)
        words = torch.randint(FIRST_REAL_TOKEN, vocab, tokens.shape, generator=g)
        inputs[randomized] = words[randomized]
        data["tokens"] = inputs
    elif task == "seq-cls":
        targets = torch.randint(0, num_labels, (n, b), generator=g)
        targets[:, :ignore_rows] = -100
        data["targets"] = targets
    elif task == "seq2seq":
        u = target_len or t
        ends = torch.randint(1, u + 1, (n, b), generator=g)
        ends[torch.arange(n), torch.randint(0, b, (n,), generator=g)] = u
        targets = torch.randint(FIRST_REAL_TOKEN, vocab, (n, b, u), generator=g)
        targets[torch.arange(u) >= ends.unsqueeze(-1)] = -100
        data["targets"] = targets
    else:
        raise ValueError(f"unknown task {task!r} (mlm, seq-cls or seq2seq)")
    return {k: data[k] for k in ("tokens", "attention_mask", "targets")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("task", choices=("mlm", "seq-cls", "seq2seq"))
    for name in ("n", "b", "t", "vocab"):
        ap.add_argument(name, type=int)
    ap.add_argument("--num-labels", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--mask-id", type=int, default=4)
    ap.add_argument("--min-len", type=int, default=2)
    ap.add_argument("--ignore-rows", type=int, default=0)
    ap.add_argument("--pad-id", type=int, default=0)
    ap.add_argument("--target-len", type=int)
    a = ap.parse_args()
    try:
        data = make_batches(a.task, a.n, a.b, a.t, a.vocab, a.num_labels, a.seed,
                            a.mask_id, a.min_len, a.ignore_rows, a.pad_id,
                            a.target_len)
    except ValueError as e:
        sys.exit(str(e))
    safetensors_io.save(a.out, data)


if __name__ == "__main__":
    main()
