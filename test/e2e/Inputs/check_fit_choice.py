"""Checks tgc-compile --fit's log: the starred configuration is one that
fits, with the least estimated step of those that fit (ties: the least
memory); prints the data-parallel modes (and hybrid sharding's groups)
planned."""
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
line_re = re.compile(r"^  (\*| ) (fits|over) (.*?) --batch=\S+(?: --grad-accum=\d+)?: "
                     r"([0-9.]+) (B|KiB|MiB|GiB) \(.*?\)(?:, step ([0-9.e+-]+) ms)?$")
candidates = []
for line in open(sys.argv[1]):
    match = line_re.match(line.rstrip("\n"))
    if match:
        star, fits, flags, size, unit, step = match.groups()
        candidates.append((star == "*", fits == "fits", flags,
                           float(size) * UNITS[unit],
                           float(step) if step else None))
chosen = [c for c in candidates if c[0]]
fitting = [c for c in candidates if c[1]]
assert len(chosen) == 1, f"{len(chosen)} configurations starred"
best = min(fitting, key=lambda c: (c[4], c[3]))
assert chosen[0][1], "the starred configuration does not fit"
assert (chosen[0][4], chosen[0][3]) == (best[4], best[3]), \
    f"chose {chosen[0][2]} ({chosen[0][4]} ms), fastest is {best[2]} ({best[4]} ms)"
modes = sorted({re.search(r"--data-parallel=(\w+)", c[2]).group(1)
                for c in candidates if "--data-parallel" in c[2]})
groups = sorted({int(g) for c in candidates
                 for g in re.findall(r"--shard-group=(\d+)", c[2])})
print("the fastest that fits chosen; modes planned: " + " ".join(modes)
      + ("; shard groups planned: " + " ".join(map(str, groups))
         if groups else ""))
