//===- NN.cpp - softmax, layer norm, embedding, attention, cross-entropy
//---===//
//
// The neural-network ops with row structure, and their gradients. Row
// statistics (maxima in f32, sums in f64) are computed per row and the
// results rounded once into the storage type. Attention is the plain
// per-batch formulation on OpenBLAS: the score matrix S = scale * Q K^T is
// materialized, masked and normalized row by row, and multiplied by V; its
// gradient recomputes the probabilities instead of storing them. Index
// operands (token ids, class labels) are validated before anything is
// written, so a bad index fails the kernel without a partial result.
// tg.gather copies elements by a broadcast index along one axis; its
// gradient sums in f64 in the gradient's order. Rows
// (and attention heads) run on the thread team in fixed chunks, sums over
// rows are added in chunk order (Parallel.h), and the exponentials of
// softmax and attention are the vectorized ones of VecMath.h (the loss
// keeps f64).
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"
#include "tgc/Support/ShapeRules.h"

#include "../Convert.h"
#include "Common.h"
#include "VecMath.h"

#include <optional>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace tgc::rt::cpu {

/// Splits `shape` around `axis` into the sizes before, along and after it.
static void splitAround(const Shape &shape, int64_t axis, int64_t &outer,
                        int64_t &length, int64_t &inner) {
  outer = product(shape, 0, size_t(axis));
  length = shape[axis];
  inner = product(shape, size_t(axis) + 1, shape.size());
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

Status softmax(Context &ctx, const TensorRef &input, int64_t axis, TensorRef &result) {
  // Types, shapes and the axis as the loader checked them.
  std::optional<int64_t> dim = normalizeAxis(axis, input.rank());
  int64_t outer, length, inner;
  splitAround(input.shape, *dim, outer, length, inner);
  F32Operand x(input);
  F32Result r(result);
  parallelFor(outer * inner, grainFor(length), [&](int64_t begin,
                                                   int64_t end) {
    std::vector<float> row(static_cast<size_t>(length));
    for (int64_t line = begin; line < end; ++line) {
      int64_t o = line / inner, in = line % inner;
      int64_t base = o * length * inner + in;
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < length; ++j)
        max = std::max(max, x[base + j * inner]);
      for (int64_t j = 0; j < length; ++j)
        row[j] = x[base + j * inner] - max;
      vec::exp(row.data(), row.data(), length);
      double sum = 0.0;
      for (int64_t j = 0; j < length; ++j)
        sum += row[j];
      float total = float(sum);
      for (int64_t j = 0; j < length; ++j)
        r[base + j * inner] = row[j] / total;
    }
  });
  r.commit();
  return Status::success();
}

Status softmaxGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                   int64_t axis, TensorRef &result) {
  std::optional<int64_t> dim = normalizeAxis(axis, output.rank()); // checked
  int64_t outer, length, inner;
  splitAround(output.shape, *dim, outer, length, inner);
  F32Operand y(output), g(grad);
  F32Result r(result);
  parallelFor(outer * inner, grainFor(length), [&](int64_t begin,
                                                   int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      int64_t o = line / inner, in = line % inner;
      int64_t base = o * length * inner + in;
      double dot = 0.0;
      for (int64_t j = 0; j < length; ++j)
        dot += double(g[base + j * inner]) * y[base + j * inner];
      float total = float(dot);
      for (int64_t j = 0; j < length; ++j) {
        int64_t i = base + j * inner;
        r[i] = y[i] * (g[i] - total);
      }
    }
  });
  r.commit();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

/// Mean and 1 / sqrt(biased variance + epsilon) of a row, in f32 from f64
/// sums (two passes, so no cancellation from E[x^2] - E[x]^2).
static void rowStatistics(const float *row, int64_t length, double epsilon,
                          float &mean, float &rstd) {
  double sum = 0.0;
  for (int64_t j = 0; j < length; ++j)
    sum += row[j];
  double mu = sum / double(length);
  double squares = 0.0;
  for (int64_t j = 0; j < length; ++j) {
    double centered = row[j] - mu;
    squares += centered * centered;
  }
  mean = float(mu);
  rstd = float(1.0 / std::sqrt(squares / double(length) + epsilon));
}

Status layerNorm(Context &ctx, const TensorRef &input, const TensorRef &weight,
                 const TensorRef &bias, double epsilon, TensorRef &result,
                 const TensorRef *addend, TensorRef *sum) {
  // Operands as the loader checked them: a sum exactly with an addend, of
  // the input's shape; `sum` = `input` + `addend` by the add kernel, whose
  // result the norm then reads as its input.
  if (addend) {
    TGC_RETURN_IF_ERROR(add(ctx, input, *addend, *sum));
    return layerNorm(ctx, *sum, weight, bias, epsilon, result);
  }
  int64_t length = input.shape.back();
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  F32Operand x(input), w(weight), b(bias);
  F32Result r(result);
  parallelFor(rows, grainFor(length), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float *xs = x.data() + row * length;
      float *out = r.data() + row * length;
      float mean, rstd;
      rowStatistics(xs, length, epsilon, mean, rstd);
      for (int64_t j = 0; j < length; ++j)
        out[j] = (xs[j] - mean) * rstd * w[j] + b[j];
    }
  });
  r.commit();
  return Status::success();
}

static Status layerNormGradF32(Context &ctx, const TensorRef &input,
                               const TensorRef &weight, const TensorRef &grad,
                               double epsilon, TensorRef &inputGrad,
                               TensorRef &weightGrad, TensorRef &biasGrad,
                               const TensorRef *addend) {
  // Operands and results as the loader checked them; a result not present
  // is not computed (at least one is).
  bool wantInput = inputGrad.present(), wantWeight = weightGrad.present(),
       wantBias = biasGrad.present();
  int64_t length = input.shape.back();
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  F32Operand x(input), w(weight), g(grad);
  std::optional<F32Operand> a;
  if (addend) // the input's type and shape, as the loader checked
    a.emplace(*addend);
  std::optional<F32Result> dx;
  if (wantInput)
    dx.emplace(inputGrad, std::initializer_list<const TensorRef *>{
                              &weight, &weightGrad, &biasGrad,
                              addend ? addend : &weight});
  // The weight and bias gradients sum over rows: each chunk of rows sums
  // its own, and the chunks' sums are added in order afterwards.
  int64_t grain = grainFor(length);
  int64_t chunks = rows == 0 ? 0 : (rows + grain - 1) / grain;
  std::vector<double> dwParts(size_t(chunks * length), 0.0),
      dbParts(size_t(chunks * length), 0.0);
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    double *dw = dwParts.data() + (begin / grain) * length;
    double *db = dbParts.data() + (begin / grain) * length;
    for (int64_t row = begin; row < end; ++row) {
      const float *xs = x.data() + row * length;
      const float *gs = g.data() + row * length;
      float mean, rstd;
      rowStatistics(xs, length, epsilon, mean, rstd);
      double sumG = 0.0, sumGX = 0.0;
      for (int64_t j = 0; j < length; ++j) {
        float xhat = (xs[j] - mean) * rstd;
        float gw = gs[j] * w[j];
        sumG += gw;
        sumGX += double(gw) * xhat;
        dw[j] += double(gs[j]) * xhat;
        db[j] += gs[j];
      }
      if (!wantInput)
        continue;
      float *out = dx->data() + row * length;
      float meanG = float(sumG / double(length));
      float meanGX = float(sumGX / double(length));
      // Reads gs[j] before writing out[j]: input_grad may reuse grad's
      // buffer.
      for (int64_t j = 0; j < length; ++j) {
        float xhat = (xs[j] - mean) * rstd;
        out[j] = rstd * (gs[j] * w[j] - meanG - xhat * meanGX);
      }
      // The addend joins the stored gradient, as a tg.add after it would.
      if (a)
        for (int64_t j = 0; j < length; ++j)
          out[j] = roundedTo(inputGrad.dtype, out[j]) +
                   a->data()[row * length + j];
    }
  });
  std::vector<double> dw(size_t(length), 0.0), db(size_t(length), 0.0);
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < length; ++j) {
      dw[j] += dwParts[c * length + j];
      db[j] += dbParts[c * length + j];
    }
  if (dx)
    dx->commit();
  for (int64_t j = 0; j < length; ++j) {
    if (wantWeight)
      storeF32(weightGrad, j, float(dw[j]));
    if (wantBias)
      storeF32(biasGrad, j, float(db[j]));
  }
  return Status::success();
}

