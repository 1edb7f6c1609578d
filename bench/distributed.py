"""Data parallelism: what each rank holds, planned without a cluster, and
the CPU step time at 1 and 2 ranks.

Table 1 plans GPT-2 124M and 1558M (batch 1 of 1024 tokens per rank) with
tgc-compile --memory-report, at world sizes 1, 2, 8 and 64, in f32 and with
--amp=bf16, with AdamW's f32 state and with 8-bit state, for ddp, zero1,
zero2 and zero3: the persistent bytes per rank (parameters and optimizer
state), the planned peak of the transient arena (activations, gradients,
gathered parameters, workspace), the bytes a rank sends per step, and
beside them the ZeRO paper's formula for the model states per rank
(Rajbhandari et al. 2020, with Psi parameters: 16 Psi for DDP, 4 Psi + 12
Psi / N for stage 1, 2 Psi + 14 Psi / N for stage 2, 16 Psi / N for stage
3, in mixed precision with Adam).

Table 3 plans full fine-tuning of Llama-3-8B and Llama-3-70B (one sequence
of 2048 tokens per rank; bf16 compute, 8-bit AdamW state, remat of the
blocks, the updates inside the backward pass) under zero2 and zero3 at 8,
16 and 64 ranks, with the roofline's step on H100s (tgc-compile
--estimate=h100: NVLink 4 inside a node of 8, 400 Gb/s InfiniBand between
nodes; the collectives on a second stream, what of them the compute does
not hide), and the fewest 80 GB H100s each trains on as tgc-compile
--world-size auto --fit finds them (the data-parallel mode searched).

Table 4 plans Llama-3-70B under zero3 at 16, 64 and 256 ranks split
across every rank and with hybrid sharding (--shard-group=8: split within
a node of 8 H100s, replicated across nodes), with the same estimate.

Table 5 plans Llama-3-8B with gradient accumulation (8 micro-batches of
one sequence of 2048 tokens a rank per optimizer step; bf16, 8-bit AdamW,
remat of the blocks) on 8 ranks in each mode, with the same estimate.

Table 2 times the 2-layer GPT-2 of the data-parallel test's shape, scaled
up (C=256, T=128, global batch 16) on this machine: one process on the
whole batch, and two ranks (mpirun -n 2) on half each, in one run.

  /usr/bin/python3 bench/distributed.py [--build build]
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
import time

from common import ROOT, machine, run, size_bytes

WORLDS = (1, 2, 8, 64)
# What the tables say, checked against the figures of the run that wrote
# bench/DISTRIBUTED.md (update them together).
NOTES = """## Reading the tables

- **One process and two ranks take about the same time on two cores**:
  every kernel of one process runs on both cores (its GEMMs in tiles on
  the same team), so a second process brings no idle core to work; the
  ranks pay the collectives (packing and padding the buckets, the
  all-gathers of the parameters under ZeRO) and a step of half the size
  each. The four modes take within 10% of one process's time, about this
  machine's noise from run to run. One process on one thread shows what
  the second core buys.
- **Persistent memory follows ZeRO's division**: f32 parameters (4 Psi)
  stay whole on every rank under ddp, zero1 and zero2, and AdamW's two f32
  moments (8 Psi) are divided by N: 17.41 GiB for GPT-2 1558M in one
  process, 11.61 at N = 2, 5.98 at N = 64 (4 Psi + 8 Psi / 64 = 5.98 GiB;
  each parameter is padded to a multiple of N, a few KiB). zero3 divides
  the parameters too: 8.70 GiB at N = 2, 0.27 at N = 64 (12 Psi / 64; the
  paper's 16 Psi / N counts the gradients, which tgc keeps transient, in
  the arena). The 8-bit state (2 Psi) divides the same way.
- **Where tgc differs from the paper's mixed-precision layout**: with
  `--amp=bf16` tgc keeps the parameters in f32 as the master weights and
  casts them per step (transient), so its persistent memory is the f32
  rows'; the paper keeps 2-byte parameters and gradients and counts the
  f32 master copy (4 Psi) in the 12 Psi it divides. Under zero1 and zero2
  tgc holds 4 Psi of whole parameters at any N, against the paper's 2 Psi
  (stage 2); under zero3 it holds 12 Psi / N (6 Psi / N with 8-bit
  state), less than the paper's 16 Psi / N.
