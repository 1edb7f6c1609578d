//===- OptimizersCudaTest.cpp - CUDA optimizer updates against the CPU ----===//
//
// Runs the optimizer updates and the mixed-precision ops on the GPU and the
// CPU from the same state over several steps, written in place as the
// runtime runs them: SGD plain and with momentum (step-1 initialization
// that must not read a garbage buffer, dampening, Nesterov, weight decay),
// AdamW with f32 and bf16 parameters, the kBadStep error of an update at
// step < 1 (which must leave the state alone), global_norm and all_finite
// over mixed float types, scale_loss, unscale (in place and into a wider
// overlapping buffer) and every branch of update_loss_scale.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "tgc/Support/MultiTensor.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {

using Shape = std::vector<int64_t>;

/// The code kernels raise on an optimizer step < 1 (Common.cuh).
constexpr int kBadStep = 3;



HostTensor f32Scalar(float value) {
  HostTensor t(DType::F32, {});
  storeF32(t.ref, 0, value);
  return t;
}
HostTensor i64Scalar(int64_t value) {
  HostTensor t(DType::I64, {});
  storeI64(t.ref, 0, value);
  return t;
}
HostTensor i1Scalar(bool value) {
  HostTensor t(DType::I1, {});
  storeI64(t.ref, 0, value ? 1 : 0);
  return t;
}

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

