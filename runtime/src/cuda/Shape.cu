//===- Shape.cu - reshape, transpose, slices, concat, broadcast, fill ----===//
//
// The data-movement ops on the GPU, as cpu/Shape.cpp does them: each is a
// strided copy of whole elements (bytes moved unchanged, any element type)
// described by a CopyPlan, one thread per copied element. A result whose
// buffer overlaps its operand is produced from a stream-ordered copy of the
// operand, since threads would otherwise overwrite elements others have not
// read. tg.constant copies from the device copy of the executable's
// constants (uploaded once, so no step waits for a pageable host copy);
// tg.fill converts its f64 value with the CPU kernel (one element on the
// host, so the conversion is tg.cast's exactly) and replicates the bits.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "tgc/Support/MultiTensor.h"

#include "tgc/runtime/CpuKernels.h"

#include <cstring>

namespace tgc::rt::cuda {

static constexpr unsigned kThreads = 256;

using Shape = std::vector<int64_t>;

static Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

namespace {
/// A strided copy: for every index of `size` (row-major), the element at
/// `srcBase + index . srcStride` goes to `dstBase + index . dstStride`
/// (element offsets).
struct CopyPlan {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t srcStride[kMaxRank] = {};
  int64_t dstStride[kMaxRank] = {};
  int64_t srcBase = 0;
  int64_t dstBase = 0;
};
} // namespace

template <typename T>
__global__ void stridedCopyKernel(T *dst, const T *src, CopyPlan plan,
                                  int64_t n) {
  TGC_GRID_LOOP(i, n) {
    int64_t linear = i, s = plan.srcBase, d = plan.dstBase;
    for (int k = plan.rank - 1; k >= 0; --k) {
      int64_t index = linear % plan.size[k];
      linear /= plan.size[k];
      s += index * plan.srcStride[k];
      d += index * plan.dstStride[k];
    }
    dst[d] = src[s];
  }
}

/// Copies the elements of the index space `shape` from `src` to `dst`.
/// Rewrites `plan` (of elements of `elementSize` bytes) to copy 16-byte
/// units when its innermost dimension is contiguous on both sides and every
/// offset, stride and size lines up with them: a thread then moves 16 bytes
/// for one offset computation. Returns the units' count, or 0 when it does
/// not apply.
static int64_t vectorizePlan(CopyPlan &plan, int64_t n, size_t elementSize,
                             const void *dst, const void *src) {
  int64_t v = 16 / int64_t(elementSize);
  int r = plan.rank - 1;
  if (v <= 1 || r < 0 || plan.srcStride[r] != 1 || plan.dstStride[r] != 1 ||
      plan.size[r] % v != 0 || plan.srcBase % v != 0 ||
      plan.dstBase % v != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(src) % 16 != 0)
    return 0;
  for (int d = 0; d < r; ++d)
    if (plan.srcStride[d] % v != 0 || plan.dstStride[d] % v != 0)
      return 0;
  for (int d = 0; d < r; ++d) {
    plan.srcStride[d] /= v;
    plan.dstStride[d] /= v;
  }
  plan.size[r] /= v;
  plan.srcBase /= v;
  plan.dstBase /= v;
  return n / v;
}

static Status stridedCopy(Context &ctx, void *dst, const Shape &dstStrides,
                          int64_t dstBase, const void *src,
                          const Shape &srcStrides, int64_t srcBase,
                          const Shape &shape, DType dtype, const char *name) {
  if (shape.size() > size_t(kMaxRank))
    return Status::failure(std::string(name) + ": supports up to 8 dimensions");
  CopyPlan plan;
  plan.rank = int(shape.size());
  int64_t n = 1;
  for (int d = 0; d < plan.rank; ++d) {
    plan.size[d] = shape[d];
    plan.srcStride[d] = srcStrides[d];
    plan.dstStride[d] = dstStrides[d];
    n *= shape[d];
  }
  plan.srcBase = srcBase;
  plan.dstBase = dstBase;
  if (n == 0)
    return Status::success();
  cudaStream_t stream = streamOf(ctx);
  if (int64_t units = vectorizePlan(plan, n, dtypeSize(dtype), dst, src)) {
    stridedCopyKernel<uint4><<<blocksFor(units, kThreads), kThreads, 0,
                                stream>>>(static_cast<uint4 *>(dst),
                                          static_cast<const uint4 *>(src),
                                          plan, units);
    TGC_CUDA_LAUNCH(name);
    return Status::success();
  }
  unsigned blocks = blocksFor(n, kThreads);
  switch (dtypeSize(dtype)) {
  case 1:
    stridedCopyKernel<uint8_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), plan,
        n);
    break;
  case 2:
    stridedCopyKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint16_t *>(dst), static_cast<const uint16_t *>(src), plan,
        n);
    break;
  case 4:
    stridedCopyKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint32_t *>(dst), static_cast<const uint32_t *>(src), plan,
        n);
    break;
  default:
    stridedCopyKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint64_t *>(dst), static_cast<const uint64_t *>(src), plan,
        n);
    break;
  }
  TGC_CUDA_LAUNCH(name);
  return Status::success();
}

