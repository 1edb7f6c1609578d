//===- NNTest.cpp - softmax, layer norm, embedding, attention, loss -------===//
//
// Tests the row-structured kernels' forward results against naive double
// precision references, for f32 and f16/bf16 storage: softmax along every
// axis, layer norm with the biased variance, embedding lookups, attention
// (causal and not, default and explicit scale, unequal lengths), and
// cross-entropy with ignored targets. Bad indices must fail the kernel with
// an error and leave the result untouched. Gradients are in GradientTest;
// softmax, softmax_grad and cross_entropy_grad written over an operand are
// here.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
std::vector<double> referenceSoftmax(const HostTensor &x, int64_t axis) {
  const Shape &shape = x.shape();
  std::vector<double> v = x.values(), out(v.size());
  int64_t stride = stridesOf(shape)[axis];
  for (int64_t i = 0; i < x.size(); ++i) {
    Shape index = unflatten(i, shape);
    int64_t first = i - index[axis] * stride;
    double max = -1e300, sum = 0;
    for (int64_t j = 0; j < shape[axis]; ++j)
      max = std::max(max, v[first + j * stride]);
    for (int64_t j = 0; j < shape[axis]; ++j)
      sum += std::exp(v[first + j * stride] - max);
    out[i] = std::exp(v[i] - max) / sum;
  }
  return out;
}

std::vector<double> referenceLayerNorm(const HostTensor &x,
                                       const HostTensor &w,
                                       const HostTensor &b, double eps) {
  int64_t d = x.shape().back();
  std::vector<double> v = x.values(), ws = w.values(), bs = b.values();
  std::vector<double> out(v.size());
  for (int64_t row = 0; row < x.size() / d; ++row) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j)
      mean += v[row * d + j] / d;
    for (int64_t j = 0; j < d; ++j)
      var += (v[row * d + j] - mean) * (v[row * d + j] - mean) / d;
    for (int64_t j = 0; j < d; ++j)
      out[row * d + j] =
          (v[row * d + j] - mean) / std::sqrt(var + eps) * ws[j] + bs[j];
  }
  return out;
}

/// Attention over [batch, t, d] views with the op's mask convention.
std::vector<double> referenceAttention(const HostTensor &q, const HostTensor &k,
                                       const HostTensor &v, bool causal,
                                       double scale,
                                       const HostTensor *mask = nullptr,
                                       int64_t window = 0,
                                       double softcap = 0.0) {
  size_t r = q.shape().size();
  int64_t tq = q.shape()[r - 2], d = q.shape()[r - 1];
  int64_t tk = k.shape()[r - 2], dv = v.shape()[r - 1];
  int64_t batch = q.size() / (tq * d);
  // Heads per mask row: the mask covers a prefix of the batch dimensions.
  int64_t group = mask ? batch / (mask->size() / tk) : 1;
  std::vector<double> qs = q.values(), ks = k.values(), vs = v.values();
  std::vector<double> ms = mask ? mask->values() : std::vector<double>();
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(static_cast<size_t>(tk));
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < tk; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += qs[(b * tq + i) * d + c] * ks[(b * tk + j) * d + c];
        bool hidden = (causal && j > i) || (window > 0 && j <= i - window) ||
                      (mask && ms[b / group * tk + j] == 0);
        double score = dot * scale;
        if (softcap > 0.0)
          score = softcap * std::tanh(score / softcap);
        s[j] = hidden ? -std::numeric_limits<double>::infinity() : score;
        max = std::max(max, s[j]);
      }
      double sum = 0;
      for (double &e : s)
        sum += (e = max == -std::numeric_limits<double>::infinity()
                        ? 0.0
                        : std::exp(e - max));
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < tk; ++j)
          acc += sum == 0 ? 0.0 : s[j] / sum * vs[(b * tk + j) * dv + c];
        out.push_back(acc);
      }
    }
  return out;
}

double referenceCrossEntropy(const HostTensor &logits,
                             const HostTensor &targets, int64_t ignore) {
  int64_t c = logits.shape().back();
  std::vector<double> x = logits.values(), t = targets.values();
  double total = 0;
  int64_t count = 0;
  for (size_t row = 0; row < t.size(); ++row) {
    if (int64_t(t[row]) == ignore)
      continue;
    double max = -1e300, sum = 0;
    for (int64_t j = 0; j < c; ++j)
      max = std::max(max, x[row * c + j]);
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(x[row * c + j] - max);
    total += max + std::log(sum) - x[row * c + int64_t(t[row])];
    ++count;
  }
  return count ? total / count : 0.0;
}
} // namespace

class NNTest : public ::testing::TestWithParam<DType> {};

TEST_P(NNTest, SoftmaxAlongEveryAxis) {
  DType dtype = GetParam();
  std::mt19937 rng(29);
  HostTensor x = randomTensor(rng, dtype, {3, 4, 5}, -4, 4);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    HostTensor out(dtype, x.shape());
    ASSERT_OK(cpu::softmax(cpuCtx, x, axis, out));
    expectClose(out.values(), referenceSoftmax(x, axis < 0 ? axis + 3 : axis),
                tolerance(dtype), tolerance(dtype) * 1e-2,
                "softmax axis " + std::to_string(axis));
  }
  HostTensor out(dtype, x.shape());
}

TEST_P(NNTest, SoftmaxIsStableForLargeLogits) {
  DType dtype = GetParam();
  HostTensor x = HostTensor::of(dtype, {1, 3}, {1000, 1000, -1000});
  HostTensor out(dtype, {1, 3});
  ASSERT_OK(cpu::softmax(cpuCtx, x, 1, out));
  expectClose(out.values(), {0.5, 0.5, 0.0}, 0, 1e-6, "stable softmax");
}

TEST_P(NNTest, LayerNormMatchesTorchFormula) {
  DType dtype = GetParam();
  std::mt19937 rng(31);
  // A large offset: a one-pass E[x^2] - E[x]^2 variance would lose it.
  HostTensor x = randomTensor(rng, dtype, {2, 3, 8}, 3, 5);
  HostTensor w = randomTensor(rng, dtype, {8}, 0.5, 1.5);
  HostTensor b = randomTensor(rng, dtype, {8});
  for (double eps : {1e-5, 0.1}) {
    HostTensor out(dtype, x.shape());
    ASSERT_OK(cpu::layerNorm(cpuCtx, x, w, b, eps, out));
    expectClose(out.values(), referenceLayerNorm(x, w, b, eps),
                tolerance(dtype) * 4, tolerance(dtype) * 4, "layer_norm");
  }
  HostTensor badWeight(dtype, {7});
  HostTensor out(dtype, x.shape());
}

// Hugging Face's LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight.
// A norm gradient with an addend writes what the norm gradient and a
// tg.add after it write, to the bit: layer norm and RMS norm, the sum also
// over the addend's own buffer.
TEST_P(NNTest, NormGradAddendIsAnAddAfterIt) {
  DType dtype = GetParam();
  std::mt19937 rng(51);
  Shape shape = {7, 24};
  HostTensor x = randomTensor(rng, dtype, shape, -2, 2);
  HostTensor w = randomTensor(rng, dtype, {24}, 0.5, 1.5);
  HostTensor g = randomTensor(rng, dtype, shape);
  HostTensor r = randomTensor(rng, dtype, shape);
  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms_norm_grad" : "layer_norm_grad");
    HostTensor plain(dtype, shape), want(dtype, shape), fused(dtype, shape),
        over = HostTensor::of(dtype, shape, r.values());
    HostTensor dw(dtype, {24}), db(dtype, {24});
    auto normGrad = [&](TensorRef &out, const TensorRef *addend) {
      return rms ? cpu::rmsNormGrad(cpuCtx, x, w, g, 1e-6, out, dw, addend)
                 : cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, out, dw, db,
                                      addend);
    };
    ASSERT_OK(normGrad(plain, nullptr));
    ASSERT_OK(cpu::add(cpuCtx, plain, r, want));
    ASSERT_OK(normGrad(fused, &r.ref()));
    ASSERT_OK(normGrad(over, &over.ref()));
    EXPECT_EQ(fused.values(), want.values());
    EXPECT_EQ(over.values(), want.values());
    HostTensor wrong(dtype, {7, 23});
  }
}

