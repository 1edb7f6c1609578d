"""Writes a checkpoint's f32 tensors again as bf16 (each value's top 16
bits, so that loading it into f32 is exact and known) into a Hugging Face
style sharded directory: model-0000K-of-0000N.safetensors and
model.safetensors.index.json, the tensors in order over N shards.

  shard_bf16.py CKPT DIR N [--nan NAME ELEMENT]   write DIR
  shard_bf16.py --check CKPT LOADED               every tensor of LOADED
      that CKPT has equals CKPT's value with its low 16 bits cleared

--nan puts a NaN at ELEMENT of tensor NAME.
"""
import json
import os
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}.get(info["dtype"])
        if dtype is None:
            continue
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(
            info["shape"])
    return tensors


def write(path, tensors):
    header, offset = {}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for array in tensors.values():
            f.write(array.tobytes())


def bf16(array):
    return (array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def main():
    if sys.argv[1] == "--check":
        want, got = read(sys.argv[2]), read(sys.argv[3])
        checked = 0
        for name, array in want.items():
            if (array.dtype != np.float32 or "exp_avg" in name
                    or name.startswith(("optimizer.", "amp."))):
                continue
            expect = (bf16(array).astype(np.uint32) << 16)
            if not np.array_equal(got[name].view(np.uint32), expect):
                sys.exit(f"{name} differs from its bf16 value")
            checked += 1
        print(f"{checked} tensors loaded exactly")
        return
    ckpt, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    params = {name: bf16(array) for name, array in read(ckpt).items()
              if array.dtype == np.float32 and "exp_avg" not in name
              and not name.startswith(("optimizer.", "amp."))}
    if "--nan" in sys.argv:
        at = sys.argv.index("--nan")
        name, element = sys.argv[at + 1], int(sys.argv[at + 2])
        params[name] = params[name].copy()
        params[name].reshape(-1)[element] = 0x7FC0
    os.makedirs(folder, exist_ok=True)
    names = list(params)
    weight_map = {}
    for k in range(count):
        part = names[k * len(names) // count:(k + 1) * len(names) // count]
        file = f"model-{k + 1:05d}-of-{count:05d}.safetensors"
        write(os.path.join(folder, file), {n: params[n] for n in part})
        weight_map.update({n: file for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


if __name__ == "__main__":
    main()
