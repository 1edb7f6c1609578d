"""Exact rematerialization baseline: the Checkmate MILP solved with CBC.

Checkmate (Jain et al., "Checkmate: Breaking the Memory Wall with Optimal
Tensor Rematerialization", MLSys 2020) finds, for a fixed topological order
and a memory budget, the schedule with recomputation that uses the fewest
FLOPs. tgc's rematerialization is a heuristic; this script gives the optimum
it is compared with (the remat optimality test), over the graph that tgc
exports:

    {"function": NAME,
     "values": [{"bytes": B, "def": NODE}, ...],   transient buffers
     "nodes":  [{"name": S, "flops": F, "forward": BOOL,
                 "inputs": [VALUE, ...], "outputs": [VALUE, ...],
                 "reuse": [[OUT, IN], ...]}, ...]} in schedule order

Memory model (tgc's planner's): an instance of a value is live from the
execution defining it through the last execution reading it, or only at its
defining execution when nothing reads it. The memory of an execution is the
sum of the bytes of the instances live there, except for in-place reuse: the
node's reuse pairs [OUT, IN] are tried in order, and OUT takes IN's buffer
(the two count once) when the instance of IN read there dies there and no
earlier pair of the node took IN or OUT; pairs of different sizes never
apply. A read sees the latest instance of the value. The peak is the
largest memory of an execution. `simulate_peak` implements this model on an
explicit schedule and is the reference: every solution of the MILP is turned
back into a schedule and simulated, and the simulated peak must be within the
budget and equal to the MILP's own accounting.

The MILP is Checkmate's, generalised to nodes with several (or no) outputs.
Stage t (one per node) computes node t and may recompute any earlier nodes,
all in index order. Binary R[t,k]: node k is computed in stage t (R[t,t] = 1).
Binary S[t,v]: value v is held from an earlier stage at the start of stage t
(S[0,.] = S[n,.] = 0). FREE[t,v,k], for v read or defined by node k: v is
freed right after node k in stage t, the product
    R[t,k] (1 - S[t+1,v]) prod_{users j of v, k < j <= t} (1 - R[t,j]),
written with one inequality per factor and one below their sum; with R and S
integral this forces the product exactly, so FREE is left continuous.
TAKE of a reuse pair of node k in stage t is FREE[t,IN,k] when no earlier
pair of k shares IN or OUT; otherwise it is that FREE and no earlier such
pair's TAKE, forced exactly in pair order by three inequalities. U[t,k] is
the memory while node k runs in stage t:
    U[t,k] = U[t,k-1] - (bytes freed after node k-1) + R[t,k] (bytes of k's
             outputs) - bytes(IN) TAKE for each reuse pair of k,
where the reuse credit of node k-1 is added back with its frees (IN's buffer
is not freed twice), U[t,-1] = sum_v S[t,v] bytes(v), and U[t,k] <= budget.

Checkmate's two correctness constraints are used in a stronger form that is
still valid for every integral solution. The copies of v present in stage t,
S[t,v] + R[t,def(v)], cover each read together with the frees before it:
    R[t,k] + sum_{j < k} FREE[t,v,j] <= S[t,v] + R[t,def(v)]  (k reads v),
and what is kept for the next stage together with all frees:
    S[t+1,v] + sum_k FREE[t,v,k] <= S[t,v] + R[t,def(v)].
Without them the relaxation may free a value twice, and CBC's search is far
slower. Two more families hold for an optimal solution, not for every one:
every solution can drop recomputations whose outputs are neither read later
in the stage nor kept, and held values that are recomputed or never read,
without more FLOPs or more memory at any computation:
    R[t,k] <= sum_{v output of k} (S[t+1,v] + sum_{users j > k} R[t,j]),
    S[t,v] + R[t,def(v)] <= 1,  S[t,v] <= S[t+1,v] + sum_{users j} R[t,j].
They prune the search and make U exactly the memory of the schedule: the
simulated peak of a solution must equal the MILP's.

The objective is the FLOPs of all computations. Zero-FLOP nodes (reshapes,
casts, ...) could be recomputed for nothing; a cost of at most 1/(their
number + 1) per such recomputation, below one FLOP in all, picks among the
optimal schedules one with the fewest of them, so that a budget that needs
no recomputation gives exactly the plain schedule.

The optimum is exact over all schedules made of such stages (Checkmate's
frontier-advancing schedules of the given order). Proving it can take CBC
long: the relaxation is weak at tight budgets (a 40-node MLP step needs
minutes below ~90% of its plain peak, a 91-node chain seconds down to half
of it); --time-limit bounds each budget and reports the best schedule found.

Usage:
    checkmate.py GRAPH.json --budget BYTES [--budget BYTES ...]
                 [--time-limit SECONDS]
        one JSON line per budget: {"budget", "status" (optimal, infeasible or
        timeout), "added_flops", "bound", "peak", "solve_seconds"};
        added_flops and peak are those of the best schedule found (null when
        none was), bound is CBC's proven lower bound on the added FLOPs (the
        optimum when proven; from its log), and solve_seconds covers
        building and solving the MILP.
    checkmate.py GRAPH.json --no-remat-peak
        the peak of the plain schedule (each node once, in order), in bytes.
"""
import argparse
import json
import math
import re
import shutil
import tempfile
import sys
import time

