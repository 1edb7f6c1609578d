//===- OptimizersTest.cpp - SGD, AdamW, norms and loss scaling ------------===//
//
// Tests the optimizer updates over several steps, written in place as the
// runtime runs them, against hand-unrolled torch.optim formulas in double:
// AdamW with decoupled weight decay and bias correction; SGD with momentum,
// dampening, Nesterov and weight decay, including the step-1 buffer
// initialization that must not read the (possibly garbage) old buffer. Also
// GradScaler's update rule over a sequence of steps, all_finite, global_norm,
// scale_loss and unscale.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"
#include "Scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
HostTensor f32Scalar(double value) {
  return HostTensor::of(DType::F32, {}, {value});
}
HostTensor i64Scalar(int64_t value) {
  HostTensor t(DType::I64, {});
  storeI64(t, 0, value);
  return t;
}
HostTensor i1Scalar(bool value) {
  return HostTensor::of(DType::I1, {}, {value ? 1.0 : 0.0});
}
} // namespace

TEST(AdamW, ThreeStepsInPlaceMatchTorchFormula) {
  std::mt19937 rng(211);
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.1;
  const int64_t n = 10;
  HostTensor param = randomTensor(rng, DType::F32, {2, 5});
  HostTensor expAvg(DType::F32, {2, 5}), expAvgSq(DType::F32, {2, 5});
  std::vector<double> p = param.values(), m(n, 0.0), v(n, 0.0);
  HostTensor lrT = f32Scalar(lr);
  for (int64_t t = 1; t <= 3; ++t) {
    HostTensor grad = randomTensor(rng, DType::F32, {2, 5});
    std::vector<double> g = grad.values();
    // torch.optim.AdamW, unrolled.
    double bc1 = 1 - std::pow(beta1, double(t));
    double bc2 = 1 - std::pow(beta2, double(t));
    for (int64_t i = 0; i < n; ++i) {
      p[i] *= 1 - double(float(lr)) * wd;
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
      p[i] -= double(float(lr)) / bc1 * m[i] / denom;
    }
    HostTensor step = i64Scalar(t);
    ASSERT_OK(cpu::adamwUpdate(cpuCtx, param, grad, expAvg, expAvgSq, lrT, step, beta1,
                               beta2, eps, wd, param, expAvg, expAvgSq));
    expectClose(param.values(), p, 1e-6, 1e-7, "param step " + std::to_string(t));
    expectClose(expAvg.values(), m, 1e-6, 1e-7, "exp_avg");
    expectClose(expAvgSq.values(), v, 1e-6, 1e-10, "exp_avg_sq");
  }
}

TEST(AdamW, BF16ParamWithF32Moments) {
  std::mt19937 rng(223);
  HostTensor param = randomTensor(rng, DType::BF16, {8});
  HostTensor grad = randomTensor(rng, DType::BF16, {8});
  HostTensor expAvg(DType::F32, {8}), expAvgSq(DType::F32, {8});
  std::vector<double> p = param.values(), g = grad.values();
  HostTensor lr = f32Scalar(1e-2), step = i64Scalar(1);
  ASSERT_OK(cpu::adamwUpdate(cpuCtx, param, grad, expAvg, expAvgSq, lr, step, 0.9,
                             0.95, 1e-8, 0.0, param, expAvg, expAvgSq));
  // Step 1 without decay: the update is lr * sign(g) (up to eps).
  std::vector<double> expected;
  for (size_t i = 0; i < p.size(); ++i)
    expected.push_back(p[i] - 1e-2 * (g[i] > 0 ? 1 : -1));
  expectClose(param.values(), expected, tolerance(DType::BF16), 1e-3,
              "bf16 param");
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(expAvg.get(int64_t(i)), 0.1 * g[i], 1e-7);
}

