#!/usr/bin/env python3
"""tgc-import: a PyTorch model's forward pass and loss as tg IR.

  tgc-import.py --module FILE.py:FACTORY
                --task classify|causal-lm|masked-lm|seq-cls
                --batch B (--features F | --seq-len T) -o MODEL.mlir
                [--weights WEIGHTS.safetensors] [--name NAME] [--check]
  tgc-import.py --hf DIR --batch B --seq-len T [--target-len U]
                -o MODEL.mlir [--check]

--hf imports a Hugging Face model directory (the class its config.json
names, from transformers, with eager attention, no dropout and no
key/value cache; run it with .venv-hf47/bin/python): a causal LM, a
masked LM, a sequence classifier or an encoder-decoder LM (T5, BART:
--task seq2seq, `tokens` and `attention_mask` the source [B, T],
`targets` the target [B, U], U = --target-len or T; the decoder's inputs
are the targets shifted right behind decoder_start_token_id, as
transformers makes them from labels), the task told from the class. `tgc-run --load-weights DIR` then starts
from the directory's weights, under the same names.
FACTORY() returns a torch.nn.Module. Its forward takes `inputs` [B, F]
(floats; --task classify, whose loss is the cross-entropy of the logits
[B, C] against `targets` [B]), or `tokens` [B, T] (int64; --task causal-lm,
the cross-entropy of the logits [B, T, V] against `targets` [B, T], -100
ignored), or `tokens` and an `attention_mask` [B, T] (--task masked-lm,
targets [B, T]; --task seq-cls, logits [B, C] against targets [B]). The step is traced at these static shapes on fake tensors, at
the level of ATen operators (make_fx over a functional call of the module,
so no weight is touched), and every ATen operator becomes tg operations
through one table (OPS below). What depends only on shapes and buffers
(causal masks built from arange and comparisons, rotary tables) is
evaluated in torch at import time and becomes a constant. Parameters keep
their state-dict names (tied weights once, under their first name) and
become `tg.param` arguments; `--weights` writes their values, which
`tgc-run --load-weights` starts from. An operator with no mapping fails
the import: all of them are listed, each with its count, the module it
came from and the source line of its first use, not only the first. A
trace that stops (a Python branch on a value, an intermediate whose shape
depends on the values) fails with the module, the file and line, and
what would make the model importable.

--check compiles the imported model with tgc-compile, evaluates one random
batch with `tgc-run --eval-only` on the CPU, and prints its loss beside the
module's own (torch, f32); it fails when they differ by more than 1e-5
relative.

The output is verified, raised (tg-raise-attention, tg-raise-rms-norm,
tg-raise-gelu, tg-raise-logit-softcap: the written-out forms of attention,
RMSNorm, GELU's tanh approximation and a soft-cap of the logits become
tg's fused ops) and printed by tgc-opt (found beside
this script in build/bin, or with --tools DIR). Runs on Debian's torch (/usr/bin/python3);
errors are one `tgc-import: error: ...` line and exit status 1. Outputs are
written whole or not at all, and never over a file the import reads: the
--module file, a file of the --hf directory, tgc-import's scripts, the
tools it runs or the interpreter (userfiles.py).
"""
import argparse
import collections
import contextlib
import functools
import importlib.util
import json
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
    # Registered as imported modules are, so that its TorchScript helpers
    # can be traced from their source (traceable).
    sys.modules[loader.name] = module
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


