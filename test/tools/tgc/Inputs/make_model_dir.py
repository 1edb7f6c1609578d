"""Writes a tiny Llama model directory as a user downloads one: a random
LlamaForCausalLM (transformers 4.47.1's save_pretrained: config.json,
model.safetensors; grouped-query attention, 400 tokens) and the chat
tokenizer of make_chat_tokenizer.py (tokenizer.json, tokenizer_config.json
with a ChatML template; padding id 0, <|endoftext|>).
Usage: make_model_dir.py DIR"""
import os
import subprocess
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
subprocess.run([sys.executable, os.path.join(
    here, "..", "..", "tgc-data", "Inputs", "make_chat_tokenizer.py"), out],
    check=True, stdout=subprocess.DEVNULL)
torch.manual_seed(0)
config = LlamaConfig(vocab_size=400, hidden_size=64, intermediate_size=128,
                     num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=1024,
                     pad_token_id=0, bos_token_id=0, eos_token_id=2,
                     tie_word_embeddings=False)
LlamaForCausalLM(config).save_pretrained(out)
print(f"{out}: a Llama of {sum(p.numel() for p in LlamaForCausalLM(config).parameters())} parameters")