- **The arena** holds the activations, the gradients (ddp and zero1 keep
  every whole gradient until the end of the backward pass; zero2 and zero3
  reduce-scatter each bucket as soon as it is complete) and, under zero3,
  the gathered buckets of parameters (each dies after its last reader in
  its pass). With `--amp=bf16` zero3's arena is the smallest (GPT-2 1558M
  at N = 64: 3.24 GiB against zero2's 5.79): it gathers each parameter's
  bf16 cast where each pass first reads it, while the other modes keep
  each parameter's bf16 copy, whole, from its first reader in the forward
  pass to its last in the backward pass (without remat).
- **Bytes sent** follow the ring algorithms: ddp all-reduces the gradients
  (2 (N - 1) / N of them), zero1 and zero2 reduce-scatter the gradients and
  all-gather the parameters ((N - 1) / N each); zero3 reduce-scatters the
  gradients and gathers the parameters twice (the forward and the backward
  pass), 1.5 times zero2's in f32 (GPT-2 1558M at N = 64: 17.13 GiB
  against 11.42), about the same in bf16, where it gathers the bf16 casts
  (8.87 GiB against 8.72).
- **Llama-3 full fine-tuning**: Llama-3-70B plans 58.10 GiB a rank on 8
  ranks under zero3 (49.54 GiB of f32 parameters and 8-bit moments, 6 Psi /
  8, and an 8.56 GiB arena); zero2 needs 320.76 GiB a rank at N = 8 and
  still 276.94 at N = 64 (the whole f32 parameters alone are 263 GiB).
  `--world-size auto` finds that 6 H100s train it under zero3 with
  everything on the GPUs (74.94 GiB a rank; 5 do not fit), 4 with each
  rank's parts of the 8-bit state in its host's pinned memory
  (ZeRO-Offload: 75.17 GiB on the GPU and 33.37 GiB on the host a rank,
  the estimated step 2.77 s against 2.49, the state crossing the host
  link), and that Llama-3-8B trains on one H100 as one process (50.51
  GiB), 8.66 GiB a rank on 8 under zero3. With
  `--remat=blocks` a rank sends two bf16 gathers of the parameters a step
  (the forward pass; the backward pass, where a recomputed block and its
  gradients read one gathered copy: tg-share-gathers, as FSDP does) and
  the reduce-scatter of the gradients: 346.69 GiB at N = 8 for 70B
  (427.63 GiB when the recomputation gathered a third time).
