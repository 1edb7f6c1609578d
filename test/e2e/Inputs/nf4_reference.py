"""bitsandbytes' 4-bit weight quantization (QLoRA's NF4 and its FP4), with
double-quantized absmax values, written here in torch from bitsandbytes'
CUDA kernels (csrc/kernels.cu: kQuantizeBlockwise, dQuantizeNF4,
dQuantizeFP4, dQuantize<0>) and functional.py (quantize_4bit,
dequantize_4bit): the reference tgc's tg-quantize-frozen and its loader
are checked against, runnable on Debian's torch 1.13.

  quantize(w, quant_type, double_quant, block=64)
      -> dict(codes, absmax, nested_absmax, offset) as bitsandbytes' QuantState
  dequantize(state, shape, quant_type, dtype) -> the weight

Where bitsandbytes' CPU backend and its CUDA kernels disagree this follows
the CUDA kernels, which made the checkpoints the hub serves:
  - an all-zero block: CUDA scales by 1/0 and the NaN lands on code 0
    (dequantized: -0.0); the CPU path clamps the absmax to 1e-38 (code of 0);
  - the double quantization of the absmax values: CUDA takes the nearest of
    its binary search's two candidates (dQuantize<0>); the CPU path a
    65,536-entry lookup table, which differs for a few values a tensor.
Both reciprocals here are IEEE divisions, as bitsandbytes' CPU path; its
CUDA build (--use_fast_math) takes an approximate reciprocal, which can
move a value lying within an ulp of a threshold.

Usage (as a script): nf4_reference.py bnb
  checks this replay against the installed bitsandbytes (a torch 2 venv).
"""
import math
import sys

import torch

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
       0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
# dQuantizeNF4's decision tree: code = how many of these x exceeds.
NF4_THRESHOLDS = [-0.8480964004993439, -0.6106329262256622,
                  -0.4599952697753906, -0.33967943489551544,
                  -0.23460740596055984, -0.13791173323988914,
                  -0.045525018125772476, 0.03979014977812767,
                  0.1202552504837513, 0.2035212516784668, 0.2920137718319893,
                  0.3893125355243683, 0.5016634166240692, 0.6427869200706482,
                  0.8614784181118011]
_FP4_DATA = [0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0,
             -0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0]


# dQuantizeFP4's thresholds on |x| (f32 literals, some an ulp or more below
# the midpoints of the values they separate).
FP4_THRESHOLDS = torch.tensor([0.00260417, 0.0859375, 0.20833333, 0.29166667,
                               0.4166667, 0.583333, 0.8333333],
                              dtype=torch.float32)


def code4(quant_type):
    """get_4bit_type: the 16 values a code stands for (f32)."""
    if quant_type == "nf4":
        return torch.tensor(NF4, dtype=torch.float32)
    data = torch.tensor(_FP4_DATA, dtype=torch.float32)
    return data / data.abs().max()


def dynamic_map_hex():
    """create_dynamic_map(signed=True) as bitsandbytes ships it (computed
    with torch 2's linspace, which differs from torch 1.13's by an ulp in
    42 entries): the 256 f32 values, little-endian hex."""
    return DYNAMIC_MAP_HEX


