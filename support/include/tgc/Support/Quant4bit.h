//===- Quant4bit.h - bitsandbytes' 4-bit weight format ----------*- C++ -*-===//
//
// The format QLoRA stores a frozen weight in (bitsandbytes' Linear4bit,
// quantize_4bit): the weight flattened row-major into blocks of
// `blockSize` (64) elements, each block's absmax kept in f32 and each
// element coded in 4 bits as the nearest of 16 values (NF4, NormalFloat,
// or FP4) times the absmax, two codes a byte with the first element in the
// high nibble. With double quantization the absmax values are themselves
// quantized: less their mean (the offset), in blocks of 256, to 8-bit codes
// of the dynamic map with an f32 absmax per block.
//
// Shared by the compiler (tg-quantize-frozen's constants and sizes) and the
// runtime (quantizing weights as they load, the kernels). The code rules
// are bitsandbytes' CUDA kernels' (csrc/kernels.cu), which made the
// checkpoints the hub serves: test/e2e/Inputs/nf4_reference.py replays
// them in torch and checks the replay against bitsandbytes itself.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_QUANT4BIT_H
#define TGC_SUPPORT_QUANT4BIT_H

#include <cstdint>
#include <cstring>

namespace tgc::quant4 {

enum class Type : uint8_t { NF4, FP4 };

/// bitsandbytes' block sizes for the codes (quantize_4bit's default) and
/// for the double quantization of the absmax values.
inline constexpr int64_t kBlockSize = 64;
inline constexpr int64_t kNestedBlockSize = 256;
inline constexpr int kValues = 16, kNestedValues = 256;
/// The largest block one absmax scales (bitsandbytes': 4096).
inline constexpr int64_t kMaxBlockSize = 4096;

/// What code c stands for (get_4bit_type): NF4's quantiles of N(0, 1), and
/// FP4 (1 sign, 2 exponent, 1 mantissa bit) divided by its largest value.
inline constexpr float kNF4[kValues] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,
    0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
    0.7229568362236023f, 1.0f};
inline constexpr float kFP4[kValues] = {
    0.0f,          0.0625f / 12.0f,  8.0f / 12.0f,  1.0f,
    4.0f / 12.0f,  6.0f / 12.0f,     2.0f / 12.0f,  3.0f / 12.0f,
    -0.0f,         -0.0625f / 12.0f, -8.0f / 12.0f, -1.0f,
    -4.0f / 12.0f, -6.0f / 12.0f,    -2.0f / 12.0f, -3.0f / 12.0f};

inline const float *values(Type type) {
  return type == Type::NF4 ? kNF4 : kFP4;
}

