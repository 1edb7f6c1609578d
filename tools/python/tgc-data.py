#!/usr/bin/env python3
"""tgc-data: prepares variable-length training data ahead of training.

Tokenization happens here, once, rather than in the training loop: text is
encoded with a Hugging Face tokenizer and written as a .tgcd file (the
format is described in tgcd.py, next to this script), which the tgc runtime
reads whole. Three subcommands:

  train-tokenizer --corpus FILE.jsonl [--corpus ...] --vocab-size N
                  --kind wordpiece|bpe -o tokenizer.json
      Trains a BERT-style WordPiece tokenizer ([PAD]=0, [UNK], [CLS], [SEP],
      [MASK]; lowercasing; "[CLS] $A [SEP]") or a GPT-2-style byte-level BPE
      (<|endoftext|>, <|pad|>) on the "text" fields of the corpora. The same
      corpus always gives the same tokenizer.json.

  encode --input data.jsonl -o data.tgcd [--tokenizer tokenizer.json|DIR]
         [--chat-template FILE] [--chat-time-limit S] [--chat-memory-limit M]
         [--num-labels K] [--max-length L]
         [--overlong=truncate|reject] [--vocab-size V]
         [--pad-id I] [--mask-id I] [--cls-id I] [--sep-id I]
      Every line is an object with one of
        "text"                 a string, encoded with the tokenizer;
        "input_ids"            already tokenized;
        "prompt", "response"   strings: the prompt encoded as a text is (its
                               BOS, where the tokenizer adds one), then the
                               response and the EOS token; the loss reads
                               the response and EOS only;
        "messages"             a conversation, [{"role": ..., "content":
                               ...}], rendered by the chat template and
                               tokenized whole; the loss reads the
                               assistant's turns only;
        "source", "target"     strings, for an encoder-decoder (T5, BART):
                               each encoded as a text, with the tokenizer's
                               special tokens (as transformers' tokenizer
                               encodes text and text_target); the target is
                               what the loss reads;
        "source_ids", "target_ids"  the same, already tokenized;
      and an integer "label" in [0, K) exactly when K > 0. Or every line is
      a preference pair (for tgc-compile --loss=dpo|ipo|simpo|orpo), as
      TRL's preference datasets are:
        "prompt", "chosen", "rejected"  strings: each answer encoded after
                               the prompt as "prompt"/"response" is;
        "prompt_ids", "chosen_ids", "rejected_ids"  the same, tokenized;
        "chosen", "rejected"   conversations (lists of messages, after an
                               optional "prompt" list; without it, the
                               turns both open with are the prompt): the
                               loss reads the assistant's turns after the
                               prompt;
      written as a version 3 file: example 2i the chosen answer, 2i + 1 the
      rejected one. An empty answer, or a prompt that leaves an answer no
      room within L, is an error. The tokenizer is
      a tokenizer.json or a Hugging Face model directory (its
      tokenizer.json, and from tokenizer_config.json the chat template and
      the EOS and padding tokens). A template renders one conversation in
      at most S seconds (10) and M MiB (1024) of memory. Prompts,
      conversations and source/target pairs make a version 2 file, with the
      loss mask (a pair is its source, untrained, then its target; tgc-run
      splits it there for an encoder-decoder). The
      vocabulary is the tokenizer's, or V (which may pad it; without a
      tokenizer V is required). Examples
      longer than L are cut to their first L tokens (an example that ends in
      the separator keeps it as its last token), or refused with
      --overlong=reject; one left with no trained token is an error. Any
      bad line is an error naming FILE:LINE, and nothing is written.

  generate -o corpus.jsonl --examples N --seed S [--median 80] [--max 512]
           [--num-labels K] [--pre-tokenized --vocab-size V]
      A synthetic corpus: lengths (in words, or tokens when pre-tokenized)
      log-normal around the median and clipped to [2, max], words drawn with
      Zipf frequencies from a fixed list of pseudo-words. With K labels, K
      marker words are mixed in and the label is the marker that occurs most,
      which a bag-of-words classifier can learn. The same seed gives the same
      corpus.

Errors go to stderr as `tgc-data: error: ...` with exit status 1. Outputs are
written to a temporary file beside the destination and renamed over it at
the end, so a failed run leaves no partial file. Only `tokenizers` (imported
when a tokenizer is used) needs the Hugging Face venv; pre-tokenized data
and `generate` run under the system python too.
"""
import argparse
import bisect
import contextlib
import itertools
import json
import math
import os
import random
import resource
import signal
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tgcd  # noqa: E402
import userfiles  # noqa: E402

import numpy as np  # noqa: E402

WORDPIECE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BPE_SPECIALS = ("<|endoftext|>", "<|pad|>")
# The tokens that fill each special role of the .tgcd header, in order of
# preference (BERT's names, then GPT-2's).
SPECIAL_ROLES = {
    "pad_id": ("[PAD]", "<|pad|>"),
    "mask_id": ("[MASK]",),
    "cls_id": ("[CLS]",),
    "sep_id": ("[SEP]", "<|endoftext|>"),
}
ENCODE_CHUNK_LINES = 4096
# The longest line of a JSONL file read (64 MiB): a file without newlines
# (or /dev/zero) is an error, not a process that grows until it is killed.
MAX_LINE_BYTES = 64 << 20
# The largest vocabulary a tokenizer is trained for (Hugging Face's
# tokenizers keep ids in 32 bits and abort beyond; no model has more).
MAX_TRAIN_VOCAB = 1 << 24
# The largest --chat-template file read (real ones are a few KiB).
MAX_TEMPLATE_BYTES = 1 << 20
# What rendering one conversation's chat template may take, by default and
# at most (--chat-time-limit, seconds; --chat-memory-limit, MiB).
CHAT_TIME_LIMIT = 10.0
MAX_CHAT_TIME_LIMIT = 3600.0
CHAT_MEMORY_LIMIT = 1024
MAX_CHAT_MEMORY_LIMIT = 1 << 20
# What `generate` writes at most: a corpus of test data, not a disk filler.
MAX_GENERATED_EXAMPLES = 10_000_000
MAX_GENERATED_LENGTH = 1 << 20


class DataError(Exception):
    """A problem with the user's data or request, reported without a trace."""


def import_tokenizers():
    try:
        import tokenizers
    except ImportError as e:
        raise DataError(
            f"this needs Hugging Face's 'tokenizers' package ({e}); run "
            "tgc-data.py with .venv-hf/bin/python (scripts/install-deps.sh "
            "makes it)") from None
    return tokenizers


