//===- LinalgCudaTest.cpp - cuBLASLt matmul against the CPU matmul --------===//
//
// tg.matmul on the GPU against the OpenBLAS kernel on the same random
// operands: every transpose combination, equal batch dimensions (one
// strided-batched GEMM), a shared rank-2 operand on either side (the folded
// GEMM and a batch stride of 0), general broadcast batch dimensions (a loop
// of GEMMs at unaligned offsets), GPT-2-sized products, an empty
// contraction and a result that reuses an operand's buffer; in f32, f16 and
// bf16.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tgc::rt;
using namespace tgc::rt::test;

namespace {

struct MatmulCase {
  std::vector<int64_t> lhs, rhs; // as stored, already transposed
  bool transposeLhs, transposeRhs;
  double scale; // tolerance multiplier for long contractions
};

std::vector<int64_t> matmulResultShape(const MatmulCase &c) {
  size_t lr = c.lhs.size(), rr = c.rhs.size();
  std::vector<int64_t> lb(c.lhs.begin(), c.lhs.end() - 2);
  std::vector<int64_t> rb(c.rhs.begin(), c.rhs.end() - 2);
  std::vector<int64_t> shape(std::max(lb.size(), rb.size()));
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t a = i < lb.size() ? lb[lb.size() - 1 - i] : 1;
    int64_t b = i < rb.size() ? rb[rb.size() - 1 - i] : 1;
    shape[shape.size() - 1 - i] = a == 1 ? b : a;
  }
  shape.push_back(c.transposeLhs ? c.lhs[lr - 1] : c.lhs[lr - 2]);
  shape.push_back(c.transposeRhs ? c.rhs[rr - 2] : c.rhs[rr - 1]);
  return shape;
}

std::string describe(const MatmulCase &c, DType dtype) {
  auto shape = [](const std::vector<int64_t> &s) {
    std::string text = "[";
    for (size_t i = 0; i < s.size(); ++i)
      text += (i ? "," : "") + std::to_string(s[i]);
    return text + "]";
  };
  return std::string("matmul ") + dtypeName(dtype) + " " + shape(c.lhs) +
         (c.transposeLhs ? "^T" : "") + " x " + shape(c.rhs) +
         (c.transposeRhs ? "^T" : "");
}

void checkMatmul(const MatmulCase &c, DType dtype, std::mt19937 &rng) {
  SCOPED_TRACE(describe(c, dtype));
  HostTensor lhs(dtype, c.lhs), rhs(dtype, c.rhs);
  fillNormal(lhs, rng);
  fillNormal(rhs, rng);
  HostTensor want(dtype, matmulResultShape(c));
  Status cpuStatus =
      cpu::matmul(cpuCtx, lhs.ref, rhs.ref, c.transposeLhs, c.transposeRhs, want.ref);
  ASSERT_TRUE(cpuStatus.ok()) << cpuStatus.error;

  DeviceTensor dLhs(lhs), dRhs(rhs), dOut(want, /*copy=*/false);
  Status status = cuda::matmul(*testContext(), dLhs.ref, dRhs.ref,
                               c.transposeLhs, c.transposeRhs, dOut.ref);
  ASSERT_TRUE(status.ok()) << status.error;
  synchronize();
  expectNear(want, dOut.toHost(), describe(c, dtype), c.scale);
}

} // namespace

class LinalgCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(LinalgCudaTest, TransposeCombinations) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(101);
  const MatmulCase cases[] = {
      {{3, 4}, {4, 5}, false, false, 1},
      {{4, 3}, {4, 5}, true, false, 1},
      {{3, 4}, {5, 4}, false, true, 1},
      {{4, 3}, {5, 4}, true, true, 1},
      // Odd sizes: leading dimensions that allow no vector loads.
      {{7, 13}, {13, 9}, false, false, 1},
      {{13, 7}, {9, 13}, true, true, 1},
      {{1, 1}, {1, 1}, false, false, 1},
  };
  for (const MatmulCase &c : cases)
    checkMatmul(c, GetParam(), rng);
}

