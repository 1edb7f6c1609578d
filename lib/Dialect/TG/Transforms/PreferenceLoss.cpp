//===- PreferenceLoss.cpp - the tg-preference-loss pass -------------------===//
//
// Preference tuning as a compiled loss. The batch holds P pairs: rows
// [0, P) the chosen answers, rows [P, 2P) the rejected answers to the same
// prompts, each row's targets -100 but on its answer's tokens (what TRL's
// trainers concatenate for one forward pass). The model's cross-entropy
// becomes one per row, over the row's piece of the classifier's input, as
// tg-chunk-loss splits it: a row's mean times its count of targets is minus
// the summed log-probability of its answer, the mean itself minus the
// averaged one. Over those, the paper's loss:
//
//   DPO (Rafailov et al., 2023), as TRL's `sigmoid` loss with label
//   smoothing e: z = (pi_c - pi_r) - (ref_c - ref_r),
//   L = -(1 - e) log sigmoid(beta z) - e log sigmoid(-beta z);
//   IPO (Azar et al., 2023): z from averaged log-probabilities,
//   L = (z - 1/(2 beta))^2;
//   SimPO (Meng et al., 2024): L = -log sigmoid(beta (pi~_c - pi~_r) - gamma);
//   ORPO (Hong et al., 2024): L = NLL(chosen answers) - beta log sigmoid(
//   (pi~_c - pi~_r) - (log(1 - exp pi~_c) - log(1 - exp pi~_r))),
//
// each a mean over the pairs. DPO's and IPO's reference is the model as
// training starts: the ops from the inputs to the classifier that the
// reference changes are cloned. With LoRA, the model with its adapters
// off: in the clone every addition of an adapter's product (a value
// computed from a lora_A or lora_B parameter) to its base's product takes
// the base's product alone. The clone reads the same frozen weights (and
// what is computed from them alone, such as a 16-bit copy, is not cloned),
// so the reference costs one more forward pass and no memory for weights.
// A trainable parameter that is not an adapter (full fine-tuning) is read
// by the clone as `reference.<name>`, a new frozen parameter that the
// runtime fills with the parameter's starting value (tg.copy_of): a frozen
// copy, as TRL deep-copies the model. The reference depends on no
// trainable parameter, so tg-autodiff gives it no backward pass.
//
// The metrics (tg.metric results after the loss) are TRL's: the rewards
// beta (pi - ref) of the chosen and rejected answers (for the
// reference-free losses beta pi~), their margin, the fraction of pairs
// whose chosen reward is the larger, and the mean log-probabilities.
//
//===----------------------------------------------------------------------===//

