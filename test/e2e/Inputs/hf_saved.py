"""Checks a model directory that `tgc-run --save-hf` wrote, with Hugging
Face's own loader: the class config.json names (`architectures`) loads it
by from_pretrained with no missing, unexpected or mismatched weight (tied
weights and buffers are the model's own business), and its loss on DATA's
batches (the mean over them, as tgc-run --eval-only reports it) equals the
eval_loss in tgc-run's METRICS within TOL (relative). With CKPT (what
tgc-run --save wrote at the same step), the logits of the loaded model on
DATA's batches equal those of the class built from config.json with CKPT's
parameters loaded strictly (within 1e-6 of their largest magnitude): the
directory holds the trained weights, under the names and layouts the
class expects.
Runs in a transformers venv of scripts/install-deps.sh.
Usage: hf_saved.py DIR DATA METRICS TOL [CKPT]"""
import json
import sys

import torch
import transformers

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

if len(sys.argv) not in (5, 6):
    sys.exit(__doc__)
directory, data, metrics, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
config = json.load(open(f"{directory}/config.json"))
cls = getattr(transformers, config["architectures"][0])
extra = {}
if tuple(int(v) for v in transformers.__version__.split(".")[:2]) >= (4, 36):
    extra["attn_implementation"] = "eager"
model, info = cls.from_pretrained(directory, output_loading_info=True,
                                  torch_dtype=torch.float32, **extra)
problems = {k: v for k, v in info.items() if v}
if problems:
    sys.exit(f"from_pretrained of {directory}: {problems}")
model.eval()
torch.set_num_threads(1)
batches = safetensors_io.load(data)
losses = []
with torch.no_grad():
    for i in range(batches["tokens"].shape[0]):
        tokens, targets = batches["tokens"][i], batches["targets"][i]
        if "attention_mask" in batches:  # BERT, T5: the model's own loss
            losses.append(model(input_ids=tokens,
                                attention_mask=batches["attention_mask"][i],
                                labels=targets).loss.item())
        else:  # a causal LM: tgc's targets are the shifted tokens
            logits = model(input_ids=tokens, use_cache=False).logits
            losses.append(torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                ignore_index=-100).item())
theirs = sum(losses) / len(losses)
if len(sys.argv) == 6:
    # The class built from config.json, tgc's checkpoint loaded strictly
    # but for what the model ties or buffers (its own business).
    params = {k: v.float() for k, v in safetensors_io.load(sys.argv[5]).items()
              if not k.endswith((".exp_avg", ".exp_avg_sq")) and
              not k.startswith("optimizer.")}
    reference = cls(model.config)
    reference.eval()
    result = reference.load_state_dict(params, strict=False)
    tied = {k for k in result.missing_keys
            if k in ("lm_head.weight", "cls.predictions.decoder.weight",
                     "cls.predictions.decoder.bias", "final_logits_bias")
            or "position_ids" in k or "token_type_ids" in k
            or k.endswith("embed_tokens.weight")}
    if set(result.missing_keys) - tied or result.unexpected_keys:
        sys.exit(f"the checkpoint lacks {set(result.missing_keys) - tied} "
                 f"and has unexpected {result.unexpected_keys}")
    if hasattr(reference, "tie_weights"):
        reference.tie_weights()
    worst = 0.0
    with torch.no_grad():
        for i in range(batches["tokens"].shape[0]):
            inputs = {"input_ids": batches["tokens"][i]}
            if "attention_mask" in batches:
                inputs["attention_mask"] = batches["attention_mask"][i]
                if model.config.is_encoder_decoder:  # decoder inputs
                    inputs["labels"] = batches["targets"][i]
            else:  # a causal LM: no cache (Gemma 2's would need torch 2)
                inputs["use_cache"] = False
            a, b = model(**inputs).logits, reference(**inputs).logits
            worst = max(worst, float((a - b).abs().max() / b.abs().max()))
    print(f"logits of the loaded directory and of the checkpoint's weights: "
          f"worst relative difference {worst:.1e}")
    if worst > 1e-6:
        sys.exit("the directory does not hold the checkpoint's weights")
rows = [json.loads(line) for line in open(metrics)]
ours = [r["eval_loss"] for r in rows if "eval_loss" in r][-1]
error = abs(ours - theirs) / abs(theirs)
print(f"{cls.__name__} loads {directory} (no missing or unexpected weight); "
      f"loss over {len(losses)} batches: transformers {theirs:.9g}, "
      f"tgc {ours:.9g} (relative error {error:.1e})")
if error > tol:
    sys.exit(f"the losses differ by more than {tol}")
