"""4-bit AdamW state (Li et al., "Memory Efficient Optimizers with 4-bit
States", NeurIPS 2023, as torchao's AdamW4bit keeps it), written here in
torch from the paper and torchao's description, as the reference for tgc's
tg.adamw_4bit_update: the first moment on the signed dynamic tree map with
3 exponent bits (16 entries), the second on the linear map 1/16 .. 1
without zero, an f32 scale max(absmax, 1e-12) per block, the nearest entry
of x / scale found by a 4-step search and rounded up at a tie, two codes a
byte (the first in the high nibble). The update itself is
torch.optim.AdamW's arithmetic (tgc's, the same as its 8-bit update), from
the unrounded new moments.

  maps:    lowbit_reference.py maps MLIR_FILE
           checks the two 16-entry tg.constant maps in tgc-opt's output
           (hex) against the maps computed with torch.
  agree:   lowbit_reference.py agree A B FRACTION
           whether at least FRACTION of the 4-bit codes of two checkpoints
           (every `.q4` tensor, both nibbles) are equal: runs whose sums
           differ only in order (data-parallel ranks) round a few moments
           to a neighbouring code; a layout error scrambles most of them.
  steps:   lowbit_reference.py steps INIT DATA STEPS TGC_CKPT BLOCK MIN_SIZE
           [lr wd beta1 beta2 eps]
           replays STEPS AdamW updates of the linear model loss = sum(w * x)
           (its gradient is exactly the batch x) from INIT on DATA, and
           compares every parameter, packed code and scale with tgc's
           checkpoint.
"""
import math
import re
import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import safetensors_io  # noqa: E402
from bnb_reference import f32, ulps  # noqa: E402


def signed_map():
    """create_dynamic_map(signed=True, max_exponent_bits=3, total_bits=4):
    for exponent i, the midpoints of linspace(0.1, 1, 2^i + 1) times
    10^(i - 2), both signs; then 0 and 1."""
    data = []
    for i in range(3):
        bounds = torch.linspace(0.1, 1, 2 ** i + 1)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        data += ((10 ** (i - 2)) * means).tolist()
        data += (-(10 ** (i - 2)) * means).tolist()
    data += [0.0, 1.0]
    assert len(data) == 16
    return torch.sort(torch.tensor(data, dtype=torch.float32)).values


def unsigned_map():
    """The second moment's map: linear, without zero."""
    return torch.linspace(0, 1, 17)[1:]


def check_maps(path):
    text = open(path).read()
    hexes = re.findall(r'tg\.constant dense<"0x([0-9A-F]+)"> : tensor<16xf32>',
                       text)
    if len(hexes) != 2:
        sys.exit(f"expected two 16-entry maps in {path}, found {len(hexes)}")
    maps = [torch.from_numpy(np.frombuffer(bytes.fromhex(h), "<f4").copy())
            for h in hexes]
    for name, got, want in (("signed", maps[0], signed_map()),
                            ("unsigned", maps[1], unsigned_map())):
        worst = ulps(got, want)
        if worst > 0:
            sys.exit(f"{name} map differs from the reference by {worst} ulp")
        print(f"{name} map: 16 entries, min {got[0].item():.8f}, "
              f"max {got[-1].item():.1f}, equal to the reference")


def quantize(x, qmap):
    """The largest entry <= x (entry 0 below all), then one up when x is at
    least half way to the next."""
    codes = torch.where(x >= qmap[8], 8, 0)
    codes += torch.where(x >= qmap[codes + 4], 4, 0)
    codes += torch.where(x >= qmap[codes + 2], 2, 0)
    codes += torch.where(x >= qmap[codes + 1], 1, 0)
    up = (codes + 1).clamp(max=15)
    down_value = qmap[codes]
    return torch.where(x - down_value >= (qmap[up] - down_value) * 0.5, up,
                       codes)


def blockwise(values, qmap, block):
    """A flat f32 tensor quantized per block: packed codes and scales."""
    n = values.numel()
    blocks = (n + block - 1) // block
    padded = torch.zeros(blocks * block)
    padded[:n] = values
    scale = padded.view(blocks, block).abs().amax(dim=1).clamp(min=1e-12)
    scaled = (padded.view(blocks, block) / scale[:, None]).reshape(-1)[:n]
    codes = quantize(scaled, qmap)
    if n % 2:
        codes = torch.cat([codes, torch.zeros(1, dtype=codes.dtype)])
    packed = (codes[0::2] << 4) | codes[1::2]
    return packed, scale


def dequantize(packed, scale, qmap, block, n):
    codes = torch.stack([packed >> 4, packed & 15], dim=-1).reshape(-1)[:n]
    return qmap[codes] * scale.repeat_interleave(block)[:n]


