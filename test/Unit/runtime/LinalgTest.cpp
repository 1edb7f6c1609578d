//===- LinalgTest.cpp - batched matmul against a naive reference ----------===//
//
// Tests tg.matmul against a triple loop in double precision: every transpose
// combination, batched operands, NumPy-broadcast batch dimensions (including
// the shared rank-2 weight that takes the single-GEMM path), f16/bf16
// storage, an empty contraction, and rejected shapes.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "cpu/Common.h"
#include "TestUtil.h"

#include <cstring>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
/// The naive batched product with the op's shape conventions.
std::vector<double> referenceMatmul(const HostTensor &lhs,
                                    const HostTensor &rhs, bool tl, bool tr,
                                    Shape &outShape) {
  const Shape &ls = lhs.shape(), &rs = rhs.shape();
  size_t lr = ls.size(), rr = rs.size();
  int64_t m = tl ? ls[lr - 1] : ls[lr - 2], k = tl ? ls[lr - 2] : ls[lr - 1];
  int64_t n = tr ? rs[rr - 2] : rs[rr - 1];
  Shape lb(ls.begin(), ls.end() - 2), rb(rs.begin(), rs.end() - 2);
  size_t rank = std::max(lb.size(), rb.size());
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < lb.size() ? lb[lb.size() - 1 - i] : 1;
    int64_t b = i < rb.size() ? rb[rb.size() - 1 - i] : 1;
    batch[rank - 1 - i] = a == 1 ? b : a;
  }
  outShape = batch;
  outShape.push_back(m);
  outShape.push_back(n);
  std::vector<double> a = lhs.values(), b = rhs.values();
  std::vector<double> out;
  for (int64_t bi = 0; bi < numElements(batch); ++bi) {
    Shape index = unflatten(bi, batch);
    int64_t la = broadcastFlat(index, lb) * m * k;
    int64_t ra = broadcastFlat(index, rb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += a[la + (tl ? p * m + i : i * k + p)] *
                 b[ra + (tr ? j * k + p : p * n + j)];
        out.push_back(sum);
      }
  }
  return out;
}

