"""Reads two memory reports (tgc-compile --memory-report) of one model,
without and with --optimizer-in-backward, and prints the gradient bytes
live at each one's peak and whether the second plan's total is smaller."""
import json
import sys


def load(path):
    with open(path) as f:
        report = json.load(f)
    total = report["persistent_bytes"] + report["arena_bytes"]
    return report["peak"]["breakdown"]["grads"], total


def mib(n):
    return f"{n / 2**20:.1f} MiB"


(grads_off, total_off), (grads_on, total_on) = map(load, sys.argv[1:3])
verdict = "total smaller" if total_on < total_off else "TOTAL NOT SMALLER"
print(f"gradients at the peak: {mib(grads_off)} -> {mib(grads_on)}; {verdict} "
      f"({mib(total_off)} -> {mib(total_on)})")