TEST(OptimizersCuda, SgdWithoutMomentumInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(401);
  for (DType dtype : kFloatTypes) {
    HostTensor param(dtype, {37, 5});
    fillNormal(param, rng);
    DeviceTensor p(param);
    HostTensor lr = f32Scalar(0.05f);
    DeviceTensor lrD(lr);
    for (int64_t t = 1; t <= 3; ++t) {
      HostTensor grad(dtype, {37, 5}), step = i64Scalar(t);
      fillNormal(grad, rng);
      DeviceTensor g(grad), s(step);
      ASSERT_TRUE(
          ok(cpu::sgdUpdate(cpuCtx, param.ref, grad.ref, lr.ref, step.ref, nullptr, 0.0,
                            0.0, 0.01, false, param.ref, nullptr)));
      ASSERT_TRUE(
          ok(cuda::sgdUpdate(*testContext(), p.ref, g.ref, lrD.ref, s.ref,
                             nullptr, 0.0, 0.0, 0.01, false, p.ref, nullptr)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      expectNear(param, p.toHost(),
                 std::string("sgd step ") + std::to_string(t) + " " +
                     dtypeName(dtype));
    }
  }
}

TEST(OptimizersCuda, SgdMomentumInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(403);
  struct Config {
    DType param, buffer;
    double dampening;
    bool nesterov;
  };
  const Config configs[] = {{DType::F32, DType::F32, 0.0, false},
                            {DType::F32, DType::F32, 0.1, true},
                            {DType::BF16, DType::F32, 0.0, true},
                            {DType::F16, DType::F16, 0.2, false}};
  for (const Config &c : configs) {
    std::string what = std::string("sgd momentum ") + dtypeName(c.param) +
                       (c.nesterov ? " nesterov" : "");
    HostTensor param(c.param, {300}), buffer(c.buffer, {300});
    fillNormal(param, rng);
    // Step 1 must not read the old buffer: garbage on both sides.
    for (int64_t i = 0; i < 300; ++i)
      storeF32(buffer.ref, i, std::numeric_limits<float>::quiet_NaN());
    DeviceTensor p(param), b(buffer);
    HostTensor lr = f32Scalar(0.1f);
    DeviceTensor lrD(lr);
    for (int64_t t = 1; t <= 4; ++t) {
      HostTensor grad(c.param, {300}), step = i64Scalar(t);
      fillNormal(grad, rng);
      DeviceTensor g(grad), s(step);
      ASSERT_TRUE(ok(cpu::sgdUpdate(cpuCtx, param.ref, grad.ref, lr.ref, step.ref,
                                    &buffer.ref, 0.9, c.dampening, 1e-3,
                                    c.nesterov, param.ref, &buffer.ref)));
      ASSERT_TRUE(ok(cuda::sgdUpdate(*testContext(), p.ref, g.ref, lrD.ref,
                                     s.ref, &b.ref, 0.9, c.dampening, 1e-3,
                                     c.nesterov, p.ref, &b.ref)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      std::string at = what + " step " + std::to_string(t);
      expectNear(param, p.toHost(), at + " param");
      expectNear(buffer, b.toHost(), at + " buffer");
    }
  }
}

TEST(OptimizersCuda, AdamWInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(405);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    HostTensor param(dtype, {3, 211}), m(DType::F32, {3, 211}),
        v(DType::F32, {3, 211});
    fillNormal(param, rng);
    DeviceTensor p(param), md(m), vd(v);
    HostTensor lr = f32Scalar(3e-3f);
    DeviceTensor lrD(lr);
    for (int64_t t : {1, 2, 3, 10, 1000}) {
      HostTensor grad(dtype, {3, 211}), step = i64Scalar(t);
      fillNormal(grad, rng, 0.0f, 0.5f);
      DeviceTensor g(grad), s(step);
      ASSERT_TRUE(ok(cpu::adamwUpdate(cpuCtx, param.ref, grad.ref, m.ref, v.ref, lr.ref,
                                      step.ref, 0.9, 0.999, 1e-8, 0.1,
                                      param.ref, m.ref, v.ref)));
      ASSERT_TRUE(ok(cuda::adamwUpdate(*testContext(), p.ref, g.ref, md.ref,
                                       vd.ref, lrD.ref, s.ref, 0.9, 0.999, 1e-8,
                                       0.1, p.ref, md.ref, vd.ref)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      std::string what = std::string("adamw ") + dtypeName(dtype) + " step " +
                         std::to_string(t);
      expectNear(param, p.toHost(), what + " param");
      expectNear(m, md.toHost(), what + " exp_avg");
      expectNear(v, vd.toHost(), what + " exp_avg_sq");
    }
  }
}

// tg.multi_adamw_update: 300 tensors of mixed types and sizes (an empty one
// among them), two launches of up to 256 (kTensorsPerLaunch), each element
// bitwise what the
// single-tensor kernel computes, under an apply predicate that is true and
// one that is false (nothing written).
TEST(OptimizersCuda, MultiAdamWEqualsSingleUpdatesBitwise) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(733);
  constexpr size_t kTensors = size_t(tgc::kTensorsPerLaunch) + 44;
  std::vector<std::unique_ptr<HostTensor>> hosts;
  std::vector<std::unique_ptr<DeviceTensor>> multi, single;
  std::vector<TensorRef> in(4 * kTensors), out(3 * kTensors);
  std::vector<TensorRef> singleRefs(4 * kTensors);
  for (size_t i = 0; i < kTensors; ++i) {
    DType paramType = i % 3 == 0 ? DType::BF16 : DType::F32;
    DType gradType = i % 2 == 0 ? DType::BF16 : DType::F32;
    Shape shape = {int64_t(i == 7 ? 0 : 1 + (i * 37) % 300)};
    HostTensor param(paramType, shape), grad(gradType, shape),
        m(DType::F32, shape), v(DType::F32, shape);
    fillNormal(param, rng);
    fillNormal(grad, rng, 0.0f, 0.5f);
    fillNormal(m, rng, 0.0f, 0.1f);
    fillNormal(v, rng, 0.5f, 0.1f);
    for (HostTensor *t : {&v})
      for (int64_t e = 0; e < t->ref.numElements(); ++e)
        storeF32(t->ref, e, std::abs(loadF32(t->ref, e)));
    size_t k = 0;
    for (HostTensor *t : {&param, &grad, &m, &v}) {
      multi.push_back(std::make_unique<DeviceTensor>(*t));
      single.push_back(std::make_unique<DeviceTensor>(*t));
      in[k * kTensors + i] = multi.back()->ref;
      singleRefs[k * kTensors + i] = single.back()->ref;
      ++k;
    }
    out[i] = in[i];
    out[kTensors + i] = in[2 * kTensors + i];
    out[2 * kTensors + i] = in[3 * kTensors + i];
  }
  HostTensor lr = f32Scalar(3e-3f), step = i64Scalar(4);
  DeviceTensor lrD(lr), stepD(step);
  in.push_back(lrD.ref);
  in.push_back(stepD.ref);
  for (bool apply : {true, false}) {
    HostTensor predicate = i1Scalar(apply);
    DeviceTensor predicateD(predicate);
    testContext()->apply = static_cast<const uint8_t *>(predicateD.ref.data);
    ASSERT_TRUE(ok(cuda::multiAdamwUpdate(*testContext(), in, out, 0.9, 0.95,
                                          1e-8, 0.1)));
    for (size_t i = 0; i < kTensors; ++i) {
      TensorRef p = singleRefs[i], m = singleRefs[2 * kTensors + i],
                v = singleRefs[3 * kTensors + i];
      ASSERT_TRUE(ok(cuda::adamwUpdate(
          *testContext(), p, singleRefs[kTensors + i], m, v, lrD.ref,
          stepD.ref, 0.9, 0.95, 1e-8, 0.1, p, m, v)));
    }
    testContext()->apply = nullptr;
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    for (size_t t = 0; t < 4 * kTensors; ++t) {
      HostTensor a = multi[t]->toHost(), b = single[t]->toHost();
      ASSERT_EQ(a.ref.numBytes(), b.ref.numBytes());
      EXPECT_EQ(std::memcmp(a.ref.data, b.ref.data, a.ref.numBytes()), 0)
          << "tensor " << t % kTensors << " operand " << t / kTensors
          << (apply ? "" : " (not applied)");
    }
  }
}

// bf16 master weights: the CUDA kernels round each new parameter with the
// same bits as the CPU's (the same hash of seed, step and element), f32 and
// 8-bit moments alike, so the two backends store the same bf16 values.
TEST(OptimizersCuda, AdamWStochasticRoundingMatchesCpu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(409);
  const std::vector<int64_t> shape = {3, 211};
  HostTensor param(DType::BF16, shape), nearest(DType::BF16, shape),
      m(DType::F32, shape), v(DType::F32, shape), m0(DType::F32, shape),
      v0(DType::F32, shape);
  fillNormal(param, rng);
  nearest.bytes = param.bytes; // same size: ref.data stays valid
  DeviceTensor p(param), md(m), vd(v);
  HostTensor lr = f32Scalar(1e-4f);
  DeviceTensor lrD(lr);
  int64_t differs = 0;
  for (int64_t t : {1, 2, 3}) {
    HostTensor grad(DType::BF16, shape), step = i64Scalar(t);
    fillNormal(grad, rng, 0.0f, 0.5f);
    DeviceTensor g(grad), s(step);
    m0.bytes = m.bytes;
    v0.bytes = v.bytes;
    ASSERT_TRUE(ok(cpu::adamwUpdate(cpuCtx, nearest.ref, grad.ref, m0.ref,
                                    v0.ref, lr.ref, step.ref, 0.9, 0.999, 1e-8,
                                    0.1, nearest.ref, m0.ref, v0.ref)));
    ASSERT_TRUE(ok(cpu::adamwUpdate(cpuCtx, param.ref, grad.ref, m.ref, v.ref,
                                    lr.ref, step.ref, 0.9, 0.999, 1e-8, 0.1,
                                    param.ref, m.ref, v.ref, 99991)));
    ASSERT_TRUE(ok(cuda::adamwUpdate(*testContext(), p.ref, g.ref, md.ref,
                                     vd.ref, lrD.ref, s.ref, 0.9, 0.999, 1e-8,
                                     0.1, p.ref, md.ref, vd.ref, 99991)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    HostTensor onDevice = p.toHost();
    ASSERT_EQ(onDevice.bytes, param.bytes) << "step " << t;
    const auto *a = reinterpret_cast<const uint16_t *>(param.bytes.data());
    const auto *b = reinterpret_cast<const uint16_t *>(nearest.bytes.data());
    for (int64_t i = 0; i < 3 * 211; ++i)
      differs += a[i] != b[i];
    nearest.bytes = param.bytes;
  }
  // Rounding stochastically is not rounding to nearest. (A seed on an f32
  // parameter is the loader's error: test/e2e/hostile-inputs.test.)
  EXPECT_GT(differs, 20);
}

TEST(OptimizersCuda, StepBelowOneRaisesAndWritesNothing) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(407);
  EXPECT_EQ(takeDeviceError(), 0);
  HostTensor param(DType::F32, {50}), grad(DType::F32, {50}),
      buffer(DType::F32, {50}), m(DType::F32, {50}), v(DType::F32, {50});
  fillNormal(param, rng);
  fillNormal(grad, rng);
  fillNormal(buffer, rng);
  fillNormal(m, rng);
  fillNormal(v, rng);
  HostTensor lr = f32Scalar(0.1f);
  for (int64_t t : {0, -3}) {
    HostTensor step = i64Scalar(t);
    EXPECT_FALSE(cpu::sgdUpdate(cpuCtx, param.ref, grad.ref, lr.ref, step.ref, nullptr,
                                0.0, 0.0, 0.0, false, param.ref, nullptr)
                     .ok());
    DeviceTensor p(param), g(grad), b(buffer), md(m), vd(v), lrD(lr), s(step);
    ASSERT_TRUE(
        ok(cuda::sgdUpdate(*testContext(), p.ref, g.ref, lrD.ref, s.ref,
                           nullptr, 0.0, 0.0, 0.0, false, p.ref, nullptr)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), kBadStep) << "sgd at step " << t;
    ASSERT_TRUE(
        ok(cuda::sgdUpdate(*testContext(), p.ref, g.ref, lrD.ref, s.ref, &b.ref,
                           0.9, 0.0, 0.0, false, p.ref, &b.ref)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), kBadStep) << "sgd momentum at step " << t;
    ASSERT_TRUE(ok(cuda::adamwUpdate(*testContext(), p.ref, g.ref, md.ref,
                                     vd.ref, lrD.ref, s.ref, 0.9, 0.999, 1e-8,
                                     0.01, p.ref, md.ref, vd.ref)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), kBadStep) << "adamw at step " << t;
    EXPECT_EQ(takeDeviceError(), 0) << "the flag was cleared";
    expectNear(param, p.toHost(), "param untouched");
    expectNear(buffer, b.toHost(), "buffer untouched");
    expectNear(m, md.toHost(), "exp_avg untouched");
    expectNear(v, vd.toHost(), "exp_avg_sq untouched");
  }
}

TEST(OptimizersCuda, GlobalNormOverMixedTypes) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(409);
  HostTensor a(DType::F32, {100000}), b(DType::BF16, {37}),
      c(DType::F16, {5, 7}), empty(DType::F32, {0});
  fillNormal(a, rng);
  fillNormal(b, rng, 0.0f, 10.0f);
  fillNormal(c, rng);
  HostTensor want(DType::F32, {});
  ASSERT_TRUE(ok(cpu::globalNorm(cpuCtx, {a.ref, b.ref, c.ref, empty.ref}, want.ref)));
  DeviceTensor da(a), db(b), dc(c), de(empty), result(want, false);
  ASSERT_TRUE(ok(cuda::globalNorm(
      *testContext(), {da.ref, db.ref, dc.ref, de.ref}, result.ref)));
  synchronize();
  expectNear(want, result.toHost(), "global_norm");
}

TEST(OptimizersCuda, AllFinite) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(411);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Poison {
    int tensor; // which operand, or -1 for none
    int64_t index;
    float value;
  };
  const Poison cases[] = {{-1, 0, 0.0f},
                          {0, 4095, inf},
                          {1, 0, -inf},
                          {2, 34, nan},
                          {0, 123456, nan}};
  for (const Poison &poison : cases) {
    HostTensor a(DType::F32, {200000}), b(DType::BF16, {37}),
        c(DType::F16, {5, 7});
    fillNormal(a, rng);
    fillNormal(b, rng);
    fillNormal(c, rng);
    HostTensor *operands[] = {&a, &b, &c};
    if (poison.tensor >= 0)
      storeF32(operands[poison.tensor]->ref, poison.index, poison.value);
    HostTensor want(DType::I1, {}), garbage(DType::I1, {});
    static_cast<uint8_t *>(garbage.ref.data)[0] = 7;
    ASSERT_TRUE(ok(cpu::allFinite(cpuCtx, {a.ref, b.ref, c.ref}, want.ref)));
    DeviceTensor da(a), db(b), dc(c), result(garbage);
    ASSERT_TRUE(ok(
        cuda::allFinite(*testContext(), {da.ref, db.ref, dc.ref}, result.ref)));
    synchronize();
    HostTensor got = result.toHost();
    EXPECT_EQ(static_cast<uint8_t *>(got.ref.data)[0],
              static_cast<uint8_t *>(want.ref.data)[0])
        << "all_finite with operand " << poison.tensor << " poisoned";
  }
}

TEST(OptimizersCuda, ScaleLoss) {
  TGC_REQUIRE_GPU();
  for (DType dtype : kFloatTypes) {
    HostTensor loss(dtype, {}), scale = f32Scalar(65536.0f);
    storeF32(loss.ref, 0, 2.7182817f);
    HostTensor want(DType::F32, {});
    ASSERT_TRUE(ok(cpu::scaleLoss(cpuCtx, loss.ref, scale.ref, want.ref)));
    DeviceTensor l(loss), s(scale), result(want, false);
    ASSERT_TRUE(ok(cuda::scaleLoss(*testContext(), l.ref, s.ref, result.ref)));
    synchronize();
    expectNear(want, result.toHost(),
               std::string("scale_loss ") + dtypeName(dtype));
  }
}

TEST(OptimizersCuda, Unscale) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(413);
  HostTensor scale = f32Scalar(1024.0f * 3.0f);
  DeviceTensor s(scale);
  // Into a separate wider result, and in place.
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes) {
      HostTensor grad(from, {999}), want(to, {999});
      fillNormal(grad, rng, 0.0f, 1000.0f);
      ASSERT_TRUE(ok(cpu::unscale(cpuCtx, grad.ref, scale.ref, want.ref)));
      DeviceTensor g(grad), result(want, false);
      ASSERT_TRUE(ok(cuda::unscale(*testContext(), g.ref, s.ref, result.ref)));
      synchronize();
      std::string what =
          std::string("unscale ") + dtypeName(from) + " -> " + dtypeName(to);
      expectNear(want, result.toHost(), what);
      if (from == to) {
        ASSERT_TRUE(ok(cuda::unscale(*testContext(), g.ref, s.ref, g.ref)));
        synchronize();
        expectSameBytes(result.toHost(), g.toHost(), what + " in place");
      }
    }
  // A bf16 gradient unscaled into an f32 buffer that starts with it.
  HostTensor grad(DType::BF16, {1001}), want(DType::F32, {1001});
  fillNormal(grad, rng, 0.0f, 1000.0f);
  ASSERT_TRUE(ok(cpu::unscale(cpuCtx, grad.ref, scale.ref, want.ref)));
  HostTensor start(DType::F32, {1001});
  std::memcpy(start.ref.data, grad.ref.data, grad.ref.numBytes());
  DeviceTensor result(start);
  TensorRef g = grad.ref;
  g.data = result.data;
  ASSERT_TRUE(ok(cuda::unscale(*testContext(), g, s.ref, result.ref)));
  synchronize();
  expectNear(want, result.toHost(), "unscale into an overlapping f32 buffer");
}

TEST(OptimizersCuda, UpdateLossScaleInPlace) {
  TGC_REQUIRE_GPU();
  struct Case {
    float scale;
    int64_t tracker;
    bool finite;
    int64_t interval;
  };
  const Case cases[] = {
      {65536.0f, 5, false, 2000},   // back off, tracker reset
      {65536.0f, 5, true, 2000},    // count the step
      {65536.0f, 1999, true, 2000}, // grow, tracker reset
      {3.0e38f, 0, true, 1},        // growing overflows: kept
      {1.0f, 0, true, 1},           // grow every step
      {1e-44f, 3, false, 10},       // back off into a subnormal
  };
  for (const Case &c : cases) {
    HostTensor scale = f32Scalar(c.scale), tracker = i64Scalar(c.tracker),
               finite = i1Scalar(c.finite);
    DeviceTensor s(scale), t(tracker), f(finite);
    ASSERT_TRUE(
        ok(cpu::updateLossScale(cpuCtx, scale.ref, tracker.ref, finite.ref, 2.0, 0.5,
                                c.interval, scale.ref, tracker.ref)));
    ASSERT_TRUE(ok(cuda::updateLossScale(*testContext(), s.ref, t.ref, f.ref,
                                         2.0, 0.5, c.interval, s.ref, t.ref)));
    synchronize();
    std::string what = "update_loss_scale from " + std::to_string(c.scale) +
                       (c.finite ? " finite" : " not finite");
    HostTensor gotScale = s.toHost(), gotTracker = t.toHost();
    EXPECT_EQ(loadF32(gotScale.ref, 0), loadF32(scale.ref, 0)) << what;
    EXPECT_EQ(loadI64(gotTracker.ref, 0), loadI64(tracker.ref, 0)) << what;
  }
}

} // namespace