Status layerNormGrad(Context &ctx, const TensorRef &input, const TensorRef &weight,
                     const TensorRef &grad, double epsilon,
                     TensorRef &inputGrad, TensorRef &weightGrad,
                     TensorRef &biasGrad, const TensorRef *addend,
                     TensorRef *rounded) {
  // The optional 16-bit copy of an f32 input gradient (as the loader
  // checked); null when there is none.
  if (rounded && !rounded->present())
    rounded = nullptr;
  TGC_RETURN_IF_ERROR(layerNormGradF32(ctx, input, weight, grad, epsilon,
                                       inputGrad, weightGrad, biasGrad,
                                       addend));
  // The 16-bit copy, by the cast kernel, of the stored gradient.
  return rounded ? cast(ctx, inputGrad, *rounded) : Status::success();
}

//===----------------------------------------------------------------------===//
// RMS norm
//===----------------------------------------------------------------------===//

/// 1 / sqrt(mean(x^2) + epsilon) of one row, accumulated in double and
/// rounded to f32 as the f32 statistic of Hugging Face's RMSNorm.
static float rmsStatistic(const float *row, int64_t length, double epsilon) {
  double squares = 0.0;
  for (int64_t j = 0; j < length; ++j)
    squares += double(row[j]) * row[j];
  return float(1.0 / std::sqrt(squares / double(length) + epsilon));
}

Status rmsNorm(Context &ctx, const TensorRef &input, const TensorRef &weight,
               double epsilon, TensorRef &result, const TensorRef *addend,
               TensorRef *sum) {
  // As layerNorm.
  if (addend) {
    TGC_RETURN_IF_ERROR(add(ctx, input, *addend, *sum));
    return rmsNorm(ctx, *sum, weight, epsilon, result);
  }
  int64_t length = input.shape.back();
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  F32Operand x(input), w(weight);
  F32Result r(result, {&weight});
  parallelFor(rows, grainFor(length), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float *xs = x.data() + row * length;
      float *out = r.data() + row * length;
      float rstd = rmsStatistic(xs, length, epsilon);
      for (int64_t j = 0; j < length; ++j)
        out[j] = xs[j] * rstd * w[j];
    }
  });
  r.commit();
  return Status::success();
}

static Status rmsNormGradF32(Context &ctx, const TensorRef &input,
                             const TensorRef &weight, const TensorRef &grad,
                             double epsilon, TensorRef &inputGrad,
                             TensorRef &weightGrad, const TensorRef *addend) {
  // As layerNormGradF32.
  bool wantInput = inputGrad.present(), wantWeight = weightGrad.present();
  int64_t length = input.shape.back();
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  F32Operand x(input), w(weight), g(grad);
  std::optional<F32Operand> a;
  if (addend) // the input's type and shape, as the loader checked
    a.emplace(*addend);
  std::optional<F32Result> dx;
  if (wantInput)
    dx.emplace(inputGrad, std::initializer_list<const TensorRef *>{
                              &weight, &weightGrad, addend ? addend : &weight});
  // The weight gradient sums over rows: each chunk of rows sums its own,
  // and the chunks' sums are added in order afterwards.
  int64_t grain = grainFor(length);
  int64_t chunks = rows == 0 ? 0 : (rows + grain - 1) / grain;
  std::vector<double> dwParts(size_t(chunks * length), 0.0);
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    double *dw = dwParts.data() + (begin / grain) * length;
    for (int64_t row = begin; row < end; ++row) {
      const float *xs = x.data() + row * length;
      const float *gs = g.data() + row * length;
      float rstd = rmsStatistic(xs, length, epsilon);
      double sumGX = 0.0;
      for (int64_t j = 0; j < length; ++j) {
        float xhat = xs[j] * rstd;
        sumGX += double(gs[j] * w[j]) * xhat;
        dw[j] += double(gs[j]) * xhat;
      }
      if (!wantInput)
        continue;
      float *out = dx->data() + row * length;
      float meanGX = float(sumGX / double(length));
      // Reads gs[j] before writing out[j]: input_grad may reuse grad's
      // buffer.
      for (int64_t j = 0; j < length; ++j) {
        float xhat = xs[j] * rstd;
        out[j] = rstd * (gs[j] * w[j] - xhat * meanGX);
      }
      if (a)
        for (int64_t j = 0; j < length; ++j)
          out[j] = roundedTo(inputGrad.dtype, out[j]) +
                   a->data()[row * length + j];
    }
  });
  if (dx)
    dx->commit();
  if (wantWeight) {
    std::vector<double> dw(size_t(length), 0.0);
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t j = 0; j < length; ++j)
        dw[j] += dwParts[c * length + j];
    for (int64_t j = 0; j < length; ++j)
      storeF32(weightGrad, j, float(dw[j]));
  }
  return Status::success();
}

