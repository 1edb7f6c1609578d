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

#include "tgc/Support/MultiTensor.h"

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

/// Whether loss scaling skips this step: `apply` is the update's predicate
/// in device memory (null without loss scaling). Every thread reads it, so
/// the step is decided on the device without a copy to the host; a
/// skipped update writes nothing (the executor has already copied the
/// operands into results that are not in place).
__device__ bool skipped(const uint8_t *apply) {
  return apply != nullptr && *apply == 0;
}

/// The f32 hyper-parameters of an SGD step, rounded on the host as the CPU
/// kernel rounds them.
struct SgdParams {
  float decay;
  float momentum;
  float gradWeight; // 1 - dampening
  bool nesterov;
};

SgdParams sgdParams(double momentum, double dampening, double weightDecay,
                    bool nesterov) {
  return SgdParams{float(weightDecay), float(momentum),
                   float(1.0 - dampening), nesterov};
}

/// As cpu's SgdMomentumStep::apply: the new parameter, `buffer` (the old
/// buffer, unread at step 1) replaced by the new one.
__device__ inline float sgdMomentumElement(const SgdParams &hp, float lr,
                                           bool first, float p, float g,
                                           float &buffer) {
  float d = __fadd_rn(g, __fmul_rn(hp.decay, p));
  float b = first ? d
                  : __fadd_rn(__fmul_rn(hp.momentum, buffer),
                              __fmul_rn(hp.gradWeight, d));
  float direction = hp.nesterov ? __fadd_rn(d, __fmul_rn(hp.momentum, b)) : b;
  buffer = b;
  return __fsub_rn(p, __fmul_rn(lr, direction));
}
} // namespace

