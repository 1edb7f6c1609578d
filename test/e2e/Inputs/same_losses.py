"""Checks that two tgc-run metrics files have bitwise the same losses."""
import json
import sys

a = [json.loads(line) for line in open(sys.argv[1])]
b = [json.loads(line) for line in open(sys.argv[2])]
la = [row["loss"] for row in a if "loss" in row]
lb = [row["loss"] for row in b if "loss" in row]
if la != lb or not la:
    sys.exit(f"losses differ: {la} vs {lb}")
print(f"{len(la)} losses identical")