struct MatmulCase {
  Shape lhs, rhs; // as stored, i.e. already transposed where requested
  bool transposeLhs, transposeRhs;
};
} // namespace

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesNaiveProduct) {
  DType dtype = GetParam();
  const MatmulCase cases[] = {
      {{3, 4}, {4, 5}, false, false},
      {{4, 3}, {4, 5}, true, false},
      {{3, 4}, {5, 4}, false, true},
      {{4, 3}, {5, 4}, true, true},
      {{2, 3, 4}, {2, 4, 5}, false, false},     // batched
      {{2, 3, 4}, {4, 5}, false, false},        // shared weight: one GEMM
      {{2, 3, 4}, {5, 4}, false, true},         // shared weight, as nn.Linear
      {{2, 4, 3}, {4, 5}, true, false},         // shared, transposed lhs
      {{3, 4}, {2, 4, 5}, false, false},        // shared lhs
      {{2, 1, 3, 4}, {3, 4, 5}, false, false},  // broadcast batch dims
      {{1, 2, 4, 3}, {3, 1, 5, 4}, true, true}, // broadcast both sides
      {{2, 3, 1}, {2, 1, 6}, false, false},     // outer products
  };
  std::mt19937 rng(17);
  for (const MatmulCase &c : cases) {
    HostTensor lhs = randomTensor(rng, dtype, c.lhs);
    HostTensor rhs = randomTensor(rng, dtype, c.rhs);
    Shape outShape;
    std::vector<double> expected =
        referenceMatmul(lhs, rhs, c.transposeLhs, c.transposeRhs, outShape);
    HostTensor out(dtype, outShape);
    ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, c.transposeLhs, c.transposeRhs, out));
    expectClose(out.values(), expected, tolerance(dtype),
                tolerance(dtype) * 4,
                std::string("matmul ") + dtypeName(dtype) + " " +
                    std::to_string(c.lhs.size()) + "x" +
                    std::to_string(c.rhs.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, MatmulTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

// tg.matmul_add: the addend plus the naive product, with the result in
// storage of its own and written over the addend (in place), in every
// transposition, batched and broadcast.
class MatmulAddTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulAddTest, AddsTheNaiveProductOntoTheAddend) {
  DType dtype = GetParam();
  const MatmulCase cases[] = {
      {{3, 4}, {4, 5}, false, false},       {{4, 3}, {4, 5}, true, false},
      {{3, 4}, {5, 4}, false, true},        {{4, 3}, {5, 4}, true, true},
      {{2, 3, 4}, {2, 4, 5}, false, false}, {{2, 3, 4}, {4, 5}, false, false},
      {{2, 1, 3, 4}, {3, 4, 5}, false, false},
      {{70, 300}, {70, 90}, true, false}, // a weight gradient, tiled
  };
  std::mt19937 rng(29);
  for (const MatmulCase &c : cases)
    for (bool inPlace : {false, true}) {
      HostTensor lhs = randomTensor(rng, dtype, c.lhs);
      HostTensor rhs = randomTensor(rng, dtype, c.rhs);
      Shape outShape;
      std::vector<double> expected =
          referenceMatmul(lhs, rhs, c.transposeLhs, c.transposeRhs, outShape);
      HostTensor addend = randomTensor(rng, dtype, outShape);
      std::vector<double> start = addend.values();
      for (size_t i = 0; i < expected.size(); ++i)
        expected[i] += start[i];
      HostTensor separate(dtype, outShape);
      HostTensor &out = inPlace ? addend : separate;
      ASSERT_OK(cpu::matmulAdd(cpuCtx, lhs, rhs, addend, c.transposeLhs,
                               c.transposeRhs, out));
      std::string what = std::string("matmul_add ") + dtypeName(dtype) +
                         (inPlace ? " in place " : " ") +
                         std::to_string(c.lhs.size()) + "x" +
                         std::to_string(c.rhs.size());
      expectClose(out.values(), expected, tolerance(dtype),
                  tolerance(dtype) * 4, what);
      if (!inPlace)
        EXPECT_EQ(addend.values(), start) << what << ": the addend changed";
    }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, MatmulAddTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

TEST(MatmulAdd, EmptyContractionLeavesTheAddend) {
  std::mt19937 rng(31);
  HostTensor lhs(DType::F32, {3, 0}), rhs(DType::F32, {0, 2});
  HostTensor addend = randomTensor(rng, DType::F32, {3, 2});
  HostTensor out(DType::F32, {3, 2});
  ASSERT_OK(cpu::matmulAdd(cpuCtx, lhs, rhs, addend, false, false, out));
  EXPECT_EQ(out.values(), addend.values());
}

TEST(MatmulAdd, RejectsAPartlyOverlappingAddend) {
  // (Shapes and types are the loader's: VerifyTest.cpp.)
  std::mt19937 rng(37);
  HostTensor lhs = randomTensor(rng, DType::F32, {3, 4});
  HostTensor rhs = randomTensor(rng, DType::F32, {4, 2});
  // A result that overlaps the addend other than exactly.
  HostTensor big = randomTensor(rng, DType::F32, {4, 2});
  TensorRef addend = big.ref(), shifted = big.ref();
  addend.shape = {3, 2};
  shifted.shape = {3, 2};
  shifted.data = static_cast<float *>(big.ref().data) + 2;
  EXPECT_FAILS(cpu::matmulAdd(cpuCtx, lhs, rhs, addend, false, false, shifted));
}

TEST(Matmul, LargerThanOneBlock) {
  // Big enough for OpenBLAS's blocked kernels and threading.
  std::mt19937 rng(19);
  HostTensor lhs = randomTensor(rng, DType::F32, {2, 65, 130});
  HostTensor rhs = randomTensor(rng, DType::F32, {70, 130});
  Shape outShape;
  std::vector<double> expected =
      referenceMatmul(lhs, rhs, false, true, outShape);
  HostTensor out(DType::F32, outShape);
  ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, false, true, out));
  expectClose(out.values(), expected, 1e-4, 1e-4, "large matmul");
}