def load_hf(directory, seed):
    """A Hugging Face model directory's model (the class its config.json
    names; the weights when the directory has them, else a seeded random
    initialisation), with eager attention, no dropout and no key/value
    cache, and its task.
    `directory` may also be a config.json alone: the model's shapes only,
    its parameters allocated and never written (a large model costs no
    memory), for planning and timing the import."""
    try:
        import transformers
    except ImportError as e:
        fail(f"--hf needs Hugging Face's transformers ({e}); run tgc-import "
             "with .venv-hf47/bin/python (scripts/install-deps.sh makes it)")
    import torch
    shapes_only = os.path.isfile(directory)
    path = directory if shapes_only else os.path.join(directory, "config.json")
    if not os.path.isfile(path):
        # There but not a regular file (a FIFO would hang the reader, a
        # device never end): named as what it is.
        kind = userfiles.file_kind(path)
        if kind:
            fail(f"--hf: '{path}' is {kind}, not a file")
        fail(f"--hf: '{directory}' has no config.json")
    if os.path.getsize(path) > userfiles.MAX_CONFIG_BYTES:
        fail(f"--hf: '{path}' is {os.path.getsize(path)} bytes, more than "
             f"the {userfiles.MAX_CONFIG_BYTES} a configuration may have")
    try:
        config = transformers.AutoConfig.from_pretrained(path)
    except Exception as e:
        fail(f"--hf: {path}: {type(e).__name__}: {e}")
    architectures = getattr(config, "architectures", None) or []
    if not architectures:
        fail(f"--hf: {path} names no architecture")
    name = architectures[0]
    cls = getattr(transformers, name, None)
    if cls is None:
        fail(f"--hf: {path}: transformers {transformers.__version__} has no "
             f"class {name}")
    from transformers.models.auto import modeling_auto as auto
    # Encoder-decoders first: transformers lists BART's and mBART's
    # conditional generators among the masked LMs too.
    tasks = {"seq2seq": auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
             "causal-lm": auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
             "masked-lm": auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
             "seq-cls": auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES}
    task = next((t for t, names in tasks.items()
                 if name in set(names.values())), None)
    if task is None:
        fail(f"--hf: {path}: {name} is not a causal LM, masked LM, "
             "sequence classifier or encoder-decoder LM (the heads "
             "tgc-import takes)")
    if task == "seq2seq" and getattr(config, "decoder_start_token_id",
                                     None) is None:
        fail(f"--hf: {path}: the encoder-decoder {name} names no "
             "decoder_start_token_id (the token its decoder inputs start "
             "with)")
    for field in ("dropout", "attention_dropout", "hidden_dropout",
                  "resid_pdrop", "embd_pdrop", "attn_pdrop", "activation_dropout",
                  "hidden_dropout_prob", "attention_probs_dropout_prob"):
        if isinstance(getattr(config, field, None), float):
            setattr(config, field, 0.0)
    config._attn_implementation = "eager"
    # No key/value cache: a training step does not decode, and the caches
    # some configurations ask for (Gemma 2's hybrid cache) are built with
    # data-dependent bookkeeping the trace cannot follow.
    if hasattr(config, "use_cache"):
        config.use_cache = False
    if getattr(config, "cache_implementation", None):
        config.cache_implementation = None
    weights = not shapes_only and any(
        os.path.isfile(os.path.join(directory, f)) for f in (
            "model.safetensors", "model.safetensors.index.json",
            "pytorch_model.bin"))
    try:
        if shapes_only:
            from transformers.modeling_utils import no_init_weights
            with no_init_weights():
                model = cls(config)
            model.tie_weights()
        elif weights:
            model = cls.from_pretrained(directory, config=config,
                                        torch_dtype=torch.float32)
        else:
            torch.manual_seed(seed)
            model = cls(config)
    except Exception as e:
        fail(f"--hf: building {name} from '{directory}' failed: "
             f"{type(e).__name__}: {e}")
    return model, task


def recorded_config(directory, model, buffers):
    """The directory's config.json as one line of JSON, for tgc-run
    --save-hf to write beside the trained parameters, and None; or None
    and why not (also printed as a note) when the saved directory would not
    be the model: a buffer the checkpoint holds (BART's final_logits_bias)
    is a constant of the IR, which --save-hf does not write, and
    transformers would load it as zeros."""
    import torch
    path = directory if os.path.isfile(directory) else \
        os.path.join(directory, "config.json")
    saved = set(model.state_dict())
    kept = [name for name, value in buffers.items()
            if name in saved and bool(torch.any(value != 0))]
    if kept:
        why = (f"the checkpoint's buffer {kept[0]} is not zero, and a saved "
               f"directory would lose it: the model holds it as a constant")
        print(f"tgc-import: note: --save-hf will not be offered: {why}")
        return None, why
    with open(path) as f:
        return json.dumps(json.load(f), separators=(",", ":")), None


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
        fail(f"--task {args.task} needs --seq-len T")
    B, T = args.batch, args.seq_len
    inputs = collections.OrderedDict(
        tokens=torch.zeros(B, T, dtype=torch.int64))
    if args.task in ENCODER_TASKS:
        inputs["attention_mask"] = torch.ones(B, T, dtype=torch.int64)
    if args.task == "seq-cls":
        targets = (B,)
    elif args.task == "seq2seq":
        targets = (B, args.target_len or T)
    else:
        targets = (B, T)
    inputs["targets"] = torch.zeros(targets, dtype=torch.int64)
    return inputs


