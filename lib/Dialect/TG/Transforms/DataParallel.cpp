//===- DataParallel.cpp - the tg-data-parallel pass -----------------------===//
//
// Rewrites a training step into the step every rank of a data-parallel job
// runs on its part of the batch, on the optimizer seam: gradients are
// computed, then combined across ranks, then applied.
//
// - ddp averages each gradient (in buckets) before anything reads it.
// - zero1/zero2 split each update across ranks. A parameter of n elements
//   is viewed flat and zero-padded to N * S elements (S a multiple of the
//   update's granule: 1, or the block size of 8-bit state); rank r owns
//   elements [r S, (r + 1) S). A bucket of gradients is packed as
//   [N, S_1 + S_2 + ...] (row r: every member's part r), so one
//   reduce-scatter leaves rank r exactly its parts; the rank updates its
//   parts with state of S elements per parameter, and one all-gather of
//   the packed new parts rebuilds every whole parameter on every rank.
//   Padding is zero in the gradient, the parameter and the state, and
//   every update keeps zeros zero, so it never leaks into real elements.
//   An update that rounds stochastically (bf16 master weights) takes the
//   rank's part number (a tg.shard of [0, 1, ..., N - 1]), so each element
//   draws the bits of its index in the whole, as in one process.
//
// - zero3 also splits the parameters: each parameter argument becomes this
//   rank's part (S elements, laid out as above), the update's new part is
//   what the step returns, and each pass that reads a parameter first
//   all-gathers it (in buckets, in the order the pass first reads them):
//   the forward pass, then the backward pass again, so no whole parameter
//   lives from one pass to the other. The evaluation function (tg.model)
//   reads the same parts.
//
// - Hybrid sharding (shard-group K, dividing N; FSDP's HYBRID_SHARD): the
//   ZeRO modes split across each group of K consecutive ranks instead of
//   all N (rank r holds part r mod K), and the N / K groups are replicas.
//   A bucket's gradients are reduce-scattered within the group, then each
//   part averaged across the replicas holding it (an all-reduce over the
//   N / K ranks K apart, on 1 / K of the bytes); gathers stay within the
//   group, so the parameters' traffic stays on the group's links.
//
// - Gradient accumulation (tg-grad-accum's apply step and micro-step):
//   the apply step divides sums by the job's count of targets (each
//   rank's count and summed loss are summed over the ranks first), so the
//   gradients' collectives sum where they otherwise average, and every
//   mode trains as one process on the concatenated micro-batches, however
//   unevenly ignored targets fall. ddp and zero1 accumulate whole
//   gradients on each rank and combine them once a step; zero2 and zero3
//   keep each accumulator as the rank's part: the micro-step
//   reduce-scatters (sums) each bucket of its gradients as the backward
//   pass completes it and adds the rank's part, as DeepSpeed's ZeRO-2/3
//   do, and zero3's micro-step gathers the parameters like the step.
//
// The collectives are inserted where the mode places them (ddp, zero2 and
// zero3: right after the backward pass completes a bucket; zero1: after the
// whole backward pass), and a stable topological sort then moves the
// consumers of the gradients (loss scaling's unscale, clipping) after them.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/ProgramLimits.h"

#include "GatherParameters.h"
#include "OptionErrors.h"

#include "TrainStep.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

#define DEBUG_TYPE "tg-data-parallel"

