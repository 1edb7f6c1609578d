"""Damaged copies of a bitsandbytes 4-bit directory (as qlora_reference.py
prequantized writes it), one a subdirectory of OUT, each with one thing
wrong, for tgc-run's errors: codes of the wrong length, an absmax of the
wrong length, a codebook that is not NF4's, a quant state of another type
or shape, a nested map that is not the dynamic map, a GPTQ tensor.
Usage: qlora_bad_dirs.py SRC OUT"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
src, out = sys.argv[1:3]
tensors = safetensors_io.load(os.path.join(src, "model.safetensors"))
w = "model.layers.0.self_attn.q_proj.weight"


def state_with(**changes):
    state = json.loads(bytes(tensors[w + ".quant_state.bitsandbytes__nf4"]
                             .tolist()).decode())
    state.update(changes)
    return torch.tensor(list(json.dumps(state).encode()), dtype=torch.uint8)


variants = {
    "short-codes": {w: tensors[w][:-1]},
    "short-absmax": {w + ".absmax": tensors[w + ".absmax"][:-1]},
    "wrong-map": {w + ".quant_map": tensors[w + ".quant_map"].flip(0)},
    "wrong-nested-map": {w + ".nested_quant_map":
                         tensors[w + ".nested_quant_map"] * 2},
    "wrong-shape": {w + ".quant_state.bitsandbytes__nf4":
                    state_with(shape=[32, 128])},
    "wrong-block": {w + ".quant_state.bitsandbytes__nf4":
                    state_with(blocksize=128)},
    "fp4": {w + ".quant_state.bitsandbytes__fp4":
            state_with(quant_type="fp4"),
            w + ".quant_state.bitsandbytes__nf4": None},
    "gptq": {"model.layers.0.mlp.up_proj.qweight":
             torch.zeros(4, dtype=torch.int32)},
}
for name, changes in variants.items():
    directory = os.path.join(out, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    shutil.copy(os.path.join(src, "config.json"), directory)
    changed = dict(tensors)
    for key, value in changes.items():
        if value is None:
            del changed[key]
        else:
            changed[key] = value
    safetensors_io.save(os.path.join(directory, "model.safetensors"), changed,
                        {"format": "pt"})
print(f"{len(variants)} damaged directories")
