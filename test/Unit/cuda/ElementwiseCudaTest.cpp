//===- ElementwiseCudaTest.cpp - CUDA elementwise kernels against the CPU -===//
//
// Runs every elementwise launcher and its CPU kernel on the same random
// inputs: binary arithmetic with each kind of broadcast on f32/f16/bf16 and
// on wrapping i32/i64 (INT_MIN / -1 included), NaN propagation of
// maximum/minimum, the division-by-zero error flag, the unary functions and
// activation gradients, where, results written over an operand, and cast
// between every pair of element types with the edge values of each
// (NaN, infinities, saturation, ties, integers past f32's precision),
// compared exactly.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "tgc/Support/MultiTensor.h"

#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {

using Shape = std::vector<int64_t>;

/// The code kernels raise on an integer division by zero (Common.cuh).
constexpr int kIntegerDivisionByZero = 2;



/// Expects equal elements: floats equal as values (any NaN matches any
/// NaN), integers equal.
void expectSameValues(const HostTensor &want, const HostTensor &got,
                      const std::string &what) {
  ASSERT_EQ(want.ref.shape, got.ref.shape) << what;
  ASSERT_EQ(want.ref.dtype, got.ref.dtype) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.ref.numElements() && reported < 5; ++i) {
    if (isFloat(want.ref.dtype)) {
      float w = loadF32(want.ref, i), g = loadF32(got.ref, i);
      if (w == g || (std::isnan(w) && std::isnan(g)))
        continue;
      ADD_FAILURE() << what << "[" << i << "]: CUDA " << g << ", CPU " << w;
      ++reported;
    } else if (loadI64(want.ref, i) != loadI64(got.ref, i)) {
      ADD_FAILURE() << what << "[" << i << "]: CUDA " << loadI64(got.ref, i)
                    << ", CPU " << loadI64(want.ref, i);
      ++reported;
    }
  }
}

Shape broadcastShape(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    shape[rank - 1 - i] = x == 1 ? y : x;
  }
  return shape;
}

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

using BinaryCpu = Status (*)(cpu::Context &, const TensorRef &,
                             const TensorRef &, TensorRef &);
using BinaryCuda = Status (*)(cuda::Context &, const TensorRef &,
                              const TensorRef &, TensorRef &);
struct BinaryCase {
  const char *name;
  BinaryCpu cpu;
  BinaryCuda gpu;
};
const BinaryCase kBinaryCases[] = {
    {"add", cpu::add, cuda::add},
    {"sub", cpu::sub, cuda::sub},
    {"mul", cpu::mul, cuda::mul},
    {"div", cpu::div, cuda::div},
    {"maximum", cpu::maximum, cuda::maximum},
    {"minimum", cpu::minimum, cuda::minimum},
};

/// Equal shapes, trailing alignment, size-1 on both sides, a rank-0
/// operand, a missing leading dimension.
const std::pair<Shape, Shape> kBroadcastPairs[] = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{4, 1, 6}, {3, 1}},
    {{}, {2, 3}},           {{5, 1}, {1, 7}}, {{3, 1, 2}, {1, 4, 1}},
};

/// Runs `op` on the CPU and on the GPU and compares the results.
void checkBinary(const BinaryCase &op, const HostTensor &lhs,
                 const HostTensor &rhs, const std::string &what) {
  Shape shape = broadcastShape(lhs.ref.shape, rhs.ref.shape);
  HostTensor want(lhs.ref.dtype, shape);
  ASSERT_TRUE(ok(op.cpu(cpuCtx, lhs.ref, rhs.ref, want.ref))) << what;
  DeviceTensor l(lhs), r(rhs), result(want, false);
  ASSERT_TRUE(ok(op.gpu(*testContext(), l.ref, r.ref, result.ref))) << what;
  synchronize();
  EXPECT_EQ(takeDeviceError(), 0) << what;
  expectNear(want, result.toHost(), what);
}

TEST(ElementwiseCuda, BinaryFloatBroadcasting) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(101);
  for (DType dtype : kFloatTypes)
    for (const BinaryCase &op : kBinaryCases)
      for (const auto &[lhsShape, rhsShape] : kBroadcastPairs) {
        HostTensor lhs(dtype, lhsShape), rhs(dtype, rhsShape);
        fillNormal(lhs, rng);
        fillNormal(rhs, rng);
        checkBinary(op, lhs, rhs,
                    std::string(op.name) + " " + dtypeName(dtype));
      }
}

