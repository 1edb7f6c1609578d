//===- Reductions.cpp - sums, means, maxima over axes, and sum_to ---------===//
//
// Reductions walk the operand once in row-major order and accumulate into
// the result through per-dimension strides that are 0 along the reduced (or
// broadcast) dimensions, so one loop serves reduce_sum/mean/max with or
// without keep_dims and tg.sum_to, the adjoint of broadcasting. Sums are
// accumulated in f64 and rounded once into the result; maxima propagate
// NaN. reduce_max_grad splits the cotangent evenly among tied maxima, as
// torch.amax's backward does. Reductions run on the thread team over the
// operand's leading dimension: each chunk of it accumulates into its own
// results when the leading dimension is kept, into a partial copy of the
// results that is combined in chunk order when it is reduced, so the sums
// are the same at any thread count. tg.cumsum walks each line along its
// axis in order, float sums in f64 rounded once into each result.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "../Convert.h"
#include "Common.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tgc::rt::cpu {

namespace {
/// How a reduction maps operand elements to result elements.
struct ReductionPlan {
  /// Per operand dimension, the stride of the result element it lands in
  /// (0 along reduced dimensions).
  Shape resultStrides;
  /// The number of operand elements per result element.
  int64_t groupSize = 1;
};
} // namespace

/// Checks a reduction's axes and result shape and plans it.
static Status planReduction(const TensorRef &input, const Shape &axes,
                            bool keepDims, const TensorRef &result,
                            const char *resultName, ReductionPlan &plan) {
  int64_t rank = input.rank();
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return Status::failure("reduction axis " + std::to_string(axis) +
                             " is out of range for rank " +
                             std::to_string(rank));
    if (reduced[*dim])
      return Status::failure("reduction axis " + std::to_string(axis) +
                             " appears twice");
    reduced[*dim] = true;
  }
  Shape expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      expected.push_back(input.shape[d]);
    else if (keepDims)
      expected.push_back(1);
  }
  Shape strides = rowMajorStrides(expected);
  plan.resultStrides.assign(size_t(rank), 0);
  plan.groupSize = 1;
  for (int64_t d = 0, r = 0; d < rank; ++d) {
    if (!reduced[d]) {
      plan.resultStrides[d] = strides[r++];
    } else {
      plan.groupSize *= input.shape[d];
      if (keepDims)
        ++r;
    }
  }
  return Status::success();
}

namespace {
enum class ReduceKind { Sum, Mean, Max };
} // namespace

/// Calls `fn(offsets)` for the elements of `shape` whose leading index lies
/// in [begin, end), in row-major order.
template <typename Fn>
static void walkLeading(const Shape &shape, const std::array<Shape, 2> &strides,
                        int64_t begin, int64_t end, Fn &&fn) {
  Shape sub(shape.begin() + 1, shape.end());
  std::array<Shape, 2> subStrides = {
      Shape(strides[0].begin() + 1, strides[0].end()),
      Shape(strides[1].begin() + 1, strides[1].end())};
  for (int64_t i = begin; i < end; ++i) {
    int64_t in = i * strides[0][0], out = i * strides[1][0];
    forEachOffset<2>(sub, subStrides, [&](const auto &o) {
      fn(std::array<int64_t, 2>{in + o[0], out + o[1]});
    });
  }
}