def json_kind(value):
    """How an error message names the JSON type of `value`."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "an array", str: "a string",
            type(None): "null"}[type(value)]


def plural(count, noun):
    return f"{count} {noun}" + ("" if count == 1 else "s")


def check_input_file(path, what="input"):
    """`path` must be a regular file: a directory, a device (/dev/zero) or a
    FIFO is refused before it is read."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or
                stat.S_ISBLK(info.st_mode) else
                "a pipe" if stat.S_ISFIFO(info.st_mode) else "not a file")
        raise DataError(f"{what} {path} is {kind}, not a file")


def check_outputs(output, inputs, within=()):
    """The output must be a file (or nothing yet) in an existing directory,
    and no file the run reads (userfiles.py): `inputs` ((flag, path)
    pairs; a directory stands for its files and the names of `within` in
    it), this script, the modules it imports and its interpreter."""
    userfiles.check_output_path("-o", output)
    files = userfiles.program_files(__file__, ("tgcd.py",)) + [
        userfiles.NamedFile(flag, path, within) for flag, path in inputs]
    userfiles.check_distinct_files(files, [userfiles.NamedFile("-o", output)])


def read_jsonl(path):
    """Yields (line number, object) for every non-blank line of `path`."""
    check_input_file(path)
    with open(path, "rb") as f:
        for lineno in itertools.count(1):
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES:
                raise DataError(f"{path}:{lineno}: a line longer than "
                                f"{MAX_LINE_BYTES} bytes (is it JSONL?)")
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except UnicodeDecodeError:
                raise DataError(f"{path}:{lineno}: not valid UTF-8") from None
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: malformed JSON: {e.msg} "
                                f"at column {e.colno}") from None
            except RecursionError:
                raise DataError(f"{path}:{lineno}: JSON nested too deeply "
                                "to read") from None
            if not isinstance(value, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, "
                                f"found {json_kind(value)}")
            yield lineno, value


atomic_output = userfiles.atomic_output


# --- train-tokenizer ---------------------------------------------------------

def read_corpus_texts(paths):
    texts = []
    for path in paths:
        for lineno, obj in read_jsonl(path):
            text = obj.get("text")
            if not isinstance(text, str):
                found = "none" if text is None else json_kind(text)
                raise DataError(f"{path}:{lineno}: expected a string \"text\" "
                                f"field, found {found}")
            texts.append(text)
    if not texts:
        raise DataError(f"{', '.join(paths)}: no texts to train on")
    return texts


def train_wordpiece(tk, texts, vocab_size):
    tokenizer = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = tk.normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    # The trainer numbers continuation pieces ("##a") in hash-map order, so
    # their ids, and with them the tie-breaks between equally frequent
    # pairs, change from run to run. Handing it every continuation piece
    # up front, sorted, as a special token fixes both; they are then taken
    # out of the added tokens again and stay plain vocabulary entries.
    continuations = set()
    for text in texts:
        normalized = tokenizer.normalizer.normalize_str(text)
        for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized):
            continuations.update(word[1:])
    pieces = ["##" + c for c in sorted(continuations)]
    trainer = tk.trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=list(WORDPIECE_SPECIALS) + pieces, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    saved = json.loads(tokenizer.to_str())
    saved["added_tokens"] = [t for t in saved["added_tokens"]
                             if t["content"] in WORDPIECE_SPECIALS]
    tokenizer = tk.Tokenizer.from_str(json.dumps(saved))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = tk.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tokenizer.decoder = tk.decoders.WordPiece()
    return tokenizer


def train_bpe(tk, texts, vocab_size):
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(
        add_prefix_space=False)
    tokenizer.post_processor = tk.processors.ByteLevel(trim_offsets=False)
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(BPE_SPECIALS),
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def cmd_train_tokenizer(args):
    minimum = {"wordpiece": len(WORDPIECE_SPECIALS) + 1,
               "bpe": 256 + len(BPE_SPECIALS)}[args.kind]
    if not minimum <= args.vocab_size <= MAX_TRAIN_VOCAB:
        raise DataError(f"--vocab-size must be in [{minimum}, "
                        f"{MAX_TRAIN_VOCAB}] for a {args.kind} tokenizer, "
                        f"found {args.vocab_size}")
    check_outputs(args.output, [("--corpus", c) for c in args.corpus])
    texts = read_corpus_texts(args.corpus)
    tk = import_tokenizers()
    train = train_wordpiece if args.kind == "wordpiece" else train_bpe
    tokenizer = train(tk, texts, args.vocab_size)
    with atomic_output(args.output, "w") as f:
        f.write(tokenizer.to_str(pretty=True) + "\n")
    print(f"tgc-data: wrote {args.output}: {args.kind} tokenizer of "
          f"{tokenizer.get_vocab_size(with_added_tokens=True)} tokens, "
          f"trained on {len(texts)} texts")


# --- encode ------------------------------------------------------------------

def token_text(value):
    """A special token of tokenizer_config.json: a string, or an AddedToken
    object with its "content"; None when absent."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class TokenizerInfo:
    """What a tokenizer directory's tokenizer_config.json adds to its
    tokenizer.json: the chat template and the special tokens by role."""

    def __init__(self, path=None, config=None):
        self.path = path
        config = config or {}
        self.chat_template = config.get("chat_template")
        if isinstance(self.chat_template, list):  # named templates
            named = {t.get("name"): t.get("template")
                     for t in self.chat_template if isinstance(t, dict)}
            self.chat_template = named.get("default")
        self.tokens = {role: token_text(config.get(role))
                       for role in ("bos_token", "eos_token", "pad_token",
                                    "unk_token")}


def load_tokenizer_info(path):
    """The TokenizerInfo of --tokenizer PATH: a directory's
    tokenizer_config.json, or nothing for a tokenizer.json file."""
    if not os.path.isdir(path):
        return TokenizerInfo()
    config_path = os.path.join(path, "tokenizer_config.json")
    if not os.path.exists(config_path):
        return TokenizerInfo(path)
    check_input_file(config_path, "--tokenizer")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"{config_path}: not a JSON file: {e}") from None
    if not isinstance(config, dict):
        raise DataError(f"{config_path}: not a JSON object")
    return TokenizerInfo(path, config)


def load_tokenizer(path):
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
        if not os.path.exists(path):
            raise DataError(f"--tokenizer: the directory has no "
                            f"tokenizer.json ({path})")
    check_input_file(path, "--tokenizer")
    tk = import_tokenizers()
    try:
        tokenizer = tk.Tokenizer.from_file(path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # plain Exceptions, or a Rust panic
        raise DataError(f"{path}: cannot load the tokenizer: {e}") from None
    # Lengths are the examples' own: padding and truncation saved in the
    # tokenizer would change them behind the user's back.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class TemplateLimit(BaseException):
    """Raised by SIGALRM inside a template's rendering: a BaseException, so
    that no `except Exception` in Jinja or a template's filters stops it."""


