//===- Quant4bitTest.cpp - QLoRA's 4-bit weights on the host --------------===//
//
// The code rules of bitsandbytes' kernels (tgc/Support/Quant4bit.h), the
// blockwise quantization and double quantization (Quant4bit.cpp) against
// their definitions, and tg.matmul_4bit's CPU kernel against the product
// of the dequantized weight computed directly. (Bit-equality with
// bitsandbytes itself: test/e2e/torch/qlora-peft.test.)
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Quant4bit.h"

#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace tgc;
using namespace tgc::rt;
using namespace tgc::rt::test;

TEST(Quant4bit, CodesOfTheTablesOwnValues) {
  for (int c = 0; c < quant4::kValues; ++c)
    EXPECT_EQ(quant4::codeNF4(quant4::kNF4[c]), c) << c;
  // FP4: every value but -0 (which codes as +0) is its own code.
  for (int c = 0; c < quant4::kValues; ++c)
    if (c != 8)
      EXPECT_EQ(quant4::codeFP4(quant4::kFP4[c]), c) << c;
  EXPECT_EQ(quant4::codeFP4(-0.0f), 0);
  // A tiny negative value keeps its sign: -0's code.
  EXPECT_EQ(quant4::codeFP4(-1e-6f), 8);
  // A NaN (a block of zeros scaled by 1 / 0) lands on code 0.
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(quant4::codeNF4(nan), 0);
  EXPECT_EQ(quant4::codeFP4(nan), 0);
}

TEST(Quant4bit, NF4IsTheNearestValueTiesDown) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int i = 0; i < 20000; ++i) {
    float x = dist(rng);
    int code = quant4::codeNF4(x);
    for (int c = 0; c < quant4::kValues; ++c)
      EXPECT_LE(std::fabs(x - quant4::kNF4[code]),
                std::fabs(x - quant4::kNF4[c]) + 1e-7f)
          << x;
  }
}

TEST(Quant4bit, DynamicCodesFindTheirValue) {
  float map[quant4::kNestedValues];
  for (int c = 0; c < quant4::kNestedValues; ++c)
    map[c] = quant4::dynamicMap(c);
  for (int c = 1; c < quant4::kNestedValues; ++c)
    ASSERT_LT(map[c - 1], map[c]) << "the dynamic map is sorted";
  EXPECT_EQ(map[0], quant4::dynamicMap(0));
  EXPECT_FLOAT_EQ(map[255], 1.0f);
  for (int c = 0; c < quant4::kNestedValues; ++c)
    EXPECT_EQ(map[quant4::code8(map, map[c])], map[c]) << c;
  // Between two entries, one of the two.
  for (int c = 0; c + 1 < quant4::kNestedValues; ++c) {
    float mid = 0.25f * map[c] + 0.75f * map[c + 1];
    int code = quant4::code8(map, mid);
    EXPECT_TRUE(code == c || code == c + 1) << c;
  }
}

namespace {

/// `w` ([rows, cols], f32) quantized to NF4 in blocks of 64 (its absmax
/// double-quantized when `nested`), with the codebooks, as tensors.
struct NF4Weight {
  int64_t rows, cols;
  HostTensor codes, absmax, nestedAbsmax, offset, map, dynamic;

  NF4Weight(const std::vector<float> &w, int64_t rows, int64_t cols,
            bool nested)
      : rows(rows), cols(cols), codes(DType::U8, {layout().codeBytes()}),
        absmax(nested ? DType::U8 : DType::F32, {layout().blocks()}),
        nestedAbsmax(DType::F32, {layout().nestedBlocks()}),
        offset(DType::F32, {}), map(DType::F32, {16}),
        dynamic(DType::F32, {256}) {
    QuantizedWeight weight;
    weight.rows = rows;
    weight.cols = cols;
    if (nested) {
      weight.nestedAbsmax = 1;
      weight.offset = 2;
    }
    quantizeWeight(weight, w.data(), codes.ref(), absmax.ref(),
                   nestedAbsmax.ref(), offset.ref());
    std::memcpy(map.ref().data, quant4::kNF4, sizeof(quant4::kNF4));
    std::memcpy(dynamic.ref().data, quant4::kDynamicMapBits,
                sizeof(quant4::kDynamicMapBits));
  }
  quant4::Layout layout() const { return {rows * cols, 64}; }
  Weight4bitRefs refs() const {
    return {codes.ref(),
            absmax.ref(),
            map.ref(),
            nestedAbsmax.ref(),
            dynamic.ref(),
            offset.ref(),
            rows,
            cols,
            64};
  }
};

} // namespace

