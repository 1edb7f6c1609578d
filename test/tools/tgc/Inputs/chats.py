"""Writes N lines of chat data (JSONL): prompt/response pairs and
conversations in turn, over the sentences the test tokenizer knows.
Usage: chats.py N OUT.jsonl"""
import json
import sys

PAIRS = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("Translate 'good morning' into German.", "Guten Morgen."),
    ("Write a haiku about autumn leaves.", "Leaves falling slowly."),
]
n, out = int(sys.argv[1]), sys.argv[2]
with open(out, "w") as f:
    for i in range(n):
        prompt, response = PAIRS[i % len(PAIRS)]
        if i % 2:
            line = {"messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": response}]}
        else:
            line = {"prompt": prompt, "response": response}
        f.write(json.dumps(line) + "\n")
