"""Feeds tgc-opt every prefix of a model (at a stride) and garbage bytes.

Each run must end with an exit status (0 for the complete input, non-zero
with a diagnostic otherwise), never a signal: a crash fails the test.
Usage: truncation_sweep.py TGC_OPT MODEL_FILE STRIDE
"""
import random
import subprocess
import sys

tgc_opt, model_path, stride = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = open(model_path, "rb").read()


def run(data, what):
    proc = subprocess.run([tgc_opt, "-", "-o", "/dev/null"], input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode < 0:
        sys.exit(f"crash ({-proc.returncode}) on {what}:\n"
                 + proc.stderr.decode(errors="replace"))
    if proc.returncode != 0 and b"error" not in proc.stderr:
        sys.exit(f"non-zero exit without a diagnostic on {what}")
    return proc.returncode


failures = 0
for end in range(0, len(model), stride):
    if run(model[:end], f"prefix of {end} bytes") != 0:
        failures += 1

rng = random.Random(0)
for i in range(50):
    garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    run(garbage, f"garbage #{i}")
    # Flip bytes inside the model too.
    mutated = bytearray(model)
    for _ in range(8):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    run(bytes(mutated), f"mutation #{i}")

assert run(model, "the complete model") == 0, "the complete model must verify"
print(f"rejected {failures} truncated inputs without a crash")
