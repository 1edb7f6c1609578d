#!/usr/bin/env python3
"""tgc-import: a PyTorch model's forward pass and loss as tg IR.

  tgc-import.py --module FILE.py:FACTORY --task classify|causal-lm
                --batch B (--features F | --seq-len T) -o MODEL.mlir
                [--weights WEIGHTS.safetensors] [--name NAME] [--check]

FACTORY() returns a torch.nn.Module. Its forward takes `inputs` [B, F]
(floats; --task classify, whose loss is the cross-entropy of the logits
[B, C] against `targets` [B]) or `tokens` [B, T] (int64; --task causal-lm,
the cross-entropy of the logits [B, T, V] against `targets` [B, T], -100
ignored). The step is traced at these static shapes on fake tensors, at
the level of ATen operators (make_fx over a functional call of the module,
so no weight is touched), and every ATen operator becomes tg operations
through one table (OPS below). What depends only on shapes and buffers
(causal masks built from arange and comparisons, rotary tables) is
evaluated in torch at import time and becomes a constant. Parameters keep
their state-dict names (tied weights once, under their first name) and
become `tg.param` arguments; `--weights` writes their values, which
`tgc-run --load-weights` starts from. An operator with no mapping fails
the import: all of them are listed, each with its count and the module it
came from, not only the first.

--check compiles the imported model with tgc-compile, evaluates one random
batch with `tgc-run --eval-only` on the CPU, and prints its loss beside the
module's own (torch, f32); it fails when they differ by more than 1e-5
relative.

The output is verified and printed by tgc-opt (found beside this script in
build/bin, or with --tools DIR). Runs on Debian's torch (/usr/bin/python3);
errors are one `tgc-import: error: ...` line and exit status 1.
"""
import argparse
import collections
import importlib.util
import json
import math
import os
import struct
import subprocess
import sys
import tempfile


class ImportError_(Exception):
    """An error for the user: printed as one line."""


def fail(message):
    raise ImportError_(message)


# --- the model ---------------------------------------------------------------

def load_factory(spec):
    """FILE.py:FACTORY -> the module it returns."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        fail(f"--module needs FILE.py:FACTORY, found '{spec}'")
    if not os.path.isfile(path):
        fail(f"--module: no such file '{path}'")
    loader = importlib.util.spec_from_file_location("tgc_import_user", path)
    if loader is None:
        fail(f"--module: '{path}' is not a Python file")
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
    except Exception as e:  # the user's file: anything may go wrong
        fail(f"--module: running '{path}' failed: {type(e).__name__}: {e}")
    factory = getattr(module, name, None)
    if not callable(factory):
        fail(f"--module: '{path}' has no function '{name}'")
    import torch
    try:
        model = factory()
    except Exception as e:
        fail(f"--module: {name}() failed: {type(e).__name__}: {e}")
    if not isinstance(model, torch.nn.Module):
        fail(f"--module: {name}() returned {type(model).__name__}, not a "
             "torch.nn.Module")
    return model


def example_inputs(args):
    """The step's inputs, by name, as the runtime batches them."""
    import torch
    if args.task == "classify":
        if args.features is None:
            fail("--task classify needs --features F (the inputs' width)")
        return collections.OrderedDict(
            inputs=torch.zeros(args.batch, args.features),
            targets=torch.zeros(args.batch, dtype=torch.int64))
    if args.seq_len is None:
        fail("--task causal-lm needs --seq-len T")
    return collections.OrderedDict(
        tokens=torch.zeros(args.batch, args.seq_len, dtype=torch.int64),
        targets=torch.zeros(args.batch, args.seq_len, dtype=torch.int64))


def loss_of(model, task, inputs):
    """The module's loss on `inputs` (the function the import traces)."""
    import torch.nn.functional as F
    if task == "classify":
        logits = model(inputs["inputs"])
        return F.cross_entropy(logits, inputs["targets"])
    logits = model(inputs["tokens"])
    if hasattr(logits, "logits"):  # a Hugging Face output
        logits = logits.logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           inputs["targets"].reshape(-1), ignore_index=-100)


# --- tracing -----------------------------------------------------------------