DYNAMIC_MAP_HEX = (
    "33337ebf9a997abf000077bf666673bfcdcc6fbf33336cbf9a9968bf000065bf"
    "666661bfcdcc5dbf33335abf9a9956bf000053bf66664fbfcdcc4bbf333348bf"
    "9a9944bf000041bf66663dbfcdcc39bf343336bf9a9932bf00002fbf66662bbf"
    "cdcc27bf343324bf9a9920bf00001dbf666619bfcdcc15bf343312bf9a990ebf"
    "00000bbf666607bfcccc03bf333300bf3233f9be0000f2becccceabe9a99e3be"
    "6666dcbe3333d5be0000cebeccccc6be9a99bfbe6666b8be3333b1be0000aabe"
    "cccca2be9a999bbe666694be34338dbe000086be99997dbe33336fbecdcc60be"
    "666652be000044be9a9935be333327becdcc18be66660abe0000f8bd3433dbbd"
    "85ebc9bdf728c4bd6766bebdd7a3b8bd48e1b2bdb81eadbd2a5ca7bd9a99a1bd"
    "0ad79bbd7b1496bdeb5190bd5d8f8abdcdcc84bd7b147ebd5d8f72bd3d0a67bd"
    "1f855bbd000050bde17a44bdc3f538bda3702dbd85eb21bd676616bd48e10abd"
    "52b8febc15aee7bcd7a3d0bc9a99b9bc5d8fa2bc1f858bbcc3f568bc48e13abc"
    "643b1fbc180416bccdcc0cbc819503bc6abcf4bbd34de2bb3bdfcfbba470bdbb"
    "0d02abbb749398bbdd2486bb8a6c67bb5c8f42bb2db21dbbfca9f1ba9defa7ba"
    "ff6577ba3ee859ba806a3cbac1ec1eba016f01ba83e2c7b905e78cb90bd723b9"
    "4b1fbab8b3ef8ab8348037b80642b2b7ff0502b7941a5ab6b7a313b500000000"
    "b7a31335941a5a36ff0502370642b23734803738b3ef8a384b1fba380bd72339"
    "05e78c3983e2c739016f013ac1ec1e3a806a3c3a3ee8593aff65773a9defa73a"
    "fca9f13a2db21d3b5c8f423b8a6c673bdd24863b7493983b0d02ab3ba470bd3b"
    "3bdfcf3bd34de23b6abcf43b8195033ccdcc0c3c1804163c643b1f3c48e13a3c"
    "c3f5683c1f858b3c5d8fa23c9a99b93cd7a3d03c15aee73c52b8fe3c48e10a3d"
    "6766163d85eb213da3702d3dc3f5383de17a443d0000503d1f855b3d3d0a673d"
    "5d8f723d7b147e3dcdcc843d5d8f8a3deb51903d7b14963d0ad79b3d9a99a13d"
    "2a5ca73db81ead3d48e1b23dd7a3b83d6766be3df728c43d85ebc93d3433db3d"
    "0000f83d66660a3ecdcc183e3333273e9a99353e0000443e6666523ecdcc603e"
    "33336f3e99997d3e0000863e34338d3e6666943e9a999b3ecccca23e0000aa3e"
    "3333b13e6666b83e9a99bf3eccccc63e0000ce3e3333d53e6666dc3e9a99e33e"
    "ccccea3e0000f23e3233f93e3333003fcccc033f6666073f00000b3f9a990e3f"
    "3433123fcdcc153f6666193f00001d3f9a99203f3433243fcdcc273f66662b3f"
    "00002f3f9a99323f3433363fcdcc393f66663d3f0000413f9a99443f3333483f"
    "cdcc4b3f66664f3f0000533f9a99563f33335a3fcdcc5d3f6666613f0000653f"
    "9a99683f33336c3fcdcc6f3f6666733f0000773f9a997a3f33337e3f0000803f"
)


def dynamic_map():
    raw = bytes.fromhex(DYNAMIC_MAP_HEX)
    return torch.frombuffer(bytearray(raw), dtype=torch.float32).clone()


def quantize_codes4(x, quant_type):
    """dQuantizeNF4 / dQuantizeFP4 on f32 values scaled into [-1, 1]."""
    if quant_type == "nf4":
        t = torch.tensor(NF4_THRESHOLDS, dtype=torch.float32)
        return (x.unsqueeze(-1) > t).sum(-1).to(torch.uint8)
    sign = (x < 0).to(torch.uint8) * 8
    a = x.abs()
    t = FP4_THRESHOLDS
    code = torch.where(
        a > t[3],
        torch.where(a > t[5], torch.where(a > t[6], 3, 2),
                    torch.where(a > t[4], 5, 4)),
        torch.where(a > t[1], torch.where(a > t[2], 7, 6),
                    torch.where(a > t[0], 1, 0)))
    return (code.to(torch.uint8) + sign)