TEST(ElementwiseCuda, MaximumMinimumPropagateNaN) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(103);
  float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType dtype : kFloatTypes)
    for (const BinaryCase &op : kBinaryCases) {
      HostTensor lhs(dtype, {64}), rhs(dtype, {64});
      fillNormal(lhs, rng);
      fillNormal(rhs, rng);
      for (int64_t i = 0; i < 64; i += 5)
        storeF32(lhs.ref, i, nan);
      for (int64_t i = 0; i < 64; i += 7)
        storeF32(rhs.ref, i, nan);
      checkBinary(op, lhs, rhs,
                  std::string(op.name) + " NaN " + dtypeName(dtype));
    }
}

TEST(ElementwiseCuda, BinaryIntegersWrap) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(107);
  for (DType dtype : {DType::I32, DType::I64}) {
    int64_t low = dtype == DType::I32 ? std::numeric_limits<int32_t>::min()
                                      : std::numeric_limits<int64_t>::min();
    int64_t high = dtype == DType::I32 ? std::numeric_limits<int32_t>::max()
                                       : std::numeric_limits<int64_t>::max();
    for (const BinaryCase &op : kBinaryCases)
      for (const auto &[lhsShape, rhsShape] : kBroadcastPairs) {
        HostTensor lhs(dtype, lhsShape), rhs(dtype, rhsShape);
        fillInts(lhs, rng, low, high);
        fillInts(rhs, rng, -1000, 1000);
        for (int64_t i = 0; i < rhs.ref.numElements(); ++i)
          if (loadI64(rhs.ref, i) == 0)
            storeI64(rhs.ref, i, -1); // INT_MIN / -1 wraps below
        storeI64(lhs.ref, 0, low);
        storeI64(rhs.ref, 0, -1);
        checkBinary(op, lhs, rhs,
                    std::string(op.name) + " " + dtypeName(dtype));
      }
  }
}

TEST(ElementwiseCuda, IntegerDivisionByZeroRaisesTheFlag) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(109);
  EXPECT_EQ(takeDeviceError(), 0);
  for (DType dtype : {DType::I32, DType::I64}) {
    HostTensor lhs(dtype, {3, 8}), rhs(dtype, {8}), want(dtype, {3, 8});
    fillInts(lhs, rng, -100, 100);
    fillInts(rhs, rng, 1, 5);
    storeI64(rhs.ref, 5, 0);
    EXPECT_FALSE(cpu::div(cpuCtx, lhs.ref, rhs.ref, want.ref).ok());
    DeviceTensor l(lhs), r(rhs), result(want, false);
    ASSERT_TRUE(ok(cuda::div(*testContext(), l.ref, r.ref, result.ref)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), kIntegerDivisionByZero) << dtypeName(dtype);
    EXPECT_EQ(takeDeviceError(), 0) << "the flag was cleared";
  }
}

//===----------------------------------------------------------------------===//
// Unary functions and activation gradients
//===----------------------------------------------------------------------===//

using UnaryCpu = Status (*)(cpu::Context &, const TensorRef &, TensorRef &);
using UnaryCuda = Status (*)(cuda::Context &, const TensorRef &, TensorRef &);
struct UnaryCase {
  const char *name;
  UnaryCpu cpu;
  UnaryCuda gpu;
  bool positive; // needs positive operands
};
const UnaryCase kUnaryCases[] = {
    {"neg", cpu::neg, cuda::neg, false},
    {"exp", cpu::exp, cuda::exp, false},
    {"log", cpu::log, cuda::log, true},
    {"sqrt", cpu::sqrt, cuda::sqrt, true},
    {"rsqrt", cpu::rsqrt, cuda::rsqrt, true},
    {"tanh", cpu::tanh, cuda::tanh, false},
    {"relu", cpu::relu, cuda::relu, false},
    {"sigmoid", cpu::sigmoid, cuda::sigmoid, false},
    {"silu", cpu::silu, cuda::silu, false},
    {"softplus", cpu::softplus, cuda::softplus, false},
    {"gelu", cpu::gelu, cuda::gelu, false},
    {"gelu exact", cpu::geluExact, cuda::geluExact, false},
};

HostTensor unaryOperand(const UnaryCase &op, DType dtype, Shape shape,
                        std::mt19937 &rng) {
  HostTensor x(dtype, std::move(shape));
  fillNormal(x, rng, 0.0f, 2.0f);
  if (op.positive)
    for (int64_t i = 0; i < x.ref.numElements(); ++i)
      storeF32(x.ref, i, std::fabs(loadF32(x.ref, i)) + 0.05f);
  return x;
}