class RenderLimits:
    """A wall-clock limit and an address-space limit (RLIMIT_AS, above what
    the process already has) around the rendering of one conversation, so
    that a template that loops or allocates without bound is an error in
    seconds. The limits hold only while the template runs: the tokenizer
    (Rust, which aborts on a failed allocation) runs without them."""

    def __init__(self, seconds, mebibytes):
        self.seconds = seconds
        self.bytes = mebibytes << 20

    @staticmethod
    def address_space():
        """The process's virtual size in bytes (None off Linux)."""
        try:
            with open("/proc/self/statm", "rb") as f:
                return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    @contextlib.contextmanager
    def applied(self):
        def expired(number, frame):
            raise TemplateLimit()
        previous_handler = signal.signal(signal.SIGALRM, expired)
        previous_limit = resource.getrlimit(resource.RLIMIT_AS)
        used = self.address_space()
        if used is not None:
            soft, hard = previous_limit
            limit = used + self.bytes
            for bound in (soft, hard):
                if bound != resource.RLIM_INFINITY:
                    limit = min(limit, bound)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            yield
        finally:
            # (Should the timer expire in this block, the inner finally
            # still restores the rest: it fires once.)
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
            finally:
                if used is not None:
                    resource.setrlimit(resource.RLIMIT_AS, previous_limit)
                signal.signal(signal.SIGALRM, previous_handler)


class ChatTemplate:
    """A Jinja chat template rendered as transformers' apply_chat_template
    renders it (a sandbox, trim_blocks and lstrip_blocks, its tojson and
    raise_exception), with the tokenizer's special tokens, under
    RenderLimits. Every failure is a DataError naming the example and the
    template (`label`: its file, or the tokenizer's chat_template)."""

    # Conversations of up to this many turns find the assistant's spans by
    # rendering each prefix (spans_by_prefixes); longer ones by windows
    # (spans_by_windows), which falls back to prefixes when a template's
    # turns depend on more than the window shows.
    PREFIX_TURNS = 16
    # A window is the first WINDOW_HEAD turns (a system prompt, and the
    # first turn, which templates single out), WINDOW_CONTEXT turns before
    # a block of WINDOW_BLOCK turns, and the block. Even sizes keep every
    # turn's index parity, which templates that check alternation test.
    WINDOW_HEAD = 2
    WINDOW_CONTEXT = 2
    WINDOW_BLOCK = 8

    def __init__(self, line, source, label, tokens, limits):
        """`line` names the example that first needs the template."""
        self.label = label
        self.limits = limits
        if isinstance(source, bytes):
            try:
                source = source.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"{line}: the chat template ({label}) is not "
                                f"valid UTF-8 (byte {e.start})") from None
        if not isinstance(source, str):
            raise DataError(f"{line}: the chat template ({label}) is "
                            f"{json_kind(source)}, not a string")
        try:
            import jinja2
            import jinja2.ext
            import jinja2.sandbox
        except ImportError as e:
            raise DataError(f"chat templates need the 'jinja2' package ({e}); "
                            "run tgc-data.py with .venv-hf/bin/python "
                            "(scripts/install-deps.sh installs it)") from None

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        def tojson(value, ensure_ascii=False, indent=None, separators=None,
                   sort_keys=False):
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                              separators=separators, sort_keys=sort_keys)

        def strftime_now(fmt):
            import datetime
            return datetime.datetime.now().strftime(fmt)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True,
            extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        self.error = jinja2.exceptions.TemplateError
        try:
            with limits.applied():
                self.template = env.from_string(source)
        except (Exception, TemplateLimit) as e:
            raise DataError(f"{line}: the chat template ({label}) does not "
                            f"parse: {self.failure(e)}") from None
        self.tokens = {k: v for k, v in tokens.items() if v is not None}

    def failure(self, e):
        """What went wrong in the template, as the end of a message."""
        if isinstance(e, TemplateLimit):
            return (f"it takes longer than {self.limits.seconds:g} s "
                    f"(--chat-time-limit)")
        if isinstance(e, MemoryError):
            return (f"it needs more than {self.limits.bytes >> 20} MiB of "
                    f"memory (--chat-memory-limit)")
        if isinstance(e, RecursionError):
            return "it recurses too deeply (a macro that calls itself?)"
        if isinstance(e, self.error):
            return str(e)
        return f"{type(e).__name__}: {e}"

    def render(self, messages, add_generation_prompt):
        return self.template.render(
            messages=messages, add_generation_prompt=add_generation_prompt,
            **self.tokens)

    def assistant_spans(self, line, messages):
        """The rendered conversation and the character spans of the
        assistant's turns in it: from the end of the conversation before
        the turn, as the model is prompted to answer
        (add_generation_prompt), to the end of the conversation through
        the turn (the turn's closing tokens included)."""
        try:
            with self.limits.applied():
                full = self.render(messages, False)
                spans = None
                if len(messages) > self.PREFIX_TURNS:
                    spans = self.spans_by_windows(messages, full)
                if spans is None:
                    spans = self.spans_by_prefixes(line, messages, full)
        except DataError:
            raise
        except (Exception, TemplateLimit) as e:
            verb = "refuses" if isinstance(e, self.error) else "fails on"
            raise DataError(f"{line}: the chat template ({self.label}) "
                            f"{verb} the conversation: "
                            f"{self.failure(e)}") from None
        try:
            full.encode("utf-8")
        except UnicodeEncodeError as e:
            bad = ord(full[e.start])
            raise DataError(
                f"{line}: the chat template ({self.label}) renders text "
                f"that is not valid UTF-8: a lone surrogate U+{bad:04X} at "
                f"character {e.start} (a \\u escape in the data or the "
                f"template that is half of a pair)") from None
        return full, spans

    def spans_by_prefixes(self, line, messages, full):
        """The spans by definition: each assistant turn's conversation
        before and through it rendered whole (quadratic in the turns)."""
        spans = []
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            before = self.render(messages[:i], True)
            through = self.render(messages[:i + 1], False)
            if not (through.startswith(before) and full.startswith(through)):
                raise DataError(
                    f"{line}: the chat template ({self.label}) does not "
                    f"render the conversation before turn {i} as the start "
                    f"of the conversation through it, so the assistant's "
                    f"tokens cannot be told apart")
            spans.append((len(before), len(through)))
        return spans

    def spans_by_windows(self, messages, full):
        """The spans spans_by_prefixes finds, in time linear in the turns,
        or None when this template cannot be read this way. Turn k's text
        is what rendering a window of the conversation ending at k adds to
        the same window without k, and its generation prompt what
        add_generation_prompt adds there; the turns' texts, laid end to end
        from the exactly rendered start, must reproduce the whole
        conversation character for character, or the prefixes decide."""
        head, context, block = (self.WINDOW_HEAD, self.WINDOW_CONTEXT,
                                self.WINDOW_BLOCK)
        first = head + context
        try:
            # The first turns: their prefixes exactly.
            start = self.render(messages[:first], False)
            if not full.startswith(start):
                return None
            spans = []
            for i in range(first):
                if messages[i]["role"] == "assistant":
                    before = self.render(messages[:i], True)
                    through = self.render(messages[:i + 1], False)
                    if not (through.startswith(before) and
                            start.startswith(through)):
                        return None
                    spans.append((len(before), len(through)))
            end = len(start)
            for block_start in range(first, len(messages), block):
                window = messages[:head] + messages[block_start - context:
                                                    block_start]
                without = self.render(window, False)
                for k in range(block_start,
                               min(block_start + block, len(messages))):
                    if messages[k]["role"] == "assistant":
                        prompted = self.render(window, True)
                        if not prompted.startswith(without):
                            return None
                        prompt = prompted[len(without):]
                        if not full.startswith(prompt, end):
                            return None
                        begin = end + len(prompt)
                    window = window + [messages[k]]
                    through = self.render(window, False)
                    if not through.startswith(without):
                        return None
                    turn = through[len(without):]
                    if not full.startswith(turn, end):
                        return None
                    if messages[k]["role"] == "assistant":
                        spans.append((begin, end + len(turn)))
                    end += len(turn)
                    without = through
            if end != len(full):
                return None
            return spans
        except MemoryError:
            raise
        except Exception:
            return None  # a window the template refuses: the prefixes decide