def trace(model, task, inputs):
    """The ATen graph of the loss over (parameters, buffers, inputs), with
    each node's module path in node.meta["module"]."""
    import torch
    import torch.fx
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless

    params = collections.OrderedDict(model.named_parameters())
    buffers = collections.OrderedDict(model.named_buffers())
    names = list(params) + list(buffers)
    values = list(params.values()) + list(buffers.values())
    count = len(names)

    def step(*flat):
        state = dict(zip(names, flat[:count]))
        batch = collections.OrderedDict(zip(inputs, flat[count:]))
        return loss_of_state(state, batch)

    def loss_of_state(state, batch):
        with stateless._reparametrize_module(model, state):
            return loss_of(model, task, batch)

    # Which module each node comes from: a stack kept by forward hooks,
    # read when the tracer creates a node.
    stack = [""]
    hooks = []

    def enter(path):
        def hook(module, args):
            stack.append(path)
        return hook

    def leave(module, args, output):
        stack.pop()
    for path, sub in model.named_modules():
        hooks.append(sub.register_forward_pre_hook(enter(path)))
        hooks.append(sub.register_forward_hook(leave))
    create = torch.fx.Graph.create_node

    def create_node(self, *a, **k):
        node = create(self, *a, **k)
        node.meta["module"] = stack[-1]
        return node
    torch.fx.Graph.create_node = create_node
    model.eval()
    try:
        graph = make_fx(step, tracing_mode="fake")(
            *(v.detach() for v in values), *inputs.values())
    except ImportError_:
        raise
    except Exception as e:
        fail(f"tracing the model failed ({type(e).__name__}: {e}); tgc-import "
             "needs a forward pass at static shapes without data-dependent "
             "control flow")
    finally:
        torch.fx.Graph.create_node = create
        for hook in hooks:
            hook.remove()
    return graph, params, buffers


# --- tg IR -------------------------------------------------------------------

ELEMENT = {"torch.float32": "f32", "torch.float16": "f16",
           "torch.bfloat16": "bf16", "torch.int64": "i64",
           "torch.int32": "i32", "torch.bool": "i1"}


def ttype(shape, dtype):
    element = ELEMENT.get(str(dtype))
    if element is None:
        fail(f"no tg element type for {dtype}")
    dims = "x".join(str(int(d)) for d in shape)
    return f"tensor<{dims + 'x' if dims else ''}{element}>"