TEST_P(LinalgCudaTest, BatchedAndBroadcastBatches) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(103);
  const MatmulCase cases[] = {
      {{2, 3, 4}, {2, 4, 5}, false, false, 1},     // strided batch
      {{2, 4, 3}, {2, 5, 4}, true, true, 1},       // strided, transposed
      {{2, 3, 4}, {4, 5}, false, false, 1},        // shared rhs: folded
      {{2, 3, 4}, {5, 4}, false, true, 1},         // as nn.Linear
      {{2, 4, 3}, {4, 5}, true, false, 1},         // shared rhs, stride 0
      {{3, 4}, {2, 4, 5}, false, false, 1},        // shared lhs, stride 0
      {{4, 3}, {2, 5, 4}, true, true, 1},          // shared lhs, transposed
      {{2, 1, 3, 4}, {3, 4, 5}, false, false, 1},  // loop over broadcasts
      {{2, 1, 3, 5}, {3, 5, 7}, false, false, 1},  // unaligned offsets
      {{1, 2, 4, 3}, {3, 1, 5, 4}, true, true, 1}, // broadcast both sides
      {{2, 3, 1, 4, 6}, {3, 1, 6, 5}, false, false, 1}, // rank 5
      {{2, 3, 1}, {2, 1, 6}, false, false, 1},          // outer products
      {{1, 1, 3, 4}, {4, 5}, false, false, 1},          // size-1 batch only
  };
  for (const MatmulCase &c : cases)
    checkMatmul(c, GetParam(), rng);
}

TEST_P(LinalgCudaTest, Gpt2Shapes) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(107);
  const MatmulCase cases[] = {
      // Forward: x @ W for the QKV projection and the MLP.
      {{4, 64, 128}, {128, 384}, false, false, 4},
      {{4, 64, 512}, {512, 128}, false, false, 8},
      // Backward: dX = dY @ W^T and dW = X^T @ dY over the flattened batch.
      {{4, 64, 384}, {128, 384}, false, true, 8},
      {{256, 128}, {256, 384}, true, false, 8},
      // Attention scores and context per head.
      {{2, 4, 64, 32}, {2, 4, 64, 32}, false, true, 4},
      {{2, 4, 64, 64}, {2, 4, 64, 32}, false, false, 4},
  };
  for (const MatmulCase &c : cases)
    checkMatmul(c, GetParam(), rng);
}

TEST_P(LinalgCudaTest, EmptyContractionGivesZeros) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  HostTensor lhs(dtype, {2, 3, 0}), rhs(dtype, {0, 4});
  HostTensor want(dtype, {2, 3, 4});
  ASSERT_TRUE(cpu::matmul(cpuCtx, lhs.ref, rhs.ref, false, false, want.ref).ok());
  // The device result starts non-zero, so zeros must be written.
  HostTensor ones(dtype, {2, 3, 4});
  for (int64_t i = 0; i < ones.ref.numElements(); ++i)
    storeF32(ones.ref, i, 1.0f);
  DeviceTensor dLhs(lhs), dRhs(rhs), dOut(ones);
  Status status =
      cuda::matmul(*testContext(), dLhs.ref, dRhs.ref, false, false, dOut.ref);
  ASSERT_TRUE(status.ok()) << status.error;
  synchronize();
  expectNear(want, dOut.toHost(), "empty contraction");
}

TEST_P(LinalgCudaTest, ResultReusingAnOperandBuffer) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(109);
  HostTensor lhs(dtype, {2, 8, 8}), rhs(dtype, {8, 8});
  fillNormal(lhs, rng);
  fillNormal(rhs, rng);
  HostTensor want(dtype, {2, 8, 8});
  ASSERT_TRUE(cpu::matmul(cpuCtx, lhs.ref, rhs.ref, false, true, want.ref).ok());
  DeviceTensor dLhs(lhs), dRhs(rhs);
  TensorRef out = dLhs.ref; // the planner put the result over lhs
  Status status =
      cuda::matmul(*testContext(), dLhs.ref, dRhs.ref, false, true, out);
  ASSERT_TRUE(status.ok()) << status.error;
  synchronize();
  expectNear(want, dLhs.toHost(), "matmul into lhs");
}