namespace tgc::tg {
#define GEN_PASS_DEF_TGDATAPARALLEL
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace tgc::tg

using namespace mlir;
using namespace tgc::tg;

namespace {

using Mode = ParallelMode;

struct Config {
  Mode mode = Mode::DDP;
  int64_t worldSize = 1;
  /// The ranks a ZeRO mode splits across (the world size, or the shard
  /// group of hybrid sharding).
  int64_t shardGroup = 1;
  int64_t bucketBytes = 0;
  /// The parameters of the 4-bit weights (codes and scales, as each codes'
  /// tg.quant4 names them).
  llvm::StringSet<> quantized;
};

/// A gradient as the backward pass leaves it, the ops that carry it to its
/// optimizer update (loss scaling's unscale, a cast, clipping's scale: each
/// elementwise with scalar other operands) and the update.
struct Member {
  OptimizerUpdateOpInterface update;
  Value raw;
  SmallVector<Operation *> chain;
  int64_t elements = 0;
  /// ZeRO: elements per rank, and the granule of the update.
  int64_t shard = 0;
  int64_t granule = 1;
};

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isScalar(Value value) { return tensorType(value).getRank() == 0; }

/// Whether `op` carries a gradient to its update elementwise: its operand
/// 0 is the gradient and every other operand a scalar.
bool isGradientTransform(Operation *op) {
  if (!isa<UnscaleOp, CastOp, MulOp>(op))
    return false;
  if (tensorType(op->getResult(0)).getShape() !=
      tensorType(op->getOperand(0)).getShape())
    return false;
  return llvm::all_of(op->getOperands().drop_front(),
                      [](Value v) { return isScalar(v); });
}

int64_t elementBytes(Value value) {
  return getElementByteSize(tensorType(value).getElementType());
}

/// Whether zero3 splits the frozen parameter `name` of `type`: a float
/// tensor (not a scalar), or the codes or scales of a 4-bit weight (the
/// runtime quantizes the weight whole and keeps each rank's part of its
/// tensors; the products read gathered copies, as FSDP-QLoRA shards a
/// 4-bit base). Codes no tg.quant4 names stay whole, for the lowering to
/// refuse where a product reads them.
bool isSplittable(RankedTensorType type, StringRef name, const Config &config) {
  return type.getRank() >= 1 && (isa<FloatType>(type.getElementType()) ||
                                 config.quantized.contains(name));
}

/// `value` reshaped to `shape` (itself when it has that shape).
Value reshapeTo(OpBuilder &builder, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  auto type = tensorType(value);
  if (type.getShape() == shape)
    return value;
  return ReshapeOp::create(builder, loc, type.clone(shape), value);
}

/// `value` flat, zero-padded to `size` elements.
Value flatPadded(OpBuilder &builder, Location loc, Value value, int64_t size) {
  auto type = tensorType(value);
  int64_t elements = type.getNumElements();
  Value flat = reshapeTo(builder, loc, value, {elements});
  if (size == elements)
    return flat;
  Value zeros = FillOp::create(builder, loc, type.clone({size - elements}),
                               builder.getF64FloatAttr(0.0));
  return ConcatOp::create(builder, loc, type.clone({size}),
                          ValueRange{flat, zeros},
                          builder.getI64IntegerAttr(0));
}

/// Puts `builder` after the latest definition among `values` (at the
/// start of `body` when all are arguments).
void setInsertionAfterAll(OpBuilder &builder, Block &body,
                          ArrayRef<Value> values) {
  Operation *last = nullptr;
  for (Value value : values)
    if (Operation *def = value.getDefiningOp())
      if (!last || last->isBeforeInBlock(def))
        last = def;
  if (last)
    builder.setInsertionPointAfter(last);
  else
    builder.setInsertionPointToStart(&body);
}

/// This rank's parts of a bucket of gradients `raws` (`shards[i]` elements
/// a part of `raws[i]`), combined by `kind` over the shard group and then
/// over the replicas holding the same parts. A bucket alone is its flat,
/// padded gradient; several are packed as [N, S_1 + S_2 + ...], so one
/// reduce-scatter leaves each rank exactly its parts.
SmallVector<Value> scatterBucket(OpBuilder &builder, Location loc,
                                 ArrayRef<Value> raws, ArrayRef<int64_t> shards,
                                 const Config &config, ReduceKind kind) {
  int64_t n = config.shardGroup;
  int64_t replicas = config.worldSize / config.shardGroup;
  SmallVector<Value> flats;
  int64_t packedShard = 0;
  for (auto [raw, shard] : llvm::zip(raws, shards)) {
    flats.push_back(flatPadded(builder, loc, raw, n * shard));
    packedShard += shard;
  }
  auto elementType = tensorType(raws.front()).getElementType();
  Value packed = flats.front();
  if (flats.size() > 1) {
    SmallVector<Value> rows;
    for (auto [flat, shard] : llvm::zip(flats, shards))
      rows.push_back(reshapeTo(builder, loc, flat, {n, shard}));
    packed = ConcatOp::create(
        builder, loc, RankedTensorType::get({n, packedShard}, elementType),
        rows, builder.getI64IntegerAttr(1));
    packed = reshapeTo(builder, loc, packed, {n * packedShard});
  }
  auto reduce = ReduceKindAttr::get(builder.getContext(), kind);
  Value mine = ReduceScatterOp::create(
      builder, loc, RankedTensorType::get({packedShard}, elementType), packed,
      reduce, builder.getI64IntegerAttr(n), builder.getI64IntegerAttr(1));
  // Hybrid: the group's combination of this part, combined with the
  // replicas that hold the same part (a mean of means of equal counts).
  if (replicas > 1)
    mine = AllReduceOp::create(builder, loc, mine.getType(), mine, reduce,
                               builder.getI64IntegerAttr(replicas),
                               builder.getI64IntegerAttr(n));
  if (raws.size() == 1)
    return {mine};
  SmallVector<Type> types;
  for (int64_t shard : shards)
    types.push_back(RankedTensorType::get({shard}, elementType));
  return llvm::to_vector_of<Value>(
      SplitOp::create(builder, loc, types, mine, builder.getI64IntegerAttr(0))
          .getResults());
}

/// The argument of `function` marked `tg.state = name`, or null.
BlockArgument stateArgument(func::FuncOp function, StringRef name) {
  for (BlockArgument arg : function.getArguments())
    if (auto state = function.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), TGDialect::kStateAttr);
        state && state.getValue() == name)
      return arg;
  return {};
}

class Rewriter {
public:
  Rewriter(func::FuncOp step, const Config &config)
      : step(step), config(config), builder(step.getContext()),
        loc(step.getLoc()), body(step.getBody().front()) {}

  LogicalResult run();
  /// zero3: the parameters split (after run()).
  ArrayRef<SplitParam> getSplitParams() const { return splitParams; }
  /// zero2/zero3 with accumulation: each accumulator made a part, by name,
  /// and its elements a part (after run()).
  const llvm::StringMap<int64_t> &getAccumulatorShards() const {
    return accumulatorShards;
  }

private:
  LogicalResult collectMembers();
  SmallVector<SmallVector<Member *>> makeBuckets();
  void averageBuckets(ArrayRef<SmallVector<Member *>> buckets);
  LogicalResult shardParameters();
  LogicalResult shardBuckets(ArrayRef<SmallVector<Member *>> buckets);
  LogicalResult shardUpdate(Member &member, Value gradShard);
  LogicalResult rewriteReductions();
  void averageLoss();
  LogicalResult sumAccumulation();
  FailureOr<Value> accumulatedPart(Member &member);