// bf16 master weights: stochastic rounding rounds up with probability equal
// to the distance from the value below over the gap (mathematics: unbiased
// in expectation), always to one of the two neighbours, and draws the same
// bits for the same seed, step and element.
TEST(StochasticRounding, UnbiasedBetweenNeighbours) {
  const float gap = 1.0f / 128; // bf16's spacing in [1, 2)
  for (double fraction : {0.0, 0.1, 0.3, 0.5, 0.9}) {
    float x = 1.0f + float(fraction) * gap;
    int64_t up = 0, n = 200000;
    for (int64_t i = 0; i < n; ++i) {
      float r = roundBf16Stochastic(x, 0x9e37u, 7, i);
      ASSERT_TRUE(r == 1.0f || r == 1.0f + gap) << r;
      up += r != 1.0f;
      ASSERT_EQ(r, roundBf16Stochastic(x, 0x9e37u, 7, i));
    }
    EXPECT_NEAR(double(up) / double(n), fraction, 0.005) << fraction;
  }
  // Negative values round in magnitude, symmetrically.
  EXPECT_EQ(roundBf16Stochastic(-1.0f, 3, 1, 0), -1.0f);
  float neg = roundBf16Stochastic(-(1.0f + 0.5f * gap), 3, 1, 5);
  EXPECT_TRUE(neg == -1.0f || neg == -(1.0f + gap));
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(roundBf16Stochastic(inf, 3, 1, 0), inf);
  EXPECT_TRUE(std::isnan(roundBf16Stochastic(std::nanf(""), 3, 1, 0)));
}

// Updates far below a bf16 step: rounding to nearest loses every one of
// them, stochastic rounding moves the weights by their sum on average.
TEST(AdamW, StochasticRoundingKeepsTinyUpdates) {
  const int64_t n = 4096, steps = 50;
  const double lr = 1e-4; // AdamW's step is about lr: 1/78 of bf16's gap at 1
  HostTensor nearest(DType::BF16, {n}), stochastic(DType::BF16, {n});
  HostTensor m1(DType::F32, {n}), v1(DType::F32, {n}), m2(DType::F32, {n}),
      v2(DType::F32, {n}), grad(DType::BF16, {n});
  for (int64_t i = 0; i < n; ++i) {
    nearest.set(i, 1.0);
    stochastic.set(i, 1.0);
    grad.set(i, 1.0);
  }
  HostTensor lrT = f32Scalar(lr);
  for (int64_t t = 1; t <= steps; ++t) {
    HostTensor step = i64Scalar(t);
    ASSERT_OK(cpu::adamwUpdate(cpuCtx, nearest, grad, m1, v1, lrT, step, 0.9,
                               0.999, 1e-8, 0.0, nearest, m1, v1));
    ASSERT_OK(cpu::adamwUpdate(cpuCtx, stochastic, grad, m2, v2, lrT, step,
                               0.9, 0.999, 1e-8, 0.0, stochastic, m2, v2,
                               /*roundingSeed=*/12345));
  }
  double mean = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(nearest.get(i), 1.0) << "rounded to nearest, element " << i;
    mean += stochastic.get(i) / double(n);
  }
  // Each step subtracts lr (m / sqrt(v) = 1 for a constant gradient).
  EXPECT_NEAR(mean, 1.0 - double(steps) * lr, 2e-4);
}

namespace {
/// Elements [first, first + count) of `t`, a 1-D tensor of their own.
HostTensor slice(const HostTensor &t, int64_t first, int64_t count) {
  HostTensor part(t.dtype(), {count});
  size_t size = dtypeSize(t.dtype());
  std::memcpy(part.ref().data,
              static_cast<const char *>(t.ref().data) + size_t(first) * size,
              size_t(count) * size);
  return part;
}
bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.ref().numBytes() == b.ref().numBytes() &&
         std::memcmp(a.ref().data, b.ref().data, a.ref().numBytes()) == 0;
}
} // namespace

