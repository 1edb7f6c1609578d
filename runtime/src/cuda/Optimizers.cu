//===- Optimizers.cu - SGD, AdamW, gradient norm, loss scaling on the GPU -===//
//
// The optimizer updates and the mixed-precision ops with the arithmetic of
// cpu/Optimizers.cpp (torch.optim.SGD, torch.optim.AdamW, GradScaler):
// per-element math in f32 in the CPU's order, hyper-parameter scalars in
// f64 then rounded to f32. The learning rate and step live on the device, so
// every thread derives the step's scalars itself. Products and sums go
// through the __f*_rn / __d*_rn intrinsics so that nvcc does not contract
// them into fused multiply-adds the CPU does not use. An update at step < 1
// writes nothing and raises kBadStep. Each thread reads an element of every
// operand before writing the same element of the results, so the updates
// are correct in place.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

namespace tgc::rt::cuda {

static constexpr unsigned kThreads = 256;

/// The i64 step, or raises kBadStep (once per launch) and returns false.
__device__ inline bool readStep(const int64_t *step, DeviceError *error,
                                int64_t &value) {
  value = *step;
  if (value >= 1)
    return true;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    raiseError(error, kBadStep, -1, value);
  return false;
}

//===----------------------------------------------------------------------===//
// SGD
//===----------------------------------------------------------------------===//

namespace {
/// The f32 hyper-parameters of an SGD step, rounded on the host as the CPU
/// kernel rounds them.
struct SgdParams {
  float decay;
  float momentum;
  float gradWeight; // 1 - dampening
  bool nesterov;
};
} // namespace

__global__ void sgdKernel(const void *param, DType paramType, const void *grad,
                          DType gradType, const float *lr, const int64_t *step,
                          SgdParams hp, void *newParam, int64_t n, DeviceError *error) {
  int64_t t;
  if (!readStep(step, error, t))
    return;
  float lrValue = *lr;
  TGC_GRID_LOOP(i, n) {
    float p = loadFloat(param, paramType, i);
    float d = __fadd_rn(loadFloat(grad, gradType, i), __fmul_rn(hp.decay, p));
    storeFloat(newParam, paramType, i, __fsub_rn(p, __fmul_rn(lrValue, d)));
  }
}

/// With a momentum buffer. At step 1 the buffer starts as the gradient and
/// the old buffer is not read (it may hold garbage), as torch does.
__global__ void sgdMomentumKernel(const void *param, DType paramType,
                                  const void *grad, DType gradType,
                                  const void *buffer, DType bufferType,
                                  const float *lr, const int64_t *step,
                                  SgdParams hp, void *newParam, void *newBuffer,
                                  int64_t n, DeviceError *error) {
  int64_t t;
  if (!readStep(step, error, t))
    return;
  float lrValue = *lr;
  bool first = t == 1;
  TGC_GRID_LOOP(i, n) {
    float p = loadFloat(param, paramType, i);
    float d = __fadd_rn(loadFloat(grad, gradType, i), __fmul_rn(hp.decay, p));
    float b = first ? d
                    : __fadd_rn(__fmul_rn(hp.momentum,
                                          loadFloat(buffer, bufferType, i)),
                                __fmul_rn(hp.gradWeight, d));
    float direction = hp.nesterov ? __fadd_rn(d, __fmul_rn(hp.momentum, b)) : b;
    storeFloat(newBuffer, bufferType, i, b);
    storeFloat(newParam, paramType, i,
               __fsub_rn(p, __fmul_rn(lrValue, direction)));
  }
}

Status sgdUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                 const TensorRef &lr, const TensorRef &step,
                 const TensorRef *momentumBuffer, double momentum,
                 double dampening, double weightDecay, bool nesterov,
                 TensorRef &newParam, TensorRef *newMomentumBuffer) {
  if ((momentumBuffer == nullptr) != (newMomentumBuffer == nullptr))
    return Status::failure("sgd_update needs both the momentum buffer and "
                           "its result, or neither");
  SgdParams hp;
  hp.decay = float(weightDecay);
  hp.momentum = float(momentum);
  hp.gradWeight = float(1.0 - dampening);
  hp.nesterov = nesterov;
  int64_t n = param.numElements();
  // Launched even when empty: the kernel still checks the step.
  unsigned blocks = blocksFor(n, kThreads);
  cudaStream_t stream = streamOf(ctx);
  const float *lrData = static_cast<const float *>(lr.data);
  const int64_t *stepData = static_cast<const int64_t *>(step.data);
  if (!momentumBuffer) {
    sgdKernel<<<blocks, kThreads, 0, stream>>>(
        param.data, param.dtype, grad.data, grad.dtype, lrData, stepData, hp,
        newParam.data, n, ctx.deviceError);
  } else {
    sgdMomentumKernel<<<blocks, kThreads, 0, stream>>>(
        param.data, param.dtype, grad.data, grad.dtype, momentumBuffer->data,
        momentumBuffer->dtype, lrData, stepData, hp, newParam.data,
        newMomentumBuffer->data, n, ctx.deviceError);
  }
  TGC_CUDA_LAUNCH("sgd_update");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

namespace {
/// The hyper-parameters of an AdamW step that do not depend on the device
/// scalars, f32 ones rounded on the host as the CPU kernel rounds them.
struct AdamWParams {
  double beta1, beta2, weightDecay;
  float b1, oneMinusB1, b2, oneMinusB2, epsilon;
};
} // namespace

__global__ void adamwKernel(const void *param, DType paramType,
                            const void *grad, DType gradType,
                            const void *expAvg, DType expAvgType,
                            const void *expAvgSq, DType expAvgSqType,
                            const float *lr, const int64_t *step,
                            AdamWParams hp, void *newParam, void *newExpAvg,
                            void *newExpAvgSq, int64_t n, DeviceError *error) {
  int64_t t;
  if (!readStep(step, error, t))
    return;
  // The step's scalars as torch computes them in Python floats (f64).
  float lrValue = *lr;
  double biasCorrection1 = 1.0 - pow(hp.beta1, double(t));
  double biasCorrection2 = 1.0 - pow(hp.beta2, double(t));
  float stepSize = float(__ddiv_rn(double(lrValue), biasCorrection1));
  float biasCorrection2Sqrt = float(__dsqrt_rn(biasCorrection2));
  float decay = float(1.0 - __dmul_rn(double(lrValue), hp.weightDecay));
  TGC_GRID_LOOP(i, n) {
    float g = loadFloat(grad, gradType, i);
    float decayed = __fmul_rn(loadFloat(param, paramType, i), decay);
    float m = __fadd_rn(__fmul_rn(hp.b1, loadFloat(expAvg, expAvgType, i)),
                        __fmul_rn(hp.oneMinusB1, g));
    float v = __fadd_rn(__fmul_rn(hp.b2, loadFloat(expAvgSq, expAvgSqType, i)),
                        __fmul_rn(__fmul_rn(hp.oneMinusB2, g), g));
    float denom =
        __fadd_rn(__fdiv_rn(__fsqrt_rn(v), biasCorrection2Sqrt), hp.epsilon);
    storeFloat(newExpAvg, expAvgType, i, m);
    storeFloat(newExpAvgSq, expAvgSqType, i, v);
    storeFloat(newParam, paramType, i,
               __fsub_rn(decayed, __fmul_rn(stepSize, __fdiv_rn(m, denom))));
  }
}

Status adamwUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                   const TensorRef &expAvg, const TensorRef &expAvgSq,
                   const TensorRef &lr, const TensorRef &step, double beta1,
                   double beta2, double eps, double weightDecay,
                   TensorRef &newParam, TensorRef &newExpAvg,
                   TensorRef &newExpAvgSq) {
  AdamWParams hp;
  hp.beta1 = beta1;
  hp.beta2 = beta2;
  hp.weightDecay = weightDecay;
  hp.b1 = float(beta1);
  hp.oneMinusB1 = float(1.0 - beta1);
  hp.b2 = float(beta2);
  hp.oneMinusB2 = float(1.0 - beta2);
  hp.epsilon = float(eps);
  int64_t n = param.numElements();
  // Launched even when empty: the kernel still checks the step.
  adamwKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype, expAvg.data, expAvg.dtype,
      expAvgSq.data, expAvgSq.dtype, static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, newParam.data,
      newExpAvg.data, newExpAvgSq.data, n, ctx.deviceError);
  TGC_CUDA_LAUNCH("adamw_update");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// 8-bit state (bitsandbytes' blockwise dynamic quantization)