TEST(Matmul, TiledProductsInEveryTransposition) {
  // Large enough for several tiles with ragged edges (gemmTiling), so each
  // tile's offsets into transposed and untransposed storage are exercised.
  std::mt19937 rng(23);
  const int64_t m = 1030, n = 1100, k = 240;
  ASSERT_GE(cpu::gemmTiling(m, n, k).count(), 4);
  for (bool tl : {false, true})
    for (bool tr : {false, true}) {
      HostTensor lhs = randomTensor(rng, DType::F32, tl ? Shape{k, m}
                                                        : Shape{m, k});
      HostTensor rhs = randomTensor(rng, DType::F32, tr ? Shape{n, k}
                                                        : Shape{k, n});
      Shape outShape;
      std::vector<double> expected =
          referenceMatmul(lhs, rhs, tl, tr, outShape);
      HostTensor out(DType::F32, outShape);
      ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, tl, tr, out));
      // f32 sums of 240 products of magnitude <= 1, against double: their
      // rounding is at most 240 * 2^-24 * 240 = 3.4e-3 in the worst case,
      // about sqrt(240) * 2^-24 * sqrt(240 / 3) = 8e-6 in practice.
      expectClose(out.values(), expected, 1e-4, 1e-4,
                  std::string("tiled matmul ") + (tl ? "T" : "N") +
                      (tr ? "T" : "N"));
    }
}

TEST(GemmTiling, CoversTheProductWithShapeOnlyTiles) {
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1},      {64, 64, 64},     {4096, 768, 768},
                        {768, 768, 4096}, {768, 50257, 8}, {3, 100000, 512},
                        {100000, 3, 512}, {1023, 1025, 1027}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                 std::to_string(c.k));
    cpu::GemmTiling t = cpu::gemmTiling(c.m, c.n, c.k);
    EXPECT_GE(t.count(), 1);
    EXPECT_LE(t.count(), 64);
    // The tiles cover C exactly: the last row and column tiles are partial
    // but not empty.
    EXPECT_GE(t.rowTiles * t.tileRows, c.m);
    EXPECT_LT((t.rowTiles - 1) * t.tileRows, c.m);
    EXPECT_GE(t.colTiles * t.tileCols, c.n);
    EXPECT_LT((t.colTiles - 1) * t.tileCols, c.n);
  }
  // Small products are one call; larger ones split, the tiles growing with
  // the product (GPT-2 124M's MLP at B=8, T=1024: 8 tiles; 64 at most).
  EXPECT_EQ(cpu::gemmTiling(64, 64, 64).count(), 1);
  EXPECT_EQ(cpu::gemmTiling(1024, 256, 256).count(), 2);
  EXPECT_EQ(cpu::gemmTiling(8192, 3072, 768).count(), 32);
  EXPECT_EQ(cpu::gemmTiling(768, 3072, 8192).count(), 32);
  EXPECT_EQ(cpu::gemmTiling(100000, 100000, 100000).count(), 64);
}

TEST(Matmul, EmptyContractionGivesZeros) {
  HostTensor lhs(DType::F32, {2, 0}), rhs(DType::F32, {0, 3});
  HostTensor out = HostTensor::of(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, false, false, out));
  EXPECT_EQ(out.values(), std::vector<double>(6, 0.0));
}

TEST(Matmul, ResultOverlappingAnOperand) {
  // The result buffer reuses the lhs buffer: computed via scratch.
  std::mt19937 rng(23);
  HostTensor lhs = randomTensor(rng, DType::F32, {3, 3});
  HostTensor rhs = randomTensor(rng, DType::F32, {3, 3});
  Shape outShape;
  std::vector<double> expected =
      referenceMatmul(lhs, rhs, false, false, outShape);
  ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, false, false, lhs));
  expectClose(lhs.values(), expected, 1e-5, 1e-6, "aliased matmul");
}

// tg.linear against the naive product, plus the bias, through GELU (the
// tanh formula, written out here in double precision): f32 throughout, and
// 16-bit operands with an f32 result as tg-fuse builds under mixed
// precision; with gelu the pre-activation is returned too.
TEST(Linear, MatchesProductBiasAndGelu) {
  std::mt19937 rng(29);
  for (DType operands : {DType::F32, DType::BF16, DType::F16})
    for (bool gelu : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(operands)) + (gelu ? " gelu" : ""));
      HostTensor x = randomTensor(rng, operands, {2, 3, 7});
      HostTensor w = randomTensor(rng, operands, {7, 5});
      HostTensor b = randomTensor(rng, DType::F32, {5});
      Shape outShape;
      std::vector<double> product =
          referenceMatmul(x, w, false, false, outShape);
      std::vector<double> pre(product.size()), out(product.size());
      std::vector<double> bias = b.values();
      for (size_t i = 0; i < product.size(); ++i) {
        pre[i] = product[i] + bias[i % 5];
        double v = pre[i];
        out[i] = gelu ? 0.5 * v *
                            (1 + std::tanh(std::sqrt(2 / M_PI) *
                                           (v + 0.044715 * v * v * v)))
                      : v;
      }
      HostTensor result(DType::F32, outShape), preactivation(DType::F32, outShape);
      ASSERT_OK(cpu::linear(cpuCtx, x, w, b, gelu, result,
                            gelu ? &preactivation.ref() : nullptr));
      expectClose(result.values(), out, 1e-5, 1e-5, "linear");
      if (gelu)
        expectClose(preactivation.values(), pre, 1e-5, 1e-5, "preactivation");
    }
}

