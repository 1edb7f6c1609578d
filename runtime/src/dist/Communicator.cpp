//===- Communicator.cpp - collectives on host memory ----------------------===//
//
// The local communicator of a single process, start-up agreement, and the
// collective kernels on host tensors that the CPU backend (and the CUDA
// backend, when it stages through the host) runs.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Communicator.h"

#include "KernelAttrs.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tgc::rt {

Communicator::~Communicator() = default;

Status Communicator::agree(const Status &mine, const std::string &key) {
  // Each rank's verdict in a fixed-size record: a flag, the start of its
  // key, the start of its message.
  constexpr size_t kKey = 3072, kRecord = 4096;
  std::vector<char> record(kRecord, 0), all(kRecord * size_t(size()), 0);
  record[0] = mine.ok() ? 1 : 0;
  std::strncpy(record.data() + 1, key.c_str(), kKey - 2);
  std::strncpy(record.data() + kKey, mine.error.c_str(), kRecord - kKey - 1);
  Status status = allGather(record.data(), all.data(), kRecord);
  if (!status.ok())
    return status;
  auto text = [&](int r, size_t at, size_t length) {
    const char *p = all.data() + size_t(r) * kRecord + at;
    return std::string(p, strnlen(p, length));
  };
  for (int r = 0; r < size(); ++r)
    if (all[size_t(r) * kRecord] != 1)
      return Status::failure("rank " + std::to_string(r) + " of " +
                             std::to_string(size()) + " failed: " +
                             text(r, kKey, kRecord - kKey - 1));
  for (int r = 1; r < size(); ++r) {
    std::string theirs = text(r, 1, kKey - 2), ours = text(0, 1, kKey - 2);
    if (theirs == ours)
      continue;
    if (ours.rfind("--", 0) != 0)
      return Status::failure("rank " + std::to_string(r) + " of " +
                             std::to_string(size()) + " differs from rank "
                             "0: " + theirs + ", against " + ours);
    // Keys of options (`--steps=5 --seed=0 ...`): name the first that
    // differs.
    size_t at = 0;
    while (at < theirs.size() && at < ours.size() && theirs[at] == ours[at])
      ++at;
    size_t from = theirs.rfind(' ', at == 0 ? 0 : at - 1);
    from = from == std::string::npos ? 0 : from + 1;
    auto item = [&](const std::string &key) {
      size_t end = key.find(' ', from);
      return key.substr(from, end == std::string::npos ? std::string::npos
                                                       : end - from);
    };
    return Status::failure("rank " + std::to_string(r) + " of " +
                           std::to_string(size()) + " differs from rank "
                           "0: " + item(theirs) + ", against " + item(ours));
  }
  return Status::success();
}

Status Communicator::group(int64_t size, int64_t stride, Communicator *&out) {
  out = nullptr;
  int64_t ranks = this->size();
  if (size < 1 || stride < 1 || size > ranks || stride > ranks ||
      ranks % (size * stride) != 0)
    return Status::failure("no groups of " + std::to_string(size) + " ranks " +
                           std::to_string(stride) + " apart among " +
                           std::to_string(ranks) + " ranks");
  if (size == ranks) {
    out = this;
    return Status::success();
  }
  std::unique_ptr<Communicator> &made = groups[{size, stride}];
  if (!made) {
    int64_t r = rank(), span = size * stride;
    int64_t base = r % stride + r / span * span;
    Status status = split(int(base), int(r), made);
    if (!status.ok()) {
      groups.erase({size, stride});
      return status;
    }
  }
  out = made.get();
  return Status::success();
}

Status Communicator::split(int, int, std::unique_ptr<Communicator> &) {
  return Status::failure(describe() + " cannot be split into groups");
}

namespace {

class LocalCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "1 process"; }
  Status allReduce(float *, size_t, Reduction) override {
    return Status::success();
  }
  Status reduceScatter(const float *in, float *out, size_t count,
                       Reduction) override {
    if (in != out)
      std::memmove(out, in, count * sizeof(float));
    return Status::success();
  }
  Status allGather(const void *in, void *out, size_t bytes) override {
    if (in != out)
      std::memmove(out, in, bytes);
    return Status::success();
  }
  Status broadcast(void *, size_t, int) override { return Status::success(); }
  Status gather(const void *in, void *out, size_t bytes, int) override {
    if (in != out)
      std::memmove(out, in, bytes);
    return Status::success();
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

/// A float tensor's values as f32 (a copy for f16 and bf16; the tensor's
/// own memory for f32).
float *asF32(const TensorRef &t, std::vector<float> &copy) {
  if (t.dtype == DType::F32)
    return static_cast<float *>(t.data);
  copy.resize(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    copy[size_t(i)] = loadF32(t, i);
  return copy.data();
}

void storeAll(TensorRef &t, const float *values) {
  if (t.dtype == DType::F32) {
    if (t.data != values)
      std::memmove(t.data, values, t.numBytes());
    return;
  }
  for (int64_t i = 0; i < t.numElements(); ++i)
    storeF32(t, i, values[i]);
}

} // namespace

std::unique_ptr<Communicator> createLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

Status collectiveGroup(Communicator &communicator, const Instruction &inst,
                       Communicator *&group) {
  CollectiveGroup of = collectiveGroupOf(inst);
  return communicator.group(of.size, of.stride, group);
}

Status runCollective(Communicator &world, const Instruction &inst,
                     const TensorRef &in, TensorRef &out) {
  // The loader checked that the groups tile the program's ranks, and
  // Session::create the program's world size against the communicator's.
  Communicator *group = nullptr;
  Status grouped = collectiveGroup(world, inst, group);
  if (!grouped.ok())
    return grouped;
  Communicator &comm = *group;
  auto reduction = Reduction(reductionOf(inst));
  switch (inst.kernel) {
  case Kernel::AllReduce: {
    // In place in the result (which may be the operand's memory).
    std::vector<float> copy;
    if (out.data != in.data && out.dtype == DType::F32)
      std::memmove(out.data, in.data, in.numBytes());
    float *values = out.dtype == DType::F32 ? static_cast<float *>(out.data)
                                            : asF32(in, copy);
    Status status = comm.allReduce(values, size_t(out.numElements()),
                                   reduction);
    if (!status.ok())
      return status;
    storeAll(out, values);
    return Status::success();
  }
  case Kernel::ReduceScatter: {
    std::vector<float> inCopy, outValues(size_t(out.numElements()));
    const float *values = asF32(in, inCopy);
    Status status = comm.reduceScatter(values, outValues.data(),
                                       outValues.size(), reduction);
    if (!status.ok())
      return status;
    storeAll(out, outValues.data());
    return Status::success();
  }
  case Kernel::AllGather:
    return comm.allGather(in.data, out.data, in.numBytes());
  case Kernel::Shard: {
    size_t bytes = out.numBytes();
    std::memmove(out.data,
                 static_cast<const uint8_t *>(in.data) +
                     size_t(comm.rank()) * bytes,
                 bytes);
    return Status::success();
  }
  default:
    return Status::failure(std::string(kernelName(inst.kernel)) +
                           " is not a collective");
  }
}

} // namespace tgc::rt