def trained_tokens(offsets, spans):
    """1 for each token whose first character lies in one of `spans`
    ((begin, end) character ranges), else 0: a token at `begin` is inside
    when the furthest end of the spans that start at or before it lies
    past it (a search per token, not a scan of every span)."""
    spans = sorted(spans)
    starts = [a for a, _ in spans]
    reach = list(itertools.accumulate((b for _, b in spans), max))
    trained = []
    for begin, _ in offsets:
        i = bisect.bisect_right(starts, begin)
        trained.append(int(i > 0 and reach[i - 1] > begin))
    return trained


class DatasetBuilder:
    """Checks examples one at a time and gathers them for write_tgcd."""

    def __init__(self, vocab_size, num_labels, max_length, overlong, sep_id):
        self.vocab_size = vocab_size
        self.num_labels = num_labels
        self.max_length = max_length
        self.overlong = overlong
        self.sep_id = sep_id
        self.lengths = []
        self.labels = []
        self.token_chunks = []
        self.mask_chunks = []
        self.pending = []
        self.pending_masks = []
        self.masked = False
        self.truncated = 0

    def add(self, where, ids, label, trained=None):
        """One example; `trained` (one 0 or 1 per token) is its loss mask,
        or None: every token is trained."""
        if not ids:
            raise DataError(f"{where}: example has no tokens")
        if min(ids) < 0 or max(ids) >= self.vocab_size:
            bad = next(t for t in ids if not 0 <= t < self.vocab_size)
            raise DataError(f"{where}: token {bad} lies outside the "
                            f"vocabulary [0, {self.vocab_size})")
        if self.max_length is not None and len(ids) > self.max_length:
            if self.overlong == "reject":
                raise DataError(
                    f"{where}: example has {len(ids)} tokens, more than "
                    f"--max-length {self.max_length} (--overlong=truncate "
                    f"would cut it)")
            if trained is not None:
                trained = self.truncate(trained, ids[-1] == self.sep_id)
            ids = self.truncate(ids, ids[-1] == self.sep_id)
            self.truncated += 1
        if trained is not None:
            self.masked = True
            # Position 0 is never a target: something after it must be.
            if not any(trained[1:]):
                cut = (f" after truncation to --max-length "
                       f"{self.max_length}" if self.max_length is not None
                       and len(ids) == self.max_length else "")
                raise DataError(f"{where}: example has no token to train on"
                                f"{cut} (an empty response, or a prompt "
                                f"that fills it)")
        self.lengths.append(len(ids))
        self.pending.append(ids)
        self.pending_masks.append(trained if trained is not None
                                  else [1] * len(ids))
        if label is not None:
            self.labels.append(label)

    def truncate(self, values, ends_in_sep):
        """The first max_length of an example's tokens (or mask values); an
        example that ends in the separator ([SEP] after BERT's template)
        keeps it last."""
        keep = self.max_length
        if self.sep_id >= 0 and ends_in_sep and keep >= 2:
            return values[:keep - 1] + [values[-1]]
        return values[:keep]

    def flush(self):
        """Packs the examples added since the last flush into one array."""
        count = sum(len(ids) for ids in self.pending)
        self.token_chunks.append(np.fromiter(
            itertools.chain.from_iterable(self.pending), dtype=np.uint32,
            count=count))
        self.mask_chunks.append(np.fromiter(
            itertools.chain.from_iterable(self.pending_masks), dtype=np.uint8,
            count=count))
        self.pending = []
        self.pending_masks = []

    def arrays(self):
        self.flush()
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        labels = np.array(self.labels, dtype=np.int64) if self.num_labels \
            else None
        trained = np.concatenate(self.mask_chunks) if self.masked else None
        return offsets, np.concatenate(self.token_chunks), labels, trained


def string_field(where, obj, key):
    value = obj[key]
    if not isinstance(value, str):
        raise DataError(f"{where}: \"{key}\" must be a string, found "
                        f"{json_kind(value)}")
    return value