class Value:
    """A tensor the IR computes: its SSA name, shape and dtype."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return ttype(self.shape, self.dtype)


class Known:
    """What the import evaluates itself: a real tensor or a Python value."""

    def __init__(self, value):
        self.value = value


class LogSoftmax:
    """log_softmax(x) over the last axis, which only nll_loss may read."""

    def __init__(self, input, node):
        self.input, self.node = input, node


class Transposed:
    """A matrix transposed ([1, 0]): a matmul takes it as transpose_rhs,
    anything else gets the transpose (emitted once)."""

    def __init__(self, input, node):
        self.input, self.node, self.emitted = input, node, None

    def get(self, e):
        if self.emitted is None:
            self.emitted = result_of(e, self.node, "tg.transpose",
                                     [self.input],
                                     f"permutation = {i64s([1, 0])}")
        return self.emitted


class Missing:
    """What an operation without a tg form would have computed: its users
    are not reported again."""


class Unsupported(Exception):
    def __init__(self, what):
        self.what = what


class Emitter:
    def __init__(self):
        self.lines = []
        self.count = 0

    def fresh(self):
        self.count += 1
        return f"%v{self.count}"

    def op(self, name, operands, result_shape, result_dtype, attrs=""):
        result = Value(self.fresh(), result_shape, result_dtype)
        types = ", ".join(o.type for o in operands)
        attr_text = f" {{{attrs}}}" if attrs else ""
        self.lines.append(
            f'{result.name} = "{name}"({", ".join(o.name for o in operands)})'
            f"{attr_text} : ({types}) -> {result.type}")
        return result

    def multi(self, name, operands, results, attrs=""):
        """An op of several results, each (shape, dtype)."""
        base = self.fresh()
        values = [Value(f"{base}#{i}", shape, dtype)
                  for i, (shape, dtype) in enumerate(results)]
        types = ", ".join(o.type for o in operands)
        attr_text = f" {{{attrs}}}" if attrs else ""
        self.lines.append(
            f'{base}:{len(values)} = "{name}"('
            f'{", ".join(o.name for o in operands)}){attr_text} : ({types}) -> '
            f'({", ".join(v.type for v in values)})')
        return values

    def constant(self, tensor):
        """A tg.constant holding `tensor` (f32 and i64 as hex, exactly;
        booleans as a list)."""
        import torch
        t = tensor.detach().contiguous()
        if t.dtype == torch.bool:
            result = Value(self.fresh(), t.shape, t.dtype)
            text = json.dumps(t.tolist()).replace("false", "false")
            self.lines.append(f'{result.name} = "tg.constant"() {{value = '
                              f"dense<{text}> : {result.type}}} : () -> "
                              f"{result.type}")
            return result
        if t.dtype not in (torch.float32, torch.int64):
            t = t.to(torch.float32)
        data = t.numpy().tobytes()
        result = Value(self.fresh(), t.shape, t.dtype)
        self.lines.append(f'{result.name} = "tg.constant"() {{value = '
                          f'dense<"0x{data.hex().upper()}"> : {result.type}}}'
                          f" : () -> {result.type}")
        return result


def materialize(emitter, value, like=None):
    """`value` as a Value: a Known tensor or scalar becomes a constant (a
    scalar in `like`'s dtype)."""
    import torch
    if isinstance(value, Value):
        return value
    if isinstance(value, LogSoftmax):
        raise Unsupported("aten._log_softmax.default (read by something "
                          "other than nll_loss)")
    v = value.value if isinstance(value, Known) else value
    if isinstance(v, (bool, int, float)):
        dtype = like.dtype if like is not None else torch.float32
        v = torch.tensor(v, dtype=dtype)
    if not isinstance(v, torch.Tensor):
        raise Unsupported(f"a constant of type {type(v).__name__}")
    if like is not None and v.dtype != like.dtype and v.dtype.is_floating_point \
            == like.dtype.is_floating_point:
        v = v.to(like.dtype)
    return emitter.constant(v)


def meta(node):
    val = node.meta.get("val")
    if val is None:
        raise Unsupported(f"{node.target} (no shape recorded)")
    return val


def axis(dim, rank):
    return dim + rank if dim < 0 else dim


def i64s(values):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values)
                          if len(values) else "") + ">"


# Each handler: (emitter, node, args) -> Value | Known | LogSoftmax | tuple.
OPS = {}


def op(*names):
    def register(handler):
        for name in names:
            OPS[name] = handler
        return handler
    return register


def result_of(e, node, name, operands, attrs=""):
    val = meta(node)
    return e.op(name, operands, val.shape, val.dtype, attrs)


def binary(tg_name):
    def handler(e, node, args):
        a, b = args[0], args[1]
        if node.kwargs.get("alpha", 1) != 1:
            raise Unsupported(f"{node.target} with alpha")
        like = a if isinstance(a, Value) else b
        return result_of(e, node, tg_name,
                         [materialize(e, a, like), materialize(e, b, like)])
    return handler


for aten, tg in (("add.Tensor", "tg.add"), ("sub.Tensor", "tg.sub"),
                 ("mul.Tensor", "tg.mul"), ("div.Tensor", "tg.div"),
                 ("maximum.default", "tg.maximum"),
                 ("minimum.default", "tg.minimum")):
    OPS["aten." + aten] = binary(tg)


def unary(tg_name, attrs=""):
    def handler(e, node, args):
        return result_of(e, node, tg_name, [materialize(e, args[0])], attrs)
    return handler


for aten, tg in (("relu.default", "tg.relu"), ("tanh.default", "tg.tanh"),
                 ("exp.default", "tg.exp"), ("log.default", "tg.log"),
                 ("sqrt.default", "tg.sqrt"), ("rsqrt.default", "tg.rsqrt"),
                 ("neg.default", "tg.neg"), ("sigmoid.default", "tg.sigmoid"),
                 ("silu.default", "tg.silu")):
    OPS["aten." + aten] = unary(tg)


@op("aten.gelu.default")
def gelu(e, node, args):
    approximate = node.kwargs.get("approximate", args[1] if len(args) > 1
                                  else "none")
    return result_of(e, node, "tg.gelu", [args[0]],
                     "exact = true" if approximate == "none" else "")


