//===- NNCudaTest.cpp - the CUDA NN kernels against the CPU kernels -------===//
//
// Softmax along every axis, layer norm, embedding, attention and
// cross-entropy, forward and backward, on the GPU against the CPU kernels on
// the same random operands, in f32, f16 and bf16: causal and full attention
// with unequal query and key lengths, a GPT-2-sized head, ignored targets,
// results that reuse an operand's buffer (the same bytes as a separate
// result), and bad indices, which must raise the context's error flag and
// leave their rows unwritten.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "cuda/FlashAttention.h"

using namespace tgc::rt;
using namespace tgc::rt::test;

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    ::tgc::rt::Status status_ = (expr);                                        \
    ASSERT_TRUE(status_.ok()) << status_.error;                                \
  } while (0)

class NNCudaTest : public ::testing::TestWithParam<DType> {};

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

TEST_P(NNCudaTest, SoftmaxAlongEveryAxis) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(201);
  for (auto shape : {std::vector<int64_t>{4, 7, 33}, {3, 1000}, {5}}) {
    HostTensor x = randomTensor(dtype, shape, rng, 0.0f, 3.0f);
    for (int64_t axis = -1; axis < int64_t(shape.size()); ++axis) {
      SCOPED_TRACE("axis " + std::to_string(axis));
      HostTensor want(dtype, shape);
      ASSERT_OK(cpu::softmax(cpuCtx, x.ref, axis, want.ref));
      DeviceTensor dx(x), dOut(want, false);
      ASSERT_OK(cuda::softmax(*testContext(), dx.ref, axis, dOut.ref));
      synchronize();
      expectNear(want, dOut.toHost(), named("softmax", dtype));
    }
  }
}

/// softmax over its operand along every axis: the row kernel (with rows
/// longer than a block) and the column kernel.
TEST_P(NNCudaTest, SoftmaxInPlace) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(203);
  for (auto shape : {std::vector<int64_t>{4, 7, 33}, {3, 1000}}) {
    HostTensor x = randomTensor(dtype, shape, rng, 0.0f, 3.0f);
    for (int64_t axis = 0; axis < int64_t(shape.size()); ++axis)
      expectInPlaceMatches(
          {&x}, 0,
          [&](const std::vector<TensorRef> &in, TensorRef &out) {
            return cpu::softmax(cpuCtx, in[0], axis, out);
          },
          [&](cuda::Context &ctx, const std::vector<TensorRef> &in,
              TensorRef &out) { return cuda::softmax(ctx, in[0], axis, out); },
          named("softmax", dtype) + " axis " + std::to_string(axis) + " of " +
              ::testing::PrintToString(shape));
  }
}

TEST_P(NNCudaTest, SoftmaxGradAlongEveryAxis) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(205);
  std::vector<int64_t> shape = {4, 9, 40};
  for (int64_t axis : {-1, 0, 1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    HostTensor x = randomTensor(dtype, shape, rng);
    HostTensor y(dtype, shape);
    ASSERT_OK(cpu::softmax(cpuCtx, x.ref, axis, y.ref));
    HostTensor g = randomTensor(dtype, shape, rng);
    HostTensor want(dtype, shape);
    ASSERT_OK(cpu::softmaxGrad(cpuCtx, y.ref, g.ref, axis, want.ref));
    DeviceTensor dy(y), dg(g), dOut(want, false);
    ASSERT_OK(
        cuda::softmaxGrad(*testContext(), dy.ref, dg.ref, axis, dOut.ref));
    synchronize();
    expectNear(want, dOut.toHost(), named("softmax_grad", dtype), 2.0);
  }
}

/// softmax_grad over either operand along every axis.
TEST_P(NNCudaTest, SoftmaxGradInPlace) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(206);
  for (auto shape : {std::vector<int64_t>{4, 9, 40}, {3, 1000}}) {
    for (int64_t axis = 0; axis < int64_t(shape.size()); ++axis) {
      HostTensor x = randomTensor(dtype, shape, rng);
      HostTensor y(dtype, shape);
      ASSERT_OK(cpu::softmax(cpuCtx, x.ref, axis, y.ref));
      HostTensor g = randomTensor(dtype, shape, rng);
      for (size_t over : {0, 1})
        expectInPlaceMatches(
            {&y, &g}, over,
            [&](const std::vector<TensorRef> &in, TensorRef &out) {
              return cpu::softmaxGrad(cpuCtx, in[0], in[1], axis, out);
            },
            [&](cuda::Context &ctx, const std::vector<TensorRef> &in,
                TensorRef &out) {
              return cuda::softmaxGrad(ctx, in[0], in[1], axis, out);
            },
            named("softmax_grad", dtype) + " axis " + std::to_string(axis) +
                " of " + ::testing::PrintToString(shape) +
                (over ? " over grad" : " over output"),
            2.0);
    }
  }
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

TEST_P(NNCudaTest, LayerNorm) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(207);
  for (auto shape : {std::vector<int64_t>{4, 16, 96}, {3, 5}, {2, 1000}, {7}}) {
    int64_t d = shape.back();
    HostTensor x = randomTensor(dtype, shape, rng, 0.5f, 2.0f);
    HostTensor w = randomTensor(dtype, {d}, rng, 1.0f, 0.2f);
    HostTensor b = randomTensor(dtype, {d}, rng, 0.0f, 0.2f);
    HostTensor want(dtype, shape);
    ASSERT_OK(cpu::layerNorm(cpuCtx, x.ref, w.ref, b.ref, 1e-5, want.ref));
    DeviceTensor dx(x), dw(w), db(b), dOut(want, false);
    ASSERT_OK(cuda::layerNorm(*testContext(), dx.ref, dw.ref, db.ref, 1e-5,
                              dOut.ref));
    synchronize();
    expectNear(want, dOut.toHost(), named("layer_norm", dtype), 2.0);
  }
}

TEST_P(NNCudaTest, LayerNormGrad) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(209);
  for (auto shape : {std::vector<int64_t>{4, 16, 96}, {3, 5}, {300, 40}}) {
    int64_t d = shape.back();
    HostTensor x = randomTensor(dtype, shape, rng, 0.5f, 2.0f);
    HostTensor w = randomTensor(dtype, {d}, rng, 1.0f, 0.2f);
    HostTensor g = randomTensor(dtype, shape, rng);
    HostTensor wantDx(dtype, shape), wantDw(dtype, {d}), wantDb(dtype, {d});
    ASSERT_OK(cpu::layerNormGrad(cpuCtx, x.ref, w.ref, g.ref, 1e-5, wantDx.ref,
                                 wantDw.ref, wantDb.ref));
    DeviceTensor dx(x), dw(w), dg(g);
    DeviceTensor outDx(wantDx, false), outDw(wantDw, false),
        outDb(wantDb, false);
    ASSERT_OK(cuda::layerNormGrad(*testContext(), dx.ref, dw.ref, dg.ref, 1e-5,
                                  outDx.ref, outDw.ref, outDb.ref));
    synchronize();
    expectNear(wantDx, outDx.toHost(), named("layer_norm_grad input", dtype),
               4.0);
    expectNear(wantDw, outDw.toHost(), named("layer_norm_grad weight", dtype),
               4.0);
    expectNear(wantDb, outDb.toHost(), named("layer_norm_grad bias", dtype),
               4.0);
  }
}

// A norm gradient with an addend writes what the norm gradient and a
// tg.add after it write, to the bit (the gradient rounded to its type,
// then the sum rounded): layer norm and RMS norm, the sum also over the
// addend's own buffer.
TEST_P(NNCudaTest, NormGradAddendIsAnAddAfterIt) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(211);
  std::vector<int64_t> shape = {70, 96};
  HostTensor x = randomTensor(dtype, shape, rng, 0.5f, 2.0f);
  HostTensor w = randomTensor(dtype, {96}, rng, 1.0f, 0.2f);
  HostTensor g = randomTensor(dtype, shape, rng);
  HostTensor r = randomTensor(dtype, shape, rng);
  HostTensor like(dtype, shape), param(dtype, {96});
  DeviceTensor dx(x), dw(w), dg(g), dr(r);
  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms_norm_grad" : "layer_norm_grad");
    DeviceTensor plain(like, false), sum(like, false), fused(like, false);
    DeviceTensor over(r), dW(param, false), dB(param, false);
    auto normGrad = [&](TensorRef &out, const TensorRef *addend) {
      return rms ? cuda::rmsNormGrad(*testContext(), dx.ref, dw.ref, dg.ref,
                                     1e-6, out, dW.ref, addend)
                 : cuda::layerNormGrad(*testContext(), dx.ref, dw.ref, dg.ref,
                                       1e-5, out, dW.ref, dB.ref, addend);
    };
    ASSERT_OK(normGrad(plain.ref, nullptr));
    ASSERT_OK(cuda::add(*testContext(), plain.ref, dr.ref, sum.ref));
    ASSERT_OK(normGrad(fused.ref, &dr.ref));
    // The result over the addend's buffer.
    ASSERT_OK(normGrad(over.ref, &over.ref));
    synchronize();
    HostTensor want = sum.toHost();
    expectSameBytes(want, fused.toHost(), "addend");
    expectSameBytes(want, over.toHost(), "addend in place");
  }
}

TEST_P(NNCudaTest, NormGradRoundedIsACastAfterIt) {
  TGC_REQUIRE_GPU();
  if (GetParam() != DType::F32)
    GTEST_SKIP() << "rounded_input_grad copies an f32 input gradient";
  std::mt19937 rng(227);
  std::vector<int64_t> shape = {70, 96};
  HostTensor x = randomTensor(DType::F32, shape, rng, 0.5f, 2.0f);
  HostTensor w = randomTensor(DType::F32, {96}, rng, 1.0f, 0.2f);
  HostTensor g = randomTensor(DType::BF16, shape, rng);
  HostTensor r = randomTensor(DType::F32, shape, rng);
  HostTensor like(DType::F32, shape), param(DType::F32, {96});
  DeviceTensor dx(x), dw(w), dg(g), dr(r);
  for (DType narrow : {DType::BF16, DType::F16})
    for (bool rms : {false, true})
      for (const TensorRef *addend :
           std::initializer_list<const TensorRef *>{nullptr, &dr.ref}) {
        SCOPED_TRACE(std::string(rms ? "rms_norm_grad" : "layer_norm_grad") +
                     (addend ? " plus" : ""));
        HostTensor half(narrow, shape);
        DeviceTensor out(like, false), dW(param, false), dB(param, false);
        DeviceTensor rounded(half, false), cast(half, false);
        TensorRef *out16 = &rounded.ref;
        ASSERT_OK(rms ? cuda::rmsNormGrad(*testContext(), dx.ref, dw.ref,
                                          dg.ref, 1e-6, out.ref, dW.ref,
                                          addend, out16)
                      : cuda::layerNormGrad(*testContext(), dx.ref, dw.ref,
                                            dg.ref, 1e-5, out.ref, dW.ref,
                                            dB.ref, addend, out16));
        ASSERT_OK(cuda::cast(*testContext(), out.ref, cast.ref));
        synchronize();
        expectSameBytes(cast.toHost(), rounded.toHost(), "rounded_input_grad");
      }
}

