"""Writes a small Hugging Face tokenizer directory for chat data: a
byte-level BPE (tokenizer.json, trained with Hugging Face's tokenizers on a
few sentences, with <|endoftext|>, <|im_start|> and <|im_end|> as special
tokens) and tokenizer_config.json with a ChatML chat template that starts
with bos_token and refuses unknown roles, EOS <|im_end|>, padding and BOS
<|endoftext|>.
Usage: make_chat_tokenizer.py DIR"""
import json
import os
import sys

import tokenizers as tk

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "You are a helpful assistant.",
    "What is the capital of France? The capital of France is Paris.",
    "Translate 'good morning' into German. Guten Morgen.",
    "Write a haiku about autumn leaves falling slowly.",
    "How many legs does a spider have? A spider has eight legs.",
    "Thank you! You are welcome, happy to help.",
] * 20
# ChatML, with the role check and BOS a real template makes.
TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
tokenizer = tk.Tokenizer(tk.models.BPE())
tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = tk.decoders.ByteLevel()
tokenizer.post_processor = tk.processors.ByteLevel(trim_offsets=False)
trainer = tk.trainers.BpeTrainer(
    vocab_size=400, special_tokens=SPECIALS,
    initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
tokenizer.train_from_iterator(CORPUS, trainer)
tokenizer.save(os.path.join(out, "tokenizer.json"))
with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast",
               "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>",
               "pad_token": "<|endoftext|>", "chat_template": TEMPLATE,
               "model_max_length": 1024}, f, indent=2)
print(f"{out}: {tokenizer.get_vocab_size()} tokens")
