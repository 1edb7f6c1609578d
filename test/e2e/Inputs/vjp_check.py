"""Checks the gradient tgc computes for every differentiable tg op against
central finite differences of the loss, end to end: the VJP rule
(lib/Dialect/TG/IR/TGGradients.cpp), tg-autodiff, the lowering and the CPU
kernels.

For each case a one-op model `loss = sum(op(params) * C)` (C a fixed random
constant, so every output element matters differently) is compiled with SGD
at lr 1 and no weight decay: one step moves each parameter by exactly minus
its gradient, read back from the saved checkpoint. The finite differences
come from running the same executable on perturbed parameters and reading
the loss of that step.

Usage: vjp_check.py BIN_DIR WORK_DIR
Prints one line per case and a summary; exits non-zero on a mismatch.
"""
import json
import os
import random
import struct
import subprocess
import sys
from array import array

BIN, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
rng = random.Random(42)


# --- safetensors, f32 parameters only ------------------------------------

def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] != "F32":
            continue
        b, end = e["data_offsets"]
        values = array("f")
        values.frombytes(data[8 + n + b:8 + n + end])
        out[name] = (e["shape"], values)
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        raw = values.tobytes()
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(*args):
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout


# --- the cases ------------------------------------------------------------

def ttype(shape, elt="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elt + ">"


def dense(shape, values, elt="f32"):
    if elt == "i1":
        items = ["true" if v else "false" for v in values]
    elif elt.startswith("i"):
        items = [str(int(v)) for v in values]
    else:
        items = [f"{v:.6f}" for v in values]

    def nest(dims, flat):
        if not dims:
            return flat[0]
        step = len(flat) // dims[0]
        return "[" + ", ".join(nest(dims[1:], flat[i * step:(i + 1) * step])
                               for i in range(dims[0])) + "]"
    return f"dense<{nest(shape, items)}> : {ttype(shape, elt)}"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


NORMAL = "#tg.init<normal(0.0, 1.0)>"
POSITIVE = "#tg.init<uniform(0.5, 2.0)>"


def case(name, params, body, result_shape, direct_loss=False, kinks=False):
    """params: [(name, shape, init)]; body: lines using %p0.. and ending in
    %r of result_shape (or the scalar loss %r when direct_loss)."""
    return dict(name=name, params=params, body=body, shape=result_shape,
                direct=direct_loss, kinks=kinks)


def unary(op, init=NORMAL, kinks=False):
    return case(op, [("x", [3, 4], init)],
                [f"%r = tg.{op} %p0 : {ttype([3, 4])}"], [3, 4], kinks=kinks)


def binary(op, a, b, out, init_b=NORMAL):
    return case(f"{op} {a} {b}", [("a", a, NORMAL), ("b", b, init_b)],
                [f"%r = tg.{op} %p0, %p1 : ({ttype(a)}, {ttype(b)}) -> "
                 f"{ttype(out)}"], out)


def matmul(a, b, out, ta=False, tb=False):
    attrs = []
    if ta:
        attrs.append("transpose_lhs = true")
    if tb:
        attrs.append("transpose_rhs = true")
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    return case(f"matmul {a} {b}{' ta' if ta else ''}{' tb' if tb else ''}",
                [("a", a, NORMAL), ("b", b, NORMAL)],
                [f"%r = tg.matmul %p0, %p1{attr} : ({ttype(a)}, {ttype(b)}) "
                 f"-> {ttype(out)}"], out)


cond = [rng.random() < 0.5 for _ in range(12)]
targets = [rng.randrange(6) for _ in range(4)]
targets[2] = -100
CASES = [
    matmul([3, 4], [4, 5], [3, 5]),
    matmul([4, 3], [5, 4], [3, 5], ta=True, tb=True),
    matmul([2, 3, 4], [4, 5], [2, 3, 5]),
    matmul([2, 3, 4], [5, 4], [2, 3, 5], tb=True),
    matmul([2, 1, 3, 4], [3, 4, 2], [2, 3, 3, 2]),
    case("linear", [("x", [2, 3, 4], NORMAL), ("w", [4, 5], NORMAL),
                    ("b", [5], NORMAL)],
         [f"%r = tg.linear %p0, %p1, %p2 : ({ttype([2, 3, 4])}, "
          f"{ttype([4, 5])}, {ttype([5])}) -> {ttype([2, 3, 5])}"], [2, 3, 5]),
    case("linear gelu", [("x", [2, 3, 4], NORMAL), ("w", [4, 5], NORMAL),
                         ("b", [5], NORMAL)],
         [f"%r, %pre = tg.linear %p0, %p1, %p2 {{gelu = true}} : "
          f"({ttype([2, 3, 4])}, {ttype([4, 5])}, {ttype([5])}) -> "
          f"({ttype([2, 3, 5])}, {ttype([2, 3, 5])})"], [2, 3, 5]),
    binary("add", [3, 4], [4], [3, 4]),
    binary("sub", [3, 1], [1, 4], [3, 4]),
    binary("mul", [3, 4], [3, 1], [3, 4]),
    binary("div", [3, 4], [4], [3, 4], init_b=POSITIVE),
    binary("maximum", [3, 4], [4], [3, 4]),
    binary("minimum", [3, 1], [3, 4], [3, 4]),
    case("maximum ties", [("a", [3, 4], NORMAL)],
         [f"%z = tg.fill 0.0 : {ttype([3, 4])}",
          f"%h = tg.maximum %p0, %z : ({ttype([3, 4])}, {ttype([3, 4])}) -> "
          f"{ttype([3, 4])}",
          f"%r = tg.maximum %h, %h : ({ttype([3, 4])}, {ttype([3, 4])}) -> "
          f"{ttype([3, 4])}"], [3, 4], kinks=True),
    unary("neg"), unary("exp"), unary("log", POSITIVE), unary("sqrt", POSITIVE),
    unary("rsqrt", POSITIVE), unary("tanh"), unary("relu", kinks=True),
    unary("sigmoid"), unary("silu"), unary("softplus"),
    unary("gelu"),
    case("swiglu", [("g", [3, 4], NORMAL), ("u", [3, 4], NORMAL)],
         [f"%r = tg.swiglu %p0, %p1 : {ttype([3, 4])}"], [3, 4]),
    case("gelu exact", [("x", [3, 4], NORMAL)],
         [f"%r = tg.gelu %p0 {{exact = true}} : {ttype([3, 4])}"], [3, 4]),
    case("where", [("a", [3, 4], NORMAL), ("b", [4], NORMAL)],
         [f"%c = tg.constant {dense([3, 4], cond, 'i1')}",
          f"%r = tg.where %c, %p0, %p1 : ({ttype([3, 4], 'i1')}, "
          f"{ttype([3, 4])}, {ttype([4])}) -> {ttype([3, 4])}"], [3, 4]),
    case("cumsum axis 1", [("x", [3, 5], NORMAL)],
         [f"%r = tg.cumsum %p0 {{axis = 1 : i64}} : {ttype([3, 5])}"], [3, 5]),
    case("cumsum reverse axis 0", [("x", [3, 5], NORMAL)],
         [f"%r = tg.cumsum %p0 {{axis = 0 : i64, reverse = true}} : "
          f"{ttype([3, 5])}"], [3, 5]),
    case("gather (repeated indices)", [("x", [2, 3, 5], NORMAL)],
         [f"%i = tg.constant {dense([3, 4], [4, 0, 0, 2, 1, 1, 3, 0, 2, 4, 4, 4], 'i64')}",
          f"%r = tg.gather %p0, %i {{axis = 2 : i64}} : ({ttype([2, 3, 5])}, "
          f"{ttype([3, 4], 'i64')}) -> {ttype([2, 3, 4])}"], [2, 3, 4]),
    case("expert_linear (an expert without rows)",
         [("x", [5, 3], NORMAL), ("w0", [4, 3], NORMAL),
          ("w1", [4, 3], NORMAL), ("w2", [4, 3], NORMAL)],
         [f"%o = tg.constant {dense([4], [0, 2, 2, 5], 'i64')}",
          f"%r = tg.expert_linear %p0, %o, %p1, %p2, %p3 "
          f"{{transpose_weight = true}} : ({ttype([5, 3])}, "
          f"{ttype([4], 'i64')}, {ttype([4, 3])}, {ttype([4, 3])}, "
          f"{ttype([4, 3])}) -> {ttype([5, 4])}"], [5, 4]),
    case("expert_linear [K, N] weights",
         [("x", [5, 3], NORMAL), ("w0", [3, 4], NORMAL),
          ("w1", [3, 4], NORMAL)],
         [f"%o = tg.constant {dense([3], [0, 1, 5], 'i64')}",
          f"%r = tg.expert_linear %p0, %o, %p1, %p2 : ({ttype([5, 3])}, "
          f"{ttype([3], 'i64')}, {ttype([3, 4])}, {ttype([3, 4])}) -> "
          f"{ttype([5, 4])}"], [5, 4]),
    case("softmax axis 1", [("x", [3, 5], NORMAL)],
         [f"%r = tg.softmax %p0 {{axis = 1 : i64}} : {ttype([3, 5])}"], [3, 5]),
    case("softmax axis 0", [("x", [3, 5], NORMAL)],
         [f"%r = tg.softmax %p0 {{axis = 0 : i64}} : {ttype([3, 5])}"], [3, 5]),
    case("layer_norm", [("x", [3, 8], NORMAL), ("w", [8], NORMAL),
                        ("b", [8], NORMAL)],
         [f"%r = tg.layer_norm %p0, %p1, %p2 : ({ttype([3, 8])}, {ttype([8])}, "
          f"{ttype([8])}) -> {ttype([3, 8])}"], [3, 8]),
    case("rms_norm", [("x", [3, 8], NORMAL), ("w", [8], NORMAL)],
         [f"%r = tg.rms_norm %p0, %p1 {{epsilon = 1.0e-6}} : ({ttype([3, 8])}, "
          f"{ttype([8])}) -> {ttype([3, 8])}"], [3, 8]),
    case("rope", [("x", [2, 5, 6], NORMAL)],
         [f"%f = tg.constant {dense([3], [1.0, 0.1, 0.01], 'f32')}",
          f"%r = tg.rope %p0, %f : ({ttype([2, 5, 6])}, {ttype([3])}) -> "
          f"{ttype([2, 5, 6])}"], [2, 5, 6]),
    case("embedding", [("table", [10, 4], NORMAL)],
         [f"%i = tg.constant {dense([2, 3], [1, 7, 1, 0, 9, 7], 'i64')}",
          f"%r = tg.embedding %p0, %i : ({ttype([10, 4])}, {ttype([2, 3], 'i64')}) "
          f"-> {ttype([2, 3, 4])}"], [2, 3, 4]),
    case("attention causal", [("q", [1, 2, 4, 8], NORMAL),
                              ("k", [1, 2, 4, 8], NORMAL),
                              ("v", [1, 2, 4, 8], NORMAL)],
         [f"%r = tg.attention %p0, %p1, %p2 {{causal = true}} : "
          f"({ttype([1, 2, 4, 8])}, {ttype([1, 2, 4, 8])}, {ttype([1, 2, 4, 8])}) "
          f"-> {ttype([1, 2, 4, 8])}"], [1, 2, 4, 8]),
    case("attention sliding window", [("q", [1, 2, 6, 4], NORMAL),
                                      ("k", [1, 1, 6, 4], NORMAL),
                                      ("v", [1, 1, 6, 4], NORMAL)],
         [f"%r = tg.attention %p0, %p1, %p2 {{causal = true, window = 2}} : "
          f"({ttype([1, 2, 6, 4])}, {ttype([1, 1, 6, 4])}, {ttype([1, 1, 6, 4])}) "
          f"-> {ttype([1, 2, 6, 4])}"], [1, 2, 6, 4]),
    case("attention soft-capped", [("q", [1, 2, 4, 8], NORMAL),
                                   ("k", [1, 2, 4, 8], NORMAL),
                                   ("v", [1, 2, 4, 8], NORMAL)],
         [f"%r = tg.attention %p0, %p1, %p2 {{causal = true, scale = 1.0 : f64, "
          f"softcap = 1.5 : f64}} : ({ttype([1, 2, 4, 8])}, {ttype([1, 2, 4, 8])}, "
          f"{ttype([1, 2, 4, 8])}) -> {ttype([1, 2, 4, 8])}"], [1, 2, 4, 8]),
    case("attention scaled", [("q", [2, 3, 4], NORMAL),
                              ("k", [2, 5, 4], NORMAL),
                              ("v", [2, 5, 6], NORMAL)],
         [f"%r = tg.attention %p0, %p1, %p2 {{scale = 0.3 : f64}} : "
          f"({ttype([2, 3, 4])}, {ttype([2, 5, 4])}, {ttype([2, 5, 6])}) "
          f"-> {ttype([2, 3, 6])}"], [2, 3, 6]),
    case("cross_entropy", [("logits", [4, 6], NORMAL)],
         [f"%t = tg.constant {dense([4], targets, 'i64')}",
          f"%r = tg.cross_entropy %p0, %t : ({ttype([4, 6])}, "
          f"{ttype([4], 'i64')}) -> tensor<f32>"], [], direct_loss=True),
    case("cross_entropy soft-capped", [("logits", [4, 6], NORMAL)],
         [f"%t = tg.constant {dense([4], targets, 'i64')}",
          f"%r = tg.cross_entropy %p0, %t {{softcap = 0.8 : f64}} : "
          f"({ttype([4, 6])}, {ttype([4], 'i64')}) -> tensor<f32>"], [],
         direct_loss=True),
    case("reshape", [("x", [2, 6], NORMAL)],
         [f"%r = tg.reshape %p0 : {ttype([2, 6])} -> {ttype([3, 4])}"], [3, 4]),
    case("transpose", [("x", [2, 3, 4], NORMAL)],
         [f"%r = tg.transpose %p0 {{permutation = array<i64: 2, 0, 1>}} : "
          f"{ttype([2, 3, 4])} -> {ttype([4, 2, 3])}"], [4, 2, 3]),
    case("slice", [("x", [5, 6], NORMAL)],
         [f"%r = tg.slice %p0 {{offsets = array<i64: 1, 2>}} : "
          f"{ttype([5, 6])} -> {ttype([3, 3])}"], [3, 3]),
    case("split", [("x", [4, 6], NORMAL)],
         [f"%a, %b, %c = tg.split %p0 {{axis = 1 : i64}} : {ttype([4, 6])} -> "
          f"{ttype([4, 1])}, {ttype([4, 2])}, {ttype([4, 3])}",
          f"%r = tg.mul %a, %c : ({ttype([4, 1])}, {ttype([4, 3])}) -> "
          f"{ttype([4, 3])}"], [4, 3]),
    case("concat", [("a", [2, 3], NORMAL), ("b", [2, 2], NORMAL)],
         [f"%r = tg.concat %p0, %p1 {{axis = 1 : i64}} : ({ttype([2, 3])}, "
          f"{ttype([2, 2])}) -> {ttype([2, 5])}"], [2, 5]),
    case("reduce_sum", [("x", [2, 3, 4], NORMAL)],
         [f"%r = tg.reduce_sum %p0 {{axes = array<i64: 0, 2>}} : "
          f"{ttype([2, 3, 4])} -> {ttype([3])}"], [3]),
    case("reduce_mean keep_dims", [("x", [2, 3, 4], NORMAL)],
         [f"%r = tg.reduce_mean %p0 {{axes = array<i64: 1>, keep_dims = true}} "
          f": {ttype([2, 3, 4])} -> {ttype([2, 1, 4])}"], [2, 1, 4]),
    case("reduce_max", [("x", [3, 5], NORMAL)],
         [f"%r = tg.reduce_max %p0 {{axes = array<i64: 1>}} : {ttype([3, 5])} "
          f"-> {ttype([3])}"], [3], kinks=True),
    case("broadcast_to", [("x", [4], NORMAL)],
         [f"%r = tg.broadcast_to %p0 : {ttype([4])} -> {ttype([3, 4])}"], [3, 4]),
]


def model_text(c):
    args = ", ".join(f"%p{i}: {ttype(shape)} {{tg.param = \"{n}\", "
                     f"tg.init = {init}}}"
                     for i, (n, shape, init) in enumerate(c["params"]))
    lines = [f"func.func @vjp({args}) -> tensor<f32> attributes {{tg.model}} {{"]
    lines += ["  " + l for l in c["body"]]
    if c["direct"]:
        lines.append("  return %r : tensor<f32>")
    else:
        weights = [rng.uniform(-1, 1) for _ in range(numel(c["shape"]))]
        lines.append(f"  %w = tg.constant {dense(c['shape'], weights)}")
        lines.append(f"  %m = tg.mul %r, %w : ({ttype(c['shape'])}, "
                     f"{ttype(c['shape'])}) -> {ttype(c['shape'])}")
        axes = ", ".join(str(i) for i in range(len(c["shape"])))
        lines.append(f"  %l = tg.reduce_sum %m {{axes = array<i64: {axes}>}} : "
                     f"{ttype(c['shape'])} -> tensor<f32>")
        lines.append("  return %l : tensor<f32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def loss_of(exe, params, tag):
    path = os.path.join(WORK, f"{tag}.safetensors")
    write_safetensors(path, params)
    metrics = os.path.join(WORK, f"{tag}.jsonl")
    run(f"{BIN}/tgc-run", exe, "--load-weights", path, "--steps", "1",
        "--quiet", "--metrics", metrics)
    return json.loads(open(metrics).readline())["loss"]


failures, checked = [], 0
for index, c in enumerate(CASES):
    src = os.path.join(WORK, f"case{index}.mlir")
    exe = os.path.join(WORK, f"case{index}.tgx")
    open(src, "w").write(model_text(c))
    run(f"{BIN}/tgc-compile", src, "-o", exe, "--optimizer=sgd", "--lr=1",
        "--weight-decay=0")
    init = os.path.join(WORK, f"case{index}.init.safetensors")
    after = os.path.join(WORK, f"case{index}.after.safetensors")
    run(f"{BIN}/tgc-run", exe, "--steps", "0", "--seed", str(index), "--save",
        init, "--quiet")
    run(f"{BIN}/tgc-run", exe, "--load-weights", init, "--steps", "1",
        "--save", after, "--quiet")
    p0, p1 = read_safetensors(init), read_safetensors(after)
    worst = 0.0
    for name, (shape, values) in p0.items():
        grad = [a - b for a, b in zip(values, p1[name][1])]
        candidates = list(range(len(values)))
        if c["kinks"]:
            # Away from kinks, where the derivative is defined.
            candidates = [i for i in candidates if abs(values[i]) > 0.1]
        for i in rng.sample(candidates, min(3, len(candidates))):
            eps = 1e-2
            plus = {k: (s, array("f", v)) for k, (s, v) in p0.items()}
            minus = {k: (s, array("f", v)) for k, (s, v) in p0.items()}
            plus[name][1][i] += eps
            minus[name][1][i] -= eps
            fd = (loss_of(exe, plus, "plus") - loss_of(exe, minus, "minus")) / (
                plus[name][1][i] - minus[name][1][i])
            err = abs(fd - grad[i]) / (abs(fd) + abs(grad[i]) + 0.1)
            worst = max(worst, err)
            checked += 1
            # A central difference with step eps = 1e-2 errs by eps^2 / 6
            # times the third derivative (truncation, 1.7e-5 per unit of
            # it) and by about 2^-24 |loss| / eps from the two f32 losses
            # (6e-6 per unit of loss); 1e-2, relative to the derivatives'
            # size plus 0.1, leaves room for both and still fails a wrong
            # gradient (a factor of 2 moves it by a third).
            if err > 1e-2:
                failures.append(f"{c['name']}: d loss / d {name}[{i}] = "
                                f"{grad[i]:.6g} by autodiff, {fd:.6g} by "
                                f"finite differences")
    print(f"{c['name']}: worst relative error {worst:.2e}")

if failures:
    sys.exit("\n".join(failures))
print(f"all {len(CASES)} cases agree with finite differences "
      f"({checked} derivatives)")
