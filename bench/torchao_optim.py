"""The PyTorch side of bench/optim8.py's 4-bit comparison, run in the venv
with torch 2.x and torchao (scripts/setup-torchao.sh makes .venv-torch2):
a GPT-2 of the same shape as optim8.py's text-task model (GPT-2's
initialisation, GELU tanh, tied head, no dropout), trained on the same
token file by random windows, with torch.optim.AdamW (f32 state) and with
torchao's AdamW8bit and AdamW4bit (block 128 for 4-bit, 256 for 8-bit; f32
state for tensors under 4096 elements, as torchao does), the same
hyper-parameters as tgc's defaults.

  torchao_optim.py TOKENS L H C V T B STEPS SEED OPTIMIZER OUT.json
      OPTIMIZER: f32, 8bit or 4bit; OUT gets {"losses": [...], "seconds"}.
"""
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.heads = H
        self.ln_1 = torch.nn.LayerNorm(C)
        self.c_attn = torch.nn.Linear(C, 3 * C)
        self.attn_proj = torch.nn.Linear(C, C)
        self.ln_2 = torch.nn.LayerNorm(C)
        self.c_fc = torch.nn.Linear(C, 4 * C)
        self.mlp_proj = torch.nn.Linear(4 * C, C)
        for linear in (self.c_attn, self.c_fc):
            torch.nn.init.normal_(linear.weight, std=0.02)
        for linear in (self.attn_proj, self.mlp_proj):
            torch.nn.init.normal_(linear.weight, std=0.02 / math.sqrt(2 * L))
        for linear in (self.c_attn, self.c_fc, self.attn_proj, self.mlp_proj):
            torch.nn.init.zeros_(linear.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


class GPT2(torch.nn.Module):
    def __init__(self, L, H, C, V, T):
        super().__init__()
        self.wte = torch.nn.Embedding(V, C)
        self.wpe = torch.nn.Embedding(T, C)
        torch.nn.init.normal_(self.wte.weight, std=0.02)
        torch.nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = torch.nn.ModuleList(Block(C, H, L) for _ in range(L))
        self.ln_f = torch.nn.LayerNorm(C)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def main():
    (tokens_path, L, H, C, V, T, B, steps, seed, optimizer,
     out) = sys.argv[1:12]
    L, H, C, V, T, B, steps, seed = map(int, (L, H, C, V, T, B, steps, seed))
    torch.set_num_threads(2)
    torch.manual_seed(seed)
    tokens = torch.from_numpy(
        np.fromfile(tokens_path, dtype="<u2").astype(np.int64))
    model = GPT2(L, H, C, V, T)
    settings = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    if optimizer == "f32":
        opt = torch.optim.AdamW(model.parameters(), **settings)
    else:
        from torchao.prototype import low_bit_optim
        kind = {"8bit": low_bit_optim.AdamW8bit,
                "4bit": low_bit_optim.AdamW4bit}[optimizer]
        # torchao wants the learning rate as a tensor it can update in place.
        opt = kind(model.parameters(), **settings)
    windows = len(tokens) - T
    generator = torch.Generator().manual_seed(seed)
    losses = []
    start = time.time()
    for _ in range(steps):
        starts = torch.randint(0, windows, (B,), generator=generator)
        x = torch.stack([tokens[s:s + T] for s in starts])
        y = torch.stack([tokens[s + 1:s + T + 1] for s in starts])
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    json.dump({"losses": losses, "seconds": time.time() - start},
              open(out, "w"))


if __name__ == "__main__":
    main()