//===----------------------------------------------------------------------===//
//
// One thread block per block of state, each thread holding at most
// kMaxPerThread elements in registers: its threads dequantize and update
// their elements, a tree reduction in shared memory gives each moment's new
// absmax, then they requantize. The maps are copied to shared memory first.
// Every thread reads the old codes and absmax of its elements before the
// barrier after which they are written, so the update is correct in place.

namespace {
constexpr int kMaxPerThread = 4096 / kThreads;

/// Launch shape of the 8-bit updates: threads per block of state.
inline unsigned quantThreads(int64_t blockSize) {
  return unsigned(blockSize < int64_t(kThreads) ? blockSize : kThreads);
}

/// As quantizeToMap in cpu/Optimizers.cpp: the number of midpoints below
/// x, by halving steps.
__device__ inline uint8_t quantizeToMap(const float *map,
                                        const float *midpoints, float x,
                                        bool isSigned) {
  int code = 0;
  for (int step = 128; step > 0; step /= 2)
    code += midpoints[code + step - 1] < x ? step : 0;
  if (isSigned && x < 0.0f && map[code] >= 0.0f && code > 0)
    --code;
  return uint8_t(code);
}

/// Copies a map and its midpoints to shared memory (the caller syncs).
__device__ inline void loadMap(const float *map, float *sharedMap,
                               float *midpoints) {
  for (int e = threadIdx.x; e < 256; e += blockDim.x)
    sharedMap[e] = map[e];
  for (int e = threadIdx.x; e < 255; e += blockDim.x)
    midpoints[e] = __fmul_rn(__fadd_rn(map[e], map[e + 1]), 0.5f);
}

/// The largest of every thread's `value` (blockDim.x a power of two),
/// through `scratch` (blockDim.x floats); every thread gets it.
__device__ inline float blockMax(float value, float *scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      scratch[threadIdx.x] =
          fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
    __syncthreads();
  }
  float result = scratch[0];
  __syncthreads(); // scratch is reused
  return result;
}

