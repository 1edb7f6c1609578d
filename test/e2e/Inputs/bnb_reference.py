"""bitsandbytes' 8-bit blockwise optimizers, written here in torch from the
paper and bitsandbytes' sources, as the reference for tgc's
tg.adamw_8bit_update / tg.sgd_8bit_update.

  maps:    bnb_reference.py maps MLIR_FILE
           checks the two tg.constant maps in tgc-opt's output (hex) against
           create_dynamic_map(signed=True/False) computed with torch.
  steps:   bnb_reference.py steps adamw|sgd INIT DATA STEPS TGC_CKPT
           BLOCK MIN_SIZE [lr wd beta1 beta2 eps momentum]
           replays STEPS updates of the linear model loss = sum(w * x) (its
           gradient is exactly the batch x) from INIT on DATA, and compares
           every parameter, code and absmax with tgc's checkpoint.
"""
import math
import re
import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402


def create_dynamic_map(signed, max_exponent_bits=7, total_bits=8):
    """bitsandbytes.functional.create_dynamic_map, as it computes it."""
    data = []
    non_sign_bits = total_bits - 1
    additional_items = 2 ** (non_sign_bits - max_exponent_bits) - 1
    for i in range(max_exponent_bits):
        items = (2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed
                 else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1)
        boundaries = torch.linspace(0.1, 1, items)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    if additional_items > 0:
        boundaries = torch.linspace(0.1, 1, additional_items + 1)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) <= 256
    data += [0] * (256 - len(data))
    return torch.sort(torch.tensor(data, dtype=torch.float32)).values


def ulps(a, b):
    ia = a.numpy().view(np.int32).astype(np.int64)
    ib = b.numpy().view(np.int32).astype(np.int64)
    return int(np.abs(ia - ib).max())


def check_maps(path):
    text = open(path).read()
    hexes = re.findall(r'tg\.constant dense<"0x([0-9A-F]+)"> : tensor<256xf32>',
                       text)
    if len(hexes) != 2:
        sys.exit(f"expected two 256-entry maps in {path}, found {len(hexes)}")
    maps = [torch.from_numpy(np.frombuffer(bytes.fromhex(h), "<f4").copy())
            for h in hexes]
    # tgc creates the signed map first.
    for name, got, signed in (("signed", maps[0], True),
                              ("unsigned", maps[1], False)):
        want = create_dynamic_map(signed)
        worst = ulps(got, want)
        if worst > 2:
            sys.exit(f"{name} map differs from bitsandbytes' by {worst} ulp")
        if not torch.equal(got, torch.sort(got).values):
            sys.exit(f"{name} map is not sorted")
        print(f"{name} map: 256 entries, min {got[0].item():.8f}, "
              f"max {got[-1].item():.1f}, within {worst} ulp of "
              "create_dynamic_map")


def quantize(x, code, signed):
    """Nearest code to x (ties to the lower code), bnb's sign rule."""
    mid = (code[:-1] + code[1:]) * 0.5
    q = torch.bucketize(x, mid)  # number of midpoints < x
    if signed:
        fix = (x < 0) & (code[q] >= 0) & (q > 0)
        q = q - fix.long()
    return q


def blockwise(values, code, signed, block):
    """Quantizes a flat f32 tensor per block: codes and absmax."""
    n = values.numel()
    blocks = (n + block - 1) // block
    padded = torch.zeros(blocks * block)
    padded[:n] = values
    absmax = padded.view(blocks, block).abs().max(dim=1).values
    inverse = torch.where(absmax > 0, torch.tensor(1.0) / absmax,
                          torch.tensor(0.0))
    scaled = (padded.view(blocks, block) * inverse[:, None]).reshape(-1)[:n]
    return quantize(scaled, code, signed), absmax


def dequantize(q, absmax, code, block):
    scale = absmax.repeat_interleave(block)[:q.numel()]
    return code[q] * scale


def f32(x):
    return float(np.float32(x))


