//===- Program.cpp - loading and verifying .tgx files ---------------------===//
//
// Decodes a .tgx file into a Program after the FlatBuffers verifier has
// checked its structure, then checks what the structure cannot: tensor
// sizes and region bounds, and every instruction against its kernel's
// signature (verifyInstruction in Verify.cpp). Messages name the tensor or
// instruction at fault.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Program.h"

#include "../FileIO.h"
#include "../Scalar.h"
#include "Verify.h"
#include "tgc/Support/CheckedMath.h"
#include "tgc/format/TGXFile.h"
#include "tgc/format/tgx_generated.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

namespace tgc::rt {

bool isCollective(Kernel kernel) {
  return kernel == Kernel::AllReduce || kernel == Kernel::ReduceScatter ||
         kernel == Kernel::AllGather || kernel == Kernel::Shard;
}

bool overlapsCompute(Kernel kernel) {
  return kernel == Kernel::AllReduce || kernel == Kernel::ReduceScatter ||
         kernel == Kernel::AllGather;
}

CollectiveJoins collectiveJoins(const Program &program,
                                const std::vector<Instruction> &instructions) {
  struct Extent {
    Storage storage;
    int64_t begin, end;
  };
  auto extentOf = [&](int32_t index) {
    const TensorInfo &tensor = program.tensors[size_t(index)];
    return Extent{tensor.storage, tensor.offset, tensor.offset + tensor.bytes};
  };
  auto touched = [&](const Instruction &inst) {
    std::vector<Extent> extents;
    for (int32_t index : inst.operands)
      extents.push_back(extentOf(index));
    for (int32_t index : inst.results)
      if (index != kNotComputed)
        extents.push_back(extentOf(index));
    return extents;
  };
  CollectiveJoins joins;
  joins.before.resize(instructions.size() + 1);
  joins.ordinal.assign(instructions.size(), 0);
  // The collective in flight (one at most), with its memory.
  std::optional<std::pair<size_t, std::vector<Extent>>> pending;
  size_t queued = 0;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction &inst = instructions[i];
    std::vector<Extent> extents = touched(inst);
    auto shares = [&](const std::vector<Extent> &memory) {
      for (const Extent &a : memory)
        for (const Extent &b : extents)
          if (a.storage == b.storage && a.begin < b.end && b.begin < a.end)
            return true;
      return false;
    };
    bool collective = overlapsCompute(inst.kernel);
    if (pending && (collective || shares(pending->second))) {
      joins.before[i].push_back(pending->first);
      pending.reset();
    }
    if (collective) {
      joins.ordinal[i] = queued++;
      pending = std::make_pair(i, std::move(extents));
    }
  }
  if (pending)
    joins.before[instructions.size()].push_back(pending->first);
  return joins;
}

int64_t TensorInfo::wholeElements() const {
  if (!isShard())
    return numElements();
  int64_t n = 1;
  for (int64_t d : shardOf)
    n *= d;
  return n;
}

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const char *kernelName(Kernel kernel) {
  switch (kernel) {
#define TGC_KERNEL(ID, NAME)                                                   \
  case Kernel::ID:                                                             \
    return NAME;
#include "tgc/format/Kernels.def"
  }
  return "unknown";
}

bool mayLeaveResults(Kernel kernel) {
  return kernel == Kernel::LayerNormGrad || kernel == Kernel::RmsNormGrad ||
         kernel == Kernel::AttentionGrad;
}

static bool lookupKernel(const std::string &name, Kernel &kernel) {
#define TGC_KERNEL(ID, NAME)                                                   \
  if (name == NAME) {                                                          \
    kernel = Kernel::ID;                                                       \
    return true;                                                               \
  }
#include "tgc/format/Kernels.def"
  return false;
}

int64_t Instruction::getInt(const std::string &name, int64_t otherwise) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? otherwise : it->second.i;
}
double Instruction::getFloat(const std::string &name, double otherwise) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? otherwise : it->second.f;
}
bool Instruction::getBool(const std::string &name, bool otherwise) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? otherwise : it->second.i != 0;
}
std::vector<int64_t> Instruction::getInts(const std::string &name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? std::vector<int64_t>() : it->second.ints;
}

static bool isOptimizerUpdate(Kernel kernel) {
  return kernel == Kernel::AdamWUpdate ||
         kernel == Kernel::MultiAdamWUpdate || kernel == Kernel::SGDUpdate ||
         kernel == Kernel::AdamW8bitUpdate ||
         kernel == Kernel::AdamW4bitUpdate || kernel == Kernel::SGD8bitUpdate ||
         kernel == Kernel::AdafactorUpdate;
}

