"""Checks a checkpoint saved before any step (tgc-run --steps 0 --save)
against the initialisation written here from its definition (runtime/src/
Random.h and Session.cpp): tensor NAME, drawn N(mean, std) with `seed`,
element i from draws 2i and 2i + 1 of splitmix64 keyed by seed ^
FNV-1a(NAME), by Box-Muller with u1 in (0, 1], rounded to f32; every
tensor whose name holds a --zeros string is all zeros, and each tensor
named by --ones (the whole name) all ones.

usage: check_init.py CKPT --seed S --normal NAME MEAN STD
           [--zeros SUBSTRING ...] [--ones NAME ...]
"""
import argparse
import json
import math
import struct
import sys

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def fnv1a(name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return h


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(key, n):
    """The n-th output (from 0) of splitmix64 seeded with `key`."""
    return mix((key + (n + 1) * GAMMA) & MASK)


def uniform(bits):
    return (bits >> 11) * 2.0 ** -53


def normal_f32(key, i, mean, std):
    u1 = 1.0 - uniform(draw(key, 2 * i))
    u2 = uniform(draw(key, 2 * i + 1))
    value = mean + std * (math.sqrt(-2.0 * math.log(u1)) *
                          math.cos(2.0 * math.pi * u2))
    return struct.unpack("<f", struct.pack("<f", value))[0]


def read_safetensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    tensors = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        tensors[name] = struct.unpack("<%df" % (len(raw) // 4), raw)
    return tensors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--normal", nargs=3, action="append", default=[],
                    metavar=("NAME", "MEAN", "STD"))
    ap.add_argument("--zeros", action="append", default=[])
    ap.add_argument("--ones", action="append", default=[])
    args = ap.parse_args()
    tensors = read_safetensors(args.ckpt)
    checked = 0
    for name, mean, std in args.normal:
        values = tensors[name]
        key = (args.seed ^ fnv1a(name)) & MASK
        n = len(values)
        # The first elements, those around the parallel chunks' starts, and
        # the last: every one bitwise.
        picks = sorted(set(list(range(min(n, 64))) +
                           [i for k in range(1, 64) for i in
                            (k * n // 64 - 1, k * n // 64)] +
                           list(range(max(0, n - 8), n))))
        for i in picks:
            want = normal_f32(key, i, float(mean), float(std))
            if values[i] != want:
                sys.exit("%s[%d] is %r, the definition gives %r"
                         % (name, i, values[i], want))
        checked += len(picks)
    for pattern, value in [(p, 0.0) for p in args.zeros] + \
            [(p, 1.0) for p in args.ones]:
        names = [n for n in tensors
                 if (pattern in n if value == 0.0 else pattern == n)]
        if not names:
            sys.exit("no tensor named like '%s'" % pattern)
        for name in names:
            if any(v != value for v in tensors[name]):
                sys.exit("%s is not all %g" % (name, value))
            checked += len(tensors[name])
    print("initial values agree: %d elements checked" % checked)


if __name__ == "__main__":
    main()
