//===- GradientTest.cpp - gradient kernels against finite differences -----===//
//
// Every gradient kernel is checked against central finite differences of its
// forward kernel: with a random cotangent c, the scalar loss
// L(x) = sum(forward(x) * c) (accumulated in double) is evaluated at x +- eps
// for each element of each differentiated operand, in f32, and compared with
// the gradient kernel fed c. This ties each gradient to the forward kernel's
// actual semantics (mask, scale, ignored targets, biased variance) rather
// than to a second copy of the formula. A last test checks that the 16-bit
// gradient kernels agree with the f32 ones.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"

#include <cstring>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
/// Runs a forward kernel into `out` and returns sum(out * cotangent).
double lossOf(const Status &status, const HostTensor &out,
              const std::vector<double> &cotangent) {
  EXPECT_TRUE(status.ok()) << status.error;
  return dotLoss(out, cotangent);
}

/// Values in [-high, -low] U [low, high]: away from a kink at 0.
HostTensor awayFromZero(std::mt19937 &rng, Shape shape, double low,
                        double high) {
  HostTensor t = randomTensor(rng, DType::F32, std::move(shape), low, high);
  std::bernoulli_distribution sign(0.5);
  for (int64_t i = 0; i < t.size(); ++i)
    if (sign(rng))
      t.set(i, -t.get(i));
  return t;
}
} // namespace

TEST(GradientCheck, Relu) {
  std::mt19937 rng(101);
  HostTensor x = awayFromZero(rng, {3, 5}, 0.05, 2);
  HostTensor cot = randomTensor(rng, DType::F32, {3, 5});
  HostTensor out(DType::F32, {3, 5}), dx(DType::F32, {3, 5});
  ASSERT_OK(cpu::reluGrad(cpuCtx, x, cot, dx));
  checkGradient(
      x, [&] { return lossOf(cpu::relu(cpuCtx, x, out), out, cot.values()); },
      dx.values(), "relu");
}

TEST(GradientCheck, Gelu) {
  std::mt19937 rng(103);
  HostTensor x = randomTensor(rng, DType::F32, {3, 5}, -4, 4);
  HostTensor cot = randomTensor(rng, DType::F32, {3, 5});
  HostTensor out(DType::F32, {3, 5}), dx(DType::F32, {3, 5});
  ASSERT_OK(cpu::geluGrad(cpuCtx, x, cot, dx));
  checkGradient(
      x, [&] { return lossOf(cpu::gelu(cpuCtx, x, out), out, cot.values()); },
      dx.values(), "gelu");
  ASSERT_OK(cpu::geluExactGrad(cpuCtx, x, cot, dx));
  checkGradient(
      x, [&] { return lossOf(cpu::geluExact(cpuCtx, x, out), out, cot.values()); },
      dx.values(), "gelu exact");
}

TEST(GradientCheck, Tanh) {
  std::mt19937 rng(107);
  HostTensor x = randomTensor(rng, DType::F32, {3, 5}, -2, 2);
  HostTensor cot = randomTensor(rng, DType::F32, {3, 5});
  HostTensor out(DType::F32, {3, 5}), dx(DType::F32, {3, 5});
  ASSERT_OK(cpu::tanh(cpuCtx, x, out));
  ASSERT_OK(cpu::tanhGrad(cpuCtx, out, cot, dx)); // from tanh's result
  checkGradient(
      x, [&] { return lossOf(cpu::tanh(cpuCtx, x, out), out, cot.values()); },
      dx.values(), "tanh");
}