namespace {
/// g * gelu'(x) of the tanh approximation, in double.
double geluGradReference(double x, double g) {
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  double t = std::tanh(u);
  double du = std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
  return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du);
}

/// The sums over the rows of `values` ([rows, cols]).
std::vector<double> rowSums(const std::vector<double> &values, int64_t cols) {
  std::vector<double> sums(size_t(cols), 0.0);
  for (size_t i = 0; i < values.size(); ++i)
    sums[i % size_t(cols)] += values[i];
  return sums;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.ref().numBytes() == b.ref().numBytes() &&
         std::memcmp(a.ref().data, b.ref().data, a.ref().numBytes()) == 0;
}
} // namespace

// tg.matmul_bias_grad against the product and the column sums in double,
// and in f32 bit for bit against tg.matmul and tg.sum_to (what
// tg-fuse-bias-grads replaces).
TEST(MatmulBiasGrad, MatchesProductAndRowSums) {
  std::mt19937 rng(31);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool ofLhs : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + (ofLhs ? " of lhs" : ""));
      HostTensor lhs = randomTensor(rng, dtype, {37, 6});
      HostTensor rhs = randomTensor(rng, dtype, {37, 5});
      Shape outShape;
      std::vector<double> expected =
          referenceMatmul(lhs, rhs, true, false, outShape);
      std::vector<double> sums =
          rowSums((ofLhs ? lhs : rhs).values(), ofLhs ? 6 : 5);
      HostTensor product(dtype, {6, 5}), bias(dtype, {ofLhs ? 6 : 5});
      ASSERT_OK(cpu::matmulBiasGrad(cpuCtx, lhs, rhs, ofLhs, product, bias));
      expectClose(product.values(), expected, tolerance(dtype), 1e-5,
                  "product");
      expectClose(bias.values(), sums, tolerance(dtype), 1e-5, "bias_grad");
      HostTensor unfused(dtype, {6, 5}), unfusedBias(dtype, {ofLhs ? 6 : 5});
      ASSERT_OK(cpu::matmul(cpuCtx, lhs, rhs, true, false, unfused));
      ASSERT_OK(cpu::sumTo(cpuCtx, ofLhs ? lhs : rhs, unfusedBias));
      EXPECT_TRUE(sameBytes(product, unfused));
      EXPECT_TRUE(sameBytes(bias, unfusedBias));
    }
}

// tg.matmul_gelu_grad against (grad @ weight) * gelu'(pre) and its column
// sums in double; in f32 bit for bit against tg.matmul, tg.gelu_grad and
// tg.sum_to. In 16 bits the product is not rounded before GELU's gradient,
// so the result is within one rounding of the exact value.
TEST(MatmulGeluGrad, MatchesReference) {
  std::mt19937 rng(37);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool transposed : {true, false}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) +
                   (transposed ? " transposed" : ""));
      HostTensor grad = randomTensor(rng, dtype, {2, 9, 4});
      HostTensor weight =
          randomTensor(rng, dtype, transposed ? Shape{6, 4} : Shape{4, 6});
      HostTensor pre = randomTensor(rng, dtype, {2, 9, 6}, -3.0, 3.0);
      Shape outShape;
      std::vector<double> product =
          referenceMatmul(grad, weight, false, transposed, outShape);
      std::vector<double> x = pre.values(), expected(product.size());
      for (size_t i = 0; i < product.size(); ++i)
        expected[i] = geluGradReference(x[i], product[i]);
      HostTensor result(dtype, {2, 9, 6}), bias(dtype, {6});
      ASSERT_OK(cpu::matmulGeluGrad(cpuCtx, grad, weight, pre, transposed,
                                    result, bias));
      expectClose(result.values(), expected, tolerance(dtype), 1e-5, "result");
      expectClose(bias.values(), rowSums(expected, 6), tolerance(dtype), 1e-4,
                  "bias_grad");
      if (dtype != DType::F32)
        continue;
      HostTensor dh(dtype, {2, 9, 6}), unfused(dtype, {2, 9, 6}),
          unfusedBias(dtype, {6});
      ASSERT_OK(cpu::matmul(cpuCtx, grad, weight, false, transposed, dh));
      ASSERT_OK(cpu::geluGrad(cpuCtx, pre, dh, unfused));
      ASSERT_OK(cpu::sumTo(cpuCtx, unfused, unfusedBias));
      EXPECT_TRUE(sameBytes(result, unfused));
      EXPECT_TRUE(sameBytes(bias, unfusedBias));
    }
}

