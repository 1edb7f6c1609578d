//===- GatherParameters.cpp - zero3's gathers of split parameters ---------===//
//
// Each pass of a function (the forward pass, then the backward pass) reads
// a parameter whole from a gather of its own: the backward pass does not
// keep the forward pass's, and values computed from a parameter alone by
// layout ops (a cast to bf16, a transpose) that the backward pass reads are
// computed again there from its gather. Parameters are gathered in buckets
// in the order the pass first reads them (a parameter larger than a
// bucket alone), each bucket where the one before it is first read; a
// parameter read only through casts to a narrower type is cast before it
// is gathered.
//
//===----------------------------------------------------------------------===//

#include "GatherParameters.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#include <functional>

using namespace mlir;

namespace tgc::tg {

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Ops that compute a value from one operand by layout or precision alone:
/// what the backward pass recomputes from its own gather of a parameter.
bool isLayoutOp(Operation *op) {
  return isa<CastOp, ReshapeOp, TransposeOp>(op) && op->getNumOperands() == 1;
}

} // namespace

void Gatherer::recomputeForBackward() {
  if (!backwardStart)
    return;
  // Forward values computed from a parameter by layout ops alone, in order.
  SmallVector<Value> derived;
  llvm::SmallPtrSet<Value, 16> seen;
  for (const SplitParam &param : params) {
    SmallVector<Value> work = {param.arg};
    while (!work.empty()) {
      Value value = work.pop_back_val();
      for (Operation *user : value.getUsers())
        if (isLayoutOp(user) && !inBackward(user) &&
            seen.insert(user->getResult(0)).second) {
          derived.push_back(user->getResult(0));
          work.push_back(user->getResult(0));
        }
    }
  }
  // Each read in the backward pass takes a copy computed there, placed
  // before its first reader (the order of first readers keeps every copy's
  // operand before it).
  auto firstBackwardUser = [&](Value value) -> Operation * {
    Operation *first = nullptr;
    for (Operation *user : value.getUsers())
      if (inBackward(user) && (!first || user->isBeforeInBlock(first)))
        first = user;
    return first;
  };
  SmallVector<std::pair<Operation *, Value>> needed;
  for (Value value : derived)
    if (Operation *first = firstBackwardUser(value))
      needed.push_back({first, value});
  llvm::stable_sort(needed, [](const auto &a, const auto &b) {
    return a.first != b.first && a.first->isBeforeInBlock(b.first);
  });
  DenseMap<Value, Value> copyOf;
  for (const SplitParam &param : params)
    copyOf[param.arg] = param.arg;
  std::function<Value(Value)> copy = [&](Value value) -> Value {
    if (Value known = copyOf.lookup(value))
      return known;
    Operation *def = value.getDefiningOp();
    Value operand = copy(def->getOperand(0));
    IRMapping mapping;
    mapping.map(def->getOperand(0), operand);
    Value result = builder.clone(*def, mapping)->getResult(0);
    copyOf[value] = result;
    return result;
  };
  for (auto [first, value] : needed) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : value.getUses())
      if (inBackward(use.getOwner()))
        uses.push_back(&use);
    builder.setInsertionPoint(first);
    Value local = copy(value);
    for (OpOperand *use : uses)
      use->set(local);
  }
}