/// Requantizes this thread's new values of the block into `codes` (element
/// e = threadIdx.x + k * blockDim.x holds values[k]); thread 0 stores the
/// block's absmax.
__device__ inline void requantizeBlock(const float *values, float localMax,
                                       const float *map,
                                       const float *midpoints, bool isSigned,
                                       uint8_t *codes, float *absmax,
                                       int64_t first, int64_t size,
                                       float *scratch) {
  float blockAbsmax = blockMax(localMax, scratch);
  float inverse = blockAbsmax > 0.0f ? __fdiv_rn(1.0f, blockAbsmax) : 0.0f;
  for (int k = 0; k < kMaxPerThread; ++k) {
    int64_t e = threadIdx.x + int64_t(k) * blockDim.x;
    if (e >= size)
      break;
    codes[first + e] =
        quantizeToMap(map, midpoints, __fmul_rn(values[k], inverse), isSigned);
  }
  if (threadIdx.x == 0)
    absmax[blockIdx.x] = blockAbsmax;
}
} // namespace

__global__ void adamw8bitKernel(const void *param, DType paramType,
                                const void *grad, DType gradType,
                                const uint8_t *mCodes, const float *mAbsmax,
                                const uint8_t *vCodes, const float *vAbsmax,
                                const float *mapSigned,
                                const float *mapUnsigned, const float *lr,
                                const int64_t *step, AdamWParams hp,
                                int64_t blockSize, void *newParam,
                                uint8_t *newMCodes, float *newMAbsmax,
                                uint8_t *newVCodes, float *newVAbsmax,
                                int64_t n, DeviceError *error) {
  __shared__ float mapS[256], mapU[256], midS[255], midU[255];
  __shared__ float scratch[kThreads];
  int64_t t;
  if (!readStep(step, error, t))
    return;
  loadMap(mapSigned, mapS, midS);
  loadMap(mapUnsigned, mapU, midU);
  __syncthreads();
  float lrValue = *lr;
  double biasCorrection1 = 1.0 - pow(hp.beta1, double(t));
  double biasCorrection2 = 1.0 - pow(hp.beta2, double(t));
  float stepSize = float(__ddiv_rn(double(lrValue), biasCorrection1));
  float biasCorrection2Sqrt = float(__dsqrt_rn(biasCorrection2));
  float decay = float(1.0 - __dmul_rn(double(lrValue), hp.weightDecay));

  int64_t block = blockIdx.x;
  int64_t first = block * blockSize;
  int64_t size = n - first < blockSize ? n - first : blockSize;
  float oldMAbsmax = mAbsmax[block], oldVAbsmax = vAbsmax[block];
  float mValues[kMaxPerThread], vValues[kMaxPerThread];
  float mMax = 0.0f, vMax = 0.0f;
  for (int k = 0; k < kMaxPerThread; ++k) {
    int64_t e = threadIdx.x + int64_t(k) * blockDim.x;
    if (e >= size)
      break;
    int64_t i = first + e;
    float g = loadFloat(grad, gradType, i);
    float decayed = __fmul_rn(loadFloat(param, paramType, i), decay);
    float m = __fadd_rn(__fmul_rn(hp.b1, __fmul_rn(mapS[mCodes[i]], oldMAbsmax)),
                        __fmul_rn(hp.oneMinusB1, g));
    float v = __fadd_rn(__fmul_rn(hp.b2, __fmul_rn(mapU[vCodes[i]], oldVAbsmax)),
                        __fmul_rn(__fmul_rn(hp.oneMinusB2, g), g));
    float denom =
        __fadd_rn(__fdiv_rn(__fsqrt_rn(v), biasCorrection2Sqrt), hp.epsilon);
    mValues[k] = m;
    vValues[k] = v;
    mMax = fmaxf(mMax, fabsf(m));
    vMax = fmaxf(vMax, fabsf(v));
    storeFloat(newParam, paramType, i,
               __fsub_rn(decayed, __fmul_rn(stepSize, __fdiv_rn(m, denom))));
  }
  requantizeBlock(mValues, mMax, mapS, midS, /*isSigned=*/true, newMCodes,
                  newMAbsmax, first, size, scratch);
  requantizeBlock(vValues, vMax, mapU, midU, /*isSigned=*/false, newVCodes,
                  newVAbsmax, first, size, scratch);
}

