"""st_dtypes.py FILE NAME...: prints each named tensor's dtype from a
safetensors header."""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(length))
for name in sys.argv[2:]:
    print(name, header[name]["dtype"] if name in header else "MISSING")
