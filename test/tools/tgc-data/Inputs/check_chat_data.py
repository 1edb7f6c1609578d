"""Checks a .tgcd that `tgc-data encode --tokenizer DIR` wrote from
prompt/response and conversation lines against transformers' own
tokenizer of DIR (AutoTokenizer):
  prompt/response   tokenizer(prompt) + tokenizer(response, no special
                    tokens) + EOS; trained: the response and EOS;
  text              tokenizer(text), every token trained;
  messages          apply_chat_template(messages, tokenize=True); trained:
                    each assistant turn, from the length of the template
                    applied to the turns before it with
                    add_generation_prompt to its length through the turn.
Every example's tokens and loss mask must equal these exactly.
Usage: check_chat_data.py DIR INPUT.jsonl DATA.tgcd"""
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
if dataset["version"] != 2:
    sys.exit(f"{data}: version {dataset['version']}, not 2 (no loss mask)")
lines = [json.loads(line) for line in open(source) if line.strip()]
trained_total = 0
for i, line in enumerate(lines):
    if "text" in line:  # trained whole
        ids = tok(line["text"])["input_ids"]
        mask = [1] * len(ids)
    elif "prompt" in line:
        ids, mask = chat_masks.prompt_answer(tok, line["prompt"],
                                             line["response"])
    else:
        ids, mask = chat_masks.conversation(tok, line["messages"])
    ours = [int(t) for t in tgcd.example(dataset, i)]
    ours_mask = [int(m) for m in tgcd.example_mask(dataset, i)]
    if ours != ids:
        sys.exit(f"example {i}: tokens {ours}\n  transformers: {ids}")
    if ours_mask != mask:
        sys.exit(f"example {i}: loss mask {ours_mask}\n  transformers: {mask}")
    trained_total += sum(mask)
print(f"{len(lines)} examples match transformers' tokenizer and chat "
      f"template ({trained_total} trained tokens)")