# Tasks whose batches carry an attention mask (padded keys hidden), and
# the tg.task each records for tgc-run's batching.
ENCODER_TASKS = ("masked-lm", "seq-cls", "seq2seq")
TG_TASKS = {"causal-lm": "causal-lm", "masked-lm": "masked-lm",
            "seq-cls": "sequence-classification", "seq2seq": "seq2seq"}


def decoder_inputs(config, targets):
    """An encoder-decoder's decoder inputs for `targets` [B, T], as
    transformers makes them from labels (T5's _shift_right, BART's
    shift_tokens_right): the targets shifted right by one behind
    decoder_start_token_id, an ignored target (-100) read as the padding
    id. Written without in-place updates so that the trace keeps it (a
    concatenation and a masked fill; the import folds what it can)."""
    import torch
    start = torch.full((targets.shape[0], 1), config.decoder_start_token_id,
                       dtype=targets.dtype)
    shifted = torch.cat([start, targets[:, :-1]], dim=1)
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    return shifted.masked_fill(shifted == -100, pad)


def loss_logits(model, task, inputs, whole=False):
    """The logits the loss of `task` reads (with `whole`, the model's whole
    output)."""
    if task == "classify":
        return model(inputs["inputs"])
    if task == "seq2seq":
        out = model(inputs["tokens"], attention_mask=inputs["attention_mask"],
                    decoder_input_ids=decoder_inputs(model.config,
                                                     inputs["targets"]))
    elif task in ENCODER_TASKS:
        out = model(inputs["tokens"], attention_mask=inputs["attention_mask"])
    else:
        out = model(inputs["tokens"])
    return out if whole or not hasattr(out, "logits") else out.logits


def loss_of(model, task, inputs):
    """The module's loss on `inputs` (the function the import traces): the
    mean cross-entropy of its logits against the targets, -100 ignored,
    plus, for a mixture of experts asked for it (output_router_logits), its
    routers' load-balancing loss times router_aux_loss_coef, as
    transformers adds it."""
    import torch.nn.functional as F
    out = loss_logits(model, task, inputs, whole=True)
    logits = out.logits if hasattr(out, "logits") else out
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           inputs["targets"].reshape(-1), ignore_index=-100)
    aux = getattr(out, "aux_loss", None)
    if aux is not None:
        loss = loss + model.config.router_aux_loss_coef * aux
    return loss


# --- tracing -----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _torch_directory():
    import torch
    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def source_of(frames):
    """'FILE:LINE' of the innermost frame outside torch's own files (the
    model's code that called the operation), or None; `frames` innermost
    first, (filename, lineno) pairs."""
    for filename, line in frames:
        if not _in_torch(filename):
            return f"{filename}:{line}"
    return None


@functools.lru_cache(maxsize=None)
def _in_torch(filename):
    """Whether `filename` is torch's own code (or has no file)."""
    return filename.startswith("<") or \
        os.path.abspath(filename).startswith(_torch_directory())


def frames_from(frame):
    """A stack from `frame` outwards, as (filename, lineno) pairs."""
    while frame is not None:
        yield frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back


def traceback_frames(tb):
    """An exception's traceback, innermost first."""
    import traceback
    return [(f.filename, f.lineno)
            for f in reversed(traceback.extract_tb(tb))]


def source_line(location):
    """The text of 'FILE:LINE', stripped, or ''."""
    import linecache
    filename, _, line = location.rpartition(":")
    return linecache.getline(filename, int(line)).strip()


def tracing_failure(e, module, location):
    """The error for a trace that stopped: where (module path, file and
    line, the line itself) and what would make the model importable."""
    what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    what = what.splitlines()[0].rstrip(".")
    if "data-dependent" in what or "tracing tensor" in what:
        why = ("a Python branch, loop or conversion on a tensor's value; "
               "make it depend on shapes only (or compute both sides and "
               "select with torch.where)")
    elif "TorchScript" in what:
        why = ("a torch.jit.script'ed function whose Python source "
               "tgc-import could not find; call the Python function instead")
    elif type(e).__name__ == "DynamicOutputShapeException":
        why = ("an output whose shape depends on the values (boolean "
               "indexing, nonzero, unique); tgc plans memory at static "
               "shapes: write it at a fixed shape (masked_fill, where)")
    else:
        why = ("tgc-import needs a forward pass at static shapes without "
               "data-dependent control flow")
    where = module
    if location:
        code = source_line(location)
        where += f" at {location}" + (f" (`{code}`)" if code else "")
    return f"tracing stopped in {where}: {what}; {why}"