/// bitsandbytes' signed dynamic map (create_dynamic_map(signed=True)) as
/// it computes it under torch 2 (torch 1.13's linspace differs in the last
/// bit of 42 entries), as f32 bits: the double quantization's map.
inline constexpr uint32_t kDynamicMapBits[kNestedValues] = {
    0xBF7E3333u, 0xBF7A999Au, 0xBF770000u, 0xBF736666u, 0xBF6FCCCDu, 0xBF6C3333u,
    0xBF68999Au, 0xBF650000u, 0xBF616666u, 0xBF5DCCCDu, 0xBF5A3333u, 0xBF56999Au,
    0xBF530000u, 0xBF4F6666u, 0xBF4BCCCDu, 0xBF483333u, 0xBF44999Au, 0xBF410000u,
    0xBF3D6666u, 0xBF39CCCDu, 0xBF363334u, 0xBF32999Au, 0xBF2F0000u, 0xBF2B6666u,
    0xBF27CCCDu, 0xBF243334u, 0xBF20999Au, 0xBF1D0000u, 0xBF196666u, 0xBF15CCCDu,
    0xBF123334u, 0xBF0E999Au, 0xBF0B0000u, 0xBF076666u, 0xBF03CCCCu, 0xBF003333u,
    0xBEF93332u, 0xBEF20000u, 0xBEEACCCCu, 0xBEE3999Au, 0xBEDC6666u, 0xBED53333u,
    0xBECE0000u, 0xBEC6CCCCu, 0xBEBF999Au, 0xBEB86666u, 0xBEB13333u, 0xBEAA0000u,
    0xBEA2CCCCu, 0xBE9B999Au, 0xBE946666u, 0xBE8D3334u, 0xBE860000u, 0xBE7D9999u,
    0xBE6F3333u, 0xBE60CCCDu, 0xBE526666u, 0xBE440000u, 0xBE35999Au, 0xBE273333u,
    0xBE18CCCDu, 0xBE0A6666u, 0xBDF80000u, 0xBDDB3334u, 0xBDC9EB85u, 0xBDC428F7u,
    0xBDBE6667u, 0xBDB8A3D7u, 0xBDB2E148u, 0xBDAD1EB8u, 0xBDA75C2Au, 0xBDA1999Au,
    0xBD9BD70Au, 0xBD96147Bu, 0xBD9051EBu, 0xBD8A8F5Du, 0xBD84CCCDu, 0xBD7E147Bu,
    0xBD728F5Du, 0xBD670A3Du, 0xBD5B851Fu, 0xBD500000u, 0xBD447AE1u, 0xBD38F5C3u,
    0xBD2D70A3u, 0xBD21EB85u, 0xBD166667u, 0xBD0AE148u, 0xBCFEB852u, 0xBCE7AE15u,
    0xBCD0A3D7u, 0xBCB9999Au, 0xBCA28F5Du, 0xBC8B851Fu, 0xBC68F5C3u, 0xBC3AE148u,
    0xBC1F3B64u, 0xBC160418u, 0xBC0CCCCDu, 0xBC039581u, 0xBBF4BC6Au, 0xBBE24DD3u,
    0xBBCFDF3Bu, 0xBBBD70A4u, 0xBBAB020Du, 0xBB989374u, 0xBB8624DDu, 0xBB676C8Au,
    0xBB428F5Cu, 0xBB1DB22Du, 0xBAF1A9FCu, 0xBAA7EF9Du, 0xBA7765FFu, 0xBA59E83Eu,
    0xBA3C6A80u, 0xBA1EECC1u, 0xBA016F01u, 0xB9C7E283u, 0xB98CE705u, 0xB923D70Bu,
    0xB8BA1F4Bu, 0xB88AEFB3u, 0xB8378034u, 0xB7B24206u, 0xB70205FFu, 0xB65A1A94u,
    0xB513A3B7u, 0x00000000u, 0x3513A3B7u, 0x365A1A94u, 0x370205FFu, 0x37B24206u,
    0x38378034u, 0x388AEFB3u, 0x38BA1F4Bu, 0x3923D70Bu, 0x398CE705u, 0x39C7E283u,
    0x3A016F01u, 0x3A1EECC1u, 0x3A3C6A80u, 0x3A59E83Eu, 0x3A7765FFu, 0x3AA7EF9Du,
    0x3AF1A9FCu, 0x3B1DB22Du, 0x3B428F5Cu, 0x3B676C8Au, 0x3B8624DDu, 0x3B989374u,
    0x3BAB020Du, 0x3BBD70A4u, 0x3BCFDF3Bu, 0x3BE24DD3u, 0x3BF4BC6Au, 0x3C039581u,
    0x3C0CCCCDu, 0x3C160418u, 0x3C1F3B64u, 0x3C3AE148u, 0x3C68F5C3u, 0x3C8B851Fu,
    0x3CA28F5Du, 0x3CB9999Au, 0x3CD0A3D7u, 0x3CE7AE15u, 0x3CFEB852u, 0x3D0AE148u,
    0x3D166667u, 0x3D21EB85u, 0x3D2D70A3u, 0x3D38F5C3u, 0x3D447AE1u, 0x3D500000u,
    0x3D5B851Fu, 0x3D670A3Du, 0x3D728F5Du, 0x3D7E147Bu, 0x3D84CCCDu, 0x3D8A8F5Du,
    0x3D9051EBu, 0x3D96147Bu, 0x3D9BD70Au, 0x3DA1999Au, 0x3DA75C2Au, 0x3DAD1EB8u,
    0x3DB2E148u, 0x3DB8A3D7u, 0x3DBE6667u, 0x3DC428F7u, 0x3DC9EB85u, 0x3DDB3334u,
    0x3DF80000u, 0x3E0A6666u, 0x3E18CCCDu, 0x3E273333u, 0x3E35999Au, 0x3E440000u,
    0x3E526666u, 0x3E60CCCDu, 0x3E6F3333u, 0x3E7D9999u, 0x3E860000u, 0x3E8D3334u,
    0x3E946666u, 0x3E9B999Au, 0x3EA2CCCCu, 0x3EAA0000u, 0x3EB13333u, 0x3EB86666u,
    0x3EBF999Au, 0x3EC6CCCCu, 0x3ECE0000u, 0x3ED53333u, 0x3EDC6666u, 0x3EE3999Au,
    0x3EEACCCCu, 0x3EF20000u, 0x3EF93332u, 0x3F003333u, 0x3F03CCCCu, 0x3F076666u,
    0x3F0B0000u, 0x3F0E999Au, 0x3F123334u, 0x3F15CCCDu, 0x3F196666u, 0x3F1D0000u,
    0x3F20999Au, 0x3F243334u, 0x3F27CCCDu, 0x3F2B6666u, 0x3F2F0000u, 0x3F32999Au,
    0x3F363334u, 0x3F39CCCDu, 0x3F3D6666u, 0x3F410000u, 0x3F44999Au, 0x3F483333u,
    0x3F4BCCCDu, 0x3F4F6666u, 0x3F530000u, 0x3F56999Au, 0x3F5A3333u, 0x3F5DCCCDu,
    0x3F616666u, 0x3F650000u, 0x3F68999Au, 0x3F6C3333u, 0x3F6FCCCDu, 0x3F736666u,
    0x3F770000u, 0x3F7A999Au, 0x3F7E3333u, 0x3F800000u,
};