TEST_P(NNTest, BshdRopeIsRopeOfTransposedHeads) {
  // [B, T, H, D] heads rotated by their position (axis 1): the bytes of
  // the rope of the [B, H, T, D] transpose, transposed back, and its
  // inverse.
  DType dtype = GetParam();
  std::mt19937 rng(59);
  Shape bshd = {2, 5, 3, 8}, bhsd = {2, 3, 5, 8};
  HostTensor x = randomTensor(rng, dtype, bshd, -2, 2);
  HostTensor freq(DType::F32, {4});
  for (int64_t i = 0; i < 4; ++i)
    freq.set(i, 1.0 / std::pow(100.0, double(i) / 4.0));
  const std::vector<int64_t> swap = {0, 2, 1, 3};
  for (bool inverse : {false, true}) {
    SCOPED_TRACE(inverse ? "inverse" : "rope");
    HostTensor heads(dtype, bhsd), rotated(dtype, bhsd), want(dtype, bshd),
        got(dtype, bshd);
    ASSERT_OK(cpu::transpose(cpuCtx, x, swap, heads));
    ASSERT_OK(cpu::rope(cpuCtx, heads, freq, inverse, rotated));
    ASSERT_OK(cpu::transpose(cpuCtx, rotated, swap, want));
    ASSERT_OK(cpu::rope(cpuCtx, x, freq, inverse, got, /*bshd=*/true));
    EXPECT_EQ(got.values(), want.values());
  }
  HostTensor rank3(dtype, {5, 3, 8});
}

TEST_P(NNTest, NormGradRoundedIsACastAfterIt) {
  // The 16-bit copy of an f32 input gradient (with and without an addend).
  if (GetParam() != DType::F32)
    GTEST_SKIP() << "rounded_input_grad copies an f32 input gradient";
  std::mt19937 rng(57);
  Shape shape = {7, 24};
  HostTensor x = randomTensor(rng, DType::F32, shape, -2, 2);
  HostTensor w = randomTensor(rng, DType::F32, {24}, 0.5, 1.5);
  HostTensor g = randomTensor(rng, DType::BF16, shape);
  HostTensor r = randomTensor(rng, DType::F32, shape);
  for (DType narrow : {DType::BF16, DType::F16})
    for (bool rms : {false, true})
      for (const TensorRef *addend :
           std::initializer_list<const TensorRef *>{nullptr, &r.ref()}) {
        SCOPED_TRACE(std::string(rms ? "rms_norm_grad" : "layer_norm_grad") +
                     (addend ? " plus" : "") + " to " + dtypeName(narrow));
        HostTensor dx(DType::F32, shape), dw(DType::F32, {24}),
            db(DType::F32, {24}), rounded(narrow, shape), want(narrow, shape);
        auto normGrad = [&](TensorRef *out16) {
          return rms ? cpu::rmsNormGrad(cpuCtx, x, w, g, 1e-6, dx, dw, addend,
                                        out16)
                     : cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, dx, dw, db,
                                          addend, out16);
        };
        ASSERT_OK(normGrad(&rounded.ref()));
        ASSERT_OK(cpu::cast(cpuCtx, dx, want));
        EXPECT_EQ(rounded.values(), want.values());
        HostTensor wrong(DType::F32, shape);
      }
}

TEST_P(NNTest, NormAddendIsAnAddBeforeIt) {
  DType dtype = GetParam();
  std::mt19937 rng(53);
  Shape shape = {7, 24};
  HostTensor x = randomTensor(rng, dtype, shape, -2, 2);
  HostTensor w = randomTensor(rng, dtype, {24}, 0.5, 1.5);
  HostTensor b = randomTensor(rng, dtype, {24});
  // The addend in the input's type, and a bf16 one beside an f32 input.
  std::vector<DType> addendTypes = {dtype};
  if (dtype == DType::F32)
    addendTypes.push_back(DType::BF16);
  for (DType addendType : addendTypes) {
    HostTensor r = randomTensor(rng, addendType, shape);
    for (bool rms : {false, true}) {
      SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
      auto norm = [&](const TensorRef &in, TensorRef &out,
                      const TensorRef *addend, TensorRef *sum) {
        return rms ? cpu::rmsNorm(cpuCtx, in, w, 1e-6, out, addend, sum)
                   : cpu::layerNorm(cpuCtx, in, w, b, 1e-5, out, addend, sum);
      };
      HostTensor sum(dtype, shape), want(dtype, shape), fused(dtype, shape),
          fusedSum(dtype, shape), overOut(dtype, shape),
          over = HostTensor::of(dtype, shape, x.values());
      ASSERT_OK(cpu::add(cpuCtx, x, r, sum));
      ASSERT_OK(norm(sum, want, nullptr, nullptr));
      ASSERT_OK(norm(x, fused, &r.ref(), &fusedSum.ref()));
      // The sum over the input's buffer.
      ASSERT_OK(norm(over, overOut, &r.ref(), &over.ref()));
      EXPECT_EQ(fusedSum.values(), sum.values());
      EXPECT_EQ(fused.values(), want.values());
      EXPECT_EQ(over.values(), sum.values());
      EXPECT_EQ(overOut.values(), want.values());
      HostTensor wrong(addendType, {7, 23});
    }
  }
}

TEST_P(NNTest, RmsNormMatchesLlamaFormula) {
  DType dtype = GetParam();
  std::mt19937 rng(33);
  HostTensor x = randomTensor(rng, dtype, {2, 3, 8}, -3, 3);
  HostTensor w = randomTensor(rng, dtype, {8}, 0.5, 1.5);
  for (double eps : {1e-6, 0.1}) {
    HostTensor out(dtype, x.shape());
    ASSERT_OK(cpu::rmsNorm(cpuCtx, x, w, eps, out));
    std::vector<double> v = x.values(), want(v.size());
    for (int64_t row = 0; row < 6; ++row) {
      double squares = 0;
      for (int64_t j = 0; j < 8; ++j)
        squares += v[row * 8 + j] * v[row * 8 + j];
      for (int64_t j = 0; j < 8; ++j)
        want[row * 8 + j] =
            v[row * 8 + j] / std::sqrt(squares / 8 + eps) * w.get(j);
    }
    expectClose(out.values(), want, tolerance(dtype) * 4,
                tolerance(dtype) * 4, "rms_norm");
  }
  HostTensor badWeight(dtype, {7}), out(dtype, x.shape());
}

// Hugging Face's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin with
// emb = cat(freqs, freqs), rotate_half(x) = cat(-x2, x1), position t.
TEST_P(NNTest, RopeMatchesRotateHalf) {
  DType dtype = GetParam();
  std::mt19937 rng(35);
  const int64_t T = 5, D = 6;
  HostTensor x = randomTensor(rng, dtype, {2, 2, T, D}, -2, 2);
  HostTensor freq(DType::F32, {D / 2});
  for (int64_t i = 0; i < D / 2; ++i)
    freq.set(i, 1.0 / std::pow(500.0, 2.0 * double(i) / double(D)));
  HostTensor out(dtype, x.shape());
  ASSERT_OK(cpu::rope(cpuCtx, x, freq, false, out));
  std::vector<double> v = x.values(), want(v.size());
  for (int64_t row = 0; row < x.size() / D; ++row) {
    int64_t t = row % T;
    for (int64_t j = 0; j < D; ++j) {
      double angle = double(t) * freq.get(j % (D / 2));
      double rotated = j < D / 2 ? -v[row * D + j + D / 2]
                                 : v[row * D + j - D / 2];
      want[row * D + j] =
          v[row * D + j] * std::cos(angle) + rotated * std::sin(angle);
    }
  }
  expectClose(out.values(), want, tolerance(dtype) * 4, tolerance(dtype) * 4,
              "rope");
  // In place, as the planner may run it.
  HostTensor inPlace = x;
  ASSERT_OK(cpu::rope(cpuCtx, inPlace, freq, false, inPlace));
  EXPECT_EQ(inPlace.values(), out.values());
  HostTensor badFreq(DType::F32, {D});
}

