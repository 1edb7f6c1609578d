//===- EmulatorTest.cpp - the CUDA emulator against CUDA's semantics ------===//
//
// The emulator is what CI runs the CUDA backend on, so it must keep CUDA's
// promises (index variables, __syncthreads and shuffles as rendezvous,
// cuBLASLt's column-major contract) and report what a GPU would get wrong
// (a barrier some threads skip, a host pointer handed to a kernel, a copy
// past an allocation, a GEMM on pointers less aligned than promised), and
// runs streams as late as CUDA allows, so that a missing synchronization
// shows.
// Kernels are written here as CUDA device code and launched as the lowered
// sources launch them. Failures that poison the emulated context (sticky
// errors, as on a GPU) run in a child process (EXPECT_EXIT).
//
//===----------------------------------------------------------------------===//

#include "tgc/cuda-emu/Device.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

template <typename T> T *deviceArray(size_t n) {
  void *data = nullptr;
  EXPECT_EQ(cudaMalloc(&data, n * sizeof(T)), cudaSuccess);
  return static_cast<T *>(data);
}

template <typename T> std::vector<T> toHost(const T *device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

__global__ void writeIndices(int *out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned perBlock = blockDim.x * blockDim.y * blockDim.z;
  out[block * perBlock + thread] = int(block * 1000 + thread);
}

TEST(CudaEmulator, IndexVariablesCoverEveryThreadOnce) {
  dim3 grid(2, 3, 1), block(4, 2, 2);
  int *out = deviceArray<int>(6 * 16);
  ::tgc::emu::launch("writeIndices", writeIndices, grid, block, 0,
                     nullptr)(out);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int> host = toHost(out, 6 * 16);
  for (int b = 0; b < 6; ++b)
    for (int t = 0; t < 16; ++t)
      EXPECT_EQ(host[b * 16 + t], b * 1000 + t);
  cudaFree(out);
}

/// Reverses 256 values through shared memory: wrong without a barrier
/// that really waits for every thread.
__global__ void reverseInShared(const int *in, int *out) {
  __shared__ int staged[256];
  staged[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = staged[blockDim.x - 1 - threadIdx.x];
}

TEST(CudaEmulator, SyncthreadsIsARendezvous) {
  std::vector<int> values(256);
  for (int i = 0; i < 256; ++i)
    values[i] = i * 7 + 1;
  int *in = deviceArray<int>(256), *out = deviceArray<int>(256);
  ASSERT_EQ(cudaMemcpy(in, values.data(), 256 * sizeof(int),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ::tgc::emu::launch("reverseInShared", reverseInShared, 1, 256, 0,
                     nullptr)(in, out);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int> host = toHost(out, 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(host[i], values[255 - i]);
  cudaFree(in);
  cudaFree(out);
}

/// Butterfly sums over each warp and over 8-lane segments.
__global__ void warpSums(float *whole, float *segments) {
  float value = float(threadIdx.x + 1);
  float sum = value;
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  whole[threadIdx.x] = sum;
  float part = value;
  for (int offset = 4; offset > 0; offset /= 2)
    part += __shfl_xor_sync(0xffffffffu, part, offset, 8);
  segments[threadIdx.x] = part;
}

TEST(CudaEmulator, ShufflesExchangeWithinWarpsAndSegments) {
  float *whole = deviceArray<float>(64), *segments = deviceArray<float>(64);
  ::tgc::emu::launch("warpSums", warpSums, 1, 64, 0, nullptr)(whole,
                                                              segments);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> w = toHost(whole, 64), s = toHost(segments, 64);
  for (int t = 0; t < 64; ++t) {
    int warp = t / 32, segment = t / 8;
    EXPECT_EQ(w[t], float(32 * 32 * warp + 32 * 33 / 2)) << t;
    EXPECT_EQ(s[t], float(64 * segment + 8 * 9 / 2)) << t;
  }
  cudaFree(whole);
  cudaFree(segments);
}

TEST(CudaEmulator, BadLaunchConfigurationIsALaunchError) {
  int *out = deviceArray<int>(1);
  ::tgc::emu::launch("writeIndices", writeIndices, 1, 2048, 0,
                     nullptr)(out);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  // Not sticky: the next call works.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(out);
}

__global__ void returnBeforeBarrier(int *out) {
  if (threadIdx.x >= 128)
    return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

TEST(CudaEmulatorDeathTest, BarrierSkippedBySomeThreadsFailsTheKernel) {
  EXPECT_EXIT(
      {
        int *out = deviceArray<int>(256);
        ::tgc::emu::launch("returnBeforeBarrier", returnBeforeBarrier, 1, 256,
                           0, nullptr)(out);
        bool failed = cudaDeviceSynchronize() == cudaErrorLaunchFailure;
        // The error is sticky, as a GPU context's is.
        void *more = nullptr;
        bool sticky = cudaMalloc(&more, 16) == cudaErrorLaunchFailure;
        std::exit(failed && sticky ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "returnBeforeBarrier, block \\(0, 0, 0\\): __syncthreads reached by "
      "128 of 256 threads");
}

__global__ void shuffleInHalfAWarp(float *out) {
  if (threadIdx.x % 32 >= 16)
    return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(CudaEmulatorDeathTest, ShuffleMissingLanesFailsTheKernel) {
  EXPECT_EXIT(
      {
        float *out = deviceArray<float>(32);
        ::tgc::emu::launch("shuffleInHalfAWarp", shuffleInHalfAWarp, 1, 32, 0,
                           nullptr)(out);
        std::exit(cudaDeviceSynchronize() == cudaErrorLaunchFailure ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "a warp shuffle that not every lane of warp 0 reached \\(16 of 32\\)");
}

TEST(CudaEmulatorDeathTest, HostPointerAsKernelArgumentIsAnIllegalAddress) {
  EXPECT_EXIT(
      {
        std::vector<int> host(16);
        ::tgc::emu::launch("writeIndices", writeIndices, 1, 16, 0,
                           nullptr)(host.data());
        std::exit(cudaDeviceSynchronize() == cudaErrorIllegalAddress ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "writeIndices: argument 1 is a pointer to memory that is not device "
      "memory");
}

TEST(CudaEmulator, CopiesMustStayInsideTheirAllocation) {
  int *device = deviceArray<int>(4);
  std::vector<int> host(8);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 8 * sizeof(int),
                       cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), device + 1, 4 * sizeof(int),
                       cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  // A host pointer named as the device side.
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 4, 4 * sizeof(int),
                       cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(device + 2, 0, 3 * sizeof(int)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(device, 0, 4 * sizeof(int)), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  cudaFree(device);
}

TEST(CudaEmulator, DeviceMemoryHasTheConfiguredCapacity) {
  size_t freeBytes = 0, totalBytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeBytes, &totalBytes), cudaSuccess);
  void *data = nullptr;
  EXPECT_EQ(cudaMalloc(&data, totalBytes + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(data, nullptr);
  cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

TEST(CudaEmulator, AsyncCopyLandsOnlyWhenTheHostSynchronizes) {
  int *device = deviceArray<int>(1);
  int *pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, sizeof(int)), cudaSuccess);
  *pinned = 0;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0x11, sizeof(int), stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, device, sizeof(int),
                            cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  // A GPU may or may not be done by now; the emulator never is.
  EXPECT_EQ(*pinned, 0);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(*pinned, 0x11111111);
  cudaStreamDestroy(stream);
  cudaFreeHost(pinned);
  cudaFree(device);
}

TEST(CudaEmulator, StreamsAreOrderedOnlyThroughEvents) {
  int *device = deviceArray<int>(1);
  int *pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, sizeof(int)), cudaSuccess);
  cudaStream_t producer, consumer;
  cudaEvent_t written;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&written, cudaEventDisableTiming),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(device, 0, sizeof(int)), cudaSuccess);

  // Without a wait the consumer reads what was there before.
  ASSERT_EQ(cudaMemsetAsync(device, 0x22, sizeof(int), producer), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, device, sizeof(int),
                            cudaMemcpyDeviceToHost, consumer),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
  EXPECT_EQ(*pinned, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // With one it reads what the producer wrote.
  ASSERT_EQ(cudaMemsetAsync(device, 0x33, sizeof(int), producer), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(written, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(consumer, written, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, device, sizeof(int),
                            cudaMemcpyDeviceToHost, consumer),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
  EXPECT_EQ(*pinned, 0x33333333);

  cudaEventDestroy(written);
  cudaStreamDestroy(consumer);
  cudaStreamDestroy(producer);
  cudaFreeHost(pinned);
  cudaFree(device);
}

//===----------------------------------------------------------------------===//
// cuBLASLt
//===----------------------------------------------------------------------===//

struct Gemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulAlgo_t algo = {};

  /// Column-major D[m x n] = op(A) @ op(B) with A stored m x k when not
  /// transposed (k x m when it is) and B stored k x n.
  Gemm(int m, int n, int k, bool transA, uint32_t alignment) {
    EXPECT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              CUBLAS_STATUS_SUCCESS);
    cublasOperation_t ta = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
                                             &ta, sizeof(ta)),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, transA ? k : m,
                                         transA ? m : k, transA ? k : m),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, k, n, k),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, m, n, m),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulPreferenceCreate(&preference),
              CUBLAS_STATUS_SUCCESS);
    for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                           CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                           CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                           CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(
                    preference, attribute, &alignment, sizeof(alignment)),
                CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, op, a, b, d, d,
                                             preference, 1, &result, &found),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(found, 1);
    algo = result.algo;
  }
  ~Gemm() {
    cublasLtMatmulPreferenceDestroy(preference);
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(handle);
  }
  cublasStatus_t run(const float *A, const float *B, float *D) {
    float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle, op, &alpha, A, a, B, b, &beta, D, d, D, d,
                          &algo, nullptr, 0, nullptr);
  }
};

TEST(CudaEmulator, CublasLtIsColumnMajorWithTransposes) {
  const int m = 3, n = 2, k = 4;
  // A^T stored column-major k x m: A(i, p) = at[i * k + p].
  std::vector<float> at(k * m), b(k * n);
  for (int i = 0; i < k * m; ++i)
    at[i] = float(i % 5) - 2.0f;
  for (int i = 0; i < k * n; ++i)
    b[i] = float(i % 3) + 0.5f;
  float *dA = deviceArray<float>(k * m), *dB = deviceArray<float>(k * n),
        *dD = deviceArray<float>(m * n);
  cudaMemcpy(dA, at.data(), at.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  Gemm gemm(m, n, k, /*transA=*/true, 16);
  ASSERT_EQ(gemm.run(dA, dB, dD), CUBLAS_STATUS_SUCCESS);
  std::vector<float> d = toHost(dD, m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float expected = 0;
      for (int p = 0; p < k; ++p)
        expected += at[i * k + p] * b[j * k + p];
      EXPECT_EQ(d[j * m + i], expected) << i << ", " << j;
    }
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dD);
}

TEST(CudaEmulator, CublasLtRejectsPointersLessAlignedThanPromised) {
  float *dA = deviceArray<float>(64), *dB = deviceArray<float>(64),
        *dD = deviceArray<float>(64);
  Gemm gemm(2, 2, 2, false, 16);
  EXPECT_EQ(gemm.run(dA, dB, dD), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm.run(dA + 1, dB, dD), CUBLAS_STATUS_INVALID_VALUE);
  // A matrix that runs past its allocation (2 x 2 from element 62 of 64).
  Gemm loose(2, 2, 2, false, 4);
  EXPECT_EQ(loose.run(dA + 60, dB, dD), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(loose.run(dA + 62, dB, dD), CUBLAS_STATUS_INVALID_VALUE);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dD);
}

/// Adds `*step` to every element: a kernel reading a scalar from device
/// memory, as the optimizer updates read the learning rate and step.
__global__ void addFromDevice(int *values, const int *step, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    values[i] += *step;
}

// A captured stream runs nothing; each launch of the graph runs its work
// again, with the arguments it was captured with, reading device memory as
// it is at the launch.
TEST(CudaEmulator, CapturedGraphReplaysItsWork) {
  int *values = deviceArray<int>(64), *step = deviceArray<int>(1);
  ASSERT_EQ(cudaMemset(values, 0, 64 * sizeof(int)), cudaSuccess);
  int *pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, sizeof(int)), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ::tgc::emu::launch("addFromDevice", addFromDevice, 2, 32, 0, stream)(
      values, step, 64);
  void *scratch = nullptr;
  ASSERT_EQ(cudaMallocAsync(&scratch, 16, stream), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(scratch, stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u); // the kernel, the allocation and its free
  cudaGraphExec_t executable = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(toHost(values, 64)[5], 0); // capturing ran nothing
  for (int launch = 1; launch <= 3; ++launch) {
    // The step changes between launches through device memory.
    *pinned = launch;
    ASSERT_EQ(cudaMemcpyAsync(step, pinned, sizeof(int),
                              cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(executable, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  std::vector<int> host = toHost(values, 64);
  EXPECT_EQ(host[0], 1 + 2 + 3);
  EXPECT_EQ(host[63], 1 + 2 + 3);
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaStreamDestroy(stream);
  cudaFreeHost(pinned);
  cudaFree(values);
  cudaFree(step);
}

// A stream that waits for an event recorded in a capture joins it (a
// fork); the capture's first stream waiting for an event of the forked
// one joins it back. Each launch replays both streams' work with those
// waits: the copy on the forked stream reads the first memset's bytes,
// and the second memset waits for the copy. A fork not joined back fails
// the capture, and every stream leaves it.
TEST(CudaEmulator, ForkedStreamsJoinACapture) {
  uint8_t *a = deviceArray<uint8_t>(16), *b = deviceArray<uint8_t>(16);
  cudaStream_t main, side;
  cudaEvent_t forked, joined;
  ASSERT_EQ(cudaStreamCreateWithFlags(&main, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming),
            cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming),
            cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(a, 1, 16, main), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(forked, main), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(side, forked, 0), cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(side, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaMemcpyAsync(b, a, 16, cudaMemcpyDeviceToDevice, side),
            cudaSuccess);
  ASSERT_EQ(cudaEventRecord(joined, side), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(main, joined, 0), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(a, 2, 16, main), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(main, &graph), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(side, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u); // two memsets and the copy; the waits are edges
  cudaGraphExec_t executable = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&executable, graph, 0), cudaSuccess);
  for (int launch = 0; launch < 2; ++launch) {
    ASSERT_EQ(cudaMemset(b, 0, 16), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(executable, main), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(main), cudaSuccess);
    EXPECT_EQ(toHost(b, 16)[15], 1);
    EXPECT_EQ(toHost(a, 16)[0], 2);
  }
  EXPECT_EQ(cudaGraphExecDestroy(executable), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  // Forked, and not joined back.
  ASSERT_EQ(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  ASSERT_EQ(cudaEventRecord(forked, main), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(side, forked, 0), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(b, 3, 16, side), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(side, &graph),
            cudaErrorStreamCaptureUnmatched);
  EXPECT_EQ(cudaStreamEndCapture(main, &graph), cudaErrorStreamCaptureUnjoined);
  ASSERT_EQ(cudaStreamIsCapturing(side, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  cudaGetLastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(toHost(b, 16)[0], 1); // the memset recorded never ran
  cudaEventDestroy(forked);
  cudaEventDestroy(joined);
  cudaStreamDestroy(main);
  cudaStreamDestroy(side);
  cudaFree(a);
  cudaFree(b);
}

// What a capture refuses (waiting for the stream, a synchronous copy or
// allocation, a copy of pageable memory) fails and invalidates it, and the
// work recorded before never runs.
TEST(CudaEmulator, CaptureRefusesWhatWouldReachTheHost) {
  int *values = deviceArray<int>(4);
  ASSERT_EQ(cudaMemset(values, 0, 4 * sizeof(int)), cudaSuccess);
  int host[4] = {7, 7, 7, 7};
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  for (int refused = 0; refused < 4; ++refused) {
    SCOPED_TRACE("refused call " + std::to_string(refused));
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
              cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(values, 0x22, 4 * sizeof(int), stream),
              cudaSuccess);
    void *more = nullptr;
    cudaError_t error =
        refused == 0 ? cudaStreamSynchronize(stream)
        : refused == 1
            ? cudaMemcpy(values, host, sizeof(host), cudaMemcpyHostToDevice)
        : refused == 2 ? cudaMalloc(&more, 16)
                       : cudaMemcpyAsync(values, host, sizeof(host),
                                         cudaMemcpyHostToDevice, stream);
    EXPECT_EQ(error, cudaErrorStreamCaptureUnsupported);
    cudaStreamCaptureStatus status;
    ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
    EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(stream, &graph),
              cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    cudaGetLastError();
  }
  // The context is healthy, and the memsets recorded never ran.
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(toHost(values, 4)[0], 0);
  cudaStreamDestroy(stream);
  cudaFree(values);
}

} // namespace