@op("aten.pow.Tensor_Scalar")
def power(e, node, args):
    if args[1] != 2:
        raise Unsupported(f"aten.pow.Tensor_Scalar (exponent {args[1]})")
    return result_of(e, node, "tg.mul", [args[0], args[0]])


@op("aten.detach.default", "aten.clone.default", "aten.alias.default",
    "aten.lift_fresh_copy.default", "aten.contiguous.default")
def identity(e, node, args):
    return args[0]


@op("aten._to_copy.default")
def to_copy(e, node, args):
    val = meta(node)
    if args[0].dtype == val.dtype:
        return args[0]
    return result_of(e, node, "tg.cast", [args[0]])


@op("aten.t.default")
def t(e, node, args):
    if len(args[0].shape) < 2:
        return args[0]
    return Transposed(args[0], node)


def matmul_operands(e, a, b):
    """The operands and attributes of a matmul, a transposed right-hand
    side taken as it is (transpose_rhs)."""
    a = a.get(e) if isinstance(a, Transposed) else a
    if isinstance(b, Transposed):
        return [a, b.input], "transpose_rhs = true"
    return [a, b], ""


@op("aten.transpose.int")
def transpose(e, node, args):
    rank = len(args[0].shape)
    perm = list(range(rank))
    a, b = axis(args[1], rank), axis(args[2], rank)
    perm[a], perm[b] = perm[b], perm[a]
    return result_of(e, node, "tg.transpose", [args[0]],
                     f"permutation = {i64s(perm)}")


@op("aten.permute.default")
def permute(e, node, args):
    rank = len(args[0].shape)
    return result_of(e, node, "tg.transpose", [args[0]],
                     f"permutation = {i64s([axis(d, rank) for d in args[1]])}")


@op("aten.view.default", "aten._reshape_alias.default",
    "aten._unsafe_view.default", "aten.reshape.default",
    "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
    "aten.flatten.using_ints")
def reshape(e, node, args):
    val = meta(node)
    if tuple(val.shape) == args[0].shape:
        return args[0]
    return result_of(e, node, "tg.reshape", [args[0]])


@op("aten.expand.default")
def expand(e, node, args):
    val = meta(node)
    if tuple(val.shape) == args[0].shape:
        return args[0]
    return result_of(e, node, "tg.broadcast_to", [materialize(e, args[0])])