/// Folds every element `x[o[0]]` of `shape` into `acc[o[1]]` with
/// `combine(acc, value)`; `strides` are the operand's and the results'.
template <typename Combine>
static void accumulate(Shape shape, std::array<Shape, 2> strides,
                       const float *x, std::vector<double> &acc, double init,
                       Combine combine) {
  // Leading dimensions of size 1 give no parallelism: drop them.
  while (shape.size() > 1 && shape[0] == 1) {
    shape.erase(shape.begin());
    for (Shape &s : strides)
      s.erase(s.begin());
  }
  auto add = [&](std::vector<double> &into) {
    return [&](const auto &o) { combine(into[size_t(o[1])], x[o[0]]); };
  };
  int64_t total = product(shape, 0, shape.size());
  if (shape.empty() || total < 2 * kElementGrain) {
    forEachOffset<2>(shape, strides, add(acc));
    return;
  }
  int64_t lead = shape[0];
  int64_t grain = grainFor(total / lead);
  int64_t chunks = (lead + grain - 1) / grain;
  int64_t results = int64_t(acc.size());
  if (strides[1][0] != 0) {
    // Each leading index has results of its own.
    parallelFor(lead, grain, [&](int64_t begin, int64_t end) {
      walkLeading(shape, strides, begin, end, add(acc));
    });
    return;
  }
  if (chunks == 1 || chunks * results > (int64_t(1) << 22)) {
    forEachOffset<2>(shape, strides, add(acc));
    return;
  }
  std::vector<double> parts(size_t(chunks * results), init);
  parallelFor(lead, grain, [&](int64_t begin, int64_t end) {
    double *mine = parts.data() + (begin / grain) * results;
    walkLeading(shape, strides, begin, end, [&](const auto &o) {
      combine(mine[o[1]], x[o[0]]);
    });
  });
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t i = 0; i < results; ++i)
      combine(acc[size_t(i)], parts[size_t(c * results + i)]);
}

static Status reduce(ReduceKind kind, const TensorRef &input, const Shape &axes,
                     bool keepDims, TensorRef &result) {
  ReductionPlan plan;
  TGC_RETURN_IF_ERROR(
      planReduction(input, axes, keepDims, result, "result", plan));
  F32Operand x(input);
  int64_t count = result.numElements();
  std::vector<double> acc(size_t(count),
                          kind == ReduceKind::Max
                              ? -std::numeric_limits<double>::infinity()
                              : 0.0);
  std::array<Shape, 2> strides = {rowMajorStrides(input.shape),
                                  plan.resultStrides};
  if (kind == ReduceKind::Max)
    accumulate(input.shape, strides, x.data(), acc,
               -std::numeric_limits<double>::infinity(),
               [](double &m, double v) {
                 if (v > m || std::isnan(v))
                   m = v;
               });
  else
    accumulate(input.shape, strides, x.data(), acc, 0.0,
               [](double &sum, double v) { sum += v; });
  if (kind == ReduceKind::Mean)
    for (double &v : acc)
      v /= double(plan.groupSize);
  for (int64_t i = 0; i < count; ++i)
    storeF32(result, i, float(acc[i]));
  return Status::success();
}

Status reduceSum(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                 bool keepDims, TensorRef &result) {
  return reduce(ReduceKind::Sum, input, axes, keepDims, result);
}
Status reduceMean(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                  bool keepDims, TensorRef &result) {
  return reduce(ReduceKind::Mean, input, axes, keepDims, result);
}
Status reduceMax(Context &ctx, const TensorRef &input, const std::vector<int64_t> &axes,
                 bool keepDims, TensorRef &result) {
  return reduce(ReduceKind::Max, input, axes, keepDims, result);
}

Status reduceMaxGrad(Context &ctx, const TensorRef &input,
                     const TensorRef &output, const TensorRef &grad,
                     const std::vector<int64_t> &axes, bool keepDims,
                     TensorRef &result) {
  ReductionPlan plan;
  TGC_RETURN_IF_ERROR(
      planReduction(input, axes, keepDims, output, "output", plan));
  F32Operand x(input), m(output), g(grad);
  std::vector<int64_t> ties(size_t(output.numElements()), 0);
  std::array<Shape, 2> strides = {rowMajorStrides(input.shape),
                                  plan.resultStrides};
  forEachOffset<2>(input.shape, strides, [&](const auto &o) {
    if (x[o[0]] == m[o[1]])
      ++ties[o[1]];
  });
  F32Result r(result, {&output, &grad});
  forEachOffset<2>(input.shape, strides, [&](const auto &o) {
    r[o[0]] = x[o[0]] == m[o[1]] ? g[o[1]] / float(ties[o[1]]) : 0.0f;
  });
  r.commit();
  return Status::success();
}

