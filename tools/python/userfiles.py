"""userfiles: what a tgc script may write, and where.

The Python side of support/include/tgc/Support/UserFiles.h, imported by
tgc-data.py and tgc-import.py so that both keep one rule: no output names a
file the run reads, nor another output. A file is the same file by device
and inode when both paths exist (whatever link or hard link names it), and
by resolved path (the directory's realpath, then the name) when neither
does yet. An input directory (a tokenizer or Hugging Face model directory)
stands for every entry directly inside it and for the files the tool would
read there that are not there yet (a tokenizer_config.json to come is as
much the tokenizer's as one that exists); a tool's own scripts and the
programs it runs are inputs too.

Outputs are written to a temporary file beside the destination and renamed
over it (os.replace), so a failed or interrupted run leaves the previous
file as it was and no partial one. Only the standard library is used.
"""
import contextlib
import json
import os
import stat
import sys
import tempfile

# What a tool may read in a Hugging Face model directory (a tokenizer
# directory is one too), present or not (transformers', tokenizers' and
# PEFT's names): an output aimed at one of them would change what the
# directory is. A weights index adds the shards it names.
HUGGING_FACE_FILES = (
    "config.json", "generation_config.json", "model.safetensors",
    "model.safetensors.index.json", "pytorch_model.bin",
    "pytorch_model.bin.index.json", "adapter_config.json",
    "adapter_model.safetensors", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model",
    "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json",
    "preprocessor_config.json")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# An index larger than this is not read for its shard names (the tool that
# reads it refuses it with its own error).
MAX_INDEX_BYTES = 64 << 20
# A JSON configuration (config.json), as the C++ readers' limit
# (support/include/tgc/Support/ReadFile.h, kMaxConfigFileBytes).
MAX_CONFIG_BYTES = 64 << 20


def file_kind(path):
    """What `path` is when it exists but is not a regular file ("a pipe
    (FIFO)", "a device", ...), in the C++ readers' words; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class UserFileError(Exception):
    """A request that would cost the user a file, or a write that failed:
    printed by the tool as its one error line."""


def _file_key(path):
    """(device, inode) of an existing file, else ("path", resolved path)
    with the directory's links and `..` followed, as fileKeyOf in
    UserFiles.h. A file is replaced by renaming over its name, so the name
    itself is not followed when it does not resolve to an existing file."""
    try:
        info = os.stat(path)
        return (info.st_dev, info.st_ino)
    except (OSError, ValueError):
        pass
    directory, name = os.path.split(path)
    return ("path", os.path.join(os.path.realpath(directory or "."), name))


class NamedFile:
    """A file a tool reads or writes, and the option that names it
    ("-o", "--tokenizer", "the Python interpreter"). An input that is a
    directory stands for every entry directly inside it and for the names
    of `within` there, present or not (the reader looks for them), and for
    the shards a weights index there names."""

    def __init__(self, option, path, within=()):
        self.option = option
        self.path = path
        self.within = tuple(within)


def _expand(file):
    """(key, member) for each file `file` stands for; member is "" for the
    named path itself, else the path of the file inside the directory."""
    if not os.path.isdir(file.path):
        return [(_file_key(file.path), "")]
    names = set(file.within)
    try:
        names.update(os.listdir(file.path))
    except OSError:
        pass
    for index in INDEX_FILES:
        if index in names:
            names.update(_index_shards(os.path.join(file.path, index)))
    members = [os.path.join(file.path, name) for name in sorted(names)]
    return [(_file_key(member), member) for member in members]


def _index_shards(path):
    """The file names a weights index maps tensors to; nothing when it is
    not a small regular file of JSON (its reader says what is wrong)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INDEX_BYTES:
            return []
        with open(path, "rb") as f:
            weight_map = json.loads(f.read()).get("weight_map")
    except (OSError, ValueError, RecursionError, AttributeError):
        return []
    if not isinstance(weight_map, dict):
        return []
    return {name for name in weight_map.values()
            if isinstance(name, str) and name and "\0" not in name}


def program_files(script, modules=()):
    """A script's own files as inputs: the script, the modules of scripts/
    it imports (names, beside it) and the Python interpreter running it."""
    here = os.path.dirname(os.path.abspath(script))
    files = [NamedFile(f"the script {os.path.basename(script)}",
                       os.path.abspath(script))]
    for module in modules + ("userfiles.py",):
        files.append(NamedFile(f"the script {module}",
                               os.path.join(here, module)))
    if sys.executable:
        files.append(NamedFile("the Python interpreter", sys.executable))
    return files


def check_distinct_files(inputs, outputs):
    """Raises UserFileError when an output (a NamedFile naming a file) is
    a file of one of `inputs` (NamedFiles, directories expanded) or another
    output. A named input counts when it exists; a file a reader looks for
    in an input directory counts before it exists too. Empty paths, None
    and "-" (a standard stream) are skipped. The message names the two
    options, and the file when it lies inside a directory."""
    def skipped(file):
        return not file.path or file.path == "-"
    read = [(file, key, member) for file in inputs if not skipped(file)
            for key, member in _expand(file)]
    written = []
    for output in outputs:
        if skipped(output):
            continue
        key = _file_key(output.path)
        for source, source_key, member in read:
            if member == "" and source_key[0] == "path":
                continue  # a named input that is not there is not lost
            if key != source_key:
                continue
            if member:
                named = f"a file of {source.option} '{source.path}'"
            else:
                named = source.option + ("" if source.path == output.path
                                         else f" '{source.path}'")
            raise UserFileError(f"{output.option} '{output.path}' would "
                                f"overwrite {named}; write it to another "
                                f"file")
        for other, other_key in written:
            if key == other_key:
                raise UserFileError(f"{other.option} and {output.option} "
                                    f"name the same file '{output.path}'; "
                                    f"each output needs its own")
        written.append((output, key))


def check_output_path(option, path):
    """An output must be a regular file or nothing yet, in a directory that
    exists: a directory or a device is not replaced by a rename."""
    if os.path.isdir(path):
        raise UserFileError(f"{option} {path} is a directory; name the file "
                            "to write")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UserFileError(f"cannot write {path}: there is no directory "
                            f"{directory}")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise UserFileError(f"refusing to replace {path}: it is not a file")


@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """A file object that becomes `path` only when the block succeeds; on
    any failure (an exception, a file-size limit, a full disk) the
    temporary file is removed and `path` keeps its previous bytes."""
    try:
        fd, temporary = tempfile.mkstemp(
            dir=os.path.dirname(os.path.abspath(path)),
            prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as e:
        raise UserFileError(f"cannot write {path}: {e.strerror}") from None
    try:
        try:
            encoding = None if "b" in mode else "utf-8"
            with os.fdopen(fd, mode, encoding=encoding) as f:
                yield f
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
            os.replace(temporary, path)
        except OSError as e:
            # CPython ignores SIGXFSZ: a file-size limit is EFBIG here.
            kept = "it was left as it was" if os.path.lexists(path) else \
                "nothing was written"
            raise UserFileError(f"cannot write {path}: "
                                f"{e.strerror or e}; {kept}") from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def atomic_write(path, data):
    """Writes `data` (bytes, or text as UTF-8) as `path`, atomically."""
    with atomic_output(path) as f:
        f.write(data if isinstance(data, bytes) else data.encode())