static HostTensor swapHeads(const HostTensor &t);

// Positions per row ([B, T], packed examples restarting at 0): the rotation
// of each row is by its own position, in both layouts, in place too; the
// inverse undoes it.
TEST_P(NNTest, RopePositions) {
  DType dtype = GetParam();
  std::mt19937 rng(36);
  const int64_t B = 2, H = 3, T = 5, D = 6;
  HostTensor x = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
  HostTensor freq(DType::F32, {D / 2});
  for (int64_t i = 0; i < D / 2; ++i)
    freq.set(i, 1.0 / std::pow(500.0, 2.0 * double(i) / double(D)));
  for (DType indexType : {DType::I64, DType::I32}) {
    HostTensor positions =
        HostTensor::of(indexType, {B, T}, {0, 1, 2, 0, 1, 3, 0, 1, 2, 3});
    HostTensor out(dtype, x.shape());
    ASSERT_OK(cpu::rope(cpuCtx, x, freq, false, out, false, &positions.ref()));
    std::vector<double> v = x.values(), want(v.size());
    for (int64_t row = 0; row < x.size() / D; ++row) {
      int64_t t = int64_t(positions.get(row / (H * T) * T + row % T));
      for (int64_t j = 0; j < D; ++j) {
        double angle = double(t) * freq.get(j % (D / 2));
        double rotated =
            j < D / 2 ? -v[row * D + j + D / 2] : v[row * D + j - D / 2];
        want[row * D + j] =
            v[row * D + j] * std::cos(angle) + rotated * std::sin(angle);
      }
    }
    expectClose(out.values(), want, tolerance(dtype) * 4, tolerance(dtype) * 4,
                "rope with positions");
    // The bshd layout: the rope of the transposed heads, transposed.
    HostTensor xs = swapHeads(x), outs(dtype, xs.shape());
    ASSERT_OK(cpu::rope(cpuCtx, xs, freq, false, outs, true, &positions.ref()));
    EXPECT_EQ(swapHeads(outs).values(), out.values());
    // In place, and back by the inverse (f32: within rounding).
    HostTensor inPlace = x;
    ASSERT_OK(cpu::rope(cpuCtx, inPlace, freq, false, inPlace, false,
                        &positions.ref()));
    EXPECT_EQ(inPlace.values(), out.values());
    if (dtype == DType::F32) {
      ASSERT_OK(cpu::rope(cpuCtx, inPlace, freq, true, inPlace, false,
                          &positions.ref()));
      expectClose(inPlace.values(), x.values(), 1e-5, 1e-5, "inverse rope");
    }
  }
  HostTensor negative =
      HostTensor::of(DType::I64, {B, T}, {0, 1, 2, 0, 1, 3, 0, -1, 2, 3});
  HostTensor out(dtype, x.shape());
  EXPECT_FAILS(cpu::rope(cpuCtx, x, freq, false, out, false, &negative.ref()));
}

TEST_P(NNTest, EmbeddingLooksUpRows) {
  DType dtype = GetParam();
  std::mt19937 rng(37);
  HostTensor table = randomTensor(rng, dtype, {5, 3});
  for (DType indexType : {DType::I32, DType::I64}) {
    HostTensor indices = HostTensor::of(indexType, {2, 2}, {4, 0, 4, 2});
    HostTensor out(dtype, {2, 2, 3});
    ASSERT_OK(cpu::embedding(cpuCtx, table, indices, out));
    std::vector<double> t = table.values(), expected;
    for (int64_t row : {4, 0, 4, 2})
      for (int64_t j = 0; j < 3; ++j)
        expected.push_back(t[row * 3 + j]);
    EXPECT_EQ(out.values(), expected);
    // A 16-bit table's rows read as f32: the same values, widened.
    if (dtype != DType::F32) {
      HostTensor wide(DType::F32, {2, 2, 3});
      ASSERT_OK(cpu::embedding(cpuCtx, table, indices, wide));
      EXPECT_EQ(wide.values(), expected);
    }
  }
}

/// `t` ([B, H, T, D] or [B, T, H, D]) with its dimensions 1 and 2 swapped.
static HostTensor swapHeads(const HostTensor &t) {
  Shape shape = t.shape();
  std::swap(shape[1], shape[2]);
  HostTensor swapped(t.dtype(), shape);
  EXPECT_TRUE(cpu::transpose(cpuCtx, t, {0, 2, 1, 3}, swapped).ok());
  return swapped;
}

// The bshd layout ([B, T, H, D] operands and results) computes the values
// of head-major attention over the transposed tensors, to the bit, forward
// and backward: grouped-query heads, a [B, T] key mask, a sliding window,
// and gradients an output mask leaves out.
TEST_P(NNTest, BshdAttentionIsAttentionOfTransposedHeads) {
  DType dtype = GetParam();
  std::mt19937 rng(47);
  const int64_t B = 2, H = 6, KV = 2, T = 5, D = 4;
  HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
  HostTensor k = randomTensor(rng, dtype, {B, KV, T, D}, -2, 2);
  HostTensor v = randomTensor(rng, dtype, {B, KV, T, D});
  HostTensor g = randomTensor(rng, dtype, {B, H, T, D});
  HostTensor mask = HostTensor::of(DType::I64, {B, T},
                                   {1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  HostTensor qs = swapHeads(q), ks = swapHeads(k), vs = swapHeads(v),
             gs = swapHeads(g);
  for (int64_t window : {0, 2})
    for (bool withMask : {false, true}) {
      SCOPED_TRACE("window " + std::to_string(window) +
                   (withMask ? " masked" : ""));
      const TensorRef *m = withMask ? &mask.ref() : nullptr;
      HostTensor want(dtype, {B, H, T, D}), got(dtype, {B, T, H, D});
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, m, true, window,
                               std::nullopt, want));
      ASSERT_OK(cpu::attention(cpuCtx, qs, ks, vs, m, true, window,
                               std::nullopt, got, /*bshd=*/true));
      EXPECT_EQ(swapHeads(got).values(), want.values());
      HostTensor dq(dtype, {B, H, T, D}), dk(dtype, {B, KV, T, D}),
          dv(dtype, {B, KV, T, D});
      ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, want, g, m, true, window,
                                   std::nullopt, dq, dk, dv));
      HostTensor dqs(dtype, {B, T, H, D}), dks(dtype, {B, T, KV, D});
      TensorRef absent;
      ASSERT_OK(cpu::attentionGrad(cpuCtx, qs, ks, vs, got, gs, m, true,
                                   window, std::nullopt, dqs, dks, absent,
                                   /*bshd=*/true));
      EXPECT_EQ(swapHeads(dqs).values(), dq.values());
      EXPECT_EQ(swapHeads(dks).values(), dk.values());
    }
}

/// Packed operands (one [B, T, H + 2 KV, D] tensor) give what the three
/// bshd tensors of their heads give, and the one gradient is the three
/// side by side.
TEST_P(NNTest, PackedAttentionIsAttentionOfItsHeads) {
  DType dtype = GetParam();
  std::mt19937 rng(59);
  const int64_t B = 2, H = 4, KV = 2, T = 5, D = 4;
  HostTensor q = randomTensor(rng, dtype, {B, T, H, D}, -2, 2);
  HostTensor k = randomTensor(rng, dtype, {B, T, KV, D}, -2, 2);
  HostTensor v = randomTensor(rng, dtype, {B, T, KV, D});
  HostTensor g = randomTensor(rng, dtype, {B, T, H, D});
  HostTensor packed(dtype, {B, T, H + 2 * KV, D});
  ASSERT_OK(cpu::concat(cpuCtx, {q.ref(), k.ref(), v.ref()}, 2, packed));
  HostTensor want(dtype, {B, T, H, D}), got(dtype, {B, T, H, D});
  ASSERT_OK(cpu::attention(cpuCtx, q, k, v, nullptr, true, 0, std::nullopt,
                           want, /*bshd=*/true));
  ASSERT_OK(cpu::attention(cpuCtx, packed, packed, packed, nullptr, true, 0,
                           std::nullopt, got, /*bshd=*/true, nullptr,
                           /*packed=*/true));
  EXPECT_EQ(got.values(), want.values());
  HostTensor dq(dtype, {B, T, H, D}), dk(dtype, {B, T, KV, D}),
      dv(dtype, {B, T, KV, D});
  ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, want, g, nullptr, true, 0,
                               std::nullopt, dq, dk, dv, /*bshd=*/true));
  HostTensor joined(dtype, packed.shape()), grad(dtype, packed.shape());
  ASSERT_OK(cpu::concat(cpuCtx, {dq.ref(), dk.ref(), dv.ref()}, 2, joined));
  TensorRef absentK, absentV;
  ASSERT_OK(cpu::attentionGrad(cpuCtx, packed, packed, packed, want, g, nullptr,
                               true, 0, std::nullopt, grad, absentK, absentV,
                               /*bshd=*/true, nullptr,
                               /*packed=*/true));
  EXPECT_EQ(grad.values(), joined.values());
}

