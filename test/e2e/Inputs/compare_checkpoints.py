"""Compares two tgc checkpoints tensor by tensor, byte for byte, and checks
named scalars. Usage: compare_checkpoints.py A B [--except NAME ...]
[--expect NAME=VALUE ...]. Exits non-zero on any difference."""
import json
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], data[8 + n + b:8 + n + end])
    return out


args = sys.argv[1:]
a, b = load(args[0]), load(args[1])
skip, expect = set(), {}
mode = None
for arg in args[2:]:
    if arg in ("--except", "--expect"):
        mode = arg
    elif mode == "--except":
        skip.add(arg)
    else:
        name, value = arg.split("=")
        expect[name] = float(value)
same = 0
for name in a:
    if name in skip:
        continue
    if a[name] != b[name]:
        sys.exit(f"tensor {name} differs")
    same += 1
for name, value in expect.items():
    dtype, raw = b[name]
    got = struct.unpack("<f" if dtype == "F32" else "<q", raw)[0]
    if got != value:
        sys.exit(f"{name} is {got}, expected {value}")
print(f"{same} tensors identical; {len(expect)} values as expected")
