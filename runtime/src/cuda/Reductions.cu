//===- Reductions.cu - sums, means, maxima over axes, and sum_to ----------===//
//
// The reductions on the GPU with the semantics of cpu/Reductions.cpp. A
// ReducePlan splits the operand's dimensions into kept ones (which index the
// result, in its row-major order) and reduced ones (which index a group);
// reduce_sum/mean/max with or without keep_dims and tg.sum_to, the adjoint
// of broadcasting, are all that one plan. Small groups are reduced by one
// thread per result element, large ones by one block per result element
// with a shared-memory tree. Sums accumulate in f64 as the CPU does and are
// rounded once into the result; maxima propagate NaN. reduce_max_grad
// counts the ties of every group first, then gives each tied element an even
// share of the group's cotangent, as the CPU kernel (and torch.amax) does.
// tg.cumsum gives each line along its axis a thread that sums in order, in
// f64 for floats, so its bits are the CPU kernel's.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <algorithm>

namespace tgc::rt::cuda {

static constexpr unsigned kThreads = 256;
/// Groups at least this large get a block each; smaller ones a thread.
static constexpr int64_t kBlockGroupSize = 64;

namespace {
/// How a reduction maps operand elements to result elements.
struct ReducePlan {
  /// Result elements, and operand elements per result element.
  int64_t outputs = 1;
  int64_t groupSize = 1;
  /// Kept dimensions: their sizes and operand strides, outermost first.
  int keptRank = 0;
  int64_t keptSize[kMaxRank] = {};
  int64_t keptStride[kMaxRank] = {};
  /// Reduced dimensions, likewise.
  int reducedRank = 0;
  int64_t reducedSize[kMaxRank] = {};
  int64_t reducedStride[kMaxRank] = {};
};

enum class ReduceKind { Sum, Mean, Max };
} // namespace

/// Plans the reduction of `shape` over the dimensions marked in `reduced`.
/// Fails (returns false) past kMaxRank dimensions.
static bool planReduction(const std::vector<int64_t> &shape,
                          const std::vector<bool> &reduced, ReducePlan &plan) {
  if (shape.size() > size_t(kMaxRank))
    return false;
  plan = ReducePlan();
  int64_t stride = 1;
  std::vector<int64_t> strides(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      plan.reducedSize[plan.reducedRank] = shape[d];
      plan.reducedStride[plan.reducedRank++] = strides[d];
      plan.groupSize *= shape[d];
    } else {
      plan.keptSize[plan.keptRank] = shape[d];
      plan.keptStride[plan.keptRank++] = strides[d];
      plan.outputs *= shape[d];
    }
  }
  return true;
}

/// The operand offset of the first element of result element `o`'s group.
__device__ inline int64_t groupBase(const ReducePlan &plan, int64_t o) {
  int64_t offset = 0;
  for (int d = plan.keptRank - 1; d >= 0; --d) {
    offset += (o % plan.keptSize[d]) * plan.keptStride[d];
    o /= plan.keptSize[d];
  }
  return offset;
}

/// The offset of the `j`th element of a group from the group's base.
__device__ inline int64_t groupOffset(const ReducePlan &plan, int64_t j) {
  int64_t offset = 0;
  for (int d = plan.reducedRank - 1; d >= 0; --d) {
    offset += (j % plan.reducedSize[d]) * plan.reducedStride[d];
    j /= plan.reducedSize[d];
  }
  return offset;
}

template <ReduceKind Kind> __device__ inline double initialValue() {
  return Kind == ReduceKind::Max ? -INFINITY : 0.0;
}

/// Adds `value` into `acc`, or keeps the larger (NaN wins) for a maximum.
/// Also combines two partial results.
template <ReduceKind Kind>
__device__ inline double accumulate(double acc, double value) {
  if constexpr (Kind == ReduceKind::Max)
    return (value > acc || isnan(value)) ? value : acc;
  else
    return acc + value;
}

template <ReduceKind Kind>
__device__ inline float finish(double acc, int64_t groupSize) {
  if constexpr (Kind == ReduceKind::Mean)
    acc /= double(groupSize);
  return float(acc);
}

/// One thread per result element, walking its group in row-major order.
template <ReduceKind Kind>
__global__ void reduceByThreadKernel(const void *input, void *result,
                                     DType dtype, ReducePlan plan) {
  TGC_GRID_LOOP(o, plan.outputs) {
    int64_t base = groupBase(plan, o);
    double acc = initialValue<Kind>();
    for (int64_t j = 0; j < plan.groupSize; ++j)
      acc = accumulate<Kind>(
          acc, loadFloat(input, dtype, base + groupOffset(plan, j)));
    storeFloat(result, dtype, o, finish<Kind>(acc, plan.groupSize));
  }
}