__global__ void sgdKernel(const void *param, DType paramType, const void *grad,
                          DType gradType, const float *lr, const int64_t *step,
                          SgdParams hp, void *newParam, int64_t n, DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
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
                                  int64_t n, DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
  int64_t t;
  if (!readStep(step, error, t))
    return;
  float lrValue = *lr;
  bool first = t == 1;
  TGC_GRID_LOOP(i, n) {
    float b = first ? 0.0f : loadFloat(buffer, bufferType, i);
    float p = sgdMomentumElement(hp, lrValue, first,
                                 loadFloat(param, paramType, i),
                                 loadFloat(grad, gradType, i), b);
    storeFloat(newBuffer, bufferType, i, b);
    storeFloat(newParam, paramType, i, p);
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
  SgdParams hp = sgdParams(momentum, dampening, weightDecay, nesterov);
  int64_t n = param.numElements();
  // Launched even when empty: the kernel still checks the step.
  unsigned blocks = blocksFor(n, kThreads);
  cudaStream_t stream = streamOf(ctx);
  const float *lrData = static_cast<const float *>(lr.data);
  const int64_t *stepData = static_cast<const int64_t *>(step.data);
  if (!momentumBuffer) {
    sgdKernel<<<blocks, kThreads, 0, stream>>>(
        param.data, param.dtype, grad.data, grad.dtype, lrData, stepData, hp,
        newParam.data, n, ctx.deviceError, ctx.apply);
  } else {
    sgdMomentumKernel<<<blocks, kThreads, 0, stream>>>(
        param.data, param.dtype, grad.data, grad.dtype, momentumBuffer->data,
        momentumBuffer->dtype, lrData, stepData, hp, newParam.data,
        newMomentumBuffer->data, n, ctx.deviceError, ctx.apply);
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
  uint64_t roundingSeed; // 0: the store rounds to nearest
  /// The part number (device i64 scalar), or null: the whole tensor.
  const int64_t *roundingPart;

  /// A new parameter value as it is stored (cpu's `rounded`); `index` is
  /// the element's in the whole tensor.
  __device__ float rounded(float value, int64_t t, int64_t index) const {
    return roundingSeed ? roundBf16Stochastic(value, roundingSeed, t, index)
                        : value;
  }
  /// The index in the whole tensor of the first of `count` elements (cpu's
  /// `firstIndex`).
  __device__ int64_t firstIndex(int64_t count) const {
    return roundingSeed && roundingPart
               ? int64_t(uint64_t(*roundingPart) * uint64_t(count))
               : 0;
  }
};

AdamWParams adamwParams(double beta1, double beta2, double eps,
                        double weightDecay, int64_t roundingSeed,
                        const int64_t *roundingPart = nullptr) {
  return AdamWParams{beta1,
                     beta2,
                     weightDecay,
                     float(beta1),
                     float(1.0 - beta1),
                     float(beta2),
                     float(1.0 - beta2),
                     float(eps),
                     uint64_t(roundingSeed),
                     roundingPart};
}

/// As cpu's AdamWStep: the step's scalars as torch computes them in Python
/// floats (f64), derived by each thread from the device lr and step, and
/// the element update.
struct AdamWStep {
  float stepSize, biasCorrection2Sqrt, decay;

  __device__ AdamWStep(const AdamWParams &hp, float lr, int64_t t) {
    double biasCorrection1 = 1.0 - pow(hp.beta1, double(t));
    double biasCorrection2 = 1.0 - pow(hp.beta2, double(t));
    stepSize = float(__ddiv_rn(double(lr), biasCorrection1));
    biasCorrection2Sqrt = float(__dsqrt_rn(biasCorrection2));
    decay = float(1.0 - __dmul_rn(double(lr), hp.weightDecay));
  }

  /// Updates element `i` of a parameter and its moments (stored in their
  /// types), from `param`, `grad`, `expAvg`, `expAvgSq` into the results
  /// (which may be the operands); `first` is the whole tensor's index of
  /// element 0.
  __device__ void element(const AdamWParams &hp, int64_t t, int64_t first,
                          int64_t i, const void *param, DType paramType,
                          const void *grad, DType gradType, const void *expAvg,
                          DType expAvgType, const void *expAvgSq,
                          DType expAvgSqType, void *newParam, void *newExpAvg,
                          void *newExpAvgSq) const {
    float m = loadFloat(expAvg, expAvgType, i);
    float v = loadFloat(expAvgSq, expAvgSqType, i);
    float p = apply(hp, loadFloat(param, paramType, i),
                    loadFloat(grad, gradType, i), m, v);
    storeFloat(newExpAvg, expAvgType, i, m);
    storeFloat(newExpAvgSq, expAvgSqType, i, v);
    storeFloat(newParam, paramType, i, hp.rounded(p, t, first + i));
  }

  /// The new parameter; `m` and `v` hold the old moments and get the new.
  __device__ float apply(const AdamWParams &hp, float p, float g, float &m,
                         float &v) const {
    float decayed = __fmul_rn(p, decay);
    m = __fadd_rn(__fmul_rn(hp.b1, m), __fmul_rn(hp.oneMinusB1, g));
    v = __fadd_rn(__fmul_rn(hp.b2, v),
                  __fmul_rn(__fmul_rn(hp.oneMinusB2, g), g));
    float denom =
        __fadd_rn(__fdiv_rn(__fsqrt_rn(v), biasCorrection2Sqrt), hp.epsilon);
    return __fsub_rn(decayed, __fmul_rn(stepSize, __fdiv_rn(m, denom)));
  }
};
} // namespace

__global__ void adamwKernel(const void *param, DType paramType,
                            const void *grad, DType gradType,
                            const void *expAvg, DType expAvgType,
                            const void *expAvgSq, DType expAvgSqType,
                            const float *lr, const int64_t *step,
                            AdamWParams hp, void *newParam, void *newExpAvg,
                            void *newExpAvgSq, int64_t n, DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
  int64_t t;
  if (!readStep(step, error, t))
    return;
  AdamWStep update(hp, *lr, t);
  int64_t first = hp.firstIndex(n);
  TGC_GRID_LOOP(i, n) {
    update.element(hp, t, first, i, param, paramType, grad, gradType, expAvg,
                   expAvgType, expAvgSq, expAvgSqType, newParam, newExpAvg,
                   newExpAvgSq);
  }
}

Status adamwUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                   const TensorRef &expAvg, const TensorRef &expAvgSq,
                   const TensorRef &lr, const TensorRef &step, double beta1,
                   double beta2, double eps, double weightDecay,
                   TensorRef &newParam, TensorRef &newExpAvg,
                   TensorRef &newExpAvgSq, int64_t roundingSeed,
                   const int64_t *roundingPart) {
  // The loader checked the rounding seed (bf16 parameters only).
  AdamWParams hp =
      adamwParams(beta1, beta2, eps, weightDecay, roundingSeed, roundingPart);
  int64_t n = param.numElements();
  // Launched even when empty: the kernel still checks the step.
  adamwKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype, expAvg.data, expAvg.dtype,
      expAvgSq.data, expAvgSq.dtype, static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, newParam.data,
      newExpAvg.data, newExpAvgSq.data, n, ctx.deviceError, ctx.apply);
  TGC_CUDA_LAUNCH("adamw_update");
  return Status::success();
}

