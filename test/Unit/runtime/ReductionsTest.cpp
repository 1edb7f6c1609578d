//===- ReductionsTest.cpp - reduce_sum/mean/max, sum_to, max gradient -----===//
//
// Tests the reductions against a naive double-precision reference over
// every subset of axes of a rank-3 operand, with and without keep_dims, for
// f32 and f16/bf16 storage; NaN propagation of reduce_max; tg.sum_to over
// leading and size-1 dimensions; reduce_max_grad's even split among tied
// maxima; and tg.cumsum along every axis, both ways, for floats and integers.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"

#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
enum class Kind { Sum, Mean, Max };

/// The reduction of `x` over `axes`; `outShape` receives the result shape.
std::vector<double> referenceReduce(Kind kind, const HostTensor &x,
                                    const Shape &axes, bool keepDims,
                                    Shape &outShape) {
  const Shape &shape = x.shape();
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  Shape kept; // result shape with keep_dims, used for indexing
  outShape.clear();
  for (size_t d = 0; d < shape.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d] || keepDims)
      outShape.push_back(kept.back());
  }
  std::vector<double> v = x.values();
  int64_t n = numElements(kept);
  std::vector<double> acc(size_t(n), kind == Kind::Max ? -1e300 : 0.0);
  std::vector<int64_t> count(size_t(n), 0);
  for (int64_t i = 0; i < x.size(); ++i) {
    Shape index = unflatten(i, shape);
    int64_t o = broadcastFlat(index, kept);
    acc[o] = kind == Kind::Max ? std::max(acc[o], v[i]) : acc[o] + v[i];
    ++count[o];
  }
  if (kind == Kind::Mean)
    for (int64_t o = 0; o < n; ++o)
      acc[o] /= double(count[o]);
  return acc;
}
} // namespace

class ReduceTest : public ::testing::TestWithParam<DType> {};

TEST_P(ReduceTest, EveryAxisSubsetWithAndWithoutKeepDims) {
  DType dtype = GetParam();
  std::mt19937 rng(47);
  HostTensor x = randomTensor(rng, dtype, {3, 4, 5}, -2, 2);
  const Shape subsets[] = {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  struct {
    Kind kind;
    Status (*kernel)(cpu::Context &, const TensorRef &,
                     const std::vector<int64_t> &, bool, TensorRef &);
    const char *name;
  } ops[] = {{Kind::Sum, cpu::reduceSum, "reduce_sum"},
             {Kind::Mean, cpu::reduceMean, "reduce_mean"},
             {Kind::Max, cpu::reduceMax, "reduce_max"}};
  for (const auto &op : ops)
    for (const Shape &axes : subsets)
      for (bool keepDims : {false, true}) {
        Shape outShape;
        std::vector<double> expected =
            referenceReduce(op.kind, x, axes, keepDims, outShape);
        HostTensor out(dtype, outShape);
        ASSERT_OK(op.kernel(cpuCtx, x, axes, keepDims, out));
        // Sums of up to 60 terms of magnitude 2.
        double atol = op.kind == Kind::Sum ? tolerance(dtype) * 60
                                           : tolerance(dtype) * 2;
        expectClose(out.values(), expected, tolerance(dtype), atol,
                    std::string(op.name) + " " + dtypeName(dtype) + " over " +
                        std::to_string(axes.size()) + " axes" +
                        (keepDims ? " keep_dims" : ""));
        // (The wrong keep_dims shape is the loader's error.)
      }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ReduceTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

TEST(Reduce, RejectsBadAxes) {
  HostTensor x(DType::F32, {2, 3});
  HostTensor scalar(DType::F32, {});
  HostTensor vec(DType::F32, {2});
  EXPECT_FAILS(cpu::reduceSum(cpuCtx, x, {2}, false, vec));
  EXPECT_FAILS(cpu::reduceSum(cpuCtx, x, {1, 1}, false, vec));
  ASSERT_OK(cpu::reduceSum(cpuCtx, x, {0, 1}, false, scalar));
}

TEST(Reduce, MaxPropagatesNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor x = HostTensor::of(DType::F32, {2, 3}, {1, nan, 3, 4, 5, 6});
  HostTensor out(DType::F32, {2});
  ASSERT_OK(cpu::reduceMax(cpuCtx, x, {1}, false, out));
  EXPECT_TRUE(std::isnan(out.get(0)));
  EXPECT_EQ(out.get(1), 6.0);
}

TEST(Reduce, SumAccumulatesBeyondF16Precision) {
  // 4096 ones in f16: an f16 accumulator would stall at 2048.
  HostTensor x = HostTensor::of(DType::F16, {4096},
                                std::vector<double>(4096, 1.0));
  HostTensor out(DType::F16, {});
  ASSERT_OK(cpu::reduceSum(cpuCtx, x, {0}, false, out));
  EXPECT_EQ(out.get(0), 4096.0);
}

TEST(SumTo, SumsBroadcastDimensions) {
  std::mt19937 rng(53);
  const std::pair<Shape, Shape> cases[] = {
      {{2, 3, 4}, {4}},    {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {2, 1, 4}},
      {{2, 3, 4}, {}},     {{2, 3, 4}, {2, 3, 4}}, {{5, 1}, {1, 1}},
  };
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (const auto &[big, small] : cases) {
      HostTensor x = randomTensor(rng, dtype, big);
      HostTensor out(dtype, small);
      ASSERT_OK(cpu::sumTo(cpuCtx, x, out));
      std::vector<double> v = x.values(),
                          expected(size_t(numElements(small)), 0.0);
      for (int64_t i = 0; i < x.size(); ++i)
        expected[broadcastFlat(unflatten(i, big), small)] += v[i];
      expectClose(out.values(), expected, tolerance(dtype),
                  tolerance(dtype) * 24, "sum_to");
    }
  }
  HostTensor x(DType::F32, {2, 3}), bad(DType::F32, {2});
  EXPECT_FAILS(cpu::sumTo(cpuCtx, x, bad));
}

TEST(ReduceMaxGrad, SplitsEvenlyAmongTies) {
  // Row 0 has a three-way tie, row 1 a single maximum, row 2 a two-way tie.
  HostTensor x = HostTensor::of(DType::F32, {3, 4},
                                {2, 1, 2, 2, 0, 5, 1, 3, 7, 7, -1, 6});
  HostTensor out(DType::F32, {3, 1});
  ASSERT_OK(cpu::reduceMax(cpuCtx, x, {1}, true, out));
  EXPECT_EQ(out.values(), (std::vector<double>{2, 5, 7}));
  HostTensor grad = HostTensor::of(DType::F32, {3, 1}, {3, 2, 1});
  HostTensor dx(DType::F32, {3, 4});
  ASSERT_OK(cpu::reduceMaxGrad(cpuCtx, x, out, grad, {1}, true, dx));
  EXPECT_EQ(dx.values(), (std::vector<double>{1, 0, 1, 1, 0, 2, 0, 0, 0.5, 0.5,
                                              0, 0}));
  // The same without keep_dims, over both axes.
  HostTensor all(DType::F32, {});
  ASSERT_OK(cpu::reduceMax(cpuCtx, x, {0, 1}, false, all));
  HostTensor g = HostTensor::of(DType::F32, {}, {4});
  ASSERT_OK(cpu::reduceMaxGrad(cpuCtx, x, all, g, {0, 1}, false, dx));
  EXPECT_EQ(dx.values(),
            (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 0}));
}