TEST_P(NNCudaTest, NormAddendIsAnAddBeforeIt) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(223);
  std::vector<int64_t> shape = {70, 96};
  HostTensor x = randomTensor(dtype, shape, rng, 0.5f, 2.0f);
  HostTensor w = randomTensor(dtype, {96}, rng, 1.0f, 0.2f);
  HostTensor b = randomTensor(dtype, {96}, rng);
  HostTensor like(dtype, shape);
  DeviceTensor dx(x), dw(w), db(b);
  // The addend in the input's type, and a bf16 one beside an f32 input.
  std::vector<DType> addendTypes = {dtype};
  if (dtype == DType::F32)
    addendTypes.push_back(DType::BF16);
  for (DType addendType : addendTypes) {
    HostTensor r = randomTensor(addendType, shape, rng);
    DeviceTensor dr(r);
    for (bool rms : {false, true}) {
      SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
      auto norm = [&](const TensorRef &in, TensorRef &out,
                      const TensorRef *addend, TensorRef *sum) {
        return rms ? cuda::rmsNorm(*testContext(), in, dw.ref, 1e-6, out,
                                   addend, sum)
                   : cuda::layerNorm(*testContext(), in, dw.ref, db.ref, 1e-5,
                                     out, addend, sum);
      };
      DeviceTensor sum(like, false), plain(like, false), fused(like, false);
      DeviceTensor fusedSum(like, false), over(x), overOut(like, false);
      ASSERT_OK(cuda::add(*testContext(), dx.ref, dr.ref, sum.ref));
      ASSERT_OK(norm(sum.ref, plain.ref, nullptr, nullptr));
      ASSERT_OK(norm(dx.ref, fused.ref, &dr.ref, &fusedSum.ref));
      // The sum over the input's buffer, as the planner may place it.
      ASSERT_OK(norm(over.ref, overOut.ref, &dr.ref, &over.ref));
      synchronize();
      HostTensor wantSum = sum.toHost(), want = plain.toHost();
      expectSameBytes(wantSum, fusedSum.toHost(), "sum");
      expectSameBytes(want, fused.toHost(), "norm of the sum");
      expectSameBytes(wantSum, over.toHost(), "sum in place");
      expectSameBytes(want, overOut.toHost(), "norm of the sum in place");
    }
  }
}

TEST_P(NNCudaTest, RmsNormAndItsGradient) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(211);
  for (auto shape : {std::vector<int64_t>{4, 16, 96}, {3, 5}, {300, 40}}) {
    int64_t d = shape.back();
    HostTensor x = randomTensor(dtype, shape, rng, 0.0f, 2.0f);
    HostTensor w = randomTensor(dtype, {d}, rng, 1.0f, 0.2f);
    HostTensor g = randomTensor(dtype, shape, rng);
    HostTensor want(dtype, shape), wantDx(dtype, shape), wantDw(dtype, {d});
    ASSERT_OK(cpu::rmsNorm(cpuCtx, x.ref, w.ref, 1e-6, want.ref));
    ASSERT_OK(cpu::rmsNormGrad(cpuCtx, x.ref, w.ref, g.ref, 1e-6, wantDx.ref,
                               wantDw.ref));
    DeviceTensor dx(x), dw(w), dg(g), dOut(want, false);
    DeviceTensor outDx(wantDx, false), outDw(wantDw, false);
    ASSERT_OK(cuda::rmsNorm(*testContext(), dx.ref, dw.ref, 1e-6, dOut.ref));
    // The input gradient into grad's own buffer, as the planner may place it.
    ASSERT_OK(cuda::rmsNormGrad(*testContext(), dx.ref, dw.ref, dg.ref, 1e-6,
                                dg.ref, outDw.ref));
    synchronize();
    expectNear(want, dOut.toHost(), named("rms_norm", dtype), 2.0);
    expectNear(wantDx, dg.toHost(), named("rms_norm_grad input", dtype), 4.0);
    expectNear(wantDw, outDw.toHost(), named("rms_norm_grad weight", dtype),
               4.0);
  }
}

TEST_P(NNCudaTest, RopeAndItsInverseInPlace) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(213);
  for (auto shape : {std::vector<int64_t>{2, 4, 33, 64}, {3, 7, 6}}) {
    int64_t half = shape.back() / 2;
    HostTensor x = randomTensor(dtype, shape, rng);
    HostTensor freq(DType::F32, {half});
    for (int64_t i = 0; i < half; ++i)
      storeF32(freq.ref, i, float(1.0 / std::pow(10000.0, double(i) / double(half))));
    HostTensor want(dtype, shape), wantBack(dtype, shape);
    ASSERT_OK(cpu::rope(cpuCtx, x.ref, freq.ref, false, want.ref));
    ASSERT_OK(cpu::rope(cpuCtx, x.ref, freq.ref, true, wantBack.ref));
    DeviceTensor dx(x), dFreq(freq), dOut(want, false), dBack(x);
    ASSERT_OK(cuda::rope(*testContext(), dx.ref, dFreq.ref, false, dOut.ref));
    ASSERT_OK(cuda::rope(*testContext(), dBack.ref, dFreq.ref, true,
                         dBack.ref));
    synchronize();
    expectNear(want, dOut.toHost(), named("rope", dtype), 2.0);
    expectNear(wantBack, dBack.toHost(), named("rope inverse in place", dtype),
               2.0);
  }
}

// Positions per row ([B, T]: packed examples restart), both layouts,
// against the CPU.
TEST_P(NNCudaTest, RopePositions) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(214);
  for (bool bshd : {false, true}) {
    std::vector<int64_t> shape = {2, 4, 33, 64};
    HostTensor positions(DType::I32, {2, bshd ? 4 : 33});
    for (int64_t i = 0; i < positions.ref.numElements(); ++i)
      storeI64(positions.ref, i, i % 7 + (i / 11));
    int64_t half = shape.back() / 2;
    HostTensor x = randomTensor(dtype, shape, rng);
    HostTensor freq(DType::F32, {half});
    for (int64_t i = 0; i < half; ++i)
      storeF32(freq.ref, i,
               float(1.0 / std::pow(10000.0, double(i) / double(half))));
    HostTensor want(dtype, shape);
    ASSERT_OK(cpu::rope(cpuCtx, x.ref, freq.ref, false, want.ref, bshd,
                        &positions.ref));
    DeviceTensor dx(x), dFreq(freq), dPositions(positions), dOut(want, false);
    ASSERT_OK(cuda::rope(*testContext(), dx.ref, dFreq.ref, false, dOut.ref,
                         bshd, &dPositions.ref));
    synchronize();
    expectNear(
        want, dOut.toHost(),
        named(bshd ? "bshd rope with positions" : "rope with positions", dtype),
        2.0);
  }
}

TEST_P(NNCudaTest, BshdRopeIsRopeOfTransposedHeads) {
  // The rope of [B, T, H, D] heads on the device: the bytes of the
  // device's rope of the [B, H, T, D] transpose (transposed on the host),
  // and near the CPU's.
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(215);
  std::vector<int64_t> bshd = {2, 33, 3, 64}, bhsd = {2, 3, 33, 64};
  const std::vector<int64_t> swap = {0, 2, 1, 3};
  HostTensor x = randomTensor(dtype, bshd, rng);
  HostTensor freq(DType::F32, {32});
  for (int64_t i = 0; i < 32; ++i)
    storeF32(freq.ref, i, float(1.0 / std::pow(10000.0, double(i) / 32.0)));
  HostTensor heads(dtype, bhsd), cpuWant(dtype, bshd);
  ASSERT_OK(cpu::transpose(cpuCtx, x.ref, swap, heads.ref));
  ASSERT_OK(cpu::rope(cpuCtx, x.ref, freq.ref, false, cpuWant.ref, true));
  DeviceTensor dx(x), dHeads(heads), dFreq(freq), dOut(x, false),
      dRotated(heads, false);
  ASSERT_OK(cuda::rope(*testContext(), dx.ref, dFreq.ref, false, dOut.ref,
                       /*bshd=*/true));
  ASSERT_OK(cuda::rope(*testContext(), dHeads.ref, dFreq.ref, false,
                       dRotated.ref));
  synchronize();
  HostTensor rotated = dRotated.toHost(), want(dtype, bshd);
  ASSERT_OK(cpu::transpose(cpuCtx, rotated.ref, swap, want.ref));
  expectSameBytes(want, dOut.toHost(), "bshd rope");
  expectNear(cpuWant, dOut.toHost(), named("bshd rope", dtype), 2.0);
}

TEST_P(NNCudaTest, LayerNormGradIntoGradBuffer) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(211);
  std::vector<int64_t> shape = {8, 64};
  HostTensor x = randomTensor(dtype, shape, rng);
  HostTensor w = randomTensor(dtype, {64}, rng, 1.0f, 0.2f);
  HostTensor g = randomTensor(dtype, shape, rng);
  HostTensor wantDx(dtype, shape), wantDw(dtype, {64}), wantDb(dtype, {64});
  ASSERT_OK(cpu::layerNormGrad(cpuCtx, x.ref, w.ref, g.ref, 1e-5, wantDx.ref,
                               wantDw.ref, wantDb.ref));
  DeviceTensor dx(x), dw(w), dg(g);
  DeviceTensor outDw(wantDw, false), outDb(wantDb, false);
  TensorRef inputGrad = dg.ref; // input_grad reuses grad's buffer
  ASSERT_OK(cuda::layerNormGrad(*testContext(), dx.ref, dw.ref, dg.ref, 1e-5,
                                inputGrad, outDw.ref, outDb.ref));
  synchronize();
  expectNear(wantDx, dg.toHost(), named("layer_norm_grad in place", dtype),
             4.0);
  expectNear(wantDw, outDw.toHost(), named("layer_norm_grad weight", dtype),
             4.0);
  expectNear(wantDb, outDb.toHost(), named("layer_norm_grad bias", dtype), 4.0);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