  /// Gradient accumulation's apply step: its gradients are sums over the
  /// job divided by the job's count, combined by summing.
  bool accumulating() { return step->hasAttr(TGDialect::kGradAccumAttr); }
  /// zero2 and zero3 accumulate parts (the micro-step reduce-scatters).
  bool accumulatesParts() {
    return accumulating() &&
           (config.mode == Mode::Zero2 || config.mode == Mode::Zero3);
  }
  ReduceKind gradientReduction() {
    return accumulating() ? ReduceKind::Sum : ReduceKind::Mean;
  }
  void setInsertionAfterAll(ArrayRef<Value> values) {
    ::setInsertionAfterAll(builder, body, values);
  }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    return reshapeTo(builder, loc, value, shape);
  }
  Value flatPadded(Value value, int64_t size) {
    return ::flatPadded(builder, loc, value, size);
  }
  /// Every rank of the job.
  IntegerAttr worldSizeAttr() {
    return builder.getI64IntegerAttr(config.worldSize);
  }
  /// The ranks whose parts make a whole: the job, or this rank's shard
  /// group.
  IntegerAttr groupSizeAttr() {
    return builder.getI64IntegerAttr(config.shardGroup);
  }
  IntegerAttr strideAttr(int64_t stride) {
    return builder.getI64IntegerAttr(stride);
  }
  Value rankPart();

  func::FuncOp step;
  const Config &config;
  OpBuilder builder;
  Location loc;
  Block &body;
  SmallVector<Member> members;
  /// ZeRO: the value each chain value has on this rank's part.
  IRMapping shardOf;
  /// New types and tg.shard_of of the state arguments made parts.
  llvm::MapVector<BlockArgument, SmallVector<int64_t>> shardedArgs;
  SmallVector<SplitParam> splitParams;
  llvm::StringMap<int64_t> accumulatorShards;
  SmallVector<Operation *> toErase;
  /// This rank's part number, once an update needs it.
  Value partNumber;
  /// Erased after toErase (whose ops read them).
  SmallVector<Operation *> divisions;
};

LogicalResult Rewriter::collectMembers() {
  for (Operation &op : body) {
    auto update = dyn_cast<OptimizerUpdateOpInterface>(&op);
    if (!update)
      continue;
    Member member;
    member.update = update;
    member.elements = tensorType(update.getParam()).getNumElements();
    Value value = update.getGrad();
    // Back through the transforms, as long as nothing else but a global
    // reduction over gradients (a norm, a finiteness check) reads the
    // value before them.
    while (Operation *def = value.getDefiningOp()) {
      if (!isGradientTransform(def) ||
          !llvm::all_of(def->getOperand(0).getUsers(), [&](Operation *user) {
            return user == def || isa<GlobalNormOp, AllFiniteOp>(user);
          }))
        break;
      member.chain.push_back(def);
      value = def->getOperand(0);
    }
    std::reverse(member.chain.begin(), member.chain.end());
    member.raw = value;
    if (config.mode != Mode::DDP) {
      member.granule = update.getShardGranule();
      if (member.granule <= 0)
        return op.emitOpError("cannot be split across ranks (its state is "
                              "not laid out element by element with the "
                              "parameter); tg-data-parallel ")
               << choiceName(config.mode)
               << " needs an elementwise or blockwise optimizer: use ddp, "
                  "or adamw or sgd";
      int64_t unit = config.shardGroup * member.granule;
      member.shard = (member.elements + unit - 1) / unit * member.granule;
    }
    members.push_back(std::move(member));
  }
  if (members.empty())
    return step.emitOpError("has no optimizer update; run tg-data-parallel "
                            "after tg-optimizer");
  llvm::SmallPtrSet<Value, 16> seen;
  for (Member &member : members)
    if (!seen.insert(member.raw).second)
      return member.update->emitOpError(
          "shares its gradient with another update; tg-data-parallel needs "
          "one gradient per update");
  return success();
}

/// Buckets in the order the backward pass completes the gradients, each of
/// one gradient element type (and one parameter type under ZeRO) and at
/// most bucketBytes (a larger gradient is a bucket alone).
SmallVector<SmallVector<Member *>> Rewriter::makeBuckets() {
  SmallVector<Member *> order;
  for (Member &member : members)
    order.push_back(&member);
  std::stable_sort(order.begin(), order.end(), [&](Member *a, Member *b) {
    Operation *x = a->raw.getDefiningOp(), *y = b->raw.getDefiningOp();
    if (!x || !y)
      return !x && y; // arguments first
    return x->isBeforeInBlock(y);
  });
  struct Open {
    SmallVector<Member *> members;
    int64_t bytes = 0;
  };
  llvm::MapVector<std::pair<Type, Type>, Open> open;
  SmallVector<SmallVector<Member *>> buckets;
  for (Member *member : order) {
    Type gradType = tensorType(member->raw).getElementType();
    Type paramType = config.mode == Mode::DDP
                         ? Type()
                         : tensorType(member->update.getParam()).getElementType();
    int64_t count = config.mode == Mode::DDP
                        ? member->elements
                        : member->shard * config.shardGroup;
    int64_t bytes = count * elementBytes(member->raw);
    Open &bucket = open[{gradType, paramType}];
    if (!bucket.members.empty() && bucket.bytes + bytes > config.bucketBytes) {
      buckets.push_back(std::move(bucket.members));
      bucket = Open();
    }
    bucket.members.push_back(member);
    bucket.bytes += bytes;
  }
  for (auto &[key, bucket] : open)
    if (!bucket.members.empty())
      buckets.push_back(std::move(bucket.members));
  return buckets;
}