TEST(ElementwiseCuda, UnaryFunctions) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(113);
  for (DType dtype : kFloatTypes)
    for (const UnaryCase &op : kUnaryCases) {
      HostTensor x = unaryOperand(op, dtype, {3, 50}, rng);
      HostTensor want(dtype, {3, 50});
      ASSERT_TRUE(ok(op.cpu(cpuCtx, x.ref, want.ref)));
      DeviceTensor input(x), result(want, false);
      ASSERT_TRUE(ok(op.gpu(*testContext(), input.ref, result.ref)));
      synchronize();
      expectNear(want, result.toHost(),
                 std::string(op.name) + " " + dtypeName(dtype));
    }
}

TEST(ElementwiseCuda, UnaryInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(127);
  for (DType dtype : kFloatTypes)
    for (const UnaryCase &op : kUnaryCases) {
      HostTensor x = unaryOperand(op, dtype, {1000}, rng);
      expectInPlaceMatches(
          {&x}, 0,
          [&](const std::vector<TensorRef> &in, TensorRef &out) {
            return op.cpu(cpuCtx, in[0], out);
          },
          [&](cuda::Context &ctx, const std::vector<TensorRef> &in,
              TensorRef &out) { return op.gpu(ctx, in[0], out); },
          std::string(op.name) + " " + dtypeName(dtype));
    }
}

using GradCpu = Status (*)(cpu::Context &, const TensorRef &,
                           const TensorRef &, TensorRef &);
using GradCuda = Status (*)(cuda::Context &, const TensorRef &,
                            const TensorRef &, TensorRef &);
struct GradCase {
  const char *name;
  GradCpu cpu;
  GradCuda gpu;
};
const GradCase kGradCases[] = {
    {"relu_grad", cpu::reluGrad, cuda::reluGrad},
    {"sigmoid_grad", cpu::sigmoidGrad, cuda::sigmoidGrad},
    {"silu_grad", cpu::siluGrad, cuda::siluGrad},
    {"softplus_grad", cpu::softplusGrad, cuda::softplusGrad},
    {"gelu_grad", cpu::geluGrad, cuda::geluGrad},
    {"gelu_grad exact", cpu::geluExactGrad, cuda::geluExactGrad},
    {"tanh_grad", cpu::tanhGrad, cuda::tanhGrad},
};

TEST(ElementwiseCuda, ActivationGradients) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(131);
  for (DType dtype : kFloatTypes)
    for (const GradCase &op : kGradCases) {
      HostTensor x(dtype, {7, 33}), g(dtype, {7, 33}), want(dtype, {7, 33});
      // tanh_grad takes tanh's result, in (-1, 1).
      fillNormal(x, rng, 0.0f, op.cpu == cpu::tanhGrad ? 0.4f : 2.0f);
      fillNormal(g, rng);
      storeF32(x.ref, 0, 0.0f); // relu_grad at 0
      ASSERT_TRUE(ok(op.cpu(cpuCtx, x.ref, g.ref, want.ref)));
      DeviceTensor input(x), grad(g), result(want, false);
      ASSERT_TRUE(ok(op.gpu(*testContext(), input.ref, grad.ref, result.ref)));
      synchronize();
      expectNear(want, result.toHost(),
                 std::string(op.name) + " " + dtypeName(dtype));

      // Written over the incoming gradient, as the runtime may plan it.
      ASSERT_TRUE(ok(op.gpu(*testContext(), input.ref, grad.ref, grad.ref)));
      synchronize();
      expectNear(want, grad.toHost(),
                 std::string(op.name) + " in place " + dtypeName(dtype));
    }
}

TEST(ElementwiseCuda, ActivationGradientsInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(133);
  for (DType dtype : kFloatTypes)
    for (const GradCase &op : kGradCases) {
      HostTensor x(dtype, {7, 150}), g(dtype, {7, 150});
      fillNormal(x, rng, 0.0f, op.cpu == cpu::tanhGrad ? 0.4f : 2.0f);
      fillNormal(g, rng);
      for (size_t over : {0, 1})
        expectInPlaceMatches(
            {&x, &g}, over,
            [&](const std::vector<TensorRef> &in, TensorRef &out) {
              return op.cpu(cpuCtx, in[0], in[1], out);
            },
            [&](cuda::Context &ctx, const std::vector<TensorRef> &in,
                TensorRef &out) { return op.gpu(ctx, in[0], in[1], out); },
            std::string(op.name) + " " + dtypeName(dtype) +
                (over ? " over grad" : " over input"));
    }
}

