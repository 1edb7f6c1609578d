//===- NN.cu - softmax, layer norm, embedding, attention, cross-entropy ---===//
//
// The neural-network ops with row structure, and their gradients, on the
// GPU. Row kernels give each row to one block of rowThreads(length)
// threads, one warp to 1024 (statistics reduced in f32
// through warp shuffles) and read every element they write before writing
// it, so a result may reuse its operand's buffer as on the CPU. Sums across
// rows (layer-norm parameter gradients, the embedding and gather
// scatter-adds) go through f32 scratch in the context's workspace and are
// rounded once into the result's type. Attention on 16-bit heads of up to 64
// elements runs the fused kernels of FlashAttention.cu (tensor cores, no score
// matrix in memory); otherwise it follows the CPU formulation: cuBLASLt GEMMs
// in f32 around a masked softmax kernel, the score matrix materialised in
// the workspace for as many heads at a time as fit, the gradient
// recomputing the probabilities. Bad indices raise the context's error flag
// and the rows they address are skipped.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "FlashAttention.h"
#include "Linalg.h"
#include "tgc/Support/FusedAttention.h"
#include "tgc/Support/ShapeRules.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace tgc::rt::cuda {

namespace {

/// Threads per block of a row kernel, sized to the row: about four
/// elements per thread in whole warps, from one warp for a short row (its
/// reductions are then a warp's shuffles and many rows share an SM) to
/// 1024 for a long one (a vocabulary of logits).
unsigned rowThreads(int64_t length) {
  int64_t warps = (length + 4 * 32 - 1) / (4 * 32);
  return unsigned(32 * std::clamp<int64_t>(warps, 1, 32));
}

/// Blocks for one block per row with a grid-stride loop over rows.
unsigned rowBlocks(int64_t rows) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(rows, 65535 * 8)));
}

/// Byte offsets of the pieces of one workspace reservation, each 256-byte
/// aligned.
struct WorkspaceLayout {
  size_t total = 0;
  size_t add(size_t bytes) {
    size_t offset = total;
    total += (bytes + 255) / 256 * 256;
    return offset;
  }
};

template <typename T> T *at(Context &ctx, size_t offset) {
  return reinterpret_cast<T *>(static_cast<char *>(ctx.workspace) + offset);
}

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

/// The sum of `value` over the block, returned to every thread. Every thread
/// of the block must call it.
template <typename T> __device__ T blockSum(T value) {
  __shared__ T partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warpSum(value);
  __syncthreads(); // a previous call may still be reading `partial`
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  value = lane < int(blockDim.x / 32) ? partial[lane] : T(0);
  return warpSum(value);
}

/// The maximum of `value` over the block (NaNs ignored, as std::max over a
/// row does), returned to every thread.
__device__ float blockMax(float value) {
  __shared__ float partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warpMax(value);
  __syncthreads();
  if (lane == 0)
    partial[warp] = value;
  __syncthreads();
  value = lane < int(blockDim.x / 32) ? partial[lane] : -INFINITY;
  return warpMax(value);
}

//===----------------------------------------------------------------------===//
// f32 staging
//===----------------------------------------------------------------------===//

__global__ void widenToF32Kernel(const void *input, DType dtype, int64_t count,
                                 float *output) {
  TGC_GRID_LOOP(i, count) { output[i] = loadFloat(input, dtype, i); }
}

/// Rounds `count` f32 values into `output` starting at element `offset`.
__global__ void narrowFromF32Kernel(const float *input, int64_t count,
                                    void *output, DType dtype, int64_t offset) {
  TGC_GRID_LOOP(i, count) { storeFloat(output, dtype, offset + i, input[i]); }
}

/// Rounds `count` f32 values, rows of `width`, into rows `pitch` elements
/// apart of `output` (a tensor's part of packed rows).
__global__ void narrowRowsFromF32Kernel(const float *input, int64_t count,
                                        int64_t width, void *output,
                                        DType dtype, int64_t pitch) {
  TGC_GRID_LOOP(i, count) {
    storeFloat(output, dtype, (i / width) * pitch + i % width, input[i]);
  }
}

/// Rounds the f32 `first` and (when not null) `second`, `count` values
/// each, into their results in one pass: a norm's weight and bias
/// gradients.
__global__ void narrowPairKernel(const float *first, void *firstOut,
                                 DType firstType, const float *second,
                                 void *secondOut, DType secondType,
                                 int64_t count) {
  TGC_GRID_LOOP(i, count) {
    if (firstOut)
      storeFloat(firstOut, firstType, i, first[i]);
    if (secondOut)
      storeFloat(secondOut, secondType, i, second[i]);
  }
}

Status widenToF32(Context &ctx, const TensorRef &t, float *output) {
  int64_t count = t.numElements();
  if (count == 0)
    return Status::success();
  widenToF32Kernel<<<blocksFor(count), 256, 0, streamOf(ctx)>>>(t.data, t.dtype,
                                                                count, output);
  TGC_CUDA_LAUNCH("widenToF32Kernel");
  return Status::success();
}

Status narrowFromF32(Context &ctx, const float *input, int64_t count,
                     TensorRef &t, int64_t offset = 0) {
  if (count == 0)
    return Status::success();
  narrowFromF32Kernel<<<blocksFor(count), 256, 0, streamOf(ctx)>>>(
      input, count, t.data, t.dtype, offset);
  TGC_CUDA_LAUNCH("narrowFromF32Kernel");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Softmax kernels
//===----------------------------------------------------------------------===//

/// Softmax of contiguous rows, one block per row.
__global__ void softmaxRowsKernel(const void *input, void *result, DType dtype,
                                  int64_t rows, int64_t length) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * length;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      max = fmaxf(max, loadFloat(input, dtype, base + j));
    max = blockMax(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      sum += expf(loadFloat(input, dtype, base + j) - max);
    sum = blockSum(sum);
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      storeFloat(result, dtype, base + j,
                 expf(loadFloat(input, dtype, base + j) - max) / sum);
  }
}

/// Softmax along a non-last axis: one thread per (outer, inner) position
/// walks its `length` elements `inner` apart, so neighbouring threads read
/// neighbouring elements.
__global__ void softmaxColumnsKernel(const void *input, void *result,
                                     DType dtype, int64_t outer, int64_t length,
                                     int64_t inner) {
  TGC_GRID_LOOP(c, outer * inner) {
    int64_t base = (c / inner) * length * inner + c % inner;
    float max = -INFINITY;
    for (int64_t j = 0; j < length; ++j)
      max = fmaxf(max, loadFloat(input, dtype, base + j * inner));
    float sum = 0.0f;
    for (int64_t j = 0; j < length; ++j)
      sum += expf(loadFloat(input, dtype, base + j * inner) - max);
    for (int64_t j = 0; j < length; ++j) {
      int64_t i = base + j * inner;
      storeFloat(result, dtype, i,
                 expf(loadFloat(input, dtype, i) - max) / sum);
    }
  }
}

/// `result = output * (grad - sum(grad * output))` along contiguous rows.
__global__ void softmaxGradRowsKernel(const void *output, const void *grad,
                                      void *result, DType dtype, int64_t rows,
                                      int64_t length) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * length;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      dot +=
          loadFloat(grad, dtype, base + j) * loadFloat(output, dtype, base + j);
    dot = blockSum(dot);
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      int64_t i = base + j;
      float y = loadFloat(output, dtype, i);
      storeFloat(result, dtype, i, y * (loadFloat(grad, dtype, i) - dot));
    }
  }
}

__global__ void softmaxGradColumnsKernel(const void *output, const void *grad,
                                         void *result, DType dtype,
                                         int64_t outer, int64_t length,
                                         int64_t inner) {
  TGC_GRID_LOOP(c, outer * inner) {
    int64_t base = (c / inner) * length * inner + c % inner;
    float dot = 0.0f;
    for (int64_t j = 0; j < length; ++j)
      dot += loadFloat(grad, dtype, base + j * inner) *
             loadFloat(output, dtype, base + j * inner);
    for (int64_t j = 0; j < length; ++j) {
      int64_t i = base + j * inner;
      float y = loadFloat(output, dtype, i);
      storeFloat(result, dtype, i, y * (loadFloat(grad, dtype, i) - dot));
    }
  }
}

/// Splits `shape` around `axis` into the sizes before, along and after it;
/// fails when the axis is out of range.
Status splitAround(const std::vector<int64_t> &shape, int64_t axis,
                   const char *op, int64_t &outer, int64_t &length,
                   int64_t &inner) {
  int64_t rank = int64_t(shape.size());
  if (axis < -rank || axis >= rank)
    return Status::failure(std::string(op) + " axis " + std::to_string(axis) +
                           " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  length = shape[axis];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Layer normalization kernels
//===----------------------------------------------------------------------===//

// The kernels serve layer norm (`centered`) and RMS norm (not centered: the
// mean is taken as 0, there is no bias, and the input gradient has no
// mean(g) term).

/// Mean and 1 / sqrt(biased variance + epsilon) of a row, two passes in f32;
/// not centered, 0 and 1 / sqrt(mean(x^2) + epsilon).
__device__ void rowStatistics(const void *input, DType dtype, int64_t base,
                              int64_t length, float epsilon, bool centered,
                              float &mean, float &rstd) {
  mean = 0.0f;
  if (centered) {
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      sum += loadFloat(input, dtype, base + j);
    mean = blockSum(sum) / float(length);
  }
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    float centered = loadFloat(input, dtype, base + j) - mean;
    squares += centered * centered;
  }
  rstd = 1.0f / sqrtf(blockSum(squares) / float(length) + epsilon);
}

/// A norm's residual add (tg.layer_norm's addend): `sum` = `lhs` +
/// `addend`, each read in its own type; the sum is the norm's input.
struct NormAddend {
  const void *lhs = nullptr, *addend = nullptr;
  DType lhsType = DType::F32, addendType = DType::F32;
  void *sum = nullptr;
};

/// Layer norm; RMS norm when not centered (`bias` is then null). The
/// result is stored as `resultType` (the input's, or 16-bit beside f32).
/// With `add.addend`, each row of `input` (of type `dtype`) is first
/// written as the sum of the add's operands, as the add kernel computes
/// it, and normalized as stored: each thread reads back only the
/// elements it wrote.
__global__ void layerNormKernel(const void *input, const void *weight,
                                const void *bias, void *result, DType dtype,
                                DType resultType, int64_t rows, int64_t length,
                                float epsilon, bool centered, NormAddend add) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * length;
    if (add.addend)
      for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
        storeFloat(add.sum, dtype, base + j,
                   loadFloat(add.lhs, add.lhsType, base + j) +
                       loadFloat(add.addend, add.addendType, base + j));
    float mean, rstd;
    rowStatistics(input, dtype, base, length, epsilon, centered, mean, rstd);
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      float x = loadFloat(input, dtype, base + j);
      float y = (x - mean) * rstd * loadFloat(weight, dtype, j);
      storeFloat(result, resultType, base + j,
                 centered ? y + loadFloat(bias, dtype, j) : y);
    }
  }
}