// The row log-sum-exp attention returns: log(sum_j exp(scale * q.k_j))
// over the keys a row sees, computed here in double (-inf for a row that
// sees none), in both layouts; the gradient reads it and computes the
// same bits as without it.
TEST_P(NNTest, AttentionLogSumExpOfTheScores) {
  DType dtype = GetParam();
  std::mt19937 rng(53);
  const int64_t B = 2, H = 3, T = 5, D = 4;
  HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
  HostTensor k = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
  HostTensor v = randomTensor(rng, dtype, {B, H, T, D});
  HostTensor g = randomTensor(rng, dtype, {B, H, T, D});
  // The second example sees keys 3 and 4 only: its first three rows see
  // none when causal.
  HostTensor mask = HostTensor::of(DType::I64, {B, T},
                                   {1, 1, 1, 1, 1, 0, 0, 0, 1, 1});
  double scale = 1.0 / std::sqrt(double(D));
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    HostTensor out(dtype, {B, H, T, D}), lse(DType::F32, {B, H, T});
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, 0,
                             std::nullopt, out, false, &lse.ref()));
    std::vector<double> want;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T; ++i) {
          std::vector<double> scores;
          for (int64_t j = 0; j < T; ++j) {
            if ((causal && j > i) || mask.get(b * T + j) == 0)
              continue;
            double dot = 0.0;
            for (int64_t c = 0; c < D; ++c)
              dot += q.get(((b * H + h) * T + i) * D + c) *
                     k.get(((b * H + h) * T + j) * D + c);
            scores.push_back(scale * dot);
          }
          double max = -std::numeric_limits<double>::infinity();
          for (double s : scores)
            max = std::max(max, s);
          double sum = 0.0;
          for (double s : scores)
            sum += std::exp(s - max);
          want.push_back(scores.empty() ? max : max + std::log(sum));
        }
    std::vector<double> got = lse.values();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isinf(want[i])) {
        EXPECT_TRUE(std::isinf(got[i]) && got[i] < 0) << i;
        continue;
      }
      EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
    }
    // bshd: the statistic of [B, T, H, D] heads is [B, T, H].
    HostTensor outs(dtype, {B, T, H, D}), lses(DType::F32, {B, T, H});
    ASSERT_OK(cpu::attention(cpuCtx, swapHeads(q), swapHeads(k), swapHeads(v),
                             &mask.ref(), causal, 0, std::nullopt, outs, true,
                             &lses.ref()));
    HostTensor back(DType::F32, {B, H, T});
    ASSERT_OK(cpu::transpose(cpuCtx, lses, {0, 2, 1}, back));
    EXPECT_EQ(back.values(), got);
    // The gradient with the statistic is the gradient without it.
    HostTensor dq(dtype, {B, H, T, D}), dk(dtype, {B, H, T, D}),
        dv(dtype, {B, H, T, D}), eq(dtype, {B, H, T, D}),
        ek(dtype, {B, H, T, D}), ev(dtype, {B, H, T, D});
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, g, &mask.ref(), causal,
                                 0, std::nullopt, dq, dk, dv));
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, g, &mask.ref(), causal,
                                 0, std::nullopt, eq, ek, ev, false,
                                 &lse.ref()));
    EXPECT_EQ(eq.values(), dq.values());
    EXPECT_EQ(ek.values(), dk.values());
    EXPECT_EQ(ev.values(), dv.values());
    HostTensor wrong(DType::F32, {B, H});
  }
}

// Grouped-query attention is attention with each key/value head repeated
// for its group of query heads (Hugging Face's repeat_kv), forward and
// backward: the repeated heads' gradients summed over each group.
TEST_P(NNTest, GroupedQueryAttentionIsRepeatedKeysAndValues) {
  DType dtype = GetParam();
  std::mt19937 rng(43);
  const int64_t B = 2, H = 6, KV = 2, T = 5, D = 4, G = H / KV;
  HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
  HostTensor k = randomTensor(rng, dtype, {B, KV, T, D}, -2, 2);
  HostTensor v = randomTensor(rng, dtype, {B, KV, T, D});
  HostTensor g = randomTensor(rng, dtype, {B, H, T, D});
  HostTensor kr(dtype, {B, H, T, D}), vr(dtype, {B, H, T, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t e = 0; e < T * D; ++e) {
        int64_t to = (b * H + h) * T * D + e, from = (b * KV + h / G) * T * D + e;
        kr.set(to, k.get(from));
        vr.set(to, v.get(from));
      }
  HostTensor mask = HostTensor::of(DType::I64, {B, T},
                                   {1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  for (bool causal : {false, true}) {
    HostTensor out(dtype, {B, H, T, D}), want(dtype, {B, H, T, D});
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal,
                             std::nullopt, out));
    ASSERT_OK(cpu::attention(cpuCtx, q, kr, vr, &mask.ref(), causal,
                             std::nullopt, want));
    expectClose(out.values(), want.values(), tolerance(dtype),
                tolerance(dtype), "grouped attention");
    HostTensor dq(dtype, {B, H, T, D}), dk(dtype, {B, KV, T, D}),
        dv(dtype, {B, KV, T, D}), wantDq(dtype, {B, H, T, D}),
        wantDk(dtype, {B, H, T, D}), wantDv(dtype, {B, H, T, D});
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, g, &mask.ref(), causal,
                                 std::nullopt, dq, dk, dv));
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q, kr, vr, want, g, &mask.ref(),
                                 causal, std::nullopt, wantDq, wantDk, wantDv));
    expectClose(dq.values(), wantDq.values(), tolerance(dtype) * 2,
                tolerance(dtype) * 2, "grouped query_grad");
    std::vector<double> sumK(size_t(B * KV * T * D), 0.0), sumV = sumK;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t e = 0; e < T * D; ++e) {
          int64_t from = (b * H + h) * T * D + e, to = (b * KV + h / G) * T * D + e;
          sumK[to] += wantDk.get(from);
          sumV[to] += wantDv.get(from);
        }
    expectClose(dk.values(), sumK, tolerance(dtype) * 4, tolerance(dtype) * 4,
                "grouped key_grad");
    expectClose(dv.values(), sumV, tolerance(dtype) * 4, tolerance(dtype) * 4,
                "grouped value_grad");
  }
  HostTensor badKey = randomTensor(rng, dtype, {B, 4, T, D});
  HostTensor out(dtype, {B, H, T, D});
}

TEST_P(NNTest, AttentionMatchesNaiveReference) {
  DType dtype = GetParam();
  std::mt19937 rng(41);
  struct Case {
    Shape q, k, v;
    bool causal;
    std::optional<double> scale;
  } cases[] = {
      {{2, 5, 4}, {2, 5, 4}, {2, 5, 3}, false, std::nullopt},
      {{2, 5, 4}, {2, 5, 4}, {2, 5, 3}, true, std::nullopt},
      {{2, 2, 6, 8}, {2, 2, 6, 8}, {2, 2, 6, 8}, true, 0.3},
      {{1, 3, 4}, {1, 7, 4}, {1, 7, 2}, false, std::nullopt}, // Tq != Tk
      {{4, 2}, {4, 2}, {4, 5}, true, 2.0},                    // no batch
  };
  for (const Case &c : cases) {
    HostTensor q = randomTensor(rng, dtype, c.q, -2, 2);
    HostTensor k = randomTensor(rng, dtype, c.k, -2, 2);
    HostTensor v = randomTensor(rng, dtype, c.v);
    Shape outShape = c.q;
    outShape.back() = c.v.back();
    HostTensor out(dtype, outShape);
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, nullptr, c.causal, c.scale, out));
    double scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(c.q.back()));
    expectClose(out.values(), referenceAttention(q, k, v, c.causal, scale),
                tolerance(dtype) * 2, tolerance(dtype) * 2,
                std::string("attention") + (c.causal ? " causal" : ""));
  }
}

