//===- ElementwiseTest.cpp - arithmetic, activations, where, cast ---------===//
//
// Tests the elementwise kernels against double-precision references on
// seeded random data, for f32 and for f16/bf16 storage: broadcasting of every
// shape pairing kind, integer semantics (wrapping, truncating division, the
// division-by-zero error), NaN propagation of maximum/minimum, in-place use,
// and tg.cast between every pair of element types.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"

#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
using BinaryKernel = Status (*)(cpu::Context &, const TensorRef &, const TensorRef &,
                                TensorRef &);

struct BinaryCase {
  const char *name;
  BinaryKernel kernel;
  double (*reference)(double, double);
};

const BinaryCase kBinaryCases[] = {
    {"add", cpu::add, [](double a, double b) { return a + b; }},
    {"sub", cpu::sub, [](double a, double b) { return a - b; }},
    {"mul", cpu::mul, [](double a, double b) { return a * b; }},
    {"div", cpu::div, [](double a, double b) { return a / b; }},
    {"maximum", cpu::maximum, [](double a, double b) { return std::max(a, b); }},
    {"minimum", cpu::minimum, [](double a, double b) { return std::min(a, b); }},
};

/// Shape pairs covering: equal shapes, trailing alignment, size-1 on both
/// sides, a rank-0 operand, and a missing leading dimension.
const std::pair<Shape, Shape> kBroadcastPairs[] = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},    {{2, 1, 4}, {3, 1}},
    {{}, {2, 3}},           {{5, 1}, {1, 6}},     {{3, 1, 2}, {1, 4, 1}},
};

/// The broadcast reference of a binary function.
std::vector<double> referenceBinary(const HostTensor &lhs,
                                    const HostTensor &rhs,
                                    const Shape &outShape,
                                    double (*fn)(double, double)) {
  std::vector<double> a = lhs.values(), b = rhs.values();
  std::vector<double> out(size_t(numElements(outShape)));
  for (size_t i = 0; i < out.size(); ++i) {
    Shape index = unflatten(int64_t(i), outShape);
    out[i] = fn(a[broadcastFlat(index, lhs.shape())],
                b[broadcastFlat(index, rhs.shape())]);
  }
  return out;
}

Shape broadcastOf(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[rank - 1 - i] = x == 1 ? y : x;
  }
  return out;
}
} // namespace

class BinaryFloatTest : public ::testing::TestWithParam<DType> {};