// Every activation of Kernels.def (TGC_ACTIVATION): its gradient kernel
// against central differences of its forward kernel, away from 0 (relu's
// kink), so that a new line of the table is checked without a new test.
TEST(GradientCheck, EveryActivationOfTheKernelTable) {
  using Forward = Status (*)(cpu::Context &, const TensorRef &, TensorRef &);
  using Backward = Status (*)(cpu::Context &, const TensorRef &,
                              const TensorRef &, TensorRef &);
  struct Case {
    const char *name;
    Forward forward;
    Backward backward;
  };
  const Case cases[] = {
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  {NAME, cpu::FUNCTION, cpu::FUNCTION##Grad},
#include "tgc/format/Kernels.def"
  };
  EXPECT_GE(std::size(cases), 3u);
  std::mt19937 rng(109);
  for (const Case &c : cases) {
    HostTensor x = awayFromZero(rng, {3, 5}, 0.05, 4);
    HostTensor cot = randomTensor(rng, DType::F32, {3, 5});
    HostTensor out(DType::F32, {3, 5}), dx(DType::F32, {3, 5});
    ASSERT_OK(c.backward(cpuCtx, x, cot, dx));
    checkGradient(
        x, [&] { return lossOf(c.forward(cpuCtx, x, out), out, cot.values()); },
        dx.values(), c.name);
  }
}

TEST(GradientCheck, Softmax) {
  std::mt19937 rng(109);
  for (int64_t axis : {0, 1, -1}) {
    HostTensor x = randomTensor(rng, DType::F32, {3, 4, 5}, -2, 2);
    HostTensor cot = randomTensor(rng, DType::F32, {3, 4, 5});
    HostTensor out(DType::F32, x.shape()), dx(DType::F32, x.shape());
    ASSERT_OK(cpu::softmax(cpuCtx, x, axis, out));
    ASSERT_OK(cpu::softmaxGrad(cpuCtx, out, cot, axis, dx));
    checkGradient(
        x, [&] { return lossOf(cpu::softmax(cpuCtx, x, axis, out), out, cot.values()); },
        dx.values(), "softmax axis " + std::to_string(axis));
  }
}

TEST(GradientCheck, LayerNormAllThreeOperands) {
  std::mt19937 rng(113);
  for (double eps : {1e-5, 0.5}) {
    HostTensor x = randomTensor(rng, DType::F32, {2, 3, 6}, -2, 2);
    HostTensor w = randomTensor(rng, DType::F32, {6}, 0.5, 1.5);
    HostTensor b = randomTensor(rng, DType::F32, {6});
    HostTensor cot = randomTensor(rng, DType::F32, {2, 3, 6});
    HostTensor out(DType::F32, x.shape()), dx(DType::F32, x.shape());
    HostTensor dw(DType::F32, {6}), db(DType::F32, {6});
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, cot, eps, dx, dw, db));
    auto loss = [&] {
      return lossOf(cpu::layerNorm(cpuCtx, x, w, b, eps, out), out, cot.values());
    };
    checkGradient(x, loss, dx.values(), "layer_norm input");
    checkGradient(w, loss, dw.values(), "layer_norm weight");
    checkGradient(b, loss, db.values(), "layer_norm bias");
  }
}

TEST(GradientCheck, RmsNormInputAndWeight) {
  std::mt19937 rng(131);
  for (double eps : {1e-6, 0.5}) {
    HostTensor x = randomTensor(rng, DType::F32, {2, 3, 6}, -2, 2);
    HostTensor w = randomTensor(rng, DType::F32, {6}, 0.5, 1.5);
    HostTensor cot = randomTensor(rng, DType::F32, {2, 3, 6});
    HostTensor out(DType::F32, x.shape()), dx(DType::F32, x.shape());
    HostTensor dw(DType::F32, {6});
    ASSERT_OK(cpu::rmsNormGrad(cpuCtx, x, w, cot, eps, dx, dw));
    auto loss = [&] {
      return lossOf(cpu::rmsNorm(cpuCtx, x, w, eps, out), out, cot.values());
    };
    checkGradient(x, loss, dx.values(), "rms_norm input");
    checkGradient(w, loss, dw.values(), "rms_norm weight");
  }
}

