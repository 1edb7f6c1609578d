"""QLoRA's base model as bitsandbytes makes it, for the tests of tgc's
tg-quantize-frozen: every linear weight of a Hugging Face directory's
decoder layers (`*.layers.*_proj.weight`; not the embeddings, not lm_head,
as transformers' bitsandbytes quantizer leaves them) quantized by
nf4_reference.py (bitsandbytes' algorithm, replayed in torch).

  qlora_reference.py dequantized SRC DST TYPE DOUBLE
      DST: SRC's directory with each such weight replaced by its
      quantized-then-dequantized values in f32 (bitsandbytes'
      dequantize_4bit): the model PEFT trains as the QLoRA reference.
  qlora_reference.py prequantized SRC DST TYPE DOUBLE
      DST: the directory transformers' save_pretrained writes for the
      model loaded with BitsAndBytesConfig(load_in_4bit=True,
      bnb_4bit_quant_type=TYPE, bnb_4bit_use_double_quant=DOUBLE): each
      such weight as its U8 codes [n/2, 1], `.absmax`, `.quant_map`
      (and `.nested_absmax`, `.nested_quant_map`), and its quant state, a
      U8 tensor of JSON; config.json with its quantization_config.
  qlora_reference.py from-bnb SRC DST
      DST: the 4-bit directory SRC (as transformers saves a bitsandbytes
      model) with each 4-bit weight dequantized by bitsandbytes' rules
      from its own codes, absmax values and quant state, in f32.
  qlora_reference.py codes SRC CKPT TYPE DOUBLE
      Checks that the 4-bit tensors of tgc's checkpoint CKPT (codes,
      absmax, nested absmax, offset) equal the replay's of SRC's weights
      bit for bit.
TYPE is nf4 or fp4; DOUBLE is 1 (double quantization) or 0.
"""
import json
import os
import re
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nf4_reference as nf4  # noqa: E402
import safetensors_io  # noqa: E402

QUANTIZED = re.compile(r".*\.layers\.\d+\..*_proj\.weight$")


def weights_of(directory):
    tensors = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".safetensors"):
            tensors.update(safetensors_io.load(os.path.join(directory, name)))
    return tensors


def copy_config(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for name in os.listdir(src):
        if name.endswith(".json") and not name.startswith("model.safetensors"):
            shutil.copy(os.path.join(src, name), dst)


def from_bnb(src, dst):
    copy_config(src, dst)
    config_path = os.path.join(dst, "config.json")
    config = json.load(open(config_path))
    config.pop("quantization_config", None)
    json.dump(config, open(config_path, "w"), indent=2)
    weights = weights_of(src)
    out, count = {}, 0
    for name, t in weights.items():
        if ".quant_state.bitsandbytes__" in name:
            base, quant_type = name.split(".quant_state.bitsandbytes__")
            state = json.loads(bytes(t.tolist()).decode())
            assert state["blocksize"] == 64, state
            packed = {"codes": weights[base].reshape(-1),
                      "absmax": weights[base + ".absmax"]}
            if "nested_offset" in state:
                packed.update(
                    nested_absmax=weights[base + ".nested_absmax"],
                    offset=torch.tensor(state["nested_offset"],
                                        dtype=torch.float32))
                assert torch.equal(weights[base + ".nested_quant_map"],
                                   nf4.dynamic_map())
            assert torch.equal(weights[base + ".quant_map"],
                               nf4.code4(quant_type))
            out[base] = nf4.dequantize(packed, tuple(state["shape"]),
                                       quant_type, torch.float32)
            count += 1
        elif not any(k in name for k in (".absmax", ".quant_map",
                                          ".nested_", ".quant_state")) \
                and name + ".quant_state.bitsandbytes__nf4" not in weights \
                and name + ".quant_state.bitsandbytes__fp4" not in weights:
            out[name] = t.float()
    safetensors_io.save(os.path.join(dst, "model.safetensors"), out,
                        {"format": "pt"})
    print(f"{count} weights dequantized from bitsandbytes' own codes")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "from-bnb":
        return from_bnb(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    mode, src, dst, quant_type, double = sys.argv[1:6]
    double = double == "1"
    weights = weights_of(src)
    names = [n for n in weights if QUANTIZED.match(n)]
    if not names:
        sys.exit(f"no decoder-layer linear weight in {src}")
    if mode == "dequantized":
        copy_config(src, dst)
        out = dict(weights)
        for name in names:
            w = weights[name]
            state = nf4.quantize(w, quant_type, double)
            out[name] = nf4.dequantize(state, tuple(w.shape), quant_type,
                                       torch.float32)
        safetensors_io.save(os.path.join(dst, "model.safetensors"), out,
                            {"format": "pt"})
        print(f"{len(names)} weights dequantized from {quant_type}")
    elif mode == "prequantized":
        copy_config(src, dst)
        out = {k: v for k, v in weights.items() if k not in names}
        for name in names:
            w = weights[name]
            state = nf4.quantize(w, quant_type, double)
            out[name] = state["codes"].reshape(-1, 1)
            out[name + ".absmax"] = state["absmax"]
            out[name + ".quant_map"] = nf4.code4(quant_type)
            packed = {"quant_type": quant_type, "blocksize": 64,
                      "dtype": str(w.dtype).replace("torch.", ""),
                      "shape": list(w.shape)}
            if double:
                out[name + ".nested_absmax"] = state["nested_absmax"]
                out[name + ".nested_quant_map"] = nf4.dynamic_map()
                packed.update(nested_blocksize=256, nested_dtype="float32",
                              nested_offset=state["offset"].item())
            out[f"{name}.quant_state.bitsandbytes__{quant_type}"] = \
                torch.tensor(list(json.dumps(packed).encode()),
                             dtype=torch.uint8)
        safetensors_io.save(os.path.join(dst, "model.safetensors"), out,
                            {"format": "pt"})
        config_path = os.path.join(dst, "config.json")
        config = json.load(open(config_path))
        config["quantization_config"] = {
            "quant_method": "bitsandbytes", "load_in_4bit": True,
            "load_in_8bit": False, "bnb_4bit_quant_type": quant_type,
            "bnb_4bit_use_double_quant": double,
            "bnb_4bit_compute_dtype": "float32",
            "bnb_4bit_quant_storage": "uint8"}
        json.dump(config, open(config_path, "w"), indent=2)
        print(f"{len(names)} weights saved as bitsandbytes {quant_type}")
    elif mode == "codes":
        ckpt = safetensors_io.load(dst)
        checked = 0
        for name in names:
            state = nf4.quantize(weights[name], quant_type, double)
            pairs = [(name, state["codes"]), (name + ".absmax", state["absmax"])]
            if double:
                pairs += [(name + ".nested_absmax", state["nested_absmax"]),
                          (name + ".nested_offset", state["offset"])]
            for key, want in pairs:
                got = ckpt[key].reshape(want.shape)
                if got.dtype != want.dtype or not torch.equal(
                        got.reshape(-1).view(torch.uint8),
                        want.reshape(-1).view(torch.uint8)):
                    diff = (got != want).sum().item()
                    sys.exit(f"{key}: {diff} of {want.numel()} differ from "
                             "bitsandbytes' replay")
                checked += 1
        print(f"{checked} tensors of {len(names)} weights equal "
              f"bitsandbytes' {quant_type} bit for bit")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
