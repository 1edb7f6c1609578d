//===- RaiseAttention.cpp - the tg-raise-attention pass -------------------===//
//
// Attention written out as its pieces (what tgc-import gets from a model's
// eager attention, or what one writes by hand) becomes one tg.attention:
//
//   scores = Q K^T            tg.matmul, on [B, H, T, D] heads or on their
//                             [B*H, T, D] reshapes, K transposed by
//                             transpose_rhs or a tg.transpose
//   scores = scores * s       tg.mul or tg.div by a scalar constant
//   scores = c * tanh(scores / c)
//                             a soft-cap (Gemma 2's), after the scale and
//                             before the mask: tg.attention's softcap
//   scores = mask(scores)     tg.where(keep, scores, fill) or
//                             tg.where(hide, fill, scores) with fill <=
//                             -1e30, or tg.add of 0 / <= -1e30: a constant
//                             mask is causal (and Mistral's window) or
//                             nothing; a mask computed from an integer
//                             [B, Tk] padding mask becomes key_mask
//   P = softmax(scores)       over the last axis
//   out = P V                 tg.matmul, back to [B, H, T, Dv]
//
// Keys and values repeated for grouped-query attention (Hugging Face's
// repeat_kv: a reshape, a broadcast, a reshape) are used unrepeated. A
// chain whose intermediate values have other users, or whose mask is
// neither causal, windowed, absent nor a padding mask, is left as it is:
// the raised op computes the same function, never a guessed one.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "Raise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <optional>

namespace tgc::tg {
#define GEN_PASS_DEF_TGRAISEATTENTION
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;
using tgc::tg::raise::scalarConstant;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// What a score masks hides: fills of at most this are minus infinity to
/// a softmax (Hugging Face's masks use the type's lowest finite value).
constexpr double kHidden = -1e30;

/// `v` without reshapes that only merge or split its leading (batch)
/// dimensions, as long as each is used only here: the tensor of rank `rank`
/// whose last two dimensions are `v`'s.
Value peelBatchReshapes(Value v, int64_t rank,
                        SmallVectorImpl<Operation *> &chain) {
  while (typeOf(v).getRank() != rank) {
    auto reshape = v.getDefiningOp<ReshapeOp>();
    if (!reshape || !v.hasOneUse())
      return {};
    ArrayRef<int64_t> in = typeOf(reshape.getInput()).getShape(),
                      out = typeOf(v).getShape();
    if (in.size() < 2 || in.take_back(2) != out.take_back(2))
      return {};
    chain.push_back(reshape);
    v = reshape.getInput();
  }
  return v;
}

/// A key or value repeated over query-head groups (reshape to [B, KV, 1,
/// T, D], broadcast to [B, KV, G, T, D], reshape to [B, KV*G, T, D]): the
/// unrepeated tensor; otherwise `v`.
Value unrepeat(Value v, SmallVectorImpl<Operation *> &chain) {
  auto merge = v.getDefiningOp<ReshapeOp>();
  if (!merge || !v.hasOneUse())
    return v;
  auto broadcast = merge.getInput().getDefiningOp<BroadcastToOp>();
  if (!broadcast || !merge.getInput().hasOneUse())
    return v;
  auto split = broadcast.getInput().getDefiningOp<ReshapeOp>();
  if (!split || !broadcast.getInput().hasOneUse())
    return v;
  ArrayRef<int64_t> kv = typeOf(split.getInput()).getShape(),
                    one = typeOf(split.getResult()).getShape(),
                    wide = typeOf(broadcast.getResult()).getShape(),
                    heads = typeOf(v).getShape();
  if (kv.size() != 4 || one.size() != 5 || wide.size() != 5 ||
      heads.size() != 4 || one[0] != kv[0] || one[1] != kv[1] ||
      one[2] != 1 || one.take_back(2) != kv.take_back(2) ||
      wide[0] != kv[0] || wide[1] != kv[1] ||
      wide.take_back(2) != kv.take_back(2) || heads[0] != kv[0] ||
      heads[1] != kv[1] * wide[2] || heads.take_back(2) != kv.take_back(2))
    return v;
  chain.append({merge, broadcast, split});
  return split.getInput();
}

/// One key or value head broadcast to every query head ([B, 1, ...] to
/// [B, H, ...], Falcon's multi-query attention): the one head; otherwise
/// `v`.
Value unbroadcastHeads(Value v, SmallVectorImpl<Operation *> &chain) {
  auto broadcast = v.getDefiningOp<BroadcastToOp>();
  if (!broadcast || !v.hasOneUse())
    return v;
  ArrayRef<int64_t> one = typeOf(broadcast.getInput()).getShape(),
                    heads = typeOf(v).getShape();
  if (one.size() != 4 || heads.size() != 4 || one[0] != heads[0] ||
      one[1] != 1 || one.take_back(2) != heads.take_back(2))
    return v;
  chain.push_back(broadcast);
  return broadcast.getInput();
}

/// What a constant [..., Tq, Tk] mask keeps, the same for every leading
/// index (Hugging Face expands its causal mask over the batch): causal with
/// an optional window, or everything. `keep(value)` says whether an element
/// keeps its score; nullopt when the mask is none of these.
struct Masking {
  bool causal = false;
  int64_t window = 0;
};
template <typename Keep>
std::optional<Masking> classify(DenseElementsAttr mask, int64_t tq,
                                int64_t tk, Keep keep) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(mask.getType()).getShape();
  if (shape.size() < 2 || shape.take_back(2) != ArrayRef<int64_t>{tq, tk})
    return std::nullopt;
  std::vector<bool> kept;
  kept.reserve(size_t(tq * tk));
  for (auto it = mask.value_begin<Attribute>(),
            end = mask.value_end<Attribute>();
       it != end; ++it) {
    std::optional<bool> k = keep(*it);
    if (!k)
      return std::nullopt;
    kept.push_back(*k);
  }
  // Every [Tq, Tk] slice the same: classify the first.
  size_t slice = size_t(tq * tk);
  for (size_t at = slice; at + slice <= kept.size(); at += slice)
    if (!std::equal(kept.begin(), kept.begin() + slice, kept.begin() + at))
      return std::nullopt;
  kept.resize(slice);
  if (std::all_of(kept.begin(), kept.end(), [](bool k) { return k; }))
    return Masking();
  if (tq != tk)
    return std::nullopt;
  // Causal, and the window from the last row's count of visible keys.
  int64_t seen = 0;
  for (int64_t j = 0; j < tk; ++j)
    seen += kept[size_t((tq - 1) * tk + j)];
  Masking result{true, seen < tk ? seen : 0};
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j) {
      bool want = j <= i && (result.window == 0 || j > i - result.window);
      if (kept[size_t(i * tk + j)] != want)
        return std::nullopt;
    }
  return result;
}

