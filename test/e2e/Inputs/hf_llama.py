"""Hugging Face's own Llama, Mistral and Qwen2 (transformers 4.47.1) as the
reference for tgc's Llama family.

Usage:
  hf_llama.py make DIR KIND [SHARD_BYTES]
      A tiny random model of KIND (llama: grouped-query attention, rope_theta
      5000, Llama 3's rope_scaling and pad_token_id 0, the padding token of
      the batches, whose embedding row gets no gradient; mistral: grouped-query attention and a
      sliding window longer than the sequence; mistral-window: a window of
      8, shorter than the sequence; qwen2: q/k/v biases and tied
      embeddings) written by save_pretrained (config.json and
      model.safetensors, or shards of at most SHARD_BYTES with their
      model.safetensors.index.json).
  hf_llama.py train DIR DATA STEPS METRICS FINAL
      Trains the model of DIR (eager attention, f32) with torch.optim.AdamW
      (tgc's defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
      0.01) on DATA's batches as tgc-run takes them (step i: batch i mod N),
      the loss the cross-entropy of the logits against the batch's targets
      (-100 ignored), and writes each step's loss (METRICS, JSON lines) and
      the final parameters (FINAL, by state-dict name).
"""
import json
import sys

import torch
import transformers

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

mode = sys.argv[1]
if mode == "make":
    out, kind = sys.argv[2], sys.argv[3]
    torch.manual_seed(7)
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=64, rms_norm_eps=1e-5)
    if kind == "llama":
        config = transformers.LlamaConfig(
            num_key_value_heads=2, rope_theta=5000.0, pad_token_id=0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0,
                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 16},
            **common)
        model = transformers.LlamaForCausalLM(config)
    elif kind == "mistral":
        config = transformers.MistralConfig(num_key_value_heads=1,
                                            sliding_window=4096, **common)
        model = transformers.MistralForCausalLM(config)
    elif kind == "mistral-window":
        config = transformers.MistralConfig(num_key_value_heads=2,
                                            sliding_window=8, **common)
        model = transformers.MistralForCausalLM(config)
    elif kind == "qwen2":
        config = transformers.Qwen2Config(num_key_value_heads=2,
                                          tie_word_embeddings=True, **common)
        model = transformers.Qwen2ForCausalLM(config)
        # Random biases, so that a missing bias shows.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("_proj.bias"):
                    p.normal_(0.0, 0.02)
    else:
        sys.exit(f"unknown kind {kind}")
    shard = {"max_shard_size": int(sys.argv[4])} if len(sys.argv) > 4 else {}
    model.save_pretrained(out, safe_serialization=True, **shard)
    sys.exit(0)

directory, data, steps, metrics, final = sys.argv[2:7]
steps = int(steps)
torch.manual_seed(0)
model = transformers.AutoModelForCausalLM.from_pretrained(
    directory, torch_dtype=torch.float32, attn_implementation="eager")
model.train()
batches = safetensors_io.load(data)
params = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                        weight_decay=0.01)
n = batches["tokens"].shape[0]
with open(metrics, "w") as out:
    for step in range(steps):
        tokens = batches["tokens"][step % n]
        targets = batches["targets"][step % n]
        result = model(input_ids=tokens, use_cache=False)
        logits = result.logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
            ignore_index=-100)
        # A mixture of experts asked for its routers' load-balancing loss
        # (output_router_logits) adds it as transformers does with labels.
        if getattr(result, "aux_loss", None) is not None:
            loss = loss + model.config.router_aux_loss_coef * result.aux_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.write(json.dumps({"step": step + 1, "loss": loss.item()}) + "\n")
# A tied lm_head is the embedding under a second name: saved once.
tied = model.config.tie_word_embeddings
safetensors_io.save(final, {name: t.detach().clone()
                            for name, t in model.state_dict().items()
                            if not (tied and name == "lm_head.weight")})
