"""Trains a Hugging Face model directory with transformers itself, as the
reference for tgc's training of the same directory: the class config.json
names (eager attention, no dropout), torch.optim.AdamW with tgc's defaults
(lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter)
on DATA's batches as tgc-run takes them (step i: batch i mod N; with an
attention_mask the model reads it; an encoder-decoder reads the targets as
its labels, from which transformers makes its decoder's inputs; with
`segments`, rows of packed examples, each example runs alone, as its own
batch of one, and its logits take its place in the row), the loss
the mean cross-entropy of the
logits against the batch's targets (-100 ignored); writes each step's loss
(METRICS, JSON lines) and the final parameters (FINAL, by state-dict name,
a tied weight once).
Usage: hf_train.py DIR DATA STEPS METRICS FINAL"""
import sys

import torch
import transformers

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import adamw_reference  # noqa: E402
import safetensors_io  # noqa: E402

directory, data, steps, metrics, final = sys.argv[1:6]
config = transformers.AutoConfig.from_pretrained(directory)
for field in ("dropout", "attention_dropout", "hidden_dropout", "resid_pdrop",
              "embd_pdrop", "attn_pdrop", "activation_dropout",
              "hidden_dropout_prob", "attention_probs_dropout_prob",
              "seq_classif_dropout", "qa_dropout", "dropout_rate"):
    if isinstance(getattr(config, field, None), float):
        setattr(config, field, 0.0)
cls = getattr(transformers, config.architectures[0])
model = cls.from_pretrained(directory, config=config, torch_dtype=torch.float32,
                            attn_implementation="eager")
torch.manual_seed(0)


def examples_alone(model, batches, i):
    """The logits of batch i's packed rows, each example computed alone."""
    tokens, segments = batches["tokens"][i], batches["segments"][i]
    rows = []
    for r in range(tokens.shape[0]):
        pieces, at = [], 0
        while at < tokens.shape[1]:
            end = at
            while end < tokens.shape[1] and segments[r, end] == segments[r, at]:
                end += 1
            if segments[r, at] == 0:
                pieces.append(torch.zeros(end - at, model.config.vocab_size))
            else:
                pieces.append(model(input_ids=tokens[r:r + 1, at:end]).logits[0])
            at = end
        rows.append(torch.cat(pieces))
    return torch.stack(rows)


def logits_of(model, batches, i):
    if "segments" in batches:
        return examples_alone(model, batches, i)
    kwargs = {"input_ids": batches["tokens"][i]}
    if "attention_mask" in batches:
        kwargs["attention_mask"] = batches["attention_mask"][i]
    if model.config.is_encoder_decoder:
        kwargs["labels"] = batches["targets"][i]
    return model(**kwargs).logits


adamw_reference.train(model, safetensors_io.load(data), steps, metrics, final,
                      logits_of)
