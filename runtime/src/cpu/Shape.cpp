//===- Shape.cpp - reshape, transpose, slices, concat, broadcast, constants ===//
//
// The data-movement ops. None of them computes: each is a strided copy of
// whole elements (any element type, bytes moved unchanged) from an operand
// view to a result view, described by per-dimension element strides. A
// result whose buffer overlaps its operand is produced from a copy of the
// operand, so the memory planner may place them anywhere. tg.constant copies
// bytes from the executable; tg.fill converts its f64 value as tg.cast would.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "../Convert.h"
#include "Common.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tgc::rt::cpu {

/// The bytes of `input` to read from: its own, or a copy when `result`
/// overlaps them.
static const void *readableData(const TensorRef &input,
                                const TensorRef &result,
                                std::vector<char> &copy) {
  if (!overlaps(input, result))
    return input.data;
  const char *bytes = static_cast<const char *>(input.data);
  copy.assign(bytes, bytes + input.numBytes());
  return copy.data();
}

/// Checks that a box of shape `box` at `offsets` lies inside `full` and
/// returns the element offset of its first element.
static Status checkBox(const Shape &full, const Shape &box,
                       const Shape &offsets, int64_t &base) {
  if (box.size() != full.size() || offsets.size() != full.size())
    return Status::failure("offsets, slice and full shape must have the same "
                           "rank");
  Shape strides = rowMajorStrides(full);
  base = 0;
  for (size_t d = 0; d < full.size(); ++d) {
    if (offsets[d] < 0 || box[d] > full[d] || offsets[d] > full[d] - box[d])
      return Status::failure("slice of size " + shapeString(box) +
                             " at offsets " + shapeString(offsets) +
                             " does not fit in shape " + shapeString(full));
    base += offsets[d] * strides[d];
  }
  return Status::success();
}

static Status checkPair(const TensorRef &input, const TensorRef &result) {
  return expectSameDType(result, input, "result");
}

Status reshape(Context &ctx, const TensorRef &input, TensorRef &result) {
  TGC_RETURN_IF_ERROR(checkPair(input, result));
  if (input.numElements() != result.numElements())
    return Status::failure("reshape element counts differ: " +
                           std::to_string(input.numElements()) + " and " +
                           std::to_string(result.numElements()));
  if (input.numBytes() > 0 && input.data != result.data)
    std::memmove(result.data, input.data, input.numBytes());
  return Status::success();
}

namespace {

/// `source`'s bytes into `result` on every thread (the two never overlap).
Status copyBytes(const TensorRef &source, TensorRef &result, const char *op) {
  TGC_RETURN_IF_ERROR(checkPair(source, result));
  if (source.shape != result.shape)
    return Status::failure(std::string(op) + " shapes differ");
  if (overlaps(source, result))
    return Status::failure(std::string(op) + " source and result overlap");
  const char *from = static_cast<const char *>(source.data);
  char *to = static_cast<char *>(result.data);
  parallelFor(int64_t(source.numBytes()), int64_t(1) << 20,
              [&](int64_t begin, int64_t end) {
                std::memcpy(to + begin, from + begin, size_t(end - begin));
              });
  return Status::success();
}

} // namespace

Status offload(Context &ctx, const TensorRef &source, TensorRef &result) {
  return copyBytes(source, result, "offload");
}

Status reload(Context &ctx, const TensorRef &source, TensorRef &result) {
  return copyBytes(source, result, "reload");
}

