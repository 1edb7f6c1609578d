"""Mixture-of-experts blocks (Mixtral, Qwen2-MoE) in a form the import can
trace. Their modeling code loops over the experts and picks each one's
tokens with torch.where on the router's choices: a shape that depends on
values, which no static graph holds. The forward here computes the same
thing at static shapes with three operators of tgc's own (registered with
torch as `tgc::moe_route`, `tgc::expert_linear`; the import turns them into
tg.moe_route and tg.expert_linear):

    choices     = topk(softmax(router(x)), k)        [N, k]
    rows, positions, offsets = moe_route(choices)    every choice sorted by
                                                     expert, no token dropped
    xs = x[rows]                                     [N * k, D]
    ys = down(act(gate(xs)) * up(xs)), each an expert_linear over the
         experts' own weights ([N * k, F] and back, split by offsets)
    out[n] = sum_j weight[n, j] * ys[positions[n, j]]

Each operator also has a plain PyTorch implementation (the experts in a
loop), so the static forward runs eagerly too.

The routers' load-balancing loss (output_router_logits) one-hot encodes
the choices with F.one_hot, which checks its values' range in the data;
during the trace it is `tgc::one_hot` (a tg.gather_grad of ones into the
classes)."""

import functools

# The modeling classes this module rewrites: where each keeps its router,
# experts and their projections, whether the top-k weights are normalized,
# and whether a shared expert (Qwen2-MoE: sigmoid-gated) is added.
BLOCKS = {
    "MixtralSparseMoeBlock": dict(
        gate="w1", up="w3", down="w2", shared=False,
        normalize=lambda block: True),
    "Qwen2MoeSparseMoeBlock": dict(
        gate="gate_proj", up="up_proj", down="down_proj", shared=True,
        normalize=lambda block: bool(block.norm_topk_prob)),
}


@functools.lru_cache(maxsize=None)
def library():
    """Registers tgc's operators with torch once: their schemas, a CPU
    implementation and a shape function (Meta) for the tracer."""
    import torch
    lib = torch.library.Library("tgc", "DEF")
    lib.define("moe_route(Tensor choices, int experts) -> "
               "(Tensor, Tensor, Tensor)")
    lib.define("expert_linear(Tensor input, Tensor offsets, "
               "Tensor[] weights, bool transpose_weight) -> Tensor")
    lib.define("one_hot(Tensor input, int classes) -> Tensor")

    def route(choices, experts):
        flat = choices.reshape(-1)
        order = torch.sort(flat, stable=True).indices
        positions = torch.empty_like(flat)
        positions[order] = torch.arange(flat.numel())
        counts = torch.bincount(flat, minlength=experts)
        offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        return ((order // choices.shape[1]).reshape(-1, 1),
                positions.reshape(choices.shape), offsets)

    def route_meta(choices, experts):
        n = choices.numel()
        return (choices.new_empty((n, 1)), choices.new_empty(choices.shape),
                choices.new_empty((experts + 1,)))

    def expert_linear(input, offsets, weights, transpose_weight):
        out = input.new_empty(expert_linear_meta(
            input, offsets, weights, transpose_weight).shape)
        bounds = offsets.tolist()
        for e, w in enumerate(weights):
            rows = input[bounds[e]:bounds[e + 1]]
            out[bounds[e]:bounds[e + 1]] = rows @ (w.t() if transpose_weight
                                                   else w)
        return out

    def expert_linear_meta(input, offsets, weights, transpose_weight):
        n = weights[0].shape[0 if transpose_weight else 1]
        return input.new_empty((input.shape[0], n))

    def one_hot_meta(input, classes):
        return input.new_empty(tuple(input.shape) + (classes,))

    lib.impl("one_hot", lambda input, classes: torch.nn.functional.one_hot(
        input, classes), "CPU")
    lib.impl("one_hot", one_hot_meta, "Meta")
    lib.impl("moe_route", route, "CPU")
    lib.impl("moe_route", route_meta, "Meta")
    lib.impl("expert_linear", expert_linear, "CPU")
    lib.impl("expert_linear", expert_linear_meta, "Meta")
    return lib


def unsupported(block):
    """Why `block` cannot take the static forward, or None."""
    kind = BLOCKS[type(block).__name__]
    if getattr(block, "jitter_noise", 0):
        return ("its router's jitter noise (router_jitter_noise, random "
                "each step) has no static form; set it to 0")
    for expert in block.experts:
        for name in (kind["gate"], kind["up"], kind["down"]):
            if getattr(expert, name).bias is not None:
                return "its experts' projections have biases"
    return None


def static_forward(block):
    """`block`'s forward at static shapes (see the module's docstring)."""
    import torch
    import torch.nn.functional as F
    library()
    kind = BLOCKS[type(block).__name__]
    experts, k = len(block.experts), block.top_k
    normalize = kind["normalize"](block)

    def weights(name):
        return [getattr(e, name).weight for e in block.experts]

    def forward(hidden_states):
        batch, length, width = hidden_states.shape
        x = hidden_states.view(-1, width)
        router_logits = block.gate(x)
        probs = F.softmax(router_logits, dim=1, dtype=torch.float)
        top, choices = torch.topk(probs, k, dim=-1)
        if normalize:
            top = top / top.sum(dim=-1, keepdim=True)
        top = top.to(x.dtype)
        rows, positions, offsets = torch.ops.tgc.moe_route(choices, experts)
        xs = x.index_select(0, rows.view(-1))
        act = block.experts[0].act_fn
        linear = torch.ops.tgc.expert_linear
        h = act(linear(xs, offsets, weights(kind["gate"]), True)) * \
            linear(xs, offsets, weights(kind["up"]), True)
        ys = linear(h, offsets, weights(kind["down"]), True)
        picked = ys.index_select(0, positions.view(-1)).view(-1, k, width)
        out = (picked * top.unsqueeze(-1)).sum(dim=1)
        if kind["shared"]:
            shared = block.shared_expert(x)
            out = out + torch.sigmoid(block.shared_expert_gate(x)) * shared
        return out.reshape(batch, length, width), router_logits
    return forward


def static_one_hot(original):
    """F.one_hot with a given class count as tgc::one_hot (its value check
    has no static form); anything else as before."""
    import torch
    library()

    def one_hot(input, num_classes=-1):
        if num_classes < 0:
            return original(input, num_classes)
        return torch.ops.tgc.one_hot(input, num_classes)
    return one_hot