// ZeRO's parts of a bf16 parameter (tg.adamw_update's `part`): part p of
// three, told its number, rounds each element with the bits of its index
// in the whole, so the parts' new values are the whole update's, bit for
// bit, with f32 and with 8-bit moments; a part not told its number draws
// other bits.
TEST(AdamW, PartsRoundAsTheWhole) {
  const int64_t parts = 3, size = 256, n = parts * size, block = 64;
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor param(DType::BF16, {n}), grad(DType::BF16, {n});
  for (int64_t i = 0; i < n; ++i) {
    param.set(i, normal(rng));
    grad.set(i, normal(rng));
  }
  HostTensor lr = f32Scalar(3e-3), step = i64Scalar(4);
  HostTensor signedMap(DType::F32, {256}), unsignedMap(DType::F32, {256});
  for (int i = 0; i < 256; ++i) {
    storeF32(signedMap, i, i == 255 ? 1.0f : (i - 127) / 128.0f);
    storeF32(unsignedMap, i, i / 255.0f);
  }
  const int64_t seed = 777;
  for (bool eightBit : {false, true}) {
    SCOPED_TRACE(eightBit ? "8-bit moments" : "f32 moments");
    // The whole update, then each part's with and without its number.
    auto update = [&](HostTensor &p, const HostTensor &g, const int64_t *part) {
      int64_t count = p.size(), blocks = count / block;
      if (!eightBit) {
        HostTensor m(DType::F32, {count}), v(DType::F32, {count});
        return cpu::adamwUpdate(cpuCtx, p, g, m, v, lr, step, 0.9, 0.999, 1e-8,
                                0.01, p, m, v, seed, part);
      }
      HostTensor m(DType::U8, {count}), v(DType::U8, {count}),
          ma(DType::F32, {blocks}), va(DType::F32, {blocks});
      cpu::AdamWOptions options{0.9, 0.999, 1e-8, 0.01, seed, part};
      return cpu::adamw8bitUpdate(
          cpuCtx, p, g, lr, step, {m, ma, signedMap, m, ma},
          {v, va, unsignedMap, v, va}, options, block, p);
    };
    HostTensor whole = param;
    ASSERT_OK(update(whole, grad, nullptr));
    int64_t unnumberedDiffer = 0;
    for (int64_t p = 0; p < parts; ++p) {
      HostTensor numbered = slice(param, p * size, size), unnumbered = numbered,
                 g = slice(grad, p * size, size);
      ASSERT_OK(update(numbered, g, &p));
      ASSERT_OK(update(unnumbered, g, nullptr));
      EXPECT_TRUE(sameBytes(numbered, slice(whole, p * size, size)))
          << "part " << p;
      if (!sameBytes(unnumbered, slice(whole, p * size, size)))
        ++unnumberedDiffer;
    }
    EXPECT_EQ(unnumberedDiffer, parts - 1) << "parts 1 and 2 draw other bits";
  }
}

TEST(AdamW, RejectsStepZero) {
  HostTensor p(DType::F32, {2}), lr = f32Scalar(0.1), step = i64Scalar(0);
  EXPECT_FAILS(cpu::adamwUpdate(cpuCtx, p, p, p, p, lr, step, 0.9, 0.999, 1e-8, 0.01,
                                p, p, p));
}

TEST(SGD, MomentumVariantsOverThreeSteps) {
  struct Variant {
    double momentum, dampening, weightDecay;
    bool nesterov;
  } variants[] = {
      {0.0, 0.0, 0.0, false}, {0.0, 0.0, 0.05, false}, {0.9, 0.0, 0.0, false},
      {0.9, 0.3, 0.01, false}, {0.8, 0.0, 0.02, true},
  };
  const double lr = 0.05;
  for (const Variant &var : variants) {
    std::mt19937 rng(227);
    HostTensor param = randomTensor(rng, DType::F32, {6});
    // Garbage in the buffer: step 1 must not read it.
    HostTensor buffer = HostTensor::of(
        DType::F32, {6},
        std::vector<double>(6, std::numeric_limits<double>::quiet_NaN()));
    std::vector<double> p = param.values(), buf(6, 0.0);
    HostTensor lrT = f32Scalar(lr);
    bool hasBuffer = var.momentum != 0.0;
    for (int64_t t = 1; t <= 3; ++t) {
      HostTensor grad = randomTensor(rng, DType::F32, {6});
      std::vector<double> g = grad.values();
      // torch.optim.SGD, unrolled.
      for (size_t i = 0; i < 6; ++i) {
        double d = g[i] + var.weightDecay * p[i];
        if (hasBuffer) {
          buf[i] = t == 1 ? d
                          : var.momentum * buf[i] + (1 - var.dampening) * d;
          d = var.nesterov ? d + var.momentum * buf[i] : buf[i];
        }
        p[i] -= double(float(lr)) * d;
      }
      HostTensor step = i64Scalar(t);
      ASSERT_OK(cpu::sgdUpdate(cpuCtx, param, grad, lrT, step,
                               hasBuffer ? &buffer.ref() : nullptr,
                               var.momentum, var.dampening, var.weightDecay,
                               var.nesterov, param,
                               hasBuffer ? &buffer.ref() : nullptr));
      std::string what = "momentum " + std::to_string(var.momentum) +
                         (var.nesterov ? " nesterov" : "") + " step " +
                         std::to_string(t);
      expectClose(param.values(), p, 1e-6, 1e-7, what);
      if (hasBuffer)
        expectClose(buffer.values(), buf, 1e-6, 1e-7, what + " buffer");
    }
  }
}