def python_of_script(module, name):
    """The Python function `module.name`, a torch.jit.script'ed function,
    was compiled from: its source recompiled without the decorator (in the
    module's globals, under its file and lines), or None where the source
    cannot be found."""
    import ast
    tree = _source_tree(module)
    for node in tree.body if tree else []:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            namespace = {}
            code = compile(ast.Module(body=[node], type_ignores=[]),
                           module.__file__, "exec")
            exec(code, module.__dict__, namespace)
            return namespace[name]
    return None


@functools.lru_cache(maxsize=None)
def _source_tree(module):
    """A module's parsed source (once per module), or None."""
    import ast
    import inspect
    try:
        return ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return None


@contextlib.contextmanager
def traceable(model):
    """What real modeling code calls, made traceable for the trace's
    duration: the TorchScript helpers of the modules `model` is built from
    (DeBERTa's relative positions) replaced by the Python functions they
    were scripted from (TorchScript runs outside the tracer, which then
    sees no operation and stops on fake tensors; Python is traced like the
    rest of the forward, and what depends only on shapes is evaluated at
    import), repeat_interleave by an int count made static, and each
    mixture-of-experts block's forward by its static form (hf_moe.py)."""
    import torch
    replaced = []
    for path, sub in model.named_modules():
        if type(sub).__name__ in hf_moe.BLOCKS:
            why = hf_moe.unsupported(sub)
            if why:
                fail(f"{path} ({type(sub).__name__}) cannot be imported: "
                     f"{why}")
            sub.forward = hf_moe.static_forward(sub)
            replaced.append((sub, "forward", None))
    for name in sorted({type(m).__module__ for m in model.modules()}):
        module = sys.modules.get(name)
        for attr, value in list(vars(module).items()) if module else []:
            if isinstance(value, torch.jit.ScriptFunction):
                python = python_of_script(module, attr)
                if python is not None:
                    replaced.append((module, attr, value))
                    setattr(module, attr, python)
    original = torch.nn.functional.one_hot
    replaced.append((torch.nn.functional, "one_hot", original))
    torch.nn.functional.one_hot = hf_moe.static_one_hot(original)
    for owner in (torch, torch.Tensor):
        original = owner.repeat_interleave
        replaced.append((owner, "repeat_interleave", original))
        setattr(owner, "repeat_interleave",
                repeat_interleave_static(original))
    try:
        yield
    finally:
        for module, attr, value in reversed(replaced):
            if value is None:  # an instance's own forward, removed
                delattr(module, attr)
            else:
                setattr(module, attr, value)


def repeat_interleave_static(original):
    """torch's repeat_interleave with a Python int count as a broadcast and
    a reshape: torch 1.13 turns the count into a tensor, whose output shape
    the tracer cannot know (GLM's interleaved rotary tables)."""
    def repeat_interleave(input, repeats, dim=None, *, output_size=None):
        if not isinstance(repeats, int) or input.dim() == 0:
            return original(input, repeats, dim, output_size=output_size)
        if dim is None:
            input, dim = input.reshape(-1), 0
        dim %= input.dim()
        shape = list(input.shape)
        spread = input.unsqueeze(dim + 1).expand(
            shape[:dim + 1] + [repeats] + shape[dim + 1:])
        return spread.reshape(shape[:dim] + [shape[dim] * repeats] +
                              shape[dim + 1:])
    return repeat_interleave


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
    # Tied weights (GPT-2's lm_head is wte) are one parameter under its
    # first name; every other name of it is bound to the same value.
    first = {id(v): n for n, v in list(params.items()) + list(buffers.items())}
    aliases = [(f"{path}.{name}" if path else name, first[id(v)])
               for path, sub in model.named_modules()
               for name, v in list(sub._parameters.items()) +
               list(sub._buffers.items())
               if v is not None and id(v) in first and
               (f"{path}.{name}" if path else name) != first[id(v)]]

    def step(*flat):
        state = dict(zip(names, flat[:count]))
        for alias, name in aliases:
            state[alias] = state[name]
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
        node.meta["source"] = source_of(frames_from(sys._getframe(1)))
        return node
    torch.fx.Graph.create_node = create_node
    model.eval()
    try:
        with traceable(model):
            graph = make_fx(step, tracing_mode="fake")(
                *(v.detach() for v in values), *inputs.values())
    except ImportError_:
        raise
    except Exception as e:
        # The module the trace was in: its forward hook did not pop it.
        fail(tracing_failure(e, stack[-1] or f"({type(model).__name__})",
                             source_of(traceback_frames(e.__traceback__))))
    finally:
        torch.fx.Graph.create_node = create
        for hook in hooks:
            hook.remove()
    return graph, params, buffers


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_moe  # noqa: E402
import userfiles  # noqa: E402
from aten_to_tg import (IN_PLACE, OPS, VIEWS, Emitter, Known,  # noqa: E402
                        Missing, Unsupported,
                        Value, addmm, baddbmm, flatten, is_known, matmul,
                        resolve, unwrap)


