//===- TestUtil.h - owning tensors and checks for kernel tests --*- C++ -*-===//
//
// What the runtime kernel tests share: a tensor that owns its storage,
// seeded random tensors whose values are exactly representable in their
// storage type (so double-precision references see the very inputs the
// kernel saw), elementwise comparison with per-type tolerances, naive index
// arithmetic for the references, a central finite-difference check of a
// gradient kernel against its forward kernel, and a check that a kernel
// writing its result over an operand gives the bytes it gives out of place.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_UNIT_RUNTIME_TESTUTIL_H
#define TGC_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Tensor.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tgc::rt::test {

using Shape = std::vector<int64_t>;

/// The context the CPU kernels under test (or serving as the reference)
/// run in.
inline cpu::Context cpuCtx;

/// A dense tensor owning its (8-byte aligned) storage.
class HostTensor {
public:
  HostTensor(DType dtype, Shape shape) {
    ref_.dtype = dtype;
    ref_.shape = std::move(shape);
    storage_.assign((ref_.numBytes() + 7) / 8 + 1, 0);
    ref_.data = storage_.data();
  }
  HostTensor(const HostTensor &other)
      : storage_(other.storage_), ref_(other.ref_) {
    ref_.data = storage_.data();
  }
  HostTensor &operator=(const HostTensor &other) {
    storage_ = other.storage_;
    ref_ = other.ref_;
    ref_.data = storage_.data();
    return *this;
  }

  /// A tensor with the given values, converted to `dtype` as tg.cast would.
  static HostTensor of(DType dtype, Shape shape,
                       const std::vector<double> &values) {
    HostTensor t(dtype, std::move(shape));
    EXPECT_EQ(int64_t(values.size()), t.size());
    for (int64_t i = 0; i < t.size() && i < int64_t(values.size()); ++i)
      t.set(i, values[i]);
    return t;
  }

  TensorRef &ref() { return ref_; }
  const TensorRef &ref() const { return ref_; }
  operator TensorRef &() { return ref_; }
  operator const TensorRef &() const { return ref_; }

  int64_t size() const { return ref_.numElements(); }
  DType dtype() const { return ref_.dtype; }
  const Shape &shape() const { return ref_.shape; }

  double get(int64_t i) const {
    return isFloat(ref_.dtype) ? double(loadF32(ref_, i))
                               : double(loadI64(ref_, i));
  }
  void set(int64_t i, double value) {
    if (isFloat(ref_.dtype))
      storeF32(ref_, i, float(value));
    else
      storeI64(ref_, i, int64_t(value));
  }
  std::vector<double> values() const {
    std::vector<double> result(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i)
      result[i] = get(i);
    return result;
  }

private:
  std::vector<uint64_t> storage_;
  TensorRef ref_;
};

inline std::vector<double> randomValues(std::mt19937 &rng, int64_t count,
                                        double low = -1.0, double high = 1.0) {
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &v : values)
    v = dist(rng);
  return values;
}

inline int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// A random float tensor; its values() are exactly what is stored.
inline HostTensor randomTensor(std::mt19937 &rng, DType dtype, Shape shape,
                               double low = -1.0, double high = 1.0) {
  int64_t count = numElements(shape);
  return HostTensor::of(dtype, std::move(shape),
                        randomValues(rng, count, low, high));
}

/// Relative tolerance for results stored in `dtype` (a few ulps of the
/// type, so one rounding on store passes but a wrong formula does not).
inline double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1.6e-2;
  default:
    return 2e-5;
  }
}

/// Expects |actual - expected| <= atol + rtol * |expected| elementwise.
inline void expectClose(const std::vector<double> &actual,
                        const std::vector<double> &expected, double rtol,
                        double atol, const std::string &what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    bool bothNaN = std::isnan(actual[i]) && std::isnan(expected[i]);
    bool sameInf = std::isinf(expected[i]) && actual[i] == expected[i];
    double diff = std::fabs(actual[i] - expected[i]);
    if (!bothNaN && !sameInf && !(diff <= atol + rtol * std::fabs(expected[i]))) {
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i]
                    << ", expected " << expected[i];
      ++failures;
    }
  }
}

/// Row-major strides of `shape`.
inline Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

/// The multi-index of flat position `flat` in `shape`.
inline Shape unflatten(int64_t flat, const Shape &shape) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return index;
}

