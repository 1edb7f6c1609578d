"""The ATen-to-tg table of tgc-import (tgc-import.py): how each ATen
operator of a traced graph becomes tg operations, and the values the
conversion passes between them.

A handler takes the Emitter, the FX node and its arguments (already
converted: a Value the IR computes, a Known value the import evaluated,
or one of the lazy forms below) and returns what the node computes. An
operator with no entry in OPS, or a use a handler does not take (raising
Unsupported), is reported by the caller with its module; nothing is
emitted for it. Handlers emit MLIR's generic form; tgc-opt prints the
result in each op's own syntax.
"""
import json


ELEMENT = {"torch.float32": "f32", "torch.float16": "f16",
           "torch.bfloat16": "bf16", "torch.int64": "i64",
           "torch.int32": "i32", "torch.bool": "i1"}


def ttype(shape, dtype):
    element = ELEMENT.get(str(dtype))
    if element is None:
        raise Unsupported(f"a tensor of {dtype}")
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
        # Constants already emitted, by their type and contents (the causal
        # mask every layer slices is one constant).
        self.constants = {}

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
        """A tg.constant holding `tensor` (f32, i64 and i32 as hex, exactly;
        booleans as a list)."""
        import hashlib
        t = tensor.detach().contiguous()
        key = (str(t.dtype), tuple(t.shape),
               hashlib.sha256(t.numpy().tobytes()).hexdigest())
        if key not in self.constants:
            self.constants[key] = self._constant(t)
        return self.constants[key]

    def _constant(self, tensor):
        import torch
        t = tensor.detach().contiguous()
        if t.dtype == torch.bool:
            result = Value(self.fresh(), t.shape, t.dtype)
            text = json.dumps(t.tolist()).replace("false", "false")
            self.lines.append(f'{result.name} = "tg.constant"() {{value = '
                              f"dense<{text}> : {result.type}}} : () -> "
                              f"{result.type}")
            return result
        if t.dtype not in (torch.float32, torch.int64, torch.int32):
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
    if isinstance(value, Negated):
        raise Unsupported("aten.eq.Scalar (read by something other than "
                          "where or masked_fill)")
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
# In-place forms: the same value, which the caller binds to the updated
# tensor's node (IN_PLACE).
IN_PLACE = {"aten.add_.Tensor": "aten.add.Tensor",
            "aten.sub_.Tensor": "aten.sub.Tensor",
            "aten.mul_.Tensor": "aten.mul.Tensor",
            "aten.div_.Tensor": "aten.div.Tensor"}
for inplace, functional in IN_PLACE.items():
    OPS[inplace] = OPS[functional]


@op("aten.rsub.Scalar")
def rsub(e, node, args):
    if node.kwargs.get("alpha", 1) != 1 or (len(args) > 2 and args[2] != 1):
        raise Unsupported("aten.rsub.Scalar with alpha")
    x = args[0]
    if x.dtype.is_floating_point is False:
        raise Unsupported("aten.rsub.Scalar of an integer tensor")
    return result_of(e, node, "tg.sub", [materialize(e, args[1], x), x])


class Negated:
    """`m == c` of an integer mask: where() and masked_fill take it by
    swapping their branches (tg has no comparison op)."""

    def __init__(self, nonzero):
        self.nonzero = nonzero


@op("aten.ne.Scalar", "aten.eq.Scalar")
def compare_scalar(e, node, args):
    """x != c as tg.cast's `x != 0` of x - c (exact for integers; floats
    only against 0, as inf - inf is NaN); x == c as its negation."""
    import torch
    x, c = args[0], unwrap(args[1])
    if c != 0:
        if x.dtype.is_floating_point:
            raise Unsupported(f"{node.target} of a float tensor against {c} "
                              "(only 0)")
        x = e.op("tg.sub", [x, materialize(e, int(c), x)], x.shape, x.dtype)
    nonzero = e.op("tg.cast", [x], x.shape, torch.bool)
    return nonzero if str(node.target) == "aten.ne.Scalar" \
        else Negated(nonzero)


@op("aten.cumsum.default")
def cumsum(e, node, args):
    """torch.cumsum (RoBERTa's position ids, counted from the padding); an
    integer operand summed as int64, as torch sums it, unless a dtype is
    given."""
    x = materialize(e, args[0])
    val = meta(node)
    if x.dtype != val.dtype:
        x = e.op("tg.cast", [x], x.shape, val.dtype)
    dim = axis(args[1], len(x.shape))
    return result_of(e, node, "tg.cumsum", [x], f"axis = {dim} : i64")


@op("aten.bitwise_not.default", "aten.logical_not.default")
def logical_not(e, node, args):
    import torch
    x = args[0]
    if isinstance(x, Negated):
        return x.nonzero
    if x.dtype != torch.bool:
        raise Unsupported(f"{node.target} of a {x.dtype} tensor")
    return Negated(x)


