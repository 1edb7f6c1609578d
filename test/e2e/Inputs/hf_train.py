"""Trains a Hugging Face model directory with transformers itself, as the
reference for tgc's training of the same directory: the class config.json
names (eager attention, no dropout), torch.optim.AdamW with tgc's defaults
(lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter)
on DATA's batches as tgc-run takes them (step i: batch i mod N; with an
attention_mask the model reads it), the loss the mean cross-entropy of the
logits against the batch's targets (-100 ignored); writes each step's loss
(METRICS, JSON lines) and the final parameters (FINAL, by state-dict name,
a tied weight once).
Usage: hf_train.py DIR DATA STEPS METRICS FINAL"""
import json
import sys

import torch
import torch.nn.functional as F
import transformers

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402

directory, data, steps, metrics, final = sys.argv[1:6]
config = transformers.AutoConfig.from_pretrained(directory)
for field in ("dropout", "attention_dropout", "hidden_dropout", "resid_pdrop",
              "embd_pdrop", "attn_pdrop", "activation_dropout",
              "hidden_dropout_prob", "attention_probs_dropout_prob",
              "seq_classif_dropout", "qa_dropout"):
    if isinstance(getattr(config, field, None), float):
        setattr(config, field, 0.0)
cls = getattr(transformers, config.architectures[0])
model = cls.from_pretrained(directory, config=config, torch_dtype=torch.float32,
                            attn_implementation="eager")
model.train()
torch.manual_seed(0)
torch.set_num_threads(1)
batches = safetensors_io.load(data)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                        eps=1e-8, weight_decay=0.01)
n = batches["tokens"].shape[0]
with open(metrics, "w") as out:
    for step in range(int(steps)):
        kwargs = {"input_ids": batches["tokens"][step % n]}
        if "attention_mask" in batches:
            kwargs["attention_mask"] = batches["attention_mask"][step % n]
        logits = model(**kwargs).logits
        targets = batches["targets"][step % n]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.write(json.dumps({"step": step + 1, "loss": loss.item()}) + "\n")
safetensors_io.save(final, {k: v.detach().clone()
                            for k, v in model.named_parameters()})