/// tg.swiglu and tg.swiglu_grad against the CPU's kernels (which equal
/// tg.silu then tg.mul, ElementwiseTest), separate and with the results
/// over the operands the planner may give them.
TEST(ElementwiseCuda, Swiglu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(139);
  for (DType dtype : kFloatTypes) {
    std::string type = dtypeName(dtype);
    HostTensor g(dtype, {5, 301}), u(dtype, {5, 301}), d(dtype, {5, 301});
    fillNormal(g, rng, 0.0f, 3.0f);
    fillNormal(u, rng);
    fillNormal(d, rng);
    HostTensor h(dtype, {5, 301}), dg(dtype, {5, 301}), du(dtype, {5, 301});
    ASSERT_TRUE(ok(cpu::swiglu(cpuCtx, g.ref, u.ref, h.ref)));
    ASSERT_TRUE(
        ok(cpu::swigluGrad(cpuCtx, g.ref, u.ref, d.ref, dg.ref, du.ref)));

    DeviceTensor gate(g), up(u), grad(d), result(h, false), gateGrad(dg, false),
        upGrad(du, false);
    ASSERT_TRUE(ok(cuda::swiglu(*testContext(), gate.ref, up.ref, result.ref)));
    ASSERT_TRUE(ok(cuda::swigluGrad(*testContext(), gate.ref, up.ref, grad.ref,
                                    gateGrad.ref, upGrad.ref)));
    synchronize();
    expectNear(h, result.toHost(), "swiglu " + type);
    expectNear(dg, gateGrad.toHost(), "swiglu_grad gate " + type);
    expectNear(du, upGrad.toHost(), "swiglu_grad up " + type);
    HostTensor sepH = result.toHost(), sepG = gateGrad.toHost(),
               sepU = upGrad.toHost();

    // The product over up; the gradients over grad and up.
    ASSERT_TRUE(ok(cuda::swiglu(*testContext(), gate.ref, up.ref, up.ref)));
    synchronize();
    expectSameBytes(sepH, up.toHost(), "swiglu over up " + type);
    DeviceTensor up2(u);
    ASSERT_TRUE(ok(cuda::swigluGrad(*testContext(), gate.ref, up2.ref, grad.ref,
                                    grad.ref, up2.ref)));
    synchronize();
    expectSameBytes(sepG, grad.toHost(), "swiglu_grad over grad " + type);
    expectSameBytes(sepU, up2.toHost(), "swiglu_grad over up " + type);
  }
}

/// Every binary op with its result over either operand of the result's
/// type, the other operand equal or broadcast.
TEST(ElementwiseCuda, BinaryInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(137);
  const std::pair<Shape, Shape> shapes[] = {
      {{24, 70}, {24, 70}}, {{24, 70}, {70}}, {{24, 1}, {24, 70}}, {{}, {999}}};
  for (DType dtype :
       {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64})
    for (const BinaryCase &op : kBinaryCases)
      for (const auto &[lhsShape, rhsShape] : shapes) {
        HostTensor lhs(dtype, lhsShape), rhs(dtype, rhsShape);
        if (isFloat(dtype)) {
          fillNormal(lhs, rng);
          fillNormal(rhs, rng);
        } else {
          fillInts(lhs, rng, -1000, 1000);
          fillInts(rhs, rng, 1, 100); // no division by zero
        }
        Shape shape = broadcastShape(lhsShape, rhsShape);
        std::string what = std::string(op.name) + " " + dtypeName(dtype) +
                           " " + ::testing::PrintToString(lhsShape) + " " +
                           ::testing::PrintToString(rhsShape);
        for (size_t over : {0, 1})
          if ((over ? rhsShape : lhsShape) == shape)
            expectInPlaceMatches(
                {&lhs, &rhs}, over,
                [&](const std::vector<TensorRef> &in, TensorRef &out) {
                  return op.cpu(cpuCtx, in[0], in[1], out);
                },
                [&](cuda::Context &ctx, const std::vector<TensorRef> &in,
                    TensorRef &out) { return op.gpu(ctx, in[0], in[1], out); },
                what + (over ? " over rhs" : " over lhs"));
      }
}