/// The prefix sums of `x` along `dim` (from the end with `reverse`), in f64
/// in order.
static std::vector<double> referenceCumsum(const HostTensor &x, int64_t dim,
                                           bool reverse) {
  const Shape &shape = x.shape();
  std::vector<double> v = x.values(), out(v.size());
  int64_t length = shape[size_t(dim)];
  for (int64_t i = 0; i < x.size(); ++i) {
    Shape index = unflatten(i, shape);
    double sum = 0.0;
    for (int64_t k = 0; k < length; ++k) {
      bool included =
          reverse ? k >= index[size_t(dim)] : k <= index[size_t(dim)];
      Shape at = index;
      at[size_t(dim)] = k;
      if (included)
        sum += v[size_t(broadcastFlat(at, shape))];
    }
    out[size_t(i)] = sum;
  }
  return out;
}

TEST(Cumsum, PrefixSumsAlongEveryAxisBothWays) {
  std::mt19937 rng(59);
  const Shape shape = {3, 4, 5};
  for (DType dtype :
       {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32}) {
    HostTensor x = isFloat(dtype) ? randomTensor(rng, dtype, shape)
                                  : randomTensor(rng, dtype, shape, -50, 50);
    for (int64_t axis : {0, 1, 2, -1})
      for (bool reverse : {false, true}) {
        HostTensor out(dtype, shape);
        ASSERT_OK(cpu::cumsum(cpuCtx, x, axis, reverse, out));
        std::vector<double> want =
            referenceCumsum(x, axis < 0 ? axis + 3 : axis, reverse);
        std::string what = std::string("cumsum ") + dtypeName(dtype) +
                           " axis " + std::to_string(axis) +
                           (reverse ? " reverse" : "");
        if (dtype == DType::F32) {
          // Summed in f64 in order and rounded once.
          for (size_t i = 0; i < want.size(); ++i)
            EXPECT_EQ(out.get(int64_t(i)), double(float(want[i]))) << what;
        } else if (isFloat(dtype)) {
          expectClose(out.values(), want, tolerance(dtype), tolerance(dtype),
                      what);
        } else {
          EXPECT_EQ(out.values(), want) << what;
        }
      }
    // In place.
    HostTensor y = x;
    ASSERT_OK(cpu::cumsum(cpuCtx, y, 1, false, y));
    HostTensor separate(dtype, shape);
    ASSERT_OK(cpu::cumsum(cpuCtx, x, 1, false, separate));
    EXPECT_EQ(y.values(), separate.values()) << dtypeName(dtype);
  }
}

TEST(Cumsum, IntegersWrapAndBadInputFails) {
  // As torch.cumsum of an int32 tensor: the sum wraps.
  HostTensor x = HostTensor::of(DType::I32, {3}, {2147483647.0, 1.0, 1.0});
  HostTensor out(DType::I32, {3});
  ASSERT_OK(cpu::cumsum(cpuCtx, x, 0, false, out));
  EXPECT_EQ(out.values(),
            (std::vector<double>{2147483647.0, -2147483648.0, -2147483647.0}));
  EXPECT_FAILS(cpu::cumsum(cpuCtx, x, 1, false, out));
  // (A result of another type and i1 operands are the loader's errors.)
}