Status rmsNormGrad(Context &ctx, const TensorRef &input, const TensorRef &weight,
                   const TensorRef &grad, double epsilon,
                   TensorRef &inputGrad, TensorRef &weightGrad,
                   const TensorRef *addend, TensorRef *rounded) {
  // The optional 16-bit copy of an f32 input gradient (as the loader
  // checked); null when there is none.
  if (rounded && !rounded->present())
    rounded = nullptr;
  TGC_RETURN_IF_ERROR(rmsNormGradF32(ctx, input, weight, grad, epsilon,
                                     inputGrad, weightGrad, addend));
  return rounded ? cast(ctx, inputGrad, *rounded) : Status::success();
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

Status rope(Context &ctx, const TensorRef &input, const TensorRef &invFreq,
            bool inverse, TensorRef &result, bool bshd,
            const TensorRef *positionIds) {
  // [..., T, D] with D even ([B, T, H, D] with bshd) and an f32 inv_freq,
  // positions [B, T], as the loader checked.
  int64_t length = input.shape.back(), half = length / 2;
  // Rows of D elements: index (row / heads) % positions, where heads
  // is H with bshd and 1 otherwise; its position that index, or with
  // positionIds the id of its batch row b and index.
  int64_t heads = bshd ? input.shape[2] : 1;
  int64_t positions = input.shape[input.rank() - (bshd ? 3 : 2)];
  int64_t rows = length == 0 ? 0 : input.numElements() / length;
  int64_t rowsPerBatch = input.shape.empty() || input.shape[0] == 0
                             ? 1
                             : std::max<int64_t>(rows / input.shape[0], 1);
  int64_t table = positions;
  if (positionIds) {
    table = 1;
    for (int64_t i = 0, n = positionIds->numElements(); i < n; ++i) {
      int64_t p = loadI64(*positionIds, i);
      if (p < 0)
        return Status::failure("rope position " + std::to_string(p) + " at " +
                               std::to_string(i) + " is negative");
      table = std::max(table, p + 1);
    }
  }
  auto positionOf = [&](int64_t row) {
    int64_t t = (row / heads) % positions;
    return positionIds
               ? loadI64(*positionIds, row / rowsPerBatch * positions + t)
               : t;
  };
  // The angles of each position, as Hugging Face computes them: the f32
  // product of the position and the frequency, its f32 cosine and sine.
  const float *freq = static_cast<const float *>(invFreq.data);
  std::vector<float> cosines(size_t(table * half)), sines(size_t(table * half));
  for (int64_t t = 0; t < table; ++t)
    for (int64_t i = 0; i < half; ++i) {
      float angle = float(t) * freq[i];
      cosines[t * half + i] = std::cos(angle);
      sines[t * half + i] = inverse ? -std::sin(angle) : std::sin(angle);
    }
  F32Operand x(input);
  F32Result r(result);
  parallelFor(rows, grainFor(length), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t t = positionOf(row);
      const float *xs = x.data() + row * length;
      const float *c = cosines.data() + t * half;
      const float *s = sines.data() + t * half;
      float *out = r.data() + row * length;
      // Both elements of a pair are read before either is written: the
      // result may be the input's buffer.
      for (int64_t i = 0; i < half; ++i) {
        float a = xs[i], b = xs[i + half];
        out[i] = a * c[i] - b * s[i];
        out[i + half] = b * c[i] + a * s[i];
      }
    }
  });
  r.commit();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// Checks that every element of `indices` lies in [0, limit).
static Status checkIndices(const TensorRef &indices, int64_t limit,
                           const char *what) {
  int64_t count = indices.numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = loadI64(indices, i);
    if (index < 0 || index >= limit)
      return Status::failure(std::string(what) + " " + std::to_string(index) +
                             " at position " + std::to_string(i) +
                             " is out of range [0, " + std::to_string(limit) +
                             ")");
  }
  return Status::success();
}

Status embedding(Context &ctx, const TensorRef &table, const TensorRef &indices,
                 TensorRef &result) {
  // Types and shapes as the loader checked them; the indices are data.
  int64_t vocab = table.shape[0], width = table.shape[1];
  TGC_RETURN_IF_ERROR(checkIndices(indices, vocab, "embedding index"));
  int64_t count = indices.numElements();
  if (table.dtype != result.dtype) {
    // A 16-bit table's rows widened to f32 (exact).
    for (int64_t i = 0; i < count; ++i) {
      int64_t row = loadI64(indices, i);
      for (int64_t j = 0; j < width; ++j)
        storeF32(result, i * width + j, loadF32(table, row * width + j));
    }
    return Status::success();
  }
  size_t rowBytes = size_t(width) * dtypeSize(table.dtype);
  const char *src = static_cast<const char *>(table.data);
  char *dst = static_cast<char *>(result.data);
  for (int64_t i = 0; i < count; ++i)
    std::memmove(dst + i * rowBytes, src + loadI64(indices, i) * rowBytes,
                 rowBytes);
  return Status::success();
}

Status embeddingGrad(Context &ctx, const TensorRef &indices,
                     const TensorRef &grad, const TensorRef *addend,
                     int64_t paddingIdx, TensorRef &result) {
  // Types and shapes (and the addend's) as the loader checked them; the
  // indices are data.
  int64_t vocab = result.shape[0], width = result.shape[1];
  TGC_RETURN_IF_ERROR(checkIndices(indices, vocab, "embedding index"));
  F32Operand g(grad);
  F32Result r(
      result,
      addend ? std::initializer_list<const TensorRef *>{&grad, &indices, addend}
             : std::initializer_list<const TensorRef *>{&grad, &indices});
  float *table = r.data();
  parallelFor(vocab, grainFor(width), [&](int64_t begin, int64_t end) {
    std::fill(table + begin * width, table + end * width, 0.0f);
  });
  // Rows repeat, so threads split the columns: each adds every index's
  // row in index order over its own columns.
  int64_t count = indices.numElements();
  int64_t columnGrain = std::max<int64_t>(16, grainFor(count));
  parallelFor(width, columnGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t index = loadI64(indices, i);
      if (index == paddingIdx)
        continue;
      float *row = table + index * width;
      const float *gs = g.data() + i * width;
      for (int64_t j = begin; j < end; ++j)
        row[j] += gs[j];
    }
  });
  if (addend) {
    // Added last, as the tg.add this replaces added it: the same bits.
    F32Operand a(*addend);
    const float *as = a.data();
    parallelFor(vocab * width, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        table[i] = as[i] + table[i];
    });
  }
  r.commit();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

namespace {
/// How tg.gather walks its result (or tg.gather_grad its gradient): per
/// element, the offsets of the result, of the broadcast index and of the
/// operand's element at index 0 along the axis, which the index then
/// moves `axisStride` at a time.
struct GatherPlan {
  Shape shape;
  std::array<Shape, 3> strides;
  int64_t axisStride = 0, limit = 0;
};
} // namespace

/// Checks the indices of a gather of `operand` into `gathered` (their
/// shapes and types are the loader's) and plans its walk.
static Status planGather(const TensorRef &operand, const TensorRef &index,
                         const TensorRef &gathered, int64_t axis,
                         GatherPlan &plan) {
  int64_t dim = axis < 0 ? axis + operand.rank() : axis;
  plan.limit = operand.shape[size_t(dim)];
  TGC_RETURN_IF_ERROR(checkIndices(index, plan.limit, "gather index"));
  plan.shape = gathered.shape;
  Shape operandStrides = rowMajorStrides(operand.shape);
  plan.axisStride = operandStrides[size_t(dim)];
  operandStrides[size_t(dim)] = 0;
  plan.strides = {rowMajorStrides(gathered.shape),
                  broadcastStrides(index.shape, gathered.shape),
                  operandStrides};
  return Status::success();
}

