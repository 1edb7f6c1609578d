"""Compares the kernels the roofline estimate counts for each entry point
(tgc-compile --estimate: "  NAME @FUNCTION: ..., N kernels") with the nodes
of the CUDA graph tgc-run captured for it ("tgc-run: NAME ran as one CUDA
graph of N kernels and copies ..."). The estimate's train_step is
tgc-run's step. Usage: compare_launches.py ESTIMATE.txt RUN.txt
Prints one line per captured entry point; fails on a difference, or when
nothing was captured."""
import re
import sys

estimated = {}
for line in open(sys.argv[1]):
    match = re.match(r"\s+(\w+) @\S+.*, ([\d,]+) kernels$", line.rstrip())
    if match:
        name = "step" if match.group(1) == "train_step" else match.group(1)
        estimated[name] = int(match.group(2).replace(",", ""))
captured = {}
for line in open(sys.argv[2]):
    match = re.match(r"tgc-run: (\w+) ran as one CUDA graph of (\d+) kernels",
                     line)
    if match:
        captured[match.group(1)] = int(match.group(2))
ok = bool(captured)
if not captured:
    print("no entry point was captured")
for name, nodes in sorted(captured.items()):
    if name not in estimated:
        print(f"{name}: captured {nodes} kernels, not in the estimate")
        ok = False
    elif estimated[name] != nodes:
        print(f"{name}: captured {nodes} kernels, estimated {estimated[name]}")
        ok = False
    else:
        print(f"{name}: {nodes} kernels, as estimated")
sys.exit(0 if ok else 1)
