//===- Session.cpp - running a training step on a backend -----------------===//
//
// Initialisation, host access through the mirror, and the step loop. The high-water mark is taken
// from a trace of the arena ranges each instruction writes and reads: a
// range is live from its write to its last read (the loss until the end of
// the step), a result written over an operand that dies there counts once
// (as the planner counts in-place reuse), and the measure is the largest
// total of live ranges.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Session.h"
#include "tgc/runtime/Quant4bit.h"

#include "Random.h"
#include "cpu/VecMath.h"
#include "cpu/Parallel.h"
#include "format/Verify.h"

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

} // namespace

/// Live arena ranges, measured from the instructions' reads and writes.
class ArenaTrace {
public:
  explicit ArenaTrace(int64_t alignment) : alignment(alignment) {}

  void write(int64_t offset, int64_t bytes, size_t step) {
    int64_t size = (bytes + alignment - 1) / alignment * alignment;
    // A result written over an operand of the same instruction (in-place
    // reuse of a dying operand's buffer) takes that memory over: one buffer
    // at this step, not two.
    auto it = current.find(offset);
    if (it != current.end()) {
      Range &previous = ranges[it->second];
      if (previous.end == int64_t(step) && previous.start < int64_t(step))
        previous.end = int64_t(step) - 1;
    }
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

void initializeTensor(const TensorInfo &info, uint64_t seed, TensorRef view,
                      bool viewIsZero, int64_t first) {
  int64_t n = view.numElements();
  switch (info.init) {
  case InitKind::None:
  case InitKind::Zeros:
    if (!viewIsZero)
      std::memset(view.data, 0, view.numBytes());
    return;
  case InitKind::Ones:
  case InitKind::Constant: {
    float value = info.init == InitKind::Ones ? 1.0f : float(info.initA);
    cpu::parallelFor(n, cpu::kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        storeF32(view, i, value);
    });
    return;
  }
  case InitKind::Normal:
  case InitKind::Uniform:
    break;
  }
  // Element i takes draws i (uniform) or 2i and 2i + 1 (normal) of the
  // tensor's generator: chunks start where one sequence would be.
  uint64_t key = seed ^ hashName(info.name);
  if (info.init == InitKind::Uniform) {
    cpu::parallelFor(n, cpu::kElementGrain, [&](int64_t begin, int64_t end) {
      SplitMix64 rng = SplitMix64::at(key, uint64_t(first + begin));
      for (int64_t i = begin; i < end; ++i)
        storeF32(view, i,
                 float(info.initA +
                       (info.initB - info.initA) * rng.uniform()));
    });
    return;
  }
  cpu::parallelFor(n, cpu::kElementGrain, [&](int64_t begin, int64_t end) {
    SplitMix64 rng = SplitMix64::at(key, uint64_t(first + begin) * 2);
    constexpr int64_t kBlock = 256;
    double u1[kBlock], angle[kBlock], logs[kBlock], cosines[kBlock];
    for (int64_t block = begin; block < end; block += kBlock) {
      int64_t m = std::min(kBlock, end - block);
      for (int64_t j = 0; j < m; ++j) {
        u1[j] = 1.0 - rng.uniform();
        angle[j] = 2.0 * M_PI * rng.uniform();
      }
      // Box-Muller through vectorized log and cos (SLEEF, within 1 ulp).
      // The value stored is libm's, as SplitMix64::normal computes it:
      // where the f32 that the vector result rounds to could differ from
      // the one libm's rounds to (a rounding boundary within the two
      // results' error of each other), the element is computed again
      // through libm. Elsewhere both round to the same f32.
      cpu::vec::logd(u1, logs, m);
      cpu::vec::cosd(angle, cosines, m);
      for (int64_t j = 0; j < m; ++j) {
        double normal = std::sqrt(-2.0 * logs[j]) * cosines[j];
        double value = info.initA + info.initB * normal;
        double tolerance = std::fabs(info.initB * normal) * 0x1p-46 +
                           std::fabs(value) * 0x1p-50;
        float rounded = float(value);
        if (float(value - tolerance) != rounded ||
            float(value + tolerance) != rounded)
          rounded = float(info.initA +
                          info.initB * (std::sqrt(-2.0 * std::log(u1[j])) *
                                        std::cos(angle[j])));
        storeF32(view, block + j, rounded);
      }
    }
  });
}

Session::Session(Program program, std::unique_ptr<Backend> backend)
    : prog(std::move(program)), device(std::move(backend)) {}

Session::~Session() = default;

/// Bytes of the persistent region on the device: all but the host part
/// (offloaded optimizer state) at its end.
static int64_t devicePart(const Program &prog) {
  return prog.persistentBytes - prog.hostBytes;
}

Status Session::create(Program program, std::unique_ptr<Backend> backend,
                       std::unique_ptr<Session> &session,
                       Communicator *communicator) {
  // The kernels trust what the loader checks; a program built in memory
  // gets the same checks.
  if (Status status = verifyInstructions(program); !status.ok())
    return status;
  if (Status status = checkQuantizedWeights(program); !status.ok())
    return status;
  std::unique_ptr<Session> created(
      new Session(std::move(program), std::move(backend)));
  const Program &prog = created->prog;
  if (!communicator) {
    created->localComm = createLocalCommunicator();
    communicator = created->localComm.get();
  }
  created->comm = communicator;
  created->device->setCommunicator(communicator);
  if (prog.worldSize != communicator->size())
    return Status::failure(
        "the executable was compiled for " + std::to_string(prog.worldSize) +
        (prog.worldSize == 1 ? " process" : " ranks (--world-size)") +
        " and runs on " + std::to_string(communicator->size()) +
        (prog.worldSize == 1
             ? "; compile it with --world-size " +
                   std::to_string(communicator->size())
             : "; start it with mpirun -n " + std::to_string(prog.worldSize)));
  Status status = created->device->allocate(
      prog.persistentBytes, prog.hostBytes, prog.arenaBytes);
  if (!status.ok())
    return status;
  // The inputs of the training step; the smaller buckets' (`tokens@64`)
  // are views of them.
  for (const TensorInfo &info : prog.tensors)
    if (info.role == Role::Input && info.name.find('@') == std::string::npos)
      created->inputRanges.push_back({info.offset, info.bytes});
  int64_t deviceBytes = devicePart(prog);
  if (created->device->hostAccessible()) {
    created->mirror = created->device->persistentBase();
    created->hostMirror = created->mirror + deviceBytes;
  } else {
    // Offloaded state in the backend's pinned memory is host memory
    // already: the mirror then holds no second copy of it.
    uint8_t *pinned = created->device->hostPartForHost();
    created->hostPartShared = pinned && prog.hostBytes > 0;
    if (!created->allocateMirror(created->hostPartShared
                                     ? deviceBytes
                                     : prog.persistentBytes))
      return Status::failure("out of host memory for the persistent "
                             "region's host copy");
    created->hostMirror =
        created->hostPartShared ? pinned : created->mirror + deviceBytes;
  }
  session = std::move(created);
  return Status::success();
}

bool Session::allocateMirror(int64_t bytes) {
  // calloc's large blocks are fresh zero pages, which nothing touches until
  // they are written (std::vector would write every byte first).
  mirrorStorage.reset(static_cast<uint8_t *>(
      std::calloc(size_t(std::max<int64_t>(bytes, 1)), 1)));
  mirror = mirrorStorage.get();
  return mirror != nullptr;
}

TensorRef Session::view(int32_t index) {
  const TensorInfo &info = prog.tensors[index];
  TensorRef ref;
  ref.data = info.storage == Storage::Persistent
                 ? device->persistentAt(info.offset)
                 : device->arenaBase() + info.offset;
  ref.dtype = info.dtype;
  ref.shape = info.shape;
  return ref;
}

TensorRef Session::hostView(int32_t index) {
  const TensorInfo &info = prog.tensors[index];
  TensorRef ref;
  int64_t deviceBytes = devicePart(prog);
  ref.data = info.offset < deviceBytes
                 ? mirror + info.offset
                 : hostMirror + (info.offset - deviceBytes);
  ref.dtype = info.dtype;
  ref.shape = info.shape;
  return ref;
}

// The persistent region's device part and host part (offloaded state),
// which the backend may hold apart.
Status Session::pullPersistent() {
  int64_t deviceBytes = devicePart(prog);
  Status status = device->download(mirror, device->persistentAt(0),
                                   size_t(deviceBytes));
  if (status.ok() && prog.hostBytes > 0 && !hostPartShared)
    status = device->download(hostMirror,
                              device->persistentAt(deviceBytes),
                              size_t(prog.hostBytes));
  return status.ok() ? device->synchronize() : status;
}

Status Session::gatherWholes(const std::function<bool(int32_t)> &wanted,
                             int root) {
  wholes.clear();
  // The parts of a whole are those of the root's shard group (every rank's
  // under plain ZeRO); the other groups hold the same parts and send none.
  Communicator *group = nullptr;
  Status grouped = comm->group(prog.shardGroup, 1, group);
  if (!grouped.ok())
    return grouped;
  if (comm->rank() / prog.shardGroup != root / prog.shardGroup)
    return Status::success();
  int groupRoot = int(prog.partOf(root));
  for (size_t i = 0; i < prog.tensors.size(); ++i) {
    const TensorInfo &info = prog.tensors[i];
    if (!info.isShard() || !wanted(int32_t(i)))
      continue;
    TensorRef part = hostView(int32_t(i));
    std::vector<uint8_t> &whole = wholes[int32_t(i)];
    if (comm->rank() == root)
      whole.resize(part.numBytes() * size_t(group->size()));
    Status gathered =
        group->gather(part.data, whole.data(), part.numBytes(), groupRoot);
    if (!gathered.ok()) {
      wholes.clear();
      return Status::failure("gathering '" + info.name +
                             "': " + gathered.error);
    }
  }
  return Status::success();
}

TensorRef Session::wholeView(int32_t index) {
  const TensorInfo &info = prog.tensors[index];
  auto found = wholes.find(index);
  if (!info.isShard() || found == wholes.end() || found->second.empty())
    return hostView(index);
  TensorRef ref;
  ref.data = found->second.data();
  ref.dtype = info.dtype;
  ref.shape = info.shardOf;
  return ref;
}

Status Session::pushPersistent() {
  int64_t deviceBytes = devicePart(prog);
  Status status = device->upload(device->persistentAt(0), mirror,
                                 size_t(deviceBytes));
  if (status.ok() && prog.hostBytes > 0 && !hostPartShared)
    status = device->upload(device->persistentAt(deviceBytes), hostMirror,
                            size_t(prog.hostBytes));
  return status.ok() ? device->synchronize() : status;
}

Status Session::initialize(uint64_t seed, const std::vector<bool> *provided) {
  // What is drawn or set to a value other than zero: with a fresh mirror,
  // all the backend needs copied.
  std::vector<int32_t> written;
  std::vector<bool> quantized(prog.tensors.size(), false);
  for (const QuantizedWeight &weight : prog.quantized)
    for (int32_t index : weight.tensors())
      if (index >= 0)
        quantized[size_t(index)] = true;
  for (size_t i = 0; i < prog.tensors.size(); ++i) {
    const TensorInfo &info = prog.tensors[i];
    if (info.storage != Storage::Persistent || quantized[i])
      continue;
    if (provided && i < provided->size() && (*provided)[i])
      continue;
    TensorRef ref = hostView(int32_t(i));
    if (info.isShard() &&
        (info.role == Role::Param || info.init == InitKind::Normal ||
         info.init == InitKind::Uniform)) {
      // zero3's part of a parameter (or of its frozen copy): its elements
      // of the whole as one process draws them, zeros past the whole's
      // end.
      int64_t first = info.partStart(prog.partOf(comm->rank()));
      TensorRef real = ref;
      real.shape = {std::min(ref.numElements(), info.wholeElements() - first)};
      initializeTensor(info, seed, real, mirrorZero, first);
      if (!mirrorZero)
        std::memset(static_cast<char *>(ref.data) + real.numBytes(), 0,
                    size_t(ref.numBytes() - real.numBytes()));
      if (info.init != InitKind::Zeros && info.init != InitKind::None)
        written.push_back(int32_t(i));
    } else if (info.role == Role::Param ||
               (info.role == Role::State && info.init != InitKind::None)) {
      initializeTensor(info, seed, ref, mirrorZero);
      if (info.init != InitKind::Zeros && info.init != InitKind::None)
        written.push_back(int32_t(i));
    } else if (!mirrorZero) {
      std::memset(ref.data, 0, ref.numBytes());
    }
  }
  // A 4-bit weight is drawn as its f32 self would be (the same name, so
  // the same values) and quantized as loading would quantize it.
  for (const QuantizedWeight &weight : prog.quantized) {
    if (provided && size_t(weight.codes) < provided->size() &&
        (*provided)[size_t(weight.codes)])
      continue;
    TensorInfo whole = prog.tensors[size_t(weight.codes)];
    whole.dtype = DType::F32;
    whole.shape = {weight.rows, weight.cols};
    std::vector<float> values(size_t(weight.rows * weight.cols));
    TensorRef view;
    view.data = values.data();
    view.dtype = DType::F32;
    view.shape = whole.shape;
    initializeTensor(whole, seed, view, /*viewIsZero=*/false);
    quantizeInto(weight, values.data());
    for (int32_t index : weight.tensors())
      if (index >= 0)
        written.push_back(index);
  }
  // Zeros were not written where the mirror still held the ones it was
  // allocated with: its pages stay untouched until a step or a file
  // writes them (AdamW's moments: two thirds of f32 training's state).
  // Nor are they copied to the backend, whose regions are zero-filled
  // too: only what was drawn or set goes (on a GPU, the moments' bytes
  // need not cross the bus).
  if (!mirrorZero)
    return pushPersistent();
  mirrorZero = false;
  return pushTensors(std::move(written));
}

void Session::quantizeInto(const QuantizedWeight &weight, const float *values) {
  std::array<int32_t, 4> indices = weight.tensors();
  TensorRef views[4];
  // zero3's parts: the tensors quantized whole here first (the offset of
  // a double-quantized absmax is their mean, so no part is computed
  // alone), then each rank keeps its elements.
  std::vector<uint8_t> wholes[4];
  for (int k = 0; k < 4; ++k) {
    if (indices[k] < 0)
      continue;
    views[k] = hostView(indices[k]);
    const TensorInfo &info = prog.tensors[size_t(indices[k])];
    if (!info.isShard())
      continue;
    views[k].shape = info.wholeShape();
    wholes[k].resize(size_t(views[k].numBytes()));
    views[k].data = wholes[k].data();
  }
  quantizeWeight(weight, values, views[0], views[1], views[2], views[3]);
  for (int k = 0; k < 4; ++k) {
    if (wholes[k].empty())
      continue;
    const TensorInfo &info = prog.tensors[size_t(indices[k])];
    TensorRef part = hostView(indices[k]);
    size_t size = dtypeSize(info.dtype);
    int64_t first = info.partStart(prog.partOf(comm->rank()));
    int64_t count = std::min(part.numElements(), info.wholeElements() - first);
    std::memcpy(part.data, wholes[k].data() + size_t(first) * size,
                size_t(count) * size);
    std::memset(static_cast<char *>(part.data) + size_t(count) * size, 0,
                size_t(part.numBytes()) - size_t(count) * size);
  }
}

Status Session::pushTensors(std::vector<int32_t> indices) {
  if (device->hostAccessible())
    return Status::success(); // the mirror is the region
  std::sort(indices.begin(), indices.end(), [&](int32_t a, int32_t b) {
    return prog.tensors[a].offset < prog.tensors[b].offset;
  });
  int64_t deviceBytes = devicePart(prog);
  // Copies [begin, end) of the region, within one of its two parts.
  auto copy = [&](int64_t begin, int64_t end) -> Status {
    if (begin >= end)
      return Status::success();
    if (begin >= deviceBytes) {
      if (hostPartShared)
        return Status::success(); // the host part is the backend's memory
      return device->upload(device->persistentAt(begin),
                            hostMirror + (begin - deviceBytes),
                            size_t(end - begin));
    }
    return device->upload(device->persistentAt(begin), mirror + begin,
                          size_t(end - begin));
  };
  // Neighbours (gaps of under 64 KiB, within one part) in one copy.
  constexpr int64_t kGap = int64_t(64) << 10;
  int64_t begin = 0, end = 0;
  bool open = false;
  for (int32_t index : indices) {
    const TensorInfo &info = prog.tensors[index];
    int64_t first = info.offset, last = info.offset + info.bytes;
    bool samePart = (first >= deviceBytes) == (begin >= deviceBytes);
    if (open && samePart && first <= end + kGap) {
      end = std::max(end, last);
      continue;
    }
    if (open)
      if (Status status = copy(begin, end); !status.ok())
        return status;
    begin = first;
    end = last;
    open = true;
  }
  if (open)
    if (Status status = copy(begin, end); !status.ok())
      return status;
  return device->synchronize();
}

int64_t Session::stepCount() {
  if (prog.stepCounter < 0)
    return -1;
  int64_t count = 0;
  TensorRef counter = view(prog.stepCounter);
  if (!device->download(&count, counter.data, sizeof(count)).ok() ||
      !device->synchronize().ok())
    return -1;
  return count;
}

Status Session::readScalar(int32_t index, double &value) {
  TensorRef ref = view(index);
  if (ref.numElements() != 1)
    return Status::failure("'" + prog.tensors[index].name +
                           "' is not a scalar");
  uint8_t bytes[8] = {};
  Status status = device->download(bytes, ref.data, ref.numBytes());
  if (status.ok())
    status = device->synchronize();
  if (!status.ok())
    return status;
  ref.data = bytes;
  value = isFloat(ref.dtype) ? double(loadF32(ref, 0)) : double(loadI64(ref, 0));
  return Status::success();
}

Status Session::step(float &loss) {
  if (!staged) {
    Status status = stageInputs();
    if (!status.ok())
      return status;
  }
  Status status = launch();
  return status.ok() ? finish(loss) : status;
}

Status Session::streamWithInputs(int32_t index) {
  if (index < 0 || size_t(index) >= prog.tensors.size() ||
      prog.tensors[index].storage != Storage::Persistent)
    return Status::failure("only a persistent tensor can travel with the "
                           "inputs");
  const TensorInfo &info = prog.tensors[index];
  for (const Backend::Range &range : inputRanges)
    if (range.offset == info.offset)
      return Status::success();
  inputRanges.push_back({info.offset, info.bytes});
  return Status::success();
}

Status Session::stageInputs() {
  if (staged)
    return Status::failure("the inputs of the next step are already staged");
  Status status = device->stageInputs(nextSlot, mirror, inputRanges);
  if (status.ok())
    staged = true;
  return status;
}

Status Session::launch(const EntryPoint *entry) {
  // A step that reads no input (gradient accumulation's apply step) leaves
  // the staged batch to the next one.
  bool consumes = entry ? entry->readsInputs : prog.stepReadsInputs;
  if (consumes && !staged)
    return Status::failure("cannot run a step before its input batch is "
                           "staged (Session::stageInputs)");
  if (launched)
    return Status::failure("the previous step was not finished");
  if (consumes) {
    Status status = device->consumeInputs(nextSlot, inputRanges);
    if (!status.ok())
      return status;
    staged = false;
    nextSlot = 1 - nextSlot;
  }
  launched = true;
  const std::vector<Instruction> &instructions =
      entry ? entry->instructions : prog.instructions;
  runningLoss = entry ? entry->loss : prog.loss;

  // The high-water mark is measured on the first run of the training step
  // and of each entry point.
  int64_t &mark = entry ? entryHighWater.try_emplace(entry->name, -1).first->second
                         : highWater;
  bool measure = mark < 0;
  runningProfile = nullptr;
  if (profiling) {
    Profile &profile = profiles[entry ? entry->name : "step"];
    profile.instructions = &instructions;
    profile.seconds.resize(instructions.size(), 0.0);
    runningProfile = &profile;
  }
  const char *name = entry ? entry->name.c_str() : "step";
  // Graphs: the first run of an entry point goes kernel by kernel (it
  // measures the high-water mark and does the backend's one-time work:
  // constants, workspace, NCCL); the second is captured and replayed, and
  // so is every later one. A profiled run goes kernel by kernel, to time
  // each. An entry point the backend cannot capture (collectives through
  // host memory) stays kernel by kernel, said once by graphNotes().
  if (graphsOn && !measure && !runningProfile && device->capturesGraphs()) {
    GraphRuns &graph = graphs[name];
    if (graph.refused.empty()) {
      bool replayed = false;
      Status status = Status::success();
      if (graph.id >= 0)
        status = device->replay(graph.id, replayed);
      if (status.ok() && !replayed) {
        status = capture(instructions, name, graph);
        if (status.ok() && graph.id >= 0)
          status = device->replay(graph.id, replayed);
      }
      if (!status.ok()) {
        launched = false;
        return Status::failure(std::string(name) + ": " + status.error);
      }
      if (replayed) {
        ++graph.replays;
        return Status::success();
      }
    }
  }
  ArenaTrace trace(prog.alignment);
  if (Status status =
          runInstructions(instructions, name, measure ? &trace : nullptr);
      !status.ok()) {
    launched = false;
    return status;
  }
  if (runningProfile)
    device->mark(instructions.size());
  if (measure) {
    if (prog.tensors[runningLoss].storage == Storage::Arena)
      trace.keepUntil(prog.tensors[runningLoss].offset, instructions.size());
    if (!entry)
      for (const auto &[name, index] : prog.metrics)
        if (prog.tensors[index].storage == Storage::Arena)
          trace.keepUntil(prog.tensors[index].offset, instructions.size());
    mark = trace.peak();
  }
  return Status::success();
}

Status Session::runInstructions(const std::vector<Instruction> &instructions,
                                 const char *name, ArenaTrace *trace,
                                 const char *verb) {
  std::vector<TensorRef> operands, results;
  auto known = joins.find(&instructions);
  if (known == joins.end())
    known =
        joins.emplace(&instructions, collectiveJoins(prog, instructions)).first;
  const CollectiveJoins &joined = known->second;
  device->beginRun();
  // Joins the collectives due before instruction `at` (at the end: after
  // the last); their memory was in use until then (and instruction `at`
  // may take it).
  auto join = [&](size_t at) -> Status {
    // In order: waiting for the last waits for all.
    if (!joined.before[at].empty()) {
      size_t collective = joined.before[at].back();
      Status status = device->join(joined.ordinal[collective]);
      if (!status.ok())
        return Status::failure(std::string(name) + " " + verb +
                               " joining the collective of instruction #" +
                               std::to_string(collective) + ": " +
                               status.error);
    }
    for (size_t collective : joined.before[at]) {
      if (trace) {
        const Instruction &inst = instructions[collective];
        for (const std::vector<int32_t> *tensors :
             {&inst.operands, &inst.results})
          for (int32_t index : *tensors)
            if (index != kNotComputed &&
                prog.tensors[index].storage == Storage::Arena)
              trace->read(prog.tensors[index].offset,
                          std::min(at, instructions.size()) - 1);
      }
    }
    return Status::success();
  };
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction &inst = instructions[i];
    if (Status status = join(i); !status.ok())
      return status;
    if (runningProfile)
      device->mark(i);
    operands.clear();
    results.clear();
    for (int32_t index : inst.operands) {
      operands.push_back(view(index));
      if (trace && prog.tensors[index].storage == Storage::Arena)
        trace->read(prog.tensors[index].offset, i);
    }
    for (int32_t index : inst.results) {
      if (index == kNotComputed) {
        results.push_back(TensorRef()); // a result the kernel skips
        continue;
      }
      results.push_back(view(index));
      if (trace && prog.tensors[index].storage == Storage::Arena)
        trace->write(prog.tensors[index].offset, prog.tensors[index].bytes, i);
    }
    Status status = device->execute(prog, inst, operands, results);
    if (!status.ok())
      return Status::failure(std::string(name) + " " + verb +
                             " in instruction #" + std::to_string(i) + " (" +
                             kernelName(inst.kernel) + "): " + status.error);
  }
  if (Status status = join(instructions.size()); !status.ok())
    return status;
  if (Status status = device->joinAll(); !status.ok())
    return Status::failure(std::string(name) + " " + verb +
                           " joining its collectives: " + status.error);
  return Status::success();
}