// rope is linear in its input: the gradient is the inverse rotation of the
// cotangent, checked against differences of the forward rotation.
TEST(GradientCheck, RopeIsItsInverseRotationsAdjoint) {
  std::mt19937 rng(137);
  HostTensor x = randomTensor(rng, DType::F32, {2, 3, 5, 8}, -2, 2);
  HostTensor freq(DType::F32, {4});
  for (int64_t i = 0; i < 4; ++i)
    freq.set(i, std::pow(10000.0, -2.0 * double(i) / 8.0));
  HostTensor cot = randomTensor(rng, DType::F32, x.shape());
  HostTensor out(DType::F32, x.shape()), dx(DType::F32, x.shape());
  ASSERT_OK(cpu::rope(cpuCtx, cot, freq, /*inverse=*/true, dx));
  checkGradient(
      x,
      [&] {
        return lossOf(cpu::rope(cpuCtx, x, freq, false, out), out,
                      cot.values());
      },
      dx.values(), "rope");
  // The inverse undoes the rotation.
  HostTensor back(DType::F32, x.shape());
  ASSERT_OK(cpu::rope(cpuCtx, x, freq, false, out));
  ASSERT_OK(cpu::rope(cpuCtx, out, freq, true, back));
  expectClose(back.values(), x.values(), 1e-5, 1e-5, "rope inverse");
}

TEST(GradientCheck, EmbeddingWithRepeatedIndices) {
  std::mt19937 rng(127);
  HostTensor table = randomTensor(rng, DType::F32, {5, 3});
  HostTensor indices = HostTensor::of(DType::I32, {2, 3}, {1, 4, 1, 0, 1, 4});
  HostTensor cot = randomTensor(rng, DType::F32, {2, 3, 3});
  HostTensor out(DType::F32, {2, 3, 3});
  // Garbage in the result first: embedding_grad must start from zero.
  HostTensor dtable = HostTensor::of(DType::F32, {5, 3},
                                     std::vector<double>(15, 42.0));
  ASSERT_OK(cpu::embeddingGrad(cpuCtx, indices, cot, nullptr, -1, dtable));
  checkGradient(
      table,
      [&] { return lossOf(cpu::embedding(cpuCtx, table, indices, out), out, cot.values()); },
      dtable.values(), "embedding");
  // Rows 2 and 3 are never looked up.
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(dtable.get(2 * 3 + j), 0.0);
    EXPECT_EQ(dtable.get(3 * 3 + j), 0.0);
  }
  // With padding_idx 1 (looked up three times), that row gets nothing and
  // the others what they got.
  HostTensor padded = HostTensor::of(DType::F32, {5, 3},
                                     std::vector<double>(15, 42.0));
  ASSERT_OK(cpu::embeddingGrad(cpuCtx, indices, cot, nullptr, 1, padded));
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(padded.get(r * 3 + j), r == 1 ? 0.0 : dtable.get(r * 3 + j));
}

// A tied embedding's table gradient with the classifier's gradient as the
// addend (tg-accumulate-products): bit for bit the scatter-add followed by
// tg.add, a bf16 addend widened into the f32 table.
TEST(GradientCheck, EmbeddingGradAddendIsTheAdd) {
  std::mt19937 rng(129);
  HostTensor indices = HostTensor::of(DType::I32, {2, 3}, {1, 4, 1, 0, 1, 4});
  HostTensor cot = randomTensor(rng, DType::F32, {2, 3, 3});
  for (DType addendType : {DType::F32, DType::BF16}) {
    HostTensor addend = randomTensor(rng, addendType, {5, 3});
    HostTensor scattered(DType::F32, {5, 3}), unfused(DType::F32, {5, 3}),
        fused(DType::F32, {5, 3});
    ASSERT_OK(cpu::embeddingGrad(cpuCtx, indices, cot, nullptr, -1, scattered));
    ASSERT_OK(cpu::add(cpuCtx, addend, scattered, unfused));
    ASSERT_OK(
        cpu::embeddingGrad(cpuCtx, indices, cot, &addend.ref(), -1, fused));
    EXPECT_EQ(std::memcmp(fused.ref().data, unfused.ref().data,
                          fused.ref().numBytes()),
              0);
  }
}