TEST_P(NNCudaTest, Embedding) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(213);
  for (DType indexType : {DType::I64, DType::I32}) {
    HostTensor table = randomTensor(dtype, {50, 24}, rng);
    HostTensor indices(indexType, {4, 7});
    fillInts(indices, rng, 0, 50);
    HostTensor want(dtype, {4, 7, 24});
    ASSERT_OK(cpu::embedding(cpuCtx, table.ref, indices.ref, want.ref));
    DeviceTensor dTable(table), dIndices(indices), dOut(want, false);
    ASSERT_OK(
        cuda::embedding(*testContext(), dTable.ref, dIndices.ref, dOut.ref));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    expectNear(want, dOut.toHost(), named("embedding", dtype));
    if (dtype == DType::F32)
      continue;
    // A 16-bit table's rows widened to f32, as the CPU widens them.
    HostTensor wide(DType::F32, {4, 7, 24});
    ASSERT_OK(cpu::embedding(cpuCtx, table.ref, indices.ref, wide.ref));
    DeviceTensor dWide(wide, false);
    ASSERT_OK(
        cuda::embedding(*testContext(), dTable.ref, dIndices.ref, dWide.ref));
    synchronize();
    expectSameBytes(wide, dWide.toHost(), named("embedding widened", dtype));
  }
}

TEST_P(NNCudaTest, EmbeddingIndexOutOfRange) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(215);
  HostTensor table = randomTensor(dtype, {10, 8}, rng);
  HostTensor indices(DType::I64, {3});
  storeI64(indices.ref, 0, 2);
  storeI64(indices.ref, 1, 10); // == V
  storeI64(indices.ref, 2, 5);
  HostTensor zeros(dtype, {3, 8});
  DeviceTensor dTable(table), dIndices(indices), dOut(zeros, false);
  ASSERT_OK(
      cuda::embedding(*testContext(), dTable.ref, dIndices.ref, dOut.ref));
  synchronize();
  cuda::DeviceError record;
  EXPECT_EQ(takeDeviceError(&record), kIndexOutOfRange);
  // Which index, where, and the table it missed.
  EXPECT_EQ(record.position, 1);
  EXPECT_EQ(record.value, 10);
  EXPECT_EQ(record.limit, 10);
  // Good rows are copied; the bad row is left as it was.
  HostTensor got = dOut.toHost();
  for (int64_t j = 0; j < 8; ++j) {
    EXPECT_EQ(loadF32(got.ref, j), loadF32(table.ref, 2 * 8 + j));
    EXPECT_EQ(loadF32(got.ref, 8 + j), 0.0f);
    EXPECT_EQ(loadF32(got.ref, 16 + j), loadF32(table.ref, 5 * 8 + j));
  }

  storeI64(indices.ref, 1, -1);
  DeviceTensor dNegative(indices);
  ASSERT_OK(
      cuda::embedding(*testContext(), dTable.ref, dNegative.ref, dOut.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(&record), kIndexOutOfRange);
  EXPECT_EQ(record.value, -1);
}

TEST_P(NNCudaTest, EmbeddingGrad) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(217);
  for (DType indexType : {DType::I64, DType::I32})
    for (int64_t paddingIdx : {-1, 3})
      for (bool withAddend : {false, true}) {
        // Few rows, many positions: every row is hit several times. The
        // addend (a tied classifier's gradient) is 16 bits for an f32 table.
        HostTensor indices(indexType, {4, 16});
        fillInts(indices, rng, 0, 10);
        HostTensor g = randomTensor(dtype, {4, 16, 24}, rng);
        HostTensor addend = randomTensor(
            dtype == DType::F32 ? DType::BF16 : dtype, {10, 24}, rng);
        HostTensor want(dtype, {10, 24});
        ASSERT_OK(cpu::embeddingGrad(cpuCtx, indices.ref, g.ref,
                                     withAddend ? &addend.ref : nullptr,
                                     paddingIdx, want.ref));
        HostTensor garbage = randomTensor(dtype, {10, 24}, rng);
        DeviceTensor dIndices(indices), dg(g), dAddend(addend), dOut(garbage);
        ASSERT_OK(cuda::embeddingGrad(*testContext(), dIndices.ref, dg.ref,
                                      withAddend ? &dAddend.ref : nullptr,
                                      paddingIdx, dOut.ref));
        synchronize();
        EXPECT_EQ(takeDeviceError(), 0);
        expectNear(want, dOut.toHost(), named("embedding_grad", dtype), 2.0);
      }
}

TEST_P(NNCudaTest, GatherAndItsGradient) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(219);
  using Shape = std::vector<int64_t>;
  struct Case {
    Shape input, index, result;
    int64_t axis;
  };
  // DeBERTa's shape (one [T, T] table for every head), torch.gather along
  // the first axis, and an i32 index broadcast along two dimensions.
  const Case cases[] = {{{6, 8, 16}, {8, 8}, {6, 8, 8}, 2},
                        {{4, 3}, {6, 3}, {6, 3}, 0},
                        {{2, 3, 5}, {1, 1, 7}, {2, 3, 7}, -1}};
  for (const Case &c : cases)
    for (DType indexType : {DType::I64, DType::I32}) {
      int64_t dim = c.axis < 0 ? c.axis + int64_t(c.input.size()) : c.axis;
      HostTensor x = randomTensor(dtype, c.input, rng);
      HostTensor index(indexType, c.index);
      fillInts(index, rng, 0, c.input[size_t(dim)]);
      HostTensor want(dtype, c.result);
      ASSERT_OK(cpu::gather(cpuCtx, x.ref, index.ref, c.axis, want.ref));
      DeviceTensor dx(x), dIndex(index), dOut(want, false);
      ASSERT_OK(
          cuda::gather(*testContext(), dx.ref, dIndex.ref, c.axis, dOut.ref));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      expectSameBytes(want, dOut.toHost(), named("gather", dtype));

      HostTensor g = randomTensor(dtype, c.result, rng);
      HostTensor wantGrad(dtype, c.input);
      ASSERT_OK(
          cpu::gatherGrad(cpuCtx, g.ref, index.ref, c.axis, wantGrad.ref));
      HostTensor garbage = randomTensor(dtype, c.input, rng);
      DeviceTensor dg(g), dGrad(garbage);
      ASSERT_OK(cuda::gatherGrad(*testContext(), dg.ref, dIndex.ref, c.axis,
                                 dGrad.ref));
      synchronize();
      EXPECT_EQ(takeDeviceError(), 0);
      expectNear(wantGrad, dGrad.toHost(), named("gather_grad", dtype), 2.0);
    }
  // A bad index raises the error flag, with where and what it was.
  HostTensor x = randomTensor(dtype, {2, 5}, rng);
  HostTensor index(DType::I64, {3});
  storeI64(index.ref, 0, 1);
  storeI64(index.ref, 1, 5);
  storeI64(index.ref, 2, 0);
  HostTensor out(dtype, {2, 3});
  DeviceTensor dx(x), dIndex(index), dOut(out, false);
  ASSERT_OK(cuda::gather(*testContext(), dx.ref, dIndex.ref, 1, dOut.ref));
  synchronize();
  cuda::DeviceError record;
  EXPECT_EQ(takeDeviceError(&record), kIndexOutOfRange);
  EXPECT_EQ(record.value, 5);
  EXPECT_EQ(record.limit, 5);
  DeviceTensor dGrad(x, false);
  ASSERT_OK(
      cuda::gatherGrad(*testContext(), dOut.ref, dIndex.ref, 1, dGrad.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(), kIndexOutOfRange);
}