import pulp


class Graph:
    """The exported graph, validated, with each value's readers."""

    def __init__(self, data):
        self.value_bytes = [int(v["bytes"]) for v in data["values"]]
        self.value_def = [int(v["def"]) for v in data["values"]]
        nodes = data["nodes"]
        self.num_nodes = len(nodes)
        self.flops = [int(n["flops"]) for n in nodes]
        # Sets: a node reading a value twice holds one instance of it.
        self.inputs = [sorted(set(n["inputs"])) for n in nodes]
        self.outputs = [list(n["outputs"]) for n in nodes]
        self.reuse = [[(out, inp) for out, inp in n.get("reuse", [])
                       if self.value_bytes[out] == self.value_bytes[inp]]
                      for n in nodes]
        self.users = [[] for _ in self.value_bytes]
        for k, inputs in enumerate(self.inputs):
            for v in inputs:
                self.users[v].append(k)
        self._validate()

    def touched(self, k):
        """Values that node k reads or defines: those it may free."""
        return self.inputs[k] + self.outputs[k]

    def output_bytes(self, k):
        return sum(self.value_bytes[v] for v in self.outputs[k])

    def _validate(self):
        defined_by = {}
        for k, outputs in enumerate(self.outputs):
            for v in outputs:
                if v in defined_by or self.value_def[v] != k:
                    raise ValueError(f"value {v} is not defined once, by node {k}")
                defined_by[v] = k
        if len(defined_by) != len(self.value_bytes):
            raise ValueError("a value is defined by no node")
        for k, inputs in enumerate(self.inputs):
            for v in inputs:
                if self.value_def[v] >= k:
                    raise ValueError(f"node {k} reads value {v} before its definition")
            for out, inp in self.reuse[k]:
                if out not in self.outputs[k] or inp not in inputs:
                    raise ValueError(f"node {k}: reuse {[out, inp]} is not output, input")


def simulate_peak(graph, schedule):
    """Peak memory of `schedule` (node indices, in execution order) under the
    memory model; raises ValueError when a node reads a value not computed
    before it. Reads see the latest instance of a value."""
    num_steps = len(schedule)
    latest = {}            # value -> its latest instance
    instances = []         # [bytes, defining step, last reading step]
    reuse_at = []          # per step: (OUT, IN, IN's instance) of each pair
    for step, k in enumerate(schedule):
        for v in graph.inputs[k]:
            if v not in latest:
                raise ValueError(f"step {step}: node {k} reads value {v} "
                                 "that is not computed")
            instances[latest[v]][2] = step
        reuse_at.append([(out, inp, latest[inp]) for out, inp in graph.reuse[k]])
        for v in graph.outputs[k]:
            latest[v] = len(instances)
            instances.append([graph.value_bytes[v], step, step])
    credits = [0] * num_steps
    for step, pairs in enumerate(reuse_at):
        taken = set()
        for out, inp, instance in pairs:
            if instances[instance][2] == step and not taken & {out, inp}:
                taken |= {out, inp}
                credits[step] += graph.value_bytes[inp]
    change = [0] * (num_steps + 1)
    for size, start, end in instances:
        change[start] += size
        change[end + 1] -= size
    peak = live = 0
    for step in range(num_steps):
        live += change[step]
        peak = max(peak, live - credits[step])
    return peak


