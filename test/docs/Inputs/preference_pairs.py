"""Writes N preference pairs ({"prompt", "chosen", "rejected"} lines) to
OUT: the docs' pairs.jsonl fixture.
Usage: preference_pairs.py N OUT"""
import json
import sys

count, out = int(sys.argv[1]), sys.argv[2]
with open(out, "w") as f:
    for i in range(count):
        f.write(json.dumps({"prompt": f"What is {i} plus {i}?",
                            "chosen": f"It is {2 * i}.",
                            "rejected": f"It is {2 * i + 1}, I think."}) +
                "\n")