TEST_P(NNCudaTest, EmbeddingGradIndexOutOfRange) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(219);
  HostTensor indices(DType::I32, {4});
  fillInts(indices, rng, 0, 6);
  storeI64(indices.ref, 3, 6);
  HostTensor g = randomTensor(dtype, {4, 8}, rng);
  HostTensor out(dtype, {6, 8});
  DeviceTensor dIndices(indices), dg(g), dOut(out, false);
  ASSERT_OK(cuda::embeddingGrad(*testContext(), dIndices.ref, dg.ref, nullptr,
                                -1, dOut.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(), kIndexOutOfRange);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {

struct AttentionCase {
  std::vector<int64_t> query, key, value;
  bool causal;
  std::optional<double> scale;
};

std::string describe(const AttentionCase &c, DType dtype) {
  std::string text = named("attention", dtype) + " q[";
  for (size_t i = 0; i < c.query.size(); ++i)
    text += (i ? "," : "") + std::to_string(c.query[i]);
  text += "] tk " + std::to_string(c.key[c.key.size() - 2]) + " dv " +
          std::to_string(c.value.back());
  if (c.causal)
    text += " causal";
  if (c.scale)
    text += " scale " + std::to_string(*c.scale);
  return text;
}

std::vector<int64_t> attentionResultShape(const AttentionCase &c) {
  std::vector<int64_t> shape = c.query;
  shape.back() = c.value.back();
  return shape;
}

const AttentionCase kAttentionCases[] = {
    {{2, 3, 8, 16}, {2, 3, 8, 16}, {2, 3, 8, 16}, true, std::nullopt},
    {{2, 3, 8, 16}, {2, 3, 8, 16}, {2, 3, 8, 12}, false, std::nullopt},
    {{2, 3, 5, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}, false, 0.3}, // Tq < Tk
    {{2, 9, 16}, {2, 4, 16}, {2, 4, 8}, false, std::nullopt}, // Tq > Tk
    {{6, 8}, {6, 8}, {6, 4}, true, 0.5},                      // no batch
    {{1, 1, 1, 4}, {1, 1, 1, 4}, {1, 1, 1, 4}, true, std::nullopt},
    // One GPT-2 layer's heads (scaled down in batch).
    {{2, 12, 64, 64}, {2, 12, 64, 64}, {2, 12, 64, 64}, true, std::nullopt},
    // 16-bit heads of a multiple of 16 run the fused kernels: lengths that
    // leave partial 32-row tiles, causal over several tiles, Tq != Tk.
    {{2, 2, 70, 32}, {2, 2, 70, 32}, {2, 2, 70, 32}, true, std::nullopt},
    {{1, 3, 33, 48}, {1, 3, 45, 48}, {1, 3, 45, 48}, false, 0.2},
    {{3, 100, 16}, {3, 100, 16}, {3, 100, 16}, true, std::nullopt},
    {{2, 40, 64}, {2, 7, 64}, {2, 7, 64}, false, std::nullopt},
    // Grouped-query attention (16-bit: the fused kernels, each query head
    // reading its group's key/value head; f32: the GEMM path): 3 query
    // heads per key/value head, one key/value head for 4 query heads of 32
    // over partial tiles, and 2 for 6 of 64, Tq != Tk.
    {{2, 6, 8, 16}, {2, 2, 8, 16}, {2, 2, 8, 16}, true, std::nullopt},
    {{1, 4, 70, 32}, {1, 1, 70, 32}, {1, 1, 70, 32}, true, std::nullopt},
    {{1, 6, 33, 64}, {1, 2, 45, 64}, {1, 2, 45, 64}, false, 0.2},
};

} // namespace

TEST_P(NNCudaTest, Attention) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(221);
  for (const AttentionCase &c : kAttentionCases) {
    SCOPED_TRACE(describe(c, dtype));
    HostTensor q = randomTensor(dtype, c.query, rng);
    HostTensor k = randomTensor(dtype, c.key, rng);
    HostTensor v = randomTensor(dtype, c.value, rng);
    HostTensor want(dtype, attentionResultShape(c));
    ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, c.causal, c.scale, want.ref));
    DeviceTensor dq(q), dk(k), dv(v), dOut(want, false);
    ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref, nullptr, c.causal,
                              c.scale, dOut.ref));
    synchronize();
    expectNear(want, dOut.toHost(), describe(c, dtype), 4.0);
  }
}

// The fused kernel called directly (16-bit heads only): its output against
// the CPU kernel and its row log-sum-exp against one computed here in f64
// from the same 16-bit inputs, over partial tiles, causal and not.
TEST_P(NNCudaTest, FusedAttentionOutputAndLogSumExp) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  if (dtype == DType::F32)
    GTEST_SKIP() << "the fused kernels take 16-bit heads";
  std::mt19937 rng(229);
  struct Case {
    int64_t heads, tq, tk, d;
    bool causal;
    float scale;
  } cases[] = {{3, 37, 37, 32, true, 0.25f}, {2, 20, 50, 16, false, 0.5f},
               {1, 64, 64, 64, true, 0.125f}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.tq) + "x" + std::to_string(c.tk) + " d=" +
                 std::to_string(c.d) + (c.causal ? " causal" : ""));
    HostTensor q = randomTensor(dtype, {c.heads, c.tq, c.d}, rng);
    HostTensor k = randomTensor(dtype, {c.heads, c.tk, c.d}, rng);
    HostTensor v = randomTensor(dtype, {c.heads, c.tk, c.d}, rng);
    HostTensor want(dtype, {c.heads, c.tq, c.d});
    ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, c.causal, c.scale, want.ref));
    HostTensor lse(DType::F32, {c.heads, c.tq});
    DeviceTensor dq(q), dk(k), dv(v), dOut(want, false), dLse(lse, false);
    ASSERT_OK(cuda::fusedAttention(*testContext(), dtype, dq.ref.data,
                                   dk.ref.data, dv.ref.data, c.heads, c.tq,
                                   c.tk, c.d, c.scale, c.causal, cuda::KeyMask(), /*rowHeads=*/1, /*group=*/1, dOut.ref.data,
                                   static_cast<float *>(dLse.ref.data)));
    synchronize();
    expectNear(want, dOut.toHost(), "fused attention", 4.0);
    HostTensor got = dLse.toHost();
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.tq; ++i) {
        int64_t visible = c.causal ? i + 1 : c.tk;
        double max = -INFINITY;
        std::vector<double> s(visible);
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < c.d; ++x)
            dot += double(loadF32(q.ref, (h * c.tq + i) * c.d + x)) *
                   loadF32(k.ref, (h * c.tk + j) * c.d + x);
          s[j] = dot * c.scale;
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (double value : s)
          sum += std::exp(value - max);
        double expected = max + std::log(sum);
        EXPECT_NEAR(loadF32(got.ref, h * c.tq + i), expected,
                    1e-4 * (1 + std::fabs(expected)))
            << "head " << h << " row " << i;
      }
  }
}

TEST_P(NNCudaTest, AttentionIntoQueryBuffer) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(223);
  std::vector<int64_t> shape = {2, 2, 10, 16};
  HostTensor q = randomTensor(dtype, shape, rng);
  HostTensor k = randomTensor(dtype, shape, rng);
  HostTensor v = randomTensor(dtype, shape, rng);
  HostTensor want(dtype, shape);
  ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, true, std::nullopt, want.ref));
  DeviceTensor dq(q), dk(k), dv(v);
  TensorRef out = dq.ref; // the result reuses query's buffer
  ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref, nullptr, true,
                            std::nullopt, out));
  synchronize();
  expectNear(want, dq.toHost(), named("attention into query", dtype), 4.0);
}

TEST_P(NNCudaTest, AttentionGrad) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(225);
  for (const AttentionCase &c : kAttentionCases) {
    SCOPED_TRACE(describe(c, dtype));
    HostTensor q = randomTensor(dtype, c.query, rng);
    HostTensor k = randomTensor(dtype, c.key, rng);
    HostTensor v = randomTensor(dtype, c.value, rng);
    HostTensor o(dtype, attentionResultShape(c));
    ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, c.causal, c.scale, o.ref));
    HostTensor g = randomTensor(dtype, attentionResultShape(c), rng);
    HostTensor wantDq(dtype, c.query), wantDk(dtype, c.key),
        wantDv(dtype, c.value);
    ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref, g.ref, nullptr, c.causal,
                                 c.scale, wantDq.ref, wantDk.ref, wantDv.ref));
    DeviceTensor dq(q), dk(k), dv(v), dO(o), dg(g);
    DeviceTensor outDq(wantDq, false), outDk(wantDk, false),
        outDv(wantDv, false);
    ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                  dO.ref, dg.ref, nullptr, c.causal, c.scale, outDq.ref,
                                  outDk.ref, outDv.ref));
    synchronize();
    expectNear(wantDq, outDq.toHost(), describe(c, dtype) + " query_grad", 8.0);
    expectNear(wantDk, outDk.toHost(), describe(c, dtype) + " key_grad", 8.0);
    expectNear(wantDv, outDv.toHost(), describe(c, dtype) + " value_grad", 8.0);
  }
}

// Gemma 2's soft-capped scores: the GEMM path for every type (a 16-bit
// head of 16 would otherwise take the fused kernels), with a padding mask,
// grouped-query heads and the bshd layout, forward and backward against
// the CPU kernels.
TEST_P(NNCudaTest, AttentionSoftcap) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(227);
  const int64_t B = 2, H = 4, KV = 2, T = 24, D = 16;
  HostTensor mask(DType::I64, {B, T});
  for (int64_t i = 0; i < B * T; ++i)
    storeI64(mask.ref, i, i % T < T - 5 * (i / T) ? 1 : 0);
  for (bool bshd : {false, true})
    for (bool causal : {false, true}) {
      std::string what = std::string("softcap") + (bshd ? " bshd" : "") +
                         (causal ? " causal" : "");
      std::vector<int64_t> qShape = {B, H, T, D}, kShape = {B, KV, T, D};
      if (bshd) {
        std::swap(qShape[1], qShape[2]);
        std::swap(kShape[1], kShape[2]);
      }
      HostTensor q = randomTensor(dtype, qShape, rng, -2.0f, 2.0f);
      HostTensor k = randomTensor(dtype, kShape, rng, -2.0f, 2.0f);
      HostTensor v = randomTensor(dtype, kShape, rng);
      HostTensor want(dtype, qShape);
      ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, &mask.ref, causal,
                               0, 1.0, want.ref, bshd, nullptr, false, 3.0));
      DeviceTensor dq(q), dk(k), dv(v), dMask(mask), out(want, false);
      ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                &dMask.ref, causal, 0, 1.0, out.ref, bshd,
                                nullptr, false, 3.0));
      synchronize();
      expectNear(want, out.toHost(), named(what.c_str(), dtype), 4.0);

      HostTensor g = randomTensor(dtype, qShape, rng);
      HostTensor wantDq(dtype, qShape), wantDk(dtype, kShape),
          wantDv(dtype, kShape);
      ASSERT_OK(cpu::attentionGrad(
          cpuCtx, q.ref, k.ref, v.ref, want.ref, g.ref, &mask.ref, causal, 0,
          1.0, wantDq.ref, wantDk.ref, wantDv.ref, bshd, nullptr, false, 3.0));
      DeviceTensor dO(want), dg(g), outDq(wantDq, false), outDk(wantDk, false),
          outDv(wantDv, false);
      ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                    dO.ref, dg.ref, &dMask.ref, causal, 0, 1.0,
                                    outDq.ref, outDk.ref, outDv.ref, bshd,
                                    nullptr, false, 3.0));
      synchronize();
      expectNear(wantDq, outDq.toHost(), what + " query_grad", 8.0);
      expectNear(wantDk, outDk.toHost(), what + " key_grad", 8.0);
      expectNear(wantDv, outDv.toHost(), what + " value_grad", 8.0);
    }
}

