//===- ReductionsCudaTest.cpp - CUDA reductions against the CPU -----------===//
//
// Runs reduce_sum/mean/max, reduce_max_grad and sum_to on the GPU and the
// CPU on the same random tensors, f32/f16/bf16: several axis sets with and
// without keep_dims (none, one, several, all, negative), groups small
// enough for a thread per result and large enough for a block per result,
// a large leading dimension summed by sum_to, empty groups, NaN in maxima,
// reduce_max_grad over data full of ties, reduce_max_grad written over its
// operand, and tg.cumsum (same bits as the CPU: both sum in f64 in order).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {

using Shape = std::vector<int64_t>;


/// expectNear, except that equal values (infinities) and NaN pairs match.
void expectClose(const HostTensor &want, const HostTensor &got,
                 const std::string &what) {
  ASSERT_EQ(want.ref.shape, got.ref.shape) << what;
  double tol = toleranceFor(want.ref.dtype);
  int reported = 0;
  for (int64_t i = 0; i < want.ref.numElements() && reported < 5; ++i) {
    double w = loadF32(want.ref, i), g = loadF32(got.ref, i);
    if (w == g || (std::isnan(w) && std::isnan(g)) ||
        std::fabs(g - w) <= tol * (1.0 + std::fabs(w)))
      continue;
    ADD_FAILURE() << what << "[" << i << "]: CUDA " << g << ", CPU " << w;
    ++reported;
  }
}

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

/// The shape reduce_* gives `shape` reduced over `axes`.
Shape reducedShape(const Shape &shape, const Shape &axes, bool keepDims) {
  int64_t rank = int64_t(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t axis : axes)
    reduced[axis < 0 ? axis + rank : axis] = true;
  Shape result;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      result.push_back(shape[d]);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

using ReduceCpu = Status (*)(cpu::Context &, const TensorRef &, const std::vector<int64_t> &,
                             bool, TensorRef &);
using ReduceCuda = Status (*)(cuda::Context &, const TensorRef &,
                              const std::vector<int64_t> &, bool, TensorRef &);
struct ReduceCase {
  const char *name;
  ReduceCpu cpu;
  ReduceCuda gpu;
};
const ReduceCase kReduceCases[] = {
    {"reduce_sum", cpu::reduceSum, cuda::reduceSum},
    {"reduce_mean", cpu::reduceMean, cuda::reduceMean},
    {"reduce_max", cpu::reduceMax, cuda::reduceMax},
};

void checkReduction(const ReduceCase &op, const HostTensor &x,
                    const Shape &axes, bool keepDims, const std::string &what) {
  HostTensor want(x.ref.dtype, reducedShape(x.ref.shape, axes, keepDims));
  ASSERT_TRUE(ok(op.cpu(cpuCtx, x.ref, axes, keepDims, want.ref))) << what;
  DeviceTensor input(x), result(want, false);
  ASSERT_TRUE(ok(op.gpu(*testContext(), input.ref, axes, keepDims, result.ref)))
      << what;
  synchronize();
  expectClose(want, result.toHost(), what);
}

/// Shapes and axes: thread-per-result groups, then block-per-result ones.
const std::pair<Shape, Shape> kReductionCases[] = {
    {{3, 4, 5, 6}, {1, 3}}, {{3, 4, 5, 6}, {0}},
    {{3, 4, 5, 6}, {-1}},   {{3, 4, 5, 6}, {0, 1, 2, 3}},
    {{3, 4, 5, 6}, {}},     {{7}, {0}},
    {{3, 1000}, {1}},       {{5000, 7}, {0}},
    {{2, 300, 3}, {0, 1}},  {{40, 3, 50}, {2, 0}},
};

TEST(ReductionsCuda, SumMeanMaxOverAxes) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(301);
  for (DType dtype : kFloatTypes)
    for (const ReduceCase &op : kReduceCases)
      for (const auto &[shape, axes] : kReductionCases)
        for (bool keepDims : {false, true}) {
          HostTensor x(dtype, shape);
          fillNormal(x, rng);
          checkReduction(op, x, axes, keepDims,
                         std::string(op.name) + " " + dtypeName(dtype) +
                             (keepDims ? " keep_dims" : ""));
        }
}

TEST(ReductionsCuda, MaxPropagatesNaN) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(303);
  for (DType dtype : kFloatTypes)
    for (const Shape &shape : {Shape{6, 20}, Shape{6, 700}}) {
      HostTensor x(dtype, shape);
      fillNormal(x, rng);
      // NaN first, in the middle and last of different groups.
      storeF32(x.ref, 0, std::numeric_limits<float>::quiet_NaN());
      storeF32(x.ref, 2 * shape[1] + shape[1] / 2,
               std::numeric_limits<float>::quiet_NaN());
      storeF32(x.ref, 5 * shape[1] - 1,
               std::numeric_limits<float>::quiet_NaN());
      checkReduction(kReduceCases[2], x, {1}, false,
                     std::string("reduce_max NaN ") + dtypeName(dtype));
    }
}

TEST(ReductionsCuda, EmptyGroups) {
  TGC_REQUIRE_GPU();
  // Sum 0, mean NaN, max -inf over nothing.
  for (const ReduceCase &op : kReduceCases) {
    HostTensor x(DType::F32, {3, 0});
    checkReduction(op, x, {1}, false, std::string(op.name) + " empty");
  }
}