TEST(LossScale, FollowsGradScalerRules) {
  // growth_interval 3: three finite steps grow the scale, an overflow backs
  // off and resets the tracker, growing past f32 keeps the scale.
  HostTensor scale = f32Scalar(1024), tracker = i64Scalar(0);
  struct Step {
    bool finite;
    double scale;
    int64_t tracker;
  } steps[] = {{true, 1024, 1},  {true, 1024, 2},  {true, 2048, 0},
               {false, 1024, 0}, {true, 1024, 1},  {false, 512, 0},
               {true, 512, 1},   {true, 512, 2},   {true, 1024, 0}};
  for (const Step &s : steps) {
    HostTensor found = i1Scalar(s.finite);
    ASSERT_OK(cpu::updateLossScale(cpuCtx, scale, tracker, found, 2.0, 0.5, 3, scale,
                                   tracker));
    EXPECT_EQ(scale.get(0), s.scale);
    EXPECT_EQ(loadI64(tracker, 0), s.tracker);
  }
  HostTensor huge = f32Scalar(3e38), t = i64Scalar(0);
  HostTensor yes = i1Scalar(true);
  ASSERT_OK(cpu::updateLossScale(cpuCtx, huge, t, yes, 2.0, 0.5, 1, huge, t));
  EXPECT_EQ(huge.get(0), double(3e38f));
  EXPECT_EQ(loadI64(t, 0), 0);
}

TEST(AllFinite, DetectsInfinitiesAndNaNs) {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor good = HostTensor::of(DType::F32, {3}, {1, -2, 3e38});
  HostTensor good16 = HostTensor::of(DType::F16, {2}, {65504, -1});
  HostTensor result = i1Scalar(false);
  ASSERT_OK(cpu::allFinite(cpuCtx, {good.ref(), good16.ref()}, result));
  EXPECT_EQ(result.get(0), 1.0);
  for (double bad : {inf, -inf, nan}) {
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      HostTensor t = HostTensor::of(dtype, {2}, {0.5, bad});
      ASSERT_OK(cpu::allFinite(cpuCtx, {good.ref(), t.ref()}, result));
      EXPECT_EQ(result.get(0), 0.0) << bad << " " << dtypeName(dtype);
    }
  }
  // An f32 value beyond f16's range becomes infinite once stored as f16.
  HostTensor overflow = HostTensor::of(DType::F16, {1}, {1e5});
  ASSERT_OK(cpu::allFinite(cpuCtx, {overflow.ref()}, result));
  EXPECT_EQ(result.get(0), 0.0);
}

TEST(GlobalNorm, TwoNormOfAllOperands) {
  HostTensor a = HostTensor::of(DType::F32, {2}, {3, 4});
  HostTensor b = HostTensor::of(DType::BF16, {2, 2}, {1, 2, 2, 4});
  HostTensor result(DType::F32, {});
  ASSERT_OK(cpu::globalNorm(cpuCtx, {a.ref(), b.ref()}, result));
  EXPECT_FLOAT_EQ(float(result.get(0)), std::sqrt(25.0f + 25.0f));
}

