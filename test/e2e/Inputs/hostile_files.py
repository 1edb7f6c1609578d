"""Writes hostile variants of tgc's input files, each built the way an
attacker (or a damaged disk) would: valid framing around contents that lie.

  hostile_files.py safetensors CKPT OUTDIR   variants of a checkpoint
  hostile_files.py batch OUTDIR              a batch file whose shape overflows
  hostile_files.py tgx TGX FBS OUTDIR        variants of an executable
  hostile_files.py quantized TGX KERNEL FBS OUTDIR
                                             block sizes of an update of
                                             8-bit or 4-bit state

The .tgx variants go through flatc (JSON and back) and get a fresh checksum
trailer (FNV-1a 64 of the program, as format/include/tgc/format/TGXFile.h
defines it), except `reordered-stale.tgx`, which keeps the original one.
"""
import json
import os
import struct
import subprocess
import sys


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_safetensors(path, header, body):
    text = json.dumps(header, separators=(",", ":")).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + body)


def safetensors_variants(ckpt, out):
    header, body = read_safetensors(ckpt)
    meta = header["__metadata__"]

    def with_meta(name, **changes):
        h = json.loads(json.dumps(header))
        h["__metadata__"].update(changes)
        write_safetensors(os.path.join(out, name), h, body)

    with_meta("step-negative.safetensors", **{"tgc.step": "-5"})
    with_meta("step-int64-min.safetensors",
              **{"tgc.step": "-9223372036854775808"})
    with_meta("step-huge.safetensors", **{"tgc.step": "9223372036854775807"})
    # The optimizer's own counter, negative.
    h = json.loads(json.dumps(header))
    begin, _ = h["optimizer.step"]["data_offsets"]
    b = bytearray(body)
    b[begin:begin + 8] = struct.pack("<q", -3)
    write_safetensors(os.path.join(out, "counter-negative.safetensors"), h,
                      bytes(b))
    # A NaN and an infinity in a weight.
    for name, value in (("nan", float("nan")), ("inf", float("inf"))):
        begin, _ = header["layers.0.weight"]["data_offsets"]
        b = bytearray(body)
        b[begin + 4:begin + 8] = struct.pack("<f", value)
        write_safetensors(os.path.join(out, f"weight-{name}.safetensors"),
                          header, bytes(b))
    # Two tensors over the same bytes; bytes no tensor owns.
    h = json.loads(json.dumps(header))
    h["layers.0.bias"]["data_offsets"] = h["layers.0.weight"]["data_offsets"][:1] + [
        h["layers.0.weight"]["data_offsets"][0] + 12]
    write_safetensors(os.path.join(out, "overlap.safetensors"), h, body)
    write_safetensors(os.path.join(out, "trailing.safetensors"), header,
                      body + b"\0" * 64)
    # Shapes and offsets that are not plain integers.
    text = json.dumps(header, separators=(",", ":"))
    for name, old, new in (("fraction", '"shape":[3,4]', '"shape":[3.5,4]'),
                           ("negative", '"shape":[3,4]', '"shape":[-3,-4]'),
                           ("exponent", '"shape":[3,4]', '"shape":[3e0,4]')):
        assert old in text, old
        t = text.replace(old, new, 1).encode()
        open(os.path.join(out, f"shape-{name}.safetensors"), "wb").write(
            struct.pack("<Q", len(t)) + t + body)
    del meta


def batch_variant(out):
    # [2^62, 2^2] i64: 2^64 * 8 bytes wraps to 0 in unchecked arithmetic,
    # matching the empty data section.
    header = {"inputs": {"dtype": "F32", "shape": [4611686018427387904, 4],
                         "data_offsets": [0, 0]},
              "targets": {"dtype": "I64", "shape": [4611686018427387904],
                          "data_offsets": [0, 0]}}
    write_safetensors(os.path.join(out, "batch-overflow.safetensors"), header,
                      b"")
    # Three good batches for the 4-3 MLP with batch 2.
    inputs = struct.pack("<24f", *[0.1 * i for i in range(24)])
    targets = struct.pack("<6q", 0, 1, 2, 0, 1, 2)
    header = {"inputs": {"dtype": "F32", "shape": [3, 2, 4],
                         "data_offsets": [0, len(inputs)]},
              "targets": {"dtype": "I64", "shape": [3, 2],
                          "data_offsets": [len(inputs),
                                           len(inputs) + len(targets)]}}
    write_safetensors(os.path.join(out, "batch-good.safetensors"), header,
                      inputs + targets)