Status transpose(Context &ctx, const TensorRef &input,
                 const std::vector<int64_t> &permutation, TensorRef &result) {
  TGC_RETURN_IF_ERROR(checkPair(input, result));
  int64_t rank = input.rank();
  std::vector<bool> seen(size_t(rank), false);
  bool valid = int64_t(permutation.size()) == rank;
  Shape expected;
  for (size_t i = 0; valid && i < permutation.size(); ++i) {
    int64_t p = permutation[i];
    valid = p >= 0 && p < rank && !seen[p];
    if (valid) {
      seen[p] = true;
      expected.push_back(input.shape[p]);
    }
  }
  if (!valid)
    return Status::failure("permutation " + shapeString(permutation) +
                           " is not a permutation of " + std::to_string(rank) +
                           " dimensions");
  if (result.numElements() == 0)
    return Status::success();
  Shape inStrides = rowMajorStrides(input.shape);
  Shape srcStrides;
  for (int64_t p : permutation)
    srcStrides.push_back(inStrides[p]);
  std::vector<char> copy;
  copyElements(result.data, rowMajorStrides(result.shape),
               readableData(input, result, copy), srcStrides, result.shape,
               dtypeSize(input.dtype));
  return Status::success();
}

Status slice(Context &ctx, const TensorRef &input, const std::vector<int64_t> &offsets,
             TensorRef &result) {
  TGC_RETURN_IF_ERROR(checkPair(input, result));
  int64_t base;
  TGC_RETURN_IF_ERROR(checkBox(input.shape, result.shape, offsets, base));
  if (result.numElements() == 0)
    return Status::success();
  std::vector<char> copy;
  const char *src =
      static_cast<const char *>(readableData(input, result, copy));
  copyElements(result.data, rowMajorStrides(result.shape),
               src + base * int64_t(dtypeSize(input.dtype)),
               rowMajorStrides(input.shape), result.shape,
               dtypeSize(input.dtype));
  return Status::success();
}

Status sliceGrad(Context &ctx, const TensorRef &grad, const std::vector<int64_t> &offsets,
                 TensorRef &result) {
  TGC_RETURN_IF_ERROR(checkPair(grad, result));
  int64_t base;
  TGC_RETURN_IF_ERROR(checkBox(result.shape, grad.shape, offsets, base));
  if (result.numElements() == 0)
    return Status::success();
  std::vector<char> copy;
  const void *src = readableData(grad, result, copy);
  // All-zero bits are +0 in every float format.
  std::memset(result.data, 0, result.numBytes());
  if (grad.numElements() == 0)
    return Status::success();
  char *dst = static_cast<char *>(result.data);
  copyElements(dst + base * int64_t(dtypeSize(grad.dtype)),
               rowMajorStrides(result.shape), src,
               rowMajorStrides(grad.shape), grad.shape,
               dtypeSize(grad.dtype));
  return Status::success();
}

/// Checks that `pieces` are `whole` cut along `axis` (normalized into
/// `dim`).
static Status checkPieces(const std::vector<TensorRef> &pieces,
                          const TensorRef &whole, int64_t axis, int64_t &dim) {
  if (pieces.empty())
    return Status::failure("needs at least one piece");
  std::optional<int64_t> normalized = normalizeAxis(axis, whole.rank());
  if (!normalized)
    return Status::failure("axis " + std::to_string(axis) +
                           " is out of range for rank " +
                           std::to_string(whole.rank()));
  dim = *normalized;
  int64_t total = 0;
  for (const TensorRef &piece : pieces) {
    bool compatible = piece.rank() == whole.rank();
    for (int64_t d = 0; compatible && d < whole.rank(); ++d)
      compatible = d == dim || piece.shape[d] == whole.shape[d];
    if (!compatible)
      return Status::failure("piece shape " + shapeString(piece.shape) +
                             " does not match " + shapeString(whole.shape) +
                             " outside axis " + std::to_string(dim));
    total += piece.shape[dim];
  }
  if (total != whole.shape[dim])
    return Status::failure("pieces add up to " + std::to_string(total) +
                           " along axis " + std::to_string(dim) +
                           ", expected " + std::to_string(whole.shape[dim]));
  return Status::success();
}