// Gemma 2's soft-capped scores (cap * tanh(s / cap) before the mask), with
// a mask, grouped-query heads and in the bshd layout: against the
// reference, and the cap changes the result (scores large beside it).
TEST_P(NNTest, AttentionSoftcap) {
  DType dtype = GetParam();
  std::mt19937 rng(57);
  const int64_t B = 2, H = 2, T = 6, D = 8;
  HostTensor mask =
      HostTensor::of(DType::I64, {B, T}, {1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1});
  HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -3, 3);
  HostTensor k = randomTensor(rng, dtype, {B, H, T, D}, -3, 3);
  HostTensor v = randomTensor(rng, dtype, {B, H, T, D});
  const double cap = 2.0;
  for (bool causal : {false, true}) {
    HostTensor out(dtype, {B, H, T, D}), uncapped(dtype, {B, H, T, D});
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, 0, 1.0, out,
                             false, nullptr, false, cap));
    expectClose(
        out.values(), referenceAttention(q, k, v, causal, 1.0, &mask, 0, cap),
        tolerance(dtype) * 2, tolerance(dtype) * 2,
        std::string("soft-capped attention") + (causal ? " causal" : ""));
    ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, 0, 1.0,
                             uncapped, false, nullptr, false, 0.0));
    double diff = 0;
    for (int64_t i = 0; i < out.size(); ++i)
      diff = std::max(diff, std::fabs(out.get(i) - uncapped.get(i)));
    EXPECT_GT(diff, 0.05) << "the cap changes nothing at these scores";
  }
  HostTensor out(dtype, {B, H, T, D});
}

// Mistral's sliding window: query i sees keys i - window < j <= i, with
// and without a padding mask and grouped-query heads; a window of the
// sequence's length or more is plain causal attention.
TEST_P(NNTest, AttentionSlidingWindow) {
  DType dtype = GetParam();
  std::mt19937 rng(53);
  const int64_t B = 2, H = 2, T = 7, D = 4;
  HostTensor mask = HostTensor::of(DType::I64, {B, T},
                                   {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1});
  for (int64_t window : {1, 3, 7})
    for (bool masked : {false, true}) {
      HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
      HostTensor k = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
      HostTensor v = randomTensor(rng, dtype, {B, H, T, D});
      HostTensor out(dtype, {B, H, T, D});
      const HostTensor *m = masked ? &mask : nullptr;
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, m ? &mask.ref() : nullptr,
                               true, window, std::nullopt, out));
      expectClose(out.values(),
                  referenceAttention(q, k, v, true, 0.5, m, window),
                  tolerance(dtype) * 2, tolerance(dtype) * 2,
                  "windowed attention " + std::to_string(window));
      if (window == T) {
        HostTensor plain(dtype, {B, H, T, D});
        ASSERT_OK(cpu::attention(cpuCtx, q, k, v, m ? &mask.ref() : nullptr,
                                 true, std::nullopt, plain));
        EXPECT_EQ(out.values(), plain.values());
      }
    }
  HostTensor q = randomTensor(rng, dtype, {B, H, T, D});
  HostTensor out(dtype, {B, H, T, D});
}

// A padding mask over keys: [B, Tk] for [B, H, T, D] heads (shared by the
// heads), a full [B, Tk] for [B, T, D], and a row whose keys are all hidden
// (its output is 0), in both index types.
TEST_P(NNTest, AttentionKeyMask) {
  DType dtype = GetParam();
  std::mt19937 rng(47);
  for (DType indexType : {DType::I64, DType::I32}) {
    for (bool causal : {false, true}) {
      HostTensor q = randomTensor(rng, dtype, {2, 3, 5, 4}, -2, 2);
      HostTensor k = randomTensor(rng, dtype, {2, 3, 5, 4}, -2, 2);
      HostTensor v = randomTensor(rng, dtype, {2, 3, 5, 4});
      HostTensor mask = HostTensor::of(indexType, {2, 5},
                                       {1, 1, 1, 0, 0, 0, 1, 1, 1, 1});
      HostTensor out(dtype, {2, 3, 5, 4});
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), causal, std::nullopt, out));
      std::vector<double> want =
          referenceAttention(q, k, v, causal, 0.5, &mask);
      expectClose(out.values(), want, tolerance(dtype) * 2,
                  tolerance(dtype) * 2, "masked attention");
      // Causal, the first query of the second example sees no key.
      if (causal)
        for (int64_t c = 0; c < 4; ++c)
          EXPECT_EQ(out.values()[(3 * 5) * 4 + c], 0.0);
    }
  }
  HostTensor q = randomTensor(rng, dtype, {2, 5, 4}, -2, 2);
  HostTensor mask = HostTensor::of(DType::I64, {2, 6}, {1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0});
  HostTensor k = randomTensor(rng, dtype, {2, 6, 4}, -2, 2);
  HostTensor v = randomTensor(rng, dtype, {2, 6, 3});
  HostTensor out(dtype, {2, 5, 3});
  ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &mask.ref(), false, std::nullopt, out));
  expectClose(out.values(), referenceAttention(q, k, v, false, 0.5, &mask),
              tolerance(dtype) * 2, tolerance(dtype) * 2,
              "masked attention, an example of padding only");
}

/// Positions [s, e) of batch row b of [B, H, T, D] heads, as [1, H, e - s, D].
static HostTensor segmentOf(const HostTensor &t, int64_t b, int64_t s,
                            int64_t e) {
  const Shape &shape = t.shape();
  int64_t H = shape[1], T = shape[2], D = shape[3];
  HostTensor out(t.dtype(), {1, H, e - s, D});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = s; i < e; ++i)
      for (int64_t d = 0; d < D; ++d)
        out.set((h * (e - s) + i - s) * D + d,
                t.get(((b * H + h) * T + i) * D + d));
  return out;
}

