"""PyTorch's side of bench/cpu.py, run in the venv with transformers:

  step L H C V T B THREADS STEPS   -> mean ms of a training step (AdamW,
                                      steps 3.. of STEPS), Hugging Face's
                                      GPT2LMHeadModel in eager mode
  save L H C V DIR DTYPE           -> writes DIR/model.safetensors (a
                                      randomly initialised model)
  load DIR                         -> seconds of from_pretrained(DIR)
"""
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def config(L, H, C, V, T=1024):
    return GPT2Config(n_layer=L, n_head=H, n_embd=C, vocab_size=V,
                      n_positions=max(T, 1024), resid_pdrop=0.0,
                      embd_pdrop=0.0, attn_pdrop=0.0)


def step(L, H, C, V, T, B, threads, steps):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config(L, H, C, V, T))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                  weight_decay=0.01)
    tokens = torch.randint(0, V, (B, T))
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model(tokens, labels=tokens).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    print(sum(times[2:]) / len(times[2:]) * 1000)


def save(L, H, C, V, path, dtype):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config(L, H, C, V))
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    model.save_pretrained(path, safe_serialization=True)


def load(path):
    start = time.perf_counter()
    GPT2LMHeadModel.from_pretrained(path)
    print(time.perf_counter() - start)


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "step":
        step(*map(int, args))
    elif what == "save":
        save(*map(int, args[:4]), args[4], args[5])
    else:
        load(args[0])
