//===- ShapeCudaTest.cpp - CUDA data-movement kernels against the CPU -----===//
//
// Runs every shape launcher and its CPU kernel on the same random tensors
// of element sizes 1, 2, 4 and 8 and compares the bytes: reshape,
// transpose, slice, slice_grad (which must zero what it does not place),
// split, concat, broadcast_to, constant and fill (every element type, with
// values that round, saturate or are not numbers). Results that overlap
// their operand (a square transpose in place, a shifted reshape, a concat
// whose piece lives in the result) check the launchers' copies.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <limits>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {

using Shape = std::vector<int64_t>;



/// Random contents of any element type.
void fillRandom(HostTensor &t, std::mt19937 &rng) {
  if (isFloat(t.ref.dtype))
    fillNormal(t, rng);
  else if (t.ref.dtype == DType::I1)
    fillInts(t, rng, 0, 2);
  else
    fillInts(t, rng, -100000, 100000);
}

/// One element type of each size.
const DType kSizedTypes[] = {DType::F32, DType::BF16, DType::I64, DType::I1};

TEST(ShapeCuda, Reshape) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(201);
  for (DType dtype : kSizedTypes) {
    HostTensor x(dtype, {6, 4}), want(dtype, {3, 8});
    fillRandom(x, rng);
    ASSERT_TRUE(ok(cpu::reshape(cpuCtx, x.ref, want.ref)));
    DeviceTensor input(x), result(want, false);
    ASSERT_TRUE(ok(cuda::reshape(*testContext(), input.ref, result.ref)));
    synchronize();
    expectSameBytes(want, result.toHost(),
                    std::string("reshape ") + dtypeName(dtype));
  }
}

TEST(ShapeCuda, ReshapeIntoAShiftedOverlap) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(203);
  HostTensor x(DType::F32, {100}), want(DType::F32, {10, 10});
  fillNormal(x, rng);
  ASSERT_TRUE(ok(cpu::reshape(cpuCtx, x.ref, want.ref)));
  HostTensor big(DType::F32, {120});
  std::memcpy(big.ref.data, x.ref.data, x.ref.numBytes());
  DeviceTensor buffer(big);
  TensorRef input = x.ref, result = want.ref;
  input.data = buffer.data;
  result.data = static_cast<float *>(buffer.data) + 7;
  ASSERT_TRUE(ok(cuda::reshape(*testContext(), input, result)));
  synchronize();
  HostTensor got(DType::F32, {10, 10});
  ASSERT_EQ(cudaMemcpy(got.ref.data, result.data, got.ref.numBytes(),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  expectSameBytes(want, got, "reshape shifted");
}

TEST(ShapeCuda, Transpose) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(205);
  const std::pair<Shape, Shape> cases[] = {
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{2, 3, 4, 5}, {0, 1, 2, 3}},
      {{7, 9}, {1, 0}},
      {{1, 6, 1}, {2, 0, 1}},
      // Attention's heads: the innermost dimension stays innermost, so the
      // copy moves 16-byte units (an f32 one of 4 elements, bf16 of 8).
      {{2, 5, 3, 64}, {0, 2, 1, 3}},
      {{3, 2, 24}, {1, 0, 2}},
  };
  for (DType dtype : kSizedTypes)
    for (const auto &[shape, permutation] : cases) {
      Shape outShape;
      for (int64_t p : permutation)
        outShape.push_back(shape[p]);
      HostTensor x(dtype, shape), want(dtype, outShape);
      fillRandom(x, rng);
      ASSERT_TRUE(ok(cpu::transpose(cpuCtx, x.ref, permutation, want.ref)));
      DeviceTensor input(x), result(want, false);
      ASSERT_TRUE(ok(
          cuda::transpose(*testContext(), input.ref, permutation, result.ref)));
      synchronize();
      expectSameBytes(want, result.toHost(),
                      std::string("transpose ") + dtypeName(dtype));
    }
}

TEST(ShapeCuda, TransposeInPlace) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(207);
  HostTensor x(DType::F16, {33, 33}), want(DType::F16, {33, 33});
  fillNormal(x, rng);
  ASSERT_TRUE(ok(cpu::transpose(cpuCtx, x.ref, {1, 0}, want.ref)));
  DeviceTensor buffer(x);
  ASSERT_TRUE(
      ok(cuda::transpose(*testContext(), buffer.ref, {1, 0}, buffer.ref)));
  synchronize();
  expectSameBytes(want, buffer.toHost(), "transpose in place");
}

