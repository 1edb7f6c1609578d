"""Hugging Face's side of bench/startup.py for Llama, run in .venv-hf47
(transformers 4.47.1):

  save DIR DTYPE SHARD   -> writes DIR (config.json, the safetensors shards
                            of at most SHARD and their index): a randomly
                            initialised Llama-3.2-1B-shaped LlamaForCausalLM
  load DIR DTYPE         -> seconds of from_pretrained(DIR) in DTYPE
"""
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def config():
    # Llama-3.2-1B's shape (1.24 B parameters, the embedding tied).
    return LlamaConfig(hidden_size=2048, intermediate_size=8192,
                       num_hidden_layers=16, num_attention_heads=32,
                       num_key_value_heads=8, vocab_size=128256,
                       max_position_embeddings=2048, rms_norm_eps=1e-5,
                       rope_theta=500000.0, tie_word_embeddings=True)


def save(path, dtype, shard):
    torch.manual_seed(0)
    torch.set_default_dtype(DTYPES[dtype])
    model = LlamaForCausalLM(config())
    model.save_pretrained(path, safe_serialization=True,
                          max_shard_size=shard)


def load(path, dtype):
    start = time.perf_counter()
    LlamaForCausalLM.from_pretrained(path, torch_dtype=DTYPES[dtype])
    print(time.perf_counter() - start)


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "save":
        save(*args)
    elif what == "load":
        load(*args)
    else:
        sys.exit(f"unknown command {what}")