/// The tensors of one multi-tensor AdamW launch, passed by value in the
/// kernel's parameters (tgc/Support/MultiTensor.h): each tensor's operands,
/// results, element types and count, and the launch's first block of each
/// (firstBlock[tensors] is the grid's size).
struct MultiAdamWTable {
  const void *param[kTensorsPerLaunch], *grad[kTensorsPerLaunch],
      *expAvg[kTensorsPerLaunch], *expAvgSq[kTensorsPerLaunch];
  void *newParam[kTensorsPerLaunch], *newExpAvg[kTensorsPerLaunch],
      *newExpAvgSq[kTensorsPerLaunch];
  int64_t count[kTensorsPerLaunch];
  int64_t firstBlock[kTensorsPerLaunch + 1];
  DType paramType[kTensorsPerLaunch], gradType[kTensorsPerLaunch],
      expAvgType[kTensorsPerLaunch], expAvgSqType[kTensorsPerLaunch];
  int tensors;
};
static_assert(sizeof(MultiAdamWTable) + sizeof(AdamWParams) + 64 <=
                  kKernelParamBytes,
              "a kernel's parameters hold at most 32,764 bytes");

/// adamwKernel's element update over the blocks of the launch's tensors:
/// each block updates elements of one tensor, as the tensor's own launch
/// would.
__global__ void multiAdamwKernel(MultiAdamWTable table, const float *lr,
                                 const int64_t *step, AdamWParams hp,
                                 DeviceError *error, const uint8_t *apply) {
  if (skipped(apply))
    return;
  int64_t t;
  if (!readStep(step, error, t))
    return;
  AdamWStep update(hp, *lr, t);
  TensorBlock b = tensorBlock(table.firstBlock, table.tensors);
  int k = b.tensor;
  for (int64_t i = b.first; i < table.count[k]; i += b.stride)
    update.element(hp, t, 0, i, table.param[k], table.paramType[k],
                   table.grad[k], table.gradType[k], table.expAvg[k],
                   table.expAvgType[k], table.expAvgSq[k],
                   table.expAvgSqType[k], table.newParam[k], table.newExpAvg[k],
                   table.newExpAvgSq[k]);
}