TEST(ShapeCuda, SliceAndSliceGrad) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(209);
  const Shape full = {5, 6, 7}, box = {3, 2, 4}, offsets = {1, 2, 3};
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    HostTensor x(dtype, full), want(dtype, box);
    fillNormal(x, rng);
    ASSERT_TRUE(ok(cpu::slice(cpuCtx, x.ref, offsets, want.ref)));
    DeviceTensor input(x), result(want, false);
    ASSERT_TRUE(
        ok(cuda::slice(*testContext(), input.ref, offsets, result.ref)));
    synchronize();
    expectSameBytes(want, result.toHost(),
                    std::string("slice ") + dtypeName(dtype));

    // slice_grad places the box into zeros: start from garbage.
    HostTensor g(dtype, box), wantGrad(dtype, full), garbage(dtype, full);
    fillNormal(g, rng);
    fillNormal(garbage, rng);
    ASSERT_TRUE(ok(cpu::sliceGrad(cpuCtx, g.ref, offsets, wantGrad.ref)));
    DeviceTensor grad(g), gradResult(garbage);
    ASSERT_TRUE(
        ok(cuda::sliceGrad(*testContext(), grad.ref, offsets, gradResult.ref)));
    synchronize();
    expectSameBytes(wantGrad, gradResult.toHost(),
                    std::string("slice_grad ") + dtypeName(dtype));
  }
}

TEST(ShapeCuda, Split) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(211);
  for (DType dtype : kSizedTypes)
    for (int64_t axis : {1, -2}) {
      HostTensor x(dtype, {4, 9, 3});
      fillRandom(x, rng);
      HostTensor a(dtype, {4, 3, 3}), b(dtype, {4, 0, 3}), c(dtype, {4, 6, 3});
      std::vector<TensorRef> want = {a.ref, b.ref, c.ref};
      ASSERT_TRUE(ok(cpu::split(cpuCtx, x.ref, axis, want)));
      DeviceTensor input(x), da(a, false), db(b, false), dc(c, false);
      std::vector<TensorRef> pieces = {da.ref, db.ref, dc.ref};
      ASSERT_TRUE(ok(cuda::split(*testContext(), input.ref, axis, pieces)));
      synchronize();
      std::string what = std::string("split ") + dtypeName(dtype);
      expectSameBytes(a, da.toHost(), what + " piece 0");
      expectSameBytes(b, db.toHost(), what + " piece 1");
      expectSameBytes(c, dc.toHost(), what + " piece 2");
    }
}

/// Split and concat of attention's Q, K and V (pieces whose spans line up
/// with 16 bytes: one launch of 16-byte units), of pieces that do not line
/// up, of a piece at an address off 16 bytes, and of more pieces than one
/// launch takes (a copy each): the CPU's bytes in every case.
TEST(ShapeCuda, SplitAndConcatInOneLaunch) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(217);
  struct Case {
    Shape whole;
    int64_t axis;
    std::vector<int64_t> widths;
    size_t offsetBytes; // of the first piece's device address
  };
  const Case cases[] = {
      {{2, 5, 3 * 40}, 2, {40, 40, 40}, 0},
      {{2, 5, 12}, 2, {3, 4, 5}, 0},
      {{4, 6, 16}, 1, {2, 0, 4}, 0},
      {{2, 3, 48}, 2, {16, 16, 16}, 4},
      {{3, 34}, 1, std::vector<int64_t>(17, 2), 0},
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::I1})
    for (const Case &c : cases) {
      std::string what = std::string(dtypeName(dtype)) + " " +
                         std::to_string(c.widths.size()) + " pieces";
      HostTensor whole(dtype, c.whole);
      fillRandom(whole, rng);
      std::vector<HostTensor> want;
      for (int64_t w : c.widths) {
        Shape shape = c.whole;
        shape[c.axis] = w;
        want.emplace_back(dtype, shape);
      }
      std::vector<TensorRef> wantRefs;
      for (HostTensor &t : want)
        wantRefs.push_back(t.ref);
      ASSERT_TRUE(ok(cpu::split(cpuCtx, whole.ref, c.axis, wantRefs)));
      // The pieces in one device buffer, the first `offsetBytes` in.
      size_t total = c.offsetBytes;
      for (const HostTensor &t : want)
        total += (t.ref.numBytes() + 15) / 16 * 16 + 16;
      HostTensor buffer(DType::I8, {int64_t(total)});
      DeviceTensor pieces(buffer, false), input(whole);
      std::vector<TensorRef> deviceRefs;
      size_t at = c.offsetBytes;
      for (const HostTensor &t : want) {
        TensorRef ref = t.ref;
        ref.data = static_cast<char *>(pieces.data) + at;
        deviceRefs.push_back(ref);
        at += (t.ref.numBytes() + 15) / 16 * 16 + 16;
      }
      ASSERT_TRUE(ok(cuda::split(*testContext(), input.ref, c.axis,
                                 deviceRefs)));
      DeviceTensor joined(whole, false);
      ASSERT_TRUE(ok(cuda::concat(*testContext(), deviceRefs, c.axis,
                                  joined.ref)));
      synchronize();
      for (size_t k = 0; k < want.size(); ++k) {
        HostTensor got(dtype, want[k].ref.shape);
        ASSERT_EQ(cudaMemcpy(got.ref.data, deviceRefs[k].data,
                             got.ref.numBytes(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        expectSameBytes(want[k], got, "split " + what);
      }
      expectSameBytes(whole, joined.toHost(), "concat " + what);
    }
}

TEST(ShapeCuda, Concat) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(213);
  for (DType dtype : kSizedTypes) {
    // Along the first axis, then along the last (as -1).
    HostTensor a(dtype, {2, 5}), b(dtype, {3, 5}), want(dtype, {5, 5});
    fillRandom(a, rng);
    fillRandom(b, rng);
    ASSERT_TRUE(ok(cpu::concat(cpuCtx, {a.ref, b.ref}, 0, want.ref)));
    DeviceTensor da(a), db(b), result(want, false);
    ASSERT_TRUE(
        ok(cuda::concat(*testContext(), {da.ref, db.ref}, 0, result.ref)));
    synchronize();
    expectSameBytes(want, result.toHost(),
                    std::string("concat axis 0 ") + dtypeName(dtype));

    HostTensor c(dtype, {3, 2, 1}), d(dtype, {3, 2, 4}), e(dtype, {3, 2, 2}),
        want2(dtype, {3, 2, 7});
    fillRandom(c, rng);
    fillRandom(d, rng);
    fillRandom(e, rng);
    ASSERT_TRUE(ok(cpu::concat(cpuCtx, {c.ref, d.ref, e.ref}, -1, want2.ref)));
    DeviceTensor dc(c), dd(d), de(e), result2(want2, false);
    ASSERT_TRUE(ok(cuda::concat(*testContext(), {dc.ref, dd.ref, de.ref}, -1,
                                result2.ref)));
    synchronize();
    expectSameBytes(want2, result2.toHost(),
                    std::string("concat axis -1 ") + dtypeName(dtype));
  }
}

TEST(ShapeCuda, ConcatWithAPieceInsideTheResult) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(215);
  HostTensor a(DType::F32, {4, 3}), b(DType::F32, {4, 5}),
      want(DType::F32, {4, 8});
  fillNormal(a, rng);
  fillNormal(b, rng);
  ASSERT_TRUE(ok(cpu::concat(cpuCtx, {a.ref, b.ref}, 1, want.ref)));
  // `b` lives at the start of the result's buffer.
  HostTensor start(DType::F32, {4, 8});
  std::memcpy(start.ref.data, b.ref.data, b.ref.numBytes());
  DeviceTensor result(start), da(a);
  TensorRef inB = b.ref;
  inB.data = result.data;
  ASSERT_TRUE(ok(cuda::concat(*testContext(), {da.ref, inB}, 1, result.ref)));
  synchronize();
  expectSameBytes(want, result.toHost(), "concat over a piece");
}