void Rewriter::averageBuckets(ArrayRef<SmallVector<Member *>> buckets) {
  auto reduce = ReduceKindAttr::get(builder.getContext(), gradientReduction());
  for (const SmallVector<Member *> &bucket : buckets) {
    SmallVector<Value> raws;
    for (Member *member : bucket)
      raws.push_back(member->raw);
    setInsertionAfterAll(raws);
    if (bucket.size() == 1) {
      Value raw = bucket.front()->raw;
      auto reduced =
          AllReduceOp::create(builder, loc, raw.getType(), raw, reduce,
                              worldSizeAttr(), strideAttr(1));
      raw.replaceAllUsesExcept(reduced.getResult(), reduced);
      continue;
    }
    // One flat buffer: [g_1..., g_2..., ...]. The uses to redirect are
    // taken before the packing adds its own.
    SmallVector<SmallVector<OpOperand *>> uses;
    for (Value raw : raws)
      uses.push_back(llvm::to_vector(llvm::make_pointer_range(raw.getUses())));
    SmallVector<Value> flats;
    SmallVector<Type> pieceTypes;
    int64_t total = 0;
    for (Value raw : raws) {
      int64_t elements = tensorType(raw).getNumElements();
      flats.push_back(reshape(raw, {elements}));
      pieceTypes.push_back(tensorType(raw).clone({elements}));
      total += elements;
    }
    auto flatType = tensorType(raws.front()).clone({total});
    Value packed = ConcatOp::create(builder, loc, flatType, flats,
                                    builder.getI64IntegerAttr(0));
    Value reduced = AllReduceOp::create(builder, loc, flatType, packed, reduce,
                                        worldSizeAttr(), strideAttr(1));
    auto pieces = SplitOp::create(builder, loc, pieceTypes, reduced,
                                  builder.getI64IntegerAttr(0));
    for (auto [raw, piece, rawUses] :
         llvm::zip(raws, pieces.getResults(), uses)) {
      Value whole = reshape(piece, tensorType(raw).getShape());
      for (OpOperand *use : rawUses)
        use->set(whole);
    }
  }
}

LogicalResult Rewriter::shardBuckets(ArrayRef<SmallVector<Member *>> buckets) {
  int64_t n = config.shardGroup;
  SmallVector<Value> allRaws;
  for (Member &member : members)
    allRaws.push_back(member.raw);
  for (const SmallVector<Member *> &bucket : buckets) {
    SmallVector<Value> gradShards;
    int64_t packedShard = 0;
    for (Member *member : bucket)
      packedShard += member->shard;
    if (accumulatesParts()) {
      // The micro-steps reduce-scattered the gradients already.
      for (Member *member : bucket) {
        FailureOr<Value> part = accumulatedPart(*member);
        if (failed(part))
          return failure();
        gradShards.push_back(*part);
      }
    } else {
      // Reduce-scatter: zero2 as soon as the bucket is complete, zero1
      // after the whole backward pass.
      SmallVector<Value> raws;
      SmallVector<int64_t> shards;
      for (Member *member : bucket) {
        raws.push_back(member->raw);
        shards.push_back(member->shard);
      }
      setInsertionAfterAll(config.mode != Mode::Zero1
                               ? ArrayRef<Value>(raws)
                               : ArrayRef<Value>(allRaws));
      gradShards = scatterBucket(builder, loc, raws, shards, config,
                                 gradientReduction());
    }

    // Each rank updates its parts.
    SmallVector<Value> newParts;
    for (auto [member, gradShard] : llvm::zip(bucket, gradShards)) {
      if (failed(shardUpdate(*member, gradShard)))
        return failure();
      newParts.push_back(shardOf.lookup(member->update.getNewParam()));
    }
    if (config.mode == Mode::Zero3) {
      // The step returns the new parts.
      for (auto [member, part] : llvm::zip(bucket, newParts))
        member->update.getNewParam().replaceAllUsesWith(part);
      continue;
    }

    // All-gather the new parameter parts and rebuild each parameter.
    setInsertionAfterAll(newParts);
    auto paramElement =
        tensorType(bucket.front()->update.getParam()).getElementType();
    Value parts = newParts.front();
    if (newParts.size() > 1)
      parts = ConcatOp::create(
          builder, loc, RankedTensorType::get({packedShard}, paramElement),
          newParts, builder.getI64IntegerAttr(0));
    Value gathered = AllGatherOp::create(
        builder, loc, RankedTensorType::get({n * packedShard}, paramElement),
        parts, groupSizeAttr(), strideAttr(1));
    SmallVector<Value> columns = {gathered};
    if (bucket.size() > 1) {
      SmallVector<Type> types;
      for (Member *member : bucket)
        types.push_back(RankedTensorType::get({n, member->shard}, paramElement));
      columns = llvm::to_vector_of<Value>(
          SplitOp::create(builder, loc, types,
                          reshape(gathered, {n, packedShard}),
                          builder.getI64IntegerAttr(1))
              .getResults());
    }
    for (auto [member, column] : llvm::zip(bucket, columns)) {
      Value flat = reshape(column, {n * member->shard});
      if (n * member->shard != member->elements)
        flat = SliceOp::create(
            builder, loc, RankedTensorType::get({member->elements}, paramElement),
            flat, builder.getDenseI64ArrayAttr({0}));
      auto paramType = tensorType(member->update.getParam());
      Value whole = reshape(flat, paramType.getShape());
      member->update.getNewParam().replaceAllUsesWith(whole);
    }
  }
  return success();
}

/// zero2/zero3 with accumulation: `member`'s gradient is its accumulator
/// divided by the job's count; the accumulator becomes this rank's part
/// (the micro-steps add their reduce-scattered parts into it), and so do
/// the division and the zeros the step resets it to.
FailureOr<Value> Rewriter::accumulatedPart(Member &member) {
  auto division = member.raw.getDefiningOp<DivOp>();
  auto sum =
      division ? dyn_cast<BlockArgument>(division.getLhs()) : BlockArgument();
  StringAttr name = sum && sum.getOwner() == &body
                        ? step.getArgAttrOfType<StringAttr>(
                              sum.getArgNumber(), TGDialect::kStateAttr)
                        : StringAttr();
  if (!name || !name.getValue().starts_with(TGDialect::kGradAccumPrefix) ||
      !isScalar(division.getRhs()) || !sum.hasOneUse() ||
      tensorType(sum).getNumElements() != member.elements)
    return member.update->emitOpError(
        "reads a gradient that is not an accumulator divided by a count; "
        "tg-data-parallel expects tg-grad-accum's apply step");
  auto whole = tensorType(sum);
  auto partType = whole.clone({member.shard});
  shardedArgs[sum] = llvm::to_vector(whole.getShape());
  sum.setType(partType);
  accumulatorShards[name.getValue()] = member.shard;
  builder.setInsertionPointAfter(division);
  Value part = DivOp::create(builder, loc, partType, sum, division.getRhs());
  divisions.push_back(division);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i) {
    auto updated =
        step.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    if (!updated || updated != name)
      continue;
    builder.setInsertionPoint(ret);
    Operation *zeros = ret.getOperand(i).getDefiningOp();
    ret.setOperand(i, FillOp::create(builder, loc, partType,
                                     builder.getF64FloatAttr(0.0)));
    if (zeros && zeros->use_empty())
      zeros->erase();
  }
  return part;
}