// A [B, T] key padding mask over [B, H, T, D] heads: the fused kernels
// (16-bit heads of 32, partial tiles) and the GEMM path (heads of 8), causal
// and not, with an example that is all padding, forward and backward
// against the CPU kernels.
TEST_P(NNCudaTest, AttentionKeyMask) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(233);
  for (int64_t d : {32, 8})
    for (bool causal : {false, true})
    for (int64_t kvHeads : {2, 1}) {
      SCOPED_TRACE("d=" + std::to_string(d) + (causal ? " causal" : "") +
                   " kv heads " + std::to_string(kvHeads));
      std::vector<int64_t> shape = {3, 2, 70, d}, kvShape = {3, kvHeads, 70, d};
      HostTensor q = randomTensor(dtype, shape, rng);
      HostTensor k = randomTensor(dtype, kvShape, rng);
      HostTensor v = randomTensor(dtype, kvShape, rng);
      HostTensor g = randomTensor(dtype, shape, rng);
      // Lengths 70, 33 and 0.
      HostTensor mask(DType::I64, {3, 70});
      auto *m = static_cast<int64_t *>(mask.ref.data);
      for (int64_t j = 0; j < 70; ++j) {
        m[j] = 1;
        m[70 + j] = j < 33;
        m[140 + j] = 0;
      }
      HostTensor o(dtype, shape), wantDq(dtype, shape), wantDk(dtype, kvShape),
          wantDv(dtype, kvShape);
      ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, &mask.ref, causal,
                               std::nullopt, o.ref));
      ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref, g.ref,
                                   &mask.ref, causal, std::nullopt,
                                   wantDq.ref, wantDk.ref, wantDv.ref));
      DeviceTensor dq(q), dk(k), dv(v), dg(g), dMask(mask), dOut(o, false);
      ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                &dMask.ref, causal, std::nullopt, dOut.ref));
      DeviceTensor dO(o), outDq(wantDq, false), outDk(wantDk, false),
          outDv(wantDv, false);
      ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                    dO.ref, dg.ref, &dMask.ref, causal,
                                    std::nullopt, outDq.ref, outDk.ref,
                                    outDv.ref));
      synchronize();
      expectNear(o, dOut.toHost(), "masked attention", 4.0);
      expectNear(wantDq, outDq.toHost(), "masked query_grad", 8.0);
      expectNear(wantDk, outDk.toHost(), "masked key_grad", 8.0);
      expectNear(wantDv, outDv.toHost(), "masked value_grad", 8.0);
    }
}

// Mistral's sliding window on both paths (d=32 in 16 bits with one key/
// value head per query head: the fused kernels; otherwise the GEMMs), with
// and without a padding mask, against the CPU. At T=200 the fused kernels
// skip the 64-key tiles a window leaves out (forward: keys before the
// query tile's first row's window; backward: queries past the key tile's
// last key's window), and a skipped tile must change nothing.
TEST_P(NNCudaTest, AttentionSlidingWindow) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(239);
  for (int64_t d : {32, 8})
    for (auto [window, t] : {std::pair<int64_t, int64_t>{5, 70}, {40, 70},
                             {5, 200}, {40, 200}})
      for (int64_t kvHeads : {2, 1})
        for (bool masked : {false, true}) {
          SCOPED_TRACE("d=" + std::to_string(d) + " window " +
                       std::to_string(window) + " T=" + std::to_string(t) +
                       " kv heads " +
                       std::to_string(kvHeads) + (masked ? " masked" : ""));
          std::vector<int64_t> shape = {2, 2, t, d},
                               kvShape = {2, kvHeads, t, d};
          HostTensor q = randomTensor(dtype, shape, rng);
          HostTensor k = randomTensor(dtype, kvShape, rng);
          HostTensor v = randomTensor(dtype, kvShape, rng);
          HostTensor g = randomTensor(dtype, shape, rng);
          HostTensor mask(DType::I64, {2, t});
          auto *m = static_cast<int64_t *>(mask.ref.data);
          for (int64_t j = 0; j < t; ++j) {
            m[j] = 1;
            m[t + j] = j < 33;
          }
          HostTensor o(dtype, shape), wantDq(dtype, shape),
              wantDk(dtype, kvShape), wantDv(dtype, kvShape);
          const TensorRef *hostMask = masked ? &mask.ref : nullptr;
          ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, hostMask,
                                   true, window, std::nullopt, o.ref));
          ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref,
                                       g.ref, hostMask, true, window,
                                       std::nullopt, wantDq.ref, wantDk.ref,
                                       wantDv.ref));
          DeviceTensor dq(q), dk(k), dv(v), dg(g), dMask(mask),
              dOut(o, false);
          const TensorRef *deviceMask = masked ? &dMask.ref : nullptr;
          ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                    deviceMask, true, window, std::nullopt,
                                    dOut.ref));
          DeviceTensor dO(o), outDq(wantDq, false), outDk(wantDk, false),
              outDv(wantDv, false);
          ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref,
                                        dv.ref, dO.ref, dg.ref, deviceMask,
                                        true, window, std::nullopt, outDq.ref,
                                        outDk.ref, outDv.ref));
          synchronize();
          expectNear(o, dOut.toHost(), "windowed attention", 4.0);
          expectNear(wantDq, outDq.toHost(), "windowed query_grad", 8.0);
          expectNear(wantDk, outDk.toHost(), "windowed key_grad", 8.0);
          expectNear(wantDv, outDv.toHost(), "windowed value_grad", 8.0);
        }
}

// Segment ids (packed examples) on both paths (d=32 in 16 bits: the fused
// kernels; d=8: the GEMMs), causal or not, with grouped-query heads,
// against the CPU. At T=200 the fused kernels skip the 64-key tiles whose
// segments the queries' do not meet (forward and backward), and the
// second row ends in padding (id 0).
TEST_P(NNCudaTest, AttentionSegments) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(241);
  const int64_t t = 200;
  HostTensor ids(DType::I64, {2, t});
  auto *m = static_cast<int64_t *>(ids.ref.data);
  for (int64_t j = 0; j < t; ++j) {
    m[j] = j < 50 ? 1 : j < 120 ? 2 : j < 137 ? 3 : 4;
    m[t + j] = j < 9 ? 1 : j < 100 ? 2 : j < 130 ? 3 : 0;
  }
  for (int64_t d : {32, 8})
    for (bool causal : {false, true})
      for (int64_t kvHeads : {2, 1}) {
        SCOPED_TRACE("d=" + std::to_string(d) + (causal ? " causal" : "") +
                     " kv heads " + std::to_string(kvHeads));
        std::vector<int64_t> shape = {2, 2, t, d}, kvShape = {2, kvHeads, t, d};
        HostTensor q = randomTensor(dtype, shape, rng);
        HostTensor k = randomTensor(dtype, kvShape, rng);
        HostTensor v = randomTensor(dtype, kvShape, rng);
        HostTensor g = randomTensor(dtype, shape, rng);
        HostTensor o(dtype, shape), wantDq(dtype, shape),
            wantDk(dtype, kvShape), wantDv(dtype, kvShape);
        ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, &ids.ref, causal,
                                 0, std::nullopt, o.ref, false, nullptr, false,
                                 0.0, /*segments=*/true));
        ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref, g.ref,
                                     &ids.ref, causal, 0, std::nullopt,
                                     wantDq.ref, wantDk.ref, wantDv.ref, false,
                                     nullptr, false, 0.0, /*segments=*/true));
        DeviceTensor dq(q), dk(k), dv(v), dg(g), dIds(ids), dOut(o, false);
        ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                  &dIds.ref, causal, 0, std::nullopt, dOut.ref,
                                  false, nullptr, false, 0.0,
                                  /*segments=*/true));
        DeviceTensor dO(o), outDq(wantDq, false), outDk(wantDk, false),
            outDv(wantDv, false);
        ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                      dO.ref, dg.ref, &dIds.ref, causal, 0,
                                      std::nullopt, outDq.ref, outDk.ref,
                                      outDv.ref, false, nullptr, false, 0.0,
                                      /*segments=*/true));
        synchronize();
        expectNear(o, dOut.toHost(), "segmented attention", 4.0);
        expectNear(wantDq, outDq.toHost(), "segmented query_grad", 8.0);
        expectNear(wantDk, outDk.toHost(), "segmented key_grad", 8.0);
        expectNear(wantDv, outDv.toHost(), "segmented value_grad", 8.0);
      }
}

TEST_P(NNCudaTest, AttentionGradIntoOperandBuffers) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(227);
  std::vector<int64_t> shape = {2, 2, 12, 16};
  HostTensor q = randomTensor(dtype, shape, rng);
  HostTensor k = randomTensor(dtype, shape, rng);
  HostTensor v = randomTensor(dtype, shape, rng);
  HostTensor o(dtype, shape);
  ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, true, std::nullopt, o.ref));
  HostTensor g = randomTensor(dtype, shape, rng);
  HostTensor wantDq(dtype, shape), wantDk(dtype, shape), wantDv(dtype, shape);
  ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref, g.ref, nullptr, true,
                               std::nullopt, wantDq.ref, wantDk.ref,
                               wantDv.ref));
  DeviceTensor dq(q), dk(k), dv(v), dO(o), dg(g);
  // query_grad over grad, key_grad over output, value_grad over query.
  TensorRef queryGrad = dg.ref, keyGrad = dO.ref, valueGrad = dq.ref;
  ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref, dO.ref,
                                dg.ref, nullptr, true, std::nullopt, queryGrad, keyGrad,
                                valueGrad));
  synchronize();
  expectNear(wantDq, dg.toHost(), named("query_grad over grad", dtype), 8.0);
  expectNear(wantDk, dO.toHost(), named("key_grad over output", dtype), 8.0);
  expectNear(wantDv, dq.toHost(), named("value_grad over query", dtype), 8.0);
}