Status multiAdamwUpdate(Context &ctx, const std::vector<TensorRef> &in,
                        std::vector<TensorRef> &out, double beta1,
                        double beta2, double eps, double weightDecay) {
  // N params, grads, exp_avgs and exp_avg_sqs, lr and step; 3 x N
  // results (the loader checked).
  size_t n = out.size() / 3;
  AdamWParams hp = adamwParams(beta1, beta2, eps, weightDecay, 0);
  const auto *lr = static_cast<const float *>(in[4 * n].data);
  const auto *step = static_cast<const int64_t *>(in[4 * n + 1].data);
  for (size_t first = 0; first < n; first += size_t(kTensorsPerLaunch)) {
    MultiAdamWTable table{};
    int64_t blocks = 0;
    for (size_t i = first; i < n && i < first + size_t(kTensorsPerLaunch);
         ++i) {
      int k = table.tensors++;
      table.param[k] = in[i].data;
      table.grad[k] = in[n + i].data;
      table.expAvg[k] = in[2 * n + i].data;
      table.expAvgSq[k] = in[3 * n + i].data;
      table.newParam[k] = out[i].data;
      table.newExpAvg[k] = out[n + i].data;
      table.newExpAvgSq[k] = out[2 * n + i].data;
      table.paramType[k] = in[i].dtype;
      table.gradType[k] = in[n + i].dtype;
      table.expAvgType[k] = in[2 * n + i].dtype;
      table.expAvgSqType[k] = in[3 * n + i].dtype;
      table.count[k] = in[i].numElements();
      table.firstBlock[k] = blocks;
      // At least one block, which checks the step, as adamwKernel's.
      blocks += blocksFor(table.count[k], kThreads);
    }
    table.firstBlock[table.tensors] = blocks;
    if (blocks > int64_t(0x7fffffff))
      return Status::failure("multi_adamw_update: too many blocks for one "
                             "launch");
    multiAdamwKernel<<<unsigned(blocks), kThreads, 0, streamOf(ctx)>>>(
        table, lr, step, hp, ctx.deviceError, ctx.apply);
    TGC_CUDA_LAUNCH("multi_adamw_update");
  }
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
constexpr int kMaxPerThread = int(cpu::kMaxQuantBlock / kThreads);

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

//===----------------------------------------------------------------------===//
// 4-bit state (Li et al.; torchao's AdamW4bit)
//===----------------------------------------------------------------------===//
//
// As the 8-bit update, each thread holding pairs of elements, those of one
// byte of the packed codes: thread j's pair k is elements 2 (j + k *
// blockDim.x) and the next, so each thread reads and writes whole bytes.

namespace {
constexpr int kMaxPairsPerThread = int(cpu::kMaxQuantBlock / (2 * kThreads));

/// Threads per block of 4-bit state: one per pair of elements.
inline unsigned quant4Threads(int64_t blockSize) {
  return unsigned(blockSize / 2 < int64_t(kThreads) ? blockSize / 2
                                                    : kThreads);
}

/// Requantizes this thread's pairs of new values (pair k in values[2k],
/// values[2k + 1]) into packed codes with the scale max(absmax, 1e-12);
/// thread 0 stores the scale.
__device__ inline void requantizeBlock4(const float *values, float localMax,
                                        const float *map, uint8_t *codes,
                                        float *scales, int64_t first,
                                        int64_t size, float *scratch) {
  float scale = fmaxf(blockMax(localMax, scratch), 1e-12f);
  for (int k = 0; k < kMaxPairsPerThread; ++k) {
    int64_t e = 2 * (threadIdx.x + int64_t(k) * blockDim.x);
    if (e >= size)
      break;
    unsigned high = quantize4(map, __fdiv_rn(values[2 * k], scale));
    unsigned low =
        e + 1 < size ? quantize4(map, __fdiv_rn(values[2 * k + 1], scale)) : 0;
    codes[(first + e) >> 1] = uint8_t(high << 4 | low);
  }
  if (threadIdx.x == 0)
    scales[blockIdx.x] = scale;
}
} // namespace

//===----------------------------------------------------------------------===//
// AdamW over 8-bit or 4-bit state: one kernel, the codes' layout a policy
//===----------------------------------------------------------------------===//
//
// A thread's slot k holds kWidth consecutive elements (one, or the two of a
// byte of packed 4-bit codes) starting at kWidth (threadIdx.x + k
// blockDim.x), so each thread reads and writes whole bytes of codes.

namespace {
/// bitsandbytes' 8-bit blockwise dynamic quantization: one code a byte,
/// the nearest of 256 map entries below the block's absmax.
struct Codes8 {
  static constexpr int kWidth = 1, kSlots = kMaxPerThread;
  struct Map {
    float values[256], midpoints[255];
  };
  __device__ static void load(const float *map, Map &shared) {
    loadMap(map, shared.values, shared.midpoints);
  }
  __device__ static unsigned code(const uint8_t *codes, int64_t i) {
    return codes[i];
  }
  __device__ static void requantize(const float *values, float localMax,
                                    const Map &map, bool isSigned,
                                    uint8_t *codes, float *absmax,
                                    int64_t first, int64_t size,
                                    float *scratch) {
    requantizeBlock(values, localMax, map.values, map.midpoints, isSigned,
                    codes, absmax, first, size, scratch);
  }
  static unsigned threads(int64_t blockSize) { return quantThreads(blockSize); }
};

/// torchao's 4-bit state: two codes a byte (the first element in the high
/// nibble), 16 map entries, the block's scale max(absmax, 1e-12).
struct Codes4 {
  static constexpr int kWidth = 2, kSlots = kMaxPairsPerThread;
  struct Map {
    float values[16];
  };
  __device__ static void load(const float *map, Map &shared) {
    for (int e = threadIdx.x; e < 16; e += blockDim.x)
      shared.values[e] = map[e];
  }
  __device__ static unsigned code(const uint8_t *codes, int64_t i) {
    return (codes[i >> 1] >> (i & 1 ? 0 : 4)) & 0xFu;
  }
  __device__ static void requantize(const float *values, float localMax,
                                    const Map &map, bool, uint8_t *codes,
                                    float *scales, int64_t first, int64_t size,
                                    float *scratch) {
    requantizeBlock4(values, localMax, map.values, codes, scales, first, size,
                     scratch);
  }
  static unsigned threads(int64_t blockSize) {
    return quant4Threads(blockSize);
  }
};
} // namespace

template <typename Codes>
__global__ void quantizedAdamWKernel(
    const void *param, DType paramType, const void *grad, DType gradType,
    const uint8_t *mCodes, const float *mAbsmax, const uint8_t *vCodes,
    const float *vAbsmax, const float *mapSigned, const float *mapUnsigned,
    const float *lr, const int64_t *step, AdamWParams hp, int64_t blockSize,
    void *newParam, uint8_t *newMCodes, float *newMAbsmax, uint8_t *newVCodes,
    float *newVAbsmax, int64_t n, DeviceError *error, const uint8_t *apply) {
  if (skipped(apply))
    return;
  __shared__ typename Codes::Map mapS, mapU;
  __shared__ float scratch[kThreads];
  int64_t t;
  if (!readStep(step, error, t))
    return;
  Codes::load(mapSigned, mapS);
  Codes::load(mapUnsigned, mapU);
  __syncthreads();
  AdamWStep update(hp, *lr, t);
  int64_t whole = hp.firstIndex(n);
  int64_t block = blockIdx.x;
  int64_t first = block * blockSize;
  int64_t size = n - first < blockSize ? n - first : blockSize;
  float oldMAbsmax = mAbsmax[block], oldVAbsmax = vAbsmax[block];
  constexpr int kValues = Codes::kWidth * Codes::kSlots;
  float mValues[kValues], vValues[kValues];
  float mMax = 0.0f, vMax = 0.0f;
  for (int k = 0; k < Codes::kSlots; ++k) {
    int64_t e = Codes::kWidth * (threadIdx.x + int64_t(k) * blockDim.x);
    if (e >= size)
      break;
    for (int h = 0; h < Codes::kWidth && e + h < size; ++h) {
      int64_t i = first + e + h;
      float &m = mValues[Codes::kWidth * k + h];
      float &v = vValues[Codes::kWidth * k + h];
      m = __fmul_rn(mapS.values[Codes::code(mCodes, i)], oldMAbsmax);
      v = __fmul_rn(mapU.values[Codes::code(vCodes, i)], oldVAbsmax);
      float p = update.apply(hp, loadFloat(param, paramType, i),
                             loadFloat(grad, gradType, i), m, v);
      mMax = fmaxf(mMax, fabsf(m));
      vMax = fmaxf(vMax, fabsf(v));
      storeFloat(newParam, paramType, i, hp.rounded(p, t, whole + i));
    }
  }
  Codes::requantize(mValues, mMax, mapS, /*isSigned=*/true, newMCodes,
                    newMAbsmax, first, size, scratch);
  Codes::requantize(vValues, vMax, mapU, /*isSigned=*/false, newVCodes,
                    newVAbsmax, first, size, scratch);
}

static_assert(int64_t(kMaxPerThread) * kThreads == cpu::kMaxQuantBlock,
              "the 8-bit kernels hold the largest block in registers");
static_assert(int64_t(kMaxPairsPerThread) * 2 * kThreads ==
                  cpu::kMaxQuantBlock,
              "the 4-bit kernel holds the largest block in registers");

namespace {
/// Launches the update over the blocks of state (at least one: the kernel
/// still checks the step when there are no elements).
template <typename Codes>
void launchQuantizedAdamW(Context &ctx, const TensorRef &param,
                          const TensorRef &grad, const TensorRef &lr,
                          const TensorRef &step,
                          const cpu::QuantizedStateRefs &m,
                          const cpu::QuantizedStateRefs &v,
                          const cpu::AdamWOptions &options, int64_t blockSize,
                          TensorRef &newParam) {
  AdamWParams hp = adamwParams(options.beta1, options.beta2, options.eps,
                               options.weightDecay, options.roundingSeed,
                               options.roundingPart);
  int64_t n = param.numElements();
  int64_t blocks = (n + blockSize - 1) / blockSize;
  quantizedAdamWKernel<Codes><<<unsigned(blocks > 0 ? blocks : 1),
                                Codes::threads(blockSize), 0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype,
      static_cast<const uint8_t *>(m.codes.data),
      static_cast<const float *>(m.absmax.data),
      static_cast<const uint8_t *>(v.codes.data),
      static_cast<const float *>(v.absmax.data),
      static_cast<const float *>(m.map.data),
      static_cast<const float *>(v.map.data),
      static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, blockSize, newParam.data,
      static_cast<uint8_t *>(m.newCodes.data),
      static_cast<float *>(m.newAbsmax.data),
      static_cast<uint8_t *>(v.newCodes.data),
      static_cast<float *>(v.newAbsmax.data), n, ctx.deviceError, ctx.apply);
}
} // namespace

