"""Checks that training left frozen parameters bitwise unchanged.
Usage: check_frozen.py INIT.safetensors FINAL.safetensors GLOBS
GLOBS: comma-separated fnmatch globs on the parameter names. Every tensor
of FINAL matching one must equal INIT's exactly (values compared in f32,
so a 16-bit frozen copy equals the rounded weights it was loaded as), and
every glob must match some tensor. Prints the dtypes FINAL stores them in."""
import fnmatch
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

init, final, globs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
before, after = safetensors_io.load(init), safetensors_io.load(final)
checked, dtypes = 0, set()
for glob in globs:
    names = [n for n in after if fnmatch.fnmatchcase(n, glob)]
    if not names:
        sys.exit(f"{glob} matches no tensor of {final}")
    for name in names:
        a, b = after[name].float(), before[name].float()
        if not torch.equal(a, b):
            sys.exit(f"frozen {name} changed: max difference "
                     f"{float((a - b).abs().max()):.3g}")
        dtypes.add(str(after[name].dtype).replace("torch.", ""))
        checked += 1
print(f"{checked} frozen tensors bitwise unchanged ({', '.join(sorted(dtypes))})")