/// The device data to read `input` from: its own, or a copy (in `scratch`)
/// when `result` overlaps it.
static Status readable(Context &ctx, const TensorRef &input,
                       const TensorRef &result, StreamScratch &scratch,
                       const void *&data) {
  data = input.data;
  if (!bytesOverlap(input, result))
    return Status::success();
  return stageCopy(ctx, input, scratch, data);
}

Status reshape(Context &ctx, const TensorRef &input, TensorRef &result) {
  if (input.numBytes() == 0 || input.data == result.data)
    return Status::success();
  StreamScratch scratch;
  const void *source;
  Status status = readable(ctx, input, result, scratch, source);
  if (!status.ok())
    return status;
  TGC_CUDA_CALL(cudaMemcpyAsync(result.data, source, input.numBytes(),
                                cudaMemcpyDeviceToDevice, streamOf(ctx)));
  return Status::success();
}

namespace {

/// One copy engine transfer between the device and the pinned host region
/// (mapped: its device address is its host address).
Status copyOverLink(Context &ctx, const TensorRef &source, TensorRef &result,
                    cudaMemcpyKind kind, const char *op) {
  // The result of the source's type, as the loader checked.
  if (source.numBytes() == 0)
    return Status::success();
  if (bytesOverlap(source, result))
    return Status::failure(std::string(op) + " source and result overlap");
  TGC_CUDA_CALL(cudaMemcpyAsync(result.data, source.data, source.numBytes(),
                                kind, streamOf(ctx)));
  return Status::success();
}

} // namespace

Status offload(Context &ctx, const TensorRef &source, TensorRef &result) {
  return copyOverLink(ctx, source, result, cudaMemcpyDeviceToHost, "offload");
}

Status reload(Context &ctx, const TensorRef &source, TensorRef &result) {
  return copyOverLink(ctx, source, result, cudaMemcpyHostToDevice, "reload");
}

Status transpose(Context &ctx, const TensorRef &input,
                 const std::vector<int64_t> &permutation, TensorRef &result) {
  if (result.numElements() == 0)
    return Status::success();
  // A permutation of the operand's axes, as the loader checked.
  Shape inStrides = rowMajorStrides(input.shape);
  Shape srcStrides;
  for (int64_t p : permutation)
    srcStrides.push_back(inStrides[p]);
  StreamScratch scratch;
  const void *source;
  Status status = readable(ctx, input, result, scratch, source);
  if (!status.ok())
    return status;
  return stridedCopy(ctx, result.data, rowMajorStrides(result.shape), 0, source,
                     srcStrides, 0, result.shape, input.dtype, "transpose");
}

/// The element offset of `offsets` in a row-major tensor of `shape`.
static int64_t offsetOf(const Shape &shape, const Shape &offsets) {
  Shape strides = rowMajorStrides(shape);
  int64_t base = 0;
  for (size_t d = 0; d < shape.size() && d < offsets.size(); ++d)
    base += offsets[d] * strides[d];
  return base;
}

Status slice(Context &ctx, const TensorRef &input,
             const std::vector<int64_t> &offsets, TensorRef &result) {
  if (result.numElements() == 0)
    return Status::success();
  StreamScratch scratch;
  const void *source;
  Status status = readable(ctx, input, result, scratch, source);
  if (!status.ok())
    return status;
  return stridedCopy(ctx, result.data, rowMajorStrides(result.shape), 0, source,
                     rowMajorStrides(input.shape),
                     offsetOf(input.shape, offsets), result.shape, input.dtype,
                     "slice");
}

Status sliceGrad(Context &ctx, const TensorRef &grad,
                 const std::vector<int64_t> &offsets, TensorRef &result) {
  if (result.numElements() == 0)
    return Status::success();
  StreamScratch scratch;
  const void *source;
  Status status = readable(ctx, grad, result, scratch, source);
  if (!status.ok())
    return status;
  // All-zero bits are +0 in every float format.
  TGC_CUDA_CALL(
      cudaMemsetAsync(result.data, 0, result.numBytes(), streamOf(ctx)));
  return stridedCopy(ctx, result.data, rowMajorStrides(result.shape),
                     offsetOf(result.shape, offsets), source,
                     rowMajorStrides(grad.shape), 0, grad.shape, grad.dtype,
                     "slice_grad");
}