Status sumTo(Context &ctx, const TensorRef &input, TensorRef &result) {
  if (!broadcastsTo(result.shape, input.shape))
    return Status::failure("result shape " + shapeString(result.shape) +
                           " does not broadcast to the operand shape " +
                           shapeString(input.shape));
  F32Operand x(input);
  std::vector<double> acc(size_t(result.numElements()), 0.0);
  accumulate(input.shape,
             {rowMajorStrides(input.shape),
              broadcastStrides(result.shape, input.shape)},
             x.data(), acc, 0.0, [](double &sum, double v) { sum += v; });
  for (size_t i = 0; i < acc.size(); ++i)
    storeF32(result, int64_t(i), float(acc[i]));
  return Status::success();
}

/// Calls `fn(begin, stride)` for every line of `shape` along `dim`: the
/// element offset of its first element and the step between its elements.
template <typename Fn>
static void forEachLine(const Shape &shape, int64_t dim, Fn &&fn) {
  int64_t outer = product(shape, 0, size_t(dim));
  int64_t length = shape[size_t(dim)];
  int64_t inner = product(shape, size_t(dim) + 1, shape.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      fn(o * length * inner + i, inner);
}

template <typename Int>
static void cumsumInts(const Int *x, Int *r, const Shape &shape, int64_t dim,
                       bool reverse) {
  int64_t length = shape[size_t(dim)];
  forEachLine(shape, dim, [&](int64_t begin, int64_t stride) {
    // Unsigned arithmetic wraps as torch's integer cumsum does.
    uint64_t sum = 0;
    for (int64_t k = 0; k < length; ++k) {
      int64_t at = begin + (reverse ? length - 1 - k : k) * stride;
      sum += uint64_t(int64_t(x[at]));
      r[at] = Int(int64_t(sum));
    }
  });
}

Status cumsum(Context &ctx, const TensorRef &input, int64_t axis, bool reverse,
              TensorRef &result) {
  std::optional<int64_t> dim = normalizeAxis(axis, input.rank());
  if (!dim)
    return Status::failure("cumsum axis " + std::to_string(axis) +
                           " is out of range for rank " +
                           std::to_string(input.rank()));
  if (input.numElements() == 0)
    return Status::success();
  // Each element is read before its own result is written; a result that
  // overlaps the operand otherwise reads from a copy.
  std::vector<char> copy;
  const void *source = input.data;
  if (overlaps(input, result) && input.data != result.data) {
    const char *bytes = static_cast<const char *>(input.data);
    copy.assign(bytes, bytes + input.numBytes());
    source = copy.data();
  }
  if (input.dtype == DType::I64) {
    cumsumInts(static_cast<const int64_t *>(source),
               static_cast<int64_t *>(result.data), input.shape, *dim, reverse);
    return Status::success();
  }
  if (input.dtype == DType::I32) {
    cumsumInts(static_cast<const int32_t *>(source),
               static_cast<int32_t *>(result.data), input.shape, *dim, reverse);
    return Status::success();
  }
  TensorRef from = input;
  from.data = const_cast<void *>(source);
  F32Operand x(from);
  int64_t length = input.shape[size_t(*dim)];
  bool f32 = result.dtype == DType::F32;
  forEachLine(input.shape, *dim, [&](int64_t begin, int64_t stride) {
    double sum = 0.0;
    for (int64_t k = 0; k < length; ++k) {
      int64_t at = begin + (reverse ? length - 1 - k : k) * stride;
      sum += double(x[at]);
      // Rounded once into the element type (Convert.h).
      storeF32(result, at, f32 ? float(sum) : roundToOddF32(sum));
    }
  });
  return Status::success();
}

} // namespace tgc::rt::cpu