TEST(Quant4bit, BlockwiseQuantizationRoundTrips) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  // 7 x 19 = 133 values: two whole blocks of 64, a short one, an odd count.
  const int64_t rows = 7, cols = 19, n = rows * cols;
  std::vector<float> w(n);
  for (float &v : w)
    v = dist(rng);
  for (int64_t i = 64; i < 128; ++i)
    w[size_t(i)] = 0.0f; // a block of zeros
  for (bool nested : {false, true}) {
    NF4Weight q(w, rows, cols, nested);
    HostTensor &codes = q.codes, &nestedAbsmax = q.nestedAbsmax,
               &offset = q.offset;
    // The zero block: every code 0 (NaN), dequantized to zero.
    auto *bytes = static_cast<const uint8_t *>(codes.ref().data);
    for (int64_t i = 32; i < 64; ++i)
      EXPECT_EQ(bytes[i], 0) << i;
    // The odd last element's partner nibble: the code of 0 (NF4's 7).
    EXPECT_EQ(bytes[n / 2] & 0x0F, 7);
    Dequantizer4bit deq(q.refs());
    float largest[3] = {0, 0, 0};
    for (int64_t i = 0; i < n; ++i)
      largest[i / 64] = std::max(largest[i / 64], std::fabs(w[size_t(i)]));
    if (nested) {
      float mean = (largest[0] + largest[1] + largest[2]) / 3.0f;
      EXPECT_NEAR(*static_cast<float *>(offset.ref().data), mean, 1e-7f);
    }
    // Double-quantized, each absmax is off by up to half a gap of the
    // dynamic map near 1 (0.014) times the nested absmax (so a block of
    // zeros dequantizes to small values, as bitsandbytes' does).
    float scaleError =
        nested ? 0.008f * *static_cast<float *>(nestedAbsmax.ref().data)
               : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      float scale = largest[i / 64];
      // Half the largest gap between NF4 values (0.28) of the scale.
      float bound = (scale + scaleError) * 0.14f + scaleError;
      EXPECT_NEAR(deq(i), w[size_t(i)], bound) << i << " nested " << nested;
    }
  }
}

namespace {

/// input [m, k] x W' by the definition: W dequantized element by element,
/// rounded to the input's type, products summed in double.
HostTensor naiveProduct(const HostTensor &x, const Weight4bitRefs &w,
                        bool transposeRhs) {
  int64_t k = transposeRhs ? w.cols : w.rows, n = transposeRhs ? w.rows : w.cols;
  int64_t m = x.size() / k;
  Dequantizer4bit deq(w);
  HostTensor y(x.dtype(), {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        HostTensor one(x.dtype(), {1});
        one.set(0, deq(transposeRhs ? j * w.cols + c : c * w.cols + j));
        sum += x.get(i * k + c) * one.get(0);
      }
      y.set(i * n + j, sum);
    }
  return y;
}

} // namespace

TEST(Matmul4bit, CpuKernelIsTheProductOfTheDequantizedWeight) {
  std::mt19937 rng(43);
  // 70 x 90: panels of 64 columns and a short one, blocks across rows.
  const int64_t rows = 70, cols = 90;
  std::vector<float> w(rows * cols);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  for (float &v : w)
    v = dist(rng);
  for (bool nested : {false, true}) {
    NF4Weight q(w, rows, cols, nested);
    Weight4bitRefs refs = q.refs();
    for (DType dtype : {DType::F32, DType::BF16})
      for (bool transposeRhs : {true, false}) {
        int64_t k = transposeRhs ? cols : rows, n = transposeRhs ? rows : cols;
        HostTensor x = randomTensor(rng, dtype, {3, 5, k});
        HostTensor y(dtype, {3, 5, n});
        ASSERT_TRUE(cpu::matmul4bit(cpuCtx, x, refs, transposeRhs, y).ok());
        HostTensor want = naiveProduct(x, refs, transposeRhs);
        std::vector<double> got = y.values(), expected = want.values();
        double scale = 0.0;
        for (double v : expected)
          scale = std::max(scale, std::fabs(v));
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], expected[i], tolerance(dtype) * scale)
              << i << " nested " << nested << " transposed " << transposeRhs;
      }
  }
}
