"""The .tgcd token-dataset format: variable-length tokenized examples, with
optional class labels, laid out so that the tgc runtime can memory-map the
file and read example i as tokens[offsets[i]:offsets[i+1]] without parsing.
tools/python/tgc-data.py writes it; tests read it back with read_tgcd().

Layout (little-endian, no gaps, nothing after the tokens):

  header, 64 bytes:
    char   magic[8]       "TGCTOK01"
    uint32 version        1
    uint32 token_bytes    2 when vocab_size <= 65536, else 4
    uint64 num_examples   N
    uint64 num_tokens
    uint64 vocab_size     every token is below it
    int64  num_labels     0 when the examples carry no labels
    int32  pad_id, mask_id, cls_id, sep_id   -1 when there is none
  uint64 offsets[N + 1]   offsets[0] = 0, offsets[N] = num_tokens, strictly
                          increasing (every example has at least one token)
  int32  labels[N]        only when num_labels > 0, each in [0, num_labels),
                          then zero bytes up to a multiple of 8
  uint16 or uint32 tokens[num_tokens]
  uint8  trained[num_tokens]  versions 2 and 3: 1 where the loss predicts
                          the token (a response), 0 where it is context
                          only (a prompt, a user's turn); version 1 trains
                          on every token

Version 3 is version 2 whose examples are preference pairs: example 2i is
the chosen answer and example 2i + 1 the rejected answer to the same
prompt (both with the prompt, trained only on the answer), so N is even.

Only numpy and the standard library are used, so the module runs under the
system python as well as under the Hugging Face venv.
"""
import struct

import numpy as np

MAGIC = b"TGCTOK01"
VERSION = 1
# Version 2 adds the per-token loss mask after the tokens.
VERSION_MASKED = 2
# Version 3: version 2 whose examples are (chosen, rejected) pairs.
VERSION_PAIRS = 3
HEADER = struct.Struct("<8sIIQQQqiiii")
assert HEADER.size == 64
SPECIAL_NAMES = ("pad_id", "mask_id", "cls_id", "sep_id")


class TgcdError(ValueError):
    """A .tgcd file (or the data about to be written as one) breaks the
    format."""


def token_bytes_for(vocab_size):
    """Bytes per stored token for a vocabulary of `vocab_size` ids."""
    return 2 if vocab_size <= 65536 else 4


def _token_dtype(token_bytes):
    return np.dtype("<u2") if token_bytes == 2 else np.dtype("<u4")


def _labels_padding(num_examples):
    return (-4 * num_examples) % 8