TEST_P(BinaryFloatTest, MatchesReferenceWithBroadcasting) {
  DType dtype = GetParam();
  std::mt19937 rng(7);
  for (const BinaryCase &op : kBinaryCases) {
    for (const auto &[lhsShape, rhsShape] : kBroadcastPairs) {
      for (bool swap : {false, true}) {
        const Shape &ls = swap ? rhsShape : lhsShape;
        const Shape &rs = swap ? lhsShape : rhsShape;
        HostTensor lhs = randomTensor(rng, dtype, ls, -2.0, 2.0);
        // Divisors away from zero keep the relative error meaningful.
        HostTensor rhs = randomTensor(rng, dtype, rs, 0.5, 2.0);
        Shape outShape = broadcastOf(ls, rs);
        HostTensor out(dtype, outShape);
        ASSERT_OK(op.kernel(cpuCtx, lhs, rhs, out));
        expectClose(out.values(),
                    referenceBinary(lhs, rhs, outShape, op.reference),
                    tolerance(dtype), tolerance(dtype) * 1e-2,
                    std::string(op.name) + " " + dtypeName(dtype));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, BinaryFloatTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

TEST(Binary, RejectsShapesThatDoNotBroadcast) {
  HostTensor a(DType::F32, {2, 3}), b(DType::F32, {4}), out(DType::F32, {2, 3});
  EXPECT_FAILS(cpu::add(cpuCtx, a, b, out));
  // (Mixed types and the result's shape are the loader's rules.)
  HostTensor flags(DType::I1, {2});
  HostTensor flagsOut(DType::I1, {2});
  EXPECT_FAILS(cpu::add(cpuCtx, flags, flags, flagsOut));
}

TEST(Binary, IntegerSemantics) {
  for (DType dtype : {DType::I32, DType::I64}) {
    HostTensor lhs = HostTensor::of(dtype, {2, 3}, {7, -7, 9, -9, 5, 0});
    HostTensor rhs = HostTensor::of(dtype, {3}, {2, 2, -4});
    HostTensor out(dtype, {2, 3});
    ASSERT_OK(cpu::div(cpuCtx, lhs, rhs, out));
    // Truncation toward zero.
    EXPECT_EQ(out.values(), (std::vector<double>{3, -3, -2, -4, 2, 0}));
    ASSERT_OK(cpu::add(cpuCtx, lhs, rhs, out));
    EXPECT_EQ(out.values(), (std::vector<double>{9, -5, 5, -7, 7, -4}));
    ASSERT_OK(cpu::sub(cpuCtx, lhs, rhs, out));
    EXPECT_EQ(out.values(), (std::vector<double>{5, -9, 13, -11, 3, 4}));
    ASSERT_OK(cpu::mul(cpuCtx, lhs, rhs, out));
    EXPECT_EQ(out.values(), (std::vector<double>{14, -14, -36, -18, 10, 0}));
    ASSERT_OK(cpu::maximum(cpuCtx, lhs, rhs, out));
    EXPECT_EQ(out.values(), (std::vector<double>{7, 2, 9, 2, 5, 0}));
    ASSERT_OK(cpu::minimum(cpuCtx, lhs, rhs, out));
    EXPECT_EQ(out.values(), (std::vector<double>{2, -7, -4, -9, 2, -4}));

    HostTensor zero = HostTensor::of(dtype, {3}, {1, 0, 1});
    Status status = cpu::div(cpuCtx, lhs, zero, out);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.error.find("division by zero"), std::string::npos);
  }
  // Overflow wraps in two's complement; INT_MIN / -1 is INT_MIN.
  int32_t min = std::numeric_limits<int32_t>::min();
  int32_t max = std::numeric_limits<int32_t>::max();
  HostTensor a = HostTensor::of(DType::I32, {2}, {double(max), double(min)});
  HostTensor b = HostTensor::of(DType::I32, {2}, {1, -1});
  HostTensor out(DType::I32, {2});
  ASSERT_OK(cpu::add(cpuCtx, a, b, out));
  EXPECT_EQ(out.values(), (std::vector<double>{double(min), double(max)}));
  ASSERT_OK(cpu::div(cpuCtx, a, b, out));
  EXPECT_EQ(out.values(), (std::vector<double>{double(max), double(min)}));
  // A counter step: i64 scalar + 1.
  HostTensor step = HostTensor::of(DType::I64, {}, {41});
  HostTensor one = HostTensor::of(DType::I64, {}, {1});
  ASSERT_OK(cpu::add(cpuCtx, step, one, step));
  EXPECT_EQ(step.get(0), 42);
}

TEST(Binary, MaximumAndMinimumPropagateNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor a = HostTensor::of(DType::F32, {3}, {nan, 1, 2});
  HostTensor b = HostTensor::of(DType::F32, {3}, {0, nan, 3});
  HostTensor out(DType::F32, {3});
  ASSERT_OK(cpu::maximum(cpuCtx, a, b, out));
  EXPECT_TRUE(std::isnan(out.get(0)));
  EXPECT_TRUE(std::isnan(out.get(1)));
  EXPECT_EQ(out.get(2), 3);
  ASSERT_OK(cpu::minimum(cpuCtx, a, b, out));
  EXPECT_TRUE(std::isnan(out.get(0)));
  EXPECT_TRUE(std::isnan(out.get(1)));
  EXPECT_EQ(out.get(2), 2);
}

TEST(Binary, InPlace) {
  std::mt19937 rng(3);
  for (DType dtype : {DType::F32, DType::BF16}) {
    HostTensor lhs = randomTensor(rng, dtype, {4, 5});
    HostTensor rhs = randomTensor(rng, dtype, {5});
    std::vector<double> expected = referenceBinary(
        lhs, rhs, {4, 5}, [](double a, double b) { return a * b; });
    ASSERT_OK(cpu::mul(cpuCtx, lhs, rhs, lhs));
    expectClose(lhs.values(), expected, tolerance(dtype), 1e-6, "in place");
  }
}

/// Every binary op with its result over either operand of the result's
/// type, the other operand equal or broadcast, as the planner may place it.
TEST(Binary, InPlaceOverEitherOperand) {
  std::mt19937 rng(19);
  const std::pair<Shape, Shape> shapes[] = {
      {{4, 6}, {4, 6}}, {{4, 6}, {6}}, {{4, 1}, {4, 6}}, {{}, {5}}};
  for (DType dtype :
       {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64})
    for (const BinaryCase &op : kBinaryCases)
      for (const auto &[lhsShape, rhsShape] : shapes) {
        // Integer divisors in [1, 100): no division by zero.
        bool integer = !isFloat(dtype);
        std::vector<HostTensor> operands = {
            randomTensor(rng, dtype, lhsShape, integer ? -100 : -1,
                         integer ? 100 : 1),
            randomTensor(rng, dtype, rhsShape, integer ? 1 : -1,
                         integer ? 100 : 1)};
        Shape shape = broadcastOf(lhsShape, rhsShape);
        std::string what = std::string(op.name) + " " + dtypeName(dtype) +
                           " " + ::testing::PrintToString(lhsShape) + " " +
                           ::testing::PrintToString(rhsShape);
        for (size_t over : {0, 1})
          if (operands[over].shape() == shape)
            expectInPlaceMatches(
                operands, over,
                [&](const std::vector<TensorRef> &in, TensorRef &out) {
                  return op.kernel(cpuCtx, in[0], in[1], out);
                },
                what + (over ? " over rhs" : " over lhs"));
      }
}

namespace {
using UnaryKernel = Status (*)(cpu::Context &, const TensorRef &,
                                TensorRef &);
struct UnaryCase {
  const char *name;
  UnaryKernel kernel;
  double (*reference)(double);
  double low, high;
};

double geluReference(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

const UnaryCase kUnaryCases[] = {
    {"neg", cpu::neg, [](double x) { return -x; }, -3, 3},
    {"exp", cpu::exp, [](double x) { return std::exp(x); }, -3, 3},
    {"log", cpu::log, [](double x) { return std::log(x); }, 0.1, 5},
    {"sqrt", cpu::sqrt, [](double x) { return std::sqrt(x); }, 0.01, 5},
    {"rsqrt", cpu::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1, 5},
    {"tanh", cpu::tanh, [](double x) { return std::tanh(x); }, -3, 3},
    {"relu", cpu::relu, [](double x) { return std::max(x, 0.0); }, -3, 3},
    {"sigmoid", cpu::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); },
     -8, 8},
    {"silu", cpu::silu, [](double x) { return x / (1 + std::exp(-x)); }, -8, 8},
    // Across torch's threshold (x > 20: x itself).
    {"softplus", cpu::softplus,
     [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -8, 30},
    {"gelu", cpu::gelu, geluReference, -4, 4},
    {"gelu exact", cpu::geluExact,
     [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
     -4, 4},
};
} // namespace

class UnaryTest : public ::testing::TestWithParam<DType> {};

TEST_P(UnaryTest, MatchesReference) {
  DType dtype = GetParam();
  std::mt19937 rng(11);
  for (const UnaryCase &op : kUnaryCases) {
    HostTensor x = randomTensor(rng, dtype, {3, 7}, op.low, op.high);
    HostTensor out(dtype, {3, 7});
    ASSERT_OK(op.kernel(cpuCtx, x, out));
    std::vector<double> expected;
    for (double v : x.values())
      expected.push_back(op.reference(v));
    expectClose(out.values(), expected, tolerance(dtype),
                tolerance(dtype) * 1e-2,
                std::string(op.name) + " " + dtypeName(dtype));
    // In place.
    ASSERT_OK(op.kernel(cpuCtx, x, x));
    EXPECT_EQ(x.values(), out.values()) << op.name;
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, UnaryTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

TEST(Unary, GeluKnownValues) {
  // torch.nn.functional.gelu(x, approximate='tanh') values.
  HostTensor x = HostTensor::of(DType::F32, {4}, {-1.0, 0.0, 0.5, 2.0});
  HostTensor out(DType::F32, {4});
  ASSERT_OK(cpu::gelu(cpuCtx, x, out));
  expectClose(out.values(), {-0.15880800939, 0.0, 0.34571400982, 1.95459769409},
              1e-6, 1e-7, "gelu");
  // torch.nn.functional.gelu(x) (the erf form) values.
  ASSERT_OK(cpu::geluExact(cpuCtx, x, out));
  expectClose(out.values(), {-0.15865525393, 0.0, 0.34573123064, 1.95449973610},
              1e-6, 1e-7, "gelu exact");
}

TEST(Where, BroadcastsAllThreeOperands) {
  std::mt19937 rng(5);
  for (DType dtype : {DType::F32, DType::F16}) {
    HostTensor condition = HostTensor::of(DType::I1, {3, 1}, {1, 0, 1});
    HostTensor lhs = randomTensor(rng, dtype, {1, 4});
    HostTensor rhs = randomTensor(rng, dtype, {2, 1, 1});
    Shape outShape = {2, 3, 4};
    HostTensor out(dtype, outShape);
    ASSERT_OK(cpu::where(cpuCtx, condition, lhs, rhs, out));
    std::vector<double> c = condition.values(), a = lhs.values(),
                        b = rhs.values(), expected;
    for (int64_t i = 0; i < numElements(outShape); ++i) {
      Shape index = unflatten(i, outShape);
      expected.push_back(c[broadcastFlat(index, condition.shape())]
                             ? a[broadcastFlat(index, lhs.shape())]
                             : b[broadcastFlat(index, rhs.shape())]);
    }
    EXPECT_EQ(out.values(), expected);
  }
}

TEST(Cast, EveryPairOfTypes) {
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                       DType::I32, DType::I8,  DType::I1};
  // Values exact in every float type and in i8.
  std::vector<double> values = {0, 1, -2, 3.5, -7.75, 100, -0.5};
  for (DType from : all) {
    for (DType to : all) {
      HostTensor input(from, {int64_t(values.size())});
      for (size_t i = 0; i < values.size(); ++i)
        input.set(int64_t(i), isFloat(from) ? values[i]
                                            : double(int64_t(values[i])));
      HostTensor out(to, input.shape());
      ASSERT_OK(cpu::cast(cpuCtx, input, out));
      for (size_t i = 0; i < values.size(); ++i) {
        double source = input.get(int64_t(i));
        double expected = to == DType::I1     ? double(source != 0)
                          : isFloat(to)       ? source
                                              : std::trunc(source);
        EXPECT_EQ(out.get(int64_t(i)), expected)
            << dtypeName(from) << " -> " << dtypeName(to) << " element " << i;
      }
    }
  }
}

TEST(Cast, RoundingTruncationAndWrapping) {
  // f32 -> f16/bf16 rounds to nearest even.
  HostTensor f = HostTensor::of(DType::F32, {3},
                                {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 70000.0});
  HostTensor h(DType::F16, {3});
  ASSERT_OK(cpu::cast(cpuCtx, f, h));
  EXPECT_EQ(h.values(),
            (std::vector<double>{1.0, 1.0 + 4 * 0x1p-11,
                                 std::numeric_limits<double>::infinity()}));
  // f16 -> bf16 rounds once, from the exact value.
  HostTensor h2 = HostTensor::of(DType::F16, {1}, {1.0 + 0x1p-8 + 0x1p-10});
  HostTensor b(DType::BF16, {1});
  ASSERT_OK(cpu::cast(cpuCtx, h2, b));
  EXPECT_EQ(b.get(0), 1.0 + 0x1p-7);
  // Float -> integer truncates toward zero and saturates; NaN gives 0.
  HostTensor g = HostTensor::of(
      DType::F32, {5},
      {-2.7, 2.7, 1e10, -1e10, std::numeric_limits<double>::quiet_NaN()});
  HostTensor i32(DType::I32, {5});
  ASSERT_OK(cpu::cast(cpuCtx, g, i32));
  EXPECT_EQ(i32.values(),
            (std::vector<double>{-2, 2, 2147483647.0, -2147483648.0, 0}));
  HostTensor i8(DType::I8, {5});
  ASSERT_OK(cpu::cast(cpuCtx, g, i8));
  EXPECT_EQ(i8.values(), (std::vector<double>{-2, 2, 127, -128, 0}));
  // Integer -> integer wraps; -> i1 is x != 0.
  HostTensor wide = HostTensor::of(DType::I64, {3}, {300, -129, 0});
  HostTensor narrow(DType::I8, {3});
  ASSERT_OK(cpu::cast(cpuCtx, wide, narrow));
  EXPECT_EQ(narrow.values(), (std::vector<double>{44, 127, 0}));
  HostTensor flags(DType::I1, {3});
  ASSERT_OK(cpu::cast(cpuCtx, wide, flags));
  EXPECT_EQ(flags.values(), (std::vector<double>{1, 1, 0}));
  // Integer -> bf16 rounds once: 2^24 + 2^16 + 1 lies above the midpoint of
  // 2^24 and 2^24 + 2^17, where i64 -> f32 -> bf16 would round down.
  HostTensor big(DType::I64, {1});
  storeI64(big, 0, (int64_t(1) << 24) + (1 << 16) + 1);
  HostTensor bf(DType::BF16, {1});
  ASSERT_OK(cpu::cast(cpuCtx, big, bf));
  EXPECT_EQ(bf.get(0), double((1 << 24) + (1 << 17)));
  HostTensor f32(DType::F32, {1});
  ASSERT_OK(cpu::cast(cpuCtx, big, f32));
  EXPECT_EQ(f32.get(0), double((1 << 24) + (1 << 16)));
}

TEST(Cast, FloatToBoolIsNonZero) {
  HostTensor x = HostTensor::of(
      DType::F32, {4}, {0.25, -0.0, 0.0, std::numeric_limits<double>::quiet_NaN()});
  HostTensor flags(DType::I1, {4});
  ASSERT_OK(cpu::cast(cpuCtx, x, flags));
  EXPECT_EQ(flags.values(), (std::vector<double>{1, 0, 0, 1}));
}

TEST(ActivationGrads, MatchFormulas) {
  std::mt19937 rng(13);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    HostTensor x = randomTensor(rng, dtype, {2, 9}, -3, 3);
    HostTensor g = randomTensor(rng, dtype, {2, 9});
    HostTensor out(dtype, {2, 9});
    std::vector<double> xs = x.values(), gs = g.values(), expected;
    ASSERT_OK(cpu::reluGrad(cpuCtx, x, g, out));
    for (size_t i = 0; i < xs.size(); ++i)
      expected.push_back(xs[i] > 0 ? gs[i] : 0);
    EXPECT_EQ(out.values(), expected);
    ASSERT_OK(cpu::tanhGrad(cpuCtx, x, g, out));
    expected.clear();
    for (size_t i = 0; i < xs.size(); ++i)
      expected.push_back(gs[i] * (1 - xs[i] * xs[i]));
    expectClose(out.values(), expected, tolerance(dtype),
                tolerance(dtype) * 1e-1, "tanh_grad");
  }
}

TEST(ActivationGrads, InPlaceOverEitherOperand) {
  using GradKernel =
      Status (*)(cpu::Context &, const TensorRef &, const TensorRef &,
                 TensorRef &);
  const std::pair<const char *, GradKernel> kernels[] = {
      {"relu_grad", cpu::reluGrad}, {"sigmoid_grad", cpu::sigmoidGrad},
      {"silu_grad", cpu::siluGrad}, {"softplus_grad", cpu::softplusGrad},
      {"gelu_grad", cpu::geluGrad}, {"gelu_grad exact", cpu::geluExactGrad},
      {"tanh_grad", cpu::tanhGrad}};
  std::mt19937 rng(23);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (const auto &[name, kernel] : kernels) {
      std::vector<HostTensor> operands = {
          randomTensor(rng, dtype, {5, 9}, -3, 3),
          randomTensor(rng, dtype, {5, 9})};
      GradKernel fn = kernel;
      for (size_t over : {0, 1})
        expectInPlaceMatches(
            operands, over,
            [&](const std::vector<TensorRef> &in, TensorRef &out) {
              return fn(cpuCtx, in[0], in[1], out);
            },
            std::string(name) + " " + dtypeName(dtype) +
                (over ? " over grad" : " over input"));
    }
}

/// tg.swiglu and tg.swiglu_grad give the bytes of the ops they replace
/// (tg.silu then tg.mul; tg.mul, tg.silu_grad and tg.mul for the
/// gradients, the VJPs of the two), in every float type, near the
/// mathematics in double, and in place over each operand they may take.
TEST(Swiglu, EqualsSiluThenMulAndItsGradients) {
  std::mt19937 rng(41);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    std::string type = dtypeName(dtype);
    HostTensor g = randomTensor(rng, dtype, {7, 37}, -6, 6),
               u = randomTensor(rng, dtype, {7, 37}, -2, 2),
               d = randomTensor(rng, dtype, {7, 37}, -2, 2);
    HostTensor h(dtype, {7, 37}), s(dtype, {7, 37}), want(dtype, {7, 37});
    ASSERT_OK(cpu::swiglu(cpuCtx, g, u, h));
    ASSERT_OK(cpu::silu(cpuCtx, g, s));
    ASSERT_OK(cpu::mul(cpuCtx, s, u, want));
    expectSameBytes(want, h, "swiglu " + type);

    HostTensor dg(dtype, {7, 37}), du(dtype, {7, 37}), ds(dtype, {7, 37}),
        wantG(dtype, {7, 37}), wantU(dtype, {7, 37});
    ASSERT_OK(cpu::swigluGrad(cpuCtx, g, u, d, dg, du));
    ASSERT_OK(cpu::mul(cpuCtx, d, u, ds));
    ASSERT_OK(cpu::siluGrad(cpuCtx, g, ds, wantG));
    ASSERT_OK(cpu::mul(cpuCtx, d, s, wantU));
    expectSameBytes(wantG, dg, "swiglu_grad gate " + type);
    expectSameBytes(wantU, du, "swiglu_grad up " + type);

    // d/dg silu(g) u = u sig(g) (1 + g (1 - sig(g))); d/du = silu(g).
    std::vector<double> value, gradG, gradU;
    for (int64_t i = 0; i < g.size(); ++i) {
      double x = g.get(i), y = u.get(i), dy = d.get(i);
      double sig = 1 / (1 + std::exp(-x));
      value.push_back(x * sig * y);
      gradG.push_back(dy * y * sig * (1 + x * (1 - sig)));
      gradU.push_back(dy * x * sig);
    }
    double tol = tolerance(dtype) * 4;
    expectClose(h.values(), value, tol, tol, "swiglu " + type);
    expectClose(dg.values(), gradG, tol, tol, "swiglu_grad gate " + type);
    expectClose(du.values(), gradU, tol, tol, "swiglu_grad up " + type);

    std::vector<HostTensor> operands = {g, u};
    for (size_t over : {0, 1})
      expectInPlaceMatches(
          operands, over,
          [&](const std::vector<TensorRef> &in, TensorRef &out) {
            return cpu::swiglu(cpuCtx, in[0], in[1], out);
          },
          "swiglu over operand " + std::to_string(over) + " " + type);
    // The gradients over (gate, up) and over (grad, up), as the planner
    // may place them.
    for (bool overGrad : {false, true}) {
      HostTensor g2 = g, u2 = u, d2 = d;
      TensorRef gateOut = overGrad ? d2.ref() : g2.ref();
      ASSERT_OK(cpu::swigluGrad(cpuCtx, g2, u2, d2, gateOut, u2.ref()));
      HostTensor gotG = overGrad ? d2 : g2;
      expectSameBytes(wantG, gotG, "swiglu_grad in place gate " + type);
      expectSameBytes(wantU, u2, "swiglu_grad in place up " + type);
    }
  }
}

/// A cast over its operand between element types of one width: the
/// result takes the operand's buffer element for element.
TEST(Cast, InPlaceBetweenTypesOfOneWidth) {
  const std::pair<DType, DType> pairs[] = {
      {DType::F32, DType::I32}, {DType::I32, DType::F32},
      {DType::F16, DType::BF16}, {DType::BF16, DType::F16},
      {DType::I8, DType::I1},   {DType::I1, DType::I8},
      {DType::F32, DType::F32}, {DType::I64, DType::I64}};
  std::mt19937 rng(31);
  for (const auto &[from, to] : pairs) {
    // Past i8's and f16's ranges, with fractions for the float sources.
    bool flag = from == DType::I1;
    std::vector<HostTensor> operands = {
        randomTensor(rng, from, {3, 37}, flag ? 0 : -1e5, flag ? 2 : 1e5)};
    expectInPlaceMatches(
        operands, 0,
        [&](const std::vector<TensorRef> &in, TensorRef &out) {
          return cpu::cast(cpuCtx, in[0], out);
        },
        std::string("cast ") + dtypeName(from) + " -> " + dtypeName(to), to);
  }
}