/// One block per result element: the threads stride over the group, then
/// combine their partial results in shared memory.
template <ReduceKind Kind>
__global__ void reduceByBlockKernel(const void *input, void *result,
                                    DType dtype, ReducePlan plan) {
  __shared__ double partial[kThreads];
  for (int64_t o = blockIdx.x; o < plan.outputs; o += gridDim.x) {
    int64_t base = groupBase(plan, o);
    double acc = initialValue<Kind>();
    for (int64_t j = threadIdx.x; j < plan.groupSize; j += blockDim.x)
      acc = accumulate<Kind>(
          acc, loadFloat(input, dtype, base + groupOffset(plan, j)));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        partial[threadIdx.x] =
            accumulate<Kind>(partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      storeFloat(result, dtype, o, finish<Kind>(partial[0], plan.groupSize));
    // `partial` is reused for the next result element.
    __syncthreads();
  }
}

/// Sums (or means) of the columns of a row-major [rows, columns] operand
/// (its leading dimensions reduced: a bias's gradient): blocks of 32
/// columns by 8 row lanes, each a chunk of rows, so a warp reads 32
/// neighbouring elements of a row. Each block writes its columns' f64
/// partial sums; the last block of a column tile to finish (a counter per
/// tile, set back to zero after) adds the chunks' partials in order and
/// rounds once.
constexpr int kColumnTile = 32, kRowLanes = 8;

template <ReduceKind Kind>
__global__ void __launch_bounds__(kColumnTile *kRowLanes)
    columnSumKernel(const void *input, void *result, DType dtype,
                    int64_t rows, int64_t columns, int64_t rowsPerChunk,
                    double *partials, unsigned *counters) {
  __shared__ double lanes[kRowLanes][kColumnTile + 1];
  __shared__ bool last;
  int64_t c = int64_t(blockIdx.x) * kColumnTile + threadIdx.x;
  int64_t begin = int64_t(blockIdx.y) * rowsPerChunk;
  int64_t end = min(begin + rowsPerChunk, rows);
  double acc = 0.0;
  if (c < columns)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes)
      acc += loadFloat(input, dtype, r * columns + c);
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < columns) {
    double chunk = 0.0;
    for (int y = 0; y < kRowLanes; ++y)
      chunk += lanes[y][threadIdx.x];
    partials[int64_t(blockIdx.y) * columns + c] = chunk;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0)
    last = atomicAdd(&counters[blockIdx.x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last)
    return;
  if (threadIdx.y == 0 && c < columns) {
    const volatile double *chunks = partials;
    double total = 0.0;
    for (unsigned k = 0; k < gridDim.y; ++k)
      total += chunks[int64_t(k) * columns + c];
    storeFloat(result, dtype, c, finish<Kind>(total, rows));
  }
  if (threadIdx.x == 0 && threadIdx.y == 0)
    counters[blockIdx.x] = 0;
}

/// Runs a sum or mean over the leading dimensions of a [rows, columns]
/// operand with columnSumKernel; false when it does not apply (few rows or
/// columns, no counters, too many column tiles).
template <ReduceKind Kind>
static bool columnReduction(Context &ctx, const void *source,
                            const TensorRef &input, int64_t rows,
                            int64_t columns, TensorRef &result,
                            Status &status) {
  int64_t tiles = (columns + kColumnTile - 1) / kColumnTile;
  if (Kind == ReduceKind::Max || rows < 64 || columns < kColumnTile ||
      !ctx.reduceCounters || tiles > Context::kReduceCounters)
    return false;
  // About 1024 blocks, each at least 32 rows.
  int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>((rows + 31) / 32, std::max<int64_t>(1, 1024 / tiles)));
  chunks = std::min<int64_t>(chunks, 65535);
  int64_t rowsPerChunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
  status = ctx.reserveWorkspace(size_t(chunks * columns) * sizeof(double));
  if (!status.ok())
    return true;
  dim3 grid{unsigned(tiles), unsigned(chunks)};
  dim3 block{kColumnTile, kRowLanes};
  columnSumKernel<Kind><<<grid, block, 0, streamOf(ctx)>>>(
      source, result.data, input.dtype, rows, columns, rowsPerChunk,
      static_cast<double *>(ctx.workspace), ctx.reduceCounters);
  status = Status::success();
  return true;
}

