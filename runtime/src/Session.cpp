//===- Session.cpp - running a training step on a backend -----------------===//
//
// Memory, initialisation and the step loop. The high-water mark is taken
// from a trace of the arena ranges each instruction writes and reads: a
// range is live from its write to its last read (the loss until the end of
// the step), and the measure is the largest total of live ranges.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Session.h"

#include "Random.h"
#include "cpu/Execute.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

namespace tgc::rt {

namespace {

uint64_t hashName(const std::string &name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

uint8_t *allocateRegion(int64_t bytes) {
  // One aligned allocation per region; at least one byte so the pointer is
  // valid for empty regions.
  size_t size = (size_t(std::max<int64_t>(bytes, 1)) + 255) / 256 * 256;
  void *memory = std::aligned_alloc(256, size);
  if (memory)
    std::memset(memory, 0, size);
  return static_cast<uint8_t *>(memory);
}

/// Live arena ranges, measured from the instructions' reads and writes.
class ArenaTrace {
public:
  explicit ArenaTrace(int64_t alignment) : alignment(alignment) {}

  void write(int64_t offset, int64_t bytes, size_t step) {
    int64_t size = (bytes + alignment - 1) / alignment * alignment;
    current[offset] = ranges.size();
    ranges.push_back({offset, size, int64_t(step), int64_t(step)});
  }
  void read(int64_t offset, size_t step) {
    auto it = current.find(offset);
    if (it != current.end())
      ranges[it->second].end = std::max<int64_t>(ranges[it->second].end, step);
  }
  void keepUntil(int64_t offset, size_t step) { read(offset, step); }

  int64_t peak() const {
    std::map<int64_t, int64_t> delta;
    for (const Range &r : ranges) {
      delta[r.start] += r.size;
      delta[r.end + 1] -= r.size;
    }
    int64_t live = 0, best = 0;
    for (auto [step, change] : delta) {
      live += change;
      best = std::max(best, live);
    }
    return best;
  }

private:
  struct Range {
    int64_t offset, size, start, end;
  };
  int64_t alignment;
  std::vector<Range> ranges;
  std::map<int64_t, size_t> current;
};

} // namespace

void initializeTensor(const TensorInfo &info, uint64_t seed, TensorRef view) {
  int64_t n = view.numElements();
  switch (info.init) {
  case InitKind::None:
  case InitKind::Zeros:
    std::memset(view.data, 0, view.numBytes());
    return;
  case InitKind::Ones:
    for (int64_t i = 0; i < n; ++i)
      storeF32(view, i, 1.0f);
    return;
  case InitKind::Normal:
  case InitKind::Uniform:
    break;
  }
  SplitMix64 rng{seed ^ hashName(info.name)};
  for (int64_t i = 0; i < n; ++i) {
    double value;
    if (info.init == InitKind::Uniform)
      value = info.initA + (info.initB - info.initA) * rng.uniform();
    else
      value = info.initA + info.initB * rng.normal();
    storeF32(view, i, float(value));
  }
}

Session::Session(Program program) : prog(std::move(program)) {}

Session::~Session() {
  std::free(persistent);
  std::free(arena);
}

Status Session::create(Program program, std::unique_ptr<Session> &session) {
  std::unique_ptr<Session> created(new Session(std::move(program)));
  created->persistent = allocateRegion(created->prog.persistentBytes);
  created->arena = allocateRegion(created->prog.arenaBytes);
  if (!created->persistent || !created->arena)
    return Status::failure("cannot allocate " +
                           std::to_string(created->prog.persistentBytes) +
                           " persistent and " +
                           std::to_string(created->prog.arenaBytes) +
                           " arena bytes");
  session = std::move(created);
  return Status::success();
}

TensorRef Session::view(int32_t index) {
  const TensorInfo &info = prog.tensors[index];
  uint8_t *base = info.storage == Storage::Persistent ? persistent : arena;
  TensorRef ref;
  ref.data = base + info.offset;
  ref.dtype = info.dtype;
  ref.shape = info.shape;
  return ref;
}

void Session::initialize(uint64_t seed) {
  for (size_t i = 0; i < prog.tensors.size(); ++i) {
    const TensorInfo &info = prog.tensors[i];
    if (info.storage != Storage::Persistent)
      continue;
    TensorRef ref = view(int32_t(i));
    if (info.role == Role::Param)
      initializeTensor(info, seed, ref);
    else
      std::memset(ref.data, 0, ref.numBytes());
  }
}

int64_t Session::stepCount() {
  if (prog.stepCounter < 0)
    return -1;
  return loadI64(view(prog.stepCounter), 0);
}

Status Session::step(float &loss) { return run(loss, highWater < 0); }

Status Session::run(float &loss, bool measure) {
  ArenaTrace trace(prog.alignment);
  std::vector<TensorRef> operands, results;
  for (size_t i = 0; i < prog.instructions.size(); ++i) {
    const Instruction &inst = prog.instructions[i];
    operands.clear();
    results.clear();
    for (int32_t index : inst.operands) {
      operands.push_back(view(index));
      if (measure && prog.tensors[index].storage == Storage::Arena)
        trace.read(prog.tensors[index].offset, i);
    }
    for (int32_t index : inst.results) {
      results.push_back(view(index));
      if (measure && prog.tensors[index].storage == Storage::Arena)
        trace.write(prog.tensors[index].offset, prog.tensors[index].bytes, i);
    }
    Status status = cpu::execute(prog, inst, operands, results);
    if (!status.ok())
      return Status::failure("step failed in instruction #" +
                             std::to_string(i) + " (" +
                             kernelName(inst.kernel) + "): " + status.error);
  }
  if (measure) {
    if (prog.tensors[prog.loss].storage == Storage::Arena)
      trace.keepUntil(prog.tensors[prog.loss].offset,
                      prog.instructions.size());
    highWater = trace.peak();
  }
  loss = loadF32(view(prog.loss), 0);
  return Status::success();
}

} // namespace tgc::rt