/// Gradient accumulation's apply step: the loss summed over the job's
/// targets and their count, each rank's sums summed over the ranks, so
/// that the step divides by the job's count.
LogicalResult Rewriter::sumAccumulation() {
  for (StringRef name :
       {TGDialect::kLossSumName, TGDialect::kTargetCountName}) {
    BlockArgument arg = stateArgument(step, name);
    if (!arg)
      return step.emitOpError("accumulates gradients without the state '")
             << name << "'; run tg-data-parallel after tg-grad-accum";
    builder.setInsertionPointToStart(&body);
    auto total = AllReduceOp::create(
        builder, loc, arg.getType(), arg,
        ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum),
        worldSizeAttr(), strideAttr(1));
    arg.replaceAllUsesExcept(total.getResult(), total);
  }
  return success();
}

/// This rank's number in its shard group (an i64 scalar, made once at the
/// top of the step): which part of each whole its updates hold.
Value Rewriter::rankPart() {
  if (partNumber)
    return partNumber;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&body);
  int64_t n = config.shardGroup;
  Type i64 = builder.getI64Type();
  SmallVector<int64_t> numbers = llvm::to_vector(llvm::seq<int64_t>(0, n));
  Value all =
      ConstantOp::create(builder, loc,
                         DenseElementsAttr::get(RankedTensorType::get({n}, i64),
                                                ArrayRef<int64_t>(numbers)));
  Value mine = ShardOp::create(builder, loc, RankedTensorType::get({1}, i64),
                               all, groupSizeAttr(), strideAttr(1));
  partNumber = reshape(mine, {});
  return partNumber;
}

/// Makes `member`'s update work on this rank's part: the gradient part
/// through a copy of its chain, the parameter's part by tg.shard, the state
/// arguments retyped to their parts.
LogicalResult Rewriter::shardUpdate(Member &member, Value gradShard) {
  Operation *update = member.update.getOperation();
  int64_t n = config.shardGroup, part = member.shard;
  builder.setInsertionPoint(update);
  IRMapping mapping;
  shardOf.map(member.raw, gradShard);
  Value current = gradShard;
  for (Operation *op : member.chain) {
    IRMapping chainMap;
    chainMap.map(op->getOperand(0), current);
    Operation *copy = builder.clone(*op, chainMap);
    auto resultType = tensorType(op->getResult(0));
    copy->getResult(0).setType(resultType.clone({part}));
    shardOf.map(op->getResult(0), copy->getResult(0));
    current = copy->getResult(0);
  }
  mapping.map(member.update.getGrad(), current);

  // zero3's parameter is its part already.
  Value param = member.update.getParam();
  if (config.mode != Mode::Zero3) {
    Value paramPart = ShardOp::create(
        builder, loc, tensorType(param).clone({part}),
        flatPadded(param, n * part), groupSizeAttr(), strideAttr(1));
    mapping.map(param, paramPart);
  }

  for (OpOperand &operand : update->getOpOperands()) {
    ShardLayout layout =
        member.update.getOperandShardLayout(operand.getOperandNumber());
    Value value = operand.get();
    if (layout == ShardLayout::Replicated || value == param ||
        value == member.update.getGrad())
      continue;
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &body || !value.hasOneUse())
      return update->emitOpError("operand #")
             << operand.getOperandNumber()
             << " is optimizer state that is not an argument of the step "
                "used by this update alone; tg-data-parallel cannot split it";
    auto type = tensorType(value);
    int64_t size = layout == ShardLayout::PerElement       ? part
                   : layout == ShardLayout::PerElementPair ? part / 2
                                                           : part / member.granule;
    shardedArgs[arg] = llvm::to_vector(type.getShape());
    arg.setType(type.clone({size}));
  }

  Operation *copy = builder.clone(*update, mapping);
  // Stochastic rounding draws each element's bits from its index in the
  // whole tensor.
  auto seed = copy->getAttrOfType<IntegerAttr>("rounding_seed");
  if (seed && seed.getInt() != 0) {
    Value number = rankPart();
    bool takesPart =
        llvm::TypeSwitch<Operation *, bool>(copy)
            .Case<AdamWUpdateOp, AdamW8bitUpdateOp, AdamW4bitUpdateOp>(
                [&](auto op) {
                  op.getPartMutable().assign(number);
                  return true;
                })
            .Default([](Operation *) { return false; });
    if (!takesPart)
      return update->emitOpError(
          "rounds stochastically but takes no part number; tg-data-parallel "
          "cannot split it");
  }
  auto copyUpdate = cast<InPlaceOpInterface>(copy);
  for (OpResult result : copy->getResults()) {
    for (unsigned j = 0, e = copy->getNumOperands(); j < e; ++j)
      if (copyUpdate.canReuseOperandBuffer(result.getResultNumber(), j)) {
        result.setType(copy->getOperand(j).getType());
        break;
      }
  }
  for (auto [old, now] : llvm::zip(update->getResults(), copy->getResults())) {
    shardOf.map(old, now);
    if (old != member.update.getNewParam())
      old.replaceAllUsesWith(now);
  }
  toErase.push_back(update);
  for (Operation *op : llvm::reverse(member.chain))
    toErase.push_back(op);
  return success();
}