def convert(graph, params, buffers, inputs, name, task, root="model",
            hf_config=None, hf_refused=None):
    """The tg IR text of the traced loss, or the error listing what has no
    tg form (by operation and module path, with the source line of the
    first of each; `root` names the model itself). `hf_config`, a Hugging
    Face config.json's text, is recorded as tg.hf_config (tgc-run
    --save-hf writes it); `hf_refused`, why it is not, as
    tg.hf_config_refused."""
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
    first_source = {}  # (operation, module) -> where its first one is

    def unsupported(what, node):
        key = (what, where(node))
        missing[key] += 1
        first_source.setdefault(key, node.meta.get("source"))
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
        if node.op == "get_attr":  # a tensor the forward made itself
            env[node] = Known(getattr(graph, node.target))
            continue
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
                unsupported(target, node)
            env[node] = Missing()
            continue
        if handler not in (matmul, addmm, baddbmm):
            args = resolve(e, args)
        try:
            if handler is None:
                raise Unsupported(target)
            env[node] = handler(e, node, args)
            if target in IN_PLACE and isinstance(node.args[0], torch.fx.Node):
                # The updated tensor's later readers read the result; a view
                # taken before the update would not see it here.
                updated = node.args[0]
                order = {n: i for i, n in enumerate(graph.graph.nodes)}
                if any(order[u] < order[node] and u is not node and
                       str(u.target) in VIEWS for u in updated.users):
                    raise Unsupported(f"{target} of a tensor a view reads")
                env[updated] = env[node]
        except Unsupported as u:
            unsupported(u.what, node)
            env[node] = Missing()
    if missing:
        lines = [f"  {module}: {what} x{count}" +
                 (f" (first at {first_source[(what, module)]})"
                  if first_source[(what, module)] else "")
                 for (what, module), count in sorted(missing.items())]
        return None, (f"{sum(missing.values())} operations have no tg form "
                      f"({len(missing)} kinds):\n" + "\n".join(lines))
    if not isinstance(loss, Value) or loss.shape != ():
        fail("the traced function does not end in a scalar loss")
    attrs = ["tg.model"]
    if task in TG_TASKS:
        attrs.append(f'tg.task = "{TG_TASKS[task]}"')
    for attr, text in (("tg.hf_config", hf_config),
                       ("tg.hf_config_refused", hf_refused)):
        if text is not None:
            escaped = text.replace("\\", "\\\\").replace('"', '\\"')
            attrs.append(f'{attr} = "{escaped}"')
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
    userfiles.atomic_write(path, struct.pack("<Q", len(text)) + text +
                           b"".join(blobs))


# The tools of this build that tgc-import runs.
TOOLS = ("tgc-opt", "tgc-compile", "tgc-run")


def tools_directory(args):
    # --tools, else the build directory whose bin/tgc-import started this
    # (TGC_BIN), else the repository's build/bin.
    return args.tools or os.environ.get("TGC_BIN") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin")