Status gather(Context &ctx, const TensorRef &input, const TensorRef &index,
              int64_t axis, TensorRef &result) {
  GatherPlan plan;
  TGC_RETURN_IF_ERROR(planGather(input, index, result, axis, plan));
  if (result.numElements() == 0)
    return Status::success();
  // Elements are copied as bytes; a result that overlaps the operand or
  // the index is written from a copy.
  size_t width = dtypeSize(input.dtype);
  std::vector<char> scratch;
  bool direct = !overlaps(result, input) && !overlaps(result, index);
  if (!direct)
    scratch.resize(result.numBytes());
  char *dst = direct ? static_cast<char *>(result.data) : scratch.data();
  const char *src = static_cast<const char *>(input.data);
  forEachOffset<3>(plan.shape, plan.strides, [&](const auto &o) {
    int64_t at = o[2] + loadI64(index, o[1]) * plan.axisStride;
    std::memcpy(dst + o[0] * width, src + at * width, width);
  });
  if (!direct)
    std::memcpy(result.data, scratch.data(), scratch.size());
  return Status::success();
}

Status gatherGrad(Context &ctx, const TensorRef &grad, const TensorRef &index,
                  int64_t axis, TensorRef &result) {
  GatherPlan plan;
  TGC_RETURN_IF_ERROR(planGather(result, index, grad, axis, plan));
  F32Operand g(grad);
  // Summed in f64 in the gradient's row-major order, rounded once.
  std::vector<double> sums(size_t(result.numElements()), 0.0);
  forEachOffset<3>(plan.shape, plan.strides, [&](const auto &o) {
    sums[size_t(o[2] + loadI64(index, o[1]) * plan.axisStride)] += g[o[0]];
  });
  bool f32 = result.dtype == DType::F32;
  for (size_t i = 0; i < sums.size(); ++i)
    storeF32(result, int64_t(i), f32 ? float(sums[i]) : roundToOddF32(sums[i]));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Mixture-of-experts routing
//===----------------------------------------------------------------------===//

Status topK(Context &ctx, const TensorRef &input, int64_t k,
            TensorRef &result) {
  // Shapes as the loader checked them (shapes::topK).
  int64_t width = input.shape.back(), rows = input.numElements() / width;
  F32Operand x(input);
  std::vector<int64_t> picked(static_cast<size_t>(rows * k));
  parallelFor(rows, 64, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order(static_cast<size_t>(width));
    for (int64_t row = begin; row < end; ++row) {
      const float *v = x.data() + row * width;
      std::iota(order.begin(), order.end(), int64_t(0));
      // Largest first, NaN above every number, ties in index order.
      auto above = [&](int64_t a, int64_t b) {
        bool nanA = std::isnan(v[a]), nanB = std::isnan(v[b]);
        if (nanA != nanB)
          return nanA;
        if (!nanA && v[a] != v[b])
          return v[a] > v[b];
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), above);
      std::copy(order.begin(), order.begin() + k, picked.begin() + row * k);
    }
  });
  for (int64_t i = 0; i < rows * k; ++i)
    storeI64(result, i, picked[size_t(i)]);
  return Status::success();
}

Status moeRoute(Context &ctx, const TensorRef &choices, TensorRef &rows,
                TensorRef &positions, TensorRef &offsets) {
  // Shapes as the loader checked them (shapes::moeRoute); the choices are
  // data.
  int64_t k = choices.shape[1], total = choices.numElements();
  int64_t experts = offsets.shape[0] - 1;
  // A counting sort, stable: choices in row-major order within an expert.
  std::vector<int64_t> expert(static_cast<size_t>(total));
  std::vector<int64_t> start(static_cast<size_t>(experts + 1), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t e = loadI64(choices, i);
    if (e < 0 || e >= experts)
      return Status::failure("moe_route: expert " + std::to_string(e) +
                             " of token " + std::to_string(i / k) +
                             " is outside [0, " + std::to_string(experts) +
                             ")");
    expert[size_t(i)] = e;
    ++start[size_t(e + 1)];
  }
  for (int64_t e = 0; e < experts; ++e)
    start[size_t(e + 1)] += start[size_t(e)];
  for (int64_t e = 0; e <= experts; ++e)
    storeI64(offsets, e, start[size_t(e)]);
  for (int64_t i = 0; i < total; ++i) {
    int64_t row = start[size_t(expert[size_t(i)])]++;
    storeI64(rows, row, i / k);
    storeI64(positions, i, row);
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
/// Sizes of an attention problem: `batch` independent key/value heads of
/// [group * tq, d] x [tk, d] x [tk, dv]. With grouped-query attention the
/// `group` query heads that share a key/value head are consecutive, so they
/// form one [group * tq, d] matrix (row i: query head i / tq of the group,
/// position i % tq) against their shared keys: no key or value is repeated,
/// and their gradients sum over the group in the GEMMs themselves.
struct AttentionShape {
  int64_t batch, tq, tk, d, dv;
  int64_t group = 1;
  float scale;
  /// A positive soft-cap of the scaled scores, or 0.
  float softcap = 0.0f;
  /// Query rows per key/value head.
  int64_t rows() const { return group * tq; }
  /// Heads per row of the key mask (the batch dimensions it omits), or 0
  /// without a mask.
  int64_t maskGroup = 0;
};

/// Which keys each row of a head may see: the causal limit and the key
/// mask. Row `i` of head `b` sees key `j` when `visible(b, i, j)`.
struct KeyVisibility {
  const AttentionShape &sizes;
  const TensorRef *mask;
  bool causal;
  /// Keys this many positions back or more are hidden (0: none).
  int64_t window = 0;
  /// The mask holds segment ids: a key is seen from its own segment only.
  bool segments = false;

  /// The keys row `i` (of a key/value head's rows) may look at are a
  /// subset of [0, limit(i)).
  int64_t limit(int64_t i) const {
    return causal ? std::min(i % sizes.tq + 1, sizes.tk) : sizes.tk;
  }
  /// Whether some keys below limit(i) are hidden (visible() must be asked).
  bool partial() const { return mask || window > 0; }
  /// Whether row `i` of key/value head `b` may see key `j` (the mask is
  /// per query head).
  bool visible(int64_t b, int64_t i, int64_t j) const {
    if (window > 0 && j <= i % sizes.tq - window)
      return false;
    if (!mask)
      return true;
    int64_t queryHead = b * sizes.group + i / sizes.tq;
    int64_t row = (queryHead / sizes.maskGroup) * sizes.tk;
    int64_t id = loadI64(*mask, row + j);
    return id != 0 && (!segments || id == loadI64(*mask, row + i % sizes.tq));
  }
};
} // namespace

/// Records how many heads share each row of the optional key mask
/// [P..., Tk] (P... a prefix of the query's batch dimensions, as the loader
/// checked).
static Status checkKeyMask(const TensorRef *mask, const TensorRef &query,
                           AttentionShape &sizes) {
  if (!mask)
    return Status::success();
  int64_t rows = product(mask->shape, 0, mask->shape.size() - 1);
  sizes.maskGroup = sizes.batch * sizes.group / std::max<int64_t>(rows, 1);
  return Status::success();
}

static Status checkAttention(const TensorRef &query, const TensorRef &key,
                             const TensorRef &value, const TensorRef *mask,
                             bool causal, int64_t window,
                             std::optional<double> scale,
                             AttentionShape &sizes) {
  // Ranks, the head groups, equal lengths when causal, the window and the
  // scale as the loader checked them.
  int64_t rank = query.rank();
  Shape batch(query.shape.begin(), query.shape.end() - 2);
  sizes.tq = query.shape[rank - 2];
  sizes.d = query.shape[rank - 1];
  sizes.tk = key.shape[rank - 2];
  sizes.dv = value.shape[rank - 1];
  // Grouped-query attention: fewer key/value heads (the last batch
  // dimension) than query heads, each shared by a group of them.
  Shape keyBatch(key.shape.begin(), key.shape.end() - 2);
  sizes.group = shapes::attentionGroup(batch, keyBatch);
  sizes.batch = product(keyBatch, 0, keyBatch.size());
  double s = scale ? *scale : 1.0 / std::sqrt(double(sizes.d));
  sizes.scale = float(s);
  return checkKeyMask(mask, query, sizes);
}

/// The attention probabilities of key/value head `b`: P = softmax(scale *
/// Q K^T + mask) as a [rows, tk] matrix, masked entries exactly 0 (a row
/// that sees no key is all 0); `lse` (null: not wanted) receives each
/// row's log-sum-exp of the scaled, masked scores (-inf for such a row).
static void attentionProbabilities(const AttentionShape &sizes,
                                   const KeyVisibility &keys, int64_t b,
                                   const float *q, const float *k, float *p,
                                   float *lse = nullptr,
                                   float *capSlope = nullptr) {
  int64_t rows = sizes.rows(), tk = sizes.tk;
  gemmF32(false, true, rows, tk, sizes.d, sizes.scale, q, sizes.d, k, sizes.d,
          0.0f, p, tk);
  const float minusInf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    float *row = p + i * tk;
    // The soft-cap c * tanh(s / c), and its slope 1 - tanh^2 for the
    // gradient (`capSlope`, null: not wanted), before the mask.
    if (sizes.softcap > 0.0f)
      for (int64_t j = 0; j < tk; ++j) {
        float t = std::tanh(row[j] / sizes.softcap);
        row[j] = sizes.softcap * t;
        if (capSlope)
          capSlope[i * tk + j] = 1.0f - t * t;
      }
    int64_t limit = keys.limit(i);
    if (keys.partial())
      for (int64_t j = 0; j < limit; ++j)
        if (!keys.visible(b, i, j))
          row[j] = minusInf;
    float max = minusInf;
    for (int64_t j = 0; j < limit; ++j)
      max = std::max(max, row[j]);
    std::fill(row + limit, row + tk, 0.0f);
    if (max == minusInf) {
      std::fill(row, row + limit, 0.0f);
      if (lse)
        lse[i] = minusInf;
      continue;
    }
    for (int64_t j = 0; j < limit; ++j)
      row[j] -= max;
    vec::exp(row, row, limit);
    double sum = 0.0;
    for (int64_t j = 0; j < limit; ++j)
      sum += row[j];
    float total = float(sum);
    for (int64_t j = 0; j < limit; ++j)
      row[j] /= total;
    if (lse)
      lse[i] = max + std::log(total);
  }
}