/// Checks the block size the kernels' register arrays allow.
static Status checkBlockSize(int64_t blockSize) {
  if (blockSize < 1 || blockSize > int64_t(kMaxPerThread) * kThreads ||
      (blockSize & (blockSize - 1)))
    return Status::failure("block_size must be a power of two in [1, 4096], "
                           "found " + std::to_string(blockSize));
  return Status::success();
}

Status adamw8bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &expAvg,
                       const TensorRef &expAvgAbsmax,
                       const TensorRef &expAvgSq,
                       const TensorRef &expAvgSqAbsmax,
                       const TensorRef &mapSigned,
                       const TensorRef &mapUnsigned, const TensorRef &lr,
                       const TensorRef &step, double beta1, double beta2,
                       double eps, double weightDecay, int64_t blockSize,
                       TensorRef &newParam, TensorRef &newExpAvg,
                       TensorRef &newExpAvgAbsmax, TensorRef &newExpAvgSq,
                       TensorRef &newExpAvgSqAbsmax) {
  if (Status status = checkBlockSize(blockSize); !status.ok())
    return status;
  AdamWParams hp;
  hp.beta1 = beta1;
  hp.beta2 = beta2;
  hp.weightDecay = weightDecay;
  hp.b1 = float(beta1);
  hp.oneMinusB1 = float(1.0 - beta1);
  hp.b2 = float(beta2);
  hp.oneMinusB2 = float(1.0 - beta2);
  hp.epsilon = float(eps);
  int64_t n = param.numElements();
  int64_t blocks = (n + blockSize - 1) / blockSize;
  // At least one block: the kernel still checks the step when n is 0.
  adamw8bitKernel<<<unsigned(blocks > 0 ? blocks : 1), quantThreads(blockSize),
                    0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype,
      static_cast<const uint8_t *>(expAvg.data),
      static_cast<const float *>(expAvgAbsmax.data),
      static_cast<const uint8_t *>(expAvgSq.data),
      static_cast<const float *>(expAvgSqAbsmax.data),
      static_cast<const float *>(mapSigned.data),
      static_cast<const float *>(mapUnsigned.data),
      static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, blockSize, newParam.data,
      static_cast<uint8_t *>(newExpAvg.data),
      static_cast<float *>(newExpAvgAbsmax.data),
      static_cast<uint8_t *>(newExpAvgSq.data),
      static_cast<float *>(newExpAvgSqAbsmax.data), n, ctx.deviceError);
  TGC_CUDA_LAUNCH("adamw_8bit_update");
  return Status::success();
}