// The loader checked the block size (a power of two up to 4096, even for
// 4-bit state) and the rounding seed (bf16 parameters only).
Status adamw8bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step, const cpu::QuantizedStateRefs &m8,
                       const cpu::QuantizedStateRefs &v8,
                       const cpu::AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam) {
  launchQuantizedAdamW<Codes8>(ctx, param, grad, lr, step, m8, v8, options,
                               blockSize, newParam);
  TGC_CUDA_LAUNCH("adamw_8bit_update");
  return Status::success();
}

Status adamw4bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step, const cpu::QuantizedStateRefs &m4,
                       const cpu::QuantizedStateRefs &v4,
                       const cpu::AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam) {
  launchQuantizedAdamW<Codes4>(ctx, param, grad, lr, step, m4, v4, options,
                               blockSize, newParam);
  TGC_CUDA_LAUNCH("adamw_4bit_update");
  return Status::success();
}

__global__ void sgd8bitKernel(const void *param, DType paramType,
                              const void *grad, DType gradType,
                              const uint8_t *codes, const float *absmax,
                              const float *map, const float *lr,
                              const int64_t *step, SgdParams hp,
                              int64_t blockSize, void *newParam,
                              uint8_t *newCodes, float *newAbsmax, int64_t n,
                              DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
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
    float &b = values[k];
    b = first ? 0.0f : __fmul_rn(mapS[codes[i]], oldAbsmax);
    float p = sgdMomentumElement(hp, lrValue, first,
                                 loadFloat(param, paramType, i),
                                 loadFloat(grad, gradType, i), b);
    localMax = fmaxf(localMax, fabsf(b));
    storeFloat(newParam, paramType, i, p);
  }
  requantizeBlock(values, localMax, mapS, midS, /*isSigned=*/true, newCodes,
                  newAbsmax, start, size, scratch);
}