/// The row statistics; `zeros` (null: none) f32 accumulators to clear
/// for the parameter-gradient kernel after it.
__global__ void layerNormStatisticsKernel(const void *input, DType dtype,
                                          int64_t rows, int64_t length,
                                          float epsilon, bool centered,
                                          float *means, float *rstds,
                                          float *zeros, int64_t zeroCount) {
  if (zeros)
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
         i < zeroCount; i += int64_t(gridDim.x) * blockDim.x)
      zeros[i] = 0.0f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float mean, rstd;
    rowStatistics(input, dtype, row * length, length, epsilon, centered, mean,
                  rstd);
    if (threadIdx.x == 0) {
      means[row] = mean;
      rstds[row] = rstd;
    }
  }
}

/// The rounding of a norm's f32 parameter-gradient accumulators into its
/// results (a null pointer: a result not computed).
struct ParamGradResults {
  void *weight = nullptr;
  DType weightType = DType::F32;
  void *bias = nullptr;
  DType biasType = DType::F32;
};

/// Partial sums over a chunk of `rowsPerChunk` rows (blockIdx.y) of
/// `grad * xhat` and `grad` for the column of each thread, added atomically
/// into the f32 accumulators (`biasGrad` null: RMS norm has none). With
/// `counters` (one per column block, zero), the last block of a column
/// block to finish rounds its columns' sums into `results` and sets its
/// counter back to zero; without, narrowPairKernel rounds them after.
__global__ void layerNormParamGradKernel(const void *input, const void *grad,
                                         DType dtype, DType gradType,
                                         int64_t rows,
                                         int64_t length, int64_t rowsPerChunk,
                                         const float *means, const float *rstds,
                                         float *weightGrad, float *biasGrad,
                                         unsigned *counters,
                                         ParamGradResults results) {
  __shared__ bool last;
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t begin = int64_t(blockIdx.y) * rowsPerChunk;
  int64_t end = min(begin + rowsPerChunk, rows);
  if (j < length) {
    float dw = 0.0f, db = 0.0f;
    for (int64_t row = begin; row < end; ++row) {
      int64_t i = row * length + j;
      float g = loadFloat(grad, gradType, i);
      float xhat = (loadFloat(input, dtype, i) - means[row]) * rstds[row];
      dw += g * xhat;
      db += g;
    }
    if (begin < end) {
      atomicAdd(&weightGrad[j], dw);
      if (biasGrad)
        atomicAdd(&biasGrad[j], db);
    }
  }
  if (!counters)
    return;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(&counters[blockIdx.x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last)
    return;
  if (j < length) {
    const volatile float *weightSums = weightGrad, *biasSums = biasGrad;
    if (results.weight)
      storeFloat(results.weight, results.weightType, j, weightSums[j]);
    if (results.bias)
      storeFloat(results.bias, results.biasType, j, biasSums[j]);
  }
  if (threadIdx.x == 0)
    counters[blockIdx.x] = 0;
}

/// `input_grad = rstd * (g - mean(g) - xhat * mean(g * xhat))` per row with
/// `g = grad * weight` (no mean(g) term when not centered), plus `addend`
/// (null: none) as a tg.add of the stored gradient would add it; reads
/// grad[i] and addend[i] before writing result[i], so the result may reuse
/// either one's buffer. `rounded` (null: none) receives the stored result
/// again in `roundedType`, as a tg.cast of it would.
__global__ void layerNormInputGradKernel(const void *input, const void *grad,
                                         DType gradType, const void *weight,
                                         DType weightType, const void *addend,
                                         void *result, DType dtype,
                                         int64_t rows, int64_t length,
                                         const float *means, const float *rstds,
                                         bool centered, void *rounded,
                                         DType roundedType) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * length;
    float mean = means[row], rstd = rstds[row];
    float sumG = 0.0f, sumGX = 0.0f;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      float xhat = (loadFloat(input, dtype, base + j) - mean) * rstd;
      float gw =
          loadFloat(grad, gradType, base + j) * loadFloat(weight, weightType, j);
      sumG += gw;
      sumGX += gw * xhat;
    }
    float meanG = centered ? blockSum(sumG) / float(length) : 0.0f;
    float meanGX = blockSum(sumGX) / float(length);
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      float xhat = (loadFloat(input, dtype, base + j) - mean) * rstd;
      float gw =
          loadFloat(grad, gradType, base + j) * loadFloat(weight, weightType, j);
      float value = rstd * (gw - meanG - xhat * meanGX);
      if (addend)
        value = roundedTo(dtype, value) + loadFloat(addend, dtype, base + j);
      storeFloat(result, dtype, base + j, value);
      if (rounded)
        storeFloat(rounded, roundedType, base + j, roundedTo(dtype, value));
    }
  }
}

//===----------------------------------------------------------------------===//
// Embedding kernels
//===----------------------------------------------------------------------===//

/// Raises kIndexOutOfRange for every index outside [0, limit).
__global__ void checkIndicesKernel(const void *indices, DType indexType,
                                   int64_t count, int64_t limit, DeviceError *error) {
  TGC_GRID_LOOP(i, count) {
    int64_t index = loadInt(indices, indexType, i);
    if ((index < 0 || index >= limit) && error)
      raiseError(error, kIndexOutOfRange, i, index, limit);
  }
}

/// Copies table rows as raw elements of `T` (the storage width); rows with
/// a bad index are left alone (checkIndicesKernel reports them).
template <typename T>
__global__ void embeddingKernel(const T *table, const void *indices,
                                DType indexType, int64_t count, int64_t width,
                                int64_t vocab, T *result) {
  TGC_GRID_LOOP(e, count * width) {
    int64_t index = loadInt(indices, indexType, e / width);
    if (index >= 0 && index < vocab)
      result[e] = table[index * width + e % width];
  }
}

/// tg.embedding of a 16-bit table into f32 rows (widened exactly).
__global__ void embeddingWidenKernel(const void *table, DType dtype,
                                     const void *indices, DType indexType,
                                     int64_t count, int64_t width,
                                     int64_t vocab, float *result) {
  TGC_GRID_LOOP(e, count * width) {
    int64_t index = loadInt(indices, indexType, e / width);
    if (index >= 0 && index < vocab)
      result[e] = loadFloat(table, dtype, index * width + e % width);
  }
}

__global__ void embeddingGradKernel(const void *indices, DType indexType,
                                    const void *grad, DType dtype,
                                    int64_t count, int64_t width, int64_t vocab,
                                    int64_t paddingIdx, float *accumulator) {
  TGC_GRID_LOOP(e, count * width) {
    int64_t index = loadInt(indices, indexType, e / width);
    if (index >= 0 && index < vocab && index != paddingIdx)
      atomicAdd(&accumulator[index * width + e % width],
                loadFloat(grad, dtype, e));
  }
}

/// tg.gather as raw elements of `T` (the storage width): result element i
/// reads the operand at `operand`'s offset of i plus its index times
/// `axisStride`; a bad index raises kIndexOutOfRange and leaves the element.
template <typename T>
__global__ void gatherKernel(const T *input, const void *index, DType indexType,
                             Dims indexDims, Dims operandDims,
                             int64_t axisStride, int64_t limit, int64_t count,
                             T *result, DeviceError *error) {
  TGC_GRID_LOOP(i, count) {
    int64_t at = loadInt(index, indexType, broadcastOffset(indexDims, i));
    if (at < 0 || at >= limit) {
      if (error)
        raiseError(error, kIndexOutOfRange, i, at, limit);
      continue;
    }
    result[i] = input[broadcastOffset(operandDims, i) + at * axisStride];
  }
}

/// tg.gather_grad: each gradient element added into the f32 sums where
/// gather picked it from.
__global__ void gatherGradKernel(const void *grad, DType dtype,
                                 const void *index, DType indexType,
                                 Dims indexDims, Dims operandDims,
                                 int64_t axisStride, int64_t limit,
                                 int64_t count, float *sums,
                                 DeviceError *error) {
  TGC_GRID_LOOP(i, count) {
    int64_t at = loadInt(index, indexType, broadcastOffset(indexDims, i));
    if (at < 0 || at >= limit) {
      if (error)
        raiseError(error, kIndexOutOfRange, i, at, limit);
      continue;
    }
    atomicAdd(&sums[broadcastOffset(operandDims, i) + at * axisStride],
              loadFloat(grad, dtype, i));
  }
}

//===----------------------------------------------------------------------===//
// Attention kernels
//===----------------------------------------------------------------------===//

/// Turns `rows` rows of scaled scores (heads of `tq` rows, `tk` columns,
/// the first being head `head0`) into probabilities in place; with
/// `causal`, row i sees columns [0, i] (and, with mask.window, only the
/// last mask.window of them), and `mask` hides keys; what is not
/// seen becomes exactly 0, and so does a row that sees nothing.
__global__ void attentionSoftmaxKernel(float *scores, int64_t rows, int64_t tq,
                                       int64_t tk, bool causal, KeyMask mask,
                                       int64_t head0, float *lse,
                                       float softcap) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float *s = scores + row * tk;
    // The soft-cap before the mask; each thread caps the scores it reads.
    if (softcap > 0.0f)
      for (int64_t j = threadIdx.x; j < tk; j += blockDim.x)
        s[j] = softcap * tanhf(s[j] / softcap);
    int64_t limit = causal ? min(row % tq + 1, tk) : tk;
    const int64_t maskRow = (head0 + row / tq) / mask.group * tk;
    // With segments, the query's own id (keys of other ids are hidden).
    const int64_t segment =
        mask.segments ? loadInt(mask.data, mask.dtype, maskRow + row % tq) : 0;
    auto seen = [&](int64_t j) {
      if (j >= limit || (mask.window != 0 && j <= row % tq - mask.window))
        return false;
      if (!mask.data)
        return true;
      int64_t id = loadInt(mask.data, mask.dtype, maskRow + j);
      return id != 0 && (!mask.segments || id == segment);
    };
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < limit; j += blockDim.x)
      if (seen(j))
        max = fmaxf(max, s[j]);
    max = blockMax(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < limit; j += blockDim.x)
      if (seen(j))
        sum += expf(s[j] - max);
    sum = blockSum(sum);
    for (int64_t j = threadIdx.x; j < tk; j += blockDim.x)
      s[j] = max != -INFINITY && seen(j) ? expf(s[j] - max) / sum : 0.0f;
    if (lse && threadIdx.x == 0)
      lse[row] = max == -INFINITY ? -INFINITY : max + logf(sum);
  }
}

/// rowDot[r] = sum_c grad[r, c] * output[r, c]; `zeros` (null: none), an
/// f32 accumulator of `zeroWidth` per row, cleared row by row.
__global__ void rowDotKernel(const void *grad, const void *output, DType dtype,
                             int64_t rows, int64_t width, float *rowDot,
                             float *zeros, int64_t zeroWidth) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    if (zeros)
      for (int64_t c = threadIdx.x; c < zeroWidth; c += blockDim.x)
        zeros[row * zeroWidth + c] = 0.0f;
    int64_t base = row * width;
    float dot = 0.0f;
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
      dot +=
          loadFloat(grad, dtype, base + c) * loadFloat(output, dtype, base + c);
    dot = blockSum(dot);
    if (threadIdx.x == 0)
      rowDot[row] = dot;
  }
}