std::optional<bool> keepOfBool(Attribute a) {
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getValue() != 0;
  return std::nullopt;
}

/// `v` without reshapes, broadcasts and casts between integers, bools
/// and floats: the integer padding mask [B, Tk] they came from, or null.
Value paddingMaskSource(Value v, int64_t tk) {
  while (true) {
    Operation *op = v.getDefiningOp();
    if (auto reshape = dyn_cast_or_null<ReshapeOp>(op)) {
      // Only between [B, 1, ..., 1, Tk] shapes: the keys stay on the last
      // axis and the batch on the first (a query-side [B, 1, T, 1] mask is
      // not a key mask).
      ArrayRef<int64_t> in = typeOf(reshape.getInput()).getShape(),
                        out = typeOf(v).getShape();
      auto ones = [](ArrayRef<int64_t> shape) {
        return llvm::all_of(shape.drop_front().drop_back(),
                            [](int64_t d) { return d == 1; });
      };
      if (in.size() < 2 || out.size() < 2 || out.front() != in.front() ||
          in.back() != tk || out.back() != tk || !ones(in) || !ones(out))
        return {};
      v = reshape.getInput();
      continue;
    }
    if (isa_and_nonnull<BroadcastToOp, CastOp>(op)) {
      // Broadcasting aligns trailing axes: the keys stay last.
      if (typeOf(op->getOperand(0)).getShape().back() != tk)
        return {};
      v = op->getOperand(0);
      continue;
    }
    auto type = typeOf(v);
    if (type.getRank() == 2 && type.getShape()[1] == tk &&
        type.getElementType().isSignlessInteger() &&
        type.getElementType().getIntOrFloatBitWidth() > 1)
      return v;
    return {};
  }
}

