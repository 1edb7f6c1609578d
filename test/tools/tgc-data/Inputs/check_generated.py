"""Checks that the labels of a corpus `tgc-data generate` wrote are
learnable: a function of the text alone, namely its most frequent marker.
Markers are the words of three syllables (six letters; ordinary words have
two) or, with --vocab-size V, the top K ids [V - K, V). Each label must go
with exactly one marker, and each of the K markers with one label.

  check_generated.py CORPUS.jsonl --num-labels K [--vocab-size V]
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--num-labels", type=int, required=True)
    ap.add_argument("--vocab-size", type=int)
    args = ap.parse_args()

    marker_of_label = {}
    with open(args.corpus, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            example = json.loads(line)
            if args.vocab_size:
                first = args.vocab_size - args.num_labels
                items = [t for t in example["input_ids"] if t >= first]
            else:
                items = [w for w in example["text"].split() if len(w) == 6]
            counts = collections.Counter(items).most_common(2) + [(None, 0)]
            if counts[0][1] == 0 or counts[0][1] == counts[1][1]:
                print(f"line {lineno}: no single most frequent marker: "
                      f"{counts}")
                sys.exit(1)
            marker = counts[0][0]
            if marker_of_label.setdefault(example["label"], marker) != marker:
                print(f"line {lineno}: label {example['label']} goes with "
                      f"{marker} and {marker_of_label[example['label']]}")
                sys.exit(1)
    markers = set(marker_of_label.values())
    if len(markers) != len(marker_of_label) or \
            sorted(marker_of_label) != list(range(args.num_labels)):
        print(f"labels and markers do not pair up: {marker_of_label}")
        sys.exit(1)
    print(f"{args.num_labels} labels, each the most frequent of its marker")


if __name__ == "__main__":
    main()