def quantize_codes8(x, code):
    """dQuantize<0>: bitsandbytes' binary search over the sorted 256-entry
    map, then the nearer of its last two candidates (a tie keeps the
    pivot)."""
    out = torch.empty(x.numel(), dtype=torch.uint8)
    c = code.tolist()
    f32 = lambda v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
    for n, v in enumerate(x.tolist()):
        v = f32(v)
        pivot, upper_pivot, lower_pivot = 127, 255, 0
        lower, upper = f32(-1.0), f32(1.0)
        val = f32(c[pivot])
        i = 64
        while i > 0:
            if v > val:
                lower_pivot, lower = pivot, val
                pivot += i
            else:
                upper_pivot, upper = pivot, val
                pivot -= i
            val = f32(c[pivot])
            i >>= 1
        if upper_pivot == 255:
            upper = f32(c[upper_pivot])
        if lower_pivot == 0:
            lower = f32(c[lower_pivot])
        if v > val:
            mid = (upper + val) * 0.5
            out[n] = upper_pivot if v > mid else pivot
        else:
            mid = (lower + val) * 0.5
            out[n] = lower_pivot if v < mid else pivot
    return out


def blockwise_absmax(x, block):
    """kQuantizeBlockwise's absmax of each block (the last may be short)
    and the reciprocal each element is scaled by."""
    n = x.numel()
    blocks = -(-n // block)
    padded = torch.zeros(blocks * block, dtype=torch.float32)
    padded[:n] = x
    absmax = padded.view(blocks, block).abs().max(dim=1).values
    inverse = torch.tensor(1.0, dtype=torch.float32) / absmax
    return absmax, inverse.repeat_interleave(block)[:n]


def mean_offset(absmax):
    """The double quantization's offset, the absmax values' mean: here
    the exact mean rounded once to f32. (bitsandbytes takes torch's f32
    mean, whose summation order depends on the device and the CPU's vector
    width, so its last bit is not reproducible across machines.)"""
    return torch.tensor(absmax.double().sum().item() / absmax.numel(),
                        dtype=torch.float32)


def quantize(w, quant_type="nf4", double_quant=True, block=64, offset=None):
    x = w.reshape(-1).float()
    n = x.numel()
    absmax, inverse = blockwise_absmax(x, block)
    scaled = x * inverse
    if n % 2:
        # The odd last byte's low nibble: the kernel's padding, a 0 scaled
        # like the block's values.
        scaled = torch.cat([scaled, torch.zeros(1) * inverse[-1:]])
    codes = quantize_codes4(scaled, quant_type)
    packed = (codes[0::2] << 4) | codes[1::2]
    state = {"codes": packed, "absmax": absmax}
    if double_quant:
        if offset is None:
            offset = mean_offset(absmax)
        centred = absmax - offset
        nested, inv2 = blockwise_absmax(centred, 256)
        state = {"codes": packed,
                 "absmax": quantize_codes8(centred * inv2, dynamic_map()),
                 "nested_absmax": nested, "offset": offset}
    return state


def absmax_of(state):
    if "nested_absmax" not in state:
        return state["absmax"]
    code = dynamic_map()
    q = state["absmax"].long()
    scale = state["nested_absmax"].repeat_interleave(256)[:q.numel()]
    return code[q] * scale + state["offset"]


def dequantize(state, shape, quant_type="nf4", dtype=torch.float32, block=64):
    n = math.prod(shape)
    packed = state["codes"].reshape(-1)
    codes = torch.stack([packed >> 4, packed & 15], dim=1).reshape(-1)[:n]
    values = code4(quant_type)[codes.long()]
    absmax = absmax_of(state).repeat_interleave(block)[:n]
    return (values * absmax).reshape(shape).to(dtype)


def unpack(packed):
    return torch.stack([packed >> 4, packed & 15], dim=1).reshape(-1)


def check_against_bitsandbytes():
    import bitsandbytes.functional as F
    from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
    torch.manual_seed(0)
    shapes = [(64, 48), (96, 130), (7, 9), (256, 320)]
    worst = offset_ulps = zeros = fp4_ties = 0
    for quant_type in ("nf4", "fp4"):
        for double in (False, True):
            for dtype in (torch.float32, torch.bfloat16, torch.float16):
                for shape in shapes:
                    w = (torch.randn(shape) * 0.05).to(dtype)
                    packed, qs = F.quantize_4bit(
                        w, blocksize=64, quant_type=quant_type,
                        compress_statistics=double)
                    got = quantize(w, quant_type, double,
                                   offset=qs.offset if double else None)
                    if double:
                        mine = mean_offset(quantize(w, quant_type, False)
                                           ["absmax"])
                        ulp = abs(int(mine.view(torch.int32)) -
                                  int(qs.offset.view(torch.int32)))
                        offset_ulps = max(offset_ulps, ulp)
                    theirs = packed.reshape(-1)
                    mine4 = got["codes"]
                    if quant_type == "fp4":
                        # Its CPU path takes the nearest value of its sorted
                        # map (a tie to the lower one; +0 or -0 by the
                        # map's order), the CUDA kernel its decision tree,
                        # whose thresholds are f32 literals an ulp below
                        # some midpoints and whose zero has the value's
                        # sign. Nibbles may differ only there.
                        a, b = unpack(mine4), unpack(theirs)
                        raw = quantize(w, "fp4", False)["absmax"]
                        x = (w.reshape(-1).float() *
                             (1.0 / raw).repeat_interleave(64)[:w.numel()])
                        x = torch.cat([x, torch.zeros(a.numel() - x.numel())])
                        c = code4("fp4")
                        sorted_c = c.abs().unique().sort().values
                        mids = (sorted_c[1:] + sorted_c[:-1]) / 2
                        lo = torch.minimum(mids, FP4_THRESHOLDS)
                        hi = torch.maximum(mids, FP4_THRESHOLDS)
                        tie = ((x.abs().unsqueeze(-1) >= lo) &
                               (x.abs().unsqueeze(-1) <= hi)).any(-1)
                        zero = (c[a.long()] == 0) & (c[b.long()] == 0)
                        differ = a != b
                        assert bool((tie | zero)[differ].all()), \
                            (dtype, shape, "fp4 codes")
                        fp4_ties += int((differ & tie).sum())
                        zeros += int((differ & zero).sum())
                        mine4, theirs = a.masked_fill(differ, 0), \
                            b.masked_fill(differ, 0)
                    assert torch.equal(mine4, theirs), \
                        (quant_type, double, dtype, shape, "codes")
                    if double:
                        assert torch.equal(got["nested_absmax"],
                                           qs.state2.absmax), "nested"
                        assert torch.equal(got["offset"], qs.offset), "offset"
                        assert torch.equal(dynamic_map(), qs.state2.code)
                        diff = int((got["absmax"] != qs.absmax).sum())
                        worst = max(worst, diff)
                    else:
                        assert torch.equal(got["absmax"], qs.absmax)
                    want = F.dequantize_4bit(packed, qs)
                    if shape[-1] < 64:
                        # bitsandbytes' C++ CPU kernel misplaces the blocks
                        # of rows shorter than one (CUDA and its torch
                        # fallback do not): compare with the fallback.
                        absmax = qs.absmax if not double else (
                            F.dequantize_blockwise(qs.absmax, qs.state2)
                            + qs.offset)
                        want = _dequantize_4bit_compute(
                            packed.reshape(-1), absmax, qs.code, 64, shape,
                            dtype)
                    # Its codes and absmax through this dequantization
                    # (the codes were compared above).
                    mine = dequantize(
                        dict(got, codes=packed.reshape(-1),
                             absmax=qs.absmax), shape, quant_type, dtype)
                    assert torch.equal(mine, want), (quant_type, double,
                                                     dtype, shape, "dequant")
    print("replay equals bitsandbytes", __import__("bitsandbytes").__version__,
          "(codes, absmax, nested absmax, offset, dequantized weights); "
          f"double-quantized absmax codes differ from its CPU lookup table "
          f"in at most {worst} entries a tensor; the offset (torch's f32 "
          f"mean there, the exact mean rounded here) within {offset_ulps} "
          f"ulp; FP4 codes differ from its CPU path's only in {zeros} "
          f"zeros' signs and {fp4_ties} ties at a midpoint")


if __name__ == "__main__":
    if sys.argv[1:] == ["bnb"]:
        check_against_bitsandbytes()
    elif sys.argv[1:] == ["map"]:
        import bitsandbytes.functional as F
        print(F.create_dynamic_map(signed=True).numpy().tobytes().hex())
    else:
        sys.exit(__doc__)