/// zero3: every splittable parameter argument becomes its part (a trained
/// one laid out as its update's state, a frozen one in parts of whole
/// elements), and each pass gathers what it reads.
LogicalResult Rewriter::shardParameters() {
  DenseMap<Value, Member *> trained;
  llvm::StringMap<Member *> trainedByName;
  llvm::SmallPtrSet<Operation *, 16> updates;
  for (Member &member : members) {
    Value param = member.update.getParam();
    auto arg = dyn_cast<BlockArgument>(param);
    if (!arg || arg.getOwner() != &body ||
        !step.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttr))
      return member.update->emitOpError(
          "updates a value that is not a parameter argument of the step; "
          "tg-data-parallel zero3 splits parameter arguments");
    trained[param] = &member;
    trainedByName[step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    TGDialect::kParamAttr)
                      .getValue()] = &member;
    updates.insert(member.update);
  }
  for (BlockArgument arg : body.getArguments()) {
    if (!step.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttr))
      continue;
    auto type = tensorType(arg);
    Member *member = trained.lookup(arg);
    // A frozen copy (a preference loss's reference) is split as the
    // parameter it copies, part for part.
    if (auto source = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        TGDialect::kCopyOfAttr))
      member = trainedByName.lookup(source.getValue());
    // A trained parameter is split as its update needs, whatever its type.
    if (!member &&
        !isSplittable(type,
                      step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        TGDialect::kParamAttr)
                          .getValue(),
                      config))
      continue;
    int64_t n = config.shardGroup;
    int64_t shard =
        member ? member->shard : (type.getNumElements() + n - 1) / n;
    splitParams.push_back({arg, type, shard});
  }
  for (SplitParam &param : splitParams) {
    param.arg.setType(param.whole.clone({param.shard}));
    shardedArgs[param.arg] = llvm::to_vector(param.whole.getShape());
  }
  Gatherer(step, splitParams, config.shardGroup, config.bucketBytes,
           findBackwardStart(step), updates)
      .run();
  return success();
}

/// zero3: a function beside the training step (the evaluation function,
/// tg.model, or accumulation's micro-step) reads the parameters' parts
/// that the step keeps, each gathered before a pass reads it (before
/// `backwardStart`, then again from it on, when given).
LogicalResult shardReader(func::FuncOp model, ArrayRef<SplitParam> split,
                          const Config &config, Operation *backwardStart) {
  llvm::StringMap<const SplitParam *> byName;
  for (const SplitParam &param : split) {
    auto step = cast<func::FuncOp>(param.arg.getOwner()->getParentOp());
    byName[step.getArgAttrOfType<StringAttr>(param.arg.getArgNumber(),
                                             TGDialect::kParamAttr)
               .getValue()] = &param;
  }
  Block &body = model.getBody().front();
  SmallVector<SplitParam> params;
  SmallVector<DictionaryAttr> argAttrs = getArgAttrDicts(model);
  Builder b(model.getContext());
  for (BlockArgument arg : body.getArguments()) {
    auto name = model.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   TGDialect::kParamAttr);
    const SplitParam *split = name ? byName.lookup(name.getValue()) : nullptr;
    if (!split)
      continue;
    if (tensorType(arg) != split->whole)
      return model.emitOpError("parameter '")
             << name.getValue() << "' has type " << arg.getType()
             << ", the training step's " << split->whole;
    params.push_back({arg, split->whole, split->shard});
    arg.setType(split->whole.clone({split->shard}));
    NamedAttrList attrs(argAttrs[arg.getArgNumber()]);
    attrs.set(TGDialect::kShardOfAttr,
              b.getDenseI64ArrayAttr(split->whole.getShape()));
    argAttrs[arg.getArgNumber()] = attrs.getDictionary(model.getContext());
  }
  if (params.empty())
    return success();
  llvm::SmallPtrSet<Operation *, 1> none;
  Gatherer(model, params, config.shardGroup, config.bucketBytes, backwardStart,
           none)
      .run();
  setStepResults(model, body.getTerminator()->getOperands(), argAttrs,
                 getResultAttrDicts(model));
  return success();
}