TEST(ScaleAndUnscale, MultiplyAndDivideByTheScale) {
  HostTensor loss = HostTensor::of(DType::BF16, {}, {1.5});
  HostTensor scale = f32Scalar(65536), scaled(DType::F32, {});
  ASSERT_OK(cpu::scaleLoss(cpuCtx, loss, scale, scaled));
  EXPECT_EQ(scaled.get(0), 98304.0);
  // A low-precision gradient unscaled into an f32 master gradient.
  HostTensor grad = HostTensor::of(DType::F16, {3}, {1024, -3, 0.5});
  HostTensor master(DType::F32, {3});
  HostTensor small = f32Scalar(512);
  ASSERT_OK(cpu::unscale(cpuCtx, grad, small, master));
  EXPECT_EQ(master.values(), (std::vector<double>{2, -3.0 / 512, 1.0 / 1024}));
  // grad * (1 / scale) with the reciprocal rounded first: for scale 3 this
  // differs from grad / 3 in the last bit for some values.
  HostTensor three = f32Scalar(3);
  HostTensor g = HostTensor::of(DType::F32, {1}, {5});
  HostTensor out(DType::F32, {1});
  ASSERT_OK(cpu::unscale(cpuCtx, g, three, out));
  EXPECT_EQ(float(out.get(0)), 5.0f * (1.0f / 3.0f));
  // In place, same type.
  ASSERT_OK(cpu::unscale(cpuCtx, grad, small, grad));
  EXPECT_EQ(grad.values(), (std::vector<double>{2, -3.0 / 512, 1.0 / 1024}));
}

TEST(ScaleAndUnscale, UnscaleInPlaceForEveryFloatType) {
  std::mt19937 rng(61);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    expectInPlaceMatches(
        {randomTensor(rng, dtype, {3, 41}, -1000, 1000), f32Scalar(3 * 1024)},
        0,
        [](const std::vector<TensorRef> &in, TensorRef &out) {
          return cpu::unscale(cpuCtx, in[0], in[1], out);
        },
        std::string("unscale ") + dtypeName(dtype));
}

// The code of a value in a sorted map is the nearest entry (ties to the
// lower code), found against a brute-force search, and a signed moment
// never flips sign. A first 8-bit AdamW step (state zero) updates the
// parameter exactly as the f32 step, and its state dequantizes to the f32
// state within a quantization step, with the block absmax exact.
TEST(Quantize, NearestCodeAgainstBruteForce) {
  float map[256];
  for (int i = 0; i < 256; ++i) {
    double x = (i - 127) / 128.0;
    map[i] = float(x * x * x);
  }
  map[255] = 1.0f;
  cpu::QuantCodebook codebook;
  codebook.build(map);
  const float *midpoints = codebook.midpoints;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.1f, 1.1f);
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1e-9f,
                               -1e-9f, 1e-40f, -1e-40f, 1e6f, -1e6f};
  for (int i = 0; i < 20000; ++i)
    values.push_back(uniform(rng));
  for (int i = 0; i < 2000; ++i) // every scale of the dynamic map
    values.push_back(uniform(rng) * std::pow(10.0f, -float(i % 9)));
  for (int i = 0; i < 255; ++i)
    values.push_back(midpoints[i]); // exact ties
  // Infinities take the ends of the map (a brute-force distance is inf to
  // every entry).
  EXPECT_EQ(codebook.quantize(inf, false), 255);
  EXPECT_EQ(codebook.quantize(-inf, false), 0);
  for (float x : values) {
    int best = 0;
    for (int i = 1; i < 256; ++i)
      if (std::fabs(double(map[i]) - x) < std::fabs(double(map[best]) - x))
        best = i;
    // A tie between i and i + 1 goes to i: the brute force keeps the first.
    uint8_t code = codebook.quantize(x, /*isSigned=*/false);
    EXPECT_EQ(int(code), best) << "x = " << x;
    uint8_t signedCode = codebook.quantize(x, /*isSigned=*/true);
    if (x < 0.0f)
      EXPECT_LT(map[signedCode], 0.0f) << "x = " << x;
    else
      EXPECT_EQ(int(signedCode), best) << "x = " << x;
  }
}

