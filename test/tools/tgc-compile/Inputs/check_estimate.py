"""Checks a tgc-compile --estimate-json file: each entry's totals are the
sums of its ops, each op's time is the larger of its compute and memory
times, and the step's time is the entries' times by their run counts."""
import json
import math
import sys

estimate = json.load(open(sys.argv[1]))
print("entries: " + " ".join(f"{e['name']} x{e['runs_per_step']}"
                            for e in estimate["entries"]))
ok = True
types = set()
step = 0.0
for entry in estimate["entries"]:
    ops = entry["ops"]
    for op in ops:
        ok &= math.isclose(op["seconds"], max(op["compute_seconds"],
                                              op["memory_seconds"]))
        ok &= op["op"] != "tg.reshape"
        if op["matmul_flops"]:
            types.add(op["matmul_type"])
    ok &= sum(op["flops"] for op in ops) == entry["flops"]
    ok &= sum(op["bytes_read"] + op["bytes_written"] + op["scratch_bytes"]
              for op in ops) == entry["bytes"]
    ok &= math.isclose(sum(op["seconds"] for op in ops), entry["seconds"])
    ok &= sum(k["count"] for k in entry["kinds"]) == len(ops)
    step += entry["runs_per_step"] * entry["seconds"]
ok &= math.isclose(step, estimate["step_seconds"])
print("totals agree" if ok else "totals DISAGREE")
print("matmul types: " + " ".join(sorted(types)))