/// zero2/zero3 with accumulation: the micro-step `micro` sums each bucket
/// of its gradients over the job as soon as the backward pass completes
/// it (a reduce-scatter within the shard group, then an all-reduce across
/// the replicas) and adds this rank's part into the accumulator's part,
/// `shards` (by accumulator name) elements that the apply step made it.
LogicalResult scatterAccumulation(func::FuncOp micro,
                                  const llvm::StringMap<int64_t> &shards,
                                  const Config &config) {
  Block &body = micro.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder builder(micro.getContext());
  Location loc = micro.getLoc();
  /// An accumulator's sum, acc + (cast of) the gradient.
  struct Sum {
    unsigned result;
    BlockArgument acc;
    Value grad;
    int64_t shard;
  };
  SmallVector<Sum> sums;
  SmallVector<Operation *> dead;
  for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i) {
    auto name =
        micro.getResultAttrOfType<StringAttr>(i, TGDialect::kUpdateAttr);
    auto shard = name ? shards.find(name.getValue()) : shards.end();
    if (shard == shards.end())
      continue;
    auto add = ret.getOperand(i).getDefiningOp<AddOp>();
    auto acc = add ? dyn_cast<BlockArgument>(add.getLhs()) : BlockArgument();
    if (!acc || acc != stateArgument(micro, name.getValue()) ||
        !add->hasOneUse() || !acc.hasOneUse())
      return micro.emitOpError("does not return the accumulator '")
             << name.getValue()
             << "' plus a gradient; run tg-data-parallel on tg-grad-accum's "
                "micro-step";
    Value grad = add.getRhs();
    dead.push_back(add);
    if (auto widen = grad.getDefiningOp<CastOp>();
        widen && widen->hasOneUse()) {
      grad = widen.getInput();
      dead.push_back(widen);
    }
    sums.push_back({i, acc, grad, shard->second});
  }
  if (sums.size() != shards.size())
    return micro.emitOpError("accumulates ")
           << sums.size() << " gradients; the training step applies "
           << shards.size();
  // Buckets in the order the backward pass completes the gradients, one
  // gradient type each, as the training step's.
  std::stable_sort(sums.begin(), sums.end(), [](const Sum &a, const Sum &b) {
    Operation *x = a.grad.getDefiningOp(), *y = b.grad.getDefiningOp();
    if (!x || !y)
      return !x && y;
    return x->isBeforeInBlock(y);
  });
  llvm::MapVector<Type, SmallVector<Sum *>> open;
  llvm::MapVector<Type, int64_t> openBytes;
  SmallVector<SmallVector<Sum *>> buckets;
  for (Sum &sum : sums) {
    Type type = tensorType(sum.grad).getElementType();
    int64_t bytes = sum.shard * config.shardGroup * getElementByteSize(type);
    SmallVector<Sum *> &bucket = open[type];
    if (!bucket.empty() && openBytes[type] + bytes > config.bucketBytes) {
      buckets.push_back(std::move(bucket));
      bucket.clear();
      openBytes[type] = 0;
    }
    bucket.push_back(&sum);
    openBytes[type] += bytes;
  }
  for (auto &[type, bucket] : open)
    if (!bucket.empty())
      buckets.push_back(std::move(bucket));

  Builder b(micro.getContext());
  SmallVector<DictionaryAttr> argAttrs = getArgAttrDicts(micro);
  SmallVector<Value> results = llvm::to_vector(ret.getOperands());
  for (const SmallVector<Sum *> &bucket : buckets) {
    SmallVector<Value> grads;
    SmallVector<int64_t> parts;
    for (Sum *sum : bucket) {
      grads.push_back(sum->grad);
      parts.push_back(sum->shard);
    }
    setInsertionAfterAll(builder, body, grads);
    SmallVector<Value> mine =
        scatterBucket(builder, loc, grads, parts, config, ReduceKind::Sum);
    for (auto [sum, part] : llvm::zip(bucket, mine)) {
      auto whole = tensorType(sum->acc);
      auto partType = whole.clone({sum->shard});
      sum->acc.setType(partType);
      NamedAttrList attrs(argAttrs[sum->acc.getArgNumber()]);
      attrs.set(TGDialect::kShardOfAttr,
                b.getDenseI64ArrayAttr(whole.getShape()));
      argAttrs[sum->acc.getArgNumber()] =
          attrs.getDictionary(micro.getContext());
      Value wide = part;
      if (tensorType(part).getElementType() != whole.getElementType())
        wide = CastOp::create(builder, loc, partType, part);
      results[sum->result] =
          AddOp::create(builder, loc, partType, sum->acc, wide);
    }
  }
  ret->setOperands(results);
  for (Operation *op : dead)
    op->erase();
  setStepResults(micro, results, argAttrs, getResultAttrDicts(micro));
  return success();
}

/// A global norm or finiteness check over gradients now reads this rank's
/// parts; the ranks' answers are combined: norm = sqrt(sum of the ranks'
/// squared norms), finite = every rank's parts finite. Under hybrid
/// sharding the parts of one group make every gradient once (the other
/// groups hold the same values): the sum runs within the group.
LogicalResult Rewriter::rewriteReductions() {
  SmallVector<Operation *> reductions;
  for (Operation &op : body)
    if (isa<GlobalNormOp, AllFiniteOp>(op) &&
        llvm::any_of(op.getOperands(),
                     [&](Value v) { return shardOf.contains(v); }))
      reductions.push_back(&op);
  for (Operation *op : reductions) {
    SmallVector<Value> parts;
    for (Value operand : op->getOperands()) {
      if (!shardOf.contains(operand))
        return op->emitOpError("reads gradients of which only some are split "
                               "across ranks; tg-data-parallel cannot "
                               "combine it");
      parts.push_back(shardOf.lookup(operand));
    }
    builder.setInsertionPoint(op);
    Value result = op->getResult(0);
    auto scalarF32 = RankedTensorType::get({}, builder.getF32Type());
    Value combined;
    if (isa<GlobalNormOp>(op)) {
      Value local = GlobalNormOp::create(builder, loc, scalarF32, parts);
      Value square = MulOp::create(builder, loc, scalarF32, local, local);
      Value total = AllReduceOp::create(
          builder, loc, scalarF32, square,
          ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum),
          groupSizeAttr(), strideAttr(1));
      combined = SqrtOp::create(builder, loc, scalarF32, total);
    } else {
      Value local = AllFiniteOp::create(builder, loc, result.getType(), parts);
      Value asFloat = CastOp::create(builder, loc, scalarF32, local);
      Value all = AllReduceOp::create(
          builder, loc, scalarF32, asFloat,
          ReduceKindAttr::get(builder.getContext(), ReduceKind::Min),
          groupSizeAttr(), strideAttr(1));
      combined = CastOp::create(builder, loc, result.getType(), all);
    }
    result.replaceAllUsesWith(combined);
    op->erase();
  }
  return success();
}

void Rewriter::averageLoss() {
  // With accumulation the loss is the job's already (sumAccumulation).
  if (accumulating())
    return;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
    // The loss and the metrics: their means over the ranks.
    if (!step.getResultAttr(i, TGDialect::kLossAttr) &&
        !step.getResultAttr(i, TGDialect::kMetricAttr))
      continue;
    Value loss = ret.getOperand(i);
    auto type = dyn_cast<RankedTensorType>(loss.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      continue;
    // Right after the value: the loss's mean then ends the forward pass
    // (where tg-remat and the memory plan find its end), not the step.
    setInsertionAfterAll({loss});
    Value mean = AllReduceOp::create(
        builder, loc, type, loss,
        ReduceKindAttr::get(builder.getContext(), ReduceKind::Mean),
        worldSizeAttr(), strideAttr(1));
    ret.setOperand(i, mean);
  }
}