namespace {
/// A sorted 256-entry map with 0 and 1 (and -1-ish when signed), denser
/// near 0 as bitsandbytes' dynamic maps are.
HostTensor testMap(bool isSigned) {
  HostTensor map(DType::F32, {256});
  for (int i = 0; i < 256; ++i) {
    double x = isSigned ? (i - 127) / 128.0 : i / 255.0;
    storeF32(map.ref, i, float(x * x * x));
  }
  return map;
}
} // namespace

// The 8-bit updates on the GPU and the CPU from the same state, in place,
// over several steps, with sizes that are not multiples of the block and
// every block size from one thread per element to 16 per thread: codes and
// absmax identical, parameters within tolerance.
TEST(OptimizersCuda, AdamW8bitMatchesCpu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(409);
  HostTensor mapS = testMap(true), mapU = testMap(false);
  DeviceTensor mapSD(mapS), mapUD(mapU);
  for (int64_t block : {32, 256, 1024, 4096}) {
    int64_t n = 5003, blocks = (n + block - 1) / block;
    HostTensor param(DType::F32, {n}), m(DType::U8, {n}), v(DType::U8, {n}),
        ma(DType::F32, {blocks}), va(DType::F32, {blocks});
    fillNormal(param, rng);
    DeviceTensor p(param), md(m), vd(v), mad(ma), vad(va);
    HostTensor lr = f32Scalar(3e-3f);
    DeviceTensor lrD(lr);
    for (int64_t t : {1, 2, 3, 10}) {
      HostTensor grad(DType::F32, {n}), step = i64Scalar(t);
      fillNormal(grad, rng, 0.0f, 0.5f);
      if (t == 1) // an all-zero first block: absmax 0
        for (int64_t i = 0; i < std::min(block, n); ++i)
          storeF32(grad.ref, i, 0.0f);
      DeviceTensor g(grad), s(step);
      cpu::AdamWOptions options{0.9, 0.999, 1e-8, 0.1};
      ASSERT_TRUE(ok(cpu::adamw8bitUpdate(
          cpuCtx, param.ref, grad.ref, lr.ref, step.ref,
          {m.ref, ma.ref, mapS.ref, m.ref, ma.ref},
          {v.ref, va.ref, mapU.ref, v.ref, va.ref}, options, block,
          param.ref)));
      ASSERT_TRUE(ok(cuda::adamw8bitUpdate(
          *testContext(), p.ref, g.ref, lrD.ref, s.ref,
          {md.ref, mad.ref, mapSD.ref, md.ref, mad.ref},
          {vd.ref, vad.ref, mapUD.ref, vd.ref, vad.ref}, options, block,
          p.ref)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      std::string what = "adamw 8-bit block " + std::to_string(block) +
                         " step " + std::to_string(t);
      expectNear(param, p.toHost(), what + " param");
      expectSameBytes(m, md.toHost(), what + " exp_avg codes");
      expectSameBytes(ma, mad.toHost(), what + " exp_avg absmax");
      expectSameBytes(v, vd.toHost(), what + " exp_avg_sq codes");
      expectSameBytes(va, vad.toHost(), what + " exp_avg_sq absmax");
    }
  }
}

/// torchao's 4-bit maps (as test/Unit/runtime/OptimizersTest.cpp's).
HostTensor testMap4(bool isSigned) {
  static const float signedMap[16] = {
      -0.8875f, -0.6625f, -0.4375f, -0.2125f, -0.0775f, -0.0325f,
      -0.0055f, 0.0f,     0.0055f,  0.0325f,  0.0775f,  0.2125f,
      0.4375f,  0.6625f,  0.8875f,  1.0f};
  HostTensor map(DType::F32, {16});
  for (int i = 0; i < 16; ++i)
    storeF32(map.ref, i, isSigned ? signedMap[i] : float(i + 1) / 16.0f);
  return map;
}

// The 4-bit update as the 8-bit one: an odd element count, block sizes from
// one thread (block 2) to 8 pairs a thread (4096), in place over several
// steps: packed codes and scales identical, parameters within tolerance.
TEST(OptimizersCuda, AdamW4bitMatchesCpu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(411);
  HostTensor mapS = testMap4(true), mapU = testMap4(false);
  DeviceTensor mapSD(mapS), mapUD(mapU);
  for (int64_t block : {2, 128, 1024, 4096}) {
    int64_t n = 5003, blocks = (n + block - 1) / block;
    HostTensor param(DType::F32, {n}), m(DType::U8, {(n + 1) / 2}),
        v(DType::U8, {(n + 1) / 2}), ms(DType::F32, {blocks}),
        vs(DType::F32, {blocks});
    fillNormal(param, rng);
    DeviceTensor p(param), md(m), vd(v), msd(ms), vsd(vs);
    HostTensor lr = f32Scalar(3e-3f);
    DeviceTensor lrD(lr);
    for (int64_t t : {1, 2, 3, 10}) {
      HostTensor grad(DType::F32, {n}), step = i64Scalar(t);
      fillNormal(grad, rng, 0.0f, 0.5f);
      if (t == 1) // an all-zero first block: scale 1e-12
        for (int64_t i = 0; i < std::min(block, n); ++i)
          storeF32(grad.ref, i, 0.0f);
      DeviceTensor g(grad), s(step);
      cpu::AdamWOptions options{0.9, 0.999, 1e-8, 0.1};
      ASSERT_TRUE(ok(cpu::adamw4bitUpdate(
          cpuCtx, param.ref, grad.ref, lr.ref, step.ref,
          {m.ref, ms.ref, mapS.ref, m.ref, ms.ref},
          {v.ref, vs.ref, mapU.ref, v.ref, vs.ref}, options, block,
          param.ref)));
      ASSERT_TRUE(ok(cuda::adamw4bitUpdate(
          *testContext(), p.ref, g.ref, lrD.ref, s.ref,
          {md.ref, msd.ref, mapSD.ref, md.ref, msd.ref},
          {vd.ref, vsd.ref, mapUD.ref, vd.ref, vsd.ref}, options, block,
          p.ref)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      std::string what = "adamw 4-bit block " + std::to_string(block) +
                         " step " + std::to_string(t);
      expectNear(param, p.toHost(), what + " param");
      expectSameBytes(m, md.toHost(), what + " exp_avg codes");
      expectSameBytes(ms, msd.toHost(), what + " exp_avg scale");
      expectSameBytes(v, vd.toHost(), what + " exp_avg_sq codes");
      expectSameBytes(vs, vsd.toHost(), what + " exp_avg_sq scale");
    }
  }
}

// A ZeRO part of a bf16 parameter: the CUDA kernels read the part number
// from device memory and round with the bits of each element's index in
// the whole, as the CPU does (f32 and 4-bit moments).
TEST(OptimizersCuda, PartNumberRoundsAsCpu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(413);
  const int64_t n = 640, block = 128, blocks = n / block, part = 2;
  HostTensor mapS = testMap4(true), mapU = testMap4(false);
  DeviceTensor mapSD(mapS), mapUD(mapU);
  HostTensor param(DType::BF16, {n}), m(DType::F32, {n}), v(DType::F32, {n}),
      param4(DType::BF16, {n}), m4(DType::U8, {n / 2}), v4(DType::U8, {n / 2}),
      ms(DType::F32, {blocks}), vs(DType::F32, {blocks});
  fillNormal(param, rng);
  param4.bytes = param.bytes;
  DeviceTensor p(param), md(m), vd(v), p4(param4), m4d(m4), v4d(v4), msd(ms),
      vsd(vs);
  HostTensor lr = f32Scalar(1e-3f), number = i64Scalar(part);
  DeviceTensor lrD(lr), numberD(number);
  const int64_t seed = 4242;
  for (int64_t t : {1, 2, 3}) {
    HostTensor grad(DType::BF16, {n}), step = i64Scalar(t);
    fillNormal(grad, rng, 0.0f, 0.5f);
    DeviceTensor g(grad), s(step);
    ASSERT_TRUE(ok(cpu::adamwUpdate(cpuCtx, param.ref, grad.ref, m.ref, v.ref,
                                    lr.ref, step.ref, 0.9, 0.999, 1e-8, 0.1,
                                    param.ref, m.ref, v.ref, seed, &part)));
    ASSERT_TRUE(ok(cuda::adamwUpdate(
        *testContext(), p.ref, g.ref, md.ref, vd.ref, lrD.ref, s.ref, 0.9,
        0.999, 1e-8, 0.1, p.ref, md.ref, vd.ref, seed,
        static_cast<const int64_t *>(numberD.ref.data))));
    cpu::AdamWOptions host{0.9, 0.999, 1e-8, 0.1, seed, &part};
    cpu::AdamWOptions device = host;
    device.roundingPart = static_cast<const int64_t *>(numberD.ref.data);
    ASSERT_TRUE(ok(cpu::adamw4bitUpdate(
        cpuCtx, param4.ref, grad.ref, lr.ref, step.ref,
        {m4.ref, ms.ref, mapS.ref, m4.ref, ms.ref},
        {v4.ref, vs.ref, mapU.ref, v4.ref, vs.ref}, host, block, param4.ref)));
    ASSERT_TRUE(ok(
        cuda::adamw4bitUpdate(*testContext(), p4.ref, g.ref, lrD.ref, s.ref,
                              {m4d.ref, msd.ref, mapSD.ref, m4d.ref, msd.ref},
                              {v4d.ref, vsd.ref, mapUD.ref, v4d.ref, vsd.ref},
                              device, block, p4.ref)));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    std::string at = " step " + std::to_string(t);
    expectSameBytes(param, p.toHost(), "f32 moments: param" + at);
    expectSameBytes(param4, p4.toHost(), "4-bit moments: param" + at);
    expectSameBytes(m4, m4d.toHost(), "4-bit moments: exp_avg codes" + at);
  }
}

TEST(OptimizersCuda, SGD8bitMatchesCpu) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(411);
  HostTensor map = testMap(true);
  DeviceTensor mapD(map);
  for (bool nesterov : {false, true}) {
    int64_t n = 777, block = 64, blocks = (n + block - 1) / block;
    HostTensor param(DType::BF16, {n}), b(DType::U8, {n}),
        absmax(DType::F32, {blocks});
    fillNormal(param, rng);
    DeviceTensor p(param), bd(b), ad(absmax);
    HostTensor lr = f32Scalar(0.05f);
    DeviceTensor lrD(lr);
    for (int64_t t = 1; t <= 4; ++t) {
      HostTensor grad(DType::BF16, {n}), step = i64Scalar(t);
      fillNormal(grad, rng);
      DeviceTensor g(grad), s(step);
      cpu::SGDOptions options{0.9, 0.0, 1e-3, nesterov};
      ASSERT_TRUE(ok(cpu::sgd8bitUpdate(
          cpuCtx, param.ref, grad.ref, lr.ref, step.ref,
          {b.ref, absmax.ref, map.ref, b.ref, absmax.ref}, options, block,
          param.ref)));
      ASSERT_TRUE(ok(cuda::sgd8bitUpdate(
          *testContext(), p.ref, g.ref, lrD.ref, s.ref,
          {bd.ref, ad.ref, mapD.ref, bd.ref, ad.ref}, options, block,
          p.ref)));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      std::string what = std::string("sgd 8-bit") +
                         (nesterov ? " nesterov" : "") + " step " +
                         std::to_string(t);
      expectNear(param, p.toHost(), what + " param");
      expectSameBytes(b, bd.toHost(), what + " codes");
      expectSameBytes(absmax, ad.toHost(), what + " absmax");
    }
  }
}

TEST(OptimizersCuda, EightBitStepBelowOneRaises) {
  TGC_REQUIRE_GPU();
  HostTensor map = testMap(true);
  HostTensor param(DType::F32, {300}), grad(DType::F32, {300}),
      codes(DType::U8, {300}), absmax(DType::F32, {2});
  HostTensor lr = f32Scalar(0.1f), step = i64Scalar(0);
  DeviceTensor p(param), g(grad), c(codes), a(absmax), mapD(map), lrD(lr),
      s(step);
  cpu::SGDOptions options{0.9, 0.0, 0.0, false};
  EXPECT_FALSE(cpu::sgd8bitUpdate(
                   cpuCtx, param.ref, grad.ref, lr.ref, step.ref,
                   {codes.ref, absmax.ref, map.ref, codes.ref, absmax.ref},
                   options, 256, param.ref)
                   .ok());
  cpu::QuantizedStateRefs state{c.ref, a.ref, mapD.ref, c.ref, a.ref};
  ASSERT_TRUE(ok(cuda::sgd8bitUpdate(*testContext(), p.ref, g.ref, lrD.ref,
                                     s.ref, state, options, 256, p.ref)));
  synchronize();
  EXPECT_EQ(takeDeviceError(), kBadStep);
}