@op("aten.zeros_like.default", "aten.ones_like.default",
    "aten.full_like.default")
def filled_like(e, node, args):
    """A tensor of one value at another's shape: a constant (shapes only)."""
    import torch
    val = meta(node)
    fill = {"aten.zeros_like.default": 0, "aten.ones_like.default": 1}.get(
        str(node.target), args[1] if len(args) > 1 else None)
    return Known(torch.full(tuple(val.shape), unwrap(fill), dtype=val.dtype))


@op("aten.repeat.default")
def repeat(e, node, args):
    """x tiled `repeats` times along each dimension: each dimension given a
    unit dimension before it, broadcast there, and the pairs merged."""
    x, repeats = materialize(e, args[0]), list(args[1])
    shape = [1] * (len(repeats) - len(x.shape)) + list(x.shape)
    spread = [d for size in shape for d in (1, size)]
    tiled = [d for count, size in zip(repeats, shape) for d in (count, size)]
    x = e.op("tg.reshape", [x], spread, x.dtype)
    x = e.op("tg.broadcast_to", [x], tiled, x.dtype)
    return result_of(e, node, "tg.reshape", [x])


@op("aten.index.Tensor")
def index(e, node, args):
    """x[..., [i, j, ...], ...] with constant indices on one dimension
    (Falcon's fused multi-query q/k/v): the runs of consecutive indices as
    slices, concatenated."""
    import torch
    x, indices = args[0], args[1]
    picked = [(d, i) for d, i in enumerate(indices) if i is not None]
    constant = len(picked) == 1 and isinstance(picked[0][1], Known)
    if not constant or picked[0][1].value.dim() != 1 or \
            picked[0][1].value.dtype not in (torch.int32, torch.int64):
        raise Unsupported("aten.index.Tensor (only constant integer indices "
                          "on one dimension)")
    dim, values = picked[0][0], picked[0][1].value.tolist()
    size = x.shape[dim]
    values = [v + size if v < 0 else v for v in values]
    runs = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    pieces = []
    for start, count in runs:
        offsets = [0] * len(x.shape)
        offsets[dim] = start
        shape = list(x.shape)
        shape[dim] = count
        pieces.append(x if shape == list(x.shape) else
                      e.op("tg.slice", [x], shape, x.dtype,
                           f"offsets = {i64s(offsets)}"))
    if len(pieces) == 1:
        return pieces[0]
    return result_of(e, node, "tg.concat", pieces, f"axis = {dim} : i64")


@op("aten.gather.default")
def gather(e, node, args):
    """torch.gather. An index the import evaluated (DeBERTa's relative
    positions, one [T, T] table expanded over every batch and head) is
    stored once: each dimension along which it only repeats becomes size 1,
    and tg.gather broadcasts it back. Where torch reads a corner of the
    operand (the index smaller outside `dim`), that corner is sliced."""
    import torch
    x, dim, index = args[0], axis(args[1], len(args[0].shape)), args[2]
    if len(args) > 3 and args[3] or node.kwargs.get("sparse_grad"):
        raise Unsupported("aten.gather.default with sparse_grad")
    val = meta(node)
    if isinstance(index, Known):
        t = index.value
        for d in range(t.dim()):
            first = t.narrow(d, 0, 1)
            if t.shape[d] > 1 and torch.equal(t, first.expand_as(t)):
                t = first
        while t.dim() > 1 and t.shape[0] == 1:
            t = t[0]
        index = e.constant(t.contiguous().to(torch.int64))
    index = materialize(e, index)
    corner = [val.shape[d] if d != dim else x.shape[d]
              for d in range(len(x.shape))]
    if list(x.shape) != corner:
        x = e.op("tg.slice", [x], corner, x.dtype,
                 f"offsets = {i64s([0] * len(corner))}")
    return result_of(e, node, "tg.gather", [x, index], f"axis = {dim} : i64")


@op("aten.index_select.default")
def index_select(e, node, args):
    """x.index_select(dim, index): a tg.gather whose 1-D index is shaped to
    broadcast over the dimensions after `dim` ([L, 1, ...])."""
    import torch
    x, index = args[0], args[2]
    dim = axis(args[1], len(x.shape))
    if isinstance(index, Known):
        index = e.constant(unwrap(index).to(torch.int64))
    index = materialize(e, index)
    if len(index.shape) != 1:
        raise Unsupported("aten.index_select.default with a "
                          f"{len(index.shape)}-d index")
    shape = (index.shape[0],) + (1,) * (len(x.shape) - dim - 1)
    if shape != index.shape:
        index = e.op("tg.reshape", [index], shape, index.dtype)
    return result_of(e, node, "tg.gather", [x, index], f"axis = {dim} : i64")


