//===- CudaTestUtil.cpp - comparing CUDA kernels with CPU kernels ---------===//

#include "CudaTestUtil.h"

#include "cuda/BlasLt.h"

namespace tgc::rt::test {

cuda::Context *testContext() {
  static std::unique_ptr<cuda::Context> context;
  static bool probed = false;
  if (probed)
    return context.get();
  probed = true;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return nullptr;
  auto ctx = std::make_unique<cuda::Context>();
  // The backend's own binding of cuBLASLt (dlopen on a GPU, the
  // emulator's functions on the emulator), as tgc-run's.
  if (!cuda::loadBlasLt().ok())
    return nullptr;
  cublasLtHandle_t handle;
  if (cuda::blasLt().create(&handle) != CUBLAS_STATUS_SUCCESS)
    return nullptr;
  ctx->blasLt = handle;
  ctx->stream = nullptr;
  if (cudaMalloc(&ctx->deviceError, sizeof(cuda::DeviceError)) !=
          cudaSuccess ||
      cudaMemset(ctx->deviceError, 0, sizeof(cuda::DeviceError)) !=
          cudaSuccess ||
      cudaMallocHost(&ctx->hostError, sizeof(cuda::DeviceError)) !=
          cudaSuccess ||
      cudaMalloc(&ctx->reduceCounters,
                 cuda::Context::kReduceCounters * sizeof(unsigned)) !=
          cudaSuccess ||
      cudaMemset(ctx->reduceCounters, 0,
                 cuda::Context::kReduceCounters * sizeof(unsigned)) !=
          cudaSuccess)
    return nullptr;
  context = std::move(ctx);
  return context.get();
}

void synchronize() {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess)
      << cudaGetErrorString(cudaGetLastError());
}

void fillNormal(HostTensor &t, std::mt19937 &rng, float mean, float std) {
  std::normal_distribution<float> dist(mean, std);
  for (int64_t i = 0; i < t.ref.numElements(); ++i)
    storeF32(t.ref, i, dist(rng));
}

void fillInts(HostTensor &t, std::mt19937 &rng, int64_t low, int64_t high) {
  std::uniform_int_distribution<int64_t> dist(low, high - 1);
  for (int64_t i = 0; i < t.ref.numElements(); ++i)
    storeI64(t.ref, i, dist(rng));
}

HostTensor randomTensor(DType dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng, float mean, float std) {
  HostTensor t(dtype, std::move(shape));
  fillNormal(t, rng, mean, std);
  return t;
}

std::string named(const char *what, DType dtype) {
  return std::string(what) + " " + dtypeName(dtype);
}

double toleranceFor(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1.6e-2;
  case DType::F32:
    return 1e-5;
  default:
    return 0.0;
  }
}

void expectNear(const HostTensor &want, const HostTensor &got,
                const std::string &what, double scale) {
  ASSERT_EQ(want.ref.shape, got.ref.shape) << what;
  ASSERT_EQ(want.ref.dtype, got.ref.dtype) << what;
  double tol = toleranceFor(want.ref.dtype) * scale;
  int64_t n = want.ref.numElements();
  int reported = 0;
  for (int64_t i = 0; i < n && reported < 5; ++i) {
    if (isFloat(want.ref.dtype)) {
      double w = loadF32(want.ref, i), g = loadF32(got.ref, i);
      if (std::isnan(w) && std::isnan(g))
        continue;
      if (!(std::fabs(g - w) <= tol * (1.0 + std::fabs(w)))) {
        ADD_FAILURE() << what << "[" << i << "]: CUDA " << g << ", CPU " << w;
        ++reported;
      }
    } else if (loadI64(want.ref, i) != loadI64(got.ref, i)) {
      ADD_FAILURE() << what << "[" << i << "]: CUDA " << loadI64(got.ref, i)
                    << ", CPU " << loadI64(want.ref, i);
      ++reported;
    }
  }
}

::testing::AssertionResult ok(const Status &status) {
  if (status.ok())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.error;
}

int takeDeviceError(cuda::DeviceError *record) {
  cuda::DeviceError error;
  error.code = -1;
  EXPECT_EQ(cudaMemcpy(&error, testContext()->deviceError, sizeof(error),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  if (record)
    *record = error;
  int code = error.code;
  EXPECT_EQ(cudaMemset(testContext()->deviceError, 0,
                       sizeof(cuda::DeviceError)),
            cudaSuccess);
  return code;
}

/// Expects the same shape, type and bytes.
void expectSameBytes(const HostTensor &want, const HostTensor &got,
                     const std::string &what) {
  ASSERT_EQ(want.ref.shape, got.ref.shape) << what;
  ASSERT_EQ(want.ref.dtype, got.ref.dtype) << what;
  const uint8_t *w = static_cast<const uint8_t *>(want.ref.data);
  const uint8_t *g = static_cast<const uint8_t *>(got.ref.data);
  size_t size = dtypeSize(want.ref.dtype);
  for (size_t i = 0; i < want.ref.numBytes(); ++i)
    if (w[i] != g[i]) {
      ADD_FAILURE() << what << ": element " << i / size << " differs";
      return;
    }
}

void expectInPlaceMatches(const std::vector<const HostTensor *> &operands,
                          size_t over, const CpuCall &cpuKernel,
                          const CudaCall &launcher, const std::string &what,
                          double scale) {
  const TensorRef &target = operands[over]->ref;
  HostTensor want(target.dtype, target.shape);
  std::vector<TensorRef> refs;
  for (const HostTensor *t : operands)
    refs.push_back(t->ref);
  Status status = cpuKernel(refs, want.ref);
  ASSERT_TRUE(status.ok()) << what << " on the CPU: " << status.error;

  auto run = [&](bool inPlace) {
    std::vector<std::unique_ptr<DeviceTensor>> device;
    std::vector<TensorRef> refs;
    for (const HostTensor *t : operands) {
      device.push_back(std::make_unique<DeviceTensor>(*t));
      refs.push_back(device.back()->ref);
    }
    DeviceTensor separate(want, false);
    TensorRef result = inPlace ? refs[over] : separate.ref;
    Status status = launcher(*testContext(), refs, result);
    EXPECT_TRUE(status.ok()) << what << ": " << status.error;
    synchronize();
    EXPECT_EQ(takeDeviceError(), 0) << what;
    return inPlace ? device[over]->toHost() : separate.toHost();
  };
  HostTensor got = run(false);
  expectNear(want, got, what, scale);
  expectSameBytes(got, run(true), what + " in place");
}

} // namespace tgc::rt::test