template <ReduceKind Kind>
static Status launchReduction(Context &ctx, const TensorRef &input,
                              const std::vector<bool> &reduced,
                              TensorRef &result, const char *name) {
  ReducePlan plan;
  if (!planReduction(input.shape, reduced, plan))
    return Status::failure(std::string(name) + ": supports up to 8 dimensions");
  if (plan.outputs == 0)
    return Status::success();
  // Threads would overwrite operand elements others still read.
  StreamScratch scratch;
  const void *source = input.data;
  if (bytesOverlap(input, result)) {
    Status status = stageCopy(ctx, input, scratch, source);
    if (!status.ok())
      return status;
  }
  cudaStream_t stream = streamOf(ctx);
  // Leading dimensions reduced, the kept ones contiguous after them.
  bool leading = plan.keptRank > 0 &&
                 plan.keptStride[plan.keptRank - 1] == 1 &&
                 plan.reducedRank > 0 &&
                 plan.reducedStride[plan.reducedRank - 1] == plan.outputs;
  Status status;
  if (leading && columnReduction<Kind>(ctx, source, input, plan.groupSize,
                                       plan.outputs, result, status)) {
    if (!status.ok())
      return status;
  } else if (plan.groupSize >= kBlockGroupSize) {
    unsigned blocks = unsigned(std::min<int64_t>(plan.outputs, 65535 * 8));
    reduceByBlockKernel<Kind><<<blocks, kThreads, 0, stream>>>(
        source, result.data, input.dtype, plan);
  } else {
    reduceByThreadKernel<Kind>
        <<<blocksFor(plan.outputs, kThreads), kThreads, 0, stream>>>(
            source, result.data, input.dtype, plan);
  }
  TGC_CUDA_LAUNCH(name);
  return Status::success();
}

/// The dimensions of a rank-`rank` operand that `axes` reduce.
static std::vector<bool> reducedAxes(const std::vector<int64_t> &axes,
                                     int64_t rank) {
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t axis : axes) {
    int64_t dim = axis < 0 ? axis + rank : axis;
    if (dim >= 0 && dim < rank)
      reduced[dim] = true;
  }
  return reduced;
}

// keep_dims only adds size-1 dimensions to the result, which do not change
// the row-major order of its elements, so it needs no handling here.

Status reduceSum(Context &ctx, const TensorRef &input,
                 const std::vector<int64_t> &axes, bool /*keepDims*/,
                 TensorRef &result) {
  return launchReduction<ReduceKind::Sum>(
      ctx, input, reducedAxes(axes, input.rank()), result, "reduce_sum");
}

Status reduceMean(Context &ctx, const TensorRef &input,
                  const std::vector<int64_t> &axes, bool /*keepDims*/,
                  TensorRef &result) {
  return launchReduction<ReduceKind::Mean>(
      ctx, input, reducedAxes(axes, input.rank()), result, "reduce_mean");
}

Status reduceMax(Context &ctx, const TensorRef &input,
                 const std::vector<int64_t> &axes, bool /*keepDims*/,
                 TensorRef &result) {
  return launchReduction<ReduceKind::Max>(
      ctx, input, reducedAxes(axes, input.rank()), result, "reduce_max");
}

Status sumTo(Context &ctx, const TensorRef &input, TensorRef &result) {
  // The result's shape broadcasts to the operand's: the operand's leading
  // dimensions, and those where the result has size 1, are summed.
  int64_t rank = input.rank();
  int64_t lead = rank - result.rank();
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t d = 0; d < rank; ++d)
    reduced[d] =
        d < lead || (result.shape[d - lead] == 1 && input.shape[d] != 1);
  return launchReduction<ReduceKind::Sum>(ctx, input, reduced, result,
                                          "sum_to");
}

//===----------------------------------------------------------------------===//
// reduce_max_grad
//===----------------------------------------------------------------------===//

/// Per result element: its maximum and the share of its cotangent each tied
/// element gets, saved so the scatter reads nothing the result may overlap.
__global__ void maxTiesKernel(const void *input, const void *output,
                              const void *grad, DType dtype, ReducePlan plan,
                              float *maxima, float *shares) {
  TGC_GRID_LOOP(o, plan.outputs) {
    float m = loadFloat(output, dtype, o);
    int64_t base = groupBase(plan, o);
    int64_t ties = 0;
    for (int64_t j = 0; j < plan.groupSize; ++j)
      if (loadFloat(input, dtype, base + groupOffset(plan, j)) == m)
        ++ties;
    maxima[o] = m;
    // Read only where an element equals m, so ties >= 1 there.
    shares[o] = ties > 0 ? loadFloat(grad, dtype, o) / float(ties) : 0.0f;
  }
}