LogicalResult Rewriter::run() {
  if (step->hasAttr(TGDialect::kDataParallelAttr))
    return step.emitOpError("is already data-parallel; run tg-data-parallel "
                            "once");
  if (failed(collectMembers()))
    return failure();
  if (accumulating() && failed(sumAccumulation()))
    return failure();
  if (config.mode == Mode::Zero3 && failed(shardParameters()))
    return failure();
  SmallVector<SmallVector<Member *>> buckets = makeBuckets();
  if (config.mode == Mode::DDP) {
    averageBuckets(buckets);
  } else {
    if (failed(shardBuckets(buckets)) || failed(rewriteReductions()))
      return failure();
    for (Operation *op : toErase)
      op->erase();
    for (Operation *op : divisions)
      op->erase();
  }
  averageLoss();
  if (!sortTopologically(&body))
    return step.emitOpError("tg-data-parallel left a cycle");

  // The function's type follows its arguments and results; parts of state
  // record the whole shape.
  Builder b(step.getContext());
  SmallVector<DictionaryAttr> argAttrs = getArgAttrDicts(step);
  for (auto &[arg, shape] : shardedArgs) {
    NamedAttrList attrs(argAttrs[arg.getArgNumber()]);
    attrs.set(TGDialect::kShardOfAttr, b.getDenseI64ArrayAttr(shape));
    argAttrs[arg.getArgNumber()] = attrs.getDictionary(step.getContext());
  }
  auto ret = body.getTerminator();
  setStepResults(step, ret->getOperands(), argAttrs, getResultAttrDicts(step));
  SmallVector<NamedAttribute> parallel = {
      b.getNamedAttr("mode", b.getStringAttr(choiceName(config.mode))),
      b.getNamedAttr("world_size", b.getI64IntegerAttr(config.worldSize))};
  if (config.mode != Mode::DDP && config.shardGroup != config.worldSize)
    parallel.push_back(
        b.getNamedAttr("shard_group", b.getI64IntegerAttr(config.shardGroup)));
  step->setAttr(TGDialect::kDataParallelAttr, b.getDictionaryAttr(parallel));
  return success();
}

struct DataParallelPass
    : tgc::tg::impl::TGDataParallelBase<DataParallelPass> {
  using TGDataParallelBase::TGDataParallelBase;

  void runOnOperation() override {
    Config config;
    auto error = [&]() {
      return emitOptionError(getOperation(), "tg-data-parallel: ");
    };
    if (mode == Mode::None)
      return markAllAnalysesPreserved();
    config.mode = mode;
    if (worldSize < 1 || worldSize > tgc::kMaxWorldSize) {
      error() << "world-size must be in [1, 2^20], found "
              << int64_t(worldSize);
      return signalPassFailure();
    }
    if (!(bucketMB > 0.0) || !std::isfinite(double(bucketMB)) ||
        bucketMB > 1024.0 * 1024.0) {
      error() << "bucket-mb must be a positive number of MiB, found "
              << double(bucketMB);
      return signalPassFailure();
    }
    config.worldSize = worldSize;
    config.shardGroup = shardGroup == 0 ? int64_t(worldSize) : shardGroup;
    if (config.shardGroup < 1 || worldSize % config.shardGroup != 0) {
      error() << "shard-group must divide the world size " << int64_t(worldSize)
              << " (0: the world size), found " << int64_t(shardGroup);
      return signalPassFailure();
    }
    if (mode == Mode::DDP && config.shardGroup != worldSize) {
      error() << "shard-group splits what a ZeRO mode splits; ddp splits "
                 "nothing (use zero1, zero2 or zero3)";
      return signalPassFailure();
    }
    config.bucketBytes = int64_t(double(bucketMB) * 1024.0 * 1024.0);
    for (auto function : getOperation().getOps<func::FuncOp>())
      for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
        if (auto layout = function.getArgAttrOfType<DictionaryAttr>(
                i, TGDialect::kQuant4Attr)) {
          config.quantized.insert(
              function.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttr)
                  .getValue());
          for (StringRef key : {"absmax", "nested_absmax", "offset"})
            if (auto name = layout.getAs<StringAttr>(key))
              config.quantized.insert(name.getValue());
        }
    SmallVector<SplitParam> split;
    ModuleOp module = getOperation();
    if (failed(forEachTrainStep(
            module, "tg-data-parallel", "tg-optimizer",
            [&](func::FuncOp step) -> LogicalResult {
              Rewriter rewriter(step, config);
              if (failed(rewriter.run()))
                return failure();
              llvm::append_range(split, rewriter.getSplitParams());
              // Accumulation's micro-step reads the same parts and adds
              // into the same accumulators.
              auto accum = step->getAttrOfType<DictionaryAttr>(
                  TGDialect::kGradAccumAttr);
              if (!accum || mode == Mode::DDP || mode == Mode::Zero1)
                return success();
              auto micro = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                  step, accum.getAs<FlatSymbolRefAttr>("grad_step"));
              if (!micro)
                return step.emitOpError("has no gradient micro-step to make "
                                        "data-parallel");
              if (mode == Mode::Zero3 &&
                  failed(shardReader(micro, rewriter.getSplitParams(), config,
                                     findBackwardStart(micro))))
                return failure();
              return scatterAccumulation(micro, rewriter.getAccumulatorShards(),
                                         config);
            })))
      return signalPassFailure();
    if (config.mode == Mode::Zero3)
      for (auto model : module.getOps<func::FuncOp>())
        if (model->hasAttr(TGDialect::kModelAttr) &&
            failed(shardReader(model, split, config, nullptr)))
          return signalPassFailure();
  }
};

} // namespace