TEST(GradientCheck, AttentionQueryKeyValue) {
  std::mt19937 rng(131);
  struct Case {
    Shape q, k, v;
    bool causal;
    std::optional<double> scale;
  } cases[] = {
      {{2, 4, 3}, {2, 4, 3}, {2, 4, 2}, false, std::nullopt},
      {{2, 4, 3}, {2, 4, 3}, {2, 4, 2}, true, std::nullopt},
      {{2, 1, 5, 4}, {2, 1, 5, 4}, {2, 1, 5, 3}, true, 0.7},
      {{1, 3, 2}, {1, 5, 2}, {1, 5, 4}, false, 1.3}, // Tq != Tk
      // Grouped-query attention: two query heads per key/value head.
      {{2, 4, 3, 3}, {2, 2, 3, 3}, {2, 2, 3, 2}, true, std::nullopt},
  };
  for (const Case &c : cases) {
    HostTensor q = randomTensor(rng, DType::F32, c.q, -1.5, 1.5);
    HostTensor k = randomTensor(rng, DType::F32, c.k, -1.5, 1.5);
    HostTensor v = randomTensor(rng, DType::F32, c.v);
    Shape outShape = c.q;
    outShape.back() = c.v.back();
    HostTensor cot = randomTensor(rng, DType::F32, outShape);
    HostTensor out(DType::F32, outShape);
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, nullptr, c.causal, c.scale, out));
    HostTensor dq(DType::F32, c.q), dk(DType::F32, c.k), dv(DType::F32, c.v);
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, cot, nullptr, c.causal, c.scale, dq, dk,
                                 dv));
    auto loss = [&] {
      return lossOf(cpu::attention(cpuCtx, q, k, v, nullptr, c.causal, c.scale, out), out,
                    cot.values());
    };
    std::string what = c.causal ? "causal attention " : "attention ";
    checkGradient(q, loss, dq.values(), what + "query");
    checkGradient(k, loss, dk.values(), what + "key");
    checkGradient(v, loss, dv.values(), what + "value");
  }
}

// Gradients through a key padding mask, against finite differences; a
// query row that sees no key passes no gradient.
TEST(GradientCheck, AttentionWithKeyMask) {
  std::mt19937 rng(137);
  for (bool causal : {false, true})
  for (int64_t kvHeads : {2, 1}) { // 1: grouped-query attention
    Shape shape = {2, 2, 4, 3}, kvShape = {2, kvHeads, 4, 3};
    HostTensor q = randomTensor(rng, DType::F32, shape, -1.5, 1.5);
    HostTensor k = randomTensor(rng, DType::F32, kvShape, -1.5, 1.5);
    HostTensor v = randomTensor(rng, DType::F32, kvShape);
    HostTensor mask =
        HostTensor::of(DType::I64, {2, 4}, {1, 1, 0, 0, 0, 1, 1, 0});
    HostTensor cot = randomTensor(rng, DType::F32, shape);
    HostTensor out(DType::F32, shape);
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, std::nullopt, out));
    HostTensor dq(DType::F32, shape), dk(DType::F32, kvShape),
        dv(DType::F32, kvShape);
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, cot, &mask.ref(), causal,
                                 std::nullopt, dq, dk, dv));
    auto loss = [&] {
      return lossOf(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, std::nullopt, out),
                    out, cot.values());
    };
    std::string what = causal ? "masked causal attention " : "masked attention ";
    checkGradient(q, loss, dq.values(), what + "query");
    checkGradient(k, loss, dk.values(), what + "key");
    checkGradient(v, loss, dv.values(), what + "value");
    // Hidden keys get no gradient.
    for (int64_t h = 0; h < kvHeads; ++h)
      for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(dk.values()[((0 * kvHeads + h) * 4 + 2) * 3 + c], 0.0);
        EXPECT_EQ(dv.values()[((1 * kvHeads + h) * 4 + 3) * 3 + c], 0.0);
      }
  }
}