/// With an output mask (results absent), the CUDA fused gradient kernels
/// compute the present results as the CPU's full kernels do.
TEST_P(NNCudaTest, MaskedGradientResults) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(231);
  std::vector<int64_t> shape = {2, 2, 12, 16}, rows = {24, 16};
  HostTensor x = randomTensor(dtype, rows, rng, 0.5f, 2.0f);
  HostTensor w = randomTensor(dtype, {16}, rng, 1.0f, 0.2f);
  HostTensor g = randomTensor(dtype, rows, rng);
  HostTensor wantLn[3] = {HostTensor(dtype, rows), HostTensor(dtype, {16}),
                          HostTensor(dtype, {16})};
  ASSERT_OK(cpu::layerNormGrad(cpuCtx, x.ref, w.ref, g.ref, 1e-5, wantLn[0].ref,
                               wantLn[1].ref, wantLn[2].ref));
  HostTensor q = randomTensor(dtype, shape, rng);
  HostTensor k = randomTensor(dtype, shape, rng);
  HostTensor v = randomTensor(dtype, shape, rng);
  HostTensor o(dtype, shape);
  ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, nullptr, true, std::nullopt, o.ref));
  HostTensor cot = randomTensor(dtype, shape, rng);
  HostTensor wantAt[3] = {HostTensor(dtype, shape), HostTensor(dtype, shape),
                          HostTensor(dtype, shape)};
  ASSERT_OK(cpu::attentionGrad(cpuCtx, q.ref, k.ref, v.ref, o.ref, cot.ref, nullptr, true,
                               std::nullopt, wantAt[0].ref, wantAt[1].ref,
                               wantAt[2].ref));
  DeviceTensor dx(x), dw(w), dg(g), dq(q), dk(k), dv(v), dO(o), dc(cot);
  for (int mask = 1; mask < 8; ++mask) {
    SCOPED_TRACE("mask " + std::to_string(mask) + " " + named("", dtype));
    DeviceTensor ln0(wantLn[0], false), ln1(wantLn[1], false),
        ln2(wantLn[2], false);
    DeviceTensor at0(wantAt[0], false), at1(wantAt[1], false),
        at2(wantAt[2], false);
    DeviceTensor *lnOut[3] = {&ln0, &ln1, &ln2}, *atOut[3] = {&at0, &at1, &at2};
    TensorRef lnRefs[3], atRefs[3]; // absent unless in the mask
    for (int i = 0; i < 3; ++i)
      if (mask & (1 << i)) {
        lnRefs[i] = lnOut[i]->ref;
        atRefs[i] = atOut[i]->ref;
      }
    ASSERT_OK(cuda::layerNormGrad(*testContext(), dx.ref, dw.ref, dg.ref, 1e-5,
                                  lnRefs[0], lnRefs[1], lnRefs[2]));
    ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                  dO.ref, dc.ref, nullptr, true, std::nullopt,
                                  atRefs[0], atRefs[1], atRefs[2]));
    synchronize();
    for (int i = 0; i < 3; ++i) {
      if (!(mask & (1 << i)))
        continue;
      expectNear(wantLn[i], lnOut[i]->toHost(),
                 named("masked layer_norm_grad", dtype), 4.0);
      expectNear(wantAt[i], atOut[i]->toHost(),
                 named("masked attention_grad", dtype), 8.0);
    }
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST_P(NNCudaTest, CrossEntropyWithIgnoredTargets) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(229);
  for (DType indexType : {DType::I64, DType::I32}) {
    HostTensor logits = randomTensor(dtype, {4, 8, 50}, rng, 0.0f, 2.0f);
    HostTensor targets(indexType, {4, 8});
    fillInts(targets, rng, 0, 50);
    for (int64_t i = 0; i < 32; i += 5)
      storeI64(targets.ref, i, -100);
    HostTensor want(DType::F32, {});
    ASSERT_OK(cpu::crossEntropy(cpuCtx, logits.ref, targets.ref, -100, want.ref));
    DeviceTensor dLogits(logits), dTargets(targets), dOut(want, false);
    ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                 -100, dOut.ref));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    expectNear(want, dOut.toHost(), named("cross_entropy", dtype), 2.0);

    // The same loss stored in the logits' type.
    HostTensor want16(dtype, {});
    ASSERT_OK(cpu::crossEntropy(cpuCtx, logits.ref, targets.ref, -100, want16.ref));
    DeviceTensor dOut16(want16, false);
    ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                 -100, dOut16.ref));
    synchronize();
    expectNear(want16, dOut16.toHost(), named("cross_entropy stored", dtype),
               2.0);
  }
}

TEST_P(NNCudaTest, CrossEntropyAllIgnoredIsZero) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(231);
  HostTensor logits = randomTensor(dtype, {6, 10}, rng);
  HostTensor targets(DType::I64, {6});
  for (int64_t i = 0; i < 6; ++i)
    storeI64(targets.ref, i, 7); // the ignore index used below
  HostTensor one(DType::F32, {});
  storeF32(one.ref, 0, 1.0f);
  DeviceTensor dLogits(logits), dTargets(targets), dLoss(one), dGrad(one);
  ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref, 7,
                               dLoss.ref));
  HostTensor garbage = randomTensor(dtype, {6, 10}, rng);
  DeviceTensor dResult(garbage);
  ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref, dTargets.ref,
                                   dGrad.ref, 7, dResult.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(), 0);
  EXPECT_EQ(loadF32(dLoss.toHost().ref, 0), 0.0f);
  HostTensor result = dResult.toHost();
  for (int64_t i = 0; i < 60; ++i)
    EXPECT_EQ(loadF32(result.ref, i), 0.0f) << "at " << i;
}

TEST_P(NNCudaTest, TargetCount) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(241);
  // More targets than one block has threads, i32 and i64.
  for (DType index : {DType::I64, DType::I32}) {
    HostTensor targets(index, {3, 1001});
    fillInts(targets, rng, -3, 5);
    for (int64_t ignore : {-100, -1, 2}) {
      HostTensor want(dtype, {});
      ASSERT_OK(cpu::targetCount(cpuCtx, targets.ref, ignore, want.ref));
      DeviceTensor dTargets(targets), dOut(want, false);
      ASSERT_OK(
          cuda::targetCount(*testContext(), dTargets.ref, ignore, dOut.ref));
      synchronize();
      EXPECT_EQ(loadF32(dOut.toHost().ref, 0), loadF32(want.ref, 0))
          << "ignore_index " << ignore;
    }
  }
}

TEST_P(NNCudaTest, CrossEntropyGrad) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(233);
  for (int64_t classes : {50, 3000}) {
    HostTensor logits = randomTensor(dtype, {3, 7, classes}, rng, 0.0f, 2.0f);
    HostTensor targets(DType::I64, {3, 7});
    fillInts(targets, rng, 0, classes);
    storeI64(targets.ref, 4, -100);
    storeI64(targets.ref, 11, -100);
    HostTensor grad(DType::F32, {});
    storeF32(grad.ref, 0, 1.7f);
    HostTensor want(dtype, {3, 7, classes});
    ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits.ref, targets.ref, grad.ref, -100,
                                    want.ref));
    DeviceTensor dLogits(logits), dTargets(targets), dGrad(grad),
        dOut(want, false);
    ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref, dTargets.ref,
                                     dGrad.ref, -100, dOut.ref));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    expectNear(want, dOut.toHost(), named("cross_entropy_grad", dtype), 2.0);

    // The gradient reusing the logits' buffer: the same bytes.
    TensorRef inPlace = dLogits.ref;
    ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref, dTargets.ref,
                                     dGrad.ref, -100, inPlace));
    synchronize();
    expectSameBytes(dOut.toHost(), dLogits.toHost(),
                    named("cross_entropy_grad in place", dtype));
  }
}

// Gemma 2's final-logit soft-cap, the loss and its gradient (alone and
// fused with the loss) against the CPU kernels.
TEST_P(NNCudaTest, CrossEntropySoftcap) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(237);
  for (int64_t classes : {50, 3000}) {
    HostTensor logits =
        randomTensor(dtype, {3, 7, classes}, rng, -40.0f, 40.0f);
    HostTensor targets(DType::I64, {3, 7});
    fillInts(targets, rng, 0, classes);
    storeI64(targets.ref, 4, -100);
    HostTensor seed(DType::F32, {});
    storeF32(seed.ref, 0, 1.7f);
    HostTensor wantLoss(DType::F32, {}), want(dtype, {3, 7, classes});
    ASSERT_OK(cpu::crossEntropy(cpuCtx, logits.ref, targets.ref, -100,
                                wantLoss.ref, nullptr, nullptr, 30.0));
    ASSERT_OK(cpu::crossEntropyGrad(cpuCtx, logits.ref, targets.ref, seed.ref,
                                    -100, want.ref, 30.0));
    DeviceTensor dLogits(logits), dTargets(targets), dSeed(seed),
        dLoss(wantLoss, false), dOut(want, false), dFusedLoss(wantLoss, false),
        dFused(want, false);
    ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                 -100, dLoss.ref, nullptr, nullptr, 30.0));
    ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref, dTargets.ref,
                                     dSeed.ref, -100, dOut.ref, 30.0));
    ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                 -100, dFusedLoss.ref, &dSeed.ref, &dFused.ref,
                                 30.0));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    expectNear(wantLoss, dLoss.toHost(), named("softcap loss", dtype), 2.0);
    expectNear(wantLoss, dFusedLoss.toHost(), named("softcap loss", dtype),
               2.0);
    expectNear(want, dOut.toHost(), named("softcap grad", dtype), 2.0);
    expectSameBytes(dOut.toHost(), dFused.toHost(),
                    named("softcap grad fused", dtype));
  }
}

/// The loss with its gradient (tg-fuse-loss) writes the bits of
/// crossEntropy and crossEntropyGrad, into its own buffer and over the
/// logits, with ignored rows, rows longer than a block, i32 targets and
/// every row ignored.
TEST_P(NNCudaTest, CrossEntropyWithGradIsBothKernels) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(235);
  for (int64_t classes : {50, 3000}) {
    for (DType indexType : {DType::I64, DType::I32}) {
      for (bool allIgnored : {false, true}) {
        std::string what = named("cross_entropy with grad", dtype) + " " +
                           std::to_string(classes) + " classes " +
                           dtypeName(indexType) +
                           (allIgnored ? " all ignored" : "");
        HostTensor logits =
            randomTensor(dtype, {3, 5, classes}, rng, 0.0f, 2.0f);
        HostTensor targets(indexType, {3, 5});
        fillInts(targets, rng, 0, classes);
        for (int64_t i = 0; i < 15; ++i)
          if (allIgnored || i % 4 == 1)
            storeI64(targets.ref, i, -100);
        HostTensor seed(DType::F32, {});
        storeF32(seed.ref, 0, 1.7f);
        HostTensor loss(DType::F32, {}), grad(dtype, {3, 5, classes});
        DeviceTensor dLogits(logits), dTargets(targets), dSeed(seed),
            wantLoss(loss, false), wantGrad(grad, false);
        ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                     -100, wantLoss.ref));
        ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref,
                                         dTargets.ref, dSeed.ref, -100,
                                         wantGrad.ref));
        DeviceTensor dLoss(loss, false), dGrad(grad, false);
        ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                     -100, dLoss.ref, &dSeed.ref, &dGrad.ref));
        synchronize();
        EXPECT_EQ(takeDeviceError(), 0) << what;
        expectSameBytes(wantLoss.toHost(), dLoss.toHost(), what + " loss");
        expectSameBytes(wantGrad.toHost(), dGrad.toHost(), what + " grad");

        // The gradient written over the logits.
        DeviceTensor dInPlaceLoss(loss, false);
        TensorRef inPlace = dLogits.ref;
        ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref,
                                     -100, dInPlaceLoss.ref, &dSeed.ref,
                                     &inPlace));
        synchronize();
        expectSameBytes(wantLoss.toHost(), dInPlaceLoss.toHost(),
                        what + " in place loss");
        expectSameBytes(wantGrad.toHost(), dLogits.toHost(),
                        what + " in place grad");
      }
    }
  }
}