/// The flat position in `from` read at multi-index `index` of the larger
/// shape it broadcasts to (trailing alignment, size-1 dimensions repeat).
inline int64_t broadcastFlat(const Shape &index, const Shape &from) {
  size_t lead = index.size() - from.size();
  int64_t flat = 0;
  for (size_t d = 0; d < from.size(); ++d)
    flat = flat * from[d] + (from[d] == 1 ? 0 : index[lead + d]);
  return flat;
}

/// sum(values * cotangent) in double: the scalar loss whose gradient the
/// gradient kernels compute when fed `cotangent`.
inline double dotLoss(const HostTensor &out,
                      const std::vector<double> &cotangent) {
  double sum = 0.0;
  for (int64_t i = 0; i < out.size(); ++i)
    sum += out.get(i) * cotangent[i];
  return sum;
}

/// Checks `analytic`, the gradient of `loss` with respect to the f32 tensor
/// `x`, against central finite differences: each element of `x` is moved by
/// +-eps (the stored perturbation is used as the step) and `loss` re-run.
inline void checkGradient(HostTensor &x, const std::function<double()> &loss,
                          const std::vector<double> &analytic,
                          const std::string &what, double eps = 1e-3,
                          double rtol = 1e-2, double atol = 2e-3) {
  ASSERT_EQ(int64_t(analytic.size()), x.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < x.size() && failures < 5; ++i) {
    double original = x.get(i);
    x.set(i, original + eps);
    double up = x.get(i);
    double lossUp = loss();
    x.set(i, original - eps);
    double down = x.get(i);
    double lossDown = loss();
    x.set(i, original);
    double numeric = (lossUp - lossDown) / (up - down);
    double scale = std::max(std::fabs(numeric), std::fabs(analytic[i]));
    if (!(std::fabs(numeric - analytic[i]) <= atol + rtol * scale)) {
      ADD_FAILURE() << what << " element " << i << ": analytic "
                    << analytic[i] << ", finite difference " << numeric;
      ++failures;
    }
  }
}

/// Expects the same type, shape and bytes.
inline void expectSameBytes(const HostTensor &want, const HostTensor &got,
                            const std::string &what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  size_t size = dtypeSize(want.dtype());
  const uint8_t *w = static_cast<const uint8_t *>(want.ref().data);
  const uint8_t *g = static_cast<const uint8_t *>(got.ref().data);
  for (size_t i = 0; i < want.ref().numBytes(); ++i)
    if (w[i] != g[i]) {
      ADD_FAILURE() << what << ": element " << i / size << " differs";
      return;
    }
}

/// A kernel applied to `operands`, writing `result`.
using KernelCall =
    std::function<Status(const std::vector<TensorRef> &, TensorRef &)>;

/// Runs `kernel` once into a separate result and once with its result over
/// operand `over` (the same buffer and shape, as the memory planner places
/// a result that reuses a dying operand; `resultType`, if given, of the
/// same width), and expects identical bytes.
inline void expectInPlaceMatches(const std::vector<HostTensor> &operands,
                                 size_t over, const KernelCall &kernel,
                                 const std::string &what,
                                 std::optional<DType> resultType = {}) {
  DType type = resultType.value_or(operands[over].dtype());
  ASSERT_EQ(dtypeSize(type), dtypeSize(operands[over].dtype())) << what;
  HostTensor separate(type, operands[over].shape());
  std::vector<TensorRef> refs;
  for (const HostTensor &t : operands)
    refs.push_back(t.ref());
  Status status = kernel(refs, separate.ref());
  ASSERT_TRUE(status.ok()) << what << ": " << status.error;

  std::vector<HostTensor> copies = operands;
  refs.clear();
  for (const HostTensor &t : copies)
    refs.push_back(t.ref());
  TensorRef result = copies[over].ref();
  result.dtype = type;
  status = kernel(refs, result);
  ASSERT_TRUE(status.ok()) << what << " in place: " << status.error;
  HostTensor inPlace(type, operands[over].shape());
  std::memcpy(inPlace.ref().data, result.data, result.numBytes());
  expectSameBytes(separate, inPlace, what + " in place");
}

/// Asserts that a kernel succeeded, printing its error otherwise.
#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    ::tgc::rt::Status status_ = (expr);                                        \
    ASSERT_TRUE(status_.ok()) << status_.error;                                \
  } while (false)

#define EXPECT_FAILS(expr)                                                     \
  do {                                                                         \
    ::tgc::rt::Status status_ = (expr);                                        \
    EXPECT_FALSE(status_.ok()) << #expr " unexpectedly succeeded";             \
  } while (false)

} // namespace tgc::rt::test

#endif // TGC_TEST_UNIT_RUNTIME_TESTUTIL_H