// Gradients through a sliding window (with grouped-query heads and a key
// mask), against finite differences.
TEST(GradientCheck, AttentionSlidingWindow) {
  std::mt19937 rng(139);
  for (int64_t kvHeads : {2, 1})
    for (bool masked : {false, true}) {
      Shape shape = {2, 2, 5, 3}, kvShape = {2, kvHeads, 5, 3};
      HostTensor q = randomTensor(rng, DType::F32, shape, -1.5, 1.5);
      HostTensor k = randomTensor(rng, DType::F32, kvShape, -1.5, 1.5);
      HostTensor v = randomTensor(rng, DType::F32, kvShape);
      HostTensor mask =
          HostTensor::of(DType::I64, {2, 5}, {1, 1, 1, 0, 1, 1, 1, 1, 1, 1});
      const TensorRef *m = masked ? &mask.ref() : nullptr;
      HostTensor cot = randomTensor(rng, DType::F32, shape);
      HostTensor out(DType::F32, shape);
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, m, true, 2, std::nullopt, out));
      HostTensor dq(DType::F32, shape), dk(DType::F32, kvShape),
          dv(DType::F32, kvShape);
      ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, cot, m, true, 2,
                                   std::nullopt, dq, dk, dv));
      auto loss = [&] {
        return lossOf(
            cpu::attention(cpuCtx, q, k, v, m, true, 2, std::nullopt, out),
            out, cot.values());
      };
      checkGradient(q, loss, dq.values(), "windowed attention query");
      checkGradient(k, loss, dk.values(), "windowed attention key");
      checkGradient(v, loss, dv.values(), "windowed attention value");
    }
}

TEST(GradientCheck, CrossEntropyWithIgnoredTargets) {
  std::mt19937 rng(137);
  HostTensor logits = randomTensor(rng, DType::F32, {2, 3, 5}, -2, 2);
  HostTensor targets =
      HostTensor::of(DType::I64, {2, 3}, {4, -100, 0, 2, 2, -100});
  const double cotangent = 1.7;
  HostTensor grad = HostTensor::of(DType::F32, {}, {cotangent});
  HostTensor loss(DType::F32, {});
  HostTensor dlogits(DType::F32, {2, 3, 5});
  ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits, targets, grad, -100, dlogits));
  checkGradient(
      logits,
      [&] {
        return lossOf(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss), loss,
                      {cotangent});
      },
      dlogits.values(), "cross_entropy");
  // Ignored positions get exactly zero.
  for (int64_t j = 0; j < 5; ++j) {
    EXPECT_EQ(dlogits.get(1 * 5 + j), 0.0);
    EXPECT_EQ(dlogits.get(5 * 5 + j), 0.0);
  }
}

TEST(GradientCheck, ReduceMax) {
  std::mt19937 rng(139);
  struct Case {
    Shape axes;
    bool keepDims;
    Shape outShape;
  } cases[] = {{{1}, false, {3, 5}}, {{0, 2}, true, {1, 4, 1}},
               {{0, 1, 2}, false, {}}};
  for (const Case &c : cases) {
    HostTensor x = randomTensor(rng, DType::F32, {3, 4, 5}, -2, 2);
    HostTensor cot = randomTensor(rng, DType::F32, c.outShape);
    HostTensor out(DType::F32, c.outShape), dx(DType::F32, x.shape());
    ASSERT_OK(cpu::reduceMax(cpuCtx, x, c.axes, c.keepDims, out));
    ASSERT_OK(cpu::reduceMaxGrad(cpuCtx, x, out, cot, c.axes, c.keepDims, dx));
    checkGradient(
        x,
        [&] {
          return lossOf(cpu::reduceMax(cpuCtx, x, c.axes, c.keepDims, out), out,
                        cot.values());
        },
        dx.values(), "reduce_max");
  }
}