def replay(init, data, steps, block, min_size, lr, wd, b1, b2, eps):
    smap, umap = signed_map(), unsigned_map()
    params = {k: v.clone().float() for k, v in init.items()
              if re.fullmatch(r"w\d+", k)}
    state = {}
    lr32 = f32(lr)
    for t in range(1, steps + 1):
        for name, p in params.items():
            flat = p.reshape(-1)
            batch = data["x" + name[1:]]
            g = batch[(t - 1) % batch.shape[0]].reshape(-1).float()
            n = flat.numel()
            quantized = n >= min_size
            st = state.setdefault(name, {})
            step_size = f32(lr32 / (1.0 - b1 ** t))
            bc2_sqrt = f32(math.sqrt(1.0 - b2 ** t))
            decay = f32(1.0 - lr32 * wd)
            if quantized and st:
                m_old = dequantize(st["mq"], st["ms"], smap, block, n)
                v_old = dequantize(st["vq"], st["vs"], umap, block, n)
            elif quantized:
                m_old, v_old = torch.zeros(n), torch.zeros(n)
            else:
                m_old = st.get("m", torch.zeros(n))
                v_old = st.get("v", torch.zeros(n))
            m = f32(b1) * m_old + f32(1 - b1) * g
            v = f32(b2) * v_old + f32(1 - b2) * g * g
            denom = v.sqrt() / bc2_sqrt + f32(eps)
            flat = flat * decay - step_size * (m / denom)
            if quantized:
                st["mq"], st["ms"] = blockwise(m, smap, block)
                st["vq"], st["vs"] = blockwise(v, umap, block)
            else:
                st["m"], st["v"] = m, v
            params[name] = flat.reshape(p.shape)
    return params, state


def compare(init_path, data_path, steps, tgc_path, block, min_size, lr=1e-3,
            wd=0.01, b1=0.9, b2=0.999, eps=1e-8):
    init = safetensors_io.load(init_path)
    data = safetensors_io.load(data_path)
    tgc = safetensors_io.load(tgc_path)
    params, state = replay(init, data, steps, block, min_size, lr, wd, b1, b2,
                           eps)
    codes = 0
    for name, p in params.items():
        got = tgc[name]
        # The same f32 arithmetic in the same order: equal bits.
        if not torch.equal(got, p):
            sys.exit(f"{name}: parameter differs by "
                     f"{(got - p).abs().max().item():.3g}")
        st = state[name]
        for state_name, qkey, skey in (("exp_avg", "mq", "ms"),
                                       ("exp_avg_sq", "vq", "vs")):
            if qkey not in st:
                if f"{name}.{state_name}.q4" in tgc:
                    sys.exit(f"{name}.{state_name} should be f32 (< min size)")
                want = st["m" if state_name == "exp_avg" else "v"]
                if not torch.equal(tgc[f"{name}.{state_name}"].reshape(-1),
                                   want):
                    sys.exit(f"{name}.{state_name} (f32) differs")
                continue
            q = tgc[f"{name}.{state_name}.q4"].reshape(-1).long()
            if q.numel() != (p.numel() + 1) // 2:
                sys.exit(f"{name}.{state_name}.q4 holds {q.numel()} bytes, "
                         f"not {(p.numel() + 1) // 2}")
            if not torch.equal(tgc[f"{name}.{state_name}.absmax"], st[skey]):
                sys.exit(f"{name}.{state_name}.absmax differs")
            wrong = int((q != st[qkey]).sum())
            if wrong:
                sys.exit(f"{name}.{state_name}.q4: {wrong} of {q.numel()} "
                         "bytes differ")
            codes += 2 * q.numel()
    print(f"adamw 4-bit: {steps} steps match the reference: parameters, "
          f"scales and {codes} packed codes identical")


def agree(path_a, path_b, fraction):
    a, b = safetensors_io.load(path_a), safetensors_io.load(path_b)
    same = total = 0
    for name in sorted(k for k in a if k.endswith(".q4")):
        x, y = a[name].long(), b[name].long()
        if x.shape != y.shape:
            sys.exit(f"{name}: shape {list(x.shape)} against {list(y.shape)}")
        same += int(((x >> 4) == (y >> 4)).sum() + ((x & 15) == (y & 15)).sum())
        total += 2 * x.numel()
    if total == 0:
        sys.exit("no 4-bit state in the checkpoints")
    verdict = "agree" if same >= fraction * total else "do NOT agree"
    print(f"{same / total:.2%} of {total} codes equal: {verdict} "
          f"(at least {fraction:.0%})")


if __name__ == "__main__":
    if sys.argv[1] == "maps":
        check_maps(sys.argv[2])
    elif sys.argv[1] == "agree":
        agree(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        init, data, steps, tgc, block, min_size = sys.argv[2:8]
        extra = [float(x) for x in sys.argv[8:]]
        compare(init, data, int(steps), tgc, int(block), int(min_size),
                *extra)
