"""Checks a .tgcd file that tgc-data encoded against its JSONL input.

The header and the exact file size are parsed here with struct, from the
format as documented, independently of tools/python/tgcd.py; then tgcd.read_tgcd
must agree with them and with the input: every example's tokens are what
the tokenizer itself gives for the line (truncated, when --max-length is
given, by the tokenizer's own truncation) or the line's "input_ids", and
the labels are the lines' labels. Prints the header and, with --dump, every
example, for FileCheck.

  check_tgcd.py DATA.tgcd INPUT.jsonl [--tokenizer tokenizer.json]
      [--num-labels K] [--max-length L] [--sep-id S] [--dump]
"""
import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "tools", "python"))
import tgcd  # noqa: E402


def fail(message):
    print(f"check_tgcd: {message}")
    sys.exit(1)


def read_header(path):
    with open(path, "rb") as f:
        data = f.read()
    fields = struct.unpack_from("<8sIIQQQqiiii", data)
    magic, version, token_bytes, n, num_tokens, vocab, num_labels = fields[:7]
    if magic != b"TGCTOK01" or version != 1:
        fail(f"bad magic or version: {magic!r} {version}")
    if token_bytes != (2 if vocab <= 65536 else 4):
        fail(f"token_bytes {token_bytes} for a vocabulary of {vocab}")
    labels_bytes = 0
    if num_labels > 0:
        labels_bytes = 4 * n + (4 if n % 2 else 0)
    size = 64 + 8 * (n + 1) + labels_bytes + token_bytes * num_tokens
    if size != len(data):
        fail(f"file has {len(data)} bytes, the format says {size}")
    return dict(zip(("magic", "version", "token_bytes", "num_examples",
                     "num_tokens", "vocab_size", "num_labels", "pad_id",
                     "mask_id", "cls_id", "sep_id"), fields))


def expected_examples(args):
    tokenizer = None
    if args.tokenizer:
        import tokenizers
        tokenizer = tokenizers.Tokenizer.from_file(args.tokenizer)
        if args.max_length:
            tokenizer.enable_truncation(args.max_length)
    examples = []
    with open(args.input, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            obj = json.loads(line)
            if "text" in obj:
                ids = tokenizer.encode(obj["text"]).ids
            else:
                ids = obj["input_ids"]
                if args.max_length and len(ids) > args.max_length:
                    # tgc-data's rule: a separator at the end stays there.
                    if args.sep_id is not None and ids[-1] == args.sep_id:
                        ids = ids[:args.max_length - 1] + [args.sep_id]
                    else:
                        ids = ids[:args.max_length]
            examples.append((ids, obj.get("label")))
    return examples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("input")
    ap.add_argument("--tokenizer")
    ap.add_argument("--num-labels", type=int, default=0)
    ap.add_argument("--max-length", type=int)
    ap.add_argument("--sep-id", type=int,
                    help="the separator kept by truncated \"input_ids\"")
    ap.add_argument("--dump", action="store_true")
    args = ap.parse_args()

    header = read_header(args.data)
    data = tgcd.read_tgcd(args.data)
    for key, value in header.items():
        if key != "magic" and data[key] != value:
            fail(f"read_tgcd gives {key} {data[key]}, the header {value}")
    print(f"{data['num_examples']} examples, {data['num_tokens']} tokens, "
          f"vocab {data['vocab_size']}, {data['token_bytes']}-byte tokens, "
          f"{data['num_labels']} labels")
    print(f"pad {data['pad_id']} mask {data['mask_id']} cls {data['cls_id']} "
          f"sep {data['sep_id']}")
    if data["num_labels"] != args.num_labels:
        fail(f"{data['num_labels']} labels, expected {args.num_labels}")

    examples = expected_examples(args)
    if len(examples) != data["num_examples"]:
        fail(f"{data['num_examples']} examples, the input has {len(examples)}")
    offsets = data["offsets"]
    for i, (ids, label) in enumerate(examples):
        stored = tgcd.example(data, i).tolist()
        if args.dump:
            shown = "" if data["labels"] is None else \
                f" label {data['labels'][i]}"
            print(f"example {i}: offset {offsets[i]}{shown} tokens {stored}")
        if stored != ids:
            fail(f"example {i}: stored {stored}, expected {ids}")
        if args.num_labels and data["labels"][i] != label:
            fail(f"example {i}: label {data['labels'][i]}, expected {label}")
    lengths = [len(ids) for ids, _ in examples]
    print(f"all {len(examples)} examples match; longest {max(lengths)}")
    if args.num_labels:
        counts = [0] * args.num_labels
        for label in data["labels"]:
            counts[label] += 1
        print("label counts: " + " ".join(map(str, counts)))


if __name__ == "__main__":
    main()