__global__ void sgd8bitKernel(const void *param, DType paramType,
                              const void *grad, DType gradType,
                              const uint8_t *codes, const float *absmax,
                              const float *map, const float *lr,
                              const int64_t *step, SgdParams hp,
                              int64_t blockSize, void *newParam,
                              uint8_t *newCodes, float *newAbsmax, int64_t n,
                              DeviceError *error) {
  __shared__ float mapS[256], midS[255], scratch[kThreads];
  int64_t t;
  if (!readStep(step, error, t))
    return;
  loadMap(map, mapS, midS);
  __syncthreads();
  float lrValue = *lr;
  bool first = t == 1;
  int64_t block = blockIdx.x;
  int64_t start = block * blockSize;
  int64_t size = n - start < blockSize ? n - start : blockSize;
  float oldAbsmax = absmax[block];
  float values[kMaxPerThread];
  float localMax = 0.0f;
  for (int k = 0; k < kMaxPerThread; ++k) {
    int64_t e = threadIdx.x + int64_t(k) * blockDim.x;
    if (e >= size)
      break;
    int64_t i = start + e;
    float p = loadFloat(param, paramType, i);
    float d = __fadd_rn(loadFloat(grad, gradType, i), __fmul_rn(hp.decay, p));
    float b = first ? d
                    : __fadd_rn(__fmul_rn(hp.momentum,
                                          __fmul_rn(mapS[codes[i]], oldAbsmax)),
                                __fmul_rn(hp.gradWeight, d));
    float direction = hp.nesterov ? __fadd_rn(d, __fmul_rn(hp.momentum, b)) : b;
    values[k] = b;
    localMax = fmaxf(localMax, fabsf(b));
    storeFloat(newParam, paramType, i,
               __fsub_rn(p, __fmul_rn(lrValue, direction)));
  }
  requantizeBlock(values, localMax, mapS, midS, /*isSigned=*/true, newCodes,
                  newAbsmax, start, size, scratch);
}