Status split(Context &ctx, const TensorRef &input, int64_t axis,
             std::vector<TensorRef> &results) {
  int64_t dim;
  TGC_RETURN_IF_ERROR(checkPieces(results, input, axis, dim));
  std::vector<char> copy;
  const void *data = input.data;
  for (const TensorRef &piece : results)
    if (overlaps(input, piece))
      data = readableData(input, piece, copy);
  size_t elementSize = dtypeSize(input.dtype);
  Shape inStrides = rowMajorStrides(input.shape);
  int64_t start = 0;
  for (TensorRef &piece : results) {
    if (piece.numElements() > 0)
      copyElements(piece.data, rowMajorStrides(piece.shape),
                   static_cast<const char *>(data) +
                       start * inStrides[dim] * int64_t(elementSize),
                   inStrides, piece.shape, elementSize);
    start += piece.shape[dim];
  }
  return Status::success();
}

Status concat(Context &ctx, const std::vector<TensorRef> &inputs, int64_t axis,
              TensorRef &result) {
  int64_t dim;
  TGC_RETURN_IF_ERROR(checkPieces(inputs, result, axis, dim));
  size_t elementSize = dtypeSize(result.dtype);
  Shape outStrides = rowMajorStrides(result.shape);
  // Copy overlapping pieces first: writing the result would clobber them.
  std::vector<std::vector<char>> copies(inputs.size());
  std::vector<const void *> sources(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    sources[i] = readableData(inputs[i], result, copies[i]);
  int64_t start = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorRef &piece = inputs[i];
    if (piece.numElements() > 0)
      copyElements(static_cast<char *>(result.data) +
                       start * outStrides[dim] * int64_t(elementSize),
                   outStrides, sources[i], rowMajorStrides(piece.shape),
                   piece.shape, elementSize);
    start += piece.shape[dim];
  }
  return Status::success();
}

Status broadcastTo(Context &ctx, const TensorRef &input, TensorRef &result) {
  TGC_RETURN_IF_ERROR(checkPair(input, result));
  if (!broadcastsTo(input.shape, result.shape))
    return Status::failure("shape " + shapeString(input.shape) +
                           " does not broadcast to " +
                           shapeString(result.shape));
  if (result.numElements() == 0)
    return Status::success();
  std::vector<char> copy;
  copyElements(result.data, rowMajorStrides(result.shape),
               readableData(input, result, copy),
               broadcastStrides(input.shape, result.shape), result.shape,
               dtypeSize(input.dtype));
  return Status::success();
}

Status constant(Context &ctx, const void *bytes, size_t size,
                TensorRef &result) {
  if (size != result.numBytes())
    return Status::failure("constant has " + std::to_string(size) +
                           " bytes, its type needs " +
                           std::to_string(result.numBytes()));
  if (size > 0)
    std::memmove(result.data, bytes, size);
  return Status::success();
}

Status fill(Context &ctx, double value, TensorRef &result) {
  int64_t count = result.numElements();
  if (count == 0)
    return Status::success();
  switch (result.dtype) {
  case DType::F32:
    storeF32(result, 0, float(value));
    break;
  case DType::F16:
  case DType::BF16:
    storeF32(result, 0, roundToOddF32(value));
    break;
  case DType::I64:
    storeI64(result, 0, truncateToInt<int64_t>(value));
    break;
  case DType::I32:
    storeI64(result, 0, truncateToInt<int32_t>(value));
    break;
  case DType::I8:
    storeI64(result, 0, truncateToInt<int8_t>(value));
    break;
  case DType::U8:
    storeI64(result, 0, truncateToInt<uint8_t>(value));
    break;
  case DType::I1:
    storeI64(result, 0, value != 0.0 ? 1 : 0);
    break;
  }
  size_t elementSize = dtypeSize(result.dtype);
  char *data = static_cast<char *>(result.data);
  for (int64_t i = 1; i < count; ++i)
    std::memcpy(data + i * int64_t(elementSize), data, elementSize);
  return Status::success();
}

} // namespace tgc::rt::cpu