/// Per operand element: its group's share where it is a maximum, else 0.
/// `toOutput` has the operand's sizes and the result strides of its group.
__global__ void maxGradKernel(const void *input, void *result, DType dtype,
                              Dims toOutput, const float *maxima,
                              const float *shares, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    int64_t o = broadcastOffset(toOutput, i);
    float x = loadFloat(input, dtype, i);
    storeFloat(result, dtype, i, x == maxima[o] ? shares[o] : 0.0f);
  }
}

Status reduceMaxGrad(Context &ctx, const TensorRef &input,
                     const TensorRef &output, const TensorRef &grad,
                     const std::vector<int64_t> &axes, bool /*keepDims*/,
                     TensorRef &result) {
  int64_t n = input.numElements();
  if (n == 0)
    return Status::success();
  int64_t rank = input.rank();
  std::vector<bool> reduced = reducedAxes(axes, rank);
  ReducePlan plan;
  if (!planReduction(input.shape, reduced, plan))
    return Status::failure("reduce_max_grad: supports up to 8 dimensions");
  // The result element (row-major over the kept dimensions) of every
  // operand element: strides 0 along reduced dimensions.
  Dims toOutput;
  toOutput.rank = int(rank);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    toOutput.size[d] = input.shape[d];
    toOutput.stride[d] = reduced[d] ? 0 : stride;
    if (!reduced[d])
      stride *= input.shape[d];
  }

  StreamScratch scratch, inputCopy;
  Status status =
      scratch.allocate(ctx, 2 * size_t(plan.outputs) * sizeof(float));
  if (!status.ok())
    return status;
  float *maxima = static_cast<float *>(scratch.data());
  float *shares = maxima + plan.outputs;
  // A result exactly over the operand is fine (each element is read by the
  // thread that writes it); a shifted overlap is not.
  const void *source = input.data;
  if (input.data != result.data && bytesOverlap(input, result)) {
    status = stageCopy(ctx, input, inputCopy, source);
    if (!status.ok())
      return status;
  }
  cudaStream_t stream = streamOf(ctx);
  maxTiesKernel<<<blocksFor(plan.outputs, kThreads), kThreads, 0, stream>>>(
      source, output.data, grad.data, input.dtype, plan, maxima, shares);
  TGC_CUDA_LAUNCH("reduce_max_grad");
  maxGradKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
      source, result.data, input.dtype, toOutput, maxima, shares, n);
  TGC_CUDA_LAUNCH("reduce_max_grad");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

/// One thread per line along the axis: `lines` = outer * inner lines of
/// `length` elements, `inner` apart.
__global__ void cumsumKernel(const void *input, void *result, DType dtype,
                             int64_t lines, int64_t length, int64_t inner,
                             bool reverse) {
  bool isInt = dtype == DType::I64 || dtype == DType::I32;
  TGC_GRID_LOOP(line, lines) {
    int64_t begin = (line / inner) * length * inner + line % inner;
    double sum = 0.0;
    uint64_t intSum = 0;
    for (int64_t k = 0; k < length; ++k) {
      int64_t at = begin + (reverse ? length - 1 - k : k) * inner;
      if (isInt) {
        intSum += uint64_t(loadInt(input, dtype, at));
        storeInt(result, dtype, at, int64_t(intSum));
      } else {
        sum += double(loadFloat(input, dtype, at));
        storeFloat(result, dtype, at, narrowF64(sum, dtype));
      }
    }
  }
}

Status cumsum(Context &ctx, const TensorRef &input, int64_t axis, bool reverse,
              TensorRef &result) {
  int64_t rank = input.rank();
  int64_t dim = axis < 0 ? axis + rank : axis; // in range: the loader
  if (input.numElements() == 0)
    return Status::success();
  int64_t length = input.shape[size_t(dim)];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= input.shape[size_t(d)];
  int64_t lines = input.numElements() / length;
  StreamScratch scratch;
  const void *source = input.data;
  if (bytesOverlap(input, result)) {
    Status status = stageCopy(ctx, input, scratch, source);
    if (!status.ok())
      return status;
  }
  cumsumKernel<<<blocksFor(lines, kThreads), kThreads, 0, streamOf(ctx)>>>(
      source, result.data, input.dtype, lines, length, inner, reverse);
  TGC_CUDA_LAUNCH("cumsum");
  return Status::success();
}

} // namespace tgc::rt::cuda