TEST(ReductionsCuda, ReduceMaxGradSplitsTies) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(307);
  const std::pair<Shape, Shape> cases[] = {
      {{4, 5, 6}, {1}}, {{4, 5, 6}, {0, 2}}, {{4, 300}, {-1}}, {{9}, {0}}};
  for (DType dtype : kFloatTypes)
    for (const auto &[shape, axes] : cases)
      for (bool keepDims : {false, true}) {
        std::string what = std::string("reduce_max_grad ") + dtypeName(dtype) +
                           (keepDims ? " keep_dims" : "");
        // Few distinct values: many groups have tied maxima.
        HostTensor x(dtype, shape);
        fillInts(x, rng, 0, 3);
        Shape outShape = reducedShape(shape, axes, keepDims);
        HostTensor m(dtype, outShape), g(dtype, outShape), want(dtype, shape);
        ASSERT_TRUE(ok(cpu::reduceMax(cpuCtx, x.ref, axes, keepDims, m.ref)));
        fillNormal(g, rng);
        ASSERT_TRUE(ok(
            cpu::reduceMaxGrad(cpuCtx, x.ref, m.ref, g.ref, axes, keepDims, want.ref)));
        DeviceTensor input(x), output(m), grad(g), result(want, false);
        ASSERT_TRUE(
            ok(cuda::reduceMaxGrad(*testContext(), input.ref, output.ref,
                                   grad.ref, axes, keepDims, result.ref)));
        synchronize();
        expectClose(want, result.toHost(), what);

        // Written over the operand.
        ASSERT_TRUE(
            ok(cuda::reduceMaxGrad(*testContext(), input.ref, output.ref,
                                   grad.ref, axes, keepDims, input.ref)));
        synchronize();
        expectClose(want, input.toHost(), what + " in place");
      }
}

/// The column reduction twice with the same counters (each last block sets
/// its tile's back to zero), and with a mean: the same results, within the
/// CPU's rounding.
TEST(ReductionsCuda, ColumnSumsRepeat) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(313);
  HostTensor x(DType::BF16, {16, 256, 200});
  fillNormal(x, rng);
  HostTensor want(DType::BF16, {200}), mean(DType::BF16, {200});
  ASSERT_TRUE(ok(cpu::reduceSum(cpuCtx, x.ref, {0, 1}, false, want.ref)));
  ASSERT_TRUE(ok(cpu::reduceMean(cpuCtx, x.ref, {0, 1}, false, mean.ref)));
  DeviceTensor input(x), first(want, false), second(want, false),
      means(mean, false);
  ASSERT_TRUE(ok(cuda::sumTo(*testContext(), input.ref, first.ref)));
  ASSERT_TRUE(ok(cuda::reduceSum(*testContext(), input.ref, {0, 1}, false,
                                 second.ref)));
  ASSERT_TRUE(ok(cuda::reduceMean(*testContext(), input.ref, {0, 1}, false,
                                  means.ref)));
  synchronize();
  expectClose(want, first.toHost(), "sum_to");
  expectSameBytes(first.toHost(), second.toHost(), "reduce_sum after sum_to");
  expectClose(mean, means.toHost(), "reduce_mean");
}

TEST(ReductionsCuda, SumTo) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(311);
  const std::pair<Shape, Shape> cases[] = {
      {{8, 300, 4}, {300, 1}}, // a leading and a size-1 dimension
      {{20000, 3}, {3}},       // a large leading dimension (block per result)
      {{2, 3}, {2, 3}},        // nothing to sum
      {{4, 5}, {}},            // everything
      {{6, 1, 5}, {1, 1, 5}},  // size 1 on both sides
      {{64, 2}, {64, 1}},      // small groups, many results
      // Column sums over leading dimensions (a bias's gradient), in chunks
      // of rows whose partials the last block of each column tile adds:
      {{4, 512, 96}, {96}},    // three full column tiles, 64 chunks
      {{3, 700, 100}, {100}},  // a partial tile, a partial last chunk
      {{2, 40, 1, 33}, {1, 33}}, // a kept size-1 dimension, one chunk
  };
  for (DType dtype : kFloatTypes)
    for (const auto &[from, to] : cases) {
      HostTensor x(dtype, from), want(dtype, to);
      fillNormal(x, rng);
      ASSERT_TRUE(ok(cpu::sumTo(cpuCtx, x.ref, want.ref)));
      DeviceTensor input(x), result(want, false);
      ASSERT_TRUE(ok(cuda::sumTo(*testContext(), input.ref, result.ref)));
      synchronize();
      expectClose(want, result.toHost(),
                  std::string("sum_to ") + dtypeName(dtype));
    }
}

TEST(ReductionsCuda, CumsumMatchesCpuBits) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(317);
  const std::pair<Shape, int64_t> cases[] = {
      {{4, 32}, 1}, {{3, 4, 5}, 0}, {{3, 4, 5}, -1}, {{2, 700}, 1}, {{9}, 0}};
  for (DType dtype :
       {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32})
    for (const auto &[shape, axis] : cases)
      for (bool reverse : {false, true}) {
        std::string what = std::string("cumsum ") + dtypeName(dtype) +
                           (reverse ? " reverse" : "");
        HostTensor x(dtype, shape), want(dtype, shape);
        if (isFloat(dtype))
          fillNormal(x, rng);
        else
          fillInts(x, rng, -1000, 1000);
        ASSERT_TRUE(ok(cpu::cumsum(cpuCtx, x.ref, axis, reverse, want.ref)));
        DeviceTensor input(x), result(want, false);
        ASSERT_TRUE(ok(cuda::cumsum(*testContext(), input.ref, axis, reverse,
                                    result.ref)));
        synchronize();
        expectSameBytes(want, result.toHost(), what);
        // Written over its operand.
        ASSERT_TRUE(ok(
            cuda::cumsum(*testContext(), input.ref, axis, reverse, input.ref)));
        synchronize();
        expectSameBytes(want, input.toHost(), what + " in place");
      }
}

} // namespace
