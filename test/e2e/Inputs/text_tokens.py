"""text_tokens.py OUT FILE...: writes the bytes of FILEs as raw uint16
tokens (vocabulary 256): a token file of real text for training curves."""
import struct
import sys

data = b"".join(open(name, "rb").read() for name in sys.argv[2:])
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack(f"<{len(data)}H", *data))
print(f"{len(data)} tokens")