def write_tgcd(out, offsets, tokens, vocab_size, labels=None, num_labels=0,
               pad_id=-1, mask_id=-1, cls_id=-1, sep_id=-1, trained=None,
               pairs=False):
    """Writes a dataset to the binary file object `out`.

    `offsets` holds N + 1 example boundaries into `tokens`; `labels` holds N
    labels when `num_labels` > 0 and is None otherwise; `trained`, when not
    None, holds one 0 or 1 per token (the loss mask: version 2); `pairs`
    (with the mask): the examples are (chosen, rejected) pairs, version 3. The data is
    checked against the format first, so a malformed dataset raises
    TgcdError before anything is written.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    tokens = np.asarray(tokens)
    if tokens.size == 0:
        tokens = tokens.astype(np.int64)
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu":
        raise TgcdError("tokens must be a flat array of integers")
    specials = (pad_id, mask_id, cls_id, sep_id)
    if offsets.ndim != 1 or offsets.size < 2:
        raise TgcdError("a dataset needs at least one example")
    num_examples = offsets.size - 1
    if offsets[0] != 0 or offsets[-1] != tokens.size:
        raise TgcdError("offsets must run from 0 to the number of tokens")
    if np.any(np.diff(offsets) <= 0):
        raise TgcdError("every example needs at least one token")
    if vocab_size <= 0 or vocab_size > 2**32:
        raise TgcdError(f"vocabulary size {vocab_size} is outside [1, 2^32]")
    if tokens.size and (int(tokens.min()) < 0
                        or int(tokens.max()) >= vocab_size):
        raise TgcdError(
            f"a token lies outside the vocabulary [0, {vocab_size})")
    for name, value in zip(SPECIAL_NAMES, specials):
        if value != -1 and not 0 <= value < vocab_size:
            raise TgcdError(f"{name} {value} lies outside the vocabulary "
                            f"[0, {vocab_size})")
    if num_labels < 0 or num_labels > 2**31:
        raise TgcdError(f"number of labels {num_labels} is outside [0, 2^31]")
    if num_labels > 0:
        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (num_examples,):
            raise TgcdError("there must be one label per example")
        if labels.min() < 0 or labels.max() >= num_labels:
            raise TgcdError(f"a label lies outside [0, {num_labels})")
    elif labels is not None:
        raise TgcdError("labels need a positive number of labels")

    if trained is not None:
        trained = np.asarray(trained)
        if trained.shape != tokens.shape:
            raise TgcdError("the loss mask needs one entry per token")
        if trained.size and (int(trained.min()) < 0 or int(trained.max()) > 1):
            raise TgcdError("the loss mask holds values other than 0 and 1")

    if pairs and (trained is None or num_examples % 2 or num_labels):
        raise TgcdError("preference pairs need a loss mask, an even number "
                        "of examples and no labels")
    token_bytes = token_bytes_for(vocab_size)
    version = VERSION if trained is None else \
        VERSION_PAIRS if pairs else VERSION_MASKED
    out.write(HEADER.pack(MAGIC, version, token_bytes, num_examples,
                          tokens.size, vocab_size, num_labels, *specials))
    out.write(offsets.astype("<u8").tobytes())
    if num_labels > 0:
        out.write(labels.astype("<i4").tobytes())
        out.write(bytes(_labels_padding(num_examples)))
    # One copy at the stored width; the file object reads it as a buffer.
    out.write(np.ascontiguousarray(tokens, dtype=_token_dtype(token_bytes)))
    if trained is not None:
        out.write(np.ascontiguousarray(trained, dtype=np.uint8))


def read_tgcd(path):
    """Reads and validates the .tgcd file at `path`.

    Returns a dict with the header fields (version, token_bytes,
    num_examples, num_tokens, vocab_size, num_labels, pad_id, mask_id,
    cls_id, sep_id) and the numpy arrays offsets (uint64), labels (int32, or
    None without labels), tokens (uint16 or uint32) and trained (uint8, or
    None in version 1). Raises TgcdError
    when the file breaks the format in any way the runtime would care about.
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER.size:
        raise TgcdError(f"{path}: {len(data)} bytes is too short for the "
                        f"{HEADER.size}-byte header")
    (magic, version, token_bytes, num_examples, num_tokens, vocab_size,
     num_labels, *specials) = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise TgcdError(f"{path}: bad magic {magic!r} (expected {MAGIC!r})")
    if version not in (VERSION, VERSION_MASKED, VERSION_PAIRS):
        raise TgcdError(f"{path}: unsupported version {version}")
    if vocab_size == 0 or token_bytes != token_bytes_for(vocab_size):
        raise TgcdError(f"{path}: token_bytes {token_bytes} does not suit a "
                        f"vocabulary of {vocab_size}")
    if num_labels < 0:
        raise TgcdError(f"{path}: negative number of labels {num_labels}")
    if num_examples == 0:
        raise TgcdError(f"{path}: no examples")

    labels_size = 4 * num_examples + _labels_padding(num_examples) \
        if num_labels > 0 else 0
    if version == VERSION_PAIRS and (num_examples % 2 or num_labels):
        raise TgcdError(f"{path}: version 3 holds pairs: an even number of "
                        f"examples and no labels, found {num_examples} "
                        f"examples and {num_labels} labels")
    mask_size = num_tokens if version != VERSION else 0
    expected = (HEADER.size + 8 * (num_examples + 1) + labels_size
                + token_bytes * num_tokens + mask_size)
    if len(data) != expected:
        raise TgcdError(f"{path}: {len(data)} bytes, but the header "
                        f"describes {expected}")

    at = HEADER.size
    offsets = np.frombuffer(data, dtype="<u8", count=num_examples + 1,
                            offset=at)
    at += offsets.nbytes
    labels = None
    if num_labels > 0:
        labels = np.frombuffer(data, dtype="<i4", count=num_examples,
                               offset=at)
        if any(data[at + labels.nbytes:at + labels_size]):
            raise TgcdError(
                f"{path}: the padding after the labels is not zero")
        if labels.min() < 0 or labels.max() >= num_labels:
            raise TgcdError(f"{path}: a label lies outside [0, {num_labels})")
        at += labels_size
    tokens = np.frombuffer(data, dtype=_token_dtype(token_bytes),
                           count=num_tokens, offset=at)
    at += tokens.nbytes
    trained = None
    if version != VERSION:
        trained = np.frombuffer(data, dtype=np.uint8, count=num_tokens,
                                offset=at)
        if num_tokens and int(trained.max()) > 1:
            raise TgcdError(f"{path}: the loss mask holds values other than "
                            f"0 and 1")

    if offsets[0] != 0 or offsets[-1] != num_tokens:
        raise TgcdError(f"{path}: offsets do not run from 0 to {num_tokens}")
    if np.any(offsets[1:] <= offsets[:-1]):
        raise TgcdError(f"{path}: offsets are not strictly increasing")
    if num_tokens and int(tokens.max()) >= vocab_size:
        raise TgcdError(f"{path}: a token lies outside the vocabulary "
                        f"[0, {vocab_size})")
    for name, value in zip(SPECIAL_NAMES, specials):
        if value != -1 and not 0 <= value < vocab_size:
            raise TgcdError(f"{path}: {name} {value} lies outside the "
                            f"vocabulary")

    result = {"version": version, "token_bytes": token_bytes,
              "num_examples": num_examples, "num_tokens": num_tokens,
              "vocab_size": vocab_size, "num_labels": num_labels}
    result.update(zip(SPECIAL_NAMES, specials))
    result.update(offsets=offsets, labels=labels, tokens=tokens,
                  trained=trained)
    return result


def example(dataset, i):
    """The tokens of example `i` of a dataset read_tgcd() returned."""
    offsets = dataset["offsets"]
    return dataset["tokens"][int(offsets[i]):int(offsets[i + 1])]


def example_mask(dataset, i):
    """The loss mask of example `i` (all ones in version 1)."""
    offsets = dataset["offsets"]
    begin, end = int(offsets[i]), int(offsets[i + 1])
    if dataset["trained"] is None:
        return np.ones(end - begin, dtype=np.uint8)
    return dataset["trained"][begin:end]