TEST(ShapeCuda, BroadcastTo) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(217);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 1, 5}, {2, 3, 4, 5}}, {{}, {4}}, {{6}, {6}}, {{2, 1}, {2, 9}}};
  for (DType dtype : kSizedTypes)
    for (const auto &[from, to] : cases) {
      HostTensor x(dtype, from), want(dtype, to);
      fillRandom(x, rng);
      ASSERT_TRUE(ok(cpu::broadcastTo(cpuCtx, x.ref, want.ref)));
      DeviceTensor input(x), result(want, false);
      ASSERT_TRUE(ok(cuda::broadcastTo(*testContext(), input.ref, result.ref)));
      synchronize();
      expectSameBytes(want, result.toHost(),
                      std::string("broadcast_to ") + dtypeName(dtype));
    }
}

// The constant kernel copies from the device copy of the executable's
// constants (Context::uploadConstants), not from host memory.
TEST(ShapeCuda, ConstantCopiesDeviceBytes) {
  TGC_REQUIRE_GPU();
  std::mt19937 rng(219);
  for (DType dtype : kSizedTypes) {
    HostTensor bytes(dtype, {10, 3}), want(dtype, {10, 3});
    fillRandom(bytes, rng);
    ASSERT_TRUE(
        ok(cpu::constant(cpuCtx, bytes.ref.data, bytes.ref.numBytes(), want.ref)));
    DeviceTensor source(bytes), result(want, false);
    ASSERT_TRUE(ok(cuda::constant(*testContext(), source.ref.data,
                                  bytes.ref.numBytes(), result.ref)));
    synchronize();
    expectSameBytes(want, result.toHost(),
                    std::string("constant ") + dtypeName(dtype));
  }
}

TEST(ShapeCuda, FillEveryTypeAsCast) {
  TGC_REQUIRE_GPU();
  const double values[] = {0.0,
                           -0.0,
                           1.5,
                           -2.75,
                           0.1,
                           std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           1e10,
                           -1e10,
                           65520.0,
                           1.0 + 1.0 / 2048 + 1e-12,
                           1e-8,
                           300.0,
                           -129.5,
                           1e300};
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                         DType::I32, DType::I8,  DType::I1};
  for (DType dtype : types)
    for (double value : values) {
      HostTensor want(dtype, {3, 67});
      ASSERT_TRUE(ok(cpu::fill(cpuCtx, value, want.ref)));
      DeviceTensor result(want, false);
      ASSERT_TRUE(ok(cuda::fill(*testContext(), value, result.ref)));
      synchronize();
      expectSameBytes(want, result.toHost(),
                      std::string("fill ") + std::to_string(value) + " " +
                          dtypeName(dtype));
    }
}

} // namespace