//===----------------------------------------------------------------------===//
// Where and cast
//===----------------------------------------------------------------------===//

TEST(ElementwiseCuda, WhereBroadcasting) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(139);
  const Shape shapes[][3] = {
      {{4, 1, 6}, {3, 1}, {6}},
      {{5, 7}, {5, 7}, {5, 7}},
      {{}, {2, 3}, {1, 3}},
  };
  for (DType dtype : kFloatTypes)
    for (const auto &s : shapes) {
      HostTensor c(DType::I1, s[0]), lhs(dtype, s[1]), rhs(dtype, s[2]);
      fillInts(c, rng, 0, 2);
      fillNormal(lhs, rng);
      fillNormal(rhs, rng);
      HostTensor want(dtype, broadcastShape(s[0], broadcastShape(s[1], s[2])));
      ASSERT_TRUE(ok(cpu::where(cpuCtx, c.ref, lhs.ref, rhs.ref, want.ref)));
      DeviceTensor cd(c), l(lhs), r(rhs), result(want, false);
      ASSERT_TRUE(
          ok(cuda::where(*testContext(), cd.ref, l.ref, r.ref, result.ref)));
      synchronize();
      expectSameValues(want, result.toHost(),
                       std::string("where ") + dtypeName(dtype));
    }
}

const DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                           DType::I32, DType::I8,  DType::I1};

/// Random values of `dtype` led by the edge cases of conversions from it.
HostTensor castOperand(DType dtype, int64_t n, std::mt19937 &rng) {
  HostTensor x(dtype, {n});
  if (isFloat(dtype)) {
    fillNormal(x, rng, 0.0f, 100.0f);
    const float edges[] = {std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           1e20f,
                           -1e20f,
                           3e9f,
                           -3e9f,
                           9.3e18f,
                           -9.3e18f,
                           0.5f,
                           -0.5f,
                           -0.0f,
                           127.9f,
                           -128.9f,
                           255.5f,
                           2147483520.0f,
                           65519.0f,
                           65520.0f,
                           70000.0f,
                           1e-8f,
                           6e-8f,
                           2.5f,
                           -3.5f,
                           1.00048828125f,
                           1.001953125f,
                           0.1f,
                           16777217.0f,
                           3.0e38f};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i)
      storeF32(x.ref, int64_t(i), edges[i]);
    return x;
  }
  switch (dtype) {
  case DType::I64: {
    fillInts(x, rng, std::numeric_limits<int64_t>::min(),
             std::numeric_limits<int64_t>::max());
    const int64_t edges[] = {std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max(),
                             (int64_t(1) << 53) + 1,
                             (int64_t(1) << 24) + 1,
                             (int64_t(1) << 31),
                             -(int64_t(1) << 31) - 1,
                             65519,
                             65520,
                             65536 + 16,
                             257,
                             255,
                             128,
                             -129,
                             -1,
                             0,
                             1};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i)
      storeI64(x.ref, int64_t(i), edges[i]);
    for (int64_t i = 32; i < n; i += 3) // smaller magnitudes too
      storeI64(x.ref, i, loadI64(x.ref, i) >> (i % 60));
    break;
  }
  case DType::I32:
    fillInts(x, rng, std::numeric_limits<int32_t>::min(),
             int64_t(std::numeric_limits<int32_t>::max()) + 1);
    storeI64(x.ref, 0, std::numeric_limits<int32_t>::min());
    storeI64(x.ref, 1, std::numeric_limits<int32_t>::max());
    storeI64(x.ref, 2, (1 << 24) + 1);
    storeI64(x.ref, 3, 0);
    break;
  case DType::I8:
    fillInts(x, rng, -128, 128);
    break;
  default:
    fillInts(x, rng, 0, 2);
    break;
  }
  return x;
}

TEST(ElementwiseCuda, CastEveryPairExactly) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(149);
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      HostTensor x = castOperand(from, 301, rng);
      HostTensor want(to, {301});
      ASSERT_TRUE(ok(cpu::cast(cpuCtx, x.ref, want.ref)));
      DeviceTensor input(x), result(want, false);
      ASSERT_TRUE(ok(cuda::cast(*testContext(), input.ref, result.ref)));
      synchronize();
      expectSameValues(want, result.toHost(),
                       std::string("cast ") + dtypeName(from) + " -> " +
                           dtypeName(to));
    }
}