// Segment ids (tg.attention's `segments`): a row of packed examples gives
// each example the attention, and the gradients, it has alone, causal or
// not, with grouped-query heads; padding (id 0) sees nothing and is seen by
// nothing, so its outputs and gradients are 0.
TEST_P(NNTest, AttentionSegmentsAreExamplesAlone) {
  DType dtype = GetParam();
  std::mt19937 rng(59);
  const int64_t B = 2, H = 4, KV = 2, T = 9, D = 4;
  for (DType indexType : {DType::I64, DType::I32})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(causal ? "causal" : "bidirectional"));
      HostTensor ids = HostTensor::of(
          indexType, {B, T},
          {1, 1, 1, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 0, 0, 0});
      HostTensor q = randomTensor(rng, dtype, {B, H, T, D}, -2, 2);
      HostTensor k = randomTensor(rng, dtype, {B, KV, T, D}, -2, 2);
      HostTensor v = randomTensor(rng, dtype, {B, KV, T, D});
      HostTensor g = randomTensor(rng, dtype, {B, H, T, D});
      HostTensor out(dtype, {B, H, T, D}), dq(dtype, q.shape()),
          dk(dtype, k.shape()), dv(dtype, v.shape());
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &ids.ref(), causal, 0,
                               std::nullopt, out, false, nullptr, false, 0.0,
                               /*segments=*/true));
      ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, out, g, &ids.ref(), causal,
                                   0, std::nullopt, dq, dk, dv, false, nullptr,
                                   false, 0.0, /*segments=*/true));
      HostTensor packed[4] = {out, dq, dk, dv};
      std::vector<bool> covered(size_t(B * T), false);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < T;) {
          int64_t id = int64_t(ids.get(b * T + s)), e = s;
          while (e < T && int64_t(ids.get(b * T + e)) == id)
            ++e;
          if (id != 0) {
            HostTensor qs = segmentOf(q, b, s, e), ks = segmentOf(k, b, s, e),
                       vs = segmentOf(v, b, s, e), gs = segmentOf(g, b, s, e);
            HostTensor o(dtype, qs.shape()), dqs(dtype, qs.shape()),
                dks(dtype, ks.shape()), dvs(dtype, vs.shape());
            ASSERT_OK(cpu::attention(cpuCtx, qs, ks, vs, nullptr, causal,
                                     std::nullopt, o));
            ASSERT_OK(cpu::attentionGrad(cpuCtx, qs, ks, vs, o, gs, nullptr,
                                         causal, std::nullopt, dqs, dks, dvs));
            HostTensor alone[4] = {o, dqs, dks, dvs};
            const char *names[4] = {"output", "query_grad", "key_grad",
                                    "value_grad"};
            for (int i = 0; i < 4; ++i)
              expectClose(
                  segmentOf(packed[i], b, s, e).values(), alone[i].values(),
                  tolerance(dtype) * 4, tolerance(dtype) * 4,
                  std::string(names[i]) + " of segment " + std::to_string(id));
          } else {
            for (int i = 0; i < 4; ++i)
              for (double x : segmentOf(packed[i], b, s, e).values())
                EXPECT_EQ(x, 0.0) << "padding";
          }
          s = e;
        }
      // Ids that do not ascend (the same examples numbered 2, 1, 3 and
      // 2, 1) are computed over whole rows and masked, not block by block:
      // the same values.
      HostTensor renumbered = HostTensor::of(
          indexType, {B, T},
          {2, 2, 2, 1, 1, 3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 0, 0, 0});
      HostTensor masked(dtype, {B, H, T, D}), mdq(dtype, q.shape()),
          mdk(dtype, k.shape()), mdv(dtype, v.shape());
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &renumbered.ref(), causal, 0,
                               std::nullopt, masked, false, nullptr, false, 0.0,
                               /*segments=*/true));
      ASSERT_OK(cpu::attentionGrad(cpuCtx, q, k, v, masked, g,
                                   &renumbered.ref(), causal, 0, std::nullopt,
                                   mdq, mdk, mdv, false, nullptr, false, 0.0,
                                   /*segments=*/true));
      HostTensor wholeRows[4] = {masked, mdq, mdk, mdv};
      for (int i = 0; i < 4; ++i)
        expectClose(wholeRows[i].values(), packed[i].values(),
                    tolerance(dtype) * 4, tolerance(dtype) * 4,
                    "whole rows, masked");
      // Without segments the same ids are a padding mask: the examples see
      // each other, and the outputs differ.
      HostTensor mixed(dtype, {B, H, T, D});
      ASSERT_OK(cpu::attention(cpuCtx, q, k, v, &ids.ref(), causal, 0,
                               std::nullopt, mixed));
      EXPECT_NE(mixed.values(), out.values());
    }
}

TEST_P(NNTest, CrossEntropyIgnoresTargets) {
  DType dtype = GetParam();
  std::mt19937 rng(43);
  HostTensor logits = randomTensor(rng, dtype, {2, 3, 6}, -3, 3);
  for (DType indexType : {DType::I32, DType::I64}) {
    HostTensor targets =
        HostTensor::of(indexType, {2, 3}, {1, -100, 5, 0, -100, 3});
    HostTensor loss(dtype, {});
    ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss));
    expectClose({loss.get(0)}, {referenceCrossEntropy(logits, targets, -100)},
                tolerance(dtype), 0, "cross_entropy");
    // With another ignore_index, -100 is an ordinary, out-of-range target.
    EXPECT_FAILS(cpu::crossEntropy(cpuCtx, logits, targets, 3, loss));
    // An ignore_index inside the class range ignores that class's targets.
    HostTensor inRange = HostTensor::of(indexType, {2, 3}, {1, 5, 5, 0, 2, 3});
    ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, inRange, 5, loss));
    expectClose({loss.get(0)}, {referenceCrossEntropy(logits, inRange, 5)},
                tolerance(dtype), 0, "cross_entropy ignore_index 5");
  }
  // Loss stored in f32 for 16-bit logits.
  HostTensor targets = HostTensor::of(DType::I64, {2, 3}, {1, 2, 5, 0, 4, 3});
  HostTensor loss(DType::F32, {});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss));
  expectClose({loss.get(0)}, {referenceCrossEntropy(logits, targets, -100)},
              1e-5, 0, "cross_entropy f32 loss");
}

/// softmax over its operand and softmax_grad over either operand, along
/// every axis (the last one contiguous, the others strided).
TEST_P(NNTest, SoftmaxAndItsGradientInPlace) {
  DType dtype = GetParam();
  std::mt19937 rng(47);
  for (int64_t axis : {0, 1, 2}) {
    std::string what = std::string(dtypeName(dtype)) + " axis " +
                       std::to_string(axis);
    std::vector<HostTensor> x = {randomTensor(rng, dtype, {3, 4, 5}, -4, 4)};
    expectInPlaceMatches(
        x, 0,
        [&](const std::vector<TensorRef> &in, TensorRef &out) {
          return cpu::softmax(cpuCtx, in[0], axis, out);
        },
        "softmax " + what);
    HostTensor y(dtype, {3, 4, 5});
    ASSERT_OK(cpu::softmax(cpuCtx, x[0], axis, y));
    std::vector<HostTensor> operands = {y, randomTensor(rng, dtype, {3, 4, 5})};
    for (size_t over : {0, 1})
      expectInPlaceMatches(
          operands, over,
          [&](const std::vector<TensorRef> &in, TensorRef &out) {
            return cpu::softmaxGrad(cpuCtx, in[0], in[1], axis, out);
          },
          "softmax_grad " + what + (over ? " over grad" : " over output"));
  }
}

/// The logits' gradient over the logits, with ignored rows (zeroed), i32
/// and i64 targets, and every row ignored.
TEST_P(NNTest, CrossEntropyGradInPlace) {
  DType dtype = GetParam();
  std::mt19937 rng(53);
  for (DType indexType : {DType::I32, DType::I64}) {
    std::vector<HostTensor> operands = {
        randomTensor(rng, dtype, {2, 3, 7}, -3, 3),
        HostTensor::of(indexType, {2, 3}, {1, -100, 6, 0, -100, 3}),
        HostTensor::of(DType::F32, {}, {1.7})};
    auto crossEntropyGrad = [](const std::vector<TensorRef> &in,
                               TensorRef &out) {
      return cpu::crossEntropyGrad(cpuCtx, in[0], in[1], in[2], -100, out);
    };
    std::string what = std::string("cross_entropy_grad ") + dtypeName(dtype) +
                       " " + dtypeName(indexType) + " targets";
    expectInPlaceMatches(operands, 0, crossEntropyGrad, what);
    operands[1] =
        HostTensor::of(indexType, {2, 3}, std::vector<double>(6, -100));
    expectInPlaceMatches(operands, 0, crossEntropyGrad, what + " all ignored");
  }
}

/// The loss with its gradient (tg-fuse-loss): crossEntropy's loss and
/// crossEntropyGrad's gradient, into its own buffer and over the logits.
TEST_P(NNTest, CrossEntropyWithGradIsBothKernels) {
  DType dtype = GetParam();
  std::mt19937 rng(54);
  HostTensor logits = randomTensor(rng, dtype, {2, 3, 7}, -3, 3);
  HostTensor targets =
      HostTensor::of(DType::I64, {2, 3}, {1, -100, 6, 0, 2, 3});
  HostTensor seed = HostTensor::of(DType::F32, {}, {1.7});
  HostTensor wantLoss(DType::F32, {}), wantGrad(dtype, {2, 3, 7});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -100, wantLoss));
  ASSERT_OK(
      cpu::crossEntropyGrad(cpuCtx, logits, targets, seed, -100, wantGrad));
  HostTensor loss(DType::F32, {}), grad(dtype, {2, 3, 7});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss, &seed.ref(),
                              &grad.ref()));
  EXPECT_EQ(loss.values(), wantLoss.values());
  EXPECT_EQ(grad.values(), wantGrad.values());
  HostTensor inPlace = logits;
  ASSERT_OK(cpu::crossEntropy(cpuCtx, inPlace, targets, -100, loss, &seed.ref(),
                              &inPlace.ref()));
  EXPECT_EQ(loss.values(), wantLoss.values());
  EXPECT_EQ(inPlace.values(), wantGrad.values());
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, NNTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));