#include "OptionErrors.h"

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace tgc::tg {
#define GEN_PASS_DEF_TGPREFERENCELOSS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc;

namespace {

enum class Kind { DPO, IPO, SimPO, ORPO };

/// Elementwise f32 arithmetic on [P] vectors and scalars, at one location.
struct Math {
  OpBuilder &b;
  Location loc;

  Type like(Value v) { return v.getType(); }
  /// The broadcast type of a vector and a scalar (or of equal types).
  Type like(Value x, Value y) {
    return cast<RankedTensorType>(x.getType()).getRank() >=
                   cast<RankedTensorType>(y.getType()).getRank()
               ? x.getType()
               : y.getType();
  }
  Value fill(Type type, double value) {
    return tg::FillOp::create(
        b, loc, RankedTensorType::get({}, getElementTypeOrSelf(type)),
        b.getF64FloatAttr(value));
  }
  Value add(Value x, Value y) {
    return tg::AddOp::create(b, loc, like(x, y), x, y);
  }
  Value sub(Value x, Value y) {
    return tg::SubOp::create(b, loc, like(x, y), x, y);
  }
  Value mul(Value x, Value y) {
    return tg::MulOp::create(b, loc, like(x, y), x, y);
  }
  Value scale(Value x, double s) { return mul(x, fill(x.getType(), s)); }
  Value neg(Value x) { return tg::NegOp::create(b, loc, like(x), x); }
  Value exp(Value x) { return tg::ExpOp::create(b, loc, like(x), x); }
  Value log(Value x) { return tg::LogOp::create(b, loc, like(x), x); }
  Value max(Value x, Value y) {
    return tg::MaximumOp::create(b, loc, like(x, y), x, y);
  }
  Value min(Value x, Value y) {
    return tg::MinimumOp::create(b, loc, like(x, y), x, y);
  }
  Value mean(Value x) {
    return tg::ReduceMeanOp::create(
        b, loc, RankedTensorType::get({}, getElementTypeOrSelf(x.getType())), x,
        b.getDenseI64ArrayAttr({0}), /*keepdim=*/false);
  }
  /// log(1 + exp(x)) (torch's softplus, log1p inside): -log sigmoid(y) is
  /// softplus(-y).
  Value softplus(Value x) { return tg::SoftplusOp::create(b, loc, like(x), x); }
  /// 1 where x > 0, else 0, exactly: the product by 2^200 (taken as two
  /// factors of 2^100, each an f32) takes every positive f32, denormals
  /// too, to at least 2^51 before the clamp to [0, 1].
  Value positive(Value x) {
    Value big = fill(x.getType(), 0x1p100);
    Value huge = mul(mul(x, big), big);
    Value zero = fill(x.getType(), 0.0);
    Value clamped = max(huge, zero);
    return min(clamped, fill(x.getType(), 1.0));
  }
};

struct PreferenceLossPass
    : tgc::tg::impl::TGPreferenceLossBase<PreferenceLossPass> {
  using TGPreferenceLossBase::TGPreferenceLossBase;

  void runOnOperation() override {
    if (loss == "none")
      return;
    Kind kind;
    if (loss == "dpo")
      kind = Kind::DPO;
    else if (loss == "ipo")
      kind = Kind::IPO;
    else if (loss == "simpo")
      kind = Kind::SimPO;
    else if (loss == "orpo")
      kind = Kind::ORPO;
    else {
      tg::emitOptionError(getOperation(), "tg-preference-loss: unknown loss '")
          << loss << "' (none, dpo, ipo, simpo or orpo)";
      return signalPassFailure();
    }
    double b = beta != 0.0 ? double(beta) : kind == Kind::SimPO ? 2.0 : 0.1;
    if (b < 0.0 || labelSmoothing < 0.0 || labelSmoothing >= 0.5) {
      tg::emitOptionError(getOperation(), "tg-preference-loss: ")
          << (b < 0.0 ? "beta must be positive"
                      : "the label smoothing must be in [0, 0.5)");
      return signalPassFailure();
    }
    for (auto model : getOperation().getOps<func::FuncOp>())
      if (model->hasAttr(tg::TGDialect::kModelAttr))
        if (failed(rewrite(model, kind, b)))
          return signalPassFailure();
  }

  /// The per-row log-probabilities of one forward pass: summed and
  /// averaged over each row's targets, [2P] f32 each; and each row's sum of
  /// token losses and count of targets (for ORPO's NLL).
  struct RowLogps {
    Value sum, mean, lossSums, counts;
  };

  /// Splits `source` (the classifier's input [2P, T, C] when `classifier`,
  /// else the logits) and the targets by rows (`targetRows`: once), one
  /// cross-entropy each.
  RowLogps rowLogps(OpBuilder &builder, tg::CrossEntropyOp entropy,
                    tg::MatmulOp classifier, Value source, Value weight,
                    bool recompute, tg::SplitOp &targetRows) {
    Location loc = entropy.getLoc();
    auto sourceType = cast<RankedTensorType>(source.getType());
    auto targets = cast<RankedTensorType>(entropy.getTargets().getType());
    int64_t rows = targets.getShape()[0];
    int64_t perRow = targets.getNumElements() / rows;
    int64_t width = sourceType.getShape().back();
    Value flat = tg::ReshapeOp::create(
        builder, loc, sourceType.clone({rows * perRow, width}), source);
    SmallVector<Type> pieces(rows, sourceType.clone({perRow, width}));
    auto split = tg::SplitOp::create(builder, loc, pieces, flat, /*axis=*/0);
    if (!targetRows) {
      Value flatTargets = tg::ReshapeOp::create(
          builder, loc, targets.clone({rows * perRow}), entropy.getTargets());
      SmallVector<Type> targetPieces(rows, targets.clone({perRow}));
      targetRows =
          tg::SplitOp::create(builder, loc, targetPieces, flatTargets, 0);
    }
    tg::SplitOp splitTargets = targetRows;
    auto scalar = cast<RankedTensorType>(entropy.getResult().getType());
    auto f32 = RankedTensorType::get({}, builder.getF32Type());
    auto one = RankedTensorType::get({1}, builder.getF32Type());
    SmallVector<Value> means, lossSums, counts;
    for (int64_t row = 0; row < rows; ++row) {
      Value logits = split.getResult(row);
      if (classifier) {
        auto type = cast<RankedTensorType>(classifier.getType());
        auto product = tg::MatmulOp::create(
            builder, classifier.getLoc(),
            type.clone({perRow, type.getShape().back()}), logits, weight,
            /*transpose_lhs=*/false, classifier.getTransposeRhs());
        if (recompute)
          product->setAttr(tg::TGDialect::kRecomputeAttr,
                           builder.getUnitAttr());
        logits = product;
      }
      Value mean = tg::CrossEntropyOp::create(
                       builder, loc, scalar, /*logits_grad=*/Type(), logits,
                       splitTargets.getResult(row), /*grad=*/Value(),
                       entropy.getIgnoreIndexAttr(), entropy.getSoftcapAttr())
                       .getResult();
      if (scalar != f32)
        mean = tg::CastOp::create(builder, loc, f32, mean);
      Value count = tg::TargetCountOp::create(builder, loc, f32,
                                              splitTargets.getResult(row),
                                              entropy.getIgnoreIndexAttr());
      Math m{builder, loc};
      auto asVector = [&](Value v) -> Value {
        return tg::ReshapeOp::create(builder, loc, one, v);
      };
      means.push_back(asVector(mean));
      lossSums.push_back(asVector(m.mul(mean, count)));
      counts.push_back(asVector(count));
    }
    auto vector = RankedTensorType::get({rows}, builder.getF32Type());
    auto concat = [&](ArrayRef<Value> parts) -> Value {
      return tg::ConcatOp::create(builder, loc, vector, parts, /*axis=*/0);
    };
    Math m{builder, loc};
    RowLogps out;
    out.lossSums = concat(lossSums);
    out.counts = concat(counts);
    out.sum = m.neg(out.lossSums);
    out.mean = m.neg(concat(means));
    return out;
  }

  /// Erases the ops defining `values` that nothing reads, then those of
  /// their operands that they were the last to read. (The defining ops are
  /// taken first: erasing one may erase another value's.)
  static void eraseDead(ArrayRef<Value> values) {
    SmallVector<Operation *> work;
    for (Value value : values)
      if (Operation *def = value ? value.getDefiningOp() : nullptr)
        work.push_back(def);
    llvm::SmallPtrSet<Operation *, 16> erased;
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (erased.contains(op) || !op->use_empty())
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          work.push_back(def);
      erased.insert(op);
      op->erase();
    }
  }

  /// Whether `arg` is a LoRA adapter's parameter (tg-lora's lora_A or
  /// lora_B).
  static bool isAdapter(func::FuncOp model, unsigned arg) {
    if (model.getArgAttr(arg, tg::TGDialect::kLoraAttr))
      return true;
    auto name =
        model.getArgAttrOfType<StringAttr>(arg, tg::TGDialect::kParamAttr);
    return name && name.getValue().ends_with(".lora_A.weight");
  }

  /// `value` computed by the reference model, cloning before `before`
  /// only the ops the reference changes: with LoRA adapters, the model with
  /// them off; without, the model with each trainable parameter replaced
  /// by a frozen copy of its starting value (`reference.<name>`, tg.copy_of
  /// the parameter). Each value of the model is then either the same for
  /// the reference (an input, a frozen weight, or computed from those
  /// alone: read as it is), an adapter's contribution (a lora_A or lora_B
  /// parameter, or computed from one: absent), or changed (mapped to its
  /// clone); `base + contribution` is `base`. Null (after an error) when a
  /// contribution reaches `value` otherwise.
  SmallVector<Value> referenceOf(func::FuncOp model, ValueRange values,
                                 Operation *before) {
    Block &body = model.getBody().front();
    llvm::DenseSet<Value> absent;
    for (BlockArgument arg : body.getArguments())
      if (isAdapter(model, arg.getArgNumber()))
        absent.insert(arg);
    IRMapping changed;
    addFrozenCopies(model, changed);
    if (absent.empty() && changed.getValueMap().empty()) {
      model.emitError("tg-preference-loss: --loss=")
          << loss << " trains @" << model.getSymName()
          << ", which has no trainable parameter";
      return {};
    }
    // The ops `value` depends on.
    llvm::DenseSet<Operation *> needed;
    SmallVector<Value> work(values);
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && needed.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
    OpBuilder builder(before);
    for (Operation &op : body.without_terminator()) {
      if (&op == before)
        break;
      if (!needed.contains(&op))
        continue;
      auto isAbsent = [&](Value v) { return absent.contains(v); };
      if (llvm::any_of(op.getOperands(), isAbsent)) {
        auto sum = dyn_cast<tg::AddOp>(op);
        if (sum && isAbsent(sum.getLhs()) != isAbsent(sum.getRhs())) {
          Value base = isAbsent(sum.getLhs()) ? sum.getRhs() : sum.getLhs();
          if (base.getType() == sum.getType()) {
            changed.map(sum.getResult(), changed.lookupOrDefault(base));
            continue;
          }
        }
        for (Value result : op.getResults())
          absent.insert(result);
        continue;
      }
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return changed.contains(v); }))
        builder.clone(op, changed);
    }
    if (llvm::any_of(values, [&](Value v) { return absent.contains(v); })) {
      model.emitError("tg-preference-loss: the LoRA adapters of @")
          << model.getSymName()
          << " reach the classifier otherwise than added to their base's "
             "product; the model with its adapters off cannot be formed";
      return {};
    }
    SmallVector<Value> mapped;
    for (Value v : values)
      mapped.push_back(changed.lookupOrDefault(v));
    return mapped;
  }

  /// A frozen copy of each trainable parameter but the adapters, mapped
  /// from it (a model fully fine-tuned, or one whose base parameters train
  /// beside its adapters).
  void addFrozenCopies(func::FuncOp model, IRMapping &copies) {
    MLIRContext *ctx = model.getContext();
    unsigned count = model.getNumArguments();
    for (unsigned i = 0; i < count; ++i) {
      auto name =
          model.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kParamAttr);
      if (!name || model.getArgAttr(i, tg::TGDialect::kFrozenAttr) ||
          isAdapter(model, i))
        continue;
      std::string copyName = ("reference." + name.getValue()).str();
      NamedAttrList attrs;
      attrs.set(tg::TGDialect::kParamAttr, StringAttr::get(ctx, copyName));
      attrs.set(tg::TGDialect::kFrozenAttr, UnitAttr::get(ctx));
      attrs.set(tg::TGDialect::kCopyOfAttr, name);
      unsigned index = model.getNumArguments();
      (void)model.insertArgument(index, model.getArgument(i).getType(),
                                 attrs.getDictionary(ctx),
                                 model.getArgument(i).getLoc());
      copies.map(model.getArgument(i), model.getArgument(index));
    }
  }

  LogicalResult rewrite(func::FuncOp model, Kind kind, double b) {
    auto task = model->getAttrOfType<StringAttr>(tg::TGDialect::kTaskAttr);
    if (task && task.getValue() != tg::TGDialect::kTaskCausalLM)
      return model.emitError("tg-preference-loss: --loss=")
             << loss << " tunes a causal language model; @"
             << model.getSymName() << " is a '" << task.getValue() << "' model";
    SmallVector<tg::CrossEntropyOp> losses;
    model.walk([&](tg::CrossEntropyOp op) { losses.push_back(op); });
    if (losses.size() != 1)
      return model.emitError("tg-preference-loss: @")
             << model.getSymName() << " has " << losses.size()
             << " tg.cross_entropy ops; a preference loss replaces one (the "
                "language model's)";
    tg::CrossEntropyOp entropy = losses.front();
    auto targets = cast<RankedTensorType>(entropy.getTargets().getType());
    auto logitsType = cast<RankedTensorType>(entropy.getLogits().getType());
    if (targets.getRank() < 2 || logitsType.getRank() != targets.getRank() + 1)
      return entropy.emitOpError("tg-preference-loss: needs the targets by "
                                 "row, [rows, T], and their logits, found ")
             << targets << " and " << logitsType;
    int64_t rows = targets.getShape()[0];
    if (rows < 2 || rows % 2 != 0)
      return entropy.emitOpError("tg-preference-loss: the batch holds pairs "
                                 "of answers, the chosen ones first: it needs "
                                 "an even number of rows, found ")
             << rows;
    int64_t pairs = rows / 2;

    // The classifier's product is split with the rows when it is a matmul
    // by a matrix read by nothing else; otherwise the logits are.
    auto classifier = entropy.getLogits().getDefiningOp<tg::MatmulOp>();
    if (!classifier || !classifier->hasOneUse() ||
        classifier.getTransposeLhs() ||
        cast<RankedTensorType>(classifier.getRhs().getType()).getRank() != 2)
      classifier = {};
    Value source = classifier ? classifier.getLhs() : entropy.getLogits();

    OpBuilder builder(entropy);
    Location loc = entropy.getLoc();
    tg::SplitOp targetRows;
    Value weight = classifier ? classifier.getRhs() : Value();
    RowLogps policy = rowLogps(builder, entropy, classifier, source, weight,
                               recomputeLogits, targetRows);
    RowLogps reference;
    if (kind == Kind::DPO || kind == Kind::IPO) {
      // The classifier's input and its weight (trained too, in full
      // fine-tuning) as the reference computes them.
      SmallVector<Value> computed = {source};
      if (weight)
        computed.push_back(weight);
      SmallVector<Value> ref = referenceOf(model, computed, entropy);
      if (ref.empty())
        return failure();
      builder.setInsertionPoint(entropy);
      reference =
          rowLogps(builder, entropy, classifier, ref[0],
                   weight ? ref[1] : Value(), /*recompute=*/false, targetRows);
    }

    Math m{builder, loc};
    auto half = RankedTensorType::get({pairs}, builder.getF32Type());
    auto halves = [&](Value v) {
      auto split = tg::SplitOp::create(builder, loc,
                                       SmallVector<Type>{half, half}, v, 0);
      return std::pair<Value, Value>{split.getResult(0), split.getResult(1)};
    };
    SmallVector<std::pair<std::string, Value>> metrics;
    Value result;
    bool averaged = kind != Kind::DPO;
    auto [chosen, rejected] = halves(averaged ? policy.mean : policy.sum);
    if (kind == Kind::DPO || kind == Kind::IPO) {
      auto [refChosen, refRejected] =
          halves(averaged ? reference.mean : reference.sum);
      // (Each op made in its own statement: the IR's order is the code's.)
      Value policyMargin = m.sub(chosen, rejected);
      Value refMargin = m.sub(refChosen, refRejected);
      Value z = m.sub(policyMargin, refMargin);
      if (kind == Kind::DPO) {
        // -log sigmoid(y) = softplus(-y).
        Value bz = m.scale(z, b);
        Value terms = m.softplus(m.neg(bz));
        if (labelSmoothing != 0.0) {
          Value kept = m.scale(terms, 1.0 - labelSmoothing);
          Value flipped = m.scale(m.softplus(bz), labelSmoothing);
          terms = m.add(kept, flipped);
        }
        result = m.mean(terms);
      } else {
        Value d = m.sub(z, m.fill(z.getType(), 1.0 / (2.0 * b)));
        result = m.mean(m.mul(d, d));
      }
      Value rewardChosen = m.scale(m.sub(chosen, refChosen), b);
      Value rewardRejected = m.scale(m.sub(rejected, refRejected), b);
      metrics.push_back({"rewards/chosen", m.mean(rewardChosen)});
      metrics.push_back({"rewards/rejected", m.mean(rewardRejected)});
      Value margin = m.sub(rewardChosen, rewardRejected);
      metrics.push_back({"rewards/accuracies", m.mean(m.positive(margin))});
      metrics.push_back({"rewards/margins", m.mean(margin)});
      metrics.push_back({"logps/chosen", m.mean(chosen)});
      metrics.push_back({"logps/rejected", m.mean(rejected)});
      metrics.push_back({"logps/ref_chosen", m.mean(refChosen)});
      metrics.push_back({"logps/ref_rejected", m.mean(refRejected)});
    } else {
      Value rewardChosen = m.scale(chosen, b);
      Value rewardRejected = m.scale(rejected, b);
      Value margin = m.sub(rewardChosen, rewardRejected);
      if (kind == Kind::SimPO) {
        Value y = m.sub(margin, m.fill(margin.getType(), gamma));
        result = m.mean(m.softplus(m.neg(y)));
      } else {
        // log(1 - exp(pi~)) of each answer: the log of its odds' denominator.
        Value one = m.fill(chosen.getType(), 1.0);
        Value difference = m.sub(chosen, rejected);
        Value denominatorChosen = m.log(m.sub(one, m.exp(chosen)));
        Value denominatorRejected = m.log(m.sub(one, m.exp(rejected)));
        Value logOdds =
            m.sub(difference, m.sub(denominatorChosen, denominatorRejected));
        Value logSigmoid = m.neg(m.softplus(m.neg(logOdds)));
        // The NLL of the chosen answers: their token losses' mean.
        auto [lossChosen, lossRejected] = halves(policy.lossSums);
        auto [countChosen, countRejected] = halves(policy.counts);
        (void)lossRejected;
        (void)countRejected;
        auto scalar = RankedTensorType::get({}, builder.getF32Type());
        auto total = [&](Value v) -> Value {
          return tg::ReduceSumOp::create(builder, loc, scalar, v,
                                         builder.getDenseI64ArrayAttr({0}),
                                         /*keepdim=*/false);
        };
        Value lossTotal = total(lossChosen);
        Value countTotal = total(countChosen);
        Value count = m.max(countTotal, m.fill(scalar, 1.0));
        Value nll = tg::DivOp::create(builder, loc, scalar, lossTotal, count);
        Value ratio = m.mean(logSigmoid);
        result = m.sub(nll, m.scale(ratio, b));
        metrics.push_back({"nll_loss", nll});
        metrics.push_back({"log_odds_ratio", ratio});
        metrics.push_back({"log_odds_chosen", m.mean(logOdds)});
      }
      metrics.insert(metrics.begin(),
                     {{"rewards/chosen", m.mean(rewardChosen)},
                      {"rewards/rejected", m.mean(rewardRejected)},
                      {"rewards/accuracies", m.mean(m.positive(margin))},
                      {"rewards/margins", m.mean(margin)},
                      {"logps/chosen", m.mean(chosen)},
                      {"logps/rejected", m.mean(rejected)}});
    }

    // What one loss does not read (the averaged log-probabilities of DPO,
    // the sums of the others, the token losses but for ORPO).
    SmallVector<Value> unread;
    for (const RowLogps &logps : {policy, reference})
      for (Value v : {logps.sum, logps.mean, logps.lossSums, logps.counts})
        if (v && v.use_empty())
          unread.push_back(v);
    eraseDead(unread);

    // The loss in the model's type, where the cross-entropy was used.
    Type lossType = entropy.getResult().getType();
    if (result.getType() != lossType)
      result = tg::CastOp::create(builder, loc, lossType, result);
    entropy.getResult().replaceAllUsesWith(result);
    entropy->erase();
    if (classifier)
      classifier->erase();

    model->setAttr(tg::TGDialect::kPreferenceAttr, builder.getStringAttr(loss));
    // The metrics, after the loss.
    Block &body = model.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> results(ret.getOperands());
    unsigned first = results.size();
    for (auto &[name, value] : metrics)
      results.push_back(value);
    ret->setOperands(results);
    model.setType(FunctionType::get(model.getContext(), body.getArgumentTypes(),
                                    ValueRange(results).getTypes()));
    for (auto [i, metric] : llvm::enumerate(metrics))
      model.setResultAttr(first + i, tg::TGDialect::kMetricAttr,
                          builder.getStringAttr(metric.first));
    return success();
  }
};

} // namespace