Status sgd8bitUpdate(Context &ctx, const TensorRef &param,
                     const TensorRef &grad, const TensorRef &momentumBuffer,
                     const TensorRef &momentumAbsmax, const TensorRef &map,
                     const TensorRef &lr, const TensorRef &step,
                     double momentum, double dampening, double weightDecay,
                     bool nesterov, int64_t blockSize, TensorRef &newParam,
                     TensorRef &newMomentumBuffer,
                     TensorRef &newMomentumAbsmax) {
  if (Status status = checkBlockSize(blockSize); !status.ok())
    return status;
  SgdParams hp;
  hp.decay = float(weightDecay);
  hp.momentum = float(momentum);
  hp.gradWeight = float(1.0 - dampening);
  hp.nesterov = nesterov;
  int64_t n = param.numElements();
  int64_t blocks = (n + blockSize - 1) / blockSize;
  sgd8bitKernel<<<unsigned(blocks > 0 ? blocks : 1), quantThreads(blockSize),
                  0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype,
      static_cast<const uint8_t *>(momentumBuffer.data),
      static_cast<const float *>(momentumAbsmax.data),
      static_cast<const float *>(map.data),
      static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, blockSize, newParam.data,
      static_cast<uint8_t *>(newMomentumBuffer.data),
      static_cast<float *>(newMomentumAbsmax.data), n, ctx.deviceError);
  TGC_CUDA_LAUNCH("sgd_8bit_update");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Global norm
//===----------------------------------------------------------------------===//

/// Adds the sum of squares of `x` into `*sum`: f64 per thread, a tree per
/// block, one atomic add per block.
__global__ void sumSquaresKernel(const void *x, DType dtype, int64_t n,
                                 double *sum) {
  __shared__ double partial[kThreads];
  double acc = 0.0;
  TGC_GRID_LOOP(i, n) {
    double v = loadFloat(x, dtype, i);
    acc += v * v;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(sum, partial[0]);
}

__global__ void sqrtToF32Kernel(const double *sum, float *result) {
  *result = float(__dsqrt_rn(*sum));
}

Status globalNorm(Context &ctx, const std::vector<TensorRef> &inputs,
                  TensorRef &result) {
  cudaStream_t stream = streamOf(ctx);
  StreamScratch scratch;
  Status status = scratch.allocate(ctx, sizeof(double));
  if (!status.ok())
    return status;
  double *sum = static_cast<double *>(scratch.data());
  TGC_CUDA_CALL(cudaMemsetAsync(sum, 0, sizeof(double), stream));
  for (const TensorRef &input : inputs) {
    int64_t n = input.numElements();
    if (n == 0)
      continue;
    sumSquaresKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
        input.data, input.dtype, n, sum);
    TGC_CUDA_LAUNCH("global_norm");
  }
  sqrtToF32Kernel<<<1, 1, 0, stream>>>(sum, static_cast<float *>(result.data));
  TGC_CUDA_LAUNCH("global_norm");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

__global__ void scaleLossKernel(const void *loss, DType lossType,
                                const float *scale, float *result) {
  *result = __fmul_rn(loadFloat(loss, lossType, 0), *scale);
}

Status scaleLoss(Context &ctx, const TensorRef &loss, const TensorRef &scale,
                 TensorRef &result) {
  scaleLossKernel<<<1, 1, 0, streamOf(ctx)>>>(
      loss.data, loss.dtype, static_cast<const float *>(scale.data),
      static_cast<float *>(result.data));
  TGC_CUDA_LAUNCH("scale_loss");
  return Status::success();
}

/// One f32 reciprocal, then a multiply per element, as GradScaler does.
__global__ void unscaleKernel(const void *grad, DType gradType,
                              const float *scale, void *result,
                              DType resultType, int64_t n) {
  float inverse = __fdiv_rn(1.0f, *scale);
  TGC_GRID_LOOP(i, n) {
    storeFloat(result, resultType, i,
               __fmul_rn(loadFloat(grad, gradType, i), inverse));
  }
}

Status unscale(Context &ctx, const TensorRef &grad, const TensorRef &scale,
               TensorRef &result) {
  int64_t n = grad.numElements();
  if (n == 0)
    return Status::success();
  // A result over the very elements of a same-typed gradient is fine; one
  // of a wider type overlapping it would overwrite unread elements.
  StreamScratch scratch;
  const void *source = grad.data;
  bool sameElements = grad.data == result.data &&
                      dtypeSize(grad.dtype) == dtypeSize(result.dtype);
  if (!sameElements && bytesOverlap(grad, result)) {
    Status status = stageCopy(ctx, grad, scratch, source);
    if (!status.ok())
      return status;
  }
  unscaleKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      source, grad.dtype, static_cast<const float *>(scale.data), result.data,
      result.dtype, n);
  TGC_CUDA_LAUNCH("unscale");
  return Status::success();
}