TEST(CrossEntropy, AllIgnoredIsZero) {
  HostTensor logits = HostTensor::of(DType::F32, {2, 2}, {1, 2, 3, 4});
  HostTensor targets = HostTensor::of(DType::I64, {2}, {-1, -1});
  HostTensor loss = HostTensor::of(DType::F32, {}, {123});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -1, loss));
  EXPECT_EQ(loss.get(0), 0.0);
  HostTensor grad = HostTensor::of(DType::F32, {}, {1});
  HostTensor dlogits = HostTensor::of(DType::F32, {2, 2}, {9, 9, 9, 9});
  ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits, targets, grad, -1, dlogits));
  EXPECT_EQ(dlogits.values(), std::vector<double>(4, 0.0));
}

TEST(CrossEntropy, TargetCountSkipsIgnored) {
  // Every target that is not the ignore index counts, out of range or not
  // (tg.cross_entropy reports those).
  HostTensor targets =
      HostTensor::of(DType::I32, {2, 3}, {-100, 4, 0, -100, -100, 7});
  HostTensor count = HostTensor::of(DType::F32, {}, {123});
  ASSERT_OK(cpu::targetCount(cpuCtx, targets, -100, count));
  EXPECT_EQ(count.get(0), 3.0);
  ASSERT_OK(cpu::targetCount(cpuCtx, targets, 4, count));
  EXPECT_EQ(count.get(0), 5.0);
  HostTensor bf16(DType::BF16, {});
  ASSERT_OK(cpu::targetCount(cpuCtx, targets, 7, bf16));
  EXPECT_EQ(bf16.get(0), 5.0);
}

TEST(CrossEntropy, SinglePositionAndKnownValue) {
  // logits [C] with a rank-0 target: log(1 + e + e^2) - 2 for target 2.
  HostTensor logits = HostTensor::of(DType::F32, {3}, {0, 1, 2});
  HostTensor target = HostTensor::of(DType::I32, {}, {2});
  HostTensor loss(DType::F32, {});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, target, -100, loss));
  EXPECT_NEAR(loss.get(0), std::log(1 + std::exp(1.0) + std::exp(2.0)) - 2,
              1e-6);
}

// Gemma 2's final-logit soft-cap: the loss of the capped logits, and the
// gradient through the cap (the softmax's times 1 - tanh^2), against the
// definitions; written over the logits, the same values.
TEST(CrossEntropy, SoftcappedLogits) {
  std::mt19937 rng(67);
  const double cap = 2.5;
  HostTensor logits = randomTensor(rng, DType::F32, {5, 7}, -6, 6);
  HostTensor targets = HostTensor::of(DType::I64, {5}, {3, -100, 0, 6, 2});
  std::vector<double> x = logits.values(), capped(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    capped[i] = cap * std::tanh(x[i] / cap);
  HostTensor cappedLogits = HostTensor::of(DType::F32, {5, 7}, capped);
  HostTensor want(DType::F32, {}), loss(DType::F32, {});
  ASSERT_OK(cpu::crossEntropy(cpuCtx, cappedLogits, targets, -100, want));
  ASSERT_OK(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss, nullptr,
                              nullptr, cap));
  EXPECT_NEAR(loss.get(0), want.get(0), 1e-6);
  HostTensor seed = HostTensor::of(DType::F32, {}, {1.5});
  HostTensor cappedGrad(DType::F32, {5, 7}), grad(DType::F32, {5, 7});
  ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, cappedLogits, targets, seed, -100,
                                  cappedGrad));
  ASSERT_OK(
      cpu::crossEntropyGrad(cpuCtx, logits, targets, seed, -100, grad, cap));
  std::vector<double> expected = cappedGrad.values();
  for (size_t i = 0; i < expected.size(); ++i) {
    double t = std::tanh(x[i] / cap);
    expected[i] *= 1.0 - t * t;
  }
  expectClose(grad.values(), expected, 1e-5, 1e-7, "soft-capped gradient");
  HostTensor fused(DType::F32, {}), inPlace = logits;
  ASSERT_OK(cpu::crossEntropy(cpuCtx, inPlace, targets, -100, fused,
                              &seed.ref(), &inPlace.ref(), cap));
  EXPECT_EQ(fused.get(0), loss.get(0));
  EXPECT_EQ(inPlace.values(), grad.values());
}

TEST(IndexErrors, EmbeddingOutOfRangeFails) {
  HostTensor table = HostTensor::of(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor out = HostTensor::of(DType::F32, {2, 2}, {7, 7, 7, 7});
  for (double bad : {3.0, -1.0}) {
    HostTensor indices = HostTensor::of(DType::I64, {2}, {0, bad});
    Status status = cpu::embedding(cpuCtx, table, indices, out);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error.find("out of range"), std::string::npos)
        << status.error;
    // Nothing was written.
    EXPECT_EQ(out.values(), std::vector<double>(4, 7.0));
    HostTensor grad(DType::F32, {2, 2});
    HostTensor dtable(DType::F32, {3, 2});
    EXPECT_FAILS(
        cpu::embeddingGrad(cpuCtx, indices, grad, nullptr, -1, dtable));
  }
  HostTensor floatIndices(DType::F32, {2});
}

// tg.gather along the last axis with an index shared by every batch (as
// DeBERTa's relative positions), and along the first axis as torch.gather;
// its gradient sums where indices repeat. Against the definition.
TEST_P(NNTest, GatherAndItsGradient) {
  DType dtype = GetParam();
  std::mt19937 rng(61);
  struct Case {
    Shape input, index, result;
    int64_t axis;
  };
  const Case cases[] = {{{2, 3, 5}, {3, 4}, {2, 3, 4}, 2},
                        {{2, 3, 5}, {3, 4}, {2, 3, 4}, -1},
                        {{4, 3}, {6, 3}, {6, 3}, 0},
                        {{2, 3, 5}, {1, 1, 7}, {2, 3, 7}, 2}};
  for (const Case &c : cases) {
    int64_t dim = c.axis < 0 ? c.axis + int64_t(c.input.size()) : c.axis;
    HostTensor x = randomTensor(rng, dtype, c.input);
    HostTensor index = randomTensor(rng, DType::I64, c.index, 0,
                                    double(c.input[size_t(dim)]) - 0.01);
    HostTensor out(dtype, c.result);
    ASSERT_OK(cpu::gather(cpuCtx, x, index, c.axis, out));
    HostTensor g = randomTensor(rng, dtype, c.result);
    HostTensor dx(dtype, c.input);
    ASSERT_OK(cpu::gatherGrad(cpuCtx, g, index, c.axis, dx));
    std::vector<double> xv = x.values(), gv = g.values(),
                        want(size_t(x.size()), 0.0);
    for (int64_t i = 0; i < out.size(); ++i) {
      Shape at = unflatten(i, c.result);
      Shape from = at;
      from[size_t(dim)] = int64_t(index.get(broadcastFlat(at, c.index)));
      int64_t source = broadcastFlat(from, c.input);
      EXPECT_EQ(out.get(i), xv[size_t(source)]) << "gather " << i;
      want[size_t(source)] += gv[size_t(i)];
    }
    expectClose(dx.values(), want, tolerance(dtype), tolerance(dtype),
                "gather_grad");
  }
  // Out of range, either way, fails before writing; shapes are checked.
  HostTensor x = randomTensor(rng, dtype, {2, 5});
  HostTensor out(dtype, {2, 2}), dx(dtype, {2, 5});
  for (double bad : {5.0, -1.0}) {
    HostTensor index = HostTensor::of(DType::I64, {2}, {0, bad});
    Status status = cpu::gather(cpuCtx, x, index, 1, out);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error.find("out of range"), std::string::npos)
        << status.error;
    EXPECT_FAILS(cpu::gatherGrad(cpuCtx, out, index, 1, dx));
  }
  HostTensor index = HostTensor::of(DType::I64, {2}, {0, 1});
  HostTensor wrongRows(dtype, {3, 2});
}

