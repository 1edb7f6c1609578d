"""Loads tgc's LoRA adapter file into Hugging Face's PEFT over the same base
weights and compares PEFT's merge_and_unload with tgc's --export-merged.
Runs in the transformers/PEFT venv of scripts/install-deps.sh.
Usage: peft_merge.py BASE ADAPTERS MERGED N_LAYER N_HEAD N_EMBD VOCAB
       BLOCK RANK ALPHA TARGET[,TARGET...]
BASE is a hub-style GPT-2 file (scripts/make-gpt2-weights.py)."""
import sys

import torch
from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

base, adapters, merged = sys.argv[1:4]
layers, heads, embd, vocab, block, rank = (int(a) for a in sys.argv[4:10])
alpha, targets = float(sys.argv[10]), sys.argv[11].split(",")
model = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_head=heads, n_embd=embd,
                                   vocab_size=vocab, n_positions=block))
weights = {k: v.float() for k, v in load_file(base).items()
           if k != "lm_head.weight"}
model.transformer.load_state_dict(weights, strict=False)
peft = get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha,
                                        target_modules=targets,
                                        fan_in_fan_out=True, lora_dropout=0.0))
loaded = set_peft_model_state_dict(peft, load_file(adapters))
if loaded.unexpected_keys:
    sys.exit(f"PEFT does not know {loaded.unexpected_keys}")
missing_lora = [k for k in loaded.missing_keys if "lora_" in k]
if missing_lora:
    sys.exit(f"the adapter file lacks {missing_lora}")
reference = peft.merge_and_unload().state_dict()
ours = load_file(merged)
worst = max(float((v.float() - reference[k].float()).abs().max()
                  / reference[k].float().abs().max().clamp(min=1e-12))
            for k, v in ours.items())
# W + s (B A) with rank-4 products: each merged element is one f32 sum of 4
# products and one addition, a few roundings of 2^-24 (6e-8) in either
# implementation: 1e-6 is 16 of them.
if worst > 1e-6:
    sys.exit(f"tgc's merged weights differ from PEFT's by {worst:.3g}")
print(f"PEFT loads all {len(load_file(adapters))} adapter tensors; its "
      f"merge_and_unload equals tgc's {len(ours)} merged tensors "
      f"(worst relative error {worst:.1e})")