/// Moves each layout op computed from a parameter alone (a cast, reshape
/// or transpose, wherever an earlier pass placed it) to just before its
/// first reader, so the parameter is gathered where it is needed, not
/// where its layout op happened to be.
void Gatherer::sinkLayoutOps() {
  SmallVector<Operation *> chain;
  llvm::SmallPtrSet<Operation *, 16> seen;
  for (const SplitParam &param : params) {
    SmallVector<Value> work = {param.arg};
    while (!work.empty()) {
      Value value = work.pop_back_val();
      for (Operation *user : value.getUsers())
        if (isLayoutOp(user) && seen.insert(user).second) {
          chain.push_back(user);
          work.push_back(user->getResult(0));
        }
    }
  }
  // Readers first: each op then moves before readers already in place.
  for (Operation *op : llvm::reverse(chain)) {
    Operation *first = nullptr;
    for (Operation *user : op->getResult(0).getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    if (first)
      op->moveBefore(first);
  }
}

SmallVector<Gatherer::Read> Gatherer::readsIn(bool backward) {
  SmallVector<Read> reads;
  for (const SplitParam &param : params) {
    Read read;
    read.param = &param;
    for (OpOperand &use : param.arg.getUses()) {
      Operation *user = use.getOwner();
      if (keep.contains(user) || inBackward(user) != backward)
        continue;
      read.uses.push_back(&use);
      if (!read.first || user->isBeforeInBlock(read.first))
        read.first = user;
    }
    if (read.uses.empty())
      continue;
    // Read only through casts to one type: the part is cast, and the
    // smaller values are gathered.
    read.type = param.whole.getElementType();
    Type castTo;
    bool allCast = llvm::all_of(read.uses, [&](OpOperand *use) {
      auto cast = dyn_cast<CastOp>(use->getOwner());
      if (!cast)
        return false;
      Type to = tensorType(cast.getResult()).getElementType();
      if (castTo && to != castTo)
        return false;
      castTo = to;
      return true;
    });
    if (allCast && getElementByteSize(castTo) <
                       getElementByteSize(param.whole.getElementType())) {
      read.type = castTo;
      for (OpOperand *use : read.uses)
        read.casts.push_back(use->getOwner());
      read.uses.clear();
    }
    reads.push_back(std::move(read));
  }
  llvm::stable_sort(reads, [](const Read &a, const Read &b) {
    return a.first != b.first && a.first->isBeforeInBlock(b.first);
  });
  return reads;
}

Operation *Gatherer::gather(ArrayRef<Read *> bucket, Operation *at) {
  int64_t n = numParts;
  builder.setInsertionPoint(at);
  Operation *first = at->getPrevNode();
  Type type = bucket.front()->type;
  SmallVector<Value> parts;
  int64_t packed = 0;
  for (Read *read : bucket) {
    Value part = read->param->arg;
    if (type != read->param->whole.getElementType())
      part = CastOp::create(builder, loc,
                            RankedTensorType::get({read->param->shard}, type),
                            part);
    parts.push_back(part);
    packed += read->param->shard;
  }
  Value sent = parts.front();
  if (parts.size() > 1)
    sent = ConcatOp::create(builder, loc, RankedTensorType::get({packed}, type),
                            parts, builder.getI64IntegerAttr(0));
  Value gathered = AllGatherOp::create(
      builder, loc, RankedTensorType::get({n * packed}, type), sent,
      builder.getI64IntegerAttr(n), builder.getI64IntegerAttr(1));
  SmallVector<Value> columns = {gathered};
  if (bucket.size() > 1) {
    SmallVector<Type> types;
    for (Read *read : bucket)
      types.push_back(RankedTensorType::get({n, read->param->shard}, type));
    Value rows = ReshapeOp::create(
        builder, loc, RankedTensorType::get({n, packed}, type), gathered);
    columns = llvm::to_vector_of<Value>(
        SplitOp::create(builder, loc, types, rows, builder.getI64IntegerAttr(1))
            .getResults());
  }
  for (auto [read, column] : llvm::zip(bucket, columns)) {
    RankedTensorType whole = RankedTensorType(read->param->whole).clone(type);
    int64_t elements = whole.getNumElements();
    // The column flat, its padding sliced off, in the whole's shape.
    Value value = column;
    if (n * read->param->shard != elements) {
      if (tensorType(value).getRank() != 1)
        value = ReshapeOp::create(
            builder, loc, RankedTensorType::get({n * read->param->shard}, type),
            value);
      value =
          SliceOp::create(builder, loc, RankedTensorType::get({elements}, type),
                          value, builder.getDenseI64ArrayAttr({0}));
    }
    if (tensorType(value).getShape() != whole.getShape())
      value = ReshapeOp::create(builder, loc, whole, value);
    for (OpOperand *use : read->uses)
      use->set(value);
    for (Operation *cast : read->casts)
      cast->getResult(0).replaceAllUsesWith(value);
  }
  Operation *inserted = first ? first->getNextNode() : &at->getBlock()->front();
  // The forward pass's gathers are recomputed (gathered again) where
  // tg-remat recomputes a forward op that reads them in the backward pass,
  // not kept alive for it.
  if (backwardStart && !inBackward(at))
    for (Operation *op = inserted; op != at; op = op->getNextNode())
      op->setAttr(TGDialect::kRecomputeAttr, builder.getUnitAttr());
  // Last: the builder inserts before `at`, which may be one of them.
  for (Read *read : bucket)
    for (Operation *cast : read->casts)
      cast->erase();
  return inserted;
}

void Gatherer::run() {
  recomputeForBackward();
  sinkLayoutOps();
  for (bool backward : {false, true}) {
    if (backward && !backwardStart)
      break;
    SmallVector<Read> reads = readsIn(backward);
    // Buckets in the order the pass first reads them, each of one element
    // type and at most bucketBytes gathered. A parameter of bucketBytes or
    // more is gathered alone and leaves the open bucket open: the small
    // ones around it (a block's norm weights between its projections)
    // share one gather rather than each paying a collective's latency.
    struct Open {
      SmallVector<Read *> reads;
      int64_t bytes = 0;
    };
    llvm::MapVector<Type, Open> open;
    SmallVector<SmallVector<Read *>> buckets;
    for (Read &read : reads) {
      int64_t bytes =
          numParts * read.param->shard * getElementByteSize(read.type);
      if (bytes >= bucketBytes) {
        buckets.push_back({&read});
        continue;
      }
      Open &bucket = open[read.type];
      if (!bucket.reads.empty() && bucket.bytes + bytes > bucketBytes) {
        buckets.push_back(std::move(bucket.reads));
        bucket = Open();
      }
      bucket.reads.push_back(&read);
      bucket.bytes += bytes;
    }
    for (auto &[type, bucket] : open)
      if (!bucket.reads.empty())
        buckets.push_back(std::move(bucket.reads));
    llvm::stable_sort(buckets, [](const auto &a, const auto &b) {
      return a.front()->first != b.front()->first &&
             a.front()->first->isBeforeInBlock(b.front()->first);
    });
    // Each bucket's gather is issued where the bucket before it is first
    // read: one bucket in flight while the one before computes. From the
    // last bucket back, so no reader a gather is placed before has been
    // replaced yet; the first bucket's gather goes before the second's.
    Operation *second = nullptr;
    for (size_t i = buckets.size(); i-- > 0;) {
      Operation *at = i > 0    ? buckets[i - 1].front()->first
                      : second ? second
                               : buckets[0].front()->first;
      Operation *inserted = gather(buckets[i], at);
      if (i == 1)
        second = inserted;
    }
  }
}

} // namespace tgc::tg