/// With segment ids whose examples each lie in one run of a row (ids
/// ascending along it, 0 only as padding), the runs [begin, end) of
/// nonzero ids of mask row `row`: the attention is block-diagonal, and
/// each block is computed alone, as the attention of that example (what
/// masking the whole row computes, without the other examples' scores).
/// Empty when the ids are not so (the whole row is then computed and
/// masked).
using SegmentRuns = std::vector<std::pair<int64_t, int64_t>>;
static bool segmentRuns(const KeyVisibility &keys, int64_t row,
                        SegmentRuns &runs) {
  runs.clear();
  int64_t tk = keys.sizes.tk, last = 0;
  for (int64_t j = 0; j < tk;) {
    int64_t id = loadI64(*keys.mask, row * tk + j), end = j + 1;
    while (end < tk && loadI64(*keys.mask, row * tk + end) == id)
      ++end;
    if (id != 0) {
      if (id <= last)
        return false;
      runs.push_back({j, end});
      last = id;
    }
    j = end;
  }
  return true;
}

/// The runs of every query head of key/value head `b` (segmentRuns), or
/// false when some row's ids are not in runs.
static bool headRuns(const KeyVisibility &keys, int64_t b,
                     std::vector<SegmentRuns> &runs) {
  const AttentionShape &sizes = keys.sizes;
  runs.resize(size_t(sizes.group));
  for (int64_t g = 0; g < sizes.group; ++g)
    if (!segmentRuns(keys, (b * sizes.group + g) / sizes.maskGroup,
                     runs[size_t(g)]))
      return false;
  return true;
}

/// The sizes of one example's block of a segmented attention: n queries
/// of one query head against its n keys, no mask.
static AttentionShape blockShape(const AttentionShape &sizes, int64_t n) {
  AttentionShape block = sizes;
  block.batch = 1;
  block.group = 1;
  block.tq = block.tk = n;
  block.maskGroup = 0;
  return block;
}

/// Attention over [B..., T, D] heads.
static Status headMajorAttention(Context &ctx, const TensorRef &query,
                                 const TensorRef &key, const TensorRef &value,
                                 const TensorRef *keyMask, bool causal,
                                 int64_t window, std::optional<double> scale,
                                 TensorRef &result, TensorRef *lse,
                                 double softcap, bool segments) {
  AttentionShape sizes;
  TGC_RETURN_IF_ERROR(
      checkAttention(query, key, value, keyMask, causal, window, scale, sizes));
  sizes.softcap = float(softcap);
  KeyVisibility keys{sizes, keyMask, causal, window, segments};
  F32Operand q(query), k(key), v(value);
  F32Result out(result, {&query, &key, &value});
  float *rowLse = lse ? static_cast<float *>(lse->data) : nullptr;
  // One head per iteration on the thread team (its GEMMs then run on the
  // calling thread).
  int64_t rows = sizes.rows();
  // Segment ids in runs: each example's block alone, per query head of
  // the group; padding rows (id 0) get 0 and a log-sum-exp of -inf, as
  // the masked row does.
  auto blocks = [&](int64_t b, std::vector<SegmentRuns> &runs, float *p) {
    if (!headRuns(keys, b, runs))
      return false;
    int64_t tq = sizes.tq, tk = sizes.tk, d = sizes.d, dv = sizes.dv;
    for (int64_t g = 0; g < sizes.group; ++g) {
      int64_t row0 = b * rows + g * tq;
      std::fill(out.data() + row0 * dv, out.data() + (row0 + tq) * dv, 0.0f);
      if (rowLse)
        std::fill(rowLse + row0, rowLse + row0 + tq,
                  -std::numeric_limits<float>::infinity());
      for (auto [s, e] : runs[size_t(g)]) {
        int64_t n = e - s;
        AttentionShape block = blockShape(sizes, n);
        KeyVisibility visible{block, nullptr, causal, window};
        attentionProbabilities(block, visible, 0, q.data() + (row0 + s) * d,
                               k.data() + (b * tk + s) * d, p,
                               rowLse ? rowLse + row0 + s : nullptr);
        gemmF32(false, false, n, dv, n, 1.0f, p, n,
                v.data() + (b * tk + s) * dv, dv, 0.0f,
                out.data() + (row0 + s) * dv, dv);
      }
    }
    return true;
  };
  parallelFor(sizes.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(size_t(rows * sizes.tk));
    std::vector<SegmentRuns> runs;
    for (int64_t b = begin; b < end; ++b) {
      if (segments && blocks(b, runs, p.data()))
        continue;
      attentionProbabilities(sizes, keys, b, q.data() + b * rows * sizes.d,
                             k.data() + b * sizes.tk * sizes.d, p.data(),
                             rowLse ? rowLse + b * rows : nullptr);
      gemmF32(false, false, rows, sizes.dv, sizes.tk, 1.0f, p.data(),
              sizes.tk, v.data() + b * sizes.tk * sizes.dv, sizes.dv, 0.0f,
              out.data() + b * rows * sizes.dv, sizes.dv);
    }
  });
  out.commit();
  return Status::success();
}