// tg.expert_linear and its weight gradient against the definition in f64:
// rows offsets[e] to offsets[e + 1] times expert e's weight, either layout,
// with an expert that gets no row (its weight gradient zero).
class ExpertLinearTest : public ::testing::TestWithParam<DType> {};

TEST_P(ExpertLinearTest, EachRowTimesItsExpert) {
  DType dtype = GetParam();
  std::mt19937 rng(81);
  const int64_t m = 11, k = 6, n = 5;
  const std::vector<double> bounds = {0, 4, 4, 9, 11};
  HostTensor offsets = HostTensor::of(DType::I64, {4 + 1}, bounds);
  HostTensor x = randomTensor(rng, dtype, {m, k});
  HostTensor g = randomTensor(rng, dtype, {m, n});
  for (bool transposed : {false, true}) {
    std::vector<HostTensor> weights;
    std::vector<TensorRef> refs;
    for (int e = 0; e < 4; ++e)
      weights.push_back(
          randomTensor(rng, dtype, transposed ? Shape{n, k} : Shape{k, n}));
    for (HostTensor &w : weights)
      refs.push_back(w.ref());
    HostTensor y(dtype, {m, n});
    ASSERT_OK(cpu::expertLinear(cpuCtx, x, offsets, refs, transposed, y));
    std::vector<double> want(size_t(m * n), 0.0);
    std::vector<std::vector<double>> wantGrad(
        4, std::vector<double>(size_t(n * k), 0.0));
    for (int e = 0; e < 4; ++e)
      for (int64_t r = int64_t(bounds[e]); r < int64_t(bounds[e + 1]); ++r)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t c = 0; c < k; ++c) {
            double w = weights[e].get(transposed ? j * k + c : c * n + j);
            want[size_t(r * n + j)] += x.get(r * k + c) * w;
            // d weight: [n, k] (grad^T x) transposed, [k, n] (x^T grad).
            wantGrad[e][size_t(transposed ? j * k + c : c * n + j)] +=
                g.get(r * n + j) * x.get(r * k + c);
          }
    expectClose(y.values(), want, tolerance(dtype), tolerance(dtype),
                "expert_linear");
    std::vector<HostTensor> grads;
    for (int e = 0; e < 4; ++e)
      grads.push_back(
          HostTensor(dtype, transposed ? Shape{n, k} : Shape{k, n}));
    std::vector<TensorRef> gradRefs;
    for (HostTensor &t : grads) {
      t.set(0, 7.0); // written over, even where the expert has no row
      gradRefs.push_back(t.ref());
    }
    if (transposed)
      ASSERT_OK(cpu::expertLinearWeightGrad(cpuCtx, g, x, offsets, gradRefs));
    else
      ASSERT_OK(cpu::expertLinearWeightGrad(cpuCtx, x, g, offsets, gradRefs));
    for (int e = 0; e < 4; ++e)
      expectClose(HostTensor(grads[e]).values(), wantGrad[e],
                  tolerance(dtype) * 2, tolerance(dtype) * 2,
                  "expert_linear_weight_grad " + std::to_string(e));
  }
  // Offsets that do not rise from 0 to the rows fail; so do wrong shapes.
  std::vector<HostTensor> weights(4, HostTensor(dtype, {k, n}));
  std::vector<TensorRef> refs;
  for (HostTensor &w : weights)
    refs.push_back(w.ref());
  HostTensor y(dtype, {m, n});
  for (const std::vector<double> &bad : {std::vector<double>{0, 4, 3, 9, 11},
                                         {0, 4, 4, 9, 12},
                                         {1, 4, 4, 9, 11}})
    EXPECT_FAILS(cpu::expertLinear(
        cpuCtx, x, HostTensor::of(DType::I64, {5}, bad), refs, false, y));
  // (A weight per expert is the loader's rule.)
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ExpertLinearTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));