def fnv1a(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def with_trailer(program):
    return program + b"TGXC" + b"\0" * 4 + struct.pack("<Q", fnv1a(program))


def tgx_editor(tgx, fbs, out):
    """`emit(name, change)`: writes OUT/NAME.tgx, `tgx` changed by `change`
    (a function of its JSON form)."""
    work = os.path.join(out, "json")
    os.makedirs(work, exist_ok=True)
    subprocess.run(["flatc", "--json", "--raw-binary", "--strict-json",
                    "--defaults-json", "-o", work, fbs, "--", tgx], check=True)
    base = os.path.splitext(os.path.basename(tgx))[0]
    program = json.load(open(os.path.join(work, base + ".json")))
    original = open(tgx, "rb").read()

    def emit(name, change, stale_trailer=False):
        p = json.loads(json.dumps(program))
        change(p)
        path = os.path.join(work, name + ".json")
        json.dump(p, open(path, "w"))
        subprocess.run(["flatc", "--binary", "-o", work, fbs, path],
                       check=True)
        body = open(os.path.join(work, name + ".tgx"), "rb").read()
        data = (body + original[-16:]) if stale_trailer else with_trailer(body)
        open(os.path.join(out, name + ".tgx"), "wb").write(data)
    return emit, original


def first(p, kernel):
    return next(i for i in p["instructions"] if i["kernel"] == kernel)


def set_attr(inst, name, value):
    for a in inst["attrs"]:
        if a["name"] == name:
            a["int_value"] = value


def quantized_variants(tgx, kernel, fbs, out):
    """Block sizes the kernels of 8-bit and 4-bit state cannot take."""
    emit, _ = tgx_editor(tgx, fbs, out)
    name = kernel.replace("tg.", "").replace("_", "-")
    emit(name + "-block-100", lambda p: set_attr(first(p, kernel),
                                                 "block_size", 100))
    emit(name + "-block-1", lambda p: set_attr(first(p, kernel),
                                               "block_size", 1))


def tgx_variants(tgx, fbs, out):
    emit, original = tgx_editor(tgx, fbs, out)

    def misalign(p):
        p["tensors"][2]["offset"] += 2  # a f32 weight at an odd offset

    def huge_alignment(p):
        p["alignment"] = 1 << 62

    def reorder(p):
        ins = p["instructions"]
        ins[0], ins[1] = ins[1], ins[0]

    def metadata_name(p):
        for t in p["tensors"]:
            if t["name"] == "layers.0.bias":
                t["name"] = "__metadata__"

    def duplicate_name(p):
        p["tensors"][3]["name"] = p["tensors"][2]["name"]

    def huge_arena(p):
        p["arena_bytes"] = 1 << 47
        p["peak_live_bytes"] = 1 << 47

    def attr_unknown(p):
        first(p, "tg.matmul")["attrs"].append(
            {"name": "transpose_lsh", "kind": "Bool", "int_value": 1})

    def attr_mistyped(p):
        first(p, "tg.fill")["attrs"][0]["kind"] = "Int"

    def attr_missing(p):
        first(p, "tg.fill")["attrs"] = []

    def attrs_defaulted(p):
        # Every attribute of the AdamW updates has an ODS default.
        for i in p["instructions"]:
            if i["kernel"] == "tg.adamw_update":
                i["attrs"] = []

    def rounding_seed_f32(p):
        set_attr(first(p, "tg.adamw_update"), "rounding_seed", 5)

    def part_nearest(p):
        # The step (an i64 scalar) passed as a part number to an update
        # that rounds to nearest.
        i = first(p, "tg.adamw_update")
        i["operands"].insert(6, i["operands"][5])

    def operand_extra(p):
        i = first(p, "tg.sum_to")
        i["operands"].append(i["operands"][0])

    emit("attr-unknown", attr_unknown)
    emit("attr-mistyped", attr_mistyped)
    emit("attr-missing", attr_missing)
    emit("attrs-defaulted", attrs_defaulted)
    emit("operand-extra", operand_extra)
    emit("rounding-seed-f32", rounding_seed_f32)
    emit("part-nearest", part_nearest)
    emit("misaligned", misalign)
    emit("alignment-huge", huge_alignment)
    emit("reordered-stale", reorder, stale_trailer=True)
    emit("metadata-name", metadata_name)
    emit("duplicate-name", duplicate_name)
    emit("arena-huge", huge_arena)
    emit("roundtrip", lambda p: None)
    # The program without its trailer (an executable of format version 1).
    open(os.path.join(out, "no-trailer.tgx"), "wb").write(original[:-16])


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "safetensors":
        os.makedirs(sys.argv[3], exist_ok=True)
        safetensors_variants(sys.argv[2], sys.argv[3])
    elif kind == "batch":
        os.makedirs(sys.argv[2], exist_ok=True)
        batch_variant(sys.argv[2])
    elif kind == "quantized":
        quantized_variants(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif kind == "tgx":
        os.makedirs(sys.argv[4], exist_ok=True)
        tgx_variants(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown kind " + kind)