def tool(args, name):
    directory = tools_directory(args)
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
        batch = example_inputs(args)
        batch["tokens"] = torch.randint(0, vocab, (args.batch, args.seq_len))
        if "attention_mask" in batch:  # the last row padded from its middle
            batch["attention_mask"][-1, args.seq_len // 2:] = 0
        with torch.no_grad():
            classes = loss_logits(model, args.task, batch).shape[-1]
        batch["targets"] = torch.randint(0, classes, batch["targets"].shape)
        if args.task == "seq2seq":  # the last target row padded
            batch["targets"][-1, batch["targets"].shape[1] // 2:] = -100
    with torch.no_grad():
        if args.task == "seq2seq":  # transformers' own shift and loss
            theirs = float(model(batch["tokens"],
                                 attention_mask=batch["attention_mask"],
                                 labels=batch["targets"]).loss)
        else:
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


def check_outputs(args):
    """No output names a file the import reads (the --module file, the
    files of the --hf directory, the scripts and tools it runs, the
    interpreter) or the other output (userfiles.py): a mistake on the
    command line must not cost the user a model file or its weights, nor
    break tgc-import itself."""
    outputs = [userfiles.NamedFile("-o", args.output)]
    if args.weights:
        outputs.append(userfiles.NamedFile("--weights", args.weights))
    for output in outputs:
        userfiles.check_output_path(output.option, output.path)
    inputs = userfiles.program_files(__file__, ("aten_to_tg.py",))
    inputs += [userfiles.NamedFile(f"the tool {name}",
                                   os.path.join(tools_directory(args), name))
               for name in TOOLS]
    if args.module:
        inputs.append(userfiles.NamedFile("--module",
                                          args.module.rpartition(":")[0]))
    if args.hf:
        inputs.append(userfiles.NamedFile("--hf", args.hf,
                                          userfiles.HUGGING_FACE_FILES))
    userfiles.check_distinct_files(inputs, outputs)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tgc-import", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--module", metavar="FILE.py:FACTORY")
    source.add_argument("--hf", metavar="DIR", help="a Hugging Face model "
                        "directory (its config.json, and its weights when it "
                        "has them)")
    parser.add_argument("--task", choices=("classify", "causal-lm",
                                           "masked-lm", "seq-cls", "seq2seq"))
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--features", type=int)
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--target-len", type=int, help="the decoder's "
                        "length (seq2seq; default: --seq-len)")
    parser.add_argument("--name", default="model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--weights", help="write the parameters here")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", help="where tgc-opt, tgc-compile and "
                        "tgc-run are (default: the build of the tgc-import command, else build/bin)")
    args = parser.parse_args(argv)
    try:
        if args.batch < 1:
            fail("--batch must be positive")
        check_outputs(args)
        try:
            import torch
        except ImportError as e:
            fail(f"this needs torch ({e}); run it with /usr/bin/python3")
        del torch  # imported for the check only
        if args.hf:
            model, task = load_hf(args.hf, args.seed)
            if os.path.isfile(args.hf) and (args.check or args.weights):
                fail("--hf with a config.json alone imports shapes only: no "
                     "--check or --weights without the model's weights")
            if args.task not in (None, task):
                fail(f"--hf: the directory's model is a {task} model, not "
                     f"--task {args.task}")
            args.task = task
        else:
            if args.task is None:
                fail("--module needs --task classify or causal-lm")
            model = load_factory(args.module)
        inputs = example_inputs(args)
        graph, params, buffers = trace(model, args.task, inputs)
        hf_config, hf_refused = recorded_config(args.hf, model, buffers) \
            if args.hf else (None, None)
        text, missing = convert(graph, params, buffers, inputs, args.name,
                                args.task, type(model).__name__, hf_config,
                                hf_refused)
        if missing:
            fail(missing)
        # tgc-opt verifies the IR and prints it in the ops' own syntax.
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as raw:
            raw.write(text)
            raw.flush()
            text = run([tool(args, "tgc-opt"), "--tg-raise-attention",
                        "--tg-raise-rms-norm", "--tg-raise-gelu",
                        "--tg-raise-swiglu", "--tg-raise-logit-softcap", raw.name])
        userfiles.atomic_write(args.output, text)
        if args.weights:
            write_safetensors(args.weights, params)
        print(f"tgc-import: wrote {args.output}: {len(params)} parameters "
              f"({sum(p.numel() for p in params.values())} values), "
              f"{text.count(' = tg.')} operations")
        if args.check:
            check(args, model, text, params)
    except (ImportError_, userfiles.UserFileError) as e:
        print(f"tgc-import: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
