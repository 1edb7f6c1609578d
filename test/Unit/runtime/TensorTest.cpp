//===- TensorTest.cpp - element types and 16-bit float conversions --------===//
//
// Tests the dtype helpers and the f16/bf16 conversions against known bit
// patterns: round to nearest even (including ties at the subnormal and
// overflow boundaries), infinities, NaNs and f16 subnormals, plus exact round
// trips of every 16-bit pattern and element access for every element type.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "cpu/Common.h"

#include <cfloat>
#include <cstring>
#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;

static float floatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

TEST(DType, SizesNamesAndKinds) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(dtypeName(DType::I1), "i1");
  EXPECT_TRUE(isFloat(DType::F16));
  EXPECT_FALSE(isFloat(DType::I32));
  TensorRef scalar;
  EXPECT_EQ(scalar.numElements(), 1);
  TensorRef t{nullptr, DType::F16, {2, 3, 4}};
  EXPECT_EQ(t.numElements(), 24);
  EXPECT_EQ(t.numBytes(), 48u);
  EXPECT_EQ(t.rank(), 3);
}

TEST(F16, EncodesKnownBitPatterns) {
  EXPECT_EQ(f32ToF16(0.0f), 0x0000);
  EXPECT_EQ(f32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(f32ToF16(-2.0f), 0xc000);
  EXPECT_EQ(f32ToF16(0.5f), 0x3800);
  EXPECT_EQ(f32ToF16(65504.0f), 0x7bff);
  // Round to nearest even in the normal range.
  EXPECT_EQ(f32ToF16(1.0f + 0x1p-11f), 0x3c00);           // tie, to even
  EXPECT_EQ(f32ToF16(1.0f + 3 * 0x1p-11f), 0x3c02);       // tie, to even
  EXPECT_EQ(f32ToF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01); // above the tie
  EXPECT_EQ(f32ToF16(2047.5f), 0x6800); // 2047.5 -> tie between 2047, 2048
  // Overflow: 65520 is the tie between 65504 and the next power, to inf.
  EXPECT_EQ(f32ToF16(65519.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00);
  EXPECT_EQ(f32ToF16(1e6f), 0x7c00);
  EXPECT_EQ(f32ToF16(-1e6f), 0xfc00);
  EXPECT_EQ(f32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32ToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  // Subnormals count units of 2^-24.
  EXPECT_EQ(f32ToF16(0x1p-14f), 0x0400); // smallest normal
  EXPECT_EQ(f32ToF16(0x1p-24f), 0x0001); // smallest subnormal
  EXPECT_EQ(f32ToF16(1023 * 0x1p-24f), 0x03ff);
  EXPECT_EQ(f32ToF16(0x1p-25f), 0x0000);           // tie, to even (0)
  EXPECT_EQ(f32ToF16(0x1p-25f * 1.0001f), 0x0001); // above the tie
  EXPECT_EQ(f32ToF16(1.5f * 0x1p-24f), 0x0002);    // tie, to even (2)
  EXPECT_EQ(f32ToF16(2.5f * 0x1p-24f), 0x0002);    // tie, to even (2)
  EXPECT_EQ(f32ToF16(-3.0f * 0x1p-24f), 0x8003);
  EXPECT_EQ(f32ToF16(1023.5f * 0x1p-24f), 0x0400); // carries into normal
  EXPECT_EQ(f32ToF16(0x1p-26f), 0x0000);
  EXPECT_EQ(f32ToF16(FLT_TRUE_MIN), 0x0000);
  // NaN stays a (quiet) NaN with its sign.
  uint16_t nan = f32ToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  uint16_t negativeSignaling = f32ToF16(floatFromBits(0xff800001u));
  EXPECT_EQ(negativeSignaling & 0xfc00, 0xfc00);
  EXPECT_NE(negativeSignaling & 0x03ff, 0);
}

TEST(F16, DecodesKnownBitPatterns) {
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToF32(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(f16ToF32(0x0400), 0x1p-14f);
  EXPECT_EQ(bitsOf(f16ToF32(0x8000)), 0x80000000u);
  EXPECT_EQ(f16ToF32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16ToF32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16ToF32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16ToF32(0x7c01)));
}

TEST(F16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = f16ToF32(uint16_t(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(value)))) << bits;
      continue;
    }
    ASSERT_EQ(f32ToF16(value), bits) << "pattern " << bits;
  }
}