TEST(Quantize, AdamW8bitFirstStepMatchesF32) {
  int64_t n = 1000, block = 128, blocks = (n + block - 1) / block;
  float mapS[256], mapU[256];
  for (int i = 0; i < 256; ++i) {
    mapS[i] = (i - 127) / 128.0f;
    mapU[i] = i / 255.0f;
  }
  mapS[255] = 1.0f;
  HostTensor signedMap(DType::F32, {256}), unsignedMap(DType::F32, {256});
  for (int i = 0; i < 256; ++i) {
    storeF32(signedMap, i, mapS[i]);
    storeF32(unsignedMap, i, mapU[i]);
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor param(DType::F32, {n}), grad(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    storeF32(param, i, normal(rng));
    storeF32(grad, i, normal(rng));
  }
  HostTensor p32 = param, m32(DType::F32, {n}), v32(DType::F32, {n});
  HostTensor m8(DType::U8, {n}), v8(DType::U8, {n}),
      ma(DType::F32, {blocks}), va(DType::F32, {blocks});
  HostTensor lr = f32Scalar(1e-2), step = i64Scalar(1);
  ASSERT_TRUE(cpu::adamwUpdate(cpuCtx, p32, grad, m32, v32, lr, step, 0.9, 0.999,
                               1e-8, 0.01, p32, m32, v32)
                  .ok());
  ASSERT_TRUE(cpu::adamw8bitUpdate(cpuCtx, param, grad, lr, step,
                                   {m8, ma, signedMap, m8, ma},
                                   {v8, va, unsignedMap, v8, va},
                                   {0.9, 0.999, 1e-8, 0.01}, block, param)
                  .ok());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(loadF32(param, i), loadF32(p32, i)) << i;
    int64_t b = i / block;
    // Dequantized state within one code step of the f32 state (half a step
    // but for the signed map's ends: -absmax has no code, and a small
    // negative value takes the smallest negative code), v within half.
    float m = mapS[loadI64(m8, i)] * loadF32(ma, b);
    float v = mapU[loadI64(v8, i)] * loadF32(va, b);
    EXPECT_NEAR(m, loadF32(m32, i), loadF32(ma, b) * (1.0f / 128 + 1e-6f)) << i;
    EXPECT_NEAR(v, loadF32(v32, i), loadF32(va, b) / 510.0f + 1e-12f) << i;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    float mMax = 0.0f, vMax = 0.0f;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
      mMax = std::max(mMax, std::fabs(loadF32(m32, i)));
      vMax = std::max(vMax, loadF32(v32, i));
    }
    EXPECT_EQ(loadF32(ma, b), mMax) << "block " << b;
    EXPECT_EQ(loadF32(va, b), vMax) << "block " << b;
  }
}

namespace {
/// torchao's 4-bit maps: the signed dynamic tree map with 3 exponent bits
/// and the linear map 1/16 .. 1 (the compiler makes the same constants;
/// test/e2e/torch/optim4bit-vs-reference.test checks them against torch).
const float kMap4Signed[16] = {-0.8875f, -0.6625f, -0.4375f, -0.2125f,
                               -0.0775f, -0.0325f, -0.0055f, 0.0f,
                               0.0055f,  0.0325f,  0.0775f,  0.2125f,
                               0.4375f,  0.6625f,  0.8875f,  1.0f};
HostTensor map4(bool isSigned) {
  HostTensor map(DType::F32, {16});
  for (int i = 0; i < 16; ++i)
    storeF32(map, i, isSigned ? kMap4Signed[i] : float(i + 1) / 16.0f);
  return map;
}
int code4(const HostTensor &codes, int64_t i) {
  int byte = int(loadI64(codes, i / 2));
  return i % 2 ? byte & 15 : byte >> 4;
}
/// The nearest entry of `map` to x by brute force, a tie to the upper.
int nearest4(const HostTensor &map, float x) {
  int best = 0;
  for (int i = 1; i < 16; ++i)
    if (std::fabs(x - loadF32(map, i)) <= std::fabs(x - loadF32(map, best)))
      best = i;
  return best;
}
} // namespace

