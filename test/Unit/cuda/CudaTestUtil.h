//===- CudaTestUtil.h - comparing CUDA kernels with CPU kernels -*- C++ -*-===//
//
// Each test draws fresh random inputs on the host, runs the CPU kernel and
// the CUDA kernel on copies, and compares the results with a tolerance per
// element type; results written over an operand must match the separate
// result bit for bit. Tests skip when the machine has no usable GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_UNIT_CUDA_CUDATESTUTIL_H
#define TGC_TEST_UNIT_CUDA_CUDATESTUTIL_H

#include "cuda/CudaKernels.h"
#include "tgc/runtime/CpuKernels.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tgc::rt::test {

/// The context the CPU kernels under test (or serving as the reference)
/// run in.
inline cpu::Context cpuCtx;

/// A host tensor with its own storage.
struct HostTensor {
  std::vector<uint8_t> bytes;
  TensorRef ref;

  HostTensor(DType dtype, std::vector<int64_t> shape) {
    ref.dtype = dtype;
    ref.shape = std::move(shape);
    bytes.assign(std::max<size_t>(ref.numBytes(), 1), 0);
    ref.data = bytes.data();
  }
};

/// A device copy of a host tensor (or a zeroed device tensor of its type).
struct DeviceTensor {
  void *data = nullptr;
  TensorRef ref;

  explicit DeviceTensor(const HostTensor &host, bool copy = true) {
    ref = host.ref;
    size_t bytes = std::max<size_t>(host.ref.numBytes(), 1);
    EXPECT_EQ(cudaMalloc(&data, bytes), cudaSuccess);
    if (copy)
      EXPECT_EQ(cudaMemcpy(data, host.ref.data, host.ref.numBytes(),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    else
      EXPECT_EQ(cudaMemset(data, 0, bytes), cudaSuccess);
    ref.data = data;
  }
  ~DeviceTensor() { cudaFree(data); }
  DeviceTensor(const DeviceTensor &) = delete;

  /// Copies back into a new host tensor.
  HostTensor toHost() const {
    HostTensor host(ref.dtype, ref.shape);
    EXPECT_EQ(cudaMemcpy(host.ref.data, data, ref.numBytes(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
};

/// The CUDA context of the tests (stream 0, a cuBLASLt handle, the error
/// flag), or null when no GPU is usable.
cuda::Context *testContext();

/// Skips the test when there is no GPU.
#define TGC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::tgc::rt::test::testContext())                                       \
      GTEST_SKIP() << "no usable CUDA device";                                 \
  } while (0)

/// Waits for the context's stream and checks for errors.
void synchronize();

/// Fills a float tensor with normal draws (mean, std) or an integer tensor
/// with draws in [low, high).
void fillNormal(HostTensor &t, std::mt19937 &rng, float mean = 0.0f,
                float std = 1.0f);
void fillInts(HostTensor &t, std::mt19937 &rng, int64_t low, int64_t high);
/// A tensor of normal draws (mean, std).
HostTensor randomTensor(DType dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng, float mean = 0.0f, float std = 1.0f);
/// "what dtype", a failure's label.
std::string named(const char *what, DType dtype);

/// cuda::kIndexOutOfRange (Common.cuh holds device code, so it is not
/// included by the tests).
constexpr int kIndexOutOfRange = 1;

/// Tolerance of results stored in `dtype`, relative to the magnitude.
double toleranceFor(DType dtype);

/// Expects every element of `got` within tolerance of `want`:
/// |got - want| <= tol * (1 + |want|).
void expectNear(const HostTensor &want, const HostTensor &got,
                const std::string &what, double scale = 1.0);

/// A gtest assertion on a Status, printing its message on failure.
::testing::AssertionResult ok(const Status &status);

/// Reads the test context's device error record and clears it: returns its
/// code (cuda::ErrorCode) and, when asked, the whole record.
int takeDeviceError(cuda::DeviceError *record = nullptr);

/// Expects the same shape, type and bytes.
void expectSameBytes(const HostTensor &want, const HostTensor &got,
                     const std::string &what);

/// A CPU kernel or a CUDA launcher applied to `operands`, writing `result`.
using CpuCall =
    std::function<Status(const std::vector<TensorRef> &, TensorRef &)>;
using CudaCall = std::function<Status(
    cuda::Context &, const std::vector<TensorRef> &, TensorRef &)>;

/// Runs the CPU kernel, then the launcher on device copies of `operands`
/// into a separate result (expected near the CPU's, within `scale` times the
/// type's tolerance) and with its result over operand `over` (the same
/// buffer and shape, as the memory planner places a result that reuses a
/// dying operand), which must give the same bytes.
void expectInPlaceMatches(const std::vector<const HostTensor *> &operands,
                          size_t over, const CpuCall &cpuKernel,
                          const CudaCall &launcher, const std::string &what,
                          double scale = 1.0);

} // namespace tgc::rt::test

#endif // TGC_TEST_UNIT_CUDA_CUDATESTUTIL_H