def parse_messages(where, messages):
    """A conversation: a non-empty list of {"role", "content"} objects
    (strings), with at least one assistant turn to train on."""
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: \"messages\" must be a non-empty array "
                        "of {\"role\", \"content\"} objects")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(
                message.get("role"), str) or not isinstance(
                message.get("content"), str):
            raise DataError(f"{where}: message {i} must be an object with "
                            "string \"role\" and \"content\"")
    if not any(m["role"] == "assistant" for m in messages):
        raise DataError(f"{where}: the conversation has no \"assistant\" "
                        "turn to train on")
    return messages


# The forms of an input line, by the fields that make them.
EXAMPLE_FORMS = (("text",), ("input_ids",), ("prompt", "response"),
                 ("messages",), ("source", "target"),
                 ("source_ids", "target_ids"))


# The forms of a preference pair's line: the two answers to one prompt.
PAIR_FORMS = (("prompt_ids", "chosen_ids", "rejected_ids"),
              ("prompt", "chosen", "rejected"), ("chosen", "rejected"))


def is_pair(obj):
    return any(key in obj for key in ("chosen", "rejected", "chosen_ids",
                                      "rejected_ids"))


def parse_pair(where, obj, num_labels, have_tokenizer):
    """A preference pair ("pair_ids", "pair_text" or "pair_chat") and its
    content: the prompt and the two answers, as ids, strings, or lists of
    messages (the prompt's optional: a conversation's shared turns are its
    prompt)."""
    if num_labels > 0:
        raise DataError(f"{where}: a preference pair carries no label "
                        f"(leave out --num-labels)")
    if "chosen_ids" in obj or "rejected_ids" in obj:
        for key in PAIR_FORMS[0]:
            ids = obj.get(key)
            if not isinstance(ids, list) or not all(
                    type(t) is int for t in ids):
                raise DataError(f"{where}: a pre-tokenized pair needs "
                                f"\"{key}\", an array of integers")
        if not obj["prompt_ids"]:
            raise DataError(f"{where}: \"prompt_ids\" is empty (an answer's "
                            "first token is predicted from the prompt)")
        return "pair_ids", tuple(obj[key] for key in PAIR_FORMS[0])
    for key in ("chosen", "rejected"):
        if key not in obj:
            raise DataError(f"{where}: a preference pair needs \"chosen\" "
                            f"and \"rejected\"; \"{key}\" is missing")
    if not have_tokenizer:
        raise DataError(f"{where}: a pair of texts needs a --tokenizer")
    if isinstance(obj["chosen"], str):
        content = tuple(string_field(where, obj, key)
                        for key in PAIR_FORMS[1])
        for key, answer in zip(("chosen", "rejected"), content[1:]):
            if not answer.strip():
                raise DataError(f"{where}: the {key} answer is empty")
        return "pair_text", content
    prompt = obj.get("prompt", [])
    if not isinstance(prompt, list):
        raise DataError(f"{where}: with conversations as answers, "
                        "\"prompt\" is a list of messages too")
    for key in ("chosen", "rejected"):
        if not isinstance(obj[key], list) or not obj[key]:
            raise DataError(f"{where}: \"{key}\" must be a string or a "
                            "non-empty list of messages")
    chosen, rejected = (parse_messages(where, prompt + obj[key])
                        for key in ("chosen", "rejected"))
    # The prompt: the given one, or the turns both conversations open with
    # (TRL's implicit prompt).
    turns = len(prompt)
    if "prompt" not in obj:
        while turns < min(len(chosen), len(rejected)) and \
                chosen[turns] == rejected[turns]:
            turns += 1
    for key, messages in (("chosen", chosen), ("rejected", rejected)):
        if not any(m["role"] == "assistant" for m in messages[turns:]):
            raise DataError(f"{where}: the {key} answer is empty (no "
                            "assistant turn after the prompt's "
                            f"{plural(turns, 'turn')})")
    return "pair_chat", (chosen, rejected, turns)


def parse_example(where, obj, num_labels, have_tokenizer):
    """The kind of one input line ("text", "input_ids", "prompt",
    "messages", "source" or "source_ids"), its content, and its label."""
    present = [form for form in EXAMPLE_FORMS
               if any(key in obj for key in form)]
    def named(form):
        return " and ".join(f'"{key}"' for key in form)
    if len(present) > 1:
        raise DataError(f"{where}: example has both "
                        f"{' and '.join(named(f) for f in present)}; give "
                        "one")
    if not present:
        raise DataError(f"{where}: example has neither \"text\" nor "
                        "\"input_ids\" (nor \"prompt\" and \"response\", "
                        "nor \"messages\", nor \"source\" and \"target\", "
                        "nor \"source_ids\" and \"target_ids\")")
    form = present[0]
    missing = [key for key in form if key not in obj]
    if missing:
        raise DataError(f"{where}: example has \"{form[0]}\" but no "
                        f"\"{missing[0]}\"")
    kind = form[0]
    if kind in ("input_ids", "source_ids"):
        for key in form:
            ids = obj[key]
            if not isinstance(ids, list) or not all(
                    type(t) is int for t in ids):
                raise DataError(f"{where}: \"{key}\" must be an array of "
                                "integers")
            if kind == "source_ids" and not ids:
                raise DataError(f"{where}: \"{key}\" is empty (an "
                                "encoder-decoder reads a source and a "
                                "target)")
        content = obj["input_ids"] if kind == "input_ids" else \
            (obj["source_ids"], obj["target_ids"])
    else:
        if kind == "text":
            content = string_field(where, obj, "text")
        elif kind == "prompt":
            content = (string_field(where, obj, "prompt"),
                       string_field(where, obj, "response"))
        elif kind == "source":
            content = (string_field(where, obj, "source"),
                       string_field(where, obj, "target"))
        else:
            content = parse_messages(where, obj["messages"])
        if not have_tokenizer:
            raise DataError(f"{where}: example has \"{kind}\" but no "
                            "--tokenizer was given")

    label = obj.get("label")
    if num_labels > 0:
        if label is None:
            raise DataError(f"{where}: example has no \"label\" "
                            f"(--num-labels {num_labels} needs one on every "
                            "line)")
        if type(label) is not int:
            raise DataError(f"{where}: \"label\" must be an integer, found "
                            f"{json.dumps(label)}")
        if not 0 <= label < num_labels:
            raise DataError(f"{where}: label {label} lies outside "
                            f"[0, {num_labels})")
    elif "label" in obj:
        raise DataError(f"{where}: example has a \"label\" but --num-labels "
                        "was not given; pass --num-labels N to keep labels")
    return kind, content, label


