"""Writes Inputs/bnb-nf4-llama: the tiny random Llama of `hf_llama.py make
DIR llama` loaded by transformers with BitsAndBytesConfig(load_in_4bit=True,
bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True) and saved by its
save_pretrained: a 4-bit directory as the hub serves them, made by
transformers and bitsandbytes themselves (not by tgc's replay), which
qlora-bnb-directory.test loads. Not run by the tests (bitsandbytes needs
torch 2); made with transformers 5.25.0 and bitsandbytes 0.50.2 on the CPU
(torch 2.5.1).
Usage: make_bnb_fixture.py HF_DIR OUT_DIR"""
import sys

import torch
import transformers

if len(sys.argv) != 3:
    sys.exit(__doc__)
config = transformers.BitsAndBytesConfig(
    load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.float32)
model = transformers.AutoModelForCausalLM.from_pretrained(
    sys.argv[1], quantization_config=config, dtype=torch.float32,
    device_map="cpu")
model.save_pretrained(sys.argv[2])
