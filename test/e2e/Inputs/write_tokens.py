"""Writes a token file for tests.
Usage: write_tokens.py PATH KIND COUNT ACTUAL
KIND: llmc (a 256-int32 header promising COUNT tokens, then ACTUAL tokens),
raw (ACTUAL uint16 tokens), raw-odd (ACTUAL tokens and one stray byte),
raw-big (ACTUAL tokens, the first one 300)."""
import struct
import sys

path, kind, count, actual = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tokens = [(7 * i) % 200 for i in range(actual)]
if kind == "raw-big":
    tokens[0] = 300
with open(path, "wb") as f:
    if kind == "llmc":
        header = [0] * 256
        header[0], header[1], header[2] = 20240520, 1, count
        f.write(struct.pack("<256i", *header))
    f.write(struct.pack(f"<{len(tokens)}H", *tokens))
    if kind == "raw-odd":
        f.write(b"\x01")