/// P times the slope of the soft-cap, 1 - tanh(s / softcap)^2, from the
/// scaled scores `s`: what dS = P * (dP - rowDot) then carries through it.
__global__ void softcapSlopeKernel(float *probabilities, const float *scores,
                                   int64_t count, float softcap) {
  TGC_GRID_LOOP(e, count) {
    float t = tanhf(scores[e] / softcap);
    probabilities[e] *= 1.0f - t * t;
  }
}

/// dS = P * (dP - rowDot), in place of dP; `rowDot` holds one value per row
/// of `tk` scores.
__global__ void attentionScoreGradKernel(const float *probabilities,
                                         float *scoreGrad, const float *rowDot,
                                         int64_t count, int64_t tk) {
  TGC_GRID_LOOP(e, count) {
    scoreGrad[e] = probabilities[e] * (scoreGrad[e] - rowDot[e / tk]);
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy kernels
//===----------------------------------------------------------------------===//

/// The loss of each row, 0 for ignored rows and rows with a bad target
/// (which raise the error flag); `counted[row]` is 1 for rows that count.
/// With `grad` (null: none), also what crossEntropyGradKernel writes, from
/// the same row statistics (the same bits): each logit is read before its
/// gradient is written, so `grad` may be the logits' buffer.
/// A logit as the loss reads it: capped, `softcap * tanh(x / softcap)`,
/// with a positive `softcap`.
__device__ inline float capLogit(float x, float softcap) {
  return softcap > 0.0f ? softcap * tanhf(x / softcap) : x;
}

/// The slope of the cap at a capped logit `c`: 1 - tanh^2 (1 uncapped).
__device__ inline float capSlope(float c, float softcap) {
  if (softcap <= 0.0f)
    return 1.0f;
  float t = c / softcap;
  return 1.0f - t * t;
}

__global__ void crossEntropyRowsKernel(const void *logits, DType dtype,
                                       const void *targets, DType targetType,
                                       int64_t rows, int64_t classes,
                                       int64_t ignoreIndex, float *losses,
                                       float *counted, DeviceError *error,
                                       const float *coefficientAndCount,
                                       void *grad, float softcap) {
  float coefficient = grad ? coefficientAndCount[0] : 0.0f;
  bool anyCounted = grad && coefficientAndCount[1] > 0.0f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t target = loadInt(targets, targetType, row);
    bool valid = target >= 0 && target < classes;
    int64_t base = row * classes;
    if (target == ignoreIndex || !valid) {
      if (threadIdx.x == 0) {
        losses[row] = 0.0f;
        counted[row] = 0.0f;
        if (target != ignoreIndex && error)
          raiseError(error, kIndexOutOfRange, row, target, classes);
      }
      if (grad)
        for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
          storeFloat(grad, dtype, base + j, 0.0f);
      continue;
    }
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      max = fmaxf(max, capLogit(loadFloat(logits, dtype, base + j), softcap));
    max = blockMax(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      sum += expf(capLogit(loadFloat(logits, dtype, base + j), softcap) - max);
    // Read before the barrier in blockSum, after which the gradient may be
    // written over it.
    float picked = capLogit(loadFloat(logits, dtype, base + target), softcap);
    sum = blockSum(sum);
    if (threadIdx.x == 0) {
      losses[row] = max + logf(sum) - picked;
      counted[row] = 1.0f;
    }
    if (!grad)
      continue;
    float logSumExp = max + logf(sum);
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      float c = capLogit(loadFloat(logits, dtype, base + j), softcap);
      float p = expf(c - logSumExp);
      storeFloat(grad, dtype, base + j,
                 anyCounted ? coefficient * (p - (j == target ? 1.0f : 0.0f)) *
                                  capSlope(c, softcap)
                            : 0.0f);
    }
  }
}

/// One block: the mean of the counted losses (0 when none count).
__global__ void crossEntropyMeanKernel(const float *losses,
                                       const float *counted, int64_t rows,
                                       void *result, DType resultType) {
  float total = 0.0f, count = 0.0f;
  for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
    total += losses[row];
    count += counted[row];
  }
  total = blockSum(total);
  count = blockSum(count);
  if (threadIdx.x == 0)
    storeFloat(result, resultType, 0, count == 0.0f ? 0.0f : total / count);
}

/// One block: `result = ` the number of targets that are not ignored.
__global__ void targetCountKernel(const void *targets, DType targetType,
                                  int64_t rows, int64_t ignoreIndex,
                                  void *result, DType resultType) {
  long long count = 0;
  for (int64_t row = threadIdx.x; row < rows; row += blockDim.x)
    count += loadInt(targets, targetType, row) != ignoreIndex;
  count = blockSum(count);
  if (threadIdx.x == 0)
    storeFloat(result, resultType, 0, float(count));
}

/// One block: copies the targets (so the result may reuse their buffer),
/// counts the positions not ignored, raises the error flag for bad targets
/// and writes `coefficient[0] = grad / count` and `coefficient[1] = count`.
__global__ void crossEntropyGradPrepareKernel(
    const void *targets, DType targetType, int64_t rows, int64_t classes,
    int64_t ignoreIndex, const void *grad, DType gradType, int64_t *targetCopy,
    float *coefficient, DeviceError *error) {
  long long count = 0;
  for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
    int64_t target = loadInt(targets, targetType, row);
    targetCopy[row] = target;
    if (target == ignoreIndex)
      continue;
    if (target < 0 || target >= classes) {
      if (error)
        raiseError(error, kIndexOutOfRange, row, target, classes);
      continue;
    }
    ++count;
  }
  count = blockSum(count);
  if (threadIdx.x == 0) {
    coefficient[0] =
        count == 0
            ? 0.0f
            : float(double(loadFloat(grad, gradType, 0)) / double(count));
    coefficient[1] = float(count);
  }
}