class CheckmateMILP:
    """The MILP of one graph and budget; memory in units of the gcd of the
    value sizes, so that every coefficient and the budget are integers."""

    def __init__(self, graph, budget):
        self.graph = graph
        n = graph.num_nodes
        self.unit = math.gcd(*graph.value_bytes) or 1
        size = [b // self.unit for b in graph.value_bytes]
        self.problem = pulp.LpProblem("checkmate", pulp.LpMinimize)

        # R[t][k]: the constant 1 for k == t.
        self.R = [[pulp.LpVariable(f"R_{t}_{k}", cat="Binary") for k in range(t)] + [1]
                  for t in range(n)]
        # S[t][v] for values defined before stage t; absent ones are 0, as
        # all of S[n] (nothing is held after the last stage).
        self.S = [{v: pulp.LpVariable(f"S_{t}_{v}", cat="Binary")
                   for v, d in enumerate(graph.value_def) if d < t}
                  for t in range(n)] + [{}]
        self.U = [[pulp.LpVariable(f"U_{t}_{k}", lowBound=0, upBound=budget // self.unit)
                   for k in range(t + 1)] for t in range(n)]
        for t in range(n):
            self._add_stage(t, size)

        zero_flop_recomputes = [self.R[t][k] for t in range(n) for k in range(t)
                                if graph.flops[k] == 0]
        tie_break = 1.0 / (len(zero_flop_recomputes) + 1)
        self.problem.setObjective(
            pulp.lpSum(graph.flops[k] * self.R[t][k] for t in range(n) for k in range(t))
            + tie_break * pulp.lpSum(zero_flop_recomputes))

    def _add_stage(self, t, size):
        """The constraints of stage t: the copies present cover the reads,
        frees and what is kept; the memory recurrence; and the dominance
        constraints (no useless recomputation, no useless held value)."""
        graph, constraint = self.graph, self.problem.addConstraint
        R, S, kept = self.R[t], self.S[t], self.S[t + 1]

        def present(v):
            """Copies of v in this stage: held, and computed."""
            return S.get(v, 0) + R[graph.value_def[v]]

        def read_after(v, k):
            """How many nodes after node k read v in this stage."""
            return pulp.lpSum(R[j] for j in graph.users[v] if k < j <= t)

        frees = {v: [] for v, d in enumerate(graph.value_def) if d <= t}  # FREE[t,v,.]
        after_previous = pulp.lpSum(size[v] * held for v, held in S.items())
        for k in range(t + 1):
            for v in graph.inputs[k]:
                constraint(R[k] + pulp.lpSum(frees[v]) <= present(v))
            free_here = {v: self._free_variable(t, v, k) for v in graph.touched(k)}
            for v, free in free_here.items():
                frees[v].append(free)
            reuse_credit = pulp.lpSum(
                size[inp] * take
                for (_, inp), take in zip(graph.reuse[k], self._takes(t, k, free_here)))
            constraint(self.U[t][k] == after_previous - reuse_credit
                       + R[k] * (graph.output_bytes(k) // self.unit))
            after_previous = (self.U[t][k] + reuse_credit
                              - pulp.lpSum(size[v] * free for v, free in free_here.items()))
        for v, freed_after in frees.items():
            constraint(kept.get(v, 0) + pulp.lpSum(freed_after) <= present(v))

        for v, held in S.items():
            constraint(held + R[graph.value_def[v]] <= 1)
            constraint(held <= kept.get(v, 0) + read_after(v, -1))
        for k in range(t):
            constraint(R[k] <= pulp.lpSum(kept.get(v, 0) + read_after(v, k)
                                          for v in graph.outputs[k]))

    def _free_variable(self, t, v, k):
        """FREE[t,v,k] = R[t,k] (1 - S[t+1,v]) prod (1 - R[t,j]) over the
        users j of v computed after k in stage t."""
        R = self.R[t]
        factors = [R[k], 1 - self.S[t + 1].get(v, 0)]
        factors += [1 - R[j] for j in self.graph.users[v] if k < j <= t]
        free = pulp.LpVariable(f"FREE_{t}_{v}_{k}", lowBound=0, upBound=1)
        for factor in factors:
            self.problem.addConstraint(free <= factor)
        self.problem.addConstraint(free >= pulp.lpSum(factors) - (len(factors) - 1))
        return free

    def _takes(self, t, k, free_here):
        """TAKE of each reuse pair of node k in stage t, given the FREE of
        the values k touches: the pair's input dies here and no earlier pair
        took its input or its output."""
        takes = []
        pairs = self.graph.reuse[k]
        for p, (out, inp) in enumerate(pairs):
            earlier = [take for (o, i), take in zip(pairs[:p], takes) if o == out or i == inp]
            if not earlier:
                takes.append(free_here[inp])
                continue
            take = pulp.LpVariable(f"TAKE_{t}_{k}_{p}", lowBound=0, upBound=1)
            self.problem.addConstraint(take <= free_here[inp])
            for other in earlier:
                self.problem.addConstraint(take <= 1 - other)
            self.problem.addConstraint(take >= free_here[inp] - pulp.lpSum(earlier))
            takes.append(take)
        return takes

    def solve(self, time_limit):
        # CBC's integer preprocessing can end in a model it cannot map back
        # ("Postprocessed model is infeasible") and still report an optimum
        # that violates constraints: it is off.
        with tempfile.NamedTemporaryFile(suffix=".log") as log:
            options = dict(msg=False, timeLimit=time_limit, threads=2, timeMode="elapsed",
                           options=["preprocess off"], logPath=log.name)
            status = self._solve(options)
            self.bound = self._lower_bound(open(log.name).read())
        return status

    def _lower_bound(self, log):
        """CBC's proven lower bound on the objective (added FLOPs), from
        its log: the optimum when it is proven, else the bound it reached."""
        if self.problem.sol_status == pulp.LpSolutionOptimal:
            return pulp.value(self.problem.objective)
        found = re.search(r"Lower bound:\s+(\S+)", log)
        return float(found.group(1)) if found else None

    def _solve(self, options):
        if shutil.which("cbc"):
            solver = pulp.COIN_CMD(path=shutil.which("cbc"), **options)
        else:
            solver = pulp.PULP_CBC_CMD(**options)
        self.problem.solve(solver)
        if self.problem.status == pulp.LpStatusInfeasible:
            return "infeasible"
        if self.problem.sol_status == pulp.LpSolutionOptimal:
            return "optimal"
        return "timeout"

    def has_solution(self):
        """Whether CBC found a schedule (an optimal one, or one before the
        time limit)."""
        return self.problem.sol_status in (pulp.LpSolutionOptimal,
                                           pulp.LpSolutionIntegerFeasible)

    def schedule(self):
        """The node executions of the solution, stage by stage."""
        return [k for t, row in enumerate(self.R) for k, computed in enumerate(row)
                if pulp.value(computed) > 0.5]

    def peak_bytes(self):
        """The MILP's peak: the largest U[t,k] over the computations."""
        return self.unit * max(round(self.U[t][k].value())
                               for t, row in enumerate(self.R)
                               for k, computed in enumerate(row)
                               if pulp.value(computed) > 0.5)


def solve_budget(graph, budget, time_limit):
    """Solves one budget; checks the solution by simulating its schedule."""
    start = time.monotonic()
    milp = CheckmateMILP(graph, budget)
    status = milp.solve(time_limit)
    seconds = time.monotonic() - start
    result = {"budget": budget, "status": status, "added_flops": None,
              "bound": milp.bound, "peak": None, "solve_seconds": round(seconds, 3)}
    if not milp.has_solution():
        return result
    schedule = milp.schedule()
    peak = simulate_peak(graph, schedule)
    if peak > budget or peak != milp.peak_bytes():
        raise AssertionError(f"budget {budget}: the schedule's peak {peak} exceeds the "
                             f"budget or differs from the MILP's {milp.peak_bytes()}")
    result["added_flops"] = sum(graph.flops[k] for k in schedule) - sum(graph.flops)
    result["peak"] = peak
    return result


def main():
    parser = argparse.ArgumentParser(
        description="Optimal rematerialization (Checkmate's MILP, CBC) of a tgc graph.")
    parser.add_argument("graph", help="the graph JSON that tgc exports")
    parser.add_argument("--budget", type=int, action="append", default=[],
                        help="memory budget in bytes (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds CBC may take per budget")
    parser.add_argument("--no-remat-peak", action="store_true",
                        help="print the peak of the plain schedule")
    args = parser.parse_args()
    with open(args.graph) as f:
        graph = Graph(json.load(f))
    if args.no_remat_peak:
        print(simulate_peak(graph, list(range(graph.num_nodes))))
    if not args.budget and not args.no_remat_peak:
        parser.error("give --budget or --no-remat-peak")
    for budget in args.budget:
        print(json.dumps(solve_budget(graph, budget, args.time_limit)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
