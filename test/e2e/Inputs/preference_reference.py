"""The preference losses of the papers, in torch on transformers' model and
PEFT's adapters: the reference for tgc's --loss=dpo|ipo|simpo|orpo.

Each step runs the batch's rows (the first half the chosen answers, the
second half the rejected answers to the same prompts; targets -100 but on
the answers' tokens) through the model with its adapters (PEFT, trainable,
from ADAPTERS: the adapters tgc starts from) and, for DPO and IPO, through
the same model with the adapters disabled (PEFT's disable_adapter(), under
no_grad: the reference model). With ADAPTERS "-", every parameter of the
model trains and the reference is a frozen deep copy of it as it starts
(TRL's reference without PEFT). Each row's answer log-probability is the sum
(DPO) or the mean (IPO, SimPO, ORPO) of log_softmax(logits)[target] over
its answer's tokens. Then, as the papers define them (Rafailov et al. 2023
eq. 7; Azar et al. 2023 eq. 17; Meng et al. 2024 eq. 6; Hong et al. 2024
eqs. 6-7, the NLL over the chosen answers' tokens):

  dpo:   -log sigmoid(beta ((pc - pr) - (rc - rr)))
  ipo:   ((pc - pr) - (rc - rr) - 1 / (2 beta))^2
  simpo: -log sigmoid(beta (pc - pr) - gamma)
  orpo:  NLL - beta log sigmoid(log(odds(pc) / odds(pr))), odds(p) =
         exp(p) / (1 - exp(p))

each a mean over the pairs, minimised by torch.optim.AdamW (tgc's
defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01). Writes
each step's loss and TRL's metrics (METRICS, JSON lines) and the trained
adapters (FINAL; with ADAPTERS "-", every parameter). Runs in .venv-hf47 (transformers 4.47.1, PEFT 0.13).

Usage: preference_reference.py BASE ADAPTERS DATA STEPS LOSS BETA GAMMA
           METRICS FINAL [float64 | permute=SEED]
(float64: the same training in double precision, whose rounding is 2^29
times finer than f32's; permute=SEED: each batch's pairs in another order,
drawn from SEED, the same training in exact arithmetic, its f32 sums in
other orders. Together, the scale of f32's own error, measured. Both are
measuring tools, run by no test: they measured preference-vs-peft.test's
bounds.)"""
import contextlib
import copy
import json
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peft_setup  # noqa: E402
import safetensors_io  # noqa: E402

if len(sys.argv) not in (10, 11):
    sys.exit(__doc__)
dtype = torch.float64 if sys.argv[10:] == ["float64"] else torch.float32
permute = None
if sys.argv[10:] and sys.argv[10].startswith("permute="):
    permute = torch.Generator().manual_seed(int(sys.argv[10][8:]))
base, adapters, data, steps, loss_kind = sys.argv[1:6]
beta, gamma = float(sys.argv[6]), float(sys.argv[7])
metrics, final = sys.argv[8:10]
full = adapters == "-"
model, opt = peft_setup.trainable(base, None if full else adapters, dtype)
if full:
    frozen = copy.deepcopy(model).eval()
    for p in frozen.parameters():
        p.requires_grad_(False)
batches = safetensors_io.load(data)
n = batches["tokens"].shape[0]


def answer_logps(logits, targets):
    """Each row's summed and averaged answer log-probability, and the sum
    of its token losses and its count of answer tokens."""
    mask = targets != -100
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    sums = (picked * mask).sum(-1)
    counts = mask.sum(-1)
    return sums, sums / counts, counts


with open(metrics, "w") as out:
    for step in range(int(steps)):
        tokens = batches["tokens"][step % n]
        targets = batches["targets"][step % n]
        pairs = tokens.shape[0] // 2
        if permute is not None:
            order = torch.randperm(pairs, generator=permute)
            rows = torch.cat([order, pairs + order])
            tokens, targets = tokens[rows], targets[rows]
        sums, means, counts = answer_logps(
            model(input_ids=tokens, use_cache=False).logits, targets)
        averaged = loss_kind != "dpo"
        policy = means if averaged else sums
        pc, pr = policy[:pairs], policy[pairs:]
        row = {"step": step + 1}
        if loss_kind in ("dpo", "ipo"):
            reference = frozen if full else model
            with torch.no_grad(), (contextlib.nullcontext() if full else
                                   model.disable_adapter()):
                ref_sums, ref_means, _ = answer_logps(
                    reference(input_ids=tokens, use_cache=False).logits,
                    targets)
            ref = ref_means if averaged else ref_sums
            rc, rr = ref[:pairs], ref[pairs:]
            z = (pc - pr) - (rc - rr)
            if loss_kind == "dpo":
                losses = -F.logsigmoid(beta * z)
            else:
                losses = (z - 1 / (2 * beta)) ** 2
            chosen_rewards = beta * (pc - rc).detach()
            rejected_rewards = beta * (pr - rr).detach()
        else:
            if loss_kind == "simpo":
                losses = -F.logsigmoid(beta * (pc - pr) - gamma)
            else:
                log_odds = (pc - pr) - (torch.log1p(-torch.exp(pc)) -
                                        torch.log1p(-torch.exp(pr)))
                ratio = F.logsigmoid(log_odds)
                nll = -sums[:pairs].sum() / counts[:pairs].sum()
                losses = nll - beta * ratio
            chosen_rewards = beta * pc.detach()
            rejected_rewards = beta * pr.detach()
        loss = losses.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        row["loss"] = loss.item()
        row["rewards/chosen"] = chosen_rewards.mean().item()
        row["rewards/rejected"] = rejected_rewards.mean().item()
        row["rewards/accuracies"] = (
            (chosen_rewards > rejected_rewards).float().mean().item())
        row["rewards/margins"] = (chosen_rewards - rejected_rewards).mean().item()
        row["logps/chosen"] = pc.detach().mean().item()
        row["logps/rejected"] = pr.detach().mean().item()
        if loss_kind in ("dpo", "ipo"):
            row["logps/ref_chosen"] = rc.mean().item()
            row["logps/ref_rejected"] = rr.mean().item()
        if loss_kind == "orpo":
            row["nll_loss"] = nll.item()
            row["log_odds_ratio"] = ratio.mean().item()
            row["log_odds_chosen"] = log_odds.mean().item()
        out.write(json.dumps(row) + "\n")
trained = {k.replace(".default.", "."): v.detach().clone()
           for k, v in model.state_dict().items() if full or "lora_" in k}
save_file(trained, final)