@op("aten.topk.default")
def topk(e, node, args):
    """torch.topk over the last axis, largest first: tg.top_k's indices
    and a tg.gather of the values (which carries their gradient)."""
    import torch
    x, k = args[0], int(args[1])
    rank = len(x.shape)
    dim = axis(args[2] if len(args) > 2 else node.kwargs.get("dim", -1), rank)
    largest = args[3] if len(args) > 3 else node.kwargs.get("largest", True)
    if dim != rank - 1 or not largest:
        raise Unsupported("aten.topk.default (other than the largest along "
                          "the last axis)")
    shape = x.shape[:-1] + (k,)
    index = e.op("tg.top_k", [x], shape, torch.int64, f"k = {k} : i64")
    values = e.op("tg.gather", [x, index], shape, x.dtype,
                  f"axis = {dim} : i64")
    return (values, index)


@op("tgc.moe_route.default")
def moe_route(e, node, args):
    """tgc::moe_route (hf_moe.py): tg.moe_route's rows, positions and
    offsets."""
    import torch
    choices = materialize(e, args[0])
    n, k = choices.shape
    return tuple(e.multi("tg.moe_route", [choices],
                         [((n * k, 1), torch.int64), ((n, k), torch.int64),
                          ((int(args[1]) + 1,), torch.int64)]))


@op("tgc.one_hot.default")
def one_hot(e, node, args):
    """tgc::one_hot (hf_moe.py): ones added at each index along a new last
    axis of `classes` (a tg.gather_grad of ones), as int64 like
    F.one_hot."""
    import torch
    index = materialize(e, args[0])
    shape = index.shape + (1,)
    index = e.op("tg.reshape", [index], shape, index.dtype)
    ones = e.op("tg.fill", [], shape, torch.float32, "value = 1.0 : f64")
    hot = e.op("tg.gather_grad", [ones, index], shape[:-1] + (int(args[1]),),
               torch.float32, f"axis = {len(shape) - 1} : i64")
    return result_of(e, node, "tg.cast", [hot])


@op("tgc.expert_linear.default")
def expert_linear(e, node, args):
    """tgc::expert_linear (hf_moe.py): tg.expert_linear over the experts'
    own weights."""
    x, offsets, weights, transposed = args
    flag = "true" if transposed else "false"
    return result_of(e, node, "tg.expert_linear",
                     [x, offsets] + [materialize(e, w) for w in weights],
                     f"transpose_weight = {flag}")


@op("aten.select.int")
def select(e, node, args):
    x = args[0]
    rank = len(x.shape)
    dim = axis(args[1], rank)
    index = args[2] + x.shape[dim] if args[2] < 0 else args[2]
    shape = list(x.shape)
    shape[dim] = 1
    offsets = [0] * rank
    offsets[dim] = index
    piece = e.op("tg.slice", [x], shape, x.dtype,
                 f"offsets = {i64s(offsets)}")
    return result_of(e, node, "tg.reshape", [piece])


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
    x, exponent = args[0], args[1]
    if exponent == 0.5:
        return result_of(e, node, "tg.sqrt", [x])
    if exponent not in (1, 2, 3, 4):
        raise Unsupported(f"aten.pow.Tensor_Scalar (exponent {exponent})")
    result = x
    for _ in range(int(exponent) - 1):
        result = result_of(e, node, "tg.mul", [result, x])
    return result


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


# Operators whose result aliases their input's storage.
VIEWS = ("aten.view.default", "aten._reshape_alias.default",
         "aten._unsafe_view.default", "aten.reshape.default",
         "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
         "aten.flatten.using_ints", "aten.t.default", "aten.transpose.int",
         "aten.permute.default", "aten.expand.default", "aten.slice.Tensor",
         "aten.select.int", "aten.split.Tensor", "aten.alias.default",
         "aten.detach.default")


@op("aten.view.default", "aten._reshape_alias.default",
    "aten._unsafe_view.default", "aten.reshape.default",
    "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.default",
    "aten.flatten.using_ints")
def reshape(e, node, args):
    if isinstance(args[0], Negated):  # a view of `m == 0`
        return Negated(reshape(e, node, [args[0].nonzero] + list(args[1:])))
    val = meta(node)
    if tuple(val.shape) == args[0].shape:
        return args[0]
    return result_of(e, node, "tg.reshape", [args[0]])


@op("aten.expand.default")
def expand(e, node, args):
    if isinstance(args[0], Negated):
        return Negated(expand(e, node, [args[0].nonzero] + list(args[1:])))
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