@op("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def matmul(e, node, args):
    operands, attrs = matmul_operands(e, args[0], args[1])
    return result_of(e, node, "tg.matmul", operands, attrs)


@op("aten.addmm.default")
def addmm(e, node, args):
    if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
        raise Unsupported("aten.addmm.default with alpha or beta")
    val = meta(node)
    operands, attrs = matmul_operands(e, args[1], args[2])
    product = e.op("tg.matmul", operands, val.shape, val.dtype, attrs)
    return e.op("tg.add", [product, materialize(e, args[0], product)],
                val.shape, val.dtype)


@op("aten._softmax.default")
def softmax(e, node, args):
    rank = len(args[0].shape)
    return result_of(e, node, "tg.softmax", [args[0]],
                     f"axis = {axis(args[1], rank)} : i64")


@op("aten._log_softmax.default")
def log_softmax(e, node, args):
    if axis(args[1], len(args[0].shape)) != len(args[0].shape) - 1:
        raise Unsupported("aten._log_softmax.default (not over the last axis)")
    return LogSoftmax(args[0], node)


@op("aten.nll_loss_forward.default")
def nll_loss(e, node, args):
    source, targets, weight, reduction, ignore = args[:5]
    if not isinstance(source, LogSoftmax) or weight is not None or \
            reduction != 1:
        raise Unsupported("aten.nll_loss_forward.default (other than the "
                          "mean cross-entropy of log_softmax)")
    import torch
    loss = e.op("tg.cross_entropy", [source.input, targets], (),
                torch.float32, f"ignore_index = {int(ignore)} : i64")
    return (loss, None)


@op("<built-in function getitem>")
def getitem(e, node, args):
    if isinstance(args[0], Missing):
        return args[0]
    return args[0][args[1]]


@op("aten.native_layer_norm.default")
def layer_norm(e, node, args):
    x, shape, weight, bias, eps = args
    if len(shape) != 1 or weight is None or bias is None:
        raise Unsupported("aten.native_layer_norm.default (other than over "
                          "the last axis with weight and bias)")
    import torch
    out = e.op("tg.layer_norm", [x, weight, bias], x.shape, x.dtype,
               f"epsilon = {float(eps):.17e} : f64")
    return (out, None, None)


@op("aten.embedding.default")
def embedding(e, node, args):
    attrs = ""
    if len(args) > 2 and args[2] not in (-1, None):
        attrs = f"padding_idx = {int(args[2])} : i64"
    return result_of(e, node, "tg.embedding",
                     [args[0], materialize(e, args[1])], attrs)


@op("aten.slice.Tensor")
def slice_(e, node, args):
    x = args[0]
    rank = len(x.shape)
    dim = axis(args[1] if len(args) > 1 else 0, rank)
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    step = args[4] if len(args) > 4 else 1
    if step != 1:
        raise Unsupported("aten.slice.Tensor with a step")
    val = meta(node)
    if tuple(val.shape) == x.shape:
        return x
    start = max(0, start + x.shape[dim] if start < 0 else start)
    offsets = [0] * rank
    offsets[dim] = min(start, x.shape[dim])
    return result_of(e, node, "tg.slice", [x], f"offsets = {i64s(offsets)}")


@op("aten.cat.default")
def cat(e, node, args):
    tensors = [materialize(e, t) for t in args[0]]
    rank = len(meta(node).shape)
    dim = axis(args[1] if len(args) > 1 else 0, rank)
    return result_of(e, node, "tg.concat", tensors, f"axis = {dim} : i64")


def reduction(tg_name):
    def handler(e, node, args):
        x = args[0]
        rank = len(x.shape)
        dims = args[1] if len(args) > 1 and args[1] is not None \
            else list(range(rank))
        keep = args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)
        if node.kwargs.get("dtype") is not None:
            raise Unsupported(f"{node.target} with a dtype")
        return result_of(e, node, tg_name, [x],
                         f"axes = {i64s(sorted(axis(d, rank) for d in dims))}"
                         + (", keep_dims = true" if keep else ""))
    return handler


OPS["aten.mean.dim"] = reduction("tg.reduce_mean")
OPS["aten.sum.dim_IntList"] = reduction("tg.reduce_sum")
OPS["aten.sum.default"] = reduction("tg.reduce_sum")
OPS["aten.mean.default"] = reduction("tg.reduce_mean")
OPS["aten.amax.default"] = reduction("tg.reduce_max")


@op("aten.split.Tensor", "aten.split_with_sizes.default")
def split(e, node, args):
    x = args[0]
    rank = len(x.shape)
    dim = axis(args[2] if len(args) > 2 else node.kwargs.get("dim", 0), rank)
    size = args[1]
    if isinstance(size, int):
        whole = x.shape[dim]
        size = [min(size, whole - start) for start in range(0, whole, size)]
    shapes = []
    for piece in size:
        shape = list(x.shape)
        shape[dim] = piece
        shapes.append((tuple(shape), x.dtype))
    return e.multi("tg.split", [x], shapes, f"axis = {dim} : i64")


@op("aten.masked_fill.Scalar")
def masked_fill(e, node, args):
    x, mask, value = args
    import torch
    fill = torch.tensor(float(value), dtype=x.dtype)
    return result_of(e, node, "tg.where",
                     [materialize(e, mask), materialize(e, Known(fill), x), x])


@op("aten.where.self")
def where(e, node, args):
    cond, a, b = args
    like = a if isinstance(a, Value) else b
    return result_of(e, node, "tg.where",
                     [materialize(e, cond), materialize(e, a, like),
                      materialize(e, b, like)])