/// `result[row] = coefficient * (softmax(logits[row]) - onehot(target))`,
/// zero for ignored rows, rows with a bad target and when nothing counts.
/// Reads each logit before writing its gradient, so the result may reuse
/// the logits' buffer.
__global__ void crossEntropyGradKernel(const void *logits, DType dtype,
                                       const int64_t *targets, int64_t rows,
                                       int64_t classes, int64_t ignoreIndex,
                                       const float *coefficientAndCount,
                                       void *result, float softcap) {
  float coefficient = coefficientAndCount[0];
  bool anyCounted = coefficientAndCount[1] > 0.0f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * classes;
    int64_t target = targets[row];
    if (target == ignoreIndex || target < 0 || target >= classes ||
        !anyCounted) {
      for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
        storeFloat(result, dtype, base + j, 0.0f);
      continue;
    }
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      max = fmaxf(max, capLogit(loadFloat(logits, dtype, base + j), softcap));
    max = blockMax(max);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      sum += expf(capLogit(loadFloat(logits, dtype, base + j), softcap) - max);
    float logSumExp = max + logf(blockSum(sum));
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      float c = capLogit(loadFloat(logits, dtype, base + j), softcap);
      float p = expf(c - logSumExp);
      storeFloat(result, dtype, base + j,
                 coefficient * (p - (j == target ? 1.0f : 0.0f)) *
                     capSlope(c, softcap));
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

Status softmax(Context &ctx, const TensorRef &input, int64_t axis,
               TensorRef &result) {
  int64_t outer, length, inner;
  if (Status s =
          splitAround(input.shape, axis, "softmax", outer, length, inner);
      !s.ok())
    return s;
  if (input.numElements() == 0)
    return Status::success();
  cudaStream_t stream = streamOf(ctx);
  if (inner == 1) {
    softmaxRowsKernel<<<rowBlocks(outer), rowThreads(length), 0, stream>>>(
        input.data, result.data, input.dtype, outer, length);
    TGC_CUDA_LAUNCH("softmaxRowsKernel");
  } else {
    softmaxColumnsKernel<<<blocksFor(outer * inner), 256, 0, stream>>>(
        input.data, result.data, input.dtype, outer, length, inner);
    TGC_CUDA_LAUNCH("softmaxColumnsKernel");
  }
  return Status::success();
}

Status softmaxGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                   int64_t axis, TensorRef &result) {
  int64_t outer, length, inner;
  if (Status s =
          splitAround(output.shape, axis, "softmax_grad", outer, length, inner);
      !s.ok())
    return s;
  if (output.numElements() == 0)
    return Status::success();
  cudaStream_t stream = streamOf(ctx);
  if (inner == 1) {
    softmaxGradRowsKernel<<<rowBlocks(outer), rowThreads(length), 0, stream>>>(
        output.data, grad.data, result.data, output.dtype, outer, length);
    TGC_CUDA_LAUNCH("softmaxGradRowsKernel");
  } else {
    softmaxGradColumnsKernel<<<blocksFor(outer * inner), 256, 0, stream>>>(
        output.data, grad.data, result.data, output.dtype, outer, length,
        inner);
    TGC_CUDA_LAUNCH("softmaxGradColumnsKernel");
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

/// Layer norm, or RMS norm when `bias` is null; with `addend`, of
/// `input` + `addend`, written to `sum` (tg.layer_norm's residual add).
static Status normalize(Context &ctx, const TensorRef &input,
                        const TensorRef &weight, const TensorRef *bias,
                        double epsilon, TensorRef &result,
                        const TensorRef *addend, TensorRef *sum) {
  // As the loader checked: a sum exactly with an addend, both of the
  // input's shape, in types a tg.add of the two gives.
  NormAddend add;
  const TensorRef *normalized = &input;
  if (addend) {
    add = {input.data, addend->data, input.dtype, addend->dtype, sum->data};
    normalized = sum;
  }
  int64_t length = normalized->shape.back();
  int64_t rows = length == 0 ? 0 : normalized->numElements() / length;
  if (rows == 0)
    return Status::success();
  layerNormKernel<<<rowBlocks(rows), rowThreads(length), 0, streamOf(ctx)>>>(
      normalized->data, weight.data, bias ? bias->data : nullptr, result.data,
      normalized->dtype, result.dtype, rows, length, float(epsilon),
      bias != nullptr, add);
  TGC_CUDA_LAUNCH("layerNormKernel");
  return Status::success();
}

Status layerNorm(Context &ctx, const TensorRef &input, const TensorRef &weight,
                 const TensorRef &bias, double epsilon, TensorRef &result,
                 const TensorRef *addend, TensorRef *sum) {
  return normalize(ctx, input, weight, &bias, epsilon, result, addend, sum);
}

Status rmsNorm(Context &ctx, const TensorRef &input, const TensorRef &weight,
               double epsilon, TensorRef &result, const TensorRef *addend,
               TensorRef *sum) {
  return normalize(ctx, input, weight, nullptr, epsilon, result, addend, sum);
}

/// The gradient of layer norm, or of RMS norm when `biasGrad` is null.
static Status normalizeGrad(Context &ctx, const char *op,
                            const TensorRef &input, const TensorRef &weight,
                            const TensorRef &grad, double epsilon,
                            TensorRef &inputGrad, TensorRef &weightGrad,
                            TensorRef *biasGrad, const TensorRef *addend,
                            TensorRef *rounded) {
  // As the loader checked: the addend of the input's type and shape, a
  // rounded copy only of an f32 input_grad, at least one result computed.
  if (rounded && !rounded->present())
    rounded = nullptr;
  bool centered = biasGrad != nullptr;
  // Results that are not present are not computed (an output mask).
  bool wantInput = inputGrad.present();
  bool wantParams = weightGrad.present() || (centered && biasGrad->present());
  int64_t length = input.shape.back();
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  if (length == 0)
    return Status::success();

  // f32 scratch: row statistics and the parameter-gradient accumulators
  // (one after the other: one memset zeroes both), and an f32 copy of the
  // weight only where input_grad's buffer holds it.
  WorkspaceLayout layout;
  size_t meansAt = layout.add(size_t(rows) * sizeof(float));
  size_t rstdsAt = layout.add(size_t(rows) * sizeof(float));
  size_t gradsAt = layout.add(size_t(2 * length) * sizeof(float));
  bool copyWeight = wantInput && bytesOverlap(weight, inputGrad);
  size_t weightAt =
      copyWeight ? layout.add(size_t(length) * sizeof(float)) : 0;
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  float *means = at<float>(ctx, meansAt), *rstds = at<float>(ctx, rstdsAt);
  float *weightGradF32 = at<float>(ctx, gradsAt);
  float *biasGradF32 = weightGradF32 + length;
  cudaStream_t stream = streamOf(ctx);

  // The accumulators are cleared by the statistics kernel, or here when
  // there are no rows (the parameter gradients are then zeros).
  bool roundedInKernel = false;
  if (rows == 0 && wantParams)
    TGC_CUDA_CALL(cudaMemsetAsync(weightGradF32, 0,
                                  size_t(2 * length) * sizeof(float), stream));
  const void *weightData = weight.data;
  DType weightType = weight.dtype;
  if (copyWeight) {
    float *weightF32 = at<float>(ctx, weightAt);
    if (Status s = widenToF32(ctx, weight, weightF32); !s.ok())
      return s;
    weightData = weightF32;
    weightType = DType::F32;
  }
  if (rows > 0) {
    layerNormStatisticsKernel<<<rowBlocks(rows), rowThreads(length), 0, stream>>>(
        input.data, input.dtype, rows, length, float(epsilon), centered, means,
        rstds, wantParams ? weightGradF32 : nullptr, 2 * length);
    TGC_CUDA_LAUNCH("layerNormStatisticsKernel");

    // The parameter gradients read grad before input_grad may overwrite it,
    // and round their sums into their results themselves when the context
    // has a counter for each block of columns.
    if (wantParams) {
      int64_t chunks = std::min<int64_t>((rows + 31) / 32, 1024);
      int64_t rowsPerChunk = (rows + chunks - 1) / chunks;
      int64_t columnBlocks = (length + 255) / 256;
      dim3 grid{unsigned(columnBlocks), unsigned(chunks)};
      roundedInKernel = ctx.reduceCounters &&
                        columnBlocks <= Context::kReduceCounters;
      ParamGradResults results;
      results.weight = weightGrad.present() ? weightGrad.data : nullptr;
      results.weightType = weightGrad.dtype;
      results.bias = centered && biasGrad->present() ? biasGrad->data : nullptr;
      results.biasType = centered ? biasGrad->dtype : DType::F32;
      layerNormParamGradKernel<<<grid, 256, 0, stream>>>(
          input.data, grad.data, input.dtype, grad.dtype, rows, length,
          rowsPerChunk, means, rstds, weightGradF32,
          centered ? biasGradF32 : nullptr,
          roundedInKernel ? ctx.reduceCounters : nullptr, results);
      TGC_CUDA_LAUNCH("layerNormParamGradKernel");
    }
    if (wantInput) {
      layerNormInputGradKernel<<<rowBlocks(rows), rowThreads(length), 0, stream>>>(
          input.data, grad.data, grad.dtype, weightData, weightType,
          addend ? addend->data : nullptr, inputGrad.data, input.dtype, rows,
          length, means, rstds, centered, rounded ? rounded->data : nullptr,
          rounded ? rounded->dtype : DType::F32);
      TGC_CUDA_LAUNCH("layerNormInputGradKernel");
    }
  }
  bool bias = centered && biasGrad->present();
  if ((weightGrad.present() || bias) && !roundedInKernel) {
    narrowPairKernel<<<blocksFor(length), 256, 0, stream>>>(
        weightGradF32, weightGrad.present() ? weightGrad.data : nullptr,
        weightGrad.dtype, biasGradF32, bias ? biasGrad->data : nullptr,
        bias ? biasGrad->dtype : DType::F32, length);
    TGC_CUDA_LAUNCH("narrowPairKernel");
  }
  return Status::success();
}

Status layerNormGrad(Context &ctx, const TensorRef &input,
                     const TensorRef &weight, const TensorRef &grad,
                     double epsilon, TensorRef &inputGrad,
                     TensorRef &weightGrad, TensorRef &biasGrad,
                     const TensorRef *addend, TensorRef *rounded) {
  return normalizeGrad(ctx, "layer_norm_grad", input, weight, grad, epsilon,
                       inputGrad, weightGrad, &biasGrad, addend, rounded);
}

Status rmsNormGrad(Context &ctx, const TensorRef &input,
                   const TensorRef &weight, const TensorRef &grad,
                   double epsilon, TensorRef &inputGrad,
                   TensorRef &weightGrad, const TensorRef *addend,
                   TensorRef *rounded) {
  return normalizeGrad(ctx, "rms_norm_grad", input, weight, grad, epsilon,
                       inputGrad, weightGrad, nullptr, addend, rounded);
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

/// One thread per pair (i, i + D/2) of a row: the angle t * invFreq[i] in
/// f32, as Hugging Face computes it; both elements are read before either
/// is written, so the result may be the input's buffer.
/// Row `row` of D = 2 * half elements is at position (row / heads) %
/// positions (`heads` H for bshd [B, T, H, D] heads, 1 for [B..., T, D]).
/// With `ids` (an index tensor [B, T]; null: none), the position is
/// ids[b * positions + t] for row `row` of batch row b = row /
/// rowsPerBatch.
__global__ void ropeKernel(const void *input, const float *invFreq,
                           void *result, DType dtype, int64_t pairs,
                           int64_t positions, int64_t heads, int64_t half,
                           float direction, const void *ids, DType idType,
                           int64_t rowsPerBatch) {
  TGC_GRID_LOOP(p, pairs) {
    int64_t row = p / half, i = p % half;
    int64_t t = (row / heads) % positions;
    if (ids)
      t = loadInt(ids, idType, row / rowsPerBatch * positions + t);
    float angle = float(t) * invFreq[i];
    float c = cosf(angle), s = direction * sinf(angle);
    int64_t base = row * 2 * half;
    float a = loadFloat(input, dtype, base + i);
    float b = loadFloat(input, dtype, base + i + half);
    storeFloat(result, dtype, base + i, a * c - b * s);
    storeFloat(result, dtype, base + i + half, b * c + a * s);
  }
}

Status rope(Context &ctx, const TensorRef &input, const TensorRef &invFreq,
            bool inverse, TensorRef &result, bool bshd,
            const TensorRef *positions) {
  // [..., T, D] with D even, [B, T, H, D] with bshd, positions [B, T]: the
  // loader checked. Positions are not checked on the device (a negative
  // one rotates backwards); the data sources write them.
  int64_t half = input.shape.back() / 2;
  int64_t pairs = half == 0 ? 0 : input.numElements() / 2;
  if (pairs == 0)
    return Status::success();
  int64_t rows = input.numElements() / input.shape.back();
  int64_t rowsPerBatch = std::max<int64_t>(rows / input.shape[0], 1);
  ropeKernel<<<blocksFor(pairs), 256, 0, streamOf(ctx)>>>(
      input.data, static_cast<const float *>(invFreq.data), result.data,
      input.dtype, pairs, input.shape[input.rank() - (bshd ? 3 : 2)],
      bshd ? input.shape[2] : 1, half, inverse ? -1.0f : 1.0f,
      positions ? positions->data : nullptr,
      positions ? positions->dtype : DType::I64, rowsPerBatch);
  TGC_CUDA_LAUNCH("ropeKernel");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

Status embedding(Context &ctx, const TensorRef &table, const TensorRef &indices,
                 TensorRef &result) {
  // The table of rank 2, as the loader checked; the indices are checked
  // on the device (they are data).
  int64_t vocab = table.shape[0], width = table.shape[1];
  int64_t count = indices.numElements();
  if (count == 0)
    return Status::success();
  cudaStream_t stream = streamOf(ctx);
  checkIndicesKernel<<<blocksFor(count), 256, 0, stream>>>(
      indices.data, indices.dtype, count, vocab, ctx.deviceError);
  TGC_CUDA_LAUNCH("checkIndicesKernel");
  if (width == 0)
    return Status::success();
  unsigned blocks = blocksFor(count * width);
  if (table.dtype != result.dtype) {
    embeddingWidenKernel<<<blocks, 256, 0, stream>>>(
        table.data, table.dtype, indices.data, indices.dtype, count, width,
        vocab, static_cast<float *>(result.data));
  } else if (table.dtype == DType::F32) {
    embeddingKernel<uint32_t><<<blocks, 256, 0, stream>>>(
        static_cast<const uint32_t *>(table.data), indices.data, indices.dtype,
        count, width, vocab, static_cast<uint32_t *>(result.data));
  } else {
    embeddingKernel<uint16_t><<<blocks, 256, 0, stream>>>(
        static_cast<const uint16_t *>(table.data), indices.data, indices.dtype,
        count, width, vocab, static_cast<uint16_t *>(result.data));
  }
  TGC_CUDA_LAUNCH("embeddingKernel");
  return Status::success();
}

Status embeddingGrad(Context &ctx, const TensorRef &indices,
                     const TensorRef &grad, const TensorRef *addend,
                     int64_t paddingIdx, TensorRef &result) {
  // Shapes and types as the loader checked them; the overlap is the
  // plan's, which it does not see.
  if (addend && bytesOverlap(*addend, result))
    return Status::failure("embedding_grad result must not overlap its "
                           "addend");
  int64_t vocab = result.shape[0], width = result.shape[1];
  int64_t count = indices.numElements();
  int64_t total = vocab * width;
  if (total == 0) {
    // Nothing to accumulate into, but bad indices are still an error.
    if (count > 0) {
      checkIndicesKernel<<<blocksFor(count), 256, 0, streamOf(ctx)>>>(
          indices.data, indices.dtype, count, vocab, ctx.deviceError);
      TGC_CUDA_LAUNCH("checkIndicesKernel");
    }
    return Status::success();
  }
  // An f32 result that shares no bytes with the operands accumulates in
  // place; otherwise an f32 scratch is rounded into it at the end.
  bool direct = result.dtype == DType::F32 && !bytesOverlap(result, grad) &&
                !bytesOverlap(result, indices);
  float *accumulator = static_cast<float *>(result.data);
  if (!direct) {
    if (Status s = ctx.reserveWorkspace(size_t(total) * sizeof(float)); !s.ok())
      return s;
    accumulator = static_cast<float *>(ctx.workspace);
  }
  cudaStream_t stream = streamOf(ctx);
  // The accumulator starts at zero, or at the addend (one pass over the
  // table, where a separate add would make two).
  if (addend) {
    if (Status s = widenToF32(ctx, *addend, accumulator); !s.ok())
      return s;
  } else {
    TGC_CUDA_CALL(
        cudaMemsetAsync(accumulator, 0, size_t(total) * sizeof(float), stream));
  }
  if (count > 0) {
    checkIndicesKernel<<<blocksFor(count), 256, 0, stream>>>(
        indices.data, indices.dtype, count, vocab, ctx.deviceError);
    TGC_CUDA_LAUNCH("checkIndicesKernel");
    if (width > 0) {
      embeddingGradKernel<<<blocksFor(count * width), 256, 0, stream>>>(
          indices.data, indices.dtype, grad.data, grad.dtype, count, width,
          vocab, paddingIdx, accumulator);
      TGC_CUDA_LAUNCH("embeddingGradKernel");
    }
  }
  if (direct)
    return Status::success();
  return narrowFromF32(ctx, accumulator, total, result);
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

namespace {
/// A gather of `operand` into `gathered` along `dim`: the broadcast index's
/// and the operand's offsets per gathered element (the operand's at index
/// 0 along the axis), and the axis's stride and size.
struct GatherDims {
  Dims index, operand;
  int64_t axisStride = 1, limit = 0;
};
} // namespace

static Status planGather(const TensorRef &operand, const TensorRef &index,
                         const TensorRef &gathered, int64_t axis,
                         GatherDims &plan) {
  std::string error =
      shapes::gather(operand.shape, index.shape, gathered.shape, axis);
  if (!error.empty())
    return Status::failure("gather: " + error);
  if (!broadcastDims(index.shape, gathered.shape, plan.index))
    return Status::failure("gather: supports up to 8 dimensions");
  int64_t rank = operand.rank();
  int64_t dim = axis < 0 ? axis + rank : axis;
  plan.operand = Dims();
  plan.operand.rank = int(rank);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    plan.operand.size[d] = gathered.shape[size_t(d)];
    plan.operand.stride[d] = d == dim ? 0 : stride;
    if (d == dim)
      plan.axisStride = stride;
    stride *= operand.shape[size_t(d)];
  }
  plan.limit = operand.shape[size_t(dim)];
  return Status::success();
}

Status gather(Context &ctx, const TensorRef &input, const TensorRef &index,
              int64_t axis, TensorRef &result) {
  GatherDims plan;
  if (Status s = planGather(input, index, result, axis, plan); !s.ok())
    return s;
  int64_t count = result.numElements();
  if (count == 0)
    return Status::success();
  // Threads would overwrite operand elements others still read.
  StreamScratch inputScratch, indexScratch;
  const void *source = input.data, *indices = index.data;
  if (bytesOverlap(input, result))
    if (Status s = stageCopy(ctx, input, inputScratch, source); !s.ok())
      return s;
  if (bytesOverlap(index, result))
    if (Status s = stageCopy(ctx, index, indexScratch, indices); !s.ok())
      return s;
  // Elements move as raw words of their storage width.
  auto launch = [&](auto word) {
    using T = decltype(word);
    gatherKernel<T><<<blocksFor(count), 256, 0, streamOf(ctx)>>>(
        static_cast<const T *>(source), indices, index.dtype, plan.index,
        plan.operand, plan.axisStride, plan.limit, count,
        static_cast<T *>(result.data), ctx.deviceError);
  };
  switch (dtypeSize(input.dtype)) {
  case 8:
    launch(uint64_t());
    break;
  case 4:
    launch(uint32_t());
    break;
  case 2:
    launch(uint16_t());
    break;
  default:
    launch(uint8_t());
  }
  TGC_CUDA_LAUNCH("gatherKernel");
  return Status::success();
}

Status gatherGrad(Context &ctx, const TensorRef &grad, const TensorRef &index,
                  int64_t axis, TensorRef &result) {
  GatherDims plan;
  if (Status s = planGather(result, index, grad, axis, plan); !s.ok())
    return s;
  int64_t total = result.numElements(), count = grad.numElements();
  if (total == 0)
    return Status::success();
  // An f32 result that shares no bytes with the operands accumulates in
  // place; otherwise an f32 scratch is rounded into it at the end.
  bool direct = result.dtype == DType::F32 && !bytesOverlap(result, grad) &&
                !bytesOverlap(result, index);
  float *sums = static_cast<float *>(result.data);
  if (!direct) {
    if (Status s = ctx.reserveWorkspace(size_t(total) * sizeof(float)); !s.ok())
      return s;
    sums = static_cast<float *>(ctx.workspace);
  }
  cudaStream_t stream = streamOf(ctx);
  TGC_CUDA_CALL(
      cudaMemsetAsync(sums, 0, size_t(total) * sizeof(float), stream));
  if (count > 0) {
    gatherGradKernel<<<blocksFor(count), 256, 0, stream>>>(
        grad.data, grad.dtype, index.data, index.dtype, plan.index,
        plan.operand, plan.axisStride, plan.limit, count, sums,
        ctx.deviceError);
    TGC_CUDA_LAUNCH("gatherGradKernel");
  }
  if (direct)
    return Status::success();
  return narrowFromF32(ctx, sums, total, result);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {

/// Sizes of an attention problem: `batch` independent key/value heads of
/// [tq, d] x [tk, d] x [tk, dv]. With grouped-query attention the `group`
/// query heads that share a key/value head are consecutive, so they form
/// one matrix of tq = group * positions rows (row i: query head i /
/// positions of the group, position i % positions): no key or value is
/// repeated, and their gradients sum over the group in the GEMMs.
struct AttentionShape {
  int64_t batch, tq, tk, d, dv;
  int64_t group = 1, positions = 0;
  float scale;
  /// A positive soft-cap of the scaled scores, or 0.
  float softcap = 0.0f;
  KeyMask mask;
  /// Heads side by side in each stored row: H with the bshd layout, else 1.
  int64_t rowHeads = 1;
};

Status attentionShape(const TensorRef &query, const TensorRef &key,
                      const TensorRef &value, const TensorRef *keyMask,
                      bool causal, int64_t window, std::optional<double> scale,
                      bool bshd, AttentionShape &sizes, double softcap = 0.0,
                      bool segments = false) {
  // Ranks, types, the head groups, equal lengths when causal, the window,
  // scale, soft-cap and key mask as the loader checked them.
  int64_t rank = query.rank();
  // The rules read [B..., T, D] heads: a bshd operand's T and H swapped.
  std::vector<int64_t> q = shapes::attentionView(query.shape, bshd),
                       k = shapes::attentionView(key.shape, bshd);
  sizes.rowHeads = bshd ? q[1] : 1;
  std::vector<int64_t> queryBatch(q.begin(), q.end() - 2),
      keyBatch(k.begin(), k.end() - 2);
  sizes.group = shapes::attentionGroup(queryBatch, keyBatch);
  sizes.batch = 1;
  for (int64_t size : keyBatch)
    sizes.batch *= size;
  sizes.positions = q[rank - 2];
  sizes.tq = sizes.group * sizes.positions;
  sizes.d = q[rank - 1];
  sizes.tk = k[rank - 2];
  sizes.dv = value.shape[rank - 1];
  sizes.mask.window = window;
  sizes.mask.segments = segments;
  sizes.scale = float(scale ? *scale : 1.0 / std::sqrt(double(sizes.d)));
  sizes.softcap = float(softcap);
  if (keyMask) {
    // [P..., tk] over a prefix P... of the batch dimensions.
    const auto &m = keyMask->shape;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < m.size(); ++i)
      rows *= m[i];
    sizes.mask.data = keyMask->data;
    sizes.mask.dtype = keyMask->dtype;
    sizes.mask.group = std::max<int64_t>(
        1, sizes.batch * sizes.group / std::max<int64_t>(rows, 1));
  }
  return Status::success();
}

int64_t headsPerChunk(const AttentionShape &sizes, int64_t scoreMatrices) {
  return attentionHeadsPerChunk(sizes.batch, sizes.tq, sizes.tk,
                                scoreMatrices);
}

/// P = softmax(scale * Q K^T + mask) for `heads` heads into `p` (f32);
/// `lse` (null: not wanted) receives their rows' log-sum-exp.
Status attentionProbabilities(Context &ctx, const AttentionShape &sizes,
                              const float *q, const float *k, bool causal,
                              int64_t head0, int64_t heads, float *p,
                              void *gemmWorkspace, float *lse = nullptr) {
  GemmProblem scores;
  scores.transposeB = true;
  scores.m = sizes.tq;
  scores.n = sizes.tk;
  scores.k = sizes.d;
  scores.alpha = sizes.scale;
  scores.a = q;
  scores.strideA = sizes.tq * sizes.d;
  scores.b = k;
  scores.strideB = sizes.tk * sizes.d;
  scores.c = p;
  scores.strideC = sizes.tq * sizes.tk;
  scores.batchCount = heads;
  if (Status s = gemm(ctx, scores, gemmWorkspace); !s.ok())
    return s;
  int64_t rows = heads * sizes.tq;
  if (rows == 0)
    return Status::success();
  // Rows by query head (head0 in key/value heads) and position.
  attentionSoftmaxKernel<<<rowBlocks(rows), rowThreads(sizes.tk), 0,
                           streamOf(ctx)>>>(
      p, rows, sizes.positions, sizes.tk, causal, sizes.mask,
      head0 * sizes.group, lse, sizes.softcap);
  TGC_CUDA_LAUNCH("attentionSoftmaxKernel");
  return Status::success();
}

/// A bshd attention's [B, T, H, D] tensors as [B, H, T, D] copies in one
/// stream allocation, for the GEMM path (which computes over dense heads),
/// and its results moved back: transposes are exact, so it computes what
/// the head-major attention of transposed operands does.
class HeadMajorCopies {
public:
  /// Room for every present tensor of `tensors`, in order.
  Status allocate(Context &ctx,
                  std::initializer_list<const TensorRef *> tensors) {
    size_t total = 0;
    for (const TensorRef *t : tensors) {
      offsets.push_back(total);
      total += (t->numBytes() + 255) / 256 * 256;
    }
    return scratch.allocate(ctx, total);
  }
  /// Copy `i` (allocate's order) of `t`, in head-major order; absent when
  /// `t` is.
  TensorRef place(size_t i, const TensorRef &t) const {
    TensorRef copy;
    if (!t.present())
      return copy;
    copy.dtype = t.dtype;
    copy.shape = shapes::attentionView(t.shape, /*bshd=*/true);
    copy.data = static_cast<char *>(scratch.data()) + offsets[i];
    return copy;
  }
  static Status toHeadMajor(Context &ctx, const TensorRef &t, TensorRef &copy) {
    return transpose(ctx, t, kSwap, copy);
  }
  static Status writeBack(Context &ctx, const TensorRef &copy, TensorRef &t) {
    return t.present() ? transpose(ctx, copy, kSwap, t) : Status::success();
  }
  /// Copy `i` of a bshd row log-sum-exp `t` ([B, T, H]) in head-major order,
  /// and its move back.
  TensorRef placeRows(size_t i, const TensorRef &t) const {
    TensorRef copy = t;
    std::swap(copy.shape[1], copy.shape[2]);
    copy.data = static_cast<char *>(scratch.data()) + offsets[i];
    return copy;
  }
  static Status writeBackRows(Context &ctx, const TensorRef &copy,
                              TensorRef &t) {
    return transpose(ctx, copy, kSwapRows, t);
  }

private:
  static inline const std::vector<int64_t> kSwap = {0, 2, 1, 3};
  static inline const std::vector<int64_t> kSwapRows = {0, 2, 1};
  StreamScratch scratch;
  std::vector<size_t> offsets;
};

/// A packed attention operand ([B, T, Hq + 2 Hkv, D], tg.attention's
/// `packed`): its query, key and value heads as views into it for the
/// fused kernels (pointers to each tensor's first head, rows `packed` heads
/// long), or as three dense copies, and their gradients back into one, for
/// the GEMM path.
class PackedHeads {
public:
  /// The heads of `packed`, Hq of them (`queryHeads`) queries: `view(i)`
  /// has the shape of tensor i and points at its first head (not dense).
  Status read(const TensorRef &packed, int64_t queryHeads) {
    // [B, T, Hq + 2 Hkv, D], as the loader checked.
    shapes::Shape q, kv;
    shapes::packedHeads(packed.shape, queryHeads, q, kv);
    whole = packed;
    views = {packed, packed, packed};
    views[0].shape = q;
    views[1].shape = views[2].shape = kv;
    views[1].data = at(packed.data, q[2]);
    views[2].data = at(packed.data, q[2] + kv[2]);
    return Status::success();
  }
  const TensorRef &view(size_t i) const { return views[i]; }
  /// Heads a packed row holds.
  int64_t rowHeads() const { return whole.shape[2]; }
  /// `data` moved past `heads` heads of the packed rows.
  void *at(void *data, int64_t heads) const {
    return static_cast<char *>(data) +
           heads * whole.shape[3] * int64_t(dtypeSize(whole.dtype));
  }
  /// Dense copies of the three, and room for their gradients when `grad`
  /// is present.
  Status copy(Context &ctx, const TensorRef *grad = nullptr) {
    size_t bytes = (whole.numBytes() + 255) / 256 * 256;
    if (Status s = scratch.allocate(ctx, grad ? 2 * bytes : bytes); !s.ok())
      return s;
    std::vector<TensorRef> pieces = dense(scratch.data());
    if (Status s = split(ctx, whole, 2, pieces); !s.ok())
      return s;
    copies = pieces;
    if (grad)
      grads = dense(static_cast<char *>(scratch.data()) + bytes);
    return Status::success();
  }
  TensorRef &dense(size_t i) { return copies[i]; }
  TensorRef &grad(size_t i) { return grads[i]; }
  /// The gradients' copies into `grad`, side by side as the operand holds.
  Status pack(Context &ctx, TensorRef &grad) {
    return concat(ctx, grads, 2, grad);
  }

private:
  std::vector<TensorRef> dense(void *base) const {
    std::vector<TensorRef> pieces = views;
    char *next = static_cast<char *>(base);
    for (TensorRef &piece : pieces) {
      piece.data = next;
      next += piece.numBytes();
    }
    return pieces;
  }
  TensorRef whole;
  std::vector<TensorRef> views, copies, grads;
  StreamScratch scratch;
};

/// A row-major f32 GEMM of `heads` dense heads, every operand batched.
GemmProblem headGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                     int64_t k, float alpha, const float *a, const float *b,
                     float *c, int64_t heads) {
  GemmProblem problem;
  problem.transposeA = transposeA;
  problem.transposeB = transposeB;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.alpha = alpha;
  problem.a = a;
  problem.strideA = m * k;
  problem.b = b;
  problem.strideB = k * n;
  problem.c = c;
  problem.strideC = m * n;
  problem.batchCount = heads;
  return problem;
}

} // namespace

Status attention(Context &ctx, const TensorRef &query, const TensorRef &key,
                 const TensorRef &value, const TensorRef *keyMask, bool causal,
                 int64_t window, std::optional<double> scale, TensorRef &result,
                 bool bshd, TensorRef *lse, bool packed, double softcap,
                 bool segments) {
  if (packed) {
    PackedHeads heads;
    if (Status s = heads.read(query, result.shape[2]); !s.ok())
      return s;
    const TensorRef &q = heads.view(0), &k = heads.view(1), &v = heads.view(2);
    AttentionShape sizes;
    if (Status s = attentionShape(q, k, v, keyMask, causal, window, scale, bshd,
                                  sizes, softcap, segments);
        !s.ok())
      return s;
    // The fused kernel reads the three heads where they lie.
    if (fusedAttentionSupports(query.dtype, sizes.d, sizes.dv) &&
        sizes.softcap == 0.0f && result.dtype == query.dtype &&
        !bytesOverlap(result, query)) {
      if (result.numElements() == 0)
        return Status::success();
      return fusedAttention(
          ctx, query.dtype, q.data, k.data, v.data, sizes.batch * sizes.group,
          sizes.positions, sizes.tk, sizes.d, sizes.scale, causal, sizes.mask,
          sizes.rowHeads, sizes.group, result.data,
          lse ? static_cast<float *>(lse->data) : nullptr, heads.rowHeads());
    }
    if (Status s = heads.copy(ctx); !s.ok())
      return s;
    return attention(ctx, heads.dense(0), heads.dense(1), heads.dense(2),
                     keyMask, causal, window, scale, result, bshd, lse,
                     /*packed=*/false, softcap, segments);
  }
  AttentionShape sizes;
  if (Status s = attentionShape(query, key, value, keyMask, causal, window,
                                scale, bshd, sizes, softcap, segments);
      !s.ok())
    return s;
  // Nothing to compute, unless the rows' statistic is asked for (heads of
  // values with no elements).
  if (result.numElements() == 0 && (!lse || lse->numElements() == 0))
    return Status::success();
  int64_t tq = sizes.tq, tk = sizes.tk, d = sizes.d, dv = sizes.dv;

  // 16-bit heads of up to 64 elements: the fused kernel (tensor cores, no
  // score matrix in memory), which reads and writes either layout, each
  // query head reading its group's key/value head; not soft-capped.
  if (fusedAttentionSupports(query.dtype, d, dv) && sizes.softcap == 0.0f &&
      key.dtype == query.dtype && value.dtype == query.dtype &&
      result.dtype == query.dtype && !bytesOverlap(result, query) &&
      !bytesOverlap(result, key) && !bytesOverlap(result, value))
    return fusedAttention(ctx, query.dtype, query.data, key.data, value.data,
                          sizes.batch * sizes.group, sizes.positions, tk, d,
                          sizes.scale, causal, sizes.mask, sizes.rowHeads,
                          sizes.group, result.data,
                          lse ? static_cast<float *>(lse->data) : nullptr);

  // The GEMM path computes over dense [B, H, T, D] heads.
  if (bshd) {
    HeadMajorCopies copies;
    TensorRef noLse;
    if (Status s = copies.allocate(
            ctx, {&query, &key, &value, &result, lse ? lse : &noLse});
        !s.ok())
      return s;
    TensorRef q = copies.place(0, query), k = copies.place(1, key),
              v = copies.place(2, value), out = copies.place(3, result);
    TensorRef rows = lse ? copies.placeRows(4, *lse) : TensorRef();
    for (auto [t, copy] : {std::pair{&query, &q}, std::pair{&key, &k},
                           std::pair{&value, &v}})
      if (Status s = HeadMajorCopies::toHeadMajor(ctx, *t, *copy); !s.ok())
        return s;
    if (Status s = attention(ctx, q, k, v, keyMask, causal, window, scale, out,
                             /*bshd=*/false, lse ? &rows : nullptr,
                             /*packed=*/false, softcap, segments);
        !s.ok())
      return s;
    if (lse)
      if (Status s = HeadMajorCopies::writeBackRows(ctx, rows, *lse); !s.ok())
        return s;
    return HeadMajorCopies::writeBack(ctx, out, result);
  }

  // The GEMMs run in f32 on the operands themselves when they are f32 and
  // the result does not overlap them; otherwise on f32 copies.
  bool f32 = query.dtype == DType::F32;
  bool copyInputs = !f32 || bytesOverlap(result, query) ||
                    bytesOverlap(result, key) ||
                    bytesOverlap(result, value);
  int64_t heads = headsPerChunk(sizes, 1);
  WorkspaceLayout layout;
  size_t gemmAt = layout.add(kGemmWorkspaceBytes);
  size_t queryAt =
      copyInputs ? layout.add(query.numElements() * sizeof(float)) : 0;
  size_t keyAt = copyInputs ? layout.add(key.numElements() * sizeof(float)) : 0;
  size_t valueAt =
      copyInputs ? layout.add(value.numElements() * sizeof(float)) : 0;
  size_t scoresAt = layout.add(size_t(heads * tq * tk) * sizeof(float));
  size_t outAt = f32 ? 0 : layout.add(size_t(heads * tq * dv) * sizeof(float));
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  void *gemmWorkspace = at<char>(ctx, gemmAt);
  const float *q = static_cast<const float *>(query.data);
  const float *k = static_cast<const float *>(key.data);
  const float *v = static_cast<const float *>(value.data);
  if (copyInputs) {
    float *qCopy = at<float>(ctx, queryAt), *kCopy = at<float>(ctx, keyAt),
          *vCopy = at<float>(ctx, valueAt);
    for (auto [t, copy] : {std::pair{&query, qCopy}, std::pair{&key, kCopy},
                           std::pair{&value, vCopy}})
      if (Status s = widenToF32(ctx, *t, copy); !s.ok())
        return s;
    q = qCopy;
    k = kCopy;
    v = vCopy;
  }
  float *p = at<float>(ctx, scoresAt);

  for (int64_t b0 = 0; b0 < sizes.batch; b0 += heads) {
    int64_t count = std::min(heads, sizes.batch - b0);
    float *rowLse =
        lse ? static_cast<float *>(lse->data) + b0 * tq : nullptr;
    if (Status s =
            attentionProbabilities(ctx, sizes, q + b0 * tq * d, k + b0 * tk * d,
                                   causal, b0, count, p, gemmWorkspace, rowLse);
        !s.ok())
      return s;
    float *out = f32 ? static_cast<float *>(result.data) + b0 * tq * dv
                     : at<float>(ctx, outAt);
    if (Status s = gemm(ctx,
                        headGemm(false, false, tq, dv, tk, 1.0f, p,
                                 v + b0 * tk * dv, out, count),
                        gemmWorkspace);
        !s.ok())
      return s;
    if (!f32)
      if (Status s =
              narrowFromF32(ctx, out, count * tq * dv, result, b0 * tq * dv);
          !s.ok())
        return s;
  }
  return Status::success();
}

/// attentionGrad of a packed operand ([B, T, Hq + 2 Hkv, D]): its one
/// gradient, the three side by side, in `queryGrad`.
static Status
packedAttentionGrad(Context &ctx, const TensorRef &packed,
                    const TensorRef &output, const TensorRef &grad,
                    const TensorRef *keyMask, bool causal, int64_t window,
                    std::optional<double> scale, TensorRef &queryGrad,
                    TensorRef &keyGrad, TensorRef &valueGrad, bool bshd,
                    const TensorRef *lse, double softcap, bool segments) {
  // bshd heads, one gradient (the packed operand's): the loader checked.
  PackedHeads heads;
  if (Status s = heads.read(packed, output.shape[2]); !s.ok())
    return s;
  const TensorRef &q = heads.view(0), &k = heads.view(1), &v = heads.view(2);
  AttentionShape sizes;
  if (Status s = attentionShape(q, k, v, keyMask, causal, window, scale, bshd,
                                sizes, softcap, segments);
      !s.ok())
    return s;
  if (sizes.batch == 0)
    return Status::success();
  int64_t tq = sizes.tq, d = sizes.d, dv = sizes.dv;
  bool fused = fusedAttentionSupports(packed.dtype, d, dv) &&
               sizes.softcap == 0.0f && output.dtype == packed.dtype &&
               grad.dtype == packed.dtype && queryGrad.dtype == packed.dtype;
  for (const TensorRef *operand : {&packed, &output, &grad})
    fused = fused && !bytesOverlap(queryGrad, *operand);
  if (!fused) {
    if (Status s = heads.copy(ctx, &queryGrad); !s.ok())
      return s;
    if (Status s = attentionGrad(
            ctx, heads.dense(0), heads.dense(1), heads.dense(2), output, grad,
            keyMask, causal, window, scale, heads.grad(0), heads.grad(1),
            heads.grad(2), bshd, lse, /*packed=*/false, softcap, segments);
        !s.ok())
      return s;
    return heads.pack(ctx, queryGrad);
  }
  // As the unpacked fused path below, reading and writing the heads where
  // the packed rows hold them.
  WorkspaceLayout layout;
  size_t lseAt = lse ? 0 : layout.add(size_t(sizes.batch * tq) * sizeof(float));
  size_t rowDotAt = layout.add(size_t(sizes.batch * tq) * sizeof(float));
  size_t dqAt = layout.add(size_t(sizes.batch * tq * d) * sizeof(float));
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  cudaStream_t stream = streamOf(ctx);
  float *rowLse = lse ? static_cast<float *>(lse->data) : at<float>(ctx, lseAt);
  float *rowDot = at<float>(ctx, rowDotAt);
  float *dq = at<float>(ctx, dqAt);
  int64_t queryHeads = sizes.batch * sizes.group;
  if (!lse)
    if (Status s = fusedAttention(ctx, packed.dtype, q.data, k.data, v.data,
                                  queryHeads, sizes.positions, sizes.tk, d,
                                  sizes.scale, causal, sizes.mask,
                                  sizes.rowHeads, sizes.group,
                                  /*out=*/nullptr, rowLse, heads.rowHeads());
        !s.ok())
      return s;
  if (tq > 0) {
    rowDotKernel<<<rowBlocks(sizes.batch * tq), rowThreads(dv), 0, stream>>>(
        grad.data, output.data, grad.dtype, sizes.batch * tq, dv, rowDot, dq,
        d);
    TGC_CUDA_LAUNCH("rowDotKernel");
  }
  int64_t queryRowHeads = q.shape[2], keyRowHeads = k.shape[2];
  if (Status s = fusedAttentionGrad(
          ctx, packed.dtype, q.data, k.data, v.data, grad.data, rowLse, rowDot,
          queryHeads, sizes.positions, sizes.tk, d, sizes.scale, causal,
          sizes.mask, sizes.rowHeads, sizes.group, dq,
          heads.at(queryGrad.data, queryRowHeads),
          heads.at(queryGrad.data, queryRowHeads + keyRowHeads),
          heads.rowHeads());
      !s.ok())
    return s;
  int64_t count = sizes.batch * tq * d;
  if (count == 0)
    return Status::success();
  narrowRowsFromF32Kernel<<<blocksFor(count), 256, 0, stream>>>(
      dq, count, queryRowHeads * d, queryGrad.data, queryGrad.dtype,
      heads.rowHeads() * d);
  TGC_CUDA_LAUNCH("narrowRowsFromF32Kernel");
  return Status::success();
}

Status attentionGrad(Context &ctx, const TensorRef &query, const TensorRef &key,
                     const TensorRef &value, const TensorRef &output,
                     const TensorRef &grad, const TensorRef *keyMask,
                     bool causal, int64_t window, std::optional<double> scale,
                     TensorRef &queryGrad, TensorRef &keyGrad,
                     TensorRef &valueGrad, bool bshd, const TensorRef *lse,
                     bool packed, double softcap, bool segments) {
  if (packed)
    return packedAttentionGrad(ctx, query, output, grad, keyMask, causal,
                               window, scale, queryGrad, keyGrad, valueGrad,
                               bshd, lse, softcap, segments);
  AttentionShape sizes;
  if (Status s = attentionShape(query, key, value, keyMask, causal, window,
                                scale, bshd, sizes, softcap, segments);
      !s.ok())
    return s;
  // Results that are not present are not computed (an output mask; at
  // least one is, as the loader checked).
  bool wantQuery = queryGrad.present(), wantKey = keyGrad.present(),
       wantValue = valueGrad.present();
  int64_t tq = sizes.tq, tk = sizes.tk, d = sizes.d, dv = sizes.dv;
  if (sizes.batch == 0)
    return Status::success();

  // The fused kernels: the row log-sum-exp (the forward pass's, or from a
  // forward pass here that writes only it: the same bits), the row dots,
  // then one pass over key tiles; the query gradient gathers in f32 and is
  // rounded once. The GEMM path recomputes the probabilities whole.
  bool fused =
      fusedAttentionSupports(query.dtype, d, dv) && sizes.softcap == 0.0f;
  for (const TensorRef *t : {&key, &value, &output, &grad})
    fused = fused && t->dtype == query.dtype;
  for (const TensorRef *result : {&queryGrad, &keyGrad, &valueGrad}) {
    fused = fused && (!result->present() || result->dtype == query.dtype);
    for (const TensorRef *operand : {&query, &key, &value, &output, &grad})
      fused = fused && !(result->present() && bytesOverlap(*result, *operand));
  }
  if (fused) {
    WorkspaceLayout layout;
    size_t lseAt =
        lse ? 0 : layout.add(size_t(sizes.batch * tq) * sizeof(float));
    size_t rowDotAt = layout.add(size_t(sizes.batch * tq) * sizeof(float));
    size_t dqAt =
        wantQuery ? layout.add(size_t(sizes.batch * tq * d) * sizeof(float))
                  : 0;
    if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
      return s;
    cudaStream_t stream = streamOf(ctx);
    float *rowLse = lse ? static_cast<float *>(lse->data) : at<float>(ctx, lseAt);
    float *rowDot = at<float>(ctx, rowDotAt);
    float *dq = wantQuery ? at<float>(ctx, dqAt) : nullptr;
    int64_t queryHeads = sizes.batch * sizes.group;
    if (!lse)
      if (Status s = fusedAttention(ctx, query.dtype, query.data, key.data,
                                    value.data, queryHeads, sizes.positions,
                                    tk, d, sizes.scale, causal, sizes.mask,
                                    sizes.rowHeads, sizes.group,
                                    /*out=*/nullptr, rowLse);
          !s.ok())
        return s;
    // The row dots, and the query gradient's accumulator cleared.
    if (tq > 0) {
      rowDotKernel<<<rowBlocks(sizes.batch * tq), rowThreads(dv), 0, stream>>>(
          grad.data, output.data, grad.dtype, sizes.batch * tq, dv, rowDot, dq,
          d);
      TGC_CUDA_LAUNCH("rowDotKernel");
    }
    if (Status s = fusedAttentionGrad(
            ctx, query.dtype, query.data, key.data, value.data, grad.data,
            rowLse, rowDot, queryHeads, sizes.positions, tk, d, sizes.scale,
            causal, sizes.mask, sizes.rowHeads, sizes.group, dq,
            wantKey ? keyGrad.data : nullptr,
            wantValue ? valueGrad.data : nullptr);
        !s.ok())
      return s;
    if (dq)
      return narrowFromF32(ctx, dq, sizes.batch * tq * d, queryGrad, 0);
    return Status::success();
  }

  // The GEMM path computes over dense [B, H, T, D] heads.
  if (bshd) {
    HeadMajorCopies copies;
    if (Status s = copies.allocate(ctx, {&query, &key, &value, &output, &grad,
                                         &queryGrad, &keyGrad, &valueGrad});
        !s.ok())
      return s;
    TensorRef q = copies.place(0, query), k = copies.place(1, key),
              v = copies.place(2, value), o = copies.place(3, output),
              g = copies.place(4, grad), dq = copies.place(5, queryGrad),
              dk = copies.place(6, keyGrad), dvCopy = copies.place(7, valueGrad);
    for (auto [t, copy] : {std::pair{&query, &q}, std::pair{&key, &k},
                           std::pair{&value, &v}, std::pair{&output, &o},
                           std::pair{&grad, &g}})
      if (Status s = HeadMajorCopies::toHeadMajor(ctx, *t, *copy); !s.ok())
        return s;
    if (Status s =
            attentionGrad(ctx, q, k, v, o, g, keyMask, causal, window, scale,
                          dq, dk, dvCopy, /*bshd=*/false,
                          /*lse=*/nullptr, /*packed=*/false, softcap, segments);
        !s.ok())
      return s;
    for (auto [copy, t] : {std::pair{&dq, &queryGrad}, std::pair{&dk, &keyGrad},
                           std::pair{&dvCopy, &valueGrad}})
      if (Status s = HeadMajorCopies::writeBack(ctx, *copy, *t); !s.ok())
        return s;
    return Status::success();
  }

  // As in the forward pass, the GEMMs read f32 copies unless everything is
  // f32 and no gradient overlaps an operand.
  bool f32 = query.dtype == DType::F32;
  bool copyInputs = !f32;
  for (const TensorRef *result : {&queryGrad, &keyGrad, &valueGrad})
    for (const TensorRef *operand : {&query, &key, &value, &output, &grad})
      copyInputs = copyInputs ||
                   (result->present() && bytesOverlap(*result, *operand));
  int64_t heads = headsPerChunk(sizes, 2);
  WorkspaceLayout layout;
  size_t gemmAt = layout.add(kGemmWorkspaceBytes);
  size_t queryAt =
      copyInputs ? layout.add(query.numElements() * sizeof(float)) : 0;
  size_t keyAt = copyInputs ? layout.add(key.numElements() * sizeof(float)) : 0;
  size_t valueAt =
      copyInputs ? layout.add(value.numElements() * sizeof(float)) : 0;
  size_t gradAt =
      copyInputs ? layout.add(grad.numElements() * sizeof(float)) : 0;
  size_t rowDotAt = layout.add(size_t(sizes.batch * tq) * sizeof(float));
  size_t probabilitiesAt = layout.add(size_t(heads * tq * tk) * sizeof(float));
  size_t scoreGradAt = layout.add(size_t(heads * tq * tk) * sizeof(float));
  size_t queryGradAt =
      f32 ? 0 : layout.add(size_t(heads * tq * d) * sizeof(float));
  size_t keyGradAt =
      f32 ? 0 : layout.add(size_t(heads * tk * d) * sizeof(float));
  size_t valueGradAt =
      f32 ? 0 : layout.add(size_t(heads * tk * dv) * sizeof(float));
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  void *gemmWorkspace = at<char>(ctx, gemmAt);
  cudaStream_t stream = streamOf(ctx);

  // rowsum(grad * output) for every row, before any gradient is written.
  float *rowDot = at<float>(ctx, rowDotAt);
  if (tq > 0) {
    rowDotKernel<<<rowBlocks(sizes.batch * tq), rowThreads(dv), 0, stream>>>(
        grad.data, output.data, grad.dtype, sizes.batch * tq, dv, rowDot,
        nullptr, 0);
    TGC_CUDA_LAUNCH("rowDotKernel");
  }
  const float *q = static_cast<const float *>(query.data);
  const float *k = static_cast<const float *>(key.data);
  const float *v = static_cast<const float *>(value.data);
  const float *dO = static_cast<const float *>(grad.data);
  if (copyInputs) {
    float *qCopy = at<float>(ctx, queryAt), *kCopy = at<float>(ctx, keyAt),
          *vCopy = at<float>(ctx, valueAt), *gCopy = at<float>(ctx, gradAt);
    for (auto [t, copy] : {std::pair{&query, qCopy}, std::pair{&key, kCopy},
                           std::pair{&value, vCopy}, std::pair{&grad, gCopy}})
      if (Status s = widenToF32(ctx, *t, copy); !s.ok())
        return s;
    q = qCopy;
    k = kCopy;
    v = vCopy;
    dO = gCopy;
  }
  float *p = at<float>(ctx, probabilitiesAt);
  float *dS = at<float>(ctx, scoreGradAt);

  for (int64_t b0 = 0; b0 < sizes.batch; b0 += heads) {
    int64_t count = std::min(heads, sizes.batch - b0);
    const float *qb = q + b0 * tq * d, *kb = k + b0 * tk * d;
    const float *vb = v + b0 * tk * dv, *gb = dO + b0 * tq * dv;
    float *dq = !wantQuery ? nullptr
                : f32      ? static_cast<float *>(queryGrad.data) + b0 * tq * d
                           : at<float>(ctx, queryGradAt);
    float *dk = !wantKey ? nullptr
                : f32    ? static_cast<float *>(keyGrad.data) + b0 * tk * d
                         : at<float>(ctx, keyGradAt);
    float *dvOut = !wantValue ? nullptr
                   : f32 ? static_cast<float *>(valueGrad.data) + b0 * tk * dv
                         : at<float>(ctx, valueGradAt);
    if (Status s = attentionProbabilities(ctx, sizes, qb, kb, causal, b0, count,
                                          p, gemmWorkspace);
        !s.ok())
      return s;
    // value_grad = P^T @ grad.
    if (wantValue)
      if (Status s = gemm(ctx,
                          headGemm(true, false, tk, dv, tq, 1.0f, p, gb, dvOut,
                                   count),
                          gemmWorkspace);
          !s.ok())
        return s;
    if ((wantQuery || wantKey) && sizes.softcap > 0.0f) {
      // Through the soft-cap: P times its slope, from the scaled scores
      // recomputed into dS's room (dV above has read P).
      GemmProblem scores =
          headGemm(false, true, tq, tk, d, sizes.scale, qb, kb, dS, count);
      if (Status s = gemm(ctx, scores, gemmWorkspace); !s.ok())
        return s;
      int64_t scoreCount = count * tq * tk;
      if (scoreCount > 0) {
        softcapSlopeKernel<<<blocksFor(scoreCount), 256, 0, stream>>>(
            p, dS, scoreCount, sizes.softcap);
        TGC_CUDA_LAUNCH("softcapSlopeKernel");
      }
    }
    if (wantQuery || wantKey) {
      // dP = grad @ value^T; dS = P * (dP - rowsum(grad * output)), in place.
      if (Status s = gemm(
              ctx, headGemm(false, true, tq, tk, dv, 1.0f, gb, vb, dS, count),
              gemmWorkspace);
          !s.ok())
        return s;
      int64_t scoreCount = count * tq * tk;
      if (scoreCount > 0) {
        attentionScoreGradKernel<<<blocksFor(scoreCount), 256, 0, stream>>>(
            p, dS, rowDot + b0 * tq, scoreCount, tk);
        TGC_CUDA_LAUNCH("attentionScoreGradKernel");
      }
    }
    // query_grad = dS @ key * scale, key_grad = dS^T @ query * scale.
    if (wantQuery)
      if (Status s = gemm(ctx,
                          headGemm(false, false, tq, d, tk, sizes.scale, dS, kb,
                                   dq, count),
                          gemmWorkspace);
          !s.ok())
        return s;
    if (wantKey)
      if (Status s = gemm(ctx,
                          headGemm(true, false, tk, d, tq, sizes.scale, dS, qb,
                                   dk, count),
                          gemmWorkspace);
          !s.ok())
        return s;
    if (!f32) {
      if (wantQuery)
        if (Status s = narrowFromF32(ctx, dq, count * tq * d, queryGrad,
                                     b0 * tq * d);
            !s.ok())
          return s;
      if (wantKey)
        if (Status s =
                narrowFromF32(ctx, dk, count * tk * d, keyGrad, b0 * tk * d);
            !s.ok())
          return s;
      if (wantValue)
        if (Status s = narrowFromF32(ctx, dvOut, count * tk * dv, valueGrad,
                                     b0 * tk * dv);
            !s.ok())
          return s;
    }
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

Status crossEntropy(Context &ctx, const TensorRef &logits,
                    const TensorRef &targets, int64_t ignoreIndex,
                    TensorRef &result, const TensorRef *grad,
                    TensorRef *logitsGrad, double softcap) {
  // The soft-cap, the logits' rank and grad with logits_grad as the
  // loader checked them; the targets are checked on the device.
  int64_t classes = logits.shape.back();
  int64_t rows = targets.numElements();
  WorkspaceLayout layout;
  size_t lossesAt = layout.add(size_t(rows) * sizeof(float));
  size_t countedAt = layout.add(size_t(rows) * sizeof(float));
  size_t targetsAt = layout.add(grad ? size_t(rows) * sizeof(int64_t) : 0);
  size_t coefficientAt = layout.add(grad ? 2 * sizeof(float) : 0);
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  float *losses = at<float>(ctx, lossesAt);
  float *counted = at<float>(ctx, countedAt);
  float *coefficient = grad ? at<float>(ctx, coefficientAt) : nullptr;
  cudaStream_t stream = streamOf(ctx);
  // The gradient's scale (the seed over the count) before the rows.
  if (grad && rows > 0) {
    crossEntropyGradPrepareKernel<<<1, 1024, 0, stream>>>(
        targets.data, targets.dtype, rows, classes, ignoreIndex, grad->data,
        grad->dtype, at<int64_t>(ctx, targetsAt), coefficient,
        /*error=*/nullptr);
    TGC_CUDA_LAUNCH("crossEntropyGradPrepareKernel");
  }
  if (rows > 0) {
    crossEntropyRowsKernel<<<rowBlocks(rows), rowThreads(classes), 0, stream>>>(
        logits.data, logits.dtype, targets.data, targets.dtype, rows, classes,
        ignoreIndex, losses, counted, ctx.deviceError, coefficient,
        grad ? logitsGrad->data : nullptr, float(softcap));
    TGC_CUDA_LAUNCH("crossEntropyRowsKernel");
  }
  crossEntropyMeanKernel<<<1, 1024, 0, stream>>>(losses, counted, rows,
                                                 result.data, result.dtype);
  TGC_CUDA_LAUNCH("crossEntropyMeanKernel");
  return Status::success();
}

Status targetCount(Context &ctx, const TensorRef &targets, int64_t ignoreIndex,
                   TensorRef &result) {
  targetCountKernel<<<1, 1024, 0, streamOf(ctx)>>>(
      targets.data, targets.dtype, targets.numElements(), ignoreIndex,
      result.data, result.dtype);
  TGC_CUDA_LAUNCH("targetCountKernel");
  return Status::success();
}

Status crossEntropyGrad(Context &ctx, const TensorRef &logits,
                        const TensorRef &targets, const TensorRef &grad,
                        int64_t ignoreIndex, TensorRef &result,
                        double softcap) {
  // As crossEntropy.
  int64_t classes = logits.shape.back();
  int64_t rows = targets.numElements();
  if (rows == 0)
    return Status::success();
  WorkspaceLayout layout;
  size_t targetsAt = layout.add(size_t(rows) * sizeof(int64_t));
  size_t coefficientAt = layout.add(2 * sizeof(float));
  if (Status s = ctx.reserveWorkspace(layout.total); !s.ok())
    return s;
  int64_t *targetCopy = at<int64_t>(ctx, targetsAt);
  float *coefficient = at<float>(ctx, coefficientAt);
  cudaStream_t stream = streamOf(ctx);
  crossEntropyGradPrepareKernel<<<1, 1024, 0, stream>>>(
      targets.data, targets.dtype, rows, classes, ignoreIndex, grad.data,
      grad.dtype, targetCopy, coefficient, ctx.deviceError);
  TGC_CUDA_LAUNCH("crossEntropyGradPrepareKernel");
  if (classes == 0)
    return Status::success();
  crossEntropyGradKernel<<<rowBlocks(rows), rowThreads(classes), 0, stream>>>(
      logits.data, logits.dtype, targetCopy, rows, classes, ignoreIndex,
      coefficient, result.data, float(softcap));
  TGC_CUDA_LAUNCH("crossEntropyGradKernel");
  return Status::success();
}

} // namespace tgc::rt::cuda