/// dS = P * (dP - rowsum(grad * output)) in place of dP ([rows, cols]),
/// times the soft-cap's slope where there is one (null: none).
static void scoreGradient(int64_t rows, int64_t cols, int64_t dv,
                          const float *grad, const float *output,
                          const float *p, const float *slope, float *dp) {
  for (int64_t i = 0; i < rows; ++i) {
    double dot = 0.0;
    for (int64_t c = 0; c < dv; ++c)
      dot += double(grad[i * dv + c]) * output[i * dv + c];
    float rowDot = float(dot);
    for (int64_t j = 0; j < cols; ++j)
      dp[i * cols + j] = p[i * cols + j] * (dp[i * cols + j] - rowDot);
    if (slope)
      for (int64_t j = 0; j < cols; ++j)
        dp[i * cols + j] *= slope[i * cols + j];
  }
}

static Status headMajorAttentionGrad(
    Context &ctx, const TensorRef &query, const TensorRef &key,
    const TensorRef &value, const TensorRef &output, const TensorRef &grad,
    const TensorRef *keyMask, bool causal, int64_t window,
    std::optional<double> scale, TensorRef &queryGrad, TensorRef &keyGrad,
    TensorRef &valueGrad, const TensorRef *lse, double softcap, bool segments) {
  // The probabilities are recomputed whole here; the forward pass's
  // log-sum-exp is not needed. Results as the loader checked them (at
  // least one computed).
  bool wantQuery = queryGrad.present(), wantKey = keyGrad.present(),
       wantValue = valueGrad.present();
  AttentionShape sizes;
  TGC_RETURN_IF_ERROR(
      checkAttention(query, key, value, keyMask, causal, window, scale, sizes));
  sizes.softcap = float(softcap);
  KeyVisibility keys{sizes, keyMask, causal, window, segments};
  F32Operand q(query), k(key), v(value), o(output), dO(grad);
  std::initializer_list<const TensorRef *> operands = {&query, &key, &value,
                                                       &output, &grad};
  std::optional<F32Result> dq, dk, dv;
  if (wantQuery)
    dq.emplace(queryGrad, operands);
  if (wantKey)
    dk.emplace(keyGrad, operands);
  if (wantValue)
    dv.emplace(valueGrad, operands);
  // Per key/value head, its group's query rows as one matrix.
  int64_t tq = sizes.rows(), tk = sizes.tk, d = sizes.d, dvSize = sizes.dv;
  // Segment ids in runs: each example's block alone (the forward pass's
  // blocks); the gradients of padding rows and keys are 0.
  auto blocks = [&](int64_t b, std::vector<SegmentRuns> &runs, float *p,
                    float *dp, float *slope) {
    if (!headRuns(keys, b, runs))
      return false;
    int64_t positions = sizes.tq;
    if (wantQuery)
      std::fill(dq->data() + b * tq * d, dq->data() + (b + 1) * tq * d, 0.0f);
    if (wantKey)
      std::fill(dk->data() + b * tk * d, dk->data() + (b + 1) * tk * d, 0.0f);
    if (wantValue)
      std::fill(dv->data() + b * tk * dvSize,
                dv->data() + (b + 1) * tk * dvSize, 0.0f);
    for (int64_t g = 0; g < sizes.group; ++g) {
      int64_t row0 = b * tq + g * positions;
      for (auto [s, e] : runs[size_t(g)]) {
        int64_t n = e - s;
        AttentionShape block = blockShape(sizes, n);
        KeyVisibility visible{block, nullptr, causal, window};
        const float *qs = q.data() + (row0 + s) * d,
                    *ks = k.data() + (b * tk + s) * d,
                    *vs = v.data() + (b * tk + s) * dvSize,
                    *os = o.data() + (row0 + s) * dvSize,
                    *gs = dO.data() + (row0 + s) * dvSize;
        attentionProbabilities(block, visible, 0, qs, ks, p, nullptr, slope);
        // value_grad += P^T @ grad (every query head of the group adds).
        if (wantValue)
          gemmF32(true, false, n, dvSize, n, 1.0f, p, n, gs, dvSize, 1.0f,
                  dv->data() + (b * tk + s) * dvSize, dvSize);
        if (!wantQuery && !wantKey)
          continue;
        gemmF32(false, true, n, n, dvSize, 1.0f, gs, dvSize, vs, dvSize, 0.0f,
                dp, n);
        scoreGradient(n, n, dvSize, gs, os, p, slope, dp);
        if (wantQuery)
          gemmF32(false, false, n, d, n, sizes.scale, dp, n, ks, d, 0.0f,
                  dq->data() + (row0 + s) * d, d);
        if (wantKey)
          gemmF32(true, false, n, d, n, sizes.scale, dp, n, qs, d, 1.0f,
                  dk->data() + (b * tk + s) * d, d);
      }
    }
    return true;
  };
  parallelFor(sizes.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(size_t(tq * tk)), dp(size_t(tq * tk));
    std::vector<float> slope(sizes.softcap > 0.0f ? size_t(tq * tk) : 0);
    std::vector<SegmentRuns> runs;
    for (int64_t b = begin; b < end; ++b) {
      if (segments && blocks(b, runs, p.data(), dp.data(),
                             slope.empty() ? nullptr : slope.data()))
        continue;
      const float *qb = q.data() + b * tq * d, *kb = k.data() + b * tk * d;
      const float *vb = v.data() + b * tk * dvSize;
      const float *ob = o.data() + b * tq * dvSize;
      const float *gb = dO.data() + b * tq * dvSize;
      attentionProbabilities(sizes, keys, b, qb, kb, p.data(), nullptr,
                             slope.empty() ? nullptr : slope.data());
      // value_grad = P^T @ grad.
      if (wantValue)
        gemmF32(true, false, tk, dvSize, tq, 1.0f, p.data(), tk, gb, dvSize,
                0.0f, dv->data() + b * tk * dvSize, dvSize);
      if (!wantQuery && !wantKey)
        continue;
      // dP = grad @ value^T; dS = P * (dP - rowsum(grad * output)), in place.
      gemmF32(false, true, tq, tk, dvSize, 1.0f, gb, dvSize, vb, dvSize, 0.0f,
              dp.data(), tk);
      scoreGradient(tq, tk, dvSize, gb, ob, p.data(),
                    slope.empty() ? nullptr : slope.data(), dp.data());
      // query_grad = dS @ key * scale, key_grad = dS^T @ query * scale.
      if (wantQuery)
        gemmF32(false, false, tq, d, tk, sizes.scale, dp.data(), tk, kb, d,
                0.0f, dq->data() + b * tq * d, d);
      if (wantKey)
        gemmF32(true, false, tk, d, tq, sizes.scale, dp.data(), tk, qb, d, 0.0f,
                dk->data() + b * tk * d, d);
    }
  });
  for (std::optional<F32Result> *result : {&dq, &dk, &dv})
    if (*result)
      (*result)->commit();
  return Status::success();
}