bool hasApplyPredicate(const Program &program, const Instruction &inst) {
  return isOptimizerUpdate(inst.kernel) && inst.operands.size() > 4 &&
         program.tensors[inst.operands.back()].dtype == DType::I1;
}

std::vector<size_t> updatedOperands(const Instruction &inst) {
  switch (inst.kernel) {
  case Kernel::AdamWUpdate:
    return {0, 2, 3};
  case Kernel::MultiAdamWUpdate: {
    // New param i from operand i, new moments i from operands 2N + i and
    // 3N + i.
    size_t n = inst.results.size() / 3;
    std::vector<size_t> sources;
    for (size_t r = 0; r < 3 * n; ++r)
      sources.push_back(r < n ? r : r + n);
    return sources;
  }
  case Kernel::AdamW8bitUpdate:
  case Kernel::AdamW4bitUpdate:
    return {0, 2, 3, 4, 5};
  case Kernel::SGD8bitUpdate:
    return {0, 2, 3};
  case Kernel::AdafactorUpdate: {
    // param, then each state operand (from #2) in result order.
    std::vector<size_t> sources = {0};
    for (size_t k = 1; k < inst.results.size(); ++k)
      sources.push_back(1 + k);
    return sources;
  }
  default:
    if (inst.results.size() == 2)
      return {0, 4}; // SGD with a momentum buffer
    return {0};
  }
}

std::vector<QuantizedStatePart> quantizedStateParts(const Program &program) {
  std::vector<QuantizedStatePart> parts;
  // The instruction that makes each arena tensor (the loader checked the
  // indices), built once.
  std::unordered_map<int32_t, const Instruction *> producers;
  for (const Instruction &inst : program.instructions)
    for (int32_t result : inst.results)
      producers.emplace(result, &inst);
  auto producer = [&](int32_t tensor, Kernel kernel) -> const Instruction * {
    auto found = producers.find(tensor);
    return found != producers.end() && found->second->kernel == kernel
               ? found->second
               : nullptr;
  };
  auto elementsOf = [&](int32_t tensor) {
    return program.tensors[size_t(tensor)].numElements();
  };
  // The real elements of the whole parameter an update's part belongs to:
  // zero3's part says; zero1/zero2 cut it from the whole, flattened and
  // padded by a concatenation of zeros (tg-data-parallel).
  auto wholeElements = [&](int32_t param) -> int64_t {
    const TensorInfo &info = program.tensors[size_t(param)];
    if (info.isShard())
      return info.wholeElements();
    const Instruction *shard = producer(param, Kernel::Shard);
    if (!shard)
      return -1;
    int32_t padded = shard->operands[0];
    if (const Instruction *concat = producer(padded, Kernel::Concat))
      return elementsOf(concat->operands[0]);
    return elementsOf(padded);
  };
  for (const Instruction &inst : program.instructions) {
    bool packed = inst.kernel == Kernel::AdamW4bitUpdate;
    std::vector<std::pair<size_t, size_t>> codesAndMaps;
    if (inst.kernel == Kernel::AdamW8bitUpdate || packed)
      codesAndMaps = {{2, 6}, {4, 7}};
    else if (inst.kernel == Kernel::SGD8bitUpdate)
      codesAndMaps = {{2, 4}};
    for (auto [codesOperand, mapOperand] : codesAndMaps) {
      QuantizedStatePart part;
      part.codes = inst.operands[codesOperand];
      part.packed = packed;
      const TensorInfo &codes = program.tensors[size_t(part.codes)];
      if (!codes.isShard())
        continue;
      // The whole's elements, as many as its codes hold (a program whose
      // parameter says otherwise is left alone).
      part.elements = codes.wholeElements();
      if (packed) {
        part.elements = wholeElements(inst.operands[0]);
        if (part.elements < 0 ||
            (part.elements + 1) / 2 != codes.wholeElements())
          continue;
      }
      // The map, from the executable's constants (the loader checked its
      // type and size); the code of 0 by the update's own rule.
      const Instruction *constant =
          producer(inst.operands[mapOperand], Kernel::Constant);
      if (!constant)
        continue;
      int64_t offset = constant->getInt("blob_offset");
      int64_t entries = elementsOf(constant->results[0]);
      if (offset < 0 || size_t(offset) + size_t(entries) * sizeof(float) >
                            program.constants.size())
        continue;
      std::vector<float> values(static_cast<size_t>(entries));
      std::memcpy(values.data(), program.constants.data() + offset,
                  values.size() * sizeof(float));
      if (packed) {
        part.zeroCode = quantize4(values.data(), 0.0f);
      } else {
        // bitsandbytes' rule: the count of midpoints below the value.
        for (size_t i = 0; i + 1 < values.size(); ++i)
          part.zeroCode += (values[i] + values[i + 1]) * 0.5f < 0.0f;
      }
      parts.push_back(part);
    }
  }
  return parts;
}

