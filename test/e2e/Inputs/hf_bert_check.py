"""Checks bert_reference.py's model against Hugging Face's: loads INIT into
transformers' BertForMaskedLM (mlm) or BertForSequenceClassification
(seq-cls) and compares the logits and the loss of DATA's batch 0 with
bert_reference.forward's.
Runs in the transformers venv of scripts/install-deps.sh (%hfpython).
Usage: hf_bert_check.py mlm|seq-cls INIT DATA N_HEAD
The BertConfig comes from INIT's shapes (vocabulary, hidden size, layers,
intermediate size, positions, labels), with N_HEAD heads, hidden_act
"gelu" (the erf GELU, BERT's), layer_norm_eps 1e-12 and no dropout. INIT must
hold exactly the model's parameters: a missing or unexpected name is an
error, except the decoder's weight and bias (tied to the word embeddings
and to cls.predictions.bias) and the position_ids/token_type_ids buffers.
INIT's optimizer state is ignored. Exits 1 when the losses differ by more
than 1e-5 relative or the logits by more than 1e-5 of their largest
magnitude."""
import sys

import torch
from transformers import (BertConfig, BertForMaskedLM,
                          BertForSequenceClassification)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import bert_reference  # noqa: E402
import safetensors_io  # noqa: E402

# A forward pass only, the same f32 operations in another order (PyTorch's
# fused kernels against bert_reference.py's functions): each logit is a
# sum over the hidden units of products that went through two layers'
# sums of at most 128 terms; sqrt(128) roundings of 2^-24 per sum, a few
# sums deep, is about 3e-6 of the largest magnitude: 1e-5.
TOL = 1e-5
# State-dict entries Hugging Face's model has that INIT does not store.
TIED_OR_BUFFERS = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias",
                   "bert.embeddings.position_ids", "bert.embeddings.token_type_ids")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    task, init, data, n_head = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if task not in bert_reference.TASKS:
        sys.exit(f"unknown task {task!r} (mlm or seq-cls)")
    torch.set_num_threads(1)
    params = {k: v.float() for k, v in safetensors_io.load(init).items()
              if not bert_reference.is_optimizer_state(k)}
    head = "cls.predictions.bias" if task == "mlm" else "classifier.weight"
    if head not in params:
        sys.exit(f"{init} holds no {head}: not a BERT {task} checkpoint")
    vocab, hidden = params["bert.embeddings.word_embeddings.weight"].shape
    config = BertConfig(
        vocab_size=vocab, hidden_size=hidden,
        num_hidden_layers=bert_reference.num_layers(params),
        num_attention_heads=n_head,
        intermediate_size=params["bert.encoder.layer.0.intermediate.dense.weight"].shape[0],
        max_position_embeddings=params["bert.embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=params["bert.embeddings.token_type_embeddings.weight"].shape[0],
        hidden_act="gelu", layer_norm_eps=1e-12,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if task == "mlm":
        model = BertForMaskedLM(config)
    else:
        config.num_labels = params["classifier.weight"].shape[0]
        if config.num_labels < 2:
            sys.exit("seq-cls needs 2 or more labels (Hugging Face regresses with 1)")
        model = BertForSequenceClassification(config)
    model.eval()
    result = model.load_state_dict(params, strict=False)
    missing = [k for k in result.missing_keys if k not in TIED_OR_BUFFERS]
    if missing or result.unexpected_keys:
        sys.exit(f"{init} lacks {missing} and has unexpected {result.unexpected_keys}")
    if task == "mlm":
        decoder = model.cls.predictions.decoder
        assert decoder.weight is model.bert.embeddings.word_embeddings.weight
        assert decoder.bias is model.cls.predictions.bias

    batch = bert_reference.batch(safetensors_io.load(data), 0)
    with torch.no_grad():
        hf = model(input_ids=batch["tokens"], attention_mask=batch["attention_mask"],
                   labels=batch["targets"])
        ours_logits = bert_reference.logits(params, batch, task, n_head)
        ours = bert_reference.forward(params, batch, task, n_head).item()
    theirs = hf.loss.item()
    loss_err = abs(ours - theirs) / abs(theirs)
    logits_err = float((ours_logits - hf.logits).abs().max() / hf.logits.abs().max())
    print(f"{task} batch 0 loss: transformers {theirs:.8f}, bert_reference {ours:.8f} "
          f"(relative error {loss_err:.2e}); logits error {logits_err:.2e}")
    if loss_err > TOL or logits_err > TOL:
        sys.exit(f"bert_reference differs from transformers by more than {TOL}")
    print("bert_reference matches transformers")


if __name__ == "__main__":
    main()