/// The attention found from its softmax.
struct Match {
  Value query, key, value, keyMask;
  Masking masking;
  std::optional<double> scale;
  std::optional<double> softcap;
  Operation *last = nullptr;             // whose result the attention replaces
  SmallVector<Operation *> chain;        // the ops it replaces
  /// Constant masks classified so far (every layer reads the same one),
  /// by the attribute and whether it marks what is kept.
  DenseMap<std::pair<Attribute, int>, std::optional<Masking>> *seen = nullptr;
};

/// `classify` of a constant mask, remembered across the layers.
template <typename Keep>
std::optional<Masking> classifyOnce(Match &m, DenseElementsAttr mask,
                                    int kind, int64_t tq, int64_t tk,
                                    Keep keep) {
  auto key = std::make_pair(Attribute(mask), kind);
  auto found = m.seen->find(key);
  if (found != m.seen->end())
    return found->second;
  std::optional<Masking> result = classify(mask, tq, tk, keep);
  m.seen->try_emplace(key, result);
  return result;
}

/// `into` narrowed by `more` (both applied): causal if either is, the
/// narrower window.
bool combine(Masking &into, const Masking &more) {
  if (!more.causal)
    return true;
  if (!into.causal) {
    into = more;
    return true;
  }
  if (more.window && (!into.window || more.window < into.window))
    into.window = more.window;
  return true;
}

/// The mask applied to `scores` ([..., Tq, Tk]); returns the masked
/// scores' input or null.
Value peelMask(Value scores, int64_t tq, int64_t tk, Match &m) {
  Operation *op = scores.getDefiningOp();
  if (auto where = dyn_cast_or_null<WhereOp>(op)) {
    // where(keep, x, fill) or where(hide, fill, x).
    std::optional<double> rhs = scalarConstant(where.getRhs()),
                          lhs = scalarConstant(where.getLhs());
    bool keepForm = rhs && *rhs <= kHidden;
    if (!keepForm && !(lhs && *lhs <= kHidden))
      return {};
    Value x = keepForm ? where.getLhs() : where.getRhs();
    Value cond = where.getCondition();
    if (auto constant = cond.getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return {};
      std::optional<Masking> masking =
          classifyOnce(m, dense, keepForm ? 0 : 1, tq, tk,
                       [&](Attribute a) -> std::optional<bool> {
            std::optional<bool> k = keepOfBool(a);
            if (k && !keepForm)
              k = !*k;
            return k;
          });
      if (!masking || !combine(m.masking, *masking))
        return {};
    } else {
      // A padding mask: where(mask != 0, x, fill).
      if (!keepForm)
        return {};
      if (m.keyMask)
        return {};
      m.keyMask = paddingMaskSource(cond, tk);
      if (!m.keyMask)
        return {};
    }
    m.chain.push_back(where);
    return x;
  }
  if (auto add = dyn_cast_or_null<AddOp>(op)) {
    for (auto [x, mask] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())}) {
      if (typeOf(x) != typeOf(scores))
        continue;
      if (auto constant = mask.getDefiningOp<ConstantOp>()) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense || !isa<FloatType>(dense.getElementType()))
          return {};
        std::optional<Masking> masking =
            classifyOnce(m, dense, 2, tq, tk,
                         [](Attribute a) -> std::optional<bool> {
              double v = cast<FloatAttr>(a).getValueAsDouble();
              if (v == 0.0)
                return true;
              if (v <= kHidden)
                return false;
              return std::nullopt;
            });
        if (!masking || !combine(m.masking, *masking))
          return {};
      } else {
        // BERT's (1 - mask) * lowest: mul(sub(1, cast(mask)), lowest).
        auto mul = mask.getDefiningOp<MulOp>();
        if (!mul)
          return {};
        std::optional<double> lowest = scalarConstant(mul.getRhs());
        auto sub = mul.getLhs().getDefiningOp<SubOp>();
        if (!lowest || *lowest > kHidden || !sub ||
            scalarConstant(sub.getLhs()) != 1.0)
          return {};
        if (m.keyMask)
          return {};
        m.keyMask = paddingMaskSource(sub.getRhs(), tk);
        if (!m.keyMask)
          return {};
      }
      m.chain.push_back(add);
      return x;
    }
  }
  return {};
}