/// Groups the training step, eval_step and the bucket entries by sequence
/// length, checking that every bucket input `<name>@L` is a view of the
/// input `<name>` (same offset and element type, no more bytes) and that
/// each bucket has its training and evaluation step.
static Status collectBuckets(Program &program, int64_t seqLen) {
  Bucket largest;
  largest.seqLen = seqLen;
  for (size_t e = 0; e < program.entries.size(); ++e)
    if (program.entries[e].name == "eval_step")
      largest.eval = int32_t(e);
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (info.role == Role::Input && info.name.find('@') == std::string::npos)
      largest.inputs[info.name] = int32_t(i);
  }
  // Without buckets, a sequence model's one length is its tokens'.
  auto tokens = largest.inputs.find("tokens");
  if (seqLen == 0 && tokens != largest.inputs.end() &&
      !program.tensors[tokens->second].shape.empty())
    largest.seqLen = program.tensors[tokens->second].shape.back();
  std::map<int64_t, Bucket> smaller;
  for (size_t e = 0; e < program.entries.size(); ++e) {
    const EntryPoint &entry = program.entries[e];
    if (!entry.seqLen)
      continue;
    Bucket &bucket = smaller[entry.seqLen];
    bucket.seqLen = entry.seqLen;
    std::string expected = (entry.trains ? "train_step@" : "eval_step@") +
                           std::to_string(entry.seqLen);
    if (entry.name != expected)
      return Status::failure("entry point '" + entry.name + "' of sequence "
                             "length " + std::to_string(entry.seqLen) +
                             " should be named '" + expected + "'");
    (entry.trains ? bucket.train : bucket.eval) = int32_t(e);
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    size_t at = info.name.rfind('@');
    if (info.role != Role::Input || at == std::string::npos)
      continue;
    std::string base = info.name.substr(0, at);
    int64_t length = std::atoll(info.name.c_str() + at + 1);
    auto bucket = smaller.find(length);
    auto whole = largest.inputs.find(base);
    if (bucket == smaller.end() || whole == largest.inputs.end() ||
        std::to_string(length) != info.name.substr(at + 1))
      return Status::failure("input '" + info.name + "' belongs to no shape "
                             "bucket");
    const TensorInfo &full = program.tensors[whole->second];
    if (full.offset != info.offset || full.dtype != info.dtype ||
        info.bytes > full.bytes)
      return Status::failure("input '" + info.name + "' is not a view of '" +
                             base + "'");
    bucket->second.inputs[base] = int32_t(i);
  }
  for (auto &[length, bucket] : smaller) {
    if (bucket.train < 0)
      return Status::failure("shape bucket " + std::to_string(length) +
                             " has no training step");
    if (bucket.inputs.size() != largest.inputs.size())
      return Status::failure("shape bucket " + std::to_string(length) +
                             " lacks some of the model's inputs");
    program.buckets.push_back(std::move(bucket));
  }
  program.buckets.push_back(std::move(largest));
  return Status::success();
}

const EntryPoint *Program::findEntry(const std::string &name) const {
  for (const EntryPoint &entry : entries)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

int32_t Program::findPersistent(const std::string &name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].storage == Storage::Persistent && tensors[i].name == name)
      return int32_t(i);
  return -1;
}

Status loadProgram(const std::string &path, Program &program) {
  std::vector<char> bytes;
  // 1 TiB: far beyond any executable (the compiler caps constants); the
  // point is to refuse devices and streams before reading them.
  Status status = readRegularFile(path, bytes, uint64_t(1) << 40);
  if (!status.ok())
    return status;
  status = parseProgramFile(reinterpret_cast<const uint8_t *>(bytes.data()),
                            bytes.size(), program);
  if (!status.ok())
    return Status::failure("'" + path + "' is not a valid tgc executable: " +
                           status.error);
  return status;
}