namespace {
/// A bshd attention's [B, T, H, D] tensors as [B, H, T, D] copies, the
/// layout the kernels above compute in, and its results moved back:
/// transposes are exact, so it computes what the head-major attention of
/// transposed operands does.
class HeadMajorCopies {
public:
  explicit HeadMajorCopies(Context &ctx) : ctx(ctx) {}

  /// A head-major copy of operand `t` (rank 4).
  TensorRef operand(const TensorRef &t, Status &status) {
    TensorRef copy = place(t);
    if (status.ok())
      status = transpose(ctx, t, kSwap, copy);
    return copy;
  }
  /// Room for result `t` in head-major order (absent when `t` is).
  TensorRef result(const TensorRef &t) {
    return t.present() ? place(t) : TensorRef();
  }
  /// Moves a head-major result into `t`.
  Status writeBack(const TensorRef &copy, TensorRef &t) {
    return t.present() ? transpose(ctx, copy, kSwap, t) : Status::success();
  }
  /// Room for a bshd row log-sum-exp `t` ([B, T, H]) in head-major order,
  /// and its move back.
  TensorRef rows(const TensorRef &t) {
    TensorRef copy;
    copy.dtype = t.dtype;
    copy.shape = t.shape;
    if (copy.shape.size() == 3)
      std::swap(copy.shape[1], copy.shape[2]);
    storage.emplace_back(t.numBytes());
    copy.data = storage.back().data();
    return copy;
  }
  Status writeBackRows(const TensorRef &copy, TensorRef &t) {
    return transpose(ctx, copy, kSwapRows, t);
  }

private:
  TensorRef place(const TensorRef &t) {
    TensorRef copy;
    copy.dtype = t.dtype;
    copy.shape = shapes::attentionView(t.shape, /*bshd=*/true);
    storage.emplace_back(t.numBytes());
    copy.data = storage.back().data();
    return copy;
  }

  static inline const std::vector<int64_t> kSwap = {0, 2, 1, 3};
  static inline const std::vector<int64_t> kSwapRows = {0, 2, 1};
  Context &ctx;
  std::vector<std::vector<std::byte>> storage;
};

/// A packed attention operand ([B, T, Hq + 2 Hkv, D]) as the three tensors
/// of its query, key and value heads, and their gradients back into one.
class PackedHeads {
public:
  /// The heads of `packed`, Hq of them (`queryHeads`) queries.
  Status unpack(Context &ctx, const TensorRef &packed, int64_t queryHeads) {
    // [B, T, Hq + 2 Hkv, D], as the loader checked.
    shapes::Shape q, kv;
    shapes::packedHeads(packed.shape, queryHeads, q, kv);
    shapes_ = {q, kv, kv};
    pieces = {place(packed.dtype, q), place(packed.dtype, kv),
              place(packed.dtype, kv)};
    return split(ctx, packed, 2, pieces);
  }
  TensorRef &operator[](size_t i) { return pieces[i]; }
  /// Room for the three gradients of a packed `grad` (absent: none).
  void gradients(const TensorRef &grad) {
    grads.clear();
    for (const shapes::Shape &shape : shapes_)
      grads.push_back(grad.present() ? place(grad.dtype, shape) : TensorRef());
  }
  TensorRef &grad(size_t i) { return grads[i]; }
  /// The three gradients into `grad`, side by side as the operand held them.
  Status pack(Context &ctx, TensorRef &grad) {
    return grad.present() ? concat(ctx, grads, 2, grad) : Status::success();
  }

private:
  TensorRef place(DType dtype, const shapes::Shape &shape) {
    TensorRef t;
    t.dtype = dtype;
    t.shape = shape;
    storage.emplace_back(t.numBytes());
    t.data = storage.back().data();
    return t;
  }
  std::vector<shapes::Shape> shapes_;
  std::vector<TensorRef> pieces, grads;
  std::vector<std::vector<std::byte>> storage;
};

} // namespace

Status attention(Context &ctx, const TensorRef &query, const TensorRef &key,
                 const TensorRef &value, const TensorRef *keyMask, bool causal,
                 int64_t window, std::optional<double> scale, TensorRef &result,
                 bool bshd, TensorRef *lse, bool packed, double softcap,
                 bool segments) {
  if (packed) {
    PackedHeads heads;
    TGC_RETURN_IF_ERROR(heads.unpack(ctx, query, result.shape[2]));
    return attention(ctx, heads[0], heads[1], heads[2], keyMask, causal, window,
                     scale, result, bshd, lse, /*packed=*/false, softcap,
                     segments);
  }
  if (!bshd)
    return headMajorAttention(ctx, query, key, value, keyMask, causal, window,
                              scale, result, lse, softcap, segments);
  HeadMajorCopies copies(ctx);
  Status status;
  TensorRef q = copies.operand(query, status), k = copies.operand(key, status),
            v = copies.operand(value, status), out = copies.result(result);
  std::optional<TensorRef> rows;
  if (lse)
    rows = copies.rows(*lse);
  TGC_RETURN_IF_ERROR(status);
  TGC_RETURN_IF_ERROR(headMajorAttention(ctx, q, k, v, keyMask, causal, window,
                                         scale, out, rows ? &*rows : nullptr,
                                         softcap, segments));
  if (rows)
    TGC_RETURN_IF_ERROR(copies.writeBackRows(*rows, *lse));
  return copies.writeBack(out, result);
}

