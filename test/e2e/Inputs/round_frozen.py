"""Writes the parameters of a checkpoint (not its optimizer state), those
matching GLOBS rounded to a 16-bit float type and back to f32: the weights
a model that stores them in 16 bits (tgc-compile --frozen-dtype) computes
with. GLOBS '-' rounds nothing (the parameters alone, as a Hugging Face
checkpoint holds them).
Usage: round_frozen.py IN.safetensors OUT.safetensors GLOBS|- bf16|f16"""
import fnmatch
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

source, target, globs, dtype = sys.argv[1:5]
narrow = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
tensors = {k: v for k, v in safetensors_io.load(source).items()
           if not (k.endswith(".exp_avg") or k.endswith(".exp_avg_sq")
                   or k.startswith("optimizer."))}
for name, t in tensors.items():
    if globs != "-" and any(fnmatch.fnmatchcase(name, g) for g in globs.split(",")):
        tensors[name] = t.to(narrow).to(t.dtype)
safetensors_io.save(target, tensors)
