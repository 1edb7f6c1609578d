"""Checks a version 3 .tgcd (preference pairs) that `tgc-data encode
--tokenizer DIR` wrote against transformers' own tokenizer of DIR, each
answer encoded as TRL's DPO trainer encodes it:
  "prompt", "chosen", "rejected" strings: tokenizer(prompt) then
      tokenizer(answer, no special tokens) and EOS; trained: the answer
      and EOS;
  conversations: apply_chat_template(prompt + answer, tokenize=True);
      trained: each assistant turn after the prompt (the "prompt" given, or
      the messages both answers open with, TRL's implicit prompt), from the
      template applied to the turns before it with add_generation_prompt to
      the template through it.
Examples 2i and 2i + 1 are line i's chosen and rejected answers; their
tokens and loss masks must equal these exactly.
Usage: check_preference_data.py DIR INPUT.jsonl DATA.tgcd"""
import json
import os
import sys

import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tools", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chat_masks  # noqa: E402
import tgcd  # noqa: E402

directory, source, data = sys.argv[1:4]
tok = transformers.AutoTokenizer.from_pretrained(directory)
dataset = tgcd.read_tgcd(data)
if dataset["version"] != 3:
    sys.exit(f"{data}: version {dataset['version']}, not 3 (pairs)")
lines = [json.loads(line) for line in open(source) if line.strip()]
if dataset["num_examples"] != 2 * len(lines):
    sys.exit(f"{data}: {dataset['num_examples']} examples for "
             f"{len(lines)} pairs")

for i, line in enumerate(lines):
    if isinstance(line["chosen"], str):
        answers = [chat_masks.prompt_answer(tok, line["prompt"], line[key])
                   for key in ("chosen", "rejected")]
    else:
        prompt = line.get("prompt", [])
        chosen, rejected = prompt + line["chosen"], prompt + line["rejected"]
        turns = len(prompt)
        if "prompt" not in line:
            while chosen[turns] == rejected[turns]:
                turns += 1
        answers = [chat_masks.conversation(tok, chosen, turns),
                   chat_masks.conversation(tok, rejected, turns)]
    for k, (ids, mask) in enumerate(answers):
        ours = [int(t) for t in tgcd.example(dataset, 2 * i + k)]
        ours_mask = [int(m) for m in tgcd.example_mask(dataset, 2 * i + k)]
        if ours != ids or ours_mask != mask:
            sys.exit(f"pair {i} {'rejected' if k else 'chosen'}: tokens "
                     f"{ours} mask {ours_mask}\n  transformers: {ids} "
                     f"{mask}")
print(f"{len(lines)} pairs match transformers' tokenizer and chat template")