// tg.top_k against a stable sort by value, largest first: ties keep index
// order and NaN comes first, as torch.topk orders them.
TEST(MixtureOfExperts, TopKOrdersAsTorch) {
  std::mt19937 rng(71);
  for (DType dtype : {DType::F32, DType::BF16}) {
    HostTensor x = randomTensor(rng, dtype, {5, 9});
    // A row of ties and a row with a NaN.
    for (int64_t i = 9; i < 18; ++i)
      x.set(i, i % 3 == 0 ? 0.5 : 0.25);
    x.set(30, std::nan(""));
    for (int64_t k : {1, 3, 9}) {
      HostTensor out(DType::I64, {5, k});
      ASSERT_OK(cpu::topK(cpuCtx, x, k, out));
      for (int64_t row = 0; row < 5; ++row) {
        std::vector<int64_t> order(9);
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          double va = x.get(row * 9 + a), vb = x.get(row * 9 + b);
          if (std::isnan(va) != std::isnan(vb))
            return std::isnan(va);
          return va > vb;
        });
        for (int64_t j = 0; j < k; ++j)
          EXPECT_EQ(out.get(row * k + j), order[size_t(j)])
              << "row " << row << " pick " << j << " k " << k;
      }
    }
  }
  HostTensor x(DType::F32, {2, 4}), tooMany(DType::I64, {2, 5});
}

// tg.moe_route against its definition: rows sorted by expert, choices in
// their order within each (a stable sort), the positions its inverse.
TEST(MixtureOfExperts, RouteSortsStablyByExpert) {
  std::mt19937 rng(72);
  const int64_t tokens = 13, k = 2, experts = 5;
  HostTensor choices(DType::I64, {tokens, k});
  std::uniform_int_distribution<int64_t> pick(0, experts - 2);
  for (int64_t i = 0; i < tokens * k; ++i)
    choices.set(i, double(pick(rng))); // expert 4 gets no row
  HostTensor rows(DType::I64, {tokens * k, 1}),
      positions(DType::I64, {tokens, k}), offsets(DType::I32, {experts + 1});
  ASSERT_OK(cpu::moeRoute(cpuCtx, choices, rows, positions, offsets));
  int64_t row = 0;
  for (int64_t e = 0; e < experts; ++e) {
    EXPECT_EQ(offsets.get(e), row) << "expert " << e;
    for (int64_t i = 0; i < tokens * k; ++i)
      if (choices.get(i) == double(e)) {
        EXPECT_EQ(rows.get(row), i / k) << "row " << row;
        EXPECT_EQ(positions.get(i), row) << "choice " << i;
        ++row;
      }
  }
  EXPECT_EQ(offsets.get(experts), tokens * k);
  EXPECT_EQ(offsets.get(experts - 1), tokens * k); // the empty expert
  // An expert outside [0, E) fails, naming it and its token.
  choices.set(7, 5);
  Status status = cpu::moeRoute(cpuCtx, choices, rows, positions, offsets);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error.find("expert 5 of token 3"), std::string::npos)
      << status.error;
}

TEST(IndexErrors, CrossEntropyTargetOutOfRangeFails) {
  HostTensor logits(DType::F32, {3, 4});
  HostTensor loss = HostTensor::of(DType::F32, {}, {5});
  HostTensor grad = HostTensor::of(DType::F32, {}, {1});
  HostTensor dlogits(DType::F32, {3, 4});
  for (double bad : {4.0, -1.0, 1e9}) {
    HostTensor targets = HostTensor::of(DType::I32, {3}, {0, bad, -100});
    Status status = cpu::crossEntropy(cpuCtx, logits, targets, -100, loss);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error.find("out of range"), std::string::npos)
        << status.error;
    EXPECT_EQ(loss.get(0), 5.0);
    EXPECT_FAILS(cpu::crossEntropyGrad(cpuCtx, logits, targets, grad, -100, dlogits));
  }
}

// What tg-fold-casts makes of a tg.cast (tgc/Support/Precision.h): an f32
// computation reading a 16-bit operand, or writing a 16-bit result, gives
// the bits of the cast and the all-f32 op it replaces.
TEST(MixedPrecision, FoldedCastsComputeTheSameBits) {
  std::mt19937 rng(41);
  for (DType half : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(half));
    HostTensor x = randomTensor(rng, DType::F32, {2, 3, 8}, -3, 3);
    HostTensor w = randomTensor(rng, DType::F32, {8}, 0.5, 1.5);
    HostTensor b = randomTensor(rng, DType::F32, {8});
    auto widened = [&](const HostTensor &t) {
      HostTensor wide(DType::F32, t.shape());
      EXPECT_TRUE(cpu::cast(cpuCtx, t, wide).ok());
      return wide;
    };
    // A binary op with a 16-bit operand on either side, broadcast or not.
    for (Shape shape : {Shape{2, 3, 8}, Shape{8}}) {
      HostTensor y = randomTensor(rng, half, shape, -2, 2);
      HostTensor mixed(DType::F32, x.shape()), plain(DType::F32, x.shape());
      ASSERT_OK(cpu::sub(cpuCtx, x, y, mixed));
      ASSERT_OK(cpu::sub(cpuCtx, x, widened(y), plain));
      EXPECT_EQ(mixed.values(), plain.values());
      if (shape == x.shape()) {
        ASSERT_OK(cpu::sub(cpuCtx, y, x, mixed));
        ASSERT_OK(cpu::sub(cpuCtx, widened(y), x, plain));
        EXPECT_EQ(mixed.values(), plain.values());
      }
    }
    // Norms writing a 16-bit result.
    HostTensor normF32(DType::F32, x.shape()), normHalf(half, x.shape()),
        rounded(half, x.shape());
    ASSERT_OK(cpu::layerNorm(cpuCtx, x, w, b, 1e-5, normHalf));
    ASSERT_OK(cpu::layerNorm(cpuCtx, x, w, b, 1e-5, normF32));
    ASSERT_OK(cpu::cast(cpuCtx, normF32, rounded));
    EXPECT_EQ(normHalf.values(), rounded.values());
    ASSERT_OK(cpu::rmsNorm(cpuCtx, x, w, 1e-6, normHalf));
    ASSERT_OK(cpu::rmsNorm(cpuCtx, x, w, 1e-6, normF32));
    ASSERT_OK(cpu::cast(cpuCtx, normF32, rounded));
    EXPECT_EQ(normHalf.values(), rounded.values());
    // Norm gradients reading a 16-bit incoming gradient.
    HostTensor g = randomTensor(rng, half, x.shape(), -1, 1);
    HostTensor dxMixed(DType::F32, x.shape()), dwMixed(DType::F32, {8}),
        dbMixed(DType::F32, {8}), dx(DType::F32, x.shape()),
        dw(DType::F32, {8}), db(DType::F32, {8});
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, dxMixed, dwMixed,
                                 dbMixed));
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x, w, widened(g), 1e-5, dx, dw, db));
    EXPECT_EQ(dxMixed.values(), dx.values());
    EXPECT_EQ(dwMixed.values(), dw.values());
    EXPECT_EQ(dbMixed.values(), db.values());
    ASSERT_OK(cpu::rmsNormGrad(cpuCtx, x, w, g, 1e-6, dxMixed, dwMixed));
    ASSERT_OK(cpu::rmsNormGrad(cpuCtx, x, w, widened(g), 1e-6, dx, dw));
    EXPECT_EQ(dxMixed.values(), dx.values());
    EXPECT_EQ(dwMixed.values(), dw.values());
  }
  // (Only 16 bits beside f32 in a binary op, and no norm widening its
  // result, are the loader's rules: VerifyTest.cpp.)
}