Status parseProgramFile(const uint8_t *data, size_t size, Program &program) {
  if (size < 8 || !tgx::ProgramBufferHasIdentifier(data))
    return Status::failure("missing the TGX1 file identifier");
  size_t payload = 0;
  if (const char *error = tgx::checkTrailer(data, size, payload))
    return Status::failure(error);
  Status status = parseProgram(data, payload, program);
  program.checksum = tgx::storedChecksum(data, size);
  return status;
}

/// The elements of a FlatBuffers vector of scalars. The format aligns a
/// vector only to its 4-byte length, so in a hostile file a vector of
/// 8-byte elements may be misaligned: copy bytes instead of loading them
/// as T (little-endian, like every host tgc runs on).
template <typename T>
static std::vector<T> readVector(const flatbuffers::Vector<T> *vector) {
  std::vector<T> out(vector->size());
  if (!out.empty())
    std::memcpy(out.data(), vector->Data(), out.size() * sizeof(T));
  return out;
}

/// Bytes of a tensor, or -1 when a dimension is negative or the size is
/// larger than any tensor may be.
static int64_t checkedBytes(const std::vector<int64_t> &shape, DType dtype) {
  return checkedTensorBytes(shape, int64_t(dtypeSize(dtype))).value_or(-1);
}

/// Names of persistent tensors become safetensors names in checkpoints:
/// printable ASCII without quotes or backslashes, and not the header's
/// reserved key.
static bool isCheckpointName(const std::string &name) {
  if (name.empty() || name == "__metadata__")
    return false;
  for (char c : name)
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
      return false;
  return true;
}

static std::string describeTensor(size_t index, const std::string &name) {
  return "tensor #" + std::to_string(index) + " ('" + name + "')";
}