inline float dynamicMap(int code) {
  float value;
  std::memcpy(&value, &kDynamicMapBits[code], sizeof(value));
  return value;
}

/// The sizes of a weight of `elements` values in blocks of `blockSize`.
struct Layout {
  int64_t elements = 0, blockSize = kBlockSize;

  int64_t codeBytes() const { return (elements + 1) / 2; }
  int64_t blocks() const { return (elements + blockSize - 1) / blockSize; }
  int64_t nestedBlocks() const {
    return (blocks() + kNestedBlockSize - 1) / kNestedBlockSize;
  }
};

/// dQuantizeNF4: the code of `x` (a value over its block's absmax), how
/// many of the midpoints between NF4's values it exceeds. A NaN (a block
/// of zeros scaled by 1/0) exceeds none: code 0.
inline uint8_t codeNF4(float x) {
  static constexpr float kThresholds[kValues - 1] = {
      -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f,
      -0.33967943489551544f, -0.23460740596055984f, -0.13791173323988914f,
      -0.045525018125772476f, 0.03979014977812767f, 0.1202552504837513f,
      0.2035212516784668f,   0.2920137718319893f,   0.3893125355243683f,
      0.5016634166240692f,   0.6427869200706482f,   0.8614784181118011f};
  uint8_t code = 0;
  for (float threshold : kThresholds)
    code += x > threshold;
  return code;
}

/// dQuantizeFP4: the sign bit from `x < 0`, the magnitude's code by the
/// kernel's decision tree (its thresholds are f32 literals, some below the
/// midpoints they stand for).
inline uint8_t codeFP4(float x) {
  uint8_t sign = x < 0.0f ? 0b1000 : 0;
  float a = x < 0.0f ? -x : x;
  if (a > 0.29166667f) {
    if (a > 0.583333f)
      return sign | (a > 0.8333333f ? 0b0011 : 0b0010);
    return sign | (a > 0.4166667f ? 0b0101 : 0b0100);
  }
  if (a > 0.0859375f)
    return sign | (a > 0.20833333f ? 0b0111 : 0b0110);
  return sign | (a > 0.00260417f ? 0b0001 : 0b0000);
}

inline uint8_t code4(Type type, float x) {
  return type == Type::NF4 ? codeNF4(x) : codeFP4(x);
}

/// dQuantize<0>: the 8-bit code of `x` (scaled into [-1, 1]) in the sorted
/// 256-entry `map`, by bitsandbytes' binary search and then the nearer of
/// its last two candidates (a tie keeps the pivot). Not always the nearest
/// entry; bitsandbytes' CPU path, a lookup table, differs for a few values.
inline uint8_t code8(const float *map, float x) {
  int pivot = 127, upperPivot = 255, lowerPivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float value = map[pivot];
  for (int step = 64; step > 0; step >>= 1) {
    if (x > value) {
      lowerPivot = pivot;
      lower = value;
      pivot += step;
    } else {
      upperPivot = pivot;
      upper = value;
      pivot -= step;
    }
    value = map[pivot];
  }
  if (upperPivot == 255)
    upper = map[upperPivot];
  if (lowerPivot == 0)
    lower = map[lowerPivot];
  if (x > value)
    return uint8_t(x > (upper + value) * 0.5f ? upperPivot : pivot);
  return uint8_t(x < (lower + value) * 0.5f ? lowerPivot : pivot);
}

} // namespace tgc::quant4

#endif // TGC_SUPPORT_QUANT4BIT_H