def special_ids(args, tokenizer, vocab_size, info):
    """The header's pad/mask/cls/sep ids: flags first, then a tokenizer
    directory's padding and EOS tokens (tokenizer_config.json), then the
    tokenizer's tokens of BERT's and GPT-2's names, else -1."""
    result = {}
    configured = {"pad_id": info.tokens["pad_token"],
                  "sep_id": info.tokens["eos_token"]}
    for role, names in SPECIAL_ROLES.items():
        value = getattr(args, role)
        if value is None:
            if configured.get(role) is not None:
                names = (configured[role],) + names
            found = [tokenizer.token_to_id(n) for n in names] if tokenizer \
                else []
            value = next((i for i in found if i is not None), -1)
        elif value != -1 and not 0 <= value < vocab_size:
            flag = "--" + role.replace("_", "-")
            raise DataError(f"{flag} {value} lies outside the vocabulary "
                            f"[0, {vocab_size})")
        result[role] = value
    return result


def cmd_encode(args):
    if args.num_labels < 0:
        raise DataError(f"--num-labels must not be negative, found "
                        f"{args.num_labels}")
    if args.max_length is not None and args.max_length < 1:
        raise DataError(f"--max-length must be positive, found "
                        f"{args.max_length}")
    check_outputs(args.output, [("--input", args.input),
                                ("--tokenizer", args.tokenizer),
                                ("--chat-template", args.chat_template)],
                  within=userfiles.HUGGING_FACE_FILES)
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else None
    info = load_tokenizer_info(args.tokenizer) if args.tokenizer \
        else TokenizerInfo()
    template_source, template_label = info.chat_template, (
        f"the tokenizer's chat_template in "
        f"{os.path.join(info.path, 'tokenizer_config.json')}" if info.path
        else None)
    if args.chat_template:
        check_input_file(args.chat_template, "--chat-template")
        if os.path.getsize(args.chat_template) > MAX_TEMPLATE_BYTES:
            raise DataError(f"--chat-template {args.chat_template}: larger "
                            f"than {MAX_TEMPLATE_BYTES} bytes (is it a "
                            f"template?)")
        with open(args.chat_template, "rb") as f:
            # Decoded when a conversation needs it, to name that line.
            template_source = f.read(MAX_TEMPLATE_BYTES + 1)
        template_label = args.chat_template
    if not 0 < args.chat_time_limit <= MAX_CHAT_TIME_LIMIT:
        raise DataError(f"--chat-time-limit must be in (0, "
                        f"{MAX_CHAT_TIME_LIMIT:g}] seconds, found "
                        f"{args.chat_time_limit:g}")
    if not 1 <= args.chat_memory_limit <= MAX_CHAT_MEMORY_LIMIT:
        raise DataError(f"--chat-memory-limit must be in [1, "
                        f"{MAX_CHAT_MEMORY_LIMIT}] MiB, found "
                        f"{args.chat_memory_limit}")
    limits = RenderLimits(args.chat_time_limit, args.chat_memory_limit)
    chat = None  # made when the first conversation needs it
    eos_id = None
    if tokenizer is not None and info.tokens["eos_token"] is not None:
        eos_id = tokenizer.token_to_id(info.tokens["eos_token"])
        if eos_id is None:
            raise DataError(f"{args.tokenizer}: the EOS token "
                            f"{info.tokens['eos_token']!r} of "
                            f"tokenizer_config.json is not in tokenizer.json")
    if tokenizer is not None:
        vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        if args.vocab_size is not None:
            if args.vocab_size < vocab_size:
                raise DataError(f"--vocab-size {args.vocab_size} is smaller "
                                f"than the tokenizer's vocabulary of "
                                f"{vocab_size}")
            vocab_size = args.vocab_size
    elif args.vocab_size is None:
        raise DataError("pre-tokenized input needs --vocab-size when no "
                        "--tokenizer is given")
    else:
        vocab_size = args.vocab_size
    if not 1 <= vocab_size <= 2**32:
        raise DataError(f"--vocab-size must be in [1, 2^32], found "
                        f"{vocab_size}")
    specials = special_ids(args, tokenizer, vocab_size, info)
    if eos_id is None and specials["sep_id"] >= 0 and tokenizer is not None \
            and tokenizer.id_to_token(specials["sep_id"]) == "<|endoftext|>":
        eos_id = specials["sep_id"]  # GPT-2's EOS

    builder = DatasetBuilder(vocab_size, args.num_labels, args.max_length,
                             args.overlong, specials["sep_id"])

    def encode(where, text, **options):
        try:
            return tokenizer.encode(text, **options)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # plain Exceptions, or a Rust panic
            raise DataError(f"{where}: {args.tokenizer} cannot encode it: "
                            f"{e}") from None

    def encode_prompt(where, prompt, response):
        """The prompt as a text is encoded (its BOS included), the response
        and EOS after it; only the latter trained."""
        if eos_id is None:
            raise DataError(f"{where}: a prompt and response need the "
                            f"tokenizer's EOS token, which ends the response "
                            f"(tokenizer_config.json's \"eos_token\"); "
                            f"{args.tokenizer} names none")
        first = encode(where, prompt).ids
        second = encode(where, response, add_special_tokens=False).ids
        second = second + [eos_id]
        return first + second, [0] * len(first) + [1] * len(second)

    def encode_pair(where, source, target):
        """Source and target each encoded as a text, special tokens
        included; only the target trained."""
        first = encode(where, source).ids
        second = encode(where, target).ids
        if not first or not second:
            raise DataError(f"{where}: the {'source' if not first else 'target'}"
                            " encodes to no tokens (an encoder-decoder reads "
                            "both)")
        return first + second, [0] * len(first) + [1] * len(second)

    def encode_conversation(where, messages, prompt_turns=0):
        """The conversation's tokens, trained on the assistant's turns
        after the first `prompt_turns` messages."""
        nonlocal chat
        if chat is None:
            if not template_source:
                holder = (f"{args.tokenizer} has none in "
                          f"tokenizer_config.json" if info.path else
                          f"--tokenizer {args.tokenizer} is a tokenizer.json, "
                          f"which holds none")
                raise DataError(f"{where}: a conversation needs a chat "
                                f"template: {holder}; give one with "
                                f"--chat-template FILE")
            chat = ChatTemplate(where, template_source, template_label,
                                info.tokens, limits)
        text, spans = chat.assistant_spans(where, messages)
        spans = spans[sum(m["role"] == "assistant"
                          for m in messages[:prompt_turns]):]
        encoding = encode(where, text, add_special_tokens=False)
        return encoding.ids, trained_tokens(encoding.offsets, spans)

    def add_pair(where, kind, content):
        """The chosen and then the rejected answer, each after the prompt
        and trained on the answer alone (a conversation's: after the turns
        both share)."""
        if kind == "pair_ids":
            prompt, *answers = content
            rows = [(prompt + answer,
                     [0] * len(prompt) + [1] * len(answer))
                    for answer in answers]
            for key, answer in zip(("chosen", "rejected"), answers):
                if not answer:
                    raise DataError(f"{where}: the {key} answer is empty")
        elif kind == "pair_text":
            prompt, *answers = content
            rows = [encode_prompt(where, prompt, answer)
                    for answer in answers]
        else:
            *conversations, turns = content
            rows = [encode_conversation(where, messages, turns)
                    for messages in conversations]
        for key, (ids, trained) in zip(("chosen", "rejected"), rows):
            prompt_length = trained.index(1) if 1 in trained else len(ids)
            if args.max_length is not None and \
                    prompt_length >= args.max_length:
                raise DataError(
                    f"{where}: the prompt has {prompt_length} tokens, which "
                    f"leaves the {key} answer no room within --max-length "
                    f"{args.max_length}")
            builder.add(f"{where} ({key} answer)", ids, None, trained)

    def encode_chunk(chunk):
        texts = [content for _, kind, content, _ in chunk if kind == "text"]
        try:
            encodings = iter(tokenizer.encode_batch(texts) if texts else [])
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # plain Exceptions, or a Rust panic
            first = next(where for where, kind, _, _ in chunk
                         if kind == "text")
            raise DataError(f"{args.tokenizer}: cannot encode the texts from "
                            f"{first} on: {e}") from None
        for where, kind, content, label in chunk:
            trained = None
            if kind.startswith("pair_"):
                add_pair(where, kind, content)
                continue
            if kind == "text":
                ids = next(encodings).ids
            elif kind == "input_ids":
                ids = content
            elif kind == "prompt":
                ids, trained = encode_prompt(where, *content)
            elif kind == "source":
                ids, trained = encode_pair(where, *content)
            elif kind == "source_ids":
                ids = content[0] + content[1]
                trained = [0] * len(content[0]) + [1] * len(content[1])
            else:
                ids, trained = encode_conversation(where, content)
            builder.add(where, ids, label, trained)
        builder.flush()

    chunk = []
    pairs = None  # whether the file holds preference pairs: its first line
    for lineno, obj in read_jsonl(args.input):
        where = f"{args.input}:{lineno}"
        if pairs is None:
            pairs = is_pair(obj)
        elif pairs != is_pair(obj):
            raise DataError(f"{where}: " + (
                "a preference pair among examples" if is_pair(obj) else
                "an example among preference pairs") + "; a file holds one "
                "or the other")
        parse = parse_pair if pairs else parse_example
        chunk.append((where, *parse(where, obj, args.num_labels,
                                    tokenizer is not None), None)
                     if pairs else
                     (where,) + parse(where, obj, args.num_labels,
                                      tokenizer is not None))
        if len(chunk) == ENCODE_CHUNK_LINES:
            encode_chunk(chunk)
            chunk = []
    encode_chunk(chunk)
    if not builder.lengths:
        raise DataError(f"{args.input}: no examples")

    offsets, tokens, labels, trained = builder.arrays()
    with atomic_output(args.output) as f:
        tgcd.write_tgcd(f, offsets, tokens, vocab_size, labels=labels,
                        num_labels=args.num_labels, trained=trained,
                        pairs=pairs, **specials)
    lengths = builder.lengths
    labelled = f", {args.num_labels} labels" if args.num_labels else ""
    counted = plural(len(lengths) // 2, "preference pair") + \
        f" ({plural(len(lengths), 'example')}: chosen, rejected)" if pairs \
        else plural(len(lengths), 'example')
    print(f"tgc-data: wrote {args.output}: {counted}"
          f"{labelled}, {plural(len(tokens), 'token')}, length min "
          f"{min(lengths)} median {np.median(lengths):g} max {max(lengths)}, "
          f"{builder.truncated} truncated" +
          (f", {int(trained.sum())} trained (prompts, sources and other "
           f"turns are context only)" if trained is not None else ""))


# --- generate ----------------------------------------------------------------

CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"
SYLLABLES = [c + v for c in CONSONANTS for v in VOWELS]
CORPUS_WORDS = 320
LENGTH_SIGMA = 0.8


def pseudo_words(syllables, count, seed):
    """`count` distinct words of `syllables` syllables each, the same on
    every run (the seed is fixed, not the user's)."""
    total = len(SYLLABLES) ** syllables
    if count > total:
        raise DataError(f"at most {total} words of {syllables} syllables")
    words = []
    for index in random.Random(seed).sample(range(total), count):
        parts = []
        for _ in range(syllables):
            index, digit = divmod(index, len(SYLLABLES))
            parts.append(SYLLABLES[digit])
        words.append("".join(parts))
    return words


def add_markers(rng, sequence, markers):
    """Overwrites a few positions of `sequence` with markers so that one of
    them occurs strictly most often, and returns its index (the label)."""
    label = rng.randrange(len(markers))
    budget = max(1, len(sequence) // 10)
    counts = [0] * len(markers)
    counts[label] = budget
    for _ in range(budget - 1):
        other = rng.randrange(len(markers))
        if other != label and counts[other] + 1 < budget:
            counts[other] += 1
    placed = [markers[k] for k, n in enumerate(counts) for _ in range(n)]
    for position, marker in zip(rng.sample(range(len(sequence)), len(placed)),
                                placed):
        sequence[position] = marker
    return label


def majority_marker(sequence, markers):
    """The label as a function of the example: its most frequent marker."""
    counts = [sequence.count(m) for m in markers]
    return counts.index(max(counts))


def cmd_generate(args):
    if not 1 <= args.examples <= MAX_GENERATED_EXAMPLES:
        raise DataError(f"--examples must be in [1, {MAX_GENERATED_EXAMPLES}]"
                        f", found {args.examples}")
    if not 0 < args.median < math.inf:
        raise DataError(f"--median must be positive, found {args.median}")
    if not 2 <= args.max <= MAX_GENERATED_LENGTH:
        raise DataError(f"--max must be in [2, {MAX_GENERATED_LENGTH}], "
                        f"found {args.max}")
    check_outputs(args.output, [])
    if args.num_labels < 0:
        raise DataError(f"--num-labels must not be negative, found "
                        f"{args.num_labels}")
    if args.pre_tokenized != (args.vocab_size is not None):
        raise DataError("--pre-tokenized and --vocab-size go together")
    if args.pre_tokenized and args.vocab_size <= args.num_labels:
        raise DataError(f"--vocab-size must exceed --num-labels "
                        f"({args.num_labels}), found {args.vocab_size}")

    rng = random.Random(args.seed)
    if args.pre_tokenized:
        # Markers are the top ids; the rest are drawn uniformly.
        content = args.vocab_size - args.num_labels
        markers = list(range(content, args.vocab_size))

        def draw(n):
            return [rng.randrange(content) for _ in range(n)]
    else:
        words = pseudo_words(2, CORPUS_WORDS, seed=1)
        markers = pseudo_words(3, args.num_labels, seed=2)
        cumulative = list(itertools.accumulate(
            1.0 / rank for rank in range(1, len(words) + 1)))

        def draw(n):
            return rng.choices(words, cum_weights=cumulative, k=n)

    lengths = []
    with atomic_output(args.output, "w") as f:
        for _ in range(args.examples):
            length = rng.lognormvariate(math.log(args.median), LENGTH_SIGMA)
            length = min(max(round(length), 2), args.max)
            sequence = draw(length)
            example = {}
            if args.num_labels:
                label = add_markers(rng, sequence, markers)
                assert majority_marker(sequence, markers) == label
                example["label"] = label
            if args.pre_tokenized:
                example = {"input_ids": sequence, **example}
            else:
                example = {"text": " ".join(sequence), **example}
            f.write(json.dumps(example) + "\n")
            lengths.append(length)
    unit = "tokens" if args.pre_tokenized else "words"
    labelled = f", {args.num_labels} labels" if args.num_labels else ""
    print(f"tgc-data: wrote {args.output}: {plural(args.examples, 'example')}"
          f"{labelled}, length in {unit} min {min(lengths)} median "
          f"{np.median(lengths):g} max {max(lengths)}")


# --- command line ------------------------------------------------------------

def parse_args(argv):
    parser = Parser(
        prog="tgc-data", description="Prepares variable-length training data "
        "(.tgcd files) ahead of training.")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("train-tokenizer",
                            help="train a tokenizer on JSONL texts")
    p.add_argument("--corpus", action="append", required=True,
                   help="JSONL file with a \"text\" field per line "
                   "(repeatable)")
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--kind", choices=("wordpiece", "bpe"), required=True)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(run=cmd_train_tokenizer)

    p = commands.add_parser("encode", help="encode JSONL examples as .tgcd")
    p.add_argument("--input", required=True, help="JSONL examples")
    p.add_argument("-o", "--output", required=True, help="the .tgcd file")
    p.add_argument("--tokenizer", help="a Hugging Face tokenizer.json, or a "
                   "model directory with tokenizer.json and "
                   "tokenizer_config.json (optional when every line has "
                   "\"input_ids\")")
    p.add_argument("--chat-template", help="a Jinja chat template for "
                   "\"messages\" lines (default: the tokenizer directory's)")
    p.add_argument("--num-labels", type=int, default=0,
                   help="classes of the \"label\" field (0: no labels)")
    p.add_argument("--max-length", type=int,
                   help="the longest example, in tokens")
    p.add_argument("--overlong", choices=("truncate", "reject"),
                   default="truncate",
                   help="what to do with examples over --max-length")
    p.add_argument("--vocab-size", type=int,
                   help="the vocabulary (required without --tokenizer; at "
                   "least the tokenizer's with one)")
    for role in SPECIAL_ROLES:
        p.add_argument("--" + role.replace("_", "-"), type=int,
                       help="overrides the tokenizer's (-1: none)")
    p.add_argument("--chat-time-limit", type=float, default=CHAT_TIME_LIMIT,
                   metavar="SECONDS", help="the longest a chat template may "
                   "take on one conversation (default: %(default)g)")
    p.add_argument("--chat-memory-limit", type=int,
                   default=CHAT_MEMORY_LIMIT, metavar="MIB",
                   help="the most memory a chat template may take on one "
                   "conversation (default: %(default)d)")
    p.set_defaults(run=cmd_encode)

    p = commands.add_parser("generate", help="write a synthetic JSONL corpus")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--examples", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--median", type=float, default=80,
                   help="median length (words, or tokens with "
                   "--pre-tokenized)")
    p.add_argument("--max", type=int, default=512, help="longest example")
    p.add_argument("--num-labels", type=int, default=0)
    p.add_argument("--pre-tokenized", action="store_true",
                   help="write \"input_ids\" instead of \"text\"")
    p.add_argument("--vocab-size", type=int,
                   help="ids are drawn from [0, V) (with --pre-tokenized)")
    p.set_defaults(run=cmd_generate)
    return parser.parse_args(argv)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line and status 1 like the rest."""

    def error(self, message):
        print(f"tgc-data: error: {message} (see --help)", file=sys.stderr)
        sys.exit(1)


def reopen_closed_standard_streams():
    """A closed descriptor 0, 1 or 2 gets /dev/null, so that no output
    file takes its number."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else
                             os.O_WRONLY)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    for fd, name, mode in ((1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))


def on_terminate(number, frame):
    """SIGTERM unwinds like Ctrl-C: the output's temporary file is removed
    on the way out (atomic_output)."""
    raise SystemExit(128 + number)


def main(argv=None):
    reopen_closed_standard_streams()
    signal.signal(signal.SIGTERM, on_terminate)
    args = parse_args(argv)
    try:
        args.run(args)
    except (DataError, tgcd.TgcdError, userfiles.UserFileError) as e:
        print(f"tgc-data: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"tgc-data: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except MemoryError:
        print("tgc-data: error: out of memory", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # (The output's temporary file is already gone: atomic_output.)
        print("tgc-data: interrupted; nothing was written", file=sys.stderr)
        return 128 + signal.SIGINT
    return 0


if __name__ == "__main__":
    sys.exit(main())