Status Session::capture(const std::vector<Instruction> &instructions,
                        const char *name, GraphRuns &graph) {
  graph.id = -1;
  Status began = device->beginCapture();
  if (!began.ok()) {
    graph.refused = began.error;
    return Status::success();
  }
  Status recorded =
      runInstructions(instructions, name, nullptr, "cannot be captured");
  int id = -1;
  int64_t nodes = -1;
  Status ended = device->endCapture(id, nodes);
  // Nothing recorded has run: the same instructions run kernel by kernel.
  if (!recorded.ok())
    graph.refused = recorded.error;
  else if (!ended.ok())
    graph.refused = ended.error;
  else {
    graph.id = id;
    graph.nodes = nodes;
    ++graph.captures;
  }
  return Status::success();
}

std::vector<std::string> Session::graphNotes() const {
  std::vector<std::string> notes;
  for (const auto &[name, graph] : graphs) {
    if (!graph.refused.empty())
      notes.push_back(name + " runs kernel by kernel: " + graph.refused);
    else if (graph.replays)
      notes.push_back(name + " ran as one CUDA graph" +
                      (graph.nodes >= 0 ? " of " +
                                              std::to_string(graph.nodes) +
                                              " kernels and copies"
                                        : std::string()) +
                      " " + std::to_string(graph.replays) + " time" +
                      (graph.replays == 1 ? "" : "s") + " (captured " +
                      std::to_string(graph.captures) + " time" +
                      (graph.captures == 1 ? "" : "s") + ")");
  }
  return notes;
}

Status Session::finish(float &loss) {
  if (!launched)
    return Status::failure("finish() without a launched step");
  launched = false;
  // The loss, in its element type, through a host copy; waiting for it
  // waits for the step.
  uint8_t bytes[8] = {};
  TensorRef lossView = view(runningLoss);
  Status status = device->download(bytes, lossView.data, lossView.numBytes());
  if (status.ok())
    status = device->synchronize();
  if (!status.ok())
    return Status::failure("step failed: " + status.error);
  lossView.data = bytes;
  loss = loadF32(lossView, 0);
  if (runningProfile) {
    std::vector<double> at;
    size_t count = runningProfile->seconds.size();
    status = device->readMarks(count + 1, at);
    if (!status.ok())
      return Status::failure("profiling: " + status.error);
    for (size_t i = 0; i < count; ++i)
      runningProfile->seconds[i] += at[i + 1] - at[i];
    ++runningProfile->runs;
    runningProfile = nullptr;
  }
  return Status::success();
}

} // namespace tgc::rt