Status parseProgram(const uint8_t *data, size_t size, Program &program) {
  if (size < 8 || !tgx::ProgramBufferHasIdentifier(data))
    return Status::failure("missing the TGX1 file identifier");
  flatbuffers::Verifier verifier(data, size);
  if (!tgx::VerifyProgramBuffer(verifier))
    return Status::failure("the FlatBuffers structure is corrupt");
  const tgx::Program *fb = tgx::GetProgram(data);

  program = Program();
  program.version = fb->version();
  if (program.version != tgx::kFormatVersion)
    return Status::failure("format version " + std::to_string(fb->version()) +
                           ", this runtime reads version " +
                           std::to_string(tgx::kFormatVersion) +
                           " (recompile it with this tgc-compile)");
  program.model = fb->model() ? fb->model()->str() : "";
  program.options = fb->options() ? fb->options()->str() : "";
  program.persistentBytes = fb->persistent_bytes();
  program.arenaBytes = fb->arena_bytes();
  program.peakLiveBytes = fb->peak_live_bytes();
  program.alignment = fb->alignment();
  if (program.persistentBytes < 0 || program.arenaBytes < 0 ||
      program.peakLiveBytes < 0)
    return Status::failure("negative region size");
  if (std::string past =
          checkRegionBytes(program.persistentBytes, program.arenaBytes);
      !past.empty())
    return Status::failure(past);
  if (program.peakLiveBytes > program.arenaBytes)
    return Status::failure("a planned peak larger than the arena");
  program.hostBytes = fb->host_bytes();
  if (program.hostBytes < 0 || program.hostBytes > program.persistentBytes)
    return Status::failure("host_bytes " + std::to_string(program.hostBytes) +
                           " is outside the persistent region of " +
                           std::to_string(program.persistentBytes) + " bytes");
  if (!isPowerOfTwo(program.alignment) || program.alignment > 65536)
    return Status::failure("alignment " + std::to_string(program.alignment) +
                           " is not a power of two of at most 65536");
  program.worldSize = fb->world_size();
  program.dataParallel = fb->data_parallel() ? fb->data_parallel()->str() : "";
  if (program.worldSize < 1 || program.worldSize > kMaxWorldSize)
    return Status::failure("world_size " + std::to_string(program.worldSize) +
                           " is out of range [1, " +
                           std::to_string(kMaxWorldSize) + "]");
  if (program.dataParallel != "" && program.dataParallel != "ddp" &&
      program.dataParallel != "zero1" && program.dataParallel != "zero2" &&
      program.dataParallel != "zero3")
    return Status::failure("unknown data_parallel mode '" +
                           program.dataParallel + "'");
  if (program.dataParallel.empty() && program.worldSize != 1)
    return Status::failure("world_size " + std::to_string(program.worldSize) +
                           " without a data_parallel mode");
  program.shardGroup =
      fb->shard_group() == 0 ? program.worldSize : fb->shard_group();
  if (program.shardGroup < 1 || program.worldSize % program.shardGroup != 0)
    return Status::failure("shard_group " + std::to_string(fb->shard_group()) +
                           " is not a divisor of world_size " +
                           std::to_string(program.worldSize));
  if (program.shardGroup != program.worldSize &&
      (program.dataParallel.empty() || program.dataParallel == "ddp"))
    return Status::failure(
        "shard_group " + std::to_string(fb->shard_group()) + " under " +
        (program.dataParallel.empty() ? std::string("no data_parallel mode")
                                      : std::string("ddp")) +
        ", which splits nothing (a ZeRO mode does)");
  if (fb->constants())
    program.constants.assign(fb->constants()->begin(), fb->constants()->end());

  if (!fb->tensors())
    return Status::failure("no tensor table");
  std::set<std::string> persistentNames;
  for (size_t i = 0; i < fb->tensors()->size(); ++i) {
    const tgx::Tensor *t = fb->tensors()->Get(i);
    TensorInfo info;
    info.name = t->name() ? t->name()->str() : "";
    if (uint8_t(t->dtype()) > uint8_t(tgx::DType::U8))
      return Status::failure(describeTensor(i, info.name) +
                             " has an unknown element type");
    info.dtype = DType(uint8_t(t->dtype()));
    if (t->shape())
      info.shape = readVector(t->shape());
    if (t->storage() == tgx::Storage::Persistent)
      info.storage = Storage::Persistent;
    else if (t->storage() == tgx::Storage::Arena)
      info.storage = Storage::Arena;
    else
      return Status::failure(describeTensor(i, info.name) +
                             " has an unknown storage");
    if (uint8_t(t->role()) > uint8_t(tgx::Role::Scratch) ||
        uint8_t(t->init()) > uint8_t(tgx::InitKind::Constant))
      return Status::failure(describeTensor(i, info.name) +
                             " has an unknown role or initialisation");
    info.role = Role(uint8_t(t->role()));
    info.init = InitKind(uint8_t(t->init()));
    info.initA = t->init_a();
    info.initB = t->init_b();
    info.frozen = t->frozen();
    info.loraBase = t->lora_base() ? t->lora_base()->str() : "";
    info.loraScale = t->lora_scale();
    info.loraFanInFanOut = t->lora_fan_in_fan_out();
    if (t->shard_of())
      info.shardOf = readVector(t->shard_of());
    info.copyOf = t->copy_of() ? t->copy_of()->str() : "";
    info.offset = t->offset();
    info.bytes = checkedBytes(info.shape, info.dtype);
    if (info.bytes < 0)
      return Status::failure(describeTensor(i, info.name) +
                             " has an invalid shape");
    int64_t region = info.storage == Storage::Persistent
                         ? program.persistentBytes
                         : program.arenaBytes;
    if (info.offset < 0 || info.offset > region ||
        info.bytes > region - info.offset)
      return Status::failure(describeTensor(i, info.name) + " of " +
                             std::to_string(info.bytes) + " bytes at offset " +
                             std::to_string(info.offset) +
                             " lies outside its region of " +
                             std::to_string(region) + " bytes");
    // A tensor is wholly on the device or wholly in host memory.
    int64_t hostStart = program.persistentBytes - program.hostBytes;
    if (info.storage == Storage::Persistent && info.bytes > 0 &&
        info.offset < hostStart && info.offset + info.bytes > hostStart)
      return Status::failure(describeTensor(i, info.name) + " at offset " +
                             std::to_string(info.offset) +
                             " straddles the start of the host part at " +
                             std::to_string(hostStart));
    if (int64_t(dtypeSize(info.dtype)) > program.alignment ||
        info.offset % program.alignment != 0)
      return Status::failure(describeTensor(i, info.name) + " at offset " +
                             std::to_string(info.offset) +
                             " is not aligned to the program's " +
                             std::to_string(program.alignment) + " bytes");
    if (info.storage == Storage::Persistent) {
      if (!isCheckpointName(info.name))
        return Status::failure(describeTensor(i, info.name) +
                               ": a persistent tensor needs a name of "
                               "printable ASCII (no quotes or backslashes, "
                               "not __metadata__)");
      if (!persistentNames.insert(info.name).second)
        return Status::failure(describeTensor(i, info.name) +
                               ": two persistent tensors have this name");
    }
    if ((info.storage == Storage::Persistent) !=
        (info.role != Role::Transient))
      return Status::failure(describeTensor(i, info.name) +
                             ": only persistent tensors are parameters, "
                             "state or inputs");
    if (info.isShard()) {
      // A part of a whole of at most shard_group parts, itself a valid
      // tensor: state, a parameter (zero3) or an accumulator (zero2 and
      // zero3 with accumulation). A part drawn at random draws its
      // elements of the whole.
      int64_t wholeBytes = checkedBytes(info.shardOf, info.dtype);
      if (info.storage != Storage::Persistent ||
          (info.role != Role::State && info.role != Role::Param &&
           info.role != Role::Accumulator) ||
          info.shape.size() != 1 || wholeBytes < 0 ||
          info.wholeElements() > program.shardGroup * info.numElements() ||
          (info.wholeElements() > 0 && info.numElements() == 0))
        return Status::failure(describeTensor(i, info.name) +
                               ": an invalid part of a tensor split across " +
                               std::to_string(program.shardGroup) + " ranks");
    }
    if (info.role == Role::Accumulator && !isFloat(info.dtype))
      return Status::failure(describeTensor(i, info.name) +
                             ": an accumulator must be a float tensor");
    if (!std::isfinite(info.initA) || !std::isfinite(info.initB))
      return Status::failure(describeTensor(i, info.name) +
                             ": a non-finite initialisation parameter");
    if (info.init == InitKind::Normal && !(info.initB > 0.0))
      return Status::failure(describeTensor(i, info.name) +
                             ": normal initialisation needs std > 0");
    if (info.init == InitKind::Uniform && !(info.initA < info.initB))
      return Status::failure(describeTensor(i, info.name) +
                             ": uniform initialisation needs low < high");
    program.tensors.push_back(std::move(info));
  }
  // Frozen copies: of a parameter of the same type (zero3: the same part
  // of the same whole), persistent state.
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &copy = program.tensors[i];
    if (copy.copyOf.empty())
      continue;
    int32_t source = program.findPersistent(copy.copyOf);
    if (copy.role != Role::State || copy.storage != Storage::Persistent ||
        source < 0 || program.tensors[source].role != Role::Param ||
        program.tensors[source].dtype != copy.dtype ||
        program.tensors[source].shape != copy.shape ||
        program.tensors[source].shardOf != copy.shardOf)
      return Status::failure(describeTensor(i, copy.name) +
                             ": a frozen copy of '" + copy.copyOf +
                             "', which is not a parameter of its type");
  }
  // LoRA adapters: B names its weight; A is B's name with lora_A; the
  // shapes must make W + scale (B A) (transposed for fan_in_fan_out) valid.
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &b = program.tensors[i];
    if (b.loraBase.empty())
      continue;
    auto fail = [&](const std::string &message) {
      return Status::failure(describeTensor(i, b.name) + ": " + message);
    };
    static const std::string kB = ".lora_B.weight", kA = ".lora_A.weight";
    if (b.name.size() < kB.size() ||
        b.name.compare(b.name.size() - kB.size(), kB.size(), kB) != 0)
      return fail("a LoRA weight that is not named <module>.lora_B.weight");
    LoraAdapter adapter;
    adapter.b = int32_t(i);
    adapter.a = program.findPersistent(
        b.name.substr(0, b.name.size() - kB.size()) + kA);
    adapter.base = program.findPersistent(b.loraBase);
    adapter.scale = b.loraScale;
    adapter.fanInFanOut = b.loraFanInFanOut;
    if (adapter.a < 0 || adapter.base < 0)
      return fail("its lora_A or its weight '" + b.loraBase + "' is missing");
    const TensorInfo &a = program.tensors[adapter.a];
    const TensorInfo &w = program.tensors[adapter.base];
    if (!(b.loraScale > 0.0) || !std::isfinite(b.loraScale))
      return fail("the LoRA scale must be positive");
    // A weight stored in 4 bits (tg-quantize-frozen) is its codes, two a
    // byte: their count must fit B A's.
    // (zero3: parts of them, of these whole shapes.)
    const std::vector<int64_t> &aShape = a.wholeShape(),
                               &bShape = b.wholeShape(),
                               &wShape = w.wholeShape();
    bool codes = w.dtype == DType::U8 && wShape.size() == 1;
    if (aShape.size() != 2 || bShape.size() != 2 || aShape[0] != bShape[1] ||
        (codes
             ? wShape[0] != (bShape[0] * aShape[1] + 1) / 2
             : wShape.size() != 2 ||
                   (b.loraFanInFanOut
                        ? (wShape[0] != aShape[1] || wShape[1] != bShape[0])
                        : (wShape[0] != bShape[0] || wShape[1] != aShape[1]))))
      return fail("the shapes of A, B and the weight do not match");
    program.adapters.push_back(adapter);
  }

  // The 4-bit weights (checked below, once the instructions are read).
  if (fb->weights_4bit())
    for (const tgx::Weight4bit *w : *fb->weights_4bit()) {
      QuantizedWeight weight;
      weight.codes = w->codes();
      weight.absmax = w->absmax();
      weight.nestedAbsmax = w->nested_absmax();
      weight.offset = w->offset();
      weight.rows = w->rows();
      weight.cols = w->cols();
      weight.blockSize = w->block_size();
      weight.fp4 = w->fp4();
      program.quantized.push_back(weight);
    }

  auto tensorIndexOk = [&](int64_t index) {
    return index >= 0 && size_t(index) < program.tensors.size();
  };
  // Whether a (verified) instruction list reads an input tensor.
  auto readsInputs = [&](const std::vector<Instruction> &list) {
    for (const Instruction &inst : list)
      for (int32_t index : inst.operands)
        if (program.tensors[index].role == Role::Input)
          return true;
    return false;
  };
  // Decodes and verifies a list of instructions; `prefix` names the entry
  // point in errors.
  auto parseInstructions =
      [&](const flatbuffers::Vector<flatbuffers::Offset<tgx::Instruction>>
              *list,
          const std::string &prefix,
          std::vector<Instruction> &out) -> Status {
    if (!list)
      return Status::success();
    for (size_t i = 0; i < list->size(); ++i) {
      const tgx::Instruction *fi = list->Get(i);
      std::string kernelName = fi->kernel() ? fi->kernel()->str() : "";
      Instruction inst;
      std::string where = prefix + "instruction #" + std::to_string(i) +
                          " (" + (kernelName.empty() ? "?" : kernelName) +
                          ")";
      if (!lookupKernel(kernelName, inst.kernel))
        return Status::failure(where + ": unknown kernel");
      if (fi->operands())
        inst.operands = readVector(fi->operands());
      if (fi->results())
        inst.results = readVector(fi->results());
      if (fi->attrs()) {
        for (const tgx::Attr *fa : *fi->attrs()) {
          AttrValue value;
          if (uint8_t(fa->kind()) > uint8_t(tgx::AttrKind::Ints))
            return Status::failure(where + ": attribute of unknown kind");
          value.kind = AttrValue::Kind(uint8_t(fa->kind()));
          value.i = fa->int_value();
          value.f = fa->float_value();
          if (fa->ints())
            value.ints = readVector(fa->ints());
          inst.attrs[fa->name() ? fa->name()->str() : ""] = std::move(value);
        }
      }
      Status status = verifyInstruction(program, inst);
      if (!status.ok())
        return Status::failure(where + ": " + status.error);
      out.push_back(std::move(inst));
    }
    return Status::success();
  };
  Status parsed = parseInstructions(fb->instructions(), "", program.instructions);
  if (!parsed.ok())
    return parsed;
  auto isLossTensor = [&](int32_t index) {
    return tensorIndexOk(index) && program.tensors[index].shape.empty() &&
           isFloat(program.tensors[index].dtype);
  };
  if (fb->entries()) {
    for (size_t e = 0; e < fb->entries()->size(); ++e) {
      const tgx::Entry *fe = fb->entries()->Get(e);
      EntryPoint entry;
      entry.name = fe->name() ? fe->name()->str() : "";
      std::string where = "entry point #" + std::to_string(e) + " ('" +
                          entry.name + "')";
      if (entry.name.empty() || program.findEntry(entry.name) ||
          entry.name == "train_step")
        return Status::failure(where + ": a missing or repeated name");
      entry.seqLen = fe->seq_len();
      entry.trains = fe->trains();
      if (entry.seqLen < 0 || (entry.trains && entry.seqLen == 0) ||
          (entry.seqLen > 0 && (fb->seq_len() <= 0 ||
                                entry.seqLen >= fb->seq_len())))
        return Status::failure(where + ": a shape bucket of sequence length " +
                               std::to_string(entry.seqLen) +
                               " that is not below the training step's " +
                               std::to_string(fb->seq_len()));
      entry.arenaBytes = fe->arena_bytes();
      entry.peakLiveBytes = fe->peak_live_bytes();
      if (entry.arenaBytes < 0 || entry.arenaBytes > program.arenaBytes ||
          entry.peakLiveBytes < 0 || entry.peakLiveBytes > entry.arenaBytes)
        return Status::failure(where + ": its arena does not fit the "
                                       "program's");
      entry.loss = fe->loss();
      if (!isLossTensor(entry.loss))
        return Status::failure(where + ": the loss is not a float scalar");
      parsed = parseInstructions(fe->instructions(), where + ": ",
                                 entry.instructions);
      if (!parsed.ok())
        return parsed;
      // An entry that wrote parameters or state would change the training
      // state; only the training step may. The micro-step of gradient
      // accumulation adds into the accumulators, and only it.
      for (const Instruction &inst : entry.instructions)
        for (int32_t index : inst.results)
          if (index != kNotComputed && !entry.trains &&
              program.tensors[index].storage == Storage::Persistent &&
              program.tensors[index].role != Role::Scratch &&
              (entry.name != "grad_step" ||
               program.tensors[index].role != Role::Accumulator))
            return Status::failure(where + ": writes the persistent tensor '" +
                                   program.tensors[index].name + "'");
      entry.readsInputs = readsInputs(entry.instructions);
      program.entries.push_back(std::move(entry));
    }
  }

  program.stepReadsInputs = readsInputs(program.instructions);
  program.gradAccumSteps = fb->grad_accum_steps();
  program.allowTF32 = fb->allow_tf32();
  program.task = fb->task() ? fb->task()->str() : "";
  program.preference = fb->preference() ? fb->preference()->str() : "";
  if (!program.preference.empty() && program.preference != "dpo" &&
      program.preference != "ipo" && program.preference != "simpo" &&
      program.preference != "orpo")
    return Status::failure("unknown preference loss '" + program.preference +
                           "'");
  program.hfConfig = fb->hf_config() ? fb->hf_config()->str() : "";
  program.hfConfigError =
      fb->hf_config_error() ? fb->hf_config_error()->str() : "";
  if (!program.task.empty() && program.task != "causal-lm" &&
      program.task != "masked-lm" &&
      program.task != "sequence-classification" && program.task != "seq2seq")
    return Status::failure("unknown task '" + program.task + "'");
  Status bucketed = collectBuckets(program, fb->seq_len());
  if (!bucketed.ok())
    return bucketed;
  if (program.gradAccumSteps < 1 ||
      program.gradAccumSteps > kMaxGradAccumSteps)
    return Status::failure("grad_accum_steps " +
                           std::to_string(program.gradAccumSteps) +
                           " is out of range [1, " +
                           std::to_string(kMaxGradAccumSteps) + "]");
  if (program.gradAccumSteps > 1) {
    const EntryPoint *micro = program.findEntry("grad_step");
    if (!micro || !micro->readsInputs)
      return Status::failure("accumulates gradients over " +
                             std::to_string(program.gradAccumSteps) +
                             " micro-batches but has no grad_step entry "
                             "that reads them");
  }

  program.loss = fb->loss();
  program.stepCounter = fb->step_counter();
  if (!tensorIndexOk(program.loss))
    return Status::failure("the loss tensor index is out of range");
  const TensorInfo &loss = program.tensors[program.loss];
  if (loss.shape.size() != 0 || !isFloat(loss.dtype))
    return Status::failure("the loss is not a float scalar");
  if (fb->metrics())
    for (const tgx::Metric *metric : *fb->metrics()) {
      std::string name = metric->name() ? metric->name()->str() : "";
      if (name.empty() || !tensorIndexOk(metric->tensor()))
        return Status::failure("metric '" + name +
                               "': no name or a tensor index out of range");
      const TensorInfo &value = program.tensors[metric->tensor()];
      if (value.shape.size() != 0 || !isFloat(value.dtype))
        return Status::failure("metric '" + name + "' is not a float scalar");
      program.metrics.push_back({name, metric->tensor()});
    }
  if (program.stepCounter != -1) {
    if (!tensorIndexOk(program.stepCounter))
      return Status::failure("the step counter index is out of range");
    const TensorInfo &counter = program.tensors[program.stepCounter];
    if (counter.shape.size() != 0 || counter.dtype != DType::I64 ||
        counter.storage != Storage::Persistent)
      return Status::failure("the step counter is not a persistent i64 "
                             "scalar");
  }
  return checkQuantizedWeights(program);
}

} // namespace tgc::rt