def flatten(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from flatten(y)
    else:
        yield x


def resolve(e, x):
    """`x` with every Transposed emitted."""
    if isinstance(x, Transposed):
        return x.get(e)
    if isinstance(x, (list, tuple)):
        return type(x)(resolve(e, y) for y in x)
    return x


def is_known(x):
    """Whether `x` (an argument) holds no traced value."""
    if isinstance(x, (Value, LogSoftmax, Transposed, Missing)):
        return False
    if isinstance(x, (list, tuple)):
        return all(is_known(y) for y in x)
    return True


def unwrap(x):
    if isinstance(x, Known):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(unwrap(y) for y in x)
    return x


def convert(graph, params, buffers, inputs, name, task, root="model"):
    """The tg IR text of the traced loss, or Unsupported's list (by
    operation and module path; `root` names the model itself)."""
    import torch

    def where(node):
        return node.meta.get("module", "") or f"({root})"
    e = Emitter()
    env = {}
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    param_names, buffer_names = list(params), list(buffers)
    arguments = []
    for index, node in enumerate(placeholders):
        if index < len(param_names):
            p = params[param_names[index]]
            value = Value(f"%arg{len(arguments)}", p.shape, p.dtype)
            init = ("#tg.init<normal(0.0, 2.000000e-02)>" if p.dim() >= 2
                    else "#tg.init<zeros>")
            arguments.append(
                f"{value.name}: {value.type} {{tg.init = {init}, "
                f'tg.param = "{param_names[index]}"}}')
            env[node] = value
        elif index < len(param_names) + len(buffer_names):
            env[node] = Known(
                buffers[buffer_names[index - len(param_names)]].detach())
        else:
            input_name = list(inputs)[index - len(param_names) -
                                      len(buffer_names)]
            t = inputs[input_name]
            value = Value(f"%arg{len(arguments)}", t.shape, t.dtype)
            arguments.append(f'{value.name}: {value.type} '
                             f'{{tg.input = "{input_name}"}}')
            env[node] = value
    # Inputs first, as tgc-models writes them.
    arguments.sort(key=lambda a: "tg.input" not in a)

    missing = collections.Counter()
    loss = None

    def lookup(x):
        if isinstance(x, torch.fx.Node):
            return env[x]
        if isinstance(x, (list, tuple)):
            return type(x)(lookup(y) for y in x)
        return x

    for node in graph.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            loss = lookup(node.args[0])
            break
        args = lookup(node.args)
        target = str(node.target)
        if is_known(args) and is_known(list(node.kwargs.values())) and \
                target != "<built-in function getitem>":
            # Shapes and buffers only: evaluated here, in torch.
            kwargs = {k: unwrap(v) for k, v in node.kwargs.items()}
            if "device" in kwargs:
                kwargs["device"] = "cpu"
            env[node] = Known(node.target(*unwrap(args), **kwargs))
            continue
        if target == "<built-in function getitem>" and is_known(args):
            env[node] = Known(unwrap(args)[0][unwrap(args)[1]])
            continue
        handler = OPS.get(target)
        if any(isinstance(a, Missing) for a in flatten(args)):
            # After an operation without a tg form: only another one is
            # reported (every kind is listed, not only the first).
            if handler is None:
                missing[(target, where(node))] += 1
            env[node] = Missing()
            continue
        if handler not in (matmul, addmm):
            args = resolve(e, args)
        try:
            if handler is None:
                raise Unsupported(target)
            env[node] = handler(e, node, args)
        except Unsupported as u:
            missing[(u.what, where(node))] += 1
            env[node] = Missing()
    if missing:
        return None, missing
    if not isinstance(loss, Value) or loss.shape != ():
        fail("the traced function does not end in a scalar loss")
    attrs = ["tg.model"]
    if task == "causal-lm":
        attrs.append('tg.task = "causal-lm"')
    body = "\n    ".join(e.lines)
    text = (f"module {{\n  func.func @{name}({', '.join(arguments)}) -> "
            f"tensor<f32> attributes {{{', '.join(attrs)}}} {{\n    {body}\n"
            f"    return {loss.name} : tensor<f32>\n  }}\n}}\n")
    return text, None


# --- files -------------------------------------------------------------------

SAFETENSORS = {"torch.float32": "F32", "torch.float16": "F16",
               "torch.bfloat16": "BF16", "torch.int64": "I64"}


def write_safetensors(path, tensors):
    """tensors: name -> torch tensor; written with torch alone."""
    import torch
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t) \
            .numpy().tobytes()
        header[name] = {"dtype": SAFETENSORS[str(t.dtype)],
                        "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    atomic_write(path, struct.pack("<Q", len(text)) + text + b"".join(blobs))


def atomic_write(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".tgc-import.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def tool(args, name):
    directory = args.tools or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin")
    path = os.path.join(directory, name)
    if not os.access(path, os.X_OK):
        fail(f"cannot find {name} in {directory} (build tgc, or give --tools "
             "DIR)")
    return path


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{os.path.basename(command[0])} failed: "
             f"{(result.stderr or result.stdout).strip()}")
    return result.stdout


def check(args, model, text, params):
    """The imported forward and loss against the module's on one batch."""
    import torch
    torch.manual_seed(args.seed)
    batch = collections.OrderedDict()
    if args.task == "classify":
        batch["inputs"] = torch.randn(args.batch, args.features)
        classes = model(batch["inputs"]).shape[-1]
        batch["targets"] = torch.randint(0, classes, (args.batch,))
    else:
        vocab = params[next(iter(params))].shape[0]
        batch["tokens"] = torch.randint(0, vocab, (args.batch, args.seq_len))
        batch["targets"] = torch.randint(0, vocab, (args.batch, args.seq_len))
    with torch.no_grad():
        theirs = float(loss_of(model, args.task, batch))
    with tempfile.TemporaryDirectory() as work:
        mlir, tgx = os.path.join(work, "m.mlir"), os.path.join(work, "m.tgx")
        weights = os.path.join(work, "w.safetensors")
        data = os.path.join(work, "d.safetensors")
        with open(mlir, "w") as f:
            f.write(text)
        write_safetensors(weights, params)
        write_safetensors(data, {k: v.unsqueeze(0) for k, v in batch.items()})
        run([tool(args, "tgc-compile"), mlir, "-o", tgx])
        out = run([tool(args, "tgc-run"), tgx, "--eval-only", "--load-weights",
                   weights, "--data", data, "--eval-batches", "1",
                   "--threads", "1"])
    ours = None
    for line in out.splitlines():
        if line.startswith("tgc-run: eval loss "):
            ours = float(line.split()[3])
    if ours is None:
        fail(f"tgc-run printed no eval loss: {out.strip()}")
    error = abs(ours - theirs) / max(abs(theirs), 1e-30)
    print(f"tgc-import: check: loss on one batch: tgc {ours:.6f}, torch "
          f"{theirs:.6f} (relative difference {error:.1e})")
    if error > 1e-5:
        fail("the imported model's loss differs from the module's by more "
             "than 1e-5")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tgc-import", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", required=True, metavar="FILE.py:FACTORY")
    parser.add_argument("--task", choices=("classify", "causal-lm"),
                        required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--features", type=int)
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--name", default="model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--weights", help="write the parameters here")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", help="where tgc-opt, tgc-compile and "
                        "tgc-run are (default: build/bin)")
    args = parser.parse_args(argv)
    try:
        if args.batch < 1:
            fail("--batch must be positive")
        try:
            import torch  # noqa: F401
        except ImportError as e:
            fail(f"this needs torch ({e}); run it with /usr/bin/python3")
        model = load_factory(args.module)
        inputs = example_inputs(args)
        graph, params, buffers = trace(model, args.task, inputs)
        text, missing = convert(graph, params, buffers, inputs, args.name,
                                args.task, type(model).__name__)
        if missing:
            lines = [f"  {module}: {what} x{count}"
                     for (what, module), count in sorted(missing.items())]
            fail(f"{sum(missing.values())} operations have no tg form "
                 f"({len(missing)} kinds):\n" + "\n".join(lines))
        # tgc-opt verifies the IR and prints it in the ops' own syntax.
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as raw:
            raw.write(text)
            raw.flush()
            text = run([tool(args, "tgc-opt"), raw.name])
        atomic_write(args.output, text)
        if args.weights:
            write_safetensors(args.weights, params)
        print(f"tgc-import: wrote {args.output}: {len(params)} parameters "
              f"({sum(p.numel() for p in params.values())} values), "
              f"{text.count(' = tg.')} operations")
        if args.check:
            check(args, model, text, params)
    except ImportError_ as e:
        print(f"tgc-import: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