Status attentionGrad(Context &ctx, const TensorRef &query, const TensorRef &key,
                     const TensorRef &value, const TensorRef &output,
                     const TensorRef &grad, const TensorRef *keyMask,
                     bool causal, int64_t window, std::optional<double> scale,
                     TensorRef &queryGrad, TensorRef &keyGrad,
                     TensorRef &valueGrad, bool bshd, const TensorRef *lse,
                     bool packed, double softcap, bool segments) {
  if (packed) {
    // One gradient, of the packed operand, in queryGrad (bshd heads: the
    // loader checked).
    PackedHeads heads;
    TGC_RETURN_IF_ERROR(heads.unpack(ctx, query, output.shape[2]));
    heads.gradients(queryGrad);
    TGC_RETURN_IF_ERROR(attentionGrad(
        ctx, heads[0], heads[1], heads[2], output, grad, keyMask, causal,
        window, scale, heads.grad(0), heads.grad(1), heads.grad(2), bshd, lse,
        /*packed=*/false, softcap, segments));
    return heads.pack(ctx, queryGrad);
  }
  if (!bshd)
    return headMajorAttentionGrad(ctx, query, key, value, output, grad, keyMask,
                                  causal, window, scale, queryGrad, keyGrad,
                                  valueGrad, lse, softcap, segments);
  HeadMajorCopies copies(ctx);
  Status status;
  TensorRef q = copies.operand(query, status), k = copies.operand(key, status),
            v = copies.operand(value, status),
            o = copies.operand(output, status),
            g = copies.operand(grad, status);
  TensorRef dq = copies.result(queryGrad), dk = copies.result(keyGrad),
            dv = copies.result(valueGrad);
  TGC_RETURN_IF_ERROR(status);
  TGC_RETURN_IF_ERROR(headMajorAttentionGrad(
      ctx, q, k, v, o, g, keyMask, causal, window, scale, dq, dk, dv,
      /*lse=*/nullptr, softcap, segments));
  TGC_RETURN_IF_ERROR(copies.writeBack(dq, queryGrad));
  TGC_RETURN_IF_ERROR(copies.writeBack(dk, keyGrad));
  return copies.writeBack(dv, valueGrad);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// Checks the targets' values; `rows` and `classes` describe the logits
/// as a [rows, classes] matrix, `counted` the positions not ignored.
static Status checkCrossEntropy(const TensorRef &logits,
                                const TensorRef &targets, int64_t ignoreIndex,
                                int64_t &rows, int64_t &classes,
                                int64_t &counted) {
  // The logits' rank and the targets' shape as the loader checked them; the
  // targets' values are data.
  classes = logits.shape.back();
  rows = targets.numElements();
  counted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t target = loadI64(targets, i);
    if (target == ignoreIndex)
      continue;
    if (target < 0 || target >= classes)
      return Status::failure("target " + std::to_string(target) +
                             " at position " + std::to_string(i) +
                             " is out of range [0, " +
                             std::to_string(classes) + ")");
    ++counted;
  }
  return Status::success();
}

/// log(sum(exp(row))) with the maximum subtracted first, in f64 (the loss
/// and its gradient keep double precision; they are a small part of a
/// step).
static double logSumExp(const float *row, int64_t length) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < length; ++j)
    max = std::max(max, row[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < length; ++j)
    sum += std::exp(double(row[j]) - max);
  return double(max) + std::log(sum);
}

/// Row `i` of `x` as the loss reads it: the row itself, or with a soft-cap
/// its capped copy in `capped`.
static const float *lossRow(const F32Operand &x, int64_t i, int64_t classes,
                            float softcap, std::vector<float> &capped) {
  const float *row = x.data() + i * classes;
  if (softcap == 0.0f)
    return row;
  capped.resize(size_t(classes));
  for (int64_t j = 0; j < classes; ++j)
    capped[size_t(j)] = softcap * std::tanh(row[j] / softcap);
  return capped.data();
}

Status crossEntropy(Context &ctx, const TensorRef &logits,
                    const TensorRef &targets, int64_t ignoreIndex,
                    TensorRef &result, const TensorRef *grad,
                    TensorRef *logitsGrad, double softcap) {
  int64_t rows, classes, counted;
  TGC_RETURN_IF_ERROR(
      checkCrossEntropy(logits, targets, ignoreIndex, rows, classes, counted));
  F32Operand x(logits);
  double total = parallelSum(rows, grainFor(classes), [&](int64_t begin,
                                                          int64_t end) {
    double sum = 0.0;
    std::vector<float> capped;
    for (int64_t i = begin; i < end; ++i) {
      int64_t target = loadI64(targets, i);
      if (target == ignoreIndex)
        continue;
      const float *row = lossRow(x, i, classes, float(softcap), capped);
      sum += logSumExp(row, classes) - row[target];
    }
    return sum;
  });
  float mean = counted == 0 ? 0.0f : float(total / double(counted));
  // The gradient may be written over the logits, which the loss has read.
  if (grad)
    TGC_RETURN_IF_ERROR(crossEntropyGrad(ctx, logits, targets, *grad,
                                         ignoreIndex, *logitsGrad, softcap));
  storeF32(result, 0, mean);
  return Status::success();
}

Status targetCount(Context &ctx, const TensorRef &targets, int64_t ignoreIndex,
                   TensorRef &result) {
  int64_t count = 0;
  for (int64_t i = 0, n = targets.numElements(); i < n; ++i)
    count += loadI64(targets, i) != ignoreIndex;
  storeF32(result, 0, float(count));
  return Status::success();
}

Status crossEntropyGrad(Context &ctx, const TensorRef &logits,
                        const TensorRef &targets, const TensorRef &grad,
                        int64_t ignoreIndex, TensorRef &result,
                        double softcap) {
  int64_t rows, classes, counted;
  TGC_RETURN_IF_ERROR(
      checkCrossEntropy(logits, targets, ignoreIndex, rows, classes, counted));
  float cap = float(softcap);
  float coefficient =
      counted == 0 ? 0.0f : float(double(loadF32(grad, 0)) / double(counted));
  F32Operand x(logits);
  F32Result r(result, {&targets, &grad});
  parallelFor(rows, grainFor(classes), [&](int64_t begin, int64_t end) {
    std::vector<float> p(static_cast<size_t>(classes)), capped;
    for (int64_t i = begin; i < end; ++i) {
      float *out = r.data() + i * classes;
      int64_t target = loadI64(targets, i);
      if (target == ignoreIndex || counted == 0) {
        std::fill(out, out + classes, 0.0f);
        continue;
      }
      const float *row = lossRow(x, i, classes, cap, capped);
      double lse = logSumExp(row, classes);
      for (int64_t j = 0; j < classes; ++j)
        p[j] = float(std::exp(double(row[j]) - lse));
      // Reads row[j] before writing out[j] (the result may be the logits');
      // through a soft-cap, times its slope 1 - tanh^2.
      for (int64_t j = 0; j < classes; ++j) {
        float slope = 1.0f;
        if (cap > 0.0f) {
          float t = row[j] / cap;
          slope = 1.0f - t * t;
        }
        out[j] = coefficient * (p[j] - (j == target ? 1.0f : 0.0f)) * slope;
      }
    }
  });
  r.commit();
  return Status::success();
}

} // namespace tgc::rt::cpu
