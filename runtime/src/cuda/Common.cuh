//===- Common.cuh - shared device code of the CUDA kernels ------*- CUDA -*-===//
//
// Element access by dtype (f16/bf16 converted to f32 in registers), NumPy
// broadcasting index math on device, launch helpers and the error flag
// kernels raise on bad data (an index out of range). Every launcher checks
// its launch with TGC_CUDA_LAUNCH.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CUDA_COMMON_CUH
#define TGC_RUNTIME_SRC_CUDA_COMMON_CUH

#include "CudaKernels.h"
#include "Scalar.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

// Unrolls the loop that follows under nvcc (a register array indexed by
// its counter stays in registers); the emulator's host compiler has no such
// pragma and needs none.
#ifdef __CUDACC__
#define TGC_UNROLL _Pragma("unroll")
#else
#define TGC_UNROLL
#endif

namespace tgc::rt::cuda {

inline cudaStream_t streamOf(Context &ctx) {
  return static_cast<cudaStream_t>(ctx.stream);
}

/// Returns from the launcher with a failed Status if the last launch failed.
#define TGC_CUDA_LAUNCH(what)                                                  \
  do {                                                                         \
    ::tgc::rt::Status launchStatus_ =                                          \
        ::tgc::rt::cuda::check(int(cudaGetLastError()), what);                 \
    if (!launchStatus_.ok())                                                   \
      return launchStatus_;                                                    \
  } while (0)

/// Returns from the launcher with a failed Status if a CUDA call failed.
#define TGC_CUDA_CALL(call)                                                    \
  do {                                                                         \
    ::tgc::rt::Status callStatus_ =                                            \
        ::tgc::rt::cuda::check(int(call), #call);                              \
    if (!callStatus_.ok())                                                     \
      return callStatus_;                                                      \
  } while (0)

/// Blocks for `n` work items, 256 threads each, capped for grid-stride
/// loops.
inline unsigned blocksFor(int64_t n, unsigned threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > 65535 * 8)
    blocks = 65535 * 8;
  return unsigned(blocks);
}

/// Grid-stride loop over [0, n).
#define TGC_GRID_LOOP(i, n)                                                    \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);    \
       i += int64_t(blockDim.x) * gridDim.x)

/// A block of a multi-tensor launch (tg.multi_adamw_update, tg.multi_cast):
/// the tensor it works on, of `tensors` whose first blocks are `firstBlock`
/// (firstBlock[tensors] is the launch's block count), and its first
/// element and stride over that tensor's elements.
struct TensorBlock {
  int tensor;
  int64_t first, stride;
};
__device__ inline TensorBlock tensorBlock(const int64_t *firstBlock,
                                          int tensors) {
  // The last tensor whose first block is at or before this one (an empty
  // tensor's first block is its successor's), by bisection.
  int k = 0, last = tensors - 1;
  while (k < last) {
    int mid = (k + last + 1) / 2;
    if (firstBlock[mid] <= int64_t(blockIdx.x))
      k = mid;
    else
      last = mid - 1;
  }
  int64_t blocks = firstBlock[k + 1] - firstBlock[k];
  return {k, (blockIdx.x - firstBlock[k]) * blockDim.x + threadIdx.x,
          blocks * blockDim.x};
}

/// The sum of `value` over the 32 lanes of a warp, returned to every lane.
template <typename T> __device__ inline T warpSum(T value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/// The maximum of `value` over the 32 lanes of a warp (NaNs ignored, as
/// fmaxf), returned to every lane.
__device__ inline float warpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

/// GELU's tanh approximation (tg.gelu, and tg.linear where cuBLASLt's
/// epilogue cannot take it).
__device__ inline float geluTanh(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

/// `g * gelu'(x)` of the tanh approximation (tg.gelu_grad, and
/// tg.matmul_gelu_grad where cuBLASLt's epilogue cannot take it).
__device__ inline float geluTanhGrad(float x, float g) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float t = tanhf(u);
  float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
}

/// Reads element i of a float tensor of dtype `dtype` as f32.
__device__ inline float loadFloat(const void *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F16:
    return __half2float(static_cast<const __half *>(data)[i]);
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

/// Writes element i of a float tensor from f32 (round to nearest even).
__device__ inline void storeFloat(void *data, DType dtype, int64_t i,
                                  float value) {
  switch (dtype) {
  case DType::F16:
    static_cast<__half *>(data)[i] = __float2half_rn(value);
    break;
  case DType::BF16:
    static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16_rn(value);
    break;
  default:
    static_cast<float *>(data)[i] = value;
  }
}

/// `value` as stored in `dtype` (round to nearest even) and read back.
__device__ inline float roundedTo(DType dtype, float value) {
  switch (dtype) {
  case DType::F16:
    return __half2float(__float2half_rn(value));
  case DType::BF16:
    return __bfloat162float(__float2bfloat16_rn(value));
  default:
    return value;
  }
}

/// `value` rounded to f32 with round-to-odd, so that rounding the result to
/// f16/bf16 to nearest even is the correctly rounded conversion (as
/// Convert.h's roundToOddF32 on the host).
__device__ inline float roundToOddF32(double value) {
  float rounded = __double2float_rn(value);
  if (double(rounded) == value || isnan(value) || isinf(rounded))
    return rounded;
  uint32_t bits = __float_as_uint(rounded);
  if (!(bits & 1u)) {
    if (fabs(double(rounded)) > fabs(value))
      --bits;
    else
      ++bits;
  }
  return __uint_as_float(bits);
}

/// `value` as it is stored in a float tensor of `dtype`: rounded once.
__device__ inline float narrowF64(double value, DType dtype) {
  return dtype == DType::F32 ? __double2float_rn(value) : roundToOddF32(value);
}

/// Reads element i of an integer or i1 tensor as i64.
__device__ inline int64_t loadInt(const void *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::I64:
    return static_cast<const int64_t *>(data)[i];
  case DType::I32:
    return static_cast<const int32_t *>(data)[i];
  case DType::I8:
    return static_cast<const int8_t *>(data)[i];
  case DType::I1:
    return static_cast<const uint8_t *>(data)[i] != 0;
  default:
    return 0;
  }
}

__device__ inline void storeInt(void *data, DType dtype, int64_t i,
                                int64_t value) {
  switch (dtype) {
  case DType::I64:
    static_cast<int64_t *>(data)[i] = value;
    break;
  case DType::I32:
    static_cast<int32_t *>(data)[i] = int32_t(value);
    break;
  case DType::I8:
    static_cast<int8_t *>(data)[i] = int8_t(value);
    break;
  case DType::I1:
    static_cast<uint8_t *>(data)[i] = value != 0;
    break;
  default:
    break;
  }
}

/// Up to 8 dimensions of index math, passed to kernels by value.
constexpr int kMaxRank = 8;
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  /// Strides of an operand broadcast to `size` (0 on broadcast dims).
  int64_t stride[kMaxRank] = {};
};