/// `axis` made non-negative.
static int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The pieces of a split or concat along one axis, as spans of the rows of
/// a [outer, row] view of the whole tensor (the axis and the dimensions
/// after it in each row): up to kMaxPieces, in the kernel's parameters, so
/// one launch moves them all.
constexpr int kMaxPieces = int(kPiecesPerLaunch);
struct Pieces {
  void *data[kMaxPieces];
  int64_t start[kMaxPieces + 1]; // in a row; start[count] = row
  int count;
  int64_t row;
};

/// Unit e of the whole tensor and its place in its piece: `toPieces`
/// copies whole -> pieces (split), else pieces -> whole (concat).
template <typename T, bool toPieces>
__global__ void piecesKernel(T *whole, Pieces pieces, int64_t n) {
  TGC_GRID_LOOP(e, n) {
    int64_t o = e / pieces.row, l = e % pieces.row;
    int k = 0;
    while (k + 1 < pieces.count && pieces.start[k + 1] <= l)
      ++k;
    int64_t width = pieces.start[k + 1] - pieces.start[k];
    T *piece = static_cast<T *>(pieces.data[k]) + o * width +
               (l - pieces.start[k]);
    if constexpr (toPieces)
      *piece = whole[e];
    else
      whole[e] = *piece;
  }
}

template <typename T>
static void launchPieces(bool toPieces, cudaStream_t stream, void *whole,
                         const Pieces &pieces, int64_t n) {
  unsigned blocks = blocksFor(n, kThreads);
  if (toPieces)
    piecesKernel<T, true><<<blocks, kThreads, 0, stream>>>(
        static_cast<T *>(whole), pieces, n);
  else
    piecesKernel<T, false><<<blocks, kThreads, 0, stream>>>(
        static_cast<T *>(whole), pieces, n);
}

/// Copies between `whole` and its pieces along `dim` in one launch (16
/// bytes a thread where every span lines up); false when there are too
/// many pieces (the caller copies them one by one).
static bool copyPieces(Context &ctx, const std::vector<int64_t> &shape,
                       int64_t dim, DType dtype, void *whole,
                       const std::vector<const void *> &pieceData,
                       const std::vector<int64_t> &widths, bool toPieces,
                       const char *name, Status &status) {
  if (pieceData.size() > size_t(kMaxPieces) || pieceData.empty())
    return false;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d)
    inner *= shape[d];
  Pieces pieces{};
  pieces.count = int(pieceData.size());
  pieces.row = shape[dim] * inner;
  int64_t size = int64_t(dtypeSize(dtype));
  // Units of 16 bytes where every span and address lines up.
  int64_t v = 16 / size;
  bool vector = v > 1 && pieces.row % v == 0 &&
                reinterpret_cast<uintptr_t>(whole) % 16 == 0;
  int64_t start = 0;
  for (int k = 0; k < pieces.count; ++k) {
    pieces.data[k] = const_cast<void *>(pieceData[k]);
    pieces.start[k] = start;
    start += widths[k] * inner;
    vector = vector && (widths[k] * inner) % v == 0 &&
             reinterpret_cast<uintptr_t>(pieceData[k]) % 16 == 0;
  }
  pieces.start[pieces.count] = start;
  int64_t n = outer * pieces.row;
  status = Status::success();
  if (n == 0)
    return true;
  cudaStream_t stream = streamOf(ctx);
  if (vector) {
    for (int k = 0; k <= pieces.count; ++k)
      pieces.start[k] /= v;
    pieces.row /= v;
    launchPieces<uint4>(toPieces, stream, whole, pieces, n / v);
  } else {
    switch (size) {
    case 1:
      launchPieces<uint8_t>(toPieces, stream, whole, pieces, n);
      break;
    case 2:
      launchPieces<uint16_t>(toPieces, stream, whole, pieces, n);
      break;
    case 4:
      launchPieces<uint32_t>(toPieces, stream, whole, pieces, n);
      break;
    default:
      launchPieces<uint64_t>(toPieces, stream, whole, pieces, n);
      break;
    }
  }
  status = check(int(cudaGetLastError()), name);
  return true;
}

