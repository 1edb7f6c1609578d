"""The Llama family: what each memory technique plans for 7-8B models, and
the CPU step time of a small Llama against transformers' own.

1. Llama-3-8B, Mistral-7B, Qwen2-7B and Qwen3-8B (`tgc-models llama
   --preset ...`),
   B=1, T=2048, AdamW: the planned peak (persistent region + transient
   arena) of full fine-tuning in f32, with each technique alone
   (--amp=bf16, --remat=blocks, --optimizer-state=8bit) and all three
   combined, and of LoRA r=16 on q/k/v/o over a bf16 base (--frozen-dtype)
   with bf16 compute and activation checkpointing, and of QLoRA (the base
   in NF4); the same for the mixture of experts Mixtral-8x7B, and what
   --fit chooses for it; Llama-3-8B QLoRA at B=2 and what --fit chooses
   for 6 GiB.
2. The CPU time of one AdamW step of a small Llama (4 layers, hidden 256, 8
   heads over 4 key/value heads, MLP 688, V=512, B=8, T=256, f32): tgc-run
   against transformers 4.47.1's eager LlamaForCausalLM with
   torch.optim.AdamW, at the same number of threads, in one run.

Writes bench/MODELS.md.

  /usr/bin/python3 bench/models.py [--build build] [--quick]
"""
import argparse
import os
import subprocess
import tempfile

from common import ROOT, best_step_times, compile_report, machine, run

GiB = 1024 ** 3

PRESETS = [("llama-3-8b", "Llama-3-8B"), ("mistral-7b", "Mistral-7B"),
           ("qwen2-7b", "Qwen2-7B"), ("qwen3-8b", "Qwen3-8B")]
LORA = "--lora=rank=16,alpha=32,targets=q_proj,k_proj,v_proj,o_proj"
CONFIGS = [
    ("full, f32", []),
    ("full, --amp=bf16", ["--amp=bf16"]),
    ("full, --remat=blocks", ["--remat=blocks"]),
    ("full, --optimizer-state=8bit", ["--optimizer-state=8bit"]),
    ("full, all three", ["--amp=bf16", "--remat=blocks",
                         "--optimizer-state=8bit"]),
    ("LoRA r=16 (q,k,v,o), bf16 base, bf16, remat", [
        LORA, "--frozen-dtype=bf16", "--amp=bf16", "--remat=blocks"]),
    ("QLoRA r=16 (q,k,v,o), NF4 base, bf16, remat", [
        LORA, "--frozen-dtype=bf16", "--quantize-frozen=nf4", "--amp=bf16",
        "--remat=blocks"]),
]
QLORA_BUDGET = "6GiB"