Status sgd8bitUpdate(Context &ctx, const TensorRef &param,
                     const TensorRef &grad, const TensorRef &lr,
                     const TensorRef &step, const cpu::QuantizedStateRefs &buffer,
                     const cpu::SGDOptions &options, int64_t blockSize,
                     TensorRef &newParam) {
  // The loader checked the block size (a power of two up to 4096).
  SgdParams hp = sgdParams(options.momentum, options.dampening,
                           options.weightDecay, options.nesterov);
  int64_t n = param.numElements();
  int64_t blocks = (n + blockSize - 1) / blockSize;
  sgd8bitKernel<<<unsigned(blocks > 0 ? blocks : 1), quantThreads(blockSize),
                  0, streamOf(ctx)>>>(
      param.data, param.dtype, grad.data, grad.dtype,
      static_cast<const uint8_t *>(buffer.codes.data),
      static_cast<const float *>(buffer.absmax.data),
      static_cast<const float *>(buffer.map.data),
      static_cast<const float *>(lr.data),
      static_cast<const int64_t *>(step.data), hp, blockSize, newParam.data,
      static_cast<uint8_t *>(buffer.newCodes.data),
      static_cast<float *>(buffer.newAbsmax.data), n, ctx.deviceError, ctx.apply);
  TGC_CUDA_LAUNCH("sgd_8bit_update");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Global norm
//===----------------------------------------------------------------------===//

/// Adds each thread's `acc` of this block into `*total`: a tree in shared
/// memory, then one atomic add per block.
__device__ void addBlockSum(double acc, double *total) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(total, partial[0]);
}

/// Adds the sum of squares of `x` into `*sum`: f64 per thread, a tree per
/// block, one atomic add per block.
__global__ void sumSquaresKernel(const void *x, DType dtype, int64_t n,
                                 double *sum) {
  double acc = 0.0;
  TGC_GRID_LOOP(i, n) {
    double v = loadFloat(x, dtype, i);
    acc += v * v;
  }
  addBlockSum(acc, sum);
}

__global__ void sqrtToF32Kernel(const double *sum, float *result) {
  *result = float(__dsqrt_rn(*sum));
}

//===----------------------------------------------------------------------===//
// Adafactor
//===----------------------------------------------------------------------===//
//
// Several launches, as the update needs whole-tensor reductions: the
// parameter's sum of squares; the row and column sums of grad^2 + eps1
// (factored) into f64 scratch; the new state; the row state's mean; the
// update's sum of squares; the parameter update. Each thread derives the
// step's scalars from the device step, lr and sums as the CPU kernel
// does.

