#!/usr/bin/env python3
"""Rewrites a CUDA source for the CUDA emulator: every kernel launch
`kernel<<<grid, block, shmem, stream>>>(args)` becomes
`::tgc::emu::launch("kernel", kernel, grid, block, shmem, stream)(args)`,
on the same line, so that diagnostics point at the original source. Anything
else with `<<<` in it is an error: it would not compile as C++ anyway, and a
launch the pattern misses must not go unnoticed.

Usage: lower_launches.py INPUT.cu OUTPUT.cpp
"""
import re
import sys

LAUNCH = re.compile(r"([A-Za-z_]\w*(?:<[^<>;()]*>)?)\s*<<<([^;]*?)>>>\s*\(")


def lower(text, path):
    def replace(match):
        kernel, config = match.group(1), match.group(2)
        return '::tgc::emu::launch("%s", %s, %s)(' % (kernel, kernel, config)

    lowered = LAUNCH.sub(replace, text)
    for number, line in enumerate(lowered.splitlines(), 1):
        if "<<<" in line or ">>>" in line:
            sys.exit("%s:%d: a kernel launch the emulator cannot lower: %s"
                     % (path, number, line.strip()))
    return '#line 1 "%s"\n%s' % (path, lowered)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, output = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    lowered = lower(text, source)
    with open(output, "w", encoding="utf-8") as f:
        f.write(lowered)


if __name__ == "__main__":
    main()