std::optional<Match> match(
    SoftmaxOp softmax,
    DenseMap<std::pair<Attribute, int>, std::optional<Masking>> &seen) {
  Match m;
  m.seen = &seen;
  auto scoresType = typeOf(softmax.getInput());
  int64_t rank = scoresType.getRank();
  if (rank < 3 || rank > 4 || int64_t(softmax.getAxis()) != rank - 1 ||
      !softmax.getResult().hasOneUse())
    return std::nullopt;
  int64_t tq = scoresType.getShape()[rank - 2],
          tk = scoresType.getShape()[rank - 1];
  m.chain.push_back(softmax);

  // Backwards from the softmax to Q K^T, through what models put between:
  // reshapes of the heads, a scale, masks (combined), a clamp at the
  // lowest value, the addition of an all-zero mask.
  Value x = softmax.getInput();
  double scale = 1.0;
  MatmulOp scoresMatmul;
  while (!scoresMatmul) {
    if (!x.hasOneUse())
      return std::nullopt;
    Operation *op = x.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      ArrayRef<int64_t> in = typeOf(reshape.getInput()).getShape();
      if (in.size() < 2 || in.take_back(2) != ArrayRef<int64_t>{tq, tk})
        return std::nullopt;
      m.chain.push_back(op);
      x = reshape.getInput();
      continue;
    }
    // A soft-cap applies to the scaled scores, and the mask to the capped
    // ones: met walking back before any scale, and after every mask.
    if (!m.scale && !m.softcap)
      if (auto capped = raise::matchSoftcap(op, m.chain)) {
        m.softcap = capped->second;
        x = capped->first;
        continue;
      }
    if (isa<MulOp, DivOp>(op)) {
      std::optional<double> factor = scalarConstant(op->getOperand(1));
      if (!factor || !(*factor > 0.0))
        return std::nullopt;
      scale = isa<DivOp>(op) ? scale / *factor : scale * *factor;
      m.scale = scale;
      m.chain.push_back(op);
      x = op->getOperand(0);
      continue;
    }
    if (m.softcap && isa<MaximumOp, AddOp, WhereOp>(op))
      return std::nullopt; // masked before the cap: -inf would be capped
    if (auto maximum = dyn_cast<MaximumOp>(op)) {
      // Hugging Face's clamp at the lowest value: nothing to a softmax.
      std::optional<double> floor = scalarConstant(maximum.getRhs());
      if (!floor || *floor > kHidden)
        return std::nullopt;
      m.chain.push_back(op);
      x = maximum.getLhs();
      continue;
    }
    if (isa<AddOp, WhereOp>(op)) {
      Value input = peelMask(x, tq, tk, m);
      if (!input) {
        // An all-zero addend (a mask that hides nothing) of any shape.
        auto add = dyn_cast<AddOp>(op);
        auto constant =
            add ? add.getRhs().getDefiningOp<ConstantOp>() : ConstantOp();
        auto dense = constant ? dyn_cast<DenseElementsAttr>(
                                    constant.getValue())
                              : DenseElementsAttr();
        if (!dense || !dense.isSplat() ||
            !isa<FloatType>(dense.getElementType()) ||
            !dense.getSplatValue<APFloat>().isZero() ||
            typeOf(add.getLhs()) != typeOf(x))
          return std::nullopt;
        m.chain.push_back(op);
        x = add.getLhs();
        continue;
      }
      x = input;
      continue;
    }
    scoresMatmul = dyn_cast<MatmulOp>(op);
    if (!scoresMatmul || scoresMatmul.getTransposeLhs())
      return std::nullopt;
  }
  m.chain.push_back(scoresMatmul);
  // Without a scale in the scores (OPT scales the queries), it is 1.
  if (!m.scale)
    m.scale = 1.0;
  const int64_t heads = 4; // [B, H, T, D]
  m.query = peelBatchReshapes(scoresMatmul.getLhs(), heads, m.chain);
  if (!m.query)
    return std::nullopt;
  Value keyT = scoresMatmul.getRhs();
  if (scoresMatmul.getTransposeRhs()) {
    m.key = peelBatchReshapes(keyT, heads, m.chain);
  } else {
    // K^T: a transpose of the last two dimensions, on the heads or on
    // their merged reshape.
    Value k = keyT;
    auto transpose = k.getDefiningOp<TransposeOp>();
    if (!transpose)
      k = peelBatchReshapes(keyT, heads, m.chain),
      k = k ? unbroadcastHeads(k, m.chain) : k,
      transpose = k ? k.getDefiningOp<TransposeOp>() : TransposeOp();
    if (!transpose || !k.hasOneUse())
      return std::nullopt;
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t r = int64_t(perm.size());
    for (int64_t i = 0; i < r; ++i)
      if (perm[i] != (i == r - 2 ? r - 1 : i == r - 1 ? r - 2 : i))
        return std::nullopt;
    m.chain.push_back(transpose);
    m.key = peelBatchReshapes(transpose.getInput(), heads, m.chain);
  }
  if (!m.key)
    return std::nullopt;

  // Forwards: P V, back to [B, H, T, Dv].
  Value p = softmax.getResult();
  Operation *user = *p.getUsers().begin();
  if (auto reshape = dyn_cast<ReshapeOp>(user)) {
    if (!reshape.getResult().hasOneUse())
      return std::nullopt;
    m.chain.push_back(reshape);
    user = *reshape.getResult().getUsers().begin();
  }
  auto outMatmul = dyn_cast<MatmulOp>(user);
  if (!outMatmul || outMatmul.getTransposeLhs() ||
      outMatmul.getTransposeRhs() || outMatmul.getRhs() == outMatmul.getLhs())
    return std::nullopt;
  m.chain.push_back(outMatmul);
  m.value = peelBatchReshapes(outMatmul.getRhs(), heads, m.chain);
  if (!m.value)
    return std::nullopt;
  m.last = outMatmul;
  if (typeOf(outMatmul.getResult()).getRank() != heads) {
    if (!outMatmul.getResult().hasOneUse())
      return std::nullopt;
    auto back = dyn_cast<ReshapeOp>(*outMatmul.getResult().getUsers().begin());
    if (!back || typeOf(back.getResult()).getRank() != heads)
      return std::nullopt;
    m.chain.push_back(back);
    m.last = back;
  }
  m.key = unbroadcastHeads(unrepeat(m.key, m.chain), m.chain);
  m.value = unbroadcastHeads(unrepeat(m.value, m.chain), m.chain);
  return m;
}

