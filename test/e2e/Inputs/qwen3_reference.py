"""Qwen3 as the reference for tgc-models' qwen3, on transformers 4.47.1
(which predates Qwen3, added in 4.51): its Qwen2 with the two changes
modeling_qwen3.py makes to Qwen2's decoder, written here as modules around
transformers' own:
  - q_proj, k_proj and v_proj without biases (attention_bias false);
  - q_norm and k_norm, a Qwen2RMSNorm (Qwen3RMSNorm is the same) of
    head_dim each, applied to every head of the query and key projections
    before the rotary embedding (modeling_qwen3.py:
    `self.q_norm(self.q_proj(hidden_states).view(hidden_shape))`).
Parameters are read and written under Qwen3's state-dict names
(model.layers.N.self_attn.q_norm.weight, ...).

Usage:
  qwen3_reference.py make DIR
      A tiny random Qwen3 directory: config.json as Qwen3Config writes it
      (model_type qwen3, head_dim, tied embeddings as Qwen3-0.6B) and
      model.safetensors, the norms' weights random around 1 so that a
      missing norm shows.
  qwen3_reference.py train DIR DATA STEPS METRICS FINAL
      Trains DIR's model with torch.optim.AdamW (tgc's defaults: lr 1e-3,
      betas 0.9/0.999, eps 1e-8, weight decay 0.01) on DATA's batches
      (step i: batch i mod N), the loss the cross-entropy of the logits
      against the targets (-100 ignored); writes each step's loss (METRICS)
      and the final parameters under Qwen3's names (FINAL).
"""
import json
import os
import sys

import torch
import transformers
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import adamw_reference  # noqa: E402
import safetensors_io  # noqa: E402

CONFIG = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
          "vocab_size": 96, "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "hidden_act": "silu",
          "max_position_embeddings": 64, "initializer_range": 0.02,
          "rms_norm_eps": 1e-6, "use_cache": True,
          "tie_word_embeddings": True, "rope_theta": 1000000.0,
          "rope_scaling": None, "attention_bias": False,
          "use_sliding_window": False, "sliding_window": None,
          "max_window_layers": 2, "attention_dropout": 0.0,
          "torch_dtype": "float32"}


class NormedProjection(torch.nn.Module):
    """A projection whose every head is RMS-normalized over head_dim."""

    def __init__(self, linear, head_dim, eps):
        super().__init__()
        self.linear = linear
        self.norm = Qwen2RMSNorm(head_dim, eps)
        self.head_dim = head_dim

    def forward(self, x):
        y = self.linear(x)
        return self.norm(y.view(*y.shape[:-1], -1, self.head_dim)).view(y.shape)


def build(config):
    """transformers' Qwen2ForCausalLM made a Qwen3 of `config`."""
    if config["head_dim"] * config["num_attention_heads"] != \
            config["hidden_size"]:
        sys.exit("Qwen2 of transformers 4.47 takes head_dim = hidden_size / "
                 "num_attention_heads only")
    keys = ("vocab_size", "hidden_size", "intermediate_size",
            "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "max_position_embeddings", "rms_norm_eps", "rope_theta",
            "tie_word_embeddings", "initializer_range")
    model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        **{k: config[k] for k in keys}, attn_implementation="eager"))
    D, eps = config["head_dim"], config["rms_norm_eps"]
    for layer in model.model.layers:
        attn = layer.self_attn
        for name in ("q_proj", "k_proj", "v_proj"):
            old = getattr(attn, name)
            new = torch.nn.Linear(old.in_features, old.out_features,
                                  bias=False)
            with torch.no_grad():
                new.weight.copy_(old.weight)
            setattr(attn, name, new if name == "v_proj"
                    else NormedProjection(new, D, eps))
    return model


def qwen3_name(name):
    for proj, norm in (("q_proj", "q_norm"), ("k_proj", "k_norm")):
        name = name.replace(f"{proj}.linear.", f"{proj}.")
        name = name.replace(f"{proj}.norm.", f"{norm}.")
    return name


def qwen3_state(model):
    tied = model.config.tie_word_embeddings
    return {qwen3_name(n): t.detach().clone()
            for n, t in model.state_dict().items()
            if not (tied and n == "lm_head.weight")}


def load(model, state):
    ours = {qwen3_name(n): n for n in model.state_dict()}
    missing = set(ours) - set(state) - {"lm_head.weight"}
    if missing or set(state) - set(ours):
        sys.exit(f"weights: missing {sorted(missing)}, unexpected "
                 f"{sorted(set(state) - set(ours))}")
    model.load_state_dict({ours[n]: t for n, t in state.items()},
                          strict=False)
    model.tie_weights()


mode = sys.argv[1]
if mode == "make":
    out = sys.argv[2]
    torch.manual_seed(5)
    model = build(CONFIG)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    safetensors_io.save(os.path.join(out, "model.safetensors"),
                        qwen3_state(model))
    sys.exit(0)

directory, data, steps, metrics, final = sys.argv[2:7]
with open(os.path.join(directory, "config.json")) as f:
    config = json.load(f)
model = build(config)
load(model, safetensors_io.load(os.path.join(directory, "model.safetensors")))


def logits_of(model, batches, i):
    return model(input_ids=batches["tokens"][i], use_cache=False).logits


adamw_reference.train(model, safetensors_io.load(data), steps, metrics,
                      final, logits_of)
safetensors_io.save(final, {qwen3_name(n): t for n, t in
                            safetensors_io.load(final).items()
                            if not (model.config.tie_word_embeddings and
                                    n == "lm_head.weight")})