TEST(GradientCheck, Slice) {
  std::mt19937 rng(149);
  HostTensor x = randomTensor(rng, DType::F32, {4, 5, 3});
  Shape offsets = {1, 0, 1};
  HostTensor cot = randomTensor(rng, DType::F32, {2, 4, 2});
  HostTensor out(DType::F32, {2, 4, 2}), dx(DType::F32, x.shape());
  ASSERT_OK(cpu::sliceGrad(cpuCtx, cot, offsets, dx));
  checkGradient(
      x, [&] { return lossOf(cpu::slice(cpuCtx, x, offsets, out), out, cot.values()); },
      dx.values(), "slice");
}

TEST(GradientCheck, SumToIsTheAdjointOfBroadcastTo) {
  std::mt19937 rng(151);
  const std::pair<Shape, Shape> cases[] = {
      {{4}, {2, 3, 4}}, {{3, 1}, {2, 3, 4}}, {{}, {2, 3}}, {{1, 3, 1}, {2, 3, 2}}};
  for (const auto &[small, big] : cases) {
    HostTensor x = randomTensor(rng, DType::F32, small);
    HostTensor cot = randomTensor(rng, DType::F32, big);
    HostTensor out(DType::F32, big), dx(DType::F32, small);
    ASSERT_OK(cpu::sumTo(cpuCtx, cot, dx));
    checkGradient(
        x, [&] { return lossOf(cpu::broadcastTo(cpuCtx, x, out), out, cot.values()); },
        dx.values(), "sum_to");
  }
}

/// The 16-bit gradient kernels agree with the f32 kernels on the same
/// (exactly representable) inputs, up to the storage type's precision.
TEST(GradientCheck, SixteenBitGradientsMatchF32) {
  std::mt19937 rng(157);
  for (DType dtype : {DType::F16, DType::BF16}) {
    double tol = tolerance(dtype) * 4;
    // layer_norm_grad.
    HostTensor x = randomTensor(rng, dtype, {3, 8}, -2, 2);
    HostTensor w = randomTensor(rng, dtype, {8}, 0.5, 1.5);
    HostTensor g = randomTensor(rng, dtype, {3, 8});
    HostTensor x32 = HostTensor::of(DType::F32, x.shape(), x.values());
    HostTensor w32 = HostTensor::of(DType::F32, w.shape(), w.values());
    HostTensor g32 = HostTensor::of(DType::F32, g.shape(), g.values());
    HostTensor dx(dtype, {3, 8}), dw(dtype, {8}), db(dtype, {8});
    HostTensor dx32(DType::F32, {3, 8}), dw32(DType::F32, {8}),
        db32(DType::F32, {8});
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, dx, dw, db));
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x32, w32, g32, 1e-5, dx32, dw32, db32));
    expectClose(dx.values(), dx32.values(), tol, tol, "16-bit layer_norm dx");
    expectClose(dw.values(), dw32.values(), tol, tol, "16-bit layer_norm dw");
    expectClose(db.values(), db32.values(), tol, tol, "16-bit layer_norm db");
    // attention_grad.
    HostTensor q = randomTensor(rng, dtype, {2, 4, 3});
    HostTensor k = randomTensor(rng, dtype, {2, 4, 3});
    HostTensor v = randomTensor(rng, dtype, {2, 4, 3});
    HostTensor cot = randomTensor(rng, dtype, {2, 4, 3});
    HostTensor o(dtype, {2, 4, 3});
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, nullptr, true, std::nullopt, o));
    std::vector<HostTensor> wide;
    for (const HostTensor *t : {&q, &k, &v, &o, &cot})
      wide.push_back(HostTensor::of(DType::F32, t->shape(), t->values()));
    HostTensor dq(dtype, {2, 4, 3}), dk(dtype, {2, 4, 3}), dv(dtype, {2, 4, 3});
    HostTensor dq32(DType::F32, {2, 4, 3}), dk32(DType::F32, {2, 4, 3}),
        dv32(DType::F32, {2, 4, 3});
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, o, cot, nullptr, true, std::nullopt, dq, dk,
                                 dv));
    ASSERT_OK(cpu::attentionGrad(cpuCtx, wide[0], wide[1], wide[2], wide[3], wide[4], nullptr,
                                 true, std::nullopt, dq32, dk32, dv32));
    expectClose(dq.values(), dq32.values(), tol, tol, "16-bit attention dq");
    expectClose(dk.values(), dk32.values(), tol, tol, "16-bit attention dk");
    expectClose(dv.values(), dv32.values(), tol, tol, "16-bit attention dv");
    // cross_entropy_grad and softmax_grad.
    HostTensor logits = randomTensor(rng, dtype, {4, 6}, -2, 2);
    HostTensor logits32 =
        HostTensor::of(DType::F32, logits.shape(), logits.values());
    HostTensor targets = HostTensor::of(DType::I32, {4}, {5, 0, -100, 3});
    HostTensor scalar = HostTensor::of(dtype, {}, {1.0});
    HostTensor dl(dtype, {4, 6}), dl32(DType::F32, {4, 6});
    ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits, targets, scalar, -100, dl));
    ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits32, targets, scalar, -100, dl32));
    expectClose(dl.values(), dl32.values(), tol, tol * 1e-1,
                "16-bit cross_entropy_grad");
  }
}