struct TGRaiseAttention
    : public tgc::tg::impl::TGRaiseAttentionBase<TGRaiseAttention> {
  void runOnOperation() override {
    DenseMap<std::pair<Attribute, int>, std::optional<Masking>> seen;
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      std::optional<Match> m = match(softmax, seen);
      if (!m)
        continue;
      auto q = typeOf(m->query), k = typeOf(m->key), v = typeOf(m->value);
      auto result = typeOf(m->last->getResult(0));
      SmallVector<int64_t> shape(q.getShape().drop_back());
      shape.push_back(v.getShape().back());
      // The attention's own result type must be what it replaces.
      if (ArrayRef<int64_t>(shape) != result.getShape() ||
          q.getElementType() != result.getElementType() ||
          k.getShape().take_back(1) != q.getShape().take_back(1) ||
          (m->keyMask && typeOf(m->keyMask).getShape()[0] != q.getShape()[0]))
        continue;
      OpBuilder builder(m->last);
      double defaultScale = 1.0 / std::sqrt(double(q.getShape().back()));
      FloatAttr scale;
      // A scale that is the default up to the f32 rounding of the model's
      // own constant (sqrt(D) stored in f32) is left to the default.
      if (m->scale && std::abs(*m->scale - defaultScale) >
                          1e-6 * defaultScale)
        scale = builder.getF64FloatAttr(*m->scale);
      auto attention = AttentionOp::create(
          builder, m->last->getLoc(), result, /*lse=*/Type(), m->query, m->key,
          m->value, m->keyMask, builder.getBoolAttr(m->masking.causal),
          m->masking.window ? builder.getI64IntegerAttr(m->masking.window)
                            : IntegerAttr(),
          scale, /*bshd=*/BoolAttr(), /*packed=*/BoolAttr(),
          m->softcap ? builder.getF64FloatAttr(*m->softcap) : FloatAttr(),
          /*segments=*/BoolAttr());
      if (failed(mlir::verify(attention))) {
        attention->erase();
        continue;
      }
      m->last->getResult(0).replaceAllUsesWith(attention.getResult());
      raise::eraseUnused(m->chain);
    }
  }
};

} // namespace
