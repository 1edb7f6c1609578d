//===- ShapeTest.cpp - reshape, transpose, slices, concat, constants ------===//
//
// Tests the data-movement kernels against index arithmetic written out in
// the test, on several element types (the kernels move bytes, so i1, i64
// and bf16 all go through them): every permutation of a rank-3 transpose,
// slices and their gradient, split/concat round trips along each axis,
// broadcast_to, results overlapping their operand, tg.constant and tg.fill.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "TestUtil.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {
/// 0, 1, 2, ... (mod 128 so that every integer type holds them).
HostTensor iota(DType dtype, Shape shape) {
  HostTensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i)
    t.set(i, dtype == DType::I1 ? double(i % 3 == 0) : double(i % 128));
  return t;
}

const DType kMovedTypes[] = {DType::F32, DType::BF16, DType::I64, DType::I1};
} // namespace

TEST(Reshape, KeepsRowMajorOrder) {
  for (DType dtype : kMovedTypes) {
    HostTensor x = iota(dtype, {2, 3, 4});
    HostTensor out(dtype, {6, 4});
    ASSERT_OK(cpu::reshape(cpuCtx, x, out));
    EXPECT_EQ(out.values(), x.values());
    HostTensor wrong(dtype, {5, 5});
    EXPECT_FAILS(cpu::reshape(cpuCtx, x, wrong));
  }
}