// tg.matmul_add against the CPU's, into storage of its own (the addend
// untouched) and over the addend (beta = 1 in place), batched and folded.
TEST_P(LinalgCudaTest, MatmulAddAgainstCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(113);
  const MatmulCase cases[] = {
      {{96, 40}, {96, 72}, true, false, 1.0}, // a weight gradient
      {{2, 8, 16}, {16, 24}, false, false, 1.0}, // folded into one GEMM
      {{3, 8, 16}, {3, 24, 16}, false, true, 1.0}, // strided batch
  };
  for (const MatmulCase &c : cases)
    for (bool inPlace : {false, true}) {
      SCOPED_TRACE(describe(c, dtype) + (inPlace ? " in place" : ""));
      HostTensor lhs(dtype, c.lhs), rhs(dtype, c.rhs);
      std::vector<int64_t> shape = matmulResultShape(c);
      HostTensor addend(dtype, shape), want(dtype, shape);
      fillNormal(lhs, rng);
      fillNormal(rhs, rng);
      fillNormal(addend, rng);
      ASSERT_TRUE(cpu::matmulAdd(cpuCtx, lhs.ref, rhs.ref, addend.ref,
                                 c.transposeLhs, c.transposeRhs, want.ref)
                      .ok());
      DeviceTensor dLhs(lhs), dRhs(rhs), dAddend(addend), dOut(want);
      TensorRef out = inPlace ? dAddend.ref : dOut.ref;
      Status status =
          cuda::matmulAdd(*testContext(), dLhs.ref, dRhs.ref, dAddend.ref,
                          c.transposeLhs, c.transposeRhs, out);
      ASSERT_TRUE(status.ok()) << status.error;
      synchronize();
      expectNear(want, inPlace ? dAddend.toHost() : dOut.toHost(),
                 "matmul_add");
      if (!inPlace)
        expectNear(addend, dAddend.toHost(), "the addend, untouched");
    }
}

/// `value` with its f32 mantissa rounded to 10 bits, to nearest with ties
/// away from zero: what a TF32 tensor core reads (PTX cvt.rna.tf32.f32).
static float tf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

// With the program's allow_tf32, f32 GEMMs read their inputs as TF32: the
// result is the product of the rounded inputs (accumulated in f32), which
// differs measurably from the f32 product. Without it, nothing is rounded.
TEST(LinalgCudaTF32, RoundsF32InputsOnlyWhenAllowed) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(113);
  HostTensor lhs(DType::F32, {3, 16, 64}), rhs(DType::F32, {64, 24});
  fillNormal(lhs, rng);
  fillNormal(rhs, rng);
  HostTensor exact(DType::F32, {3, 16, 24}), rounded(DType::F32, {3, 16, 24});
  ASSERT_TRUE(cpu::matmul(cpuCtx, lhs.ref, rhs.ref, false, false, exact.ref).ok());
  HostTensor lhs32(DType::F32, {3, 16, 64}), rhs32(DType::F32, {64, 24});
  for (int64_t i = 0; i < lhs.ref.numElements(); ++i)
    storeF32(lhs32.ref, i, tf32(loadF32(lhs.ref, i)));
  for (int64_t i = 0; i < rhs.ref.numElements(); ++i)
    storeF32(rhs32.ref, i, tf32(loadF32(rhs.ref, i)));
  ASSERT_TRUE(
      cpu::matmul(cpuCtx, lhs32.ref, rhs32.ref, false, false, rounded.ref).ok());

  cuda::Context &ctx = *testContext();
  DeviceTensor dLhs(lhs), dRhs(rhs), dOut(exact, /*copy=*/false);
  ctx.allowTF32 = true;
  Status status = cuda::matmul(ctx, dLhs.ref, dRhs.ref, false, false, dOut.ref);
  ctx.allowTF32 = false;
  ASSERT_TRUE(status.ok()) << status.error;
  synchronize();
  HostTensor got = dOut.toHost();
  expectNear(rounded, got, "TF32 matmul against rounded inputs", 4.0);
  double worst = 0;
  for (int64_t i = 0; i < got.ref.numElements(); ++i)
    worst = std::max(worst, std::fabs(double(loadF32(got.ref, i)) -
                                      loadF32(exact.ref, i)));
  // Inputs rounded at 2^-11 relative over K = 64 terms of unit size.
  EXPECT_GT(worst, 1e-4) << "TF32 was not used";
  EXPECT_LT(worst, 0.05);

  status = cuda::matmul(ctx, dLhs.ref, dRhs.ref, false, false, dOut.ref);
  ASSERT_TRUE(status.ok()) << status.error;
  synchronize();
  expectNear(exact, dOut.toHost(), "f32 matmul without TF32");
}

