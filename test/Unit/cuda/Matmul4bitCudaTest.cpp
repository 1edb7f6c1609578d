//===- Matmul4bitCudaTest.cpp - products with a 4-bit weight on CUDA ------===//
//
// tg.matmul_4bit's CUDA kernel (runtime/src/cuda/Matmul4bit.cu) against the
// CPU kernel: NF4 and FP4, double-quantized or not, both transpositions,
// every float type, sizes off the kernel's 32-tiles and the CPU's
// 64-column panels.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include "tgc/runtime/Quant4bit.h"

#include <cstring>

using namespace tgc;
using namespace tgc::rt;
using namespace tgc::rt::test;

class Matmul4bitCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(Matmul4bitCudaTest, MatchesTheCpu) {
  TGC_REQUIRE_GPU();
  DType dtype = GetParam();
  std::mt19937 rng(401);
  const int64_t rows = 70, cols = 45;
  HostTensor w = randomTensor(DType::F32, {rows, cols}, rng, 0.0f, 0.1f);
  for (quant4::Type type : {quant4::Type::NF4, quant4::Type::FP4})
    for (bool nested : {false, true}) {
      QuantizedWeight layout;
      layout.rows = rows;
      layout.cols = cols;
      layout.fp4 = type == quant4::Type::FP4;
      if (nested) {
        layout.nestedAbsmax = 1;
        layout.offset = 2;
      }
      quant4::Layout sizes{rows * cols, 64};
      HostTensor codes(DType::U8, {sizes.codeBytes()}),
          absmax(nested ? DType::U8 : DType::F32, {sizes.blocks()}),
          nestedAbsmax(DType::F32, {sizes.nestedBlocks()}),
          offset(DType::F32, {}), map(DType::F32, {16}),
          dynamic(DType::F32, {256});
      quantizeWeight(layout, static_cast<const float *>(w.ref.data),
                     codes.ref, absmax.ref, nestedAbsmax.ref, offset.ref);
      std::memcpy(map.ref.data, quant4::values(type), 16 * sizeof(float));
      std::memcpy(dynamic.ref.data, quant4::kDynamicMapBits,
                  sizeof(quant4::kDynamicMapBits));
      Weight4bitRefs host{codes.ref, absmax.ref, map.ref, nestedAbsmax.ref,
                          dynamic.ref, offset.ref, rows, cols, 64};
      DeviceTensor dCodes(codes), dAbsmax(absmax), dMap(map),
          dNested(nestedAbsmax), dDynamic(dynamic), dOffset(offset);
      Weight4bitRefs device{dCodes.ref, dAbsmax.ref, dMap.ref,
                            dNested.ref, dDynamic.ref, dOffset.ref,
                            rows, cols, 64};
      for (bool transposeRhs : {true, false}) {
        int64_t k = transposeRhs ? cols : rows, n = transposeRhs ? rows : cols;
        HostTensor x = randomTensor(dtype, {2, 33, k}, rng);
        HostTensor want(dtype, {2, 33, n});
        ASSERT_TRUE(ok(cpu::matmul4bit(cpuCtx, x.ref, host, transposeRhs,
                                       want.ref)));
        DeviceTensor dx(x), dy(want, false);
        ASSERT_TRUE(ok(cuda::matmul4bit(*testContext(), dx.ref, device,
                                        transposeRhs, dy.ref)));
        synchronize();
        expectNear(want, dy.toHost(),
                   named(nested ? "matmul_4bit nested" : "matmul_4bit",
                         dtype) +
                       (layout.fp4 ? " fp4" : " nf4") +
                       (transposeRhs ? " transposed" : ""),
                   2.0);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, Matmul4bitCudaTest,
                         ::testing::Values(DType::F32, DType::F16,
                                           DType::BF16));