def fit_line(bins, model, tmp, flags):
    """What `tgc-compile --fit` chooses (or why nothing fits), as text."""
    proc = subprocess.run(
        [f"{bins}/tgc-compile", model, "-o", os.path.join(tmp, "fit.tgx")]
        + flags, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    chose = [l for l in proc.stdout.splitlines() if "--fit chose" in l]
    errors = [l for l in proc.stdout.splitlines() if "error:" in l]
    return (chose[0].replace("tgc-compile: --fit chose ", "chose `", 1)
            .replace(": ", "`: ", 1) if chose and proc.returncode == 0
            else errors[-1].replace("tgc-compile: error: ", "")
            if errors else "failed")


def qlora_table(bins, tmp):
    """Llama-3-8B at B=2, T=2048 (torchtune's QLoRA recipe's shape): LoRA
    over a bf16 base, QLoRA, and what --fit chooses for 6 GiB."""
    model = os.path.join(tmp, "llama-3-8b-b2.mlir")
    run([f"{bins}/tgc-models", "llama", "--preset", "llama-3-8b", "--batch",
         "2", "--seq-len", "2048", "-o", model])
    configs = [CONFIGS[-2],
               ("QLoRA r=16 (q,k,v,o), NF4 base, no double quantization, "
                "bf16, remat", [LORA, "--frozen-dtype=bf16",
                                "--quantize-frozen=nf4",
                                "--double-quant=false", "--amp=bf16",
                                "--remat=blocks"]),
               CONFIGS[-1]]
    lines = ["| configuration | parameters | optimizer state | transient arena "
             "| planned peak | vs bf16-base LoRA |", "|---|---|---|---|---|---|"]
    lines += [f"| {row}" for row in plan_rows(bins, model, tmp, configs)]
    flags = [LORA, "--frozen-dtype=bf16", f"--fit={QLORA_BUDGET}",
             "--fit-allow=all", "--fuse"]
    lines += ["", f"`tgc-compile {' '.join(flags)}`: "
              f"{fit_line(bins, model, tmp, flags)}."]
    return lines


def plan_rows(bins, model, tmp, configs):
    """For each (name, flags) of `configs`, the plan of `model`: name,
    parameters, optimizer state, arena, planned peak and its change from
    the first's, as table cells."""
    rows, base = [], None
    for name, flags in configs:
        _, step, kinds, _ = compile_report(bins, model, tmp, flags)
        peak = step["persistent_bytes"] + step["arena_bytes"]
        base = base or peak
        params = kinds.get("params", 0) + kinds.get("frozen_params", 0)
        rows.append(
            f"{name} | {params / GiB:.2f} GiB | "
            f"{kinds.get('optimizer_state', 0) / GiB:.2f} GiB | "
            f"{step['arena_bytes'] / GiB:.2f} GiB | {peak / GiB:.2f} GiB | "
            f"{(peak - base) / base * 100:+.1f}% |")
    return rows


def memory_table(bins, tmp, presets):
    lines = ["| model | configuration | parameters | optimizer state | "
             "transient arena | planned peak | vs f32 |",
             "|---|---|---|---|---|---|---|"]
    for preset, label in presets:
        model = os.path.join(tmp, f"{preset}.mlir")
        run([f"{bins}/tgc-models", "llama", "--preset", preset, "--batch", "1",
             "--seq-len", "2048", "-o", model])
        lines += [f"| {label} | {row}"
                  for row in plan_rows(bins, model, tmp, CONFIGS)]
    return lines


MOE_BUDGETS = ["80GiB", "100GiB"]


def moe_table(bins, tmp):
    """Mixtral-8x7B (`tgc-models llama --preset mixtral-8x7b`) under the
    dense models' configurations, and what --fit chooses for two budgets."""
    model = os.path.join(tmp, "mixtral.mlir")
    run([f"{bins}/tgc-models", "llama", "--preset", "mixtral-8x7b", "--batch",
         "1", "--seq-len", "2048", "-o", model])
    lines = ["| configuration | parameters | optimizer state | transient arena "
             "| planned peak | vs f32 |", "|---|---|---|---|---|---|"]
    experts = ("LoRA r=16 (q,k,v,o and every expert's w1,w2,w3), bf16 base, "
               "bf16, remat", [LORA + ",w1,w2,w3", "--frozen-dtype=bf16",
                               "--amp=bf16", "--remat=blocks"])
    lines += [f"| {row}"
              for row in plan_rows(bins, model, tmp, CONFIGS + [experts])]
    for budget in MOE_BUDGETS:
        text = fit_line(bins, model, tmp, [f"--fit={budget}",
                                           "--fit-allow=all"])
        lines += ["", f"`tgc-compile --fit={budget} --fit-allow=all`: {text}."]
    return lines


HF_STEP = r"""
import json, sys, time, torch, transformers
threads, steps = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
torch.manual_seed(0)
config = transformers.LlamaConfig(
    vocab_size=512, hidden_size=256, intermediate_size=688,
    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
    max_position_embeddings=256)
model = transformers.LlamaForCausalLM(config)
model.config._attn_implementation = "eager"
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
tokens = torch.randint(0, 512, (8, 256))
best = float("inf")
for _ in range(3):
    for step in range(steps + 2):
        if step == 2:
            start = time.perf_counter()
        logits = model(input_ids=tokens, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 512),
                                                 tokens.roll(-1, 1).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    best = min(best, (time.perf_counter() - start) / steps)
print(json.dumps({"step_s": best}))
"""


def step_times(bins, tmp, steps):
    model = os.path.join(tmp, "small.mlir")
    run([f"{bins}/tgc-models", "llama", "--n-layer", "4", "--hidden", "256",
         "--n-head", "8", "--kv-heads", "4", "--intermediate", "688",
         "--vocab-size", "512", "--max-positions", "256", "--seq-len", "256",
         "--batch", "8", "-o", model])
    exe = os.path.join(tmp, "small.tgx")
    run([f"{bins}/tgc-compile", model, "-o", exe])
    # LoRA over the same model's base as it is and in NF4 (the base drawn
    # in f32 and quantized, as loading would).
    lora = ["--lora=rank=16,alpha=32,targets=q_proj,k_proj,v_proj,o_proj,"
            "gate_proj,up_proj,down_proj"]
    exes = {"tgc": exe, "lora": os.path.join(tmp, "lora.tgx"),
            "qlora": os.path.join(tmp, "qlora.tgx")}
    run([f"{bins}/tgc-compile", model, "-o", exes["lora"]] + lora)
    run([f"{bins}/tgc-compile", model, "-o", exes["qlora"]] + lora +
        ["--quantize-frozen=nf4"])
    timed = best_step_times(bins, exes, steps, tmp)
    tgc = timed["tgc"]
    threads = len(os.sched_getaffinity(0))
    python = os.path.join(ROOT, ".venv-hf47", "bin", "python")
    if not os.path.exists(python):
        return ["transformers 4.47.1 is not installed (scripts/"
                "install-deps.sh makes .venv-hf47): no comparison."]
    out = subprocess.run([python, "-c", HF_STEP, str(threads), str(steps)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    import json
    hf = json.loads(out)["step_s"]
    return ["| implementation | step time | vs transformers |", "|---|---|---|",
            f"| tgc-run (CPU backend) | {tgc * 1e3:.1f} ms | "
            f"{(tgc / hf - 1) * 100:+.1f}% |",
            f"| transformers 4.47.1 eager + torch.optim.AdamW (torch "
            f"{torch_version(python)}) | {hf * 1e3:.1f} ms | |",
            "", f"Both with {threads} threads.", "",
            "LoRA r=16 on every linear layer of the same model, tgc-run:",
            "", "| base | step time | vs the 32-bit base |", "|---|---|---|",
            f"| f32 | {timed['lora'] * 1e3:.1f} ms | |",
            f"| NF4, double quantization (QLoRA) | "
            f"{timed['qlora'] * 1e3:.1f} ms | "
            f"{(timed['qlora'] / timed['lora'] - 1) * 100:+.1f}% |"]


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          check=True, stdout=subprocess.PIPE,
                          text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true",
                    help="Llama-3-8B only and fewer timed steps")
    args = ap.parse_args()
    bins = os.path.join(args.build, "bin")
    presets = PRESETS[:1] if args.quick else PRESETS
    steps = 3 if args.quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        memory = memory_table(bins, tmp, presets)
        moe = moe_table(bins, tmp)
        qlora = qlora_table(bins, tmp)
        times = step_times(bins, tmp, steps)
    cpu = machine(bins)
    out = ["# The Llama family", "",
           "Generated by `/usr/bin/python3 bench/models.py`; every figure "
           "below is measured in the run that wrote this file.", "",
           "## Planned memory of 7-8B models", "",
           "B=1, T=2048, AdamW, from tg-plan-memory's report (the plan is "
           "exact: tgc-run allocates these bytes). Parameters count frozen "
           "ones (LoRA's base, stored in bf16 with --frozen-dtype=bf16) with "
           "the trained ones. Configurations as `tgc-models llama --preset` "
           "builds them: Llama-3-8B (8.03B parameters, 8 key/value heads), "
           "Mistral-7B (7.24B) and Qwen2-7B (7.62B, q/k/v biases).", ""]
    out += memory
    out += ["", "What the rows show. At B=1 the activations are small: the "
            "transient arena is mostly the f32 gradients, which all live at "
            "the end of the backward pass (about the size of the "
            "parameters): the arena is that peak, which neither "
            "recomputation (--remat=blocks) nor --amp=bf16 (whose 16-bit "
            "working copies of the matmul weights die before the last "
            "gradients are made) moves. 8-bit AdamW state is the one full "
            "fine-tuning "
            "technique that moves these models, by three quarters of the "
            "state; the gradients are what remains, the target of putting "
            "the optimizer step inside the backward pass."]
    out += ["", "## A mixture of experts: Mixtral-8x7B", "",
            "The same configurations for `tgc-models llama --preset "
            "mixtral-8x7b` (46.70B parameters: 32 layers of 8 SwiGLU "
            "experts, 2 per token, over Mistral-7B's attention), B=1, "
            "T=2048, and what `--fit` chooses with every technique allowed. "
            "The routing is dropless at a static shape: each layer's plan "
            "holds T x 2 rows of expert activations whatever the router "
            "picks, so the plan is exact for any split between the experts."
            " The attention-only LoRA row keeps the experts frozen in bf16;"
            " the last row adapts every expert too (an adapter per expert, "
            "as PEFT does).", ""]
    out += moe
    out += ["", "## QLoRA: Llama-3-8B over a 4-bit base", "",
            "`tgc-models llama --preset llama-3-8b`, B=2, T=2048 (the shape "
            "of torchtune's QLoRA recipe), AdamW on LoRA r=16 over q, k, v "
            "and o; the linear layers' weights in NF4 "
            "(--quantize-frozen=nf4: 0.5 byte a weight plus the 8-bit "
            "absmax values, 1/64 byte a weight), the embeddings, the output "
            "head and the norms in bf16 (--frozen-dtype=bf16), as "
            "bitsandbytes' quantizer in transformers leaves them. The "
            "--fit line compiles for the GPU (--fuse: attention reads and "
            "writes its heads in the projections' layout, so no transposed "
            "copy of its output is kept). "
            "For scale, not measured here: torchtune reports 7.4 GiB of "
            "peak memory for its Llama-3.1-8B QLoRA recipe on an RTX 4090 "
            "(B=2, packed to 2048; its README's table).", ""]
    out += qlora
    out += ["", "## CPU step time of a small Llama", "",
            f"Measured on {cpu}. 4 layers, hidden 256, 8 query heads over 4 "
            "key/value heads, MLP 688, vocabulary 512, B=8, T=256, f32 "
            "AdamW; the mean of the steps after two warm-up steps, best of "
            "three rounds.", ""]
    out += times
    path = os.path.join(ROOT, "bench", "MODELS.md")
    open(path, "w").write("\n".join(out) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