/// The logits' gradient over the logits with i32 and i64 targets, ignored
/// rows, rows longer than a block, and every row ignored.
TEST_P(NNCudaTest, CrossEntropyGradInPlace) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(234);
  HostTensor grad(DType::F32, {});
  storeF32(grad.ref, 0, 0.9f);
  for (DType indexType : {DType::I32, DType::I64})
    for (int64_t classes : {10, 700}) {
      HostTensor logits = randomTensor(dtype, {5, classes}, rng, 0.0f, 2.0f);
      HostTensor targets(indexType, {5});
      fillInts(targets, rng, 0, classes);
      storeI64(targets.ref, 1, -100);
      storeI64(targets.ref, 4, -100);
      auto cpuKernel = [](const std::vector<TensorRef> &in, TensorRef &out) {
        return cpu::crossEntropyGrad(cpuCtx, in[0], in[1], in[2], -100, out);
      };
      auto launcher = [](cuda::Context &ctx, const std::vector<TensorRef> &in,
                         TensorRef &out) {
        return cuda::crossEntropyGrad(ctx, in[0], in[1], in[2], -100, out);
      };
      std::string what = named("cross_entropy_grad", dtype) + " " +
                         dtypeName(indexType) + " targets, " +
                         std::to_string(classes) + " classes";
      expectInPlaceMatches({&logits, &targets, &grad}, 0, cpuKernel, launcher,
                           what, 2.0);
      for (int64_t i = 0; i < 5; ++i)
        storeI64(targets.ref, i, -100);
      expectInPlaceMatches({&logits, &targets, &grad}, 0, cpuKernel, launcher,
                           what + ", all ignored");
    }
}

TEST_P(NNCudaTest, CrossEntropyTargetOutOfRange) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(235);
  HostTensor logits = randomTensor(dtype, {4, 10}, rng);
  HostTensor targets(DType::I32, {4});
  fillInts(targets, rng, 0, 10);
  storeI64(targets.ref, 2, 10); // == C and not the ignore index
  HostTensor scalar(DType::F32, {});
  storeF32(scalar.ref, 0, 1.0f);
  DeviceTensor dLogits(logits), dTargets(targets), dLoss(scalar, false),
      dGrad(scalar), dResult(logits, false);
  ASSERT_OK(cuda::crossEntropy(*testContext(), dLogits.ref, dTargets.ref, -100,
                               dLoss.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(), kIndexOutOfRange);
  ASSERT_OK(cuda::crossEntropyGrad(*testContext(), dLogits.ref, dTargets.ref,
                                   dGrad.ref, -100, dResult.ref));
  synchronize();
  EXPECT_EQ(takeDeviceError(), kIndexOutOfRange);
}

namespace {
/// `t` ([B, H, T, D] or [B, T, H, D]) with its dimensions 1 and 2 swapped,
/// by the CPU kernel.
HostTensor swapHeads(const HostTensor &t) {
  std::vector<int64_t> shape = t.ref.shape;
  std::swap(shape[1], shape[2]);
  HostTensor swapped(t.ref.dtype, shape);
  EXPECT_TRUE(ok(cpu::transpose(cpuCtx, t.ref, {0, 2, 1, 3}, swapped.ref)));
  return swapped;
}
} // namespace

// The bshd layout ([B, T, H, D] heads) on the device: the fused kernels
// reading and writing the heads in place (16-bit heads of 32, partial
// tiles, a key mask and a window, grouped-query heads) and the GEMM path on
// head-major copies (f32) compute the bytes of head-major attention
// over the transposed tensors; the fused query gradient, summed by atomic
// adds in an order the hardware picks, within rounding.
TEST_P(NNCudaTest, BshdAttentionIsAttentionOfTransposedHeads) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(241);
  HostTensor mask(DType::I64, {2, 70});
  auto *m = static_cast<int64_t *>(mask.ref.data);
  for (int64_t j = 0; j < 70; ++j) {
    m[j] = 1;
    m[70 + j] = j < 33;
  }
  for (int64_t kvHeads : {3, 1})
    for (int64_t window : {0, 40}) {
      SCOPED_TRACE("kv heads " + std::to_string(kvHeads) + " window " +
                   std::to_string(window));
      std::vector<int64_t> shape = {2, 3, 70, 32}, kvShape = {2, kvHeads, 70, 32};
      HostTensor q = randomTensor(dtype, shape, rng);
      HostTensor k = randomTensor(dtype, kvShape, rng);
      HostTensor v = randomTensor(dtype, kvShape, rng);
      HostTensor g = randomTensor(dtype, shape, rng);
      HostTensor qs = swapHeads(q), ks = swapHeads(k), vs = swapHeads(v),
                 gs = swapHeads(g);
      HostTensor o(dtype, shape), os(dtype, qs.ref.shape);
      DeviceTensor dq(q), dk(k), dv(v), dg(g), dMask(mask), dOut(o, false);
      DeviceTensor dqs(qs), dks(ks), dvs(vs), dgs(gs), dOuts(os, false);
      ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                &dMask.ref, true, window, std::nullopt,
                                dOut.ref));
      ASSERT_OK(cuda::attention(*testContext(), dqs.ref, dks.ref, dvs.ref,
                                &dMask.ref, true, window, std::nullopt,
                                dOuts.ref, /*bshd=*/true));
      synchronize();
      HostTensor out = dOut.toHost(), outs = dOuts.toHost();
      expectSameBytes(out, swapHeads(outs), "bshd attention");
      DeviceTensor dO(out), dOs(outs);
      HostTensor gq(dtype, shape), gk(dtype, kvShape), gv(dtype, kvShape);
      HostTensor gqs(dtype, qs.ref.shape), gks(dtype, ks.ref.shape),
          gvs(dtype, vs.ref.shape);
      DeviceTensor outDq(gq, false), outDk(gk, false), outDv(gv, false);
      DeviceTensor outDqs(gqs, false), outDks(gks, false), outDvs(gvs, false);
      ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                    dO.ref, dg.ref, &dMask.ref, true, window,
                                    std::nullopt, outDq.ref, outDk.ref,
                                    outDv.ref));
      ASSERT_OK(cuda::attentionGrad(*testContext(), dqs.ref, dks.ref, dvs.ref,
                                    dOs.ref, dgs.ref, &dMask.ref, true, window,
                                    std::nullopt, outDqs.ref, outDks.ref,
                                    outDvs.ref, /*bshd=*/true));
      synchronize();
      expectNear(outDq.toHost(), swapHeads(outDqs.toHost()),
                 "bshd query_grad");
      expectSameBytes(outDk.toHost(), swapHeads(outDks.toHost()),
                      "bshd key_grad");
      expectSameBytes(outDv.toHost(), swapHeads(outDvs.toHost()),
                      "bshd value_grad");
    }
}

/// Packed operands (tg.attention's `packed`: one [B, T, H + 2 KV, D]
/// tensor) give what the three bshd tensors of their heads give: the fused
/// kernels read and write the heads in place (the same bytes, the query
/// gradient within the rounding of its atomic sums), the f32 GEMM path
/// through copies; with and without the row log-sum-exp, grouped heads, a
/// window and a key mask.
TEST_P(NNCudaTest, PackedAttentionIsAttentionOfItsHeads) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(243);
  const int64_t B = 2, H = 4, T = 70, D = 32;
  HostTensor mask(DType::I64, {B, T});
  for (int64_t j = 0; j < T; ++j) {
    storeI64(mask.ref, j, 1);
    storeI64(mask.ref, T + j, j < 33);
  }
  for (int64_t kv : {int64_t(4), int64_t(2)})
    for (bool keepLse : {false, true}) {
      SCOPED_TRACE("kv heads " + std::to_string(kv) +
                   (keepLse ? " lse kept" : ""));
      HostTensor q = randomTensor(dtype, {B, T, H, D}, rng);
      HostTensor k = randomTensor(dtype, {B, T, kv, D}, rng);
      HostTensor v = randomTensor(dtype, {B, T, kv, D}, rng);
      HostTensor g = randomTensor(dtype, {B, T, H, D}, rng);
      HostTensor packed(dtype, {B, T, H + 2 * kv, D});
      ASSERT_OK(cpu::concat(cpuCtx, {q.ref, k.ref, v.ref}, 2, packed.ref));
      DeviceTensor dq(q), dk(k), dv(v), dg(g), dPacked(packed), dMask(mask);
      HostTensor o(dtype, {B, T, H, D}), lse(DType::F32, {B, T, H});
      DeviceTensor want(o, false), got(o, false), wantLse(lse, false),
          gotLse(lse, false);
      ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                                &dMask.ref, true, 40, std::nullopt, want.ref,
                                /*bshd=*/true, &wantLse.ref));
      ASSERT_OK(cuda::attention(*testContext(), dPacked.ref, dPacked.ref,
                                dPacked.ref, &dMask.ref, true, 40, std::nullopt,
                                got.ref, /*bshd=*/true, &gotLse.ref,
                                /*packed=*/true));
      synchronize();
      expectSameBytes(want.toHost(), got.toHost(), "packed attention");
      expectSameBytes(wantLse.toHost(), gotLse.toHost(), "packed lse");

      HostTensor gq(dtype, {B, T, H, D}), gk(dtype, {B, T, kv, D});
      DeviceTensor wantDq(gq, false), wantDk(gk, false), wantDv(gk, false),
          gotGrad(packed, false);
      TensorRef absentK, absentV;
      const TensorRef *kept = keepLse ? &wantLse.ref : nullptr;
      ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                    want.ref, dg.ref, &dMask.ref, true, 40,
                                    std::nullopt, wantDq.ref, wantDk.ref,
                                    wantDv.ref, /*bshd=*/true, kept));
      ASSERT_OK(cuda::attentionGrad(*testContext(), dPacked.ref, dPacked.ref,
                                    dPacked.ref, want.ref, dg.ref, &dMask.ref,
                                    true, 40, std::nullopt, gotGrad.ref,
                                    absentK, absentV, /*bshd=*/true, kept,
                                    /*packed=*/true));
      synchronize();
      HostTensor grads = gotGrad.toHost();
      HostTensor pq(dtype, {B, T, H, D}), pk(dtype, {B, T, kv, D}),
          pv(dtype, {B, T, kv, D});
      std::vector<TensorRef> pieces = {pq.ref, pk.ref, pv.ref};
      ASSERT_OK(cpu::split(cpuCtx, grads.ref, 2, pieces));
      expectNear(wantDq.toHost(), pq, "packed query_grad");
      expectSameBytes(wantDk.toHost(), pk, "packed key_grad");
      expectSameBytes(wantDv.toHost(), pv, "packed value_grad");
    }
  // That a packed gradient is the only one computed is the loader's rule
  // (test/Unit/runtime/VerifyTest.cpp).
}