/// Clears the i1 `*finite` when an element of `x` is an infinity or a NaN
/// (every writer writes the same 0).
__global__ void allFiniteKernel(const void *x, DType dtype, int64_t n,
                                uint8_t *finite) {
  TGC_GRID_LOOP(i, n) {
    if (!isfinite(loadFloat(x, dtype, i)))
      *finite = 0;
  }
}

Status allFinite(Context &ctx, const std::vector<TensorRef> &inputs,
                 TensorRef &result) {
  cudaStream_t stream = streamOf(ctx);
  uint8_t *finite = static_cast<uint8_t *>(result.data);
  TGC_CUDA_CALL(cudaMemsetAsync(finite, 1, 1, stream));
  for (const TensorRef &input : inputs) {
    int64_t n = input.numElements();
    if (n == 0)
      continue;
    allFiniteKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
        input.data, input.dtype, n, finite);
    TGC_CUDA_LAUNCH("all_finite");
  }
  return Status::success();
}

/// torch's _amp_update_scale_, on one thread. Everything is read before
/// anything is written: the results replace the operands.
__global__ void updateLossScaleKernel(const float *scale,
                                      const int64_t *growthTracker,
                                      const uint8_t *foundFinite,
                                      double growthFactor, double backoffFactor,
                                      int64_t growthInterval, float *newScale,
                                      int64_t *newGrowthTracker) {
  float current = *scale;
  int64_t tracker = *growthTracker;
  bool finite = *foundFinite != 0;
  float next = current;
  if (!finite) {
    next = float(__dmul_rn(double(current), backoffFactor));
    tracker = 0;
  } else if (tracker + 1 >= growthInterval) {
    // The scale is kept when growing it overflows.
    float grown = float(__dmul_rn(double(current), growthFactor));
    if (isfinite(grown))
      next = grown;
    tracker = 0;
  } else {
    ++tracker;
  }
  *newScale = next;
  *newGrowthTracker = tracker;
}

Status updateLossScale(Context &ctx, const TensorRef &scale,
                       const TensorRef &growthTracker,
                       const TensorRef &foundFinite, double growthFactor,
                       double backoffFactor, int64_t growthInterval,
                       TensorRef &newScale, TensorRef &newGrowthTracker) {
  updateLossScaleKernel<<<1, 1, 0, streamOf(ctx)>>>(
      static_cast<const float *>(scale.data),
      static_cast<const int64_t *>(growthTracker.data),
      static_cast<const uint8_t *>(foundFinite.data), growthFactor,
      backoffFactor, growthInterval, static_cast<float *>(newScale.data),
      static_cast<int64_t *>(newGrowthTracker.data));
  TGC_CUDA_LAUNCH("update_loss_scale");
  return Status::success();
}

} // namespace tgc::rt::cuda