TEST(Transpose, EveryPermutationOfRank3) {
  for (DType dtype : kMovedTypes) {
    Shape shape = {2, 3, 4};
    HostTensor x = iota(dtype, shape);
    Shape perm = {0, 1, 2};
    do {
      Shape outShape = {shape[perm[0]], shape[perm[1]], shape[perm[2]]};
      HostTensor out(dtype, outShape);
      ASSERT_OK(cpu::transpose(cpuCtx, x, perm, out));
      Shape inStrides = stridesOf(shape);
      std::vector<double> v = x.values(), expected;
      for (int64_t i = 0; i < out.size(); ++i) {
        Shape index = unflatten(i, outShape);
        int64_t src = 0;
        for (size_t k = 0; k < 3; ++k)
          src += index[k] * inStrides[perm[k]];
        expected.push_back(v[src]);
      }
      EXPECT_EQ(out.values(), expected) << dtypeName(dtype);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  HostTensor x(DType::F32, {2, 3}), out(DType::F32, {3, 2});
  EXPECT_FAILS(cpu::transpose(cpuCtx, x, {0, 0}, out));
  EXPECT_FAILS(cpu::transpose(cpuCtx, x, {1, 0, 2}, out));
  // (A permutation leaving the result's shape wrong is the loader's error.)
}

TEST(Transpose, InPlaceOfASquareMatrix) {
  HostTensor x = iota(DType::F32, {3, 3});
  ASSERT_OK(cpu::transpose(cpuCtx, x, {1, 0}, x));
  EXPECT_EQ(x.values(), (std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Slice, BoxAndGradient) {
  for (DType dtype : kMovedTypes) {
    HostTensor x = iota(dtype, {4, 5, 3});
    Shape offsets = {1, 2, 0}, box = {2, 3, 2};
    HostTensor out(dtype, box);
    ASSERT_OK(cpu::slice(cpuCtx, x, offsets, out));
    std::vector<double> v = x.values(), expected;
    for (int64_t i = 0; i < out.size(); ++i) {
      Shape index = unflatten(i, box);
      expected.push_back(v[((index[0] + 1) * 5 + index[1] + 2) * 3 + index[2]]);
    }
    EXPECT_EQ(out.values(), expected) << dtypeName(dtype);
    HostTensor outside(dtype, {2, 4, 2});
    EXPECT_FAILS(cpu::slice(cpuCtx, x, offsets, outside));
    EXPECT_FAILS(cpu::slice(cpuCtx, x, {1, 2}, out));
    EXPECT_FAILS(cpu::slice(cpuCtx, x, {-1, 0, 0}, out));
  }
  // slice_grad puts the box into zeros.
  std::mt19937 rng(59);
  HostTensor grad = randomTensor(rng, DType::F16, {2, 3});
  HostTensor full = HostTensor::of(DType::F16, {3, 5},
                                   std::vector<double>(15, 9.0));
  ASSERT_OK(cpu::sliceGrad(cpuCtx, grad, {1, 2}, full));
  std::vector<double> g = grad.values(), expected(15, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expected[(i + 1) * 5 + j + 2] = g[i * 3 + j];
  EXPECT_EQ(full.values(), expected);
  HostTensor small(DType::F16, {3, 4});
  EXPECT_FAILS(cpu::sliceGrad(cpuCtx, grad, {1, 2}, small));
}

TEST(SplitConcat, RoundTripAlongEachAxis) {
  for (DType dtype : kMovedTypes) {
    Shape shape = {4, 6, 5};
    HostTensor x = iota(dtype, shape);
    for (int64_t axis : {0, 1, 2, -1}) {
      int64_t dim = axis < 0 ? axis + 3 : axis;
      Shape sizes = {1, shape[dim] - 3, 2};
      std::vector<HostTensor> pieces;
      std::vector<TensorRef> refs;
      for (int64_t size : sizes) {
        Shape pieceShape = shape;
        pieceShape[dim] = size;
        pieces.emplace_back(dtype, pieceShape);
      }
      for (HostTensor &p : pieces)
        refs.push_back(p.ref());
      ASSERT_OK(cpu::split(cpuCtx, x, axis, refs));
      // Each piece is the slice at the running offset.
      int64_t start = 0;
      for (HostTensor &p : pieces) {
        Shape offsets = {0, 0, 0};
        offsets[dim] = start;
        HostTensor expected(dtype, p.shape());
        ASSERT_OK(cpu::slice(cpuCtx, x, offsets, expected));
        EXPECT_EQ(p.values(), expected.values());
        start += p.shape()[dim];
      }
      HostTensor joined(dtype, shape);
      ASSERT_OK(cpu::concat(cpuCtx, refs, axis, joined));
      EXPECT_EQ(joined.values(), x.values()) << "axis " << axis;
      // Pieces that do not add up are rejected.
      std::vector<TensorRef> missing(refs.begin(), refs.end() - 1);
      EXPECT_FAILS(cpu::concat(cpuCtx, missing, axis, joined));
      EXPECT_FAILS(cpu::split(cpuCtx, x, axis, missing));
    }
  }
}

TEST(BroadcastTo, RepeatsSizeOneAndLeadingDimensions) {
  for (DType dtype : kMovedTypes) {
    const std::pair<Shape, Shape> cases[] = {
        {{3}, {2, 3}}, {{2, 1}, {2, 4}}, {{}, {2, 2}}, {{1, 3, 1}, {2, 3, 2}}};
    for (const auto &[from, to] : cases) {
      HostTensor x = iota(dtype, from);
      HostTensor out(dtype, to);
      ASSERT_OK(cpu::broadcastTo(cpuCtx, x, out));
      std::vector<double> v = x.values(), expected;
      for (int64_t i = 0; i < out.size(); ++i)
        expected.push_back(v[broadcastFlat(unflatten(i, to), from)]);
      EXPECT_EQ(out.values(), expected);
    }
  }
  HostTensor x(DType::F32, {3}), out(DType::F32, {3, 2});
  EXPECT_FAILS(cpu::broadcastTo(cpuCtx, x, out));
}

TEST(Constant, CopiesBytes) {
  float values[] = {1.5f, -2.0f, 3.25f, 0.0f};
  HostTensor out(DType::F32, {2, 2});
  ASSERT_OK(cpu::constant(cpuCtx, values, sizeof(values), out));
  EXPECT_EQ(out.values(), (std::vector<double>{1.5, -2.0, 3.25, 0.0}));
  EXPECT_FAILS(cpu::constant(cpuCtx, values, sizeof(values) - 4, out));
}

TEST(Fill, ConvertsAsCast) {
  struct Case {
    DType dtype;
    double value, expected;
  } cases[] = {
      {DType::F32, 0.1, double(0.1f)},
      {DType::F16, 1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-10}, // one rounding
      {DType::BF16, 1.0 + 0x1p-8 + 0x1p-40, 1.0 + 0x1p-7},  // one rounding
      {DType::F16, 1e6, std::numeric_limits<double>::infinity()},
      {DType::I64, -3.9, -3},
      {DType::I32, 1e12, 2147483647.0},
      {DType::I32, 16777217.0, 16777217.0},
      {DType::I8, -1000.0, -128},
      {DType::U8, 7.9, 7}, // was left unwritten (found by -Werror=switch)
      {DType::U8, 300.0, 255},
      {DType::I1, 0.5, 1},
      {DType::I1, 0.0, 0},
  };
  for (const Case &c : cases) {
    HostTensor out(c.dtype, {3, 2});
    ASSERT_OK(cpu::fill(cpuCtx, c.value, out));
    EXPECT_EQ(out.values(), std::vector<double>(6, c.expected))
        << dtypeName(c.dtype) << " " << c.value;
  }
  HostTensor big(DType::I64, {1});
  ASSERT_OK(cpu::fill(cpuCtx, 0x1p40 + 1, big));
  EXPECT_EQ(loadI64(big, 0), (int64_t(1) << 40) + 1);
}