// The row log-sum-exp on the device (the fused kernels in 16 bits, the
// GEMM path's softmax in f32, both layouts) against the CPU's, and the
// gradient that reads it: the bytes of the gradient that recomputes it
// (the query gradient, summed by atomic adds, within rounding).
TEST_P(NNCudaTest, AttentionKeepsItsLogSumExp) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(243);
  HostTensor mask(DType::I64, {2, 70});
  auto *m = static_cast<int64_t *>(mask.ref.data);
  for (int64_t j = 0; j < 70; ++j) {
    m[j] = 1;
    m[70 + j] = j >= 20;
  }
  for (bool bshd : {false, true}) {
    SCOPED_TRACE(bshd ? "bshd" : "bhtd");
    std::vector<int64_t> shape =
        bshd ? std::vector<int64_t>{2, 70, 3, 32} : std::vector<int64_t>{2, 3, 70, 32};
    std::vector<int64_t> rows(shape.begin(), shape.end() - 1);
    HostTensor q = randomTensor(dtype, shape, rng);
    HostTensor k = randomTensor(dtype, shape, rng);
    HostTensor v = randomTensor(dtype, shape, rng);
    HostTensor g = randomTensor(dtype, shape, rng);
    HostTensor o(dtype, shape), lse(DType::F32, rows);
    ASSERT_OK(cpu::attention(cpuCtx, q.ref, k.ref, v.ref, &mask.ref, true, 0,
                             std::nullopt, o.ref, bshd, &lse.ref));
    DeviceTensor dq(q), dk(k), dv(v), dg(g), dMask(mask), dOut(o, false),
        dLse(lse, false);
    ASSERT_OK(cuda::attention(*testContext(), dq.ref, dk.ref, dv.ref,
                              &dMask.ref, true, 0, std::nullopt, dOut.ref,
                              bshd, &dLse.ref));
    synchronize();
    HostTensor gotLse = dLse.toHost();
    const float *want = static_cast<const float *>(lse.ref.data);
    const float *got = static_cast<const float *>(gotLse.ref.data);
    for (int64_t i = 0; i < lse.ref.numElements(); ++i) {
      if (std::isinf(want[i]))
        ASSERT_EQ(got[i], want[i]) << i; // a row that sees no key
      else
        ASSERT_NEAR(got[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << i;
    }
    HostTensor out = dOut.toHost();
    DeviceTensor dO(out);
    HostTensor like(dtype, shape);
    DeviceTensor aq(like, false), ak(like, false), av(like, false),
        bq(like, false), bk(like, false), bv(like, false);
    ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                  dO.ref, dg.ref, &dMask.ref, true, 0,
                                  std::nullopt, aq.ref, ak.ref, av.ref, bshd));
    ASSERT_OK(cuda::attentionGrad(*testContext(), dq.ref, dk.ref, dv.ref,
                                  dO.ref, dg.ref, &dMask.ref, true, 0,
                                  std::nullopt, bq.ref, bk.ref, bv.ref, bshd,
                                  &dLse.ref));
    synchronize();
    expectNear(aq.toHost(), bq.toHost(), "query_grad with lse");
    expectSameBytes(ak.toHost(), bk.toHost(), "key_grad with lse");
    expectSameBytes(av.toHost(), bv.toHost(), "value_grad with lse");
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, NNCudaTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(dtypeName(info.param));
                         });

// What tg-fold-casts makes of a tg.cast (tgc/Support/Precision.h), on the
// device: an f32 kernel reading a 16-bit operand or writing a 16-bit result
// gives the bytes of the cast kernel and the all-f32 kernel it replaces
// (the parameter gradients, summed with atomics in an order the hardware
// picks, within rounding).
TEST(MixedPrecisionCuda, FoldedCastsComputeTheSameBits) {
  TGC_REQUIRE_GPU();
  cuda::Context &ctx = *testContext();
  std::mt19937 rng(43);
  std::vector<int64_t> shape{6, 40, 96};
  for (DType half : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(half));
    HostTensor x = randomTensor(DType::F32, shape, rng, 0.5f, 2.0f);
    HostTensor w = randomTensor(DType::F32, {96}, rng, 1.0f, 0.2f);
    HostTensor b = randomTensor(DType::F32, {96}, rng, 0.0f, 0.2f);
    HostTensor y = randomTensor(half, shape, rng);
    HostTensor row = randomTensor(half, {96}, rng);
    DeviceTensor dx(x), dw(w), db(b), dy(y), dRow(row);
    auto widened = [&](const DeviceTensor &t) {
      auto wide = std::make_unique<DeviceTensor>(HostTensor(DType::F32,
                                                            t.ref.shape),
                                                 false);
      EXPECT_TRUE(ok(cuda::cast(ctx, t.ref, wide->ref)));
      return wide;
    };
    HostTensor f32Like(DType::F32, shape), halfLike(half, shape);
    // A binary op with a 16-bit operand on either side, and broadcast.
    for (bool lhsHalf : {true, false}) {
      DeviceTensor mixed(f32Like, false), plain(f32Like, false);
      auto wideY = widened(dy);
      ASSERT_OK(lhsHalf ? cuda::sub(ctx, dy.ref, dx.ref, mixed.ref)
                        : cuda::sub(ctx, dx.ref, dy.ref, mixed.ref));
      ASSERT_OK(lhsHalf ? cuda::sub(ctx, wideY->ref, dx.ref, plain.ref)
                        : cuda::sub(ctx, dx.ref, wideY->ref, plain.ref));
      synchronize();
      expectSameBytes(plain.toHost(), mixed.toHost(), "sub");
    }
    {
      DeviceTensor mixed(f32Like, false), plain(f32Like, false);
      auto wideRow = widened(dRow);
      ASSERT_OK(cuda::add(ctx, dx.ref, dRow.ref, mixed.ref));
      ASSERT_OK(cuda::add(ctx, dx.ref, wideRow->ref, plain.ref));
      synchronize();
      expectSameBytes(plain.toHost(), mixed.toHost(), "add broadcast");
    }
    // Norms writing a 16-bit result.
    for (bool centered : {true, false}) {
      DeviceTensor direct(halfLike, false), full(f32Like, false),
          rounded(halfLike, false);
      ASSERT_OK(centered
                    ? cuda::layerNorm(ctx, dx.ref, dw.ref, db.ref, 1e-5,
                                      direct.ref)
                    : cuda::rmsNorm(ctx, dx.ref, dw.ref, 1e-6, direct.ref));
      ASSERT_OK(centered
                    ? cuda::layerNorm(ctx, dx.ref, dw.ref, db.ref, 1e-5,
                                      full.ref)
                    : cuda::rmsNorm(ctx, dx.ref, dw.ref, 1e-6, full.ref));
      ASSERT_OK(cuda::cast(ctx, full.ref, rounded.ref));
      synchronize();
      expectSameBytes(rounded.toHost(), direct.toHost(),
                      centered ? "layer_norm" : "rms_norm");
    }
    // Norm gradients reading a 16-bit incoming gradient.
    HostTensor param(DType::F32, {96});
    DeviceTensor dxMixed(f32Like, false), dwMixed(param, false),
        dbMixed(param, false), dxPlain(f32Like, false), dwPlain(param, false),
        dbPlain(param, false);
    auto wideG = widened(dy);
    ASSERT_OK(cuda::layerNormGrad(ctx, dx.ref, dw.ref, dy.ref, 1e-5,
                                  dxMixed.ref, dwMixed.ref, dbMixed.ref));
    ASSERT_OK(cuda::layerNormGrad(ctx, dx.ref, dw.ref, wideG->ref, 1e-5,
                                  dxPlain.ref, dwPlain.ref, dbPlain.ref));
    synchronize();
    expectSameBytes(dxPlain.toHost(), dxMixed.toHost(), "layer_norm_grad");
    expectNear(dwPlain.toHost(), dwMixed.toHost(), "layer_norm_grad weight");
    expectNear(dbPlain.toHost(), dbMixed.toHost(), "layer_norm_grad bias");
    ASSERT_OK(cuda::rmsNormGrad(ctx, dx.ref, dw.ref, dy.ref, 1e-6,
                                dxMixed.ref, dwMixed.ref));
    ASSERT_OK(cuda::rmsNormGrad(ctx, dx.ref, dw.ref, wideG->ref, 1e-6,
                                dxPlain.ref, dwPlain.ref));
    synchronize();
    expectSameBytes(dxPlain.toHost(), dxMixed.toHost(), "rms_norm_grad");
    expectNear(dwPlain.toHost(), dwMixed.toHost(), "rms_norm_grad weight");
  }
}