- **The estimated step with communication**: on 8 H100s (one NVLink
  node) Llama-3-70B's zero3 step is 2.21 s, its collectives 0.84 s of
  link time of which 0.15 s is not hidden behind compute (MFU 40.0%);
  crossing nodes (N = 16, 64: the rings run at the InfiniBand ports'
  400 GB/s a node together, the latency of a network hop a step) the
  exposed part grows to 0.30 and 0.61 s. Each bucket's updates wait for
  its reduce-scatter only once the next bucket's is issued
  (tg-overlap-collectives; before it, 0.56 s of zero3's link time was
  exposed at N = 8). zero2 still exposes 0.56 of its 0.84 s: the gathers
  of the updated parameters end the step with nothing left to overlap
  them (the next step's forward pass could).
- **Collectives in flight hold their memory**: the CUDA backend runs
  each collective beside the compute until the next is queued or its
  memory is next touched, and the plan keeps its operand and result live
  until then. That costs the arena what is in flight at its peak:
  Llama-3-8B under zero2 at N = 8 plans 7.92 GiB of arena, against 5.97
  when every collective completed before the next op ran (the
  embedding's 2 GiB f32 gradient stays until its reduce-scatter is
  joined, across the LM head's gradient), zero3 3.02 against 2.93.
- **Hybrid sharding** (`--shard-group=8`, Llama-3-70B under zero3): a
  rank holds an eighth of the model whatever N (58.10 GiB, against 32.84
  GiB split across 16 and 9.23 across 256), and only the replicas'
  all-reduce of each part crosses the network: 0.36 s of link time at
  N = 16 against 1.12 s when every collective spans the job. Yet the
  estimate prefers splitting across all 16 (2.32 s a step against 2.47):
  the all-reduce adds to the node's reduce-scatter on the one
  communication stream, and a ring over two nodes still moves at the
  ports' 400 GB/s. At 256 ranks a ring over the job pays 255 network
  latencies a collective (3.22 s of link time), and hybrid sharding wins,
  2.72 s against 3.88; `--fit` plans both and takes the faster.
- **16-bit master weights under zero3** (Llama-3-70B, the Llama flags
  and `--master-weights=bf16`, each rank rounding its part with the
  whole tensor's bits): a rank's parameters and 8-bit moments fall from
  6 Psi / N to 4 Psi / N (33.11 GiB against 49.54 at N = 8), and
  `--world-size auto` finds that 4 H100s train it instead of 6 (74.29
  GiB a rank), 2 with the state in host memory (66.74 GiB of it a rank,
  the estimated step 3.20 s). The arena is smaller than f32 masters'
  (7.82 GiB against 8.56 at N = 8); it was 9.72 until the embedding
  read the bf16 table itself (it looked up rows of an f32 copy of the
  whole 128256 x 8192 table) and the LM head's first gather of the
  backward pass (2 GiB, which its update must follow: the update
  overwrites the part the gather reads) moved with the update past the
  weight-gradient product. Parameters of a bucket or more are gathered
  alone and the small ones around them share one gather (the norm
  weights had been gathered one collective each, between the
  projections): at N = 64 the estimated step went from 2.75 to 2.67 s,
  for 0.6% more bytes sent (the backward pass's buckets of small
  parameters no longer match the recomputed forward's, whose copies
  tg-share-gathers reuses). The estimated steps are within 0.1 s of f32
  masters' at N = 8 and 16.
- **QLoRA under zero3** (Llama-3-70B, an NF4 base and rank-16 adapters):
  one process plans 50.51 GiB, of which the 4-bit base (codes and
  scales) is 32.89 GiB; zero3 splits the base like every other
  parameter (until this table was added every rank held all of it), so
  a rank plans 30.37 GiB on 2 ranks, 19.11 on 4 (24 GB cards) and 13.48
  on 8. The arena grows from 7.48 to 8.85 GiB on 2 ranks: a block's
  gathered codes and scales, and the next block's gather in flight. The
  gathers (37.98 GiB sent a step on 2 ranks: each block's parts in the
  forward pass and again in the backward pass) hide behind compute:
  0.01 s exposed of an estimated 2.20 s step.
- **Gradient accumulation** (Llama-3-8B, 8 micro-batches a step on 8
  ranks): every mode sums the ranks' counts of targets before dividing,
  so the step is one process's on the 64 concatenated sequences. ddp and
  zero1 accumulate whole f32 gradients on each rank (29.92 GiB of
  accumulators) and send them once a step (52.35 GiB); ddp's apply step
  also holds its all-reduced buckets until the updates at its end (29.92
  GiB of arena). zero2 and zero3 keep a rank's part of each accumulator
  and reduce-scatter every micro-step's gradients (137.73 and 324.48 GiB
  sent a step, zero3's with the parameters' gathers), and their apply
  steps compute one gradient at a time from the parts (tg-stream-apply:
  2.27 and 0.24 GiB of arena): 38.41 and 12.99 GiB a rank in all, against
  104.94 under ddp. The estimate has zero3 fastest (2.66 s a step against
  3.10): its micro-steps' collectives hide behind compute (0.19 s
  exposed), and its apply step updates an eighth of the parameters where
  ddp's updates all of them on every rank.
"""
MODES = ("ddp", "zero1", "zero2", "zero3")
# An 80 GB H100's memory (85,520,809,984 bytes), less the 1 GiB that no
# plan counts (CUDA context, cuBLAS workspace: bench/gpu/README.md).
H100_BYTES = 85_520_809_984 - 2**30
LLAMA_FLAGS = ["--amp", "bf16", "--optimizer-state", "8bit", "--remat",
               "blocks", "--optimizer-in-backward"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def gib(n):
    return f"{n / 2**30:.2f}"


def plan(bins, model, tmp, flags, estimate=None):
    """The persistent and arena bytes and bytes sent a step of one rank;
    with `estimate`, also its roofline estimate as JSON."""
    exe = os.path.join(tmp, "plan.tgx")
    report = exe + ".json"
    extra = []
    if estimate:
        extra = ["--estimate", "h100", "--estimate-json", estimate]
    done = run([f"{bins}/tgc-compile", model, "-o", exe,
                "--memory-report", report] + flags + extra)
    step = json.load(open(report))
    sent = 0.0
    match = re.search(r"sends ([0-9.]+ (?:[KMGT]i)?B)", done.stderr)
    if match:
        sent = size_bytes(match.group(1))
    return step["persistent_bytes"], step["arena_bytes"], sent


def fewest_ranks(bins, model, tmp, flags):
    """The fewest H100s `model` trains on with `flags`, as `--world-size
    auto` finds them: (ranks, what it tried, the mode or None, a rank's
    bytes, the estimated step in ms, a rank's pinned host memory or None
    where nothing is offloaded)."""
    done = run([f"{bins}/tgc-compile", model, "-o",
                os.path.join(tmp, "auto.tgx"), "--world-size", "auto",
                f"--fit={H100_BYTES}"] + flags)
    tried = re.search(r"--world-size auto: (.*); the fewest ranks is "
                      r"(\d+)", done.stderr)
    chose = re.search(r"--fit chose (--data-parallel=(\w+) )?.*?: "
                      r"([0-9.]+ GiB) \((\d+) bytes\).*estimated step "
                      r"([0-9.]+) ms", done.stderr)
    host = re.search(r"and ([0-9.]+ (?:[KMGT]i)?B) of pinned host memory",
                     done.stderr)
    return (int(tried.group(2)), tried.group(1), chose.group(2),
            int(chose.group(4)), float(chose.group(5)),
            host.group(1) if host else None)


def fewest_line(found):
    """`fewest_ranks`'s answer in words."""
    gpus, tried, mode, rank_bytes, step_ms, host = found
    where = ""
    if host:
        where = f" and {host} of pinned host memory" + \
            (" (ZeRO-Offload)" if mode and mode.startswith("zero") else "")
    return (f"{gpus} H100{'s' if gpus > 1 else ''} under "
            f"{mode or 'one process'}, {gib(rank_bytes)} GiB a rank{where}, "
            f"estimated step {step_ms / 1e3:.2f} s (tried: {tried})")


def paper(psi, mode, n, mixed):
    """The ZeRO paper's model states per rank (bytes), Adam with f32
    state: mixed precision keeps 2-byte parameters and gradients and 12
    bytes of f32 master weights and moments; f32 training 4 + 4 + 8."""
    p, g, k = (2, 2, 12) if mixed else (4, 4, 8)
    if mode == "single" or mode == "ddp":
        return (p + g + k) * psi
    if mode == "zero1":
        return (p + g) * psi + k * psi / n
    if mode == "zero2":
        return p * psi + (g + k) * psi / n
    return (p + g + k) * psi / n


def llama_table(bins, tmp, lines):
    lines += ["## Llama-3 full fine-tuning per rank", "",
              "One sequence of 2048 tokens per rank, `" +
              " ".join(LLAMA_FLAGS) + "`. tgc's model states per rank: the "
              "f32 parameters (the master weights: compute casts them to "
              "bf16 per step) and the 8-bit moments with their scales, "
              "about 6 Psi / N under zero3; the ZeRO formula column is the "
              "paper's stage for mixed precision with f32 Adam (16 Psi "
              "under stage 3), for scale. *fits H100*: total within an 80 "
              "GB H100 less 1 GiB.", "",
              "*step*: the roofline's estimate of one step on H100s (a lower "
              "bound: every kernel at its peak); *comm*: the collectives' "
              "time over the links; *exposed*: what of it the compute "
              "stream waits for; *MFU*: model FLOPs over the estimated "
              "step and the bf16 peak.", "",
              "| model | mode | N | persistent GiB | arena GiB | total GiB "
              "| sent GiB | ZeRO formula GiB | fits H100 | step s | comm s "
              "| exposed s | MFU |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fewest = []
    for preset, name in (("llama-3-8b", "Llama-3-8B"),
                         ("llama-3-70b", "Llama-3-70B")):
        model = os.path.join(tmp, f"{preset}.mlir")
        run([f"{bins}/tgc-models", "llama", "--preset", preset, "--batch",
             "1", "--seq-len", "2048", "-o", model])
        stats = run([f"{bins}/tgc-models", "llama", "--preset", preset,
                     "--batch", "1", "--seq-len", "2048", "--stats"]).stdout
        psi = int(re.search(r"parameters: ([0-9,]+)", stats).group(1)
                  .replace(",", ""))
        estimate = os.path.join(tmp, "estimate.json")
        for mode in ("zero2", "zero3"):
            for n in (8, 16, 64):
                persistent, arena, sent = plan(
                    bins, model, tmp, LLAMA_FLAGS + [
                        "--data-parallel", mode, "--world-size", str(n)],
                    estimate)
                e = json.load(open(estimate))
                total = persistent + arena
                lines.append(
                    f"| {name} | {mode} | {n} | {gib(persistent)} | "
                    f"{gib(arena)} | {gib(total)} | {gib(sent)} | "
                    f"{gib(paper(psi, mode, n, True))} | "
                    f"{'yes' if total <= H100_BYTES else 'no'} | "
                    f"{e['step_seconds']:.2f} | "
                    f"{e['communication_seconds']:.2f} | "
                    f"{e['exposed_communication_seconds']:.2f} | "
                    f"{100 * e['mfu']:.1f}% |")
                print(lines[-1], flush=True)
        on_device = fewest_ranks(bins, model, tmp,
                                 LLAMA_FLAGS + ["--offload", "none"])
        offloaded = fewest_ranks(bins, model, tmp, LLAMA_FLAGS)
        fewest.append(
            f"- {name} (Psi = {psi:,}): {fewest_line(on_device)}; with "
            f"host memory, {fewest_line(offloaded)}.")
        print(fewest[-1], flush=True)
    lines += ["", "The fewest 80 GB H100s each trains on (`tgc-compile "
              "--world-size auto --fit=" + str(H100_BYTES) + " " +
              " ".join(LLAMA_FLAGS) + " --offload=none`, the mode "
              "searched; then without `--offload=none`, the optimizer "
              "state in host memory searched too):", ""] + fewest + [""]


def hybrid_table(bins, tmp, lines):
    lines += ["## Hybrid sharding: Llama-3-70B, zero3 within a node", "",
              "The flags of the table above, `--data-parallel=zero3`, split "
              "across every rank (*all*) or within each node of 8 H100s and "
              "replicated across nodes (`--shard-group=8`); the step "
              "estimated on H100s as above. *network s*: the link time of "
              "the collectives that cross nodes.", "",
              "| N | split across | total GiB | sent GiB | step s | comm s "
              "| network s | exposed s |",
              "|---|---|---|---|---|---|---|---|"]
    model = os.path.join(tmp, "llama-3-70b.mlir")
    estimate = os.path.join(tmp, "estimate.json")
    for n in (16, 64, 256):
        for group in (None, 8):
            flags = LLAMA_FLAGS + ["--data-parallel", "zero3", "--world-size",
                                   str(n)]
            if group:
                flags += ["--shard-group", str(group)]
            persistent, arena, sent = plan(bins, model, tmp, flags, estimate)
            e = json.load(open(estimate))
            network = sum(op["link_seconds"] * entry["runs_per_step"]
                          for entry in e["entries"] for op in entry["ops"]
                          if "ib-ndr" in op.get("link", ""))
            lines.append(
                f"| {n} | {'8 (a node)' if group else 'all'} | "
                f"{gib(persistent + arena)} | {gib(sent)} | "
                f"{e['step_seconds']:.2f} | "
                f"{e['communication_seconds']:.2f} | {network:.2f} | "
                f"{e['exposed_communication_seconds']:.2f} |")
            print(lines[-1], flush=True)
    lines.append("")


def accum_table(bins, tmp, lines):
    lines += ["## Gradient accumulation: Llama-3-8B on 8 ranks", "",
              "`--grad-accum=8 --amp=bf16 --optimizer-state=8bit "
              "--remat=blocks`, one sequence of 2048 tokens a rank per "
              "micro-step (a global batch of 64 sequences); the step "
              "estimated on 8 H100s as above. *apply arena*: the apply "
              "step's (the training step's, which divides the sums and "
              "updates).", "",
              "| mode | persistent GiB | apply arena GiB | grad_step arena GiB "
              "| total GiB | sent GiB | step s | comm s | exposed s |",
              "|---|---|---|---|---|---|---|---|---|"]
    model = os.path.join(tmp, "llama-3-8b.mlir")
    estimate = os.path.join(tmp, "estimate.json")
    flags = ["--grad-accum", "8", "--amp", "bf16", "--optimizer-state", "8bit",
             "--remat", "blocks"]
    for mode in MODES:
        persistent, arena, sent = plan(
            bins, model, tmp,
            flags + ["--data-parallel", mode, "--world-size", "8"], estimate)
        # plan()'s memory report, with one beside it per other entry point.
        report = os.path.join(tmp, "plan.tgx.json")
        micro = json.load(open(report + ".grad_step.json"))
        arenas = [arena, micro["arena_bytes"]]
        if os.path.exists(report + ".eval_step.json"):
            arenas.append(json.load(open(report + ".eval_step.json"))[
                "arena_bytes"])
        e = json.load(open(estimate))
        lines.append(
            f"| {mode} | {gib(persistent)} | "
            f"{gib(arena)} | {gib(micro['arena_bytes'])} | "
            f"{gib(persistent + max(arenas))} | {gib(sent)} | "
            f"{e['step_seconds']:.2f} | {e['communication_seconds']:.2f} | "
            f"{e['exposed_communication_seconds']:.2f} |")
        print(lines[-1], flush=True)
    lines.append("")


def masters_table(bins, tmp, lines):
    lines += ["## 16-bit master weights under zero3: Llama-3-70B", "",
              "The flags of the Llama-3 table with `--data-parallel=zero3`, "
              "the parameters kept as f32 masters (cast to bf16 per step) "
              "or as bf16 with no f32 copy (`--master-weights=bf16`: each "
              "rank rounds its part stochastically with the bits of the "
              "whole), estimated on H100s as above.", "",
              "| N | masters | persistent GiB | arena GiB | total GiB "
              "| sent GiB | step s | exposed s |",
              "|---|---|---|---|---|---|---|---|"]
    model = os.path.join(tmp, "llama-3-70b.mlir")
    estimate = os.path.join(tmp, "estimate.json")
    for n in (8, 16, 64):
        for masters in ("f32", "bf16"):
            persistent, arena, sent = plan(
                bins, model, tmp, LLAMA_FLAGS + [
                    "--data-parallel", "zero3", "--world-size", str(n),
                    "--master-weights", masters], estimate)
            e = json.load(open(estimate))
            lines.append(
                f"| {n} | {masters} | {gib(persistent)} | {gib(arena)} | "
                f"{gib(persistent + arena)} | {gib(sent)} | "
                f"{e['step_seconds']:.2f} | "
                f"{e['exposed_communication_seconds']:.2f} |")
            print(lines[-1], flush=True)
    flags = LLAMA_FLAGS + ["--master-weights", "bf16"]
    on_device = fewest_ranks(bins, model, tmp, flags + ["--offload", "none"])
    offloaded = fewest_ranks(bins, model, tmp, flags)
    lines += ["", f"`tgc-compile --world-size auto --fit={H100_BYTES} " +
              " ".join(flags) + " --offload=none`: " +
              fewest_line(on_device) + "; without `--offload=none`, " +
              fewest_line(offloaded) + ".", ""]
    print(lines[-2], flush=True)


def qlora_table(bins, tmp, lines):
    lines += ["## QLoRA under zero3: Llama-3-70B", "",
              "An NF4 base with double quantization (`--quantize-frozen=nf4`), "
              "LoRA adapters of rank 16 on every linear layer, `--amp=bf16 "
              "--remat=blocks`, one sequence of 2048 tokens a rank; the step "
              "estimated on H100s as above. zero3 splits the 4-bit base "
              "(its codes and scales) like every other parameter, as "
              "FSDP-QLoRA shards it; *base GiB*: the codes and scales a "
              "rank keeps.", "",
              "| N | base GiB | persistent GiB | arena GiB | total GiB "
              "| sent GiB | step s | exposed s |",
              "|---|---|---|---|---|---|---|---|"]
    model = os.path.join(tmp, "llama-3-70b.mlir")
    estimate = os.path.join(tmp, "estimate.json")
    targets = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
    flags = ["--quantize-frozen", "nf4", "--lora",
             f"rank=16,alpha=32,targets={targets}", "--amp", "bf16",
             "--remat", "blocks"]
    for n in (1, 2, 4, 8):
        parallel = ["--data-parallel", "zero3", "--world-size", str(n)]
        persistent, arena, sent = plan(bins, model, tmp,
                                       flags + (parallel if n > 1 else []),
                                       estimate)
        # The 4-bit weights' bytes a rank holds (the codes under the
        # weight's name, beside its scales), from the memory report.
        report = json.load(open(os.path.join(tmp, "plan.tgx.json")))
        names = {t["name"] for t in report["persistent"]}
        base = sum(t["bytes"] for t in report["persistent"]
                   if t["name"] + ".absmax" in names
                   or t["name"].endswith((".absmax", ".nested_absmax",
                                          ".nested_offset")))
        e = json.load(open(estimate))
        lines.append(
            f"| {n} | {gib(base)} | {gib(persistent)} | {gib(arena)} | "
            f"{gib(persistent + arena)} | {gib(sent)} | "
            f"{e['step_seconds']:.2f} | "
            f"{e['exposed_communication_seconds']:.2f} |")
        print(lines[-1], flush=True)
    lines.append("")


def memory_table(bins, tmp, lines):
    lines += ["## Planned memory per rank", "",
              "Batch 1 of 1024 tokens per rank. *persistent*: parameters "
              "(f32; every rank holds them all but under zero3, its part) "
              "and optimizer state (split across ranks under ZeRO); "
              "*arena*: the planned peak of everything transient "
              "(activations, gradients, the buckets of the collectives, "
              "the gathered parameters, workspace); *sent*: bytes one rank "
              "sends per step (ring algorithms); *ZeRO formula*: the "
              "paper's model states per rank for the same Psi (mixed "
              "precision for the bf16 rows, 4 + 4 + 8 bytes for f32).", ""]
    for preset, psi_name in (("124M", "124M"), ("1558M", "1558M")):
        model = os.path.join(tmp, f"gpt2-{preset}.mlir")
        run([f"{bins}/tgc-models", "gpt2", "--preset", preset, "--batch", "1",
             "--seq-len", "1024", "-o", model])
        stats = run([f"{bins}/tgc-models", "gpt2", "--preset", preset,
                     "--batch", "1", "--seq-len", "1024", "--stats"]).stdout
        psi = int(re.search(r"parameters: ([0-9,]+)", stats).group(1)
                  .replace(",", ""))
        lines += [f"### GPT-2 {psi_name} (Psi = {psi:,} parameters)", "",
                  "| precision | state | mode | N | persistent GiB | arena "
                  "GiB | total GiB | sent GiB | ZeRO formula GiB |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for amp in ("none", "bf16"):
            for state in ("f32", "8bit"):
                flags = ["--amp", amp]
                if state == "8bit":
                    flags += ["--optimizer-state", "8bit"]
                for mode in ("single",) + MODES:
                    for n in WORLDS:
                        if (mode == "single") != (n == 1):
                            continue
                        extra = [] if mode == "single" else [
                            "--data-parallel", mode, "--world-size", str(n)]
                        persistent, arena, sent = plan(bins, model, tmp,
                                                       flags + extra)
                        formula = paper(psi, mode, n, amp != "none")
                        lines.append(
                            f"| {'f32' if amp == 'none' else 'bf16 (amp)'} | "
                            f"{'AdamW f32' if state == 'f32' else 'AdamW 8-bit'}"
                            f" | {mode} | {n} | {gib(persistent)} | "
                            f"{gib(arena)} | {gib(persistent + arena)} | "
                            f"{gib(sent)} | "
                            f"{gib(formula) if state == 'f32' else '-'} |")
                        print(lines[-1], flush=True)
        lines.append("")


def step_times(bins, tmp, lines, steps):
    common = ["--n-layer", "2", "--n-head", "4", "--n-embd", "256",
              "--vocab-size", "512", "--seq-len", "128"]
    whole = os.path.join(tmp, "b16.mlir")
    half = os.path.join(tmp, "b8.mlir")
    run([f"{bins}/tgc-models", "gpt2"] + common + ["--batch", "16", "-o",
                                                    whole])
    run([f"{bins}/tgc-models", "gpt2"] + common + ["--batch", "8", "-o", half])
    single = os.path.join(tmp, "single.tgx")
    run([f"{bins}/tgc-compile", whole, "-o", single])
    exes = {"1 process, batch 16, 2 threads": (single, 1, {}),
            "1 process, batch 16, 1 thread": (single, 1, {"THREADS": "1"})}
    for mode in MODES:
        exe = os.path.join(tmp, f"{mode}.tgx")
        run([f"{bins}/tgc-compile", half, "-o", exe, "--data-parallel", mode,
             "--world-size", "2"])
        exes[f"2 ranks ({mode}), batch 8 each, 1 thread each"] = (exe, 2, {})
    lines += ["## CPU step time, 1 and 2 ranks", "",
              f"GPT-2 with 2 layers, C=256, 4 heads, T=128, V=512, AdamW, "
              f"f32; a global batch of 16 sequences a step; the mean of "
              f"{steps} steps (wall time of tgc-run's loop, rank 0), best of "
              f"2 rounds. Both ranks share this machine's cores: the "
              f"collectives go through shared memory.", "",
              "| run | ms/step | tokens/s |", "|---|---|---|"]
    for name, (exe, ranks, env) in exes.items():
        best = float("inf")
        for _ in range(2):
            metrics = os.path.join(tmp, "m.jsonl")
            cmd = [f"{bins}/tgc-run", exe, "--steps", str(steps), "--quiet",
                   "--metrics", metrics]
            if "THREADS" in env:
                cmd += ["--threads", env["THREADS"]]
            if ranks > 1:
                cmd = ["mpirun", "-n", str(ranks), "--oversubscribe"] + cmd
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, **MPI_ENV})
            rows = [json.loads(l) for l in open(metrics)]
            # Steps 3.. (the first two warm caches and pages up).
            elapsed = rows[-1]["elapsed_s"] - rows[1]["elapsed_s"]
            best = min(best, elapsed / (len(rows) - 2))
        lines.append(f"| {name} | {best * 1000:.1f} | "
                     f"{16 * 128 / best:,.0f} |")
        print(lines[-1], flush=True)
    lines.append("")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench",
                                                      "DISTRIBUTED.md"))
    args = parser.parse_args()
    bins = os.path.join(args.build, "bin")
    lines = ["# Data parallelism: memory per rank and step time", "",
             f"Generated by `bench/distributed.py` on {machine(bins)}, "
             f"{time.strftime('%Y-%m-%d')}; the "
             "plans need no cluster (`tgc-compile --data-parallel=MODE "
             "--world-size N --memory-report`).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        step_times(bins, tmp, lines, args.steps)
        memory_table(bins, tmp, lines)
        llama_table(bins, tmp, lines)
        hybrid_table(bins, tmp, lines)
        masters_table(bins, tmp, lines)
        qlora_table(bins, tmp, lines)
        accum_table(bins, tmp, lines)
    open(args.out, "w").write("\n".join(lines) + "\n" + NOTES)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