/// With an output mask, the fused gradient kernels compute exactly the
/// results that are present (bitwise as when all are) and leave the others;
/// a call that asks for none is an error.
TEST(GradientCheck, MaskedResultsMatchTheFullKernel) {
  std::mt19937 rng(163);
  HostTensor x = randomTensor(rng, DType::F32, {3, 8}, -2, 2);
  HostTensor w = randomTensor(rng, DType::F32, {8}, 0.5, 1.5);
  HostTensor g = randomTensor(rng, DType::F32, {3, 8});
  HostTensor full[3] = {HostTensor(DType::F32, {3, 8}),
                        HostTensor(DType::F32, {8}), HostTensor(DType::F32, {8})};
  ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, full[0], full[1], full[2]));
  HostTensor q = randomTensor(rng, DType::F32, {2, 4, 3});
  HostTensor k = randomTensor(rng, DType::F32, {2, 4, 3});
  HostTensor v = randomTensor(rng, DType::F32, {2, 4, 3});
  HostTensor cot = randomTensor(rng, DType::F32, {2, 4, 3});
  HostTensor o(DType::F32, {2, 4, 3});
  ASSERT_OK(cpu::attention(cpuCtx, q, k, v, nullptr, true, std::nullopt, o));
  std::vector<HostTensor> fullAttention(3, HostTensor(DType::F32, {2, 4, 3}));
  ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, o, cot, nullptr, true, std::nullopt,
                               fullAttention[0], fullAttention[1],
                               fullAttention[2]));
  for (int mask = 1; mask < 8; ++mask) {
    SCOPED_TRACE("mask " + std::to_string(mask));
    std::vector<HostTensor> ln = {HostTensor(DType::F32, {3, 8}),
                                  HostTensor(DType::F32, {8}),
                                  HostTensor(DType::F32, {8})};
    std::vector<HostTensor> at(3, HostTensor(DType::F32, {2, 4, 3}));
    TensorRef lnRefs[3], atRefs[3]; // absent unless in the mask
    for (int i = 0; i < 3; ++i)
      if (mask & (1 << i)) {
        lnRefs[i] = ln[i].ref();
        atRefs[i] = at[i].ref();
      }
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, lnRefs[0], lnRefs[1],
                                 lnRefs[2]));
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, o, cot, nullptr, true, std::nullopt,
                                 atRefs[0], atRefs[1], atRefs[2]));
    for (int i = 0; i < 3; ++i) {
      if (!(mask & (1 << i)))
        continue;
      EXPECT_EQ(ln[i].values(), full[i].values()) << "layer_norm result " << i;
      EXPECT_EQ(at[i].values(), fullAttention[i].values())
          << "attention result " << i;
    }
  }
  // (Computing none of the results is the loader's error: VerifyTest.cpp.)
}