TEST(F16, MatchesNearestEvenOnMidpoints) {
  // Every midpoint between neighbouring finite f16 values rounds to the one
  // with an even mantissa; a hair above or below rounds to the nearer one.
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    float low = f16ToF32(uint16_t(bits)), high = f16ToF32(uint16_t(bits + 1));
    float mid = low + (high - low) / 2; // exact in f32
    uint16_t even = (bits & 1) ? uint16_t(bits + 1) : uint16_t(bits);
    ASSERT_EQ(f32ToF16(mid), even) << bits;
    ASSERT_EQ(f32ToF16(std::nextafter(mid, 0.0f)), bits) << bits;
    ASSERT_EQ(f32ToF16(std::nextafter(mid, 1e9f)), bits + 1) << bits;
  }
}

TEST(BF16, EncodesKnownBitPatterns) {
  EXPECT_EQ(f32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(f32ToBF16(-2.0f), 0xc000);
  EXPECT_EQ(f32ToBF16(1.0f + 0x1p-8f), 0x3f80);            // tie, to even
  EXPECT_EQ(f32ToBF16(1.0f + 3 * 0x1p-8f), 0x3f82);        // tie, to even
  EXPECT_EQ(f32ToBF16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); // above the tie
  EXPECT_EQ(f32ToBF16(FLT_MAX), 0x7f80); // rounds up to infinity
  EXPECT_EQ(f32ToBF16(floatFromBits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(f32ToBF16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32ToBF16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32ToBF16(floatFromBits(0x00080000u)), 0x0008); // subnormal
  EXPECT_EQ(f32ToBF16(floatFromBits(0x00008000u)), 0x0000); // tie, to even
  EXPECT_EQ(f32ToBF16(floatFromBits(0x00018000u)), 0x0002); // tie, to even
  uint16_t nan = f32ToBF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
  // A signaling NaN whose payload sits only in the low bits stays a NaN.
  uint16_t signaling = f32ToBF16(floatFromBits(0xff800001u));
  EXPECT_EQ(signaling & 0xff80, 0xff80);
  EXPECT_NE(signaling & 0x007f, 0);
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(bitsOf(bf16ToF32(0x8000)), 0x80000000u);
}

TEST(BF16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = bf16ToF32(uint16_t(bits));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBF16(value)))) << bits;
      continue;
    }
    ASSERT_EQ(f32ToBF16(value), bits) << "pattern " << bits;
  }
}

TEST(ElementAccess, LoadsAndStoresEveryType) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    HostTensor t(dtype, {3});
    storeF32(t, 0, 1.5f);
    storeF32(t, 1, -0.25f);
    storeF32(t, 2, 3.0f);
    EXPECT_EQ(loadF32(t, 0), 1.5f) << dtypeName(dtype);
    EXPECT_EQ(loadF32(t, 1), -0.25f) << dtypeName(dtype);
    EXPECT_EQ(loadF32(t, 2), 3.0f) << dtypeName(dtype);
  }
  for (DType dtype : {DType::I64, DType::I32, DType::I8}) {
    HostTensor t(dtype, {2});
    storeI64(t, 0, -5);
    storeI64(t, 1, 100);
    EXPECT_EQ(loadI64(t, 0), -5) << dtypeName(dtype);
    EXPECT_EQ(loadI64(t, 1), 100) << dtypeName(dtype);
  }
  HostTensor big(DType::I64, {1});
  storeI64(big, 0, int64_t(1) << 40);
  EXPECT_EQ(loadI64(big, 0), int64_t(1) << 40);
  HostTensor flags(DType::I1, {2});
  storeI64(flags, 0, 7);
  storeI64(flags, 1, 0);
  EXPECT_EQ(static_cast<uint8_t *>(flags.ref().data)[0], 1);
  EXPECT_EQ(loadI64(flags, 0), 1);
  EXPECT_EQ(loadI64(flags, 1), 0);
}