/// Casts written over their own operand: same element size (in place
/// element for element) and different sizes (the launcher copies first).
TEST(ElementwiseCuda, CastOverItsOperand) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(151);
  const std::pair<DType, DType> pairs[] = {
      {DType::F32, DType::I32}, {DType::I32, DType::F32},
      {DType::F16, DType::BF16}, {DType::BF16, DType::F16},
      {DType::I8, DType::I1},   {DType::I1, DType::I8},
      {DType::F16, DType::F32}, {DType::I32, DType::I8},
      {DType::I8, DType::I64},  {DType::F32, DType::F16}};
  const int64_t n = 4097;
  for (const auto &[from, to] : pairs) {
    HostTensor x = castOperand(from, n, rng);
    HostTensor want(to, {n});
    ASSERT_TRUE(ok(cpu::cast(cpuCtx, x.ref, want.ref)));
    // One buffer large enough for either view, the operand at its start.
    HostTensor big(DType::I64, {n});
    std::memcpy(big.ref.data, x.ref.data, x.ref.numBytes());
    DeviceTensor buffer(big);
    TensorRef input = x.ref, result = want.ref;
    input.data = buffer.data;
    result.data = buffer.data;
    ASSERT_TRUE(ok(cuda::cast(*testContext(), input, result)));
    synchronize();
    HostTensor got(to, {n});
    ASSERT_EQ(cudaMemcpy(got.ref.data, buffer.data, got.ref.numBytes(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    expectSameValues(want, got,
                     std::string("cast in place ") + dtypeName(from) + " -> " +
                         dtypeName(to));
  }
}

} // namespace

/// tg.multi_cast: 300 float tensors of every pair of float types (one empty,
/// sizes across block boundaries) in two launches of up to 256
/// (kTensorsPerLaunch), each converted to the
/// bytes the CPU's cast gives; and a result over an operand (no plan makes
/// one) converted tensor by tensor as cast stages it.
TEST(ElementwiseCuda, MultiCastEqualsCastBitwise) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(153);
  const DType floats[] = {DType::F32, DType::F16, DType::BF16};
  std::vector<HostTensor> inputs, wants;
  std::vector<std::unique_ptr<DeviceTensor>> deviceIn, deviceOut;
  std::vector<TensorRef> in, out;
  const int tensors = int(tgc::kTensorsPerLaunch) + 44;
  for (int i = 0; i < tensors; ++i) {
    DType from = floats[i % 3], to = floats[(i / 3) % 3];
    // castOperand writes its edge values first: 64 elements at least.
    int64_t n = i == 7 ? 0 : 64 + (i * 997) % 3001;
    inputs.push_back(n == 0 ? HostTensor(from, {0})
                            : castOperand(from, n, rng));
    wants.emplace_back(to, std::vector<int64_t>{n});
    ASSERT_TRUE(ok(cpu::cast(cpuCtx, inputs.back().ref, wants.back().ref)));
  }
  for (int i = 0; i < tensors; ++i) {
    deviceIn.push_back(std::make_unique<DeviceTensor>(inputs[i]));
    deviceOut.push_back(std::make_unique<DeviceTensor>(wants[i], false));
    in.push_back(deviceIn.back()->ref);
    out.push_back(deviceOut.back()->ref);
  }
  ASSERT_TRUE(ok(cuda::multiCast(*testContext(), in, out)));
  synchronize();
  for (int i = 0; i < tensors; ++i)
    expectSameValues(wants[i], deviceOut[i]->toHost(),
                     "multi_cast tensor " + std::to_string(i));

  // Over its operand: f32 -> bf16 into the operand's own buffer.
  HostTensor x = castOperand(DType::F32, 513, rng), want(DType::BF16, {513});
  ASSERT_TRUE(ok(cpu::cast(cpuCtx, x.ref, want.ref)));
  DeviceTensor buffer(x);
  std::vector<TensorRef> overIn{buffer.ref}, overOut{want.ref};
  overOut[0].data = buffer.data;
  ASSERT_TRUE(ok(cuda::multiCast(*testContext(), overIn, overOut)));
  synchronize();
  HostTensor got(DType::BF16, {513});
  ASSERT_EQ(cudaMemcpy(got.ref.data, buffer.data, got.ref.numBytes(),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  expectSameValues(want, got, "multi_cast over its operand");
  // (Integers are the loader's error: tg.cast converts them, tg.multi_cast
  // does not.)
}
