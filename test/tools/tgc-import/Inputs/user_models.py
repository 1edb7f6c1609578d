"""User-defined PyTorch modules for tgc-import's tests: a small classifier
(Linear, LayerNorm, GELU), a small GPT written by hand (embeddings, causal
self-attention through a triu mask and masked_fill, tanh GELU), and
modules the import refuses."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 5)
    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))

def mlp():
    torch.manual_seed(0)
    return MLP()

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        nn.init.zeros_(self.qkv.bias)  # the key part's gradient is zero
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

class TinyGPT(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, layers=2, positions=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))

def tiny_gpt():
    torch.manual_seed(0)
    return TinyGPT()


# What tgc-import refuses.
class Sorting(nn.Module):
    """Two operations with no tg form, in two modules."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 5)
        self.inner = nn.Sequential(nn.Linear(5, 5))

    def forward(self, x):
        x = torch.cumprod(self.fc(x), dim=1)
        return torch.sort(self.inner(x), dim=1).values + torch.cumprod(x, 1)


def sorting():
    return Sorting()


class Branching(nn.Module):
    """Control flow on a value: no static graph."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = self.fc(x)
        return y if y.sum() > 0 else -y


def branching():
    return Branching()


def not_a_module():
    return 42


def raising():
    raise RuntimeError("no weights here")


class ValueShaped(nn.Module):
    """An intermediate whose shape depends on the values: no static plan."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = self.fc(x)
        return y + y[y > 0].sum()


def value_shaped():
    return ValueShaped()


@torch.jit.script
def log_buckets(positions: torch.Tensor, buckets: int):
    """A TorchScript helper on a tensor the forward made from shapes alone
    (as DeBERTa's relative position buckets are): a log-spaced bucket of
    each position."""
    near = torch.where(positions < buckets, torch.tensor(buckets).type_as(positions),
                       positions)
    return torch.ceil(torch.log(near) / torch.log(torch.tensor(2.0 * buckets)))


class Scripted(nn.Module):
    """A forward that calls a torch.jit.script'ed helper."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        positions = torch.arange(x.size(-1), dtype=torch.float32)
        return self.fc(x * log_buckets(positions, 2))


def scripted():
    torch.manual_seed(0)
    return Scripted()