def replay(kind, init, data, steps, block, min_size, lr, wd, b1, b2, eps,
           momentum):
    smap, umap = create_dynamic_map(True), create_dynamic_map(False)
    params = {k: v.clone().float() for k, v in init.items()
              if re.fullmatch(r"w\d+", k)}
    state = {}
    lr32 = f32(lr)
    for t in range(1, steps + 1):
        for name, p in params.items():
            flat = p.reshape(-1)
            g = data["x" + name[1:]][(t - 1) % data["x" + name[1:]].shape[0]]
            g = g.reshape(-1).float()
            n = flat.numel()
            quantized = n >= min_size
            st = state.setdefault(name, {})
            if kind == "adamw":
                bc1 = 1.0 - b1 ** t
                bc2 = 1.0 - b2 ** t
                step_size = f32(lr32 / bc1)
                bc2_sqrt = f32(math.sqrt(bc2))
                decay = f32(1.0 - lr32 * wd)
                if quantized:
                    m_old = (dequantize(st["mq"], st["ma"], smap, block)
                             if st else torch.zeros(n))
                    v_old = (dequantize(st["vq"], st["va"], umap, block)
                             if st else torch.zeros(n))
                else:
                    m_old = st.get("m", torch.zeros(n))
                    v_old = st.get("v", torch.zeros(n))
                m = f32(b1) * m_old + f32(1 - b1) * g
                v = f32(b2) * v_old + f32(1 - b2) * g * g
                denom = v.sqrt() / bc2_sqrt + f32(eps)
                flat = flat * decay - step_size * (m / denom)
                if quantized:
                    st["mq"], st["ma"] = blockwise(m, smap, True, block)
                    st["vq"], st["va"] = blockwise(v, umap, False, block)
                else:
                    st["m"], st["v"] = m, v
            else:
                d = g + f32(wd) * flat
                if t == 1:
                    b = d
                else:
                    b_old = (dequantize(st["bq"], st["ba"], smap, block)
                             if quantized else st["b"])
                    b = f32(momentum) * b_old + f32(1.0) * d
                flat = flat - lr32 * b
                if quantized:
                    st["bq"], st["ba"] = blockwise(b, smap, True, block)
                else:
                    st["b"] = b
            params[name] = flat.reshape(p.shape)
    return params, state


def compare(kind, init_path, data_path, steps, tgc_path, block, min_size,
            lr=1e-3, wd=None, b1=0.9, b2=0.999, eps=1e-8, momentum=0.9):
    if wd is None:
        wd = 0.01 if kind == "adamw" else 0.0
    init = safetensors_io.load(init_path)
    data = safetensors_io.load(data_path)
    tgc = safetensors_io.load(tgc_path)
    params, state = replay(kind, init, data, steps, block, min_size, lr, wd,
                           b1, b2, eps, momentum)
    names = {"adamw": (("exp_avg", "mq", "ma"), ("exp_avg_sq", "vq", "va")),
             "sgd": (("momentum_buffer", "bq", "ba"),)}[kind]
    codes = exact = 0
    for name, p in params.items():
        got = tgc[name]
        # The same elementwise update as the reference, in f32, for a few
        # steps: the parameters differ only where a dequantized moment
        # rounds differently (a code one step apart, allowed below), by far
        # less than lr * 1e-2; rtol 1e-5 (about 170 roundings of 2^-24) and
        # atol 1e-7 (1e-4 of lr) hold that.
        if not torch.allclose(got, p, rtol=1e-5, atol=1e-7):
            sys.exit(f"{name}: parameter differs by "
                     f"{(got - p).abs().max().item():.3g}")
        st = state[name]
        for state_name, qkey, akey in names:
            if qkey not in st:
                if f"{name}.{state_name}.q8" in tgc:
                    sys.exit(f"{name}.{state_name} should be f32 (< min size)")
                continue
            q = tgc[f"{name}.{state_name}.q8"].reshape(-1).long()
            a = tgc[f"{name}.{state_name}.absmax"]
            # absmax is the largest |moment| of a block: the moments' own
            # f32 rounding, a few ulps, held to 1e-5.
            if not torch.allclose(a, st[akey], rtol=1e-5, atol=0):
                sys.exit(f"{name}.{state_name}.absmax differs by "
                         f"{(a - st[akey]).abs().max().item():.3g}")
            diff = (q - st[qkey]).abs()
            if diff.max().item() > 1:
                sys.exit(f"{name}.{state_name}.q8: a code differs by "
                         f"{diff.max().item()} (more than one step)")
            codes += q.numel()
            exact += int((diff == 0).sum())
    print(f"{kind} 8-bit: {steps} steps match the reference: parameters, "
          f"absmax, and {codes} codes within one step "
          f"({exact / codes:.4%} identical)")


if __name__ == "__main__":
    if sys.argv[1] == "maps":
        check_maps(sys.argv[2])
    else:
        kind, init, data, steps, tgc, block, min_size = sys.argv[2:9]
        extra = [float(x) for x in sys.argv[9:]]
        compare(kind, init, data, int(steps), tgc, int(block), int(min_size),
                *extra)
