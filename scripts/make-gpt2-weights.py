"""Writes GPT-2 weights as Hugging Face's hub stores them (model.safetensors
of `gpt2`: GPT2Model's names without `transformer.`, Conv1D weights
[in, out], the causal-mask buffers `h.N.attn.bias`, and `lm_head.weight`
tied to `wte.weight`), initialised as GPT-2 is (normal(0, 0.02), the
residual projections scaled by 1/sqrt(2 n_layer)), in f32, f16 or bf16. A
stand-in for downloaded weights where no hub is reachable: tgc-run
--load-weights reads these names and dtypes.

  /usr/bin/python3 scripts/make-gpt2-weights.py OUT.safetensors
      [--n-layer 2] [--n-head 4] [--n-embd 64] [--vocab-size 96]
      [--block-size 32] [--dtype f16] [--seed 0]
"""
import argparse
import json
import math
import struct

import torch


def save_safetensors(path, tensors):
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=64)
    ap.add_argument("--vocab-size", type=int, default=96)
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f16")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    C, L, T = args.n_embd, args.n_layer, args.block_size
    normal = lambda *shape, std=0.02: torch.randn(*shape) * std  # noqa: E731
    residual = 0.02 / math.sqrt(2 * L)
    w = {"wte.weight": normal(args.vocab_size, C), "wpe.weight": normal(T, C)}
    for i in range(L):
        p = f"h.{i}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = torch.ones(C), torch.zeros(C)
        w[p + "attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        w[p + "attn.c_attn.weight"] = normal(C, 3 * C)
        w[p + "attn.c_attn.bias"] = torch.zeros(3 * C)
        w[p + "attn.c_proj.weight"] = normal(C, C, std=residual)
        w[p + "attn.c_proj.bias"] = torch.zeros(C)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = torch.ones(C), torch.zeros(C)
        w[p + "mlp.c_fc.weight"] = normal(C, 4 * C)
        w[p + "mlp.c_fc.bias"] = torch.zeros(4 * C)
        w[p + "mlp.c_proj.weight"] = normal(4 * C, C, std=residual)
        w[p + "mlp.c_proj.bias"] = torch.zeros(C)
    w["ln_f.weight"], w["ln_f.bias"] = torch.ones(C), torch.zeros(C)
    dtype = {"f32": torch.float32, "f16": torch.float16,
             "bf16": torch.bfloat16}[args.dtype]
    w = {k: v.to(dtype) for k, v in w.items()}
    w["lm_head.weight"] = w["wte.weight"].clone()
    save_safetensors(args.out, w)
    print(f"{args.out}: {len(w)} tensors, "
          f"{sum(v.numel() for k, v in w.items() if not k.endswith('.attn.bias') and k != 'lm_head.weight'):,} "
          f"parameters, {args.dtype}")


if __name__ == "__main__":
    main()