// The scan that checkpoints and batch files go through (one reader's and
// every thread's) agrees with std::isfinite on every 16-bit pattern and on
// f32's edges, wherever in a block of the scan the value sits.
TEST(NonFinite, AgreesWithIsFiniteOnEveryPattern) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    HostTensor t(dtype, {1});
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      uint16_t pattern = uint16_t(bits);
      std::memcpy(t.ref().data, &pattern, 2);
      int64_t expect = std::isfinite(loadF32(t, 0)) ? -1 : 0;
      ASSERT_EQ(cpu::firstNonFiniteSerial(t.ref()), expect)
          << dtypeName(dtype) << " pattern " << bits;
      ASSERT_EQ(cpu::firstNonFinite(t.ref()), expect);
    }
  }
  const uint32_t f32[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                          0xffffffffu, 0x7f7fffffu, 0xff7fffffu, 0x00000001u,
                          0x80000000u, 0x3f800000u};
  for (uint32_t pattern : f32) {
    float value;
    std::memcpy(&value, &pattern, 4);
    // 5000 elements: the value before, at and after the scan's blocks.
    for (int64_t at : {int64_t(0), int64_t(1023), int64_t(1024),
                       int64_t(4999)}) {
      HostTensor t(DType::F32, {5000});
      std::memcpy(static_cast<float *>(t.ref().data) + at, &value, 4);
      int64_t expect = std::isfinite(value) ? -1 : at;
      EXPECT_EQ(cpu::firstNonFiniteSerial(t.ref()), expect) << pattern;
      EXPECT_EQ(cpu::firstNonFinite(t.ref()), expect) << pattern;
    }
  }
  // Two: the first is found.
  HostTensor t(DType::BF16, {3000});
  uint16_t nan = 0x7fc0, inf = 0xff80;
  std::memcpy(static_cast<uint16_t *>(t.ref().data) + 2100, &nan, 2);
  std::memcpy(static_cast<uint16_t *>(t.ref().data) + 1500, &inf, 2);
  EXPECT_EQ(cpu::firstNonFiniteSerial(t.ref()), 1500);
}

// bf16 weights into f32: every pattern becomes exactly its f32 (the bits
// shifted up), and the first NaN or infinity is found at any position
// (the vector body and the scalar tail).
TEST(NonFinite, WidenBF16ConvertsEveryPatternAndFindsTheFirst) {
  std::vector<uint16_t> all(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits)
    all[bits] = uint16_t(bits);
  std::vector<uint32_t> out(all.size());
  // The first non-finite bf16 is +infinity, 0x7f80.
  EXPECT_EQ(cpu::widenBF16(all.data(), out.data(), int64_t(all.size())),
            0x7f80);
  for (uint32_t bits = 0; bits < 65536; ++bits)
    ASSERT_EQ(out[bits], bits << 16) << bits;
  for (int64_t count : {1, 7, 8, 9, 4096, 4101}) {
    std::vector<uint16_t> finite(size_t(count), 0x3f80); // 1.0
    std::vector<uint32_t> to(static_cast<size_t>(count));
    EXPECT_EQ(cpu::widenBF16(finite.data(), to.data(), count), -1);
    EXPECT_EQ(to[size_t(count - 1)], 0x3f800000u);
    for (int64_t at : {int64_t(0), count / 2, count - 1}) {
      std::vector<uint16_t> bad = finite;
      bad[size_t(at)] = 0xffc1; // a negative NaN
      EXPECT_EQ(cpu::widenBF16(bad.data(), to.data(), count), at) << count;
    }
  }
}