@op("aten.baddbmm.default")
def baddbmm(e, node, args):
    beta = node.kwargs.get("beta", 1)
    alpha = node.kwargs.get("alpha", 1)
    val = meta(node)
    operands, attrs = matmul_operands(e, args[1], args[2])
    result = e.op("tg.matmul", operands, val.shape, val.dtype, attrs)
    if alpha != 1:
        result = e.op("tg.mul", [result, materialize(e, alpha, result)],
                      val.shape, val.dtype)
    if beta != 0:
        bias = materialize(e, args[0], result)
        if beta != 1:
            bias = e.op("tg.mul", [bias, materialize(e, beta, result)],
                        bias.shape, bias.dtype)
        result = e.op("tg.add", [result, bias], val.shape, val.dtype)
    return result


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
    val = meta(node)
    if tuple(val.shape) == x.shape:
        return x
    start = max(0, start + x.shape[dim] if start < 0 else start)
    offsets = [0] * rank
    offsets[dim] = min(start, x.shape[dim])
    if step == 1:
        return result_of(e, node, "tg.slice", [x],
                         f"offsets = {i64s(offsets)}")
    # Every step-th element from start (GLM's interleaved rotary halves,
    # x[..., 0::2] and x[..., 1::2]): a span of count * step elements that
    # holds them, as [count, step] rows, and the column they are in.
    count, whole = val.shape[dim], x.shape[dim]
    if count * step > whole:
        raise Unsupported("aten.slice.Tensor with a step that does not "
                          "divide what it slices")
    column = max(0, offsets[dim] + count * step - whole)
    offsets[dim] -= column
    shape = list(x.shape)
    span = shape[:dim] + [count * step] + shape[dim + 1:]
    if span != shape:
        x = e.op("tg.slice", [x], span, x.dtype,
                 f"offsets = {i64s(offsets)}")
    rows = e.op("tg.reshape", [x], shape[:dim] + [count, step] +
                shape[dim + 1:], x.dtype)
    picked = [0] * (rank + 1)
    picked[dim + 1] = column
    taken = e.op("tg.slice", [rows], shape[:dim] + [count, 1] +
                 shape[dim + 1:], x.dtype, f"offsets = {i64s(picked)}")
    return result_of(e, node, "tg.reshape", [taken])


@op("aten.stack.default")
def stack(e, node, args):
    tensors = [materialize(e, t) for t in args[0]]
    rank = len(meta(node).shape)
    dim = axis(args[1] if len(args) > 1 else 0, rank)
    pieces = [e.op("tg.reshape", [t], list(t.shape[:dim]) + [1] +
                   list(t.shape[dim:]), t.dtype) for t in tensors]
    if len(pieces) == 1:
        return result_of(e, node, "tg.reshape", pieces)
    return result_of(e, node, "tg.concat", pieces, f"axis = {dim} : i64")


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


def select(e, node, cond, a, b):
    """cond ? a : b, `cond` a bool Value or a Negated one: tg.where for
    floats; for integers (tg.where takes floats only) b + cond * (a - b),
    exact in int64 (an encoder-decoder's -100 targets read as padding)."""
    if isinstance(cond, Negated):
        cond, a, b = cond.nonzero, b, a
    like = a if isinstance(a, Value) else b
    a, b = materialize(e, a, like), materialize(e, b, like)
    val = meta(node)
    if val.dtype.is_floating_point:
        return result_of(e, node, "tg.where", [materialize(e, cond), a, b])
    shape = tuple(val.shape)
    chosen = e.op("tg.cast", [materialize(e, cond)], cond.shape, val.dtype)
    step = e.op("tg.mul", [chosen, e.op("tg.sub", [a, b], shape, val.dtype)],
                shape, val.dtype)
    return result_of(e, node, "tg.add", [b, step])


@op("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def masked_fill(e, node, args):
    x, mask, value = args
    import torch
    if not x.dtype.is_floating_point:
        return select(e, node, mask, unwrap(value) if not isinstance(
            value, Value) else value, x)
    if not isinstance(value, Value):
        fill = materialize(e, Known(torch.tensor(float(unwrap(value)),
                                                 dtype=x.dtype)), x)
    else:
        fill = value
    if isinstance(mask, Negated):
        return result_of(e, node, "tg.where", [mask.nonzero, x, fill])
    return result_of(e, node, "tg.where", [materialize(e, mask), fill, x])


@op("aten.where.self")
def where(e, node, args):
    cond, a, b = args
    if not meta(node).dtype.is_floating_point:
        return select(e, node, cond, a, b)
    like = a if isinstance(a, Value) else b
    if isinstance(cond, Negated):
        cond, a, b = cond.nonzero, b, a
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
    if isinstance(x, (Value, LogSoftmax, Transposed, Missing, Negated)):
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


