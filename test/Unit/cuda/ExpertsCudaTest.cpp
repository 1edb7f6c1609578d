//===- ExpertsCudaTest.cpp - the mixture-of-experts kernels on CUDA -------===//
//
// tg.top_k, tg.moe_route, tg.expert_linear and its weight gradient
// (runtime/src/cuda/Experts.cu) against the CPU kernels: the same indices
// and routing bit for bit, the grouped products within the type's
// tolerance, and a bad expert raising the device error flag.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

using namespace tgc::rt;
using namespace tgc::rt::test;

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    ::tgc::rt::Status status_ = (expr);                                        \
    ASSERT_TRUE(status_.ok()) << status_.error;                                \
  } while (0)

class ExpertsCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(ExpertsCudaTest, TopKAndRouteMatchTheCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(301);
  // 300 tokens over two of 6 experts (more than one block's chunk of
  // choices), with ties in the first row.
  const int64_t tokens = 300, experts = 6, k = 2;
  HostTensor probs = randomTensor(dtype, {tokens, experts}, rng);
  std::memcpy(static_cast<char *>(probs.ref.data) + dtypeSize(dtype),
              probs.ref.data, dtypeSize(dtype));
  HostTensor want(DType::I64, {tokens, k});
  ASSERT_OK(cpu::topK(cpuCtx, probs.ref, k, want.ref));
  DeviceTensor dProbs(probs), dChoices(want, false);
  ASSERT_OK(cuda::topK(*testContext(), dProbs.ref, k, dChoices.ref));
  synchronize();
  expectSameBytes(want, dChoices.toHost(), named("top_k", dtype));

  for (DType indexType : {DType::I64, DType::I32}) {
    HostTensor rows(indexType, {tokens * k, 1}),
        positions(indexType, {tokens, k}), offsets(indexType, {experts + 1});
    ASSERT_OK(
        cpu::moeRoute(cpuCtx, want.ref, rows.ref, positions.ref, offsets.ref));
    DeviceTensor dRows(rows, false), dPositions(positions, false),
        dOffsets(offsets, false);
    ASSERT_OK(cuda::moeRoute(*testContext(), dChoices.ref, dRows.ref,
                             dPositions.ref, dOffsets.ref));
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0);
    expectSameBytes(rows, dRows.toHost(), "moe_route rows");
    expectSameBytes(positions, dPositions.toHost(), "moe_route positions");
    expectSameBytes(offsets, dOffsets.toHost(), "moe_route offsets");
  }
  // An expert outside [0, E) raises the error flag with what it was.
  storeI64(want.ref, 5, experts);
  DeviceTensor bad(want);
  HostTensor rows(DType::I64, {tokens * k, 1}),
      positions(DType::I64, {tokens, k}), offsets(DType::I64, {experts + 1});
  DeviceTensor dRows(rows, false), dPositions(positions, false),
      dOffsets(offsets, false);
  ASSERT_OK(cuda::moeRoute(*testContext(), bad.ref, dRows.ref, dPositions.ref,
                           dOffsets.ref));
  synchronize();
  cuda::DeviceError record;
  EXPECT_EQ(takeDeviceError(&record), kIndexOutOfRange);
  EXPECT_EQ(record.value, experts);
  EXPECT_EQ(record.limit, experts);
}

TEST_P(ExpertsCudaTest, GroupedProductsMatchTheCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(302);
  // 70 rows over 4 experts, one of them empty; sizes off the 32-tiles.
  const int64_t m = 70, k = 40, n = 33;
  HostTensor offsets(DType::I64, {5});
  const int64_t bounds[] = {0, 37, 37, 61, 70};
  for (int e = 0; e < 5; ++e)
    storeI64(offsets.ref, e, bounds[e]);
  HostTensor x = randomTensor(dtype, {m, k}, rng);
  HostTensor g = randomTensor(dtype, {m, n}, rng);
  DeviceTensor dx(x), dg(g), dOffsets(offsets);
  for (bool transposed : {false, true}) {
    std::vector<std::unique_ptr<HostTensor>> weights;
    std::vector<std::unique_ptr<DeviceTensor>> dWeights;
    std::vector<TensorRef> refs, dRefs;
    for (int e = 0; e < 4; ++e) {
      weights.push_back(std::make_unique<HostTensor>(randomTensor(
          dtype,
          transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
          rng)));
      dWeights.push_back(std::make_unique<DeviceTensor>(*weights.back()));
      refs.push_back(weights.back()->ref);
      dRefs.push_back(dWeights.back()->ref);
    }
    HostTensor want(dtype, {m, n});
    ASSERT_OK(cpu::expertLinear(cpuCtx, x.ref, offsets.ref, refs, transposed,
                                want.ref));
    DeviceTensor dy(want, false);
    ASSERT_OK(cuda::expertLinear(*testContext(), dx.ref, dOffsets.ref, dRefs,
                                 transposed, dy.ref));
    synchronize();
    expectNear(want, dy.toHost(), named("expert_linear", dtype), 2.0);

    // The weight gradient, over garbage results (each is written whole).
    std::vector<std::unique_ptr<HostTensor>> wantGrads;
    std::vector<std::unique_ptr<DeviceTensor>> dGrads;
    std::vector<TensorRef> gradRefs, dGradRefs;
    for (int e = 0; e < 4; ++e) {
      wantGrads.push_back(std::make_unique<HostTensor>(dtype, refs[e].shape));
      HostTensor garbage = randomTensor(dtype, refs[e].shape, rng);
      dGrads.push_back(std::make_unique<DeviceTensor>(garbage));
      gradRefs.push_back(wantGrads.back()->ref);
      dGradRefs.push_back(dGrads.back()->ref);
    }
    const HostTensor &lhs = transposed ? g : x, &rhs = transposed ? x : g;
    const DeviceTensor &dLhs = transposed ? dg : dx,
                       &dRhs = transposed ? dx : dg;
    ASSERT_OK(cpu::expertLinearWeightGrad(cpuCtx, lhs.ref, rhs.ref, offsets.ref,
                                          gradRefs));
    ASSERT_OK(cuda::expertLinearWeightGrad(*testContext(), dLhs.ref, dRhs.ref,
                                           dOffsets.ref, dGradRefs));
    synchronize();
    for (int e = 0; e < 4; ++e)
      expectNear(*wantGrads[e], dGrads[e]->toHost(),
                 named("expert_linear_weight_grad", dtype) + " " +
                     std::to_string(e),
                 4.0);
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ExpertsCudaTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));