// One 4-bit step against the f32 update from zero state: the parameter is
// the same (the update reads the unrounded new moments); each moment's
// scale is its block's absmax (1e-12 for an all-zero block); every code is
// the nearest entry to x / scale (brute force); an odd element count leaves
// the last byte's low nibble 0. Then two more steps in place equal the same
// steps into separate buffers.
TEST(Quantize, AdamW4bitStepAgainstF32AndBruteForce) {
  int64_t n = 1001, block = 128, blocks = (n + block - 1) / block;
  HostTensor mapS = map4(true), mapU = map4(false);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor param(DType::F32, {n}), grad(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    storeF32(param, i, normal(rng));
    storeF32(grad, i, i < block ? 0.0f : normal(rng)); // block 0 all zero
  }
  HostTensor p32 = param, m32(DType::F32, {n}), v32(DType::F32, {n});
  HostTensor m4(DType::U8, {(n + 1) / 2}), v4(DType::U8, {(n + 1) / 2}),
      ms(DType::F32, {blocks}), vs(DType::F32, {blocks});
  HostTensor lr = f32Scalar(1e-2), step = i64Scalar(1);
  cpu::AdamWOptions options{0.9, 0.999, 1e-8, 0.01};
  ASSERT_TRUE(cpu::adamwUpdate(cpuCtx, p32, grad, m32, v32, lr, step, 0.9,
                               0.999, 1e-8, 0.01, p32, m32, v32)
                  .ok());
  ASSERT_TRUE(cpu::adamw4bitUpdate(cpuCtx, param, grad, lr, step,
                                   {m4, ms, mapS, m4, ms},
                                   {v4, vs, mapU, v4, vs}, options, block,
                                   param)
                  .ok());
  for (int64_t b = 0; b < blocks; ++b) {
    float mMax = 0.0f, vMax = 0.0f;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
      mMax = std::max(mMax, std::fabs(loadF32(m32, i)));
      vMax = std::max(vMax, loadF32(v32, i));
    }
    EXPECT_EQ(loadF32(ms, b), std::max(mMax, 1e-12f)) << "block " << b;
    EXPECT_EQ(loadF32(vs, b), std::max(vMax, 1e-12f)) << "block " << b;
  }
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(loadF32(param, i), loadF32(p32, i)) << i;
    int64_t b = i / block;
    EXPECT_EQ(code4(m4, i), nearest4(mapS, loadF32(m32, i) / loadF32(ms, b)))
        << i;
    EXPECT_EQ(code4(v4, i), nearest4(mapU, loadF32(v32, i) / loadF32(vs, b)))
        << i;
  }
  // The zero block: m codes to the map's 0, v to its smallest entry.
  EXPECT_EQ(code4(m4, 0), 7);
  EXPECT_EQ(code4(v4, 0), 0);
  EXPECT_EQ(loadI64(m4, n / 2) & 15, 0);
  EXPECT_EQ(loadI64(v4, n / 2) & 15, 0);

  HostTensor p2 = param, m2 = m4, v2 = v4, ms2 = ms, vs2 = vs;
  for (int64_t t : {2, 3}) {
    HostTensor s = i64Scalar(t);
    HostTensor np(DType::F32, {n}), nm(DType::U8, {(n + 1) / 2}),
        nv(DType::U8, {(n + 1) / 2}), nms(DType::F32, {blocks}),
        nvs(DType::F32, {blocks});
    ASSERT_TRUE(cpu::adamw4bitUpdate(cpuCtx, param, grad, lr, s,
                                     {m4, ms, mapS, m4, ms},
                                     {v4, vs, mapU, v4, vs}, options, block,
                                     param)
                    .ok());
    ASSERT_TRUE(cpu::adamw4bitUpdate(cpuCtx, p2, grad, lr, s,
                                     {m2, ms2, mapS, nm, nms},
                                     {v2, vs2, mapU, nv, nvs}, options, block,
                                     np)
                    .ok());
    p2 = np, m2 = nm, v2 = nv, ms2 = nms, vs2 = nvs;
  }
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(loadF32(param, i), loadF32(p2, i)) << i;
  for (int64_t i = 0; i < (n + 1) / 2; ++i) {
    EXPECT_EQ(loadI64(m4, i), loadI64(m2, i)) << i;
    EXPECT_EQ(loadI64(v4, i), loadI64(v2, i)) << i;
  }
}