/// Dims of `resultShape` with the broadcast strides of `operandShape`.
/// Fails (returns false) past kMaxRank dimensions.
bool broadcastDims(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &resultShape, Dims &dims);

/// The offset in the operand of result element `linear`.
__device__ inline int64_t broadcastOffset(const Dims &dims, int64_t linear) {
  int64_t offset = 0;
  for (int d = dims.rank - 1; d >= 0; --d) {
    int64_t index = linear % dims.size[d];
    linear /= dims.size[d];
    offset += index * dims.stride[d];
  }
  return offset;
}

/// Records an error in the context's error record (read back by the
/// backend when the host synchronizes); the first error raised wins.
__device__ inline void raiseError(DeviceError *error, int code,
                                  int64_t position = -1, int64_t value = 0,
                                  int64_t limit = 0) {
  if (atomicCAS(&error->code, 0, code) == 0) {
    error->position = position;
    error->value = value;
    error->limit = limit;
  }
}

/// Error codes kernels raise, turned into messages by the backend.
enum ErrorCode : int {
  kNoError = 0,
  kIndexOutOfRange = 1,
  kIntegerDivisionByZero = 2,
  kBadStep = 3, // an optimizer update at step < 1
};

//===----------------------------------------------------------------------===//
// Scratch memory and operands that overlap their results
//===----------------------------------------------------------------------===//

/// Whether the device byte ranges of two tensors intersect (a result the
/// planner placed over an operand must not be written while it is read).
inline bool bytesOverlap(const TensorRef &a, const TensorRef &b) {
  if (!a.data || !b.data || a.numBytes() == 0 || b.numBytes() == 0)
    return false;
  const char *aBegin = static_cast<const char *>(a.data);
  const char *bBegin = static_cast<const char *>(b.data);
  return aBegin < bBegin + b.numBytes() && bBegin < aBegin + a.numBytes();
}

/// Device memory taken from the stream-ordered pool on the context's stream
/// and given back on that stream when the owner goes out of scope, so it
/// lives until the work enqueued before then has run.
class StreamScratch {
public:
  StreamScratch() = default;
  StreamScratch(const StreamScratch &) = delete;
  StreamScratch &operator=(const StreamScratch &) = delete;
  ~StreamScratch() {
    if (data_)
      cudaFreeAsync(data_, stream_);
  }

  Status allocate(Context &ctx, size_t bytes) {
    stream_ = streamOf(ctx);
    TGC_CUDA_CALL(cudaMallocAsync(&data_, bytes == 0 ? 1 : bytes, stream_));
    return Status::success();
  }
  void *data() const { return data_; }

private:
  void *data_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

/// Copies `input`'s bytes into `scratch` on the stream and points `data` at
/// the copy: what a launcher reads when writing its result would overwrite
/// operand elements it has not read yet.
inline Status stageCopy(Context &ctx, const TensorRef &input,
                        StreamScratch &scratch, const void *&data) {
  Status status = scratch.allocate(ctx, input.numBytes());
  if (!status.ok())
    return status;
  TGC_CUDA_CALL(cudaMemcpyAsync(scratch.data(), input.data, input.numBytes(),
                                cudaMemcpyDeviceToDevice, streamOf(ctx)));
  data = scratch.data();
  return Status::success();
}

} // namespace tgc::rt::cuda

#endif // TGC_RUNTIME_SRC_CUDA_COMMON_CUH
