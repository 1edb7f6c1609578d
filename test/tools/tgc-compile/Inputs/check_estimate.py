"""Checks a tgc-compile --estimate-json file: each entry's totals are the
sums of its ops, each op's time is the largest of its compute, memory and
link times, a collective's link time is its algorithm's over the device's
links (recomputed here), the two streams run their ops in order without
overlapping, and the step's time is the entries' times by their run
counts."""
import json
import math
import sys

estimate = json.load(open(sys.argv[1]))
device = estimate["device"]
print("entries: " + " ".join(f"{e['name']} x{e['runs_per_step']}"
                            for e in estimate["entries"]))


def link_seconds(op):
    """The ring (and, for an all-reduce, double binary tree) time of a
    collective over `world` ranks `stride` apart, numbered node by node:
    across nodes, each node's members of the group use as many ports."""
    world, stride = op["world_size"], op["rank_stride"]
    kind = op["op"]
    whole = {"tg.all_gather": op["bytes_written"]}.get(kind, op["bytes_read"])
    intra, inter = device["intra_node"], device["inter_node"]
    bandwidth, latency = intra["bandwidth"], intra["latency"]
    per_node = device["gpus_per_node"]
    if world * stride > per_node:
        on_node = max(1, per_node // stride)
        if on_node == 1 and stride > 1:
            bandwidth, latency = inter["bandwidth"], inter["latency"]
        else:
            bandwidth = min(bandwidth, on_node * inter["bandwidth"])
            latency = max(latency, inter["latency"])
    steps = (2 if kind == "tg.all_reduce" else 1) * (world - 1)
    ring = steps * latency + steps / world * whole / bandwidth
    if kind != "tg.all_reduce":
        return ring
    tree = 2 * math.ceil(math.log2(world)) * latency + 2 * whole / bandwidth
    return min(ring, tree)


ok = True
types = set()
step = 0.0
communication = 0
for entry in estimate["entries"]:
    ops = entry["ops"]
    clocks = {"compute": 0.0, "communication": 0.0}
    for op in ops:
        ok &= math.isclose(op["seconds"], max(op["compute_seconds"],
                                              op["memory_seconds"],
                                              op["link_seconds"]))
        ok &= op["op"] != "tg.reshape"
        if op["matmul_flops"]:
            types.add(op["matmul_type"])
        if op["stream"] == "communication":
            communication += 1
            ok &= math.isclose(op["link_seconds"], link_seconds(op),
                               rel_tol=1e-9)
        # In order on its stream, never before the op before it is done.
        clock = clocks[op["stream"]]
        ok &= op["start_seconds"] >= clock * (1 - 1e-12)
        clocks[op["stream"]] = op["start_seconds"] + op["seconds"]
    compute = sum(op["seconds"] for op in ops if op["stream"] == "compute")
    ok &= math.isclose(compute, entry["compute_seconds"], abs_tol=1e-15)
    ok &= math.isclose(max(clocks.values()), entry["seconds"], abs_tol=1e-15)
    ok &= math.isclose(entry["seconds"] - compute,
                       entry["exposed_communication_seconds"], abs_tol=1e-12)
    ok &= sum(op["flops"] for op in ops) == entry["flops"]
    ok &= sum(op["bytes_read"] + op["bytes_written"] + op["scratch_bytes"]
              for op in ops) == entry["bytes"]
    ok &= sum(k["count"] for k in entry["kinds"]) == len(ops)
    step += entry["runs_per_step"] * entry["seconds"]
ok &= math.isclose(step, estimate["step_seconds"])
print("totals agree" if ok else "totals DISAGREE")
print("matmul types: " + " ".join(sorted(types)))
if communication:
    print(f"collectives: {communication}, exposed "
          f"{'some' if estimate['exposed_communication_seconds'] > 0 else 'none'}")
