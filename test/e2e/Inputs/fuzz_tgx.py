"""Runs tgc-run for one step on prefixes and byte-flipped copies of an
executable. Each run must end with an exit status, never a signal, and a
failed run must say why. The flipped copies get a fresh checksum trailer,
so that they reach the verifier rather than stop at the checksum.
Usage: fuzz_tgx.py TGC_RUN MODEL.tgx"""
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_files import with_trailer  # noqa: E402

tgc_run, path = sys.argv[1], sys.argv[2]
original = open(path, "rb").read()
rng = random.Random(1)
cases = [original[:n] for n in range(0, len(original), max(1, len(original) // 60))]
program = original[:-16]
for _ in range(150):
    data = bytearray(program)
    for _ in range(rng.choice([1, 2, 8])):
        data[rng.randrange(len(data))] = rng.randrange(256)
    cases.append(with_trailer(bytes(data)))

with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "case.tgx")
    for i, data in enumerate(cases):
        open(exe, "wb").write(data)
        proc = subprocess.run([tgc_run, exe, "--steps", "1", "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)
        if proc.returncode < 0:
            sys.exit(f"case {i}: killed by signal {-proc.returncode}\n"
                     + proc.stderr.decode(errors="replace"))
        if proc.returncode != 0 and b"error" not in proc.stderr:
            sys.exit(f"case {i}: failed without a message")
print(f"no crash in {len(cases)} runs")