// tg.linear on the GPU against the CPU kernel: cuBLASLt's bias and
// GELU_AUX epilogues where the layout allows (N a multiple of 8), the GEMM
// and one bias/GELU pass otherwise (N = 5), with the operands' type or f32
// as the result; rows from a batched input folded into one GEMM.
TEST_P(LinalgCudaTest, LinearEpiloguesAgainstCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(127);
  for (int64_t n : {16, 5})
    for (DType resultType : {dtype, DType::F32})
      for (bool gelu : {false, true}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " result " +
                     dtypeName(resultType) + (gelu ? " gelu" : ""));
        HostTensor x(dtype, {2, 3, 24}), w(dtype, {24, n});
        HostTensor b(resultType, {n});
        fillNormal(x, rng);
        fillNormal(w, rng);
        fillNormal(b, rng);
        HostTensor want(resultType, {2, 3, n}), wantPre(resultType, {2, 3, n});
        ASSERT_TRUE(cpu::linear(cpuCtx, x.ref, w.ref, b.ref, gelu, want.ref,
                                gelu ? &wantPre.ref : nullptr)
                        .ok());
        DeviceTensor dx(x), dw(w), db(b), dOut(want, false),
            dPre(wantPre, false);
        Status status = cuda::linear(*testContext(), dx.ref, dw.ref, db.ref,
                                     gelu, dOut.ref, gelu ? &dPre.ref : nullptr);
        ASSERT_TRUE(status.ok()) << status.error;
        synchronize();
        expectNear(want, dOut.toHost(), "linear", 4.0);
        if (gelu)
          expectNear(wantPre, dPre.toHost(), "preactivation", 4.0);
      }
}

// tg.matmul_bias_grad: the BGRADA/BGRADB epilogue (n a multiple of 8) and
// the GEMM-then-sum fallback (n = 5) against the CPU kernel.
TEST_P(LinalgCudaTest, BiasGradEpiloguesAgainstCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(131);
  for (int64_t n : {16, 5})
    for (bool ofLhs : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + (ofLhs ? " of lhs" : ""));
      HostTensor lhs(dtype, {40, 24}), rhs(dtype, {40, n});
      fillNormal(lhs, rng);
      fillNormal(rhs, rng);
      HostTensor want(dtype, {24, n}), wantBias(dtype, {ofLhs ? 24 : n});
      ASSERT_TRUE(cpu::matmulBiasGrad(cpuCtx, lhs.ref, rhs.ref, ofLhs, want.ref,
                                      wantBias.ref)
                      .ok());
      DeviceTensor dLhs(lhs), dRhs(rhs), dOut(want, false),
          dBias(wantBias, false);
      Status status = cuda::matmulBiasGrad(*testContext(), dLhs.ref, dRhs.ref,
                                           ofLhs, dOut.ref, dBias.ref);
      ASSERT_TRUE(status.ok()) << status.error;
      synchronize();
      expectNear(want, dOut.toHost(), "product", 4.0);
      expectNear(wantBias, dBias.toHost(), "bias_grad", 4.0);
    }
}

// tg.matmul_gelu_grad: the DGELU_BGRAD epilogue (K = 16) and the fallback
// (K = 12, not a multiple of 8) against the CPU kernel, which keeps the
// product in f32 as both do.
TEST_P(LinalgCudaTest, GeluGradEpilogueAgainstCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(137);
  for (int64_t k : {16, 12})
    for (bool transposed : {true, false}) {
      SCOPED_TRACE("k=" + std::to_string(k) +
                   (transposed ? " transposed" : ""));
      HostTensor grad(dtype, {2, 5, 24}), pre(dtype, {2, 5, k});
      HostTensor weight(dtype, transposed ? std::vector<int64_t>{k, 24}
                                          : std::vector<int64_t>{24, k});
      fillNormal(grad, rng);
      fillNormal(weight, rng);
      fillNormal(pre, rng);
      HostTensor want(dtype, {2, 5, k}), wantBias(dtype, {k});
      ASSERT_TRUE(cpu::matmulGeluGrad(cpuCtx, grad.ref, weight.ref, pre.ref,
                                      transposed, want.ref, wantBias.ref)
                      .ok());
      DeviceTensor dGrad(grad), dWeight(weight), dPre(pre), dOut(want, false),
          dBias(wantBias, false);
      Status status =
          cuda::matmulGeluGrad(*testContext(), dGrad.ref, dWeight.ref, dPre.ref,
                               transposed, dOut.ref, dBias.ref);
      ASSERT_TRUE(status.ok()) << status.error;
      synchronize();
      expectNear(want, dOut.toHost(), "result", 4.0);
      expectNear(wantBias, dBias.toHost(), "bias_grad", 8.0);
    }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, LinalgCudaTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(dtypeName(info.param));
                         });