Status split(Context &ctx, const TensorRef &input, int64_t axis,
             std::vector<TensorRef> &results) {
  int64_t dim = normalizeAxis(axis, input.rank());
  StreamScratch scratch;
  const void *source = input.data;
  for (const TensorRef &piece : results) {
    if (bytesOverlap(input, piece)) {
      Status status = stageCopy(ctx, input, scratch, source);
      if (!status.ok())
        return status;
      break;
    }
  }
  // One launch for every piece (up to kMaxPieces).
  std::vector<const void *> pieceData;
  std::vector<int64_t> widths;
  for (const TensorRef &piece : results) {
    pieceData.push_back(piece.data);
    widths.push_back(piece.shape[dim]);
  }
  Status status;
  if (copyPieces(ctx, input.shape, dim, input.dtype,
                 const_cast<void *>(source), pieceData, widths,
                 /*toPieces=*/true, "split", status))
    return status;
  Shape inStrides = rowMajorStrides(input.shape);
  int64_t start = 0;
  for (TensorRef &piece : results) {
    Status status = stridedCopy(ctx, piece.data, rowMajorStrides(piece.shape),
                                0, source, inStrides, start * inStrides[dim],
                                piece.shape, input.dtype, "split");
    if (!status.ok())
      return status;
    start += piece.shape[dim];
  }
  return Status::success();
}

Status concat(Context &ctx, const std::vector<TensorRef> &inputs, int64_t axis,
              TensorRef &result) {
  int64_t dim = normalizeAxis(axis, result.rank());
  // Copy every overlapping piece before anything is written to the result.
  std::vector<StreamScratch> scratch(inputs.size());
  std::vector<const void *> sources(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status status = readable(ctx, inputs[i], result, scratch[i], sources[i]);
    if (!status.ok())
      return status;
  }
  std::vector<int64_t> widths;
  for (const TensorRef &piece : inputs)
    widths.push_back(piece.shape[dim]);
  Status status;
  if (copyPieces(ctx, result.shape, dim, result.dtype, result.data, sources,
                 widths, /*toPieces=*/false, "concat", status))
    return status;
  Shape outStrides = rowMajorStrides(result.shape);
  int64_t start = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorRef &piece = inputs[i];
    Status status = stridedCopy(
        ctx, result.data, outStrides, start * outStrides[dim], sources[i],
        rowMajorStrides(piece.shape), 0, piece.shape, result.dtype, "concat");
    if (!status.ok())
      return status;
    start += piece.shape[dim];
  }
  return Status::success();
}

Status broadcastTo(Context &ctx, const TensorRef &input, TensorRef &result) {
  if (result.numElements() == 0)
    return Status::success();
  Dims dims;
  if (!broadcastDims(input.shape, result.shape, dims))
    return Status::failure("broadcast_to: supports up to 8 dimensions");
  Shape srcStrides(dims.stride, dims.stride + dims.rank);
  StreamScratch scratch;
  const void *source;
  Status status = readable(ctx, input, result, scratch, source);
  if (!status.ok())
    return status;
  return stridedCopy(ctx, result.data, rowMajorStrides(result.shape), 0, source,
                     srcStrides, 0, result.shape, input.dtype, "broadcast_to");
}

Status constant(Context &ctx, const void *bytes, size_t size,
                TensorRef &result) {
  // `size` is the result's bytes, as the loader checked.
  if (size == 0)
    return Status::success();
  // `bytes` is the device copy of the executable's constants.
  TGC_CUDA_CALL(cudaMemcpyAsync(result.data, bytes, size,
                                cudaMemcpyDeviceToDevice, streamOf(ctx)));
  return Status::success();
}

template <typename T> __global__ void fillKernel(T *data, T value, int64_t n) {
  TGC_GRID_LOOP(i, n) { data[i] = value; }
}

Status fill(Context &ctx, double value, TensorRef &result) {
  int64_t n = result.numElements();
  if (n == 0)
    return Status::success();
  // One element converted by the CPU kernel, whose bits every element gets.
  uint64_t bits = 0;
  TensorRef element;
  element.data = &bits;
  element.dtype = result.dtype;
  element.shape = {};
  cpu::Context host;
  Status status = cpu::fill(host, value, element);
  if (!status.ok())
    return status;
  unsigned blocks = blocksFor(n, kThreads);
  cudaStream_t stream = streamOf(ctx);
  switch (dtypeSize(result.dtype)) {
  case 1: {
    uint8_t v;
    std::memcpy(&v, &bits, sizeof(v));
    fillKernel<uint8_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint8_t *>(result.data), v, n);
    break;
  }
  case 2: {
    uint16_t v;
    std::memcpy(&v, &bits, sizeof(v));
    fillKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint16_t *>(result.data), v, n);
    break;
  }
  case 4: {
    uint32_t v;
    std::memcpy(&v, &bits, sizeof(v));
    fillKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint32_t *>(result.data), v, n);
    break;
  }
  default:
    fillKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<uint64_t *>(result.data), bits, n);
    break;
  }
  TGC_CUDA_LAUNCH("fill");
  return Status::success();
}

} // namespace tgc::rt::cuda