namespace {
struct AdafactorParams {
  double decayRate, eps2, weightDecay;
  float eps1, clipThreshold;
  bool relativeStep, scaleParameter, warmupInit, factored;
  int64_t count, batches, n, m;
};

/// What the CPU kernel's adafactorScalars computes, on the device.
struct AdafactorStep {
  float lr, beta2t, oneMinusBeta2t, decay;
};

__device__ inline AdafactorStep adafactorStep(const AdafactorParams &hp,
                                              int64_t t, float lr,
                                              double paramSquares) {
  AdafactorStep s;
  double step = double(t);
  double relative = double(lr);
  if (hp.relativeStep) {
    double cap = hp.warmupInit ? 1e-6 * step : 1e-2;
    double inverse = 1.0 / __dsqrt_rn(step);
    relative = cap < inverse ? cap : inverse;
  }
  double scale = 1.0;
  if (hp.scaleParameter) {
    double rms = hp.count ? __dsqrt_rn(paramSquares / double(hp.count)) : 0.0;
    scale = hp.eps2 > rms ? hp.eps2 : rms;
  }
  s.lr = float(scale * relative);
  double beta2t = 1.0 - pow(step, hp.decayRate);
  s.beta2t = float(beta2t);
  s.oneMinusBeta2t = float(1.0 - beta2t);
  s.decay = float(-hp.weightDecay * double(s.lr));
  return s;
}

/// Row and column sums of grad^2 + eps1 (factored), accumulated in f64.
__global__ void adafactorSumsKernel(const void *grad, DType gradType,
                                    AdafactorParams hp, double *rowSum,
                                    double *colSum) {
  TGC_GRID_LOOP(index, hp.count) {
    float g = loadFloat(grad, gradType, index);
    double u = __fadd_rn(__fmul_rn(g, g), hp.eps1);
    int64_t j = index % hp.m, i = (index / hp.m) % hp.n,
            b = index / (hp.n * hp.m);
    atomicAdd(&rowSum[b * hp.n + i], u);
    atomicAdd(&colSum[b * hp.m + j], u);
  }
}

/// The new second moment: factored rows and columns from the sums, or the
/// full one from the gradient; adds the new rows into rowTotal[b].
__global__ void adafactorStateKernel(const void *grad, DType gradType,
                                     const float *state0, const float *state1,
                                     const float *lr, const int64_t *step,
                                     double *sums, AdafactorParams hp,
                                     float *newState0, float *newState1,
                                     DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
  int64_t t;
  if (!readStep(step, error, t))
    return;
  AdafactorStep s = adafactorStep(hp, t, *lr, sums[0]);
  if (!hp.factored) {
    TGC_GRID_LOOP(i, hp.count) {
      float g = loadFloat(grad, gradType, i);
      float u = __fadd_rn(__fmul_rn(g, g), hp.eps1);
      newState0[i] = __fadd_rn(__fmul_rn(s.beta2t, state0[i]),
                               __fmul_rn(s.oneMinusBeta2t, u));
    }
    return;
  }
  const double *rowSum = sums + 2 + hp.batches;
  const double *colSum = rowSum + hp.batches * hp.n;
  double *rowTotal = sums + 2;
  int64_t rows = hp.batches * hp.n, cols = hp.batches * hp.m;
  TGC_GRID_LOOP(k, rows + cols) {
    if (k < rows) {
      float mean = float(rowSum[k] / double(hp.m));
      float r = __fadd_rn(__fmul_rn(s.beta2t, state0[k]),
                          __fmul_rn(s.oneMinusBeta2t, mean));
      newState0[k] = r;
      atomicAdd(&rowTotal[k / hp.n], double(r));
    } else {
      int64_t c = k - rows;
      float mean = float(colSum[c] / double(hp.n));
      newState1[c] = __fadd_rn(__fmul_rn(s.beta2t, state1[c]),
                               __fmul_rn(s.oneMinusBeta2t, mean));
    }
  }
}

/// The unclipped update of element `index` (before the learning rate).
__device__ inline float adafactorDirection(const void *grad, DType gradType,
                                           const float *state0,
                                           const float *state1,
                                           const double *sums,
                                           const AdafactorParams &hp,
                                           int64_t index) {
  float g = loadFloat(grad, gradType, index);
  if (!hp.factored)
    return __fdiv_rn(g, __fsqrt_rn(state0[index]));
  int64_t j = index % hp.m, i = (index / hp.m) % hp.n,
          b = index / (hp.n * hp.m);
  float rowMean = float(sums[2 + b] / double(hp.n));
  float r = __fdiv_rn(1.0f, __fsqrt_rn(__fdiv_rn(state0[b * hp.n + i],
                                                   rowMean)));
  float c = __fdiv_rn(1.0f, __fsqrt_rn(state1[b * hp.m + j]));
  return __fmul_rn(__fmul_rn(r, c), g);
}

__global__ void adafactorUpdateSquaresKernel(const void *grad, DType gradType,
                                             const float *state0,
                                             const float *state1,
                                             double *sums, AdafactorParams hp) {
  double acc = 0.0;
  TGC_GRID_LOOP(i, hp.count) {
    double u = adafactorDirection(grad, gradType, state0, state1, sums, hp, i);
    acc += u * u;
  }
  addBlockSum(acc, &sums[1]);
}

__global__ void adafactorApplyKernel(const void *param, DType paramType,
                                     const void *grad, DType gradType,
                                     const float *state0, const float *state1,
                                     const float *lr, const int64_t *step,
                                     const double *sums, AdafactorParams hp,
                                     void *newParam, DeviceError *error,
    const uint8_t *apply) {
  if (skipped(apply))
    return;
  int64_t t;
  if (!readStep(step, error, t))
    return;
  AdafactorStep s = adafactorStep(hp, t, *lr, sums[0]);
  float rms = hp.count ? float(__dsqrt_rn(sums[1] / double(hp.count))) : 0.0f;
  float denom = __fdiv_rn(rms, hp.clipThreshold);
  denom = denom > 1.0f ? denom : 1.0f;
  TGC_GRID_LOOP(i, hp.count) {
    float u = __fmul_rn(
        __fdiv_rn(adafactorDirection(grad, gradType, state0, state1, sums, hp,
                                     i),
                  denom),
        s.lr);
    float p = loadFloat(param, paramType, i);
    if (hp.weightDecay != 0.0)
      p = __fadd_rn(p, __fmul_rn(p, s.decay));
    storeFloat(newParam, paramType, i, __fsub_rn(p, u));
  }
}
} // namespace

