"""Prints whether the second memory report's peak of live transient bytes
is lower or higher than the first's, with both figures.
Usage: compare_peaks.py BASE.json OTHER.json"""
import json
import sys

base = json.load(open(sys.argv[1]))["peak_live_bytes"]
other = json.load(open(sys.argv[2]))["peak_live_bytes"]
verdict = "lowers" if other < base else "raises" if other > base else "keeps"
print(f"AMP {verdict} the planned peak: {base} -> {other} bytes "
      f"({(other - base) / base * 100:+.1f}%)")
