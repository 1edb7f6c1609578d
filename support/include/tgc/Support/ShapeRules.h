//===- ShapeRules.h - result shapes of the tg ops, once ---------*- C++ -*-===//
//
// The shape rules that more than one part of tgc needs: the dialect's type
// inference and verifiers, the model and gradient builders, the runtime's
// loader and both backends' kernels. Header only and free of MLIR and LLVM,
// like CheckedMath.h, so the runtime can use it. A shape is any sequence of
// int64_t with size() and operator[] (std::vector, llvm::ArrayRef).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_SHAPERULES_H
#define TGC_SUPPORT_SHAPERULES_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgc::shapes {

using Shape = std::vector<int64_t>;

/// "[2, 3]", as MLIR's interleaved_array prints a shape.
template <typename A> std::string toString(const A &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// A shape, or why there is none.
struct ShapeOrError {
  Shape shape;
  std::string error;
  bool ok() const { return error.empty(); }
};

/// NumPy broadcasting: shapes aligned at their trailing dimension, each pair
/// of sizes equal or one of them 1. None when they do not broadcast.
template <typename A, typename B>
std::optional<Shape> broadcast(const A &a, const B &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    result[rank - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

/// Whether `from` broadcasts to exactly `to`.
template <typename A, typename B> bool broadcastsTo(const A &from, const B &to) {
  std::optional<Shape> shape = broadcast(from, to);
  return shape && std::equal(shape->begin(), shape->end(), to.begin(),
                             to.end());
}

/// tg.matmul: `[B..., M, K] x [B..., K, N] -> [B..., M, N]`, each operand's
/// last two dimensions swapped when transposed, batch dimensions broadcast.
template <typename A, typename B>
ShapeOrError matmul(const A &lhs, const B &rhs, bool transposeLhs,
                    bool transposeRhs) {
  size_t lr = lhs.size(), rr = rhs.size();
  if (lr < 2 || rr < 2)
    return {{},
            "operands must have rank >= 2, found ranks " + std::to_string(lr) +
                " and " + std::to_string(rr)};
  int64_t m = lhs[transposeLhs ? lr - 1 : lr - 2];
  int64_t k = lhs[transposeLhs ? lr - 2 : lr - 1];
  int64_t kr = rhs[transposeRhs ? rr - 1 : rr - 2];
  int64_t n = rhs[transposeRhs ? rr - 2 : rr - 1];
  if (k != kr)
    return {{},
            "contraction dimensions differ: " + std::to_string(k) +
                " (lhs) and " + std::to_string(kr) + " (rhs)"};
  Shape lhsBatch(lhs.begin(), lhs.begin() + (lr - 2));
  Shape rhsBatch(rhs.begin(), rhs.begin() + (rr - 2));
  std::optional<Shape> batch = broadcast(lhsBatch, rhsBatch);
  if (!batch)
    return {{},
            "batch dimensions " + toString(lhsBatch) + " and " +
                toString(rhsBatch) + " are not broadcast-compatible"};
  batch->push_back(m);
  batch->push_back(n);
  return {std::move(*batch), {}};
}

/// tg.matmul_4bit: `input [B..., M, cols]` times the `[rows, cols]` weight
/// transposed gives `[B..., M, rows]`; untransposed, `input [B..., M,
/// rows]` gives `[B..., M, cols]`.
template <typename A>
ShapeOrError matmul4bit(const A &input, int64_t rows, int64_t cols,
                        bool transposeRhs) {
  if (input.size() < 2)
    return {{}, "input must have rank >= 2, found rank " +
                    std::to_string(input.size())};
  if (rows <= 0 || cols <= 0)
    return {{}, "the weight's rows and cols must be positive, found " +
                    std::to_string(rows) + " x " + std::to_string(cols)};
  int64_t k = transposeRhs ? cols : rows, n = transposeRhs ? rows : cols;
  if (input.back() != k)
    return {{}, "input's last dimension is " + std::to_string(input.back()) +
                    " but the " + std::to_string(rows) + " x " +
                    std::to_string(cols) + " weight" +
                    (transposeRhs ? " (transposed)" : "") + " needs " +
                    std::to_string(k)};
  Shape shape(input.begin(), input.end());
  shape.back() = n;
  return {std::move(shape), {}};
}

/// The shapes of a GEMM with a bias-gradient epilogue: the product's and
/// the bias gradient's, or why there are none.
struct BiasGradShapes {
  Shape product, bias;
  std::string error;
  bool ok() const { return error.empty(); }
};

/// tg.matmul_bias_grad: `lhs [M, K]` and `rhs [M, N]` give the product
/// `lhs^T @ rhs`, `[K, N]`, and the sum of `rhs` over its rows, `[N]` (of
/// `lhs`, `[K]`, with `biasOfLhs`).
template <typename A, typename B>
BiasGradShapes matmulBiasGrad(const A &lhs, const B &rhs, bool biasOfLhs) {
  if (lhs.size() != 2 || rhs.size() != 2)
    return {{},
            {},
            "operands must have rank 2, found ranks " +
                std::to_string(lhs.size()) + " and " +
                std::to_string(rhs.size())};
  if (lhs[0] != rhs[0])
    return {{},
            {},
            "operands' rows differ: " + std::to_string(lhs[0]) + " (lhs) and " +
                std::to_string(rhs[0]) + " (rhs)"};
  return {{lhs[1], rhs[1]}, {biasOfLhs ? lhs[1] : rhs[1]}, {}};
}

/// tg.matmul_gelu_grad: `grad [B..., M, N] @ weight` (`weight` rank 2,
/// `[N, K]`, or `[K, N]` with `transposeRhs`) must have the shape of
/// `preactivation`, which the result takes; the bias gradient is `[K]`.
template <typename A, typename B, typename C>
BiasGradShapes matmulGeluGrad(const A &grad, const B &weight,
                              const C &preactivation, bool transposeRhs) {
  if (weight.size() != 2)
    return {{},
            {},
            "weight must have rank 2, found rank " +
                std::to_string(weight.size())};
  ShapeOrError product = matmul(grad, weight, false, transposeRhs);
  if (!product.ok())
    return {{}, {}, product.error};
  if (!std::equal(product.shape.begin(), product.shape.end(),
                  preactivation.begin(), preactivation.end()))
    return {{},
            {},
            "the product " + toString(product.shape) +
                " and the preactivation " + toString(preactivation) +
                " differ in shape"};
  int64_t k = product.shape.back();
  return {std::move(product.shape), {k}, {}};
}

/// tg.attention's heads: the number of query heads that share each key and
/// value head, from the batch dimensions of the query and of the key (or
/// value). 1 when they are equal; with grouped-query attention the key's
/// last batch dimension (its heads) divides the query's and the others are
/// equal. 0 when they do not agree.
template <typename A, typename B>
int64_t attentionGroup(const A &query, const B &key) {
  size_t rank = query.size();
  if (key.size() != rank)
    return 0;
  for (size_t i = 0; i + 1 < rank; ++i)
    if (query[i] != key[i])
      return 0;
  if (rank == 0 || query[rank - 1] == key[rank - 1])
    return 1;
  if (key[rank - 1] <= 0 || query[rank - 1] % key[rank - 1] != 0)
    return 0;
  return query[rank - 1] / key[rank - 1];
}

/// tg.attention's operands in the order its rules are written in, [B...,
/// T, D]: with the `bshd` layout ([B, T, H, D], each position's heads side
/// by side, as a projection writes them) the sequence and head dimensions
/// swapped, giving [B, H, T, D]. Shapes of another rank are returned as
/// they are (the verifiers reject them).
template <typename A> Shape attentionView(const A &shape, bool bshd) {
  Shape view(shape.begin(), shape.end());
  if (bshd && view.size() == 4)
    std::swap(view[1], view[2]);
  return view;
}

/// tg.attention's `packed` operand: one bshd tensor [B, T, Hq + 2 Hkv, D]
/// holding each position's query heads, then its key heads, then its value
/// heads. `query` and `keyValue` receive the shapes of the query heads
/// (`queryHeads` Hq of them, the result's) and of the key (and value) heads;
/// false when `packed` does not split so.
template <typename A>
bool packedHeads(const A &packed, int64_t queryHeads, Shape &query,
                 Shape &keyValue) {
  if (packed.size() != 4 || queryHeads < 1 || packed[2] <= queryHeads ||
      (packed[2] - queryHeads) % 2 != 0)
    return false;
  query.assign(packed.begin(), packed.end());
  keyValue = query;
  query[2] = queryHeads;
  keyValue[2] = (packed[2] - queryHeads) / 2;
  return true;
}

/// tg.gather, and tg.gather_grad (whose result is the gathered operand):
/// `result` has the shape of `input` except along `axis` (negative counts
/// from the end), and `index` broadcasts to `result`. Empty when they
/// agree, otherwise why not.
template <typename A, typename B, typename C>
std::string gather(const A &input, const B &index, const C &result,
                   int64_t axis) {
  int64_t rank = int64_t(input.size());
  if (axis < -rank || axis >= rank)
    return "axis " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(rank);
  size_t dim = size_t(axis < 0 ? axis + rank : axis);
  if (result.size() != input.size())
    return "the gathered shape " + toString(result) + " and the operand " +
           toString(input) + " differ in rank";
  for (size_t d = 0; d < input.size(); ++d)
    if (d != dim && result[d] != input[d])
      return "the gathered shape " + toString(result) +
             " differs from the "
             "operand " +
             toString(input) + " outside axis " + std::to_string(dim);
  if (!broadcastsTo(index, result))
    return "the index shape " + toString(index) +
           " does not broadcast to the gathered shape " + toString(result);
  return {};
}

/// tg.top_k: `result` is `input` with its last dimension `k`, and
/// `1 <= k <= ` that dimension. Empty when they agree, otherwise why not.
template <typename A, typename B>
std::string topK(const A &input, const B &result, int64_t k) {
  if (input.size() == 0)
    return "the operand must have rank >= 1";
  int64_t last = input[input.size() - 1];
  if (k < 1 || k > last)
    return "k = " + std::to_string(k) + " is not in [1, " +
           std::to_string(last) + "]";
  Shape expected(input.begin(), input.end());
  expected.back() = k;
  if (!std::equal(expected.begin(), expected.end(), result.begin(),
                  result.end()))
    return "the result shape " + toString(result) + " is not " +
           toString(expected);
  return {};
}

/// tg.moe_route: `choices` is `[N, k]` (each token's k experts), `rows`
/// `[N * k, 1]` (the token of each row sorted by expert), `positions`
/// `[N, k]` (the sorted row of each choice) and `offsets` `[E + 1]` with
/// `E >= 1`.
template <typename A, typename B, typename C, typename D>
std::string moeRoute(const A &choices, const B &rows, const C &positions,
                     const D &offsets) {
  if (choices.size() != 2)
    return "the expert choices must have rank 2 ([tokens, k]), found " +
           toString(choices);
  Shape rowShape = {choices[0] * choices[1], 1};
  if (!std::equal(rowShape.begin(), rowShape.end(), rows.begin(), rows.end()))
    return "the rows shape " + toString(rows) + " is not " + toString(rowShape);
  if (!std::equal(choices.begin(), choices.end(), positions.begin(),
                  positions.end()))
    return "the positions shape " + toString(positions) +
           " differs from the choices " + toString(choices);
  if (offsets.size() != 1 || offsets[0] < 2)
    return "the offsets must be [experts + 1] with at least one expert, "
           "found " +
           toString(offsets);
  return {};
}

/// tg.expert_linear: `input` `[M, K]`, `offsets` `[E + 1]`, E `weights`
/// each `[K, N]` (`[N, K]` with `transposeWeight`), `result` `[M, N]`.
template <typename A, typename B, typename W, typename C>
std::string expertLinear(const A &input, const B &offsets, const W &weights,
                         const C &result, bool transposeWeight) {
  if (offsets.size() != 1 || offsets[0] != int64_t(weights.size()) + 1)
    return "the offsets " + toString(offsets) + " must be [" +
           std::to_string(weights.size() + 1) + "], one more than the " +
           std::to_string(weights.size()) + " expert weights";
  if (weights.size() == 0)
    return "there must be at least one expert weight";
  if (input.size() != 2 || result.size() != 2)
    return "the input " + toString(input) + " and the result " +
           toString(result) + " must have rank 2";
  for (const auto &weight : weights) {
    Shape expected = transposeWeight ? Shape{result[1], input[1]}
                                     : Shape{input[1], result[1]};
    if (!std::equal(expected.begin(), expected.end(), weight.begin(),
                    weight.end()))
      return "an expert weight is " + toString(weight) + ", not " +
             toString(expected);
  }
  if (result[0] != input[0])
    return "the result has " + std::to_string(result[0]) + " rows, the input " +
           std::to_string(input[0]);
  return {};
}

/// tg.expert_linear_weight_grad: `lhs` `[M, P]`, `rhs` `[M, Q]`, `offsets`
/// `[E + 1]`, E `results` each `[P, Q]`.
template <typename A, typename B, typename C, typename R>
std::string expertOuter(const A &lhs, const B &rhs, const C &offsets,
                        const R &results) {
  if (results.size() == 0)
    return "there must be at least one expert result";
  if (offsets.size() != 1 || offsets[0] != int64_t(results.size()) + 1)
    return "the offsets " + toString(offsets) + " must be [" +
           std::to_string(results.size() + 1) + "], one more than the " +
           std::to_string(results.size()) + " expert results";
  if (lhs.size() != 2 || rhs.size() != 2 || lhs[0] != rhs[0])
    return "the operands " + toString(lhs) + " and " + toString(rhs) +
           " must be rank 2 with the same rows";
  Shape expected = {lhs[1], rhs[1]};
  for (const auto &result : results)
    if (!std::equal(expected.begin(), expected.end(), result.begin(),
                    result.end()))
      return "an expert result is " + toString(result) + ", not " +
             toString(expected);
  return {};
}

} // namespace tgc::shapes

#endif // TGC_SUPPORT_SHAPERULES_H