Status adafactorUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad,
                       const std::vector<TensorRef> &state,
                       const TensorRef &lr, const TensorRef &step,
                       const cpu::AdafactorOptions &options,
                       TensorRef &newParam, std::vector<TensorRef> &newState) {
  AdafactorParams hp;
  hp.factored = param.rank() >= 2;
  if (state.size() != (hp.factored ? 2u : 1u) ||
      newState.size() != state.size())
    return Status::failure("adafactor_update: a parameter of rank >= 2 has "
                           "row and column state, others one tensor");
  hp.decayRate = options.decayRate;
  hp.eps2 = options.eps2;
  hp.weightDecay = options.weightDecay;
  hp.eps1 = float(options.eps1);
  hp.clipThreshold = float(options.clipThreshold);
  hp.relativeStep = options.relativeStep;
  hp.scaleParameter = options.scaleParameter;
  hp.warmupInit = options.warmupInit;
  hp.count = param.numElements();
  hp.m = hp.factored ? param.shape.back() : hp.count;
  hp.n = hp.factored ? param.shape[param.shape.size() - 2] : 1;
  hp.batches = (hp.n == 0 || hp.m == 0) ? 0 : hp.count / (hp.n * hp.m);
  // Scratch (f64): the parameter's and the update's sums of squares, the
  // row state's total per batch, then the row and column sums.
  int64_t doubles = 2 + hp.batches +
                    (hp.factored ? hp.batches * (hp.n + hp.m) : 0);
  StreamScratch scratch;
  if (Status status = scratch.allocate(ctx, size_t(doubles) * sizeof(double));
      !status.ok())
    return status;
  double *sums = static_cast<double *>(scratch.data());
  cudaStream_t stream = streamOf(ctx);
  TGC_CUDA_CALL(cudaMemsetAsync(sums, 0, size_t(doubles) * sizeof(double),
                                stream));
  unsigned blocks = blocksFor(hp.count, kThreads);
  if (hp.count > 0) {
    sumSquaresKernel<<<blocks, kThreads, 0, stream>>>(param.data, param.dtype,
                                                      hp.count, sums);
    TGC_CUDA_LAUNCH("adafactor_update");
  }
  double *rowSum = sums + 2 + hp.batches;
  if (hp.factored && hp.count > 0) {
    adafactorSumsKernel<<<blocks, kThreads, 0, stream>>>(
        grad.data, grad.dtype, hp, rowSum, rowSum + hp.batches * hp.n);
    TGC_CUDA_LAUNCH("adafactor_update");
  }
  const float *lrData = static_cast<const float *>(lr.data);
  const int64_t *stepData = static_cast<const int64_t *>(step.data);
  const float *state0 = static_cast<const float *>(state[0].data);
  const float *state1 =
      hp.factored ? static_cast<const float *>(state[1].data) : nullptr;
  float *newState0 = static_cast<float *>(newState[0].data);
  float *newState1 =
      hp.factored ? static_cast<float *>(newState[1].data) : nullptr;
  int64_t stateCount =
      hp.factored ? hp.batches * (hp.n + hp.m) : hp.count;
  // Launched even when empty: the kernels still check the step.
  adafactorStateKernel<<<blocksFor(stateCount, kThreads), kThreads, 0,
                         stream>>>(grad.data, grad.dtype, state0, state1,
                                   lrData, stepData, sums, hp, newState0,
                                   newState1, ctx.deviceError, ctx.apply);
  TGC_CUDA_LAUNCH("adafactor_update");
  if (hp.count > 0) {
    adafactorUpdateSquaresKernel<<<blocks, kThreads, 0, stream>>>(
        grad.data, grad.dtype, newState0, newState1, sums, hp);
    TGC_CUDA_LAUNCH("adafactor_update");
  }
  adafactorApplyKernel<<<blocks, kThreads, 0, stream>>>(
      param.data, param.dtype, grad.data, grad.dtype, newState0, newState1,
      lrData, stepData, sums, hp, newParam.data, ctx.deviceError, ctx.apply);
  TGC_CUDA_LAUNCH("adafactor_update");
  return Status::success();
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
