//===- Program.h - a loaded, verified .tgx executable -----------*- C++ -*-===//
//
// The runtime's in-memory form of a .tgx file. loadProgram verifies the
// whole file before anything runs: the FlatBuffers structure, the format
// version, every tensor (shape, size, region bounds), every instruction
// (a known kernel, operand and result counts, tensor indices, required
// attributes, element types and shapes the kernel can compute on). A
// corrupt or hostile file is an error, never a crash or an access outside
// the buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_PROGRAM_H
#define TGC_RUNTIME_PROGRAM_H

#include "tgc/Support/ProgramLimits.h"
#include "tgc/runtime/Tensor.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgc::rt {

enum class Storage : uint8_t { Persistent, Arena };
/// Accumulator: gradient accumulation's sums, zero between optimizer steps
/// (not checkpointed). Scratch: written before it is read within each step
/// (activations offloaded to host memory), neither initialised nor
/// checkpointed.
enum class Role : uint8_t { Param, State, Input, Transient, Accumulator,
                            Scratch };
enum class InitKind : uint8_t { None, Zeros, Ones, Normal, Uniform, Constant };

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Storage storage = Storage::Arena;
  int64_t offset = 0;
  int64_t bytes = 0;
  Role role = Role::Transient;
  InitKind init = InitKind::None;
  double initA = 0.0, initB = 0.0;
  bool frozen = false;
  /// On a LoRA lora_B parameter: the weight it adapts (empty otherwise),
  /// alpha / rank, and whether the weight is [in, out] (GPT-2's Conv1D).
  std::string loraBase;
  double loraScale = 0.0;
  bool loraFanInFanOut = false;
  /// A part of a tensor split across ranks (ZeRO's optimizer state, zero3's
  /// parameters): the whole tensor's shape, else empty. Part p is elements
  /// [p n, (p + 1) n) of the whole flattened and zero-padded, n this
  /// tensor's element count; rank r holds part Program::partOf(r).
  std::vector<int64_t> shardOf;
  /// A frozen copy (role State): the parameter whose starting value it
  /// holds, else empty.
  std::string copyOf;

  int64_t numElements() const;
  bool isShard() const { return !shardOf.empty(); }
  /// The whole tensor's shape (shardOf for a part).
  const std::vector<int64_t> &wholeShape() const {
    return isShard() ? shardOf : shape;
  }
  /// Elements of the whole tensor (numElements() when it is not a part).
  int64_t wholeElements() const;
  /// The whole's first element that part `part` holds (p n, at most the
  /// whole's end; 0 when it is not a part).
  int64_t partStart(int64_t part) const {
    return isShard() ? std::min(wholeElements(), part * numElements()) : 0;
  }
};

/// A LoRA adapter of a program: the persistent tensors of its weight, A
/// and B (indices into Program::tensors).
struct LoraAdapter {
  int32_t base = -1, a = -1, b = -1;
  double scale = 0.0;
  bool fanInFanOut = false;
};

/// A frozen 4-bit weight of a program (tg-quantize-frozen): the persistent
/// tensors that hold it (indices into Program::tensors; the nested ones -1
/// without double quantization; each may be zero3's part of the tensor),
/// its shape, block size and type, as the executable's table says
/// (checked by Session::create); what loading or drawing the weight
/// quantizes into.
struct QuantizedWeight {
  int32_t codes = -1, absmax = -1, nestedAbsmax = -1, offset = -1;
  int64_t rows = 0, cols = 0, blockSize = 64;
  bool fp4 = false;

  bool nested() const { return nestedAbsmax >= 0; }
  /// Its tensors in that order (-1 for the nested ones it lacks).
  std::array<int32_t, 4> tensors() const {
    return {codes, absmax, nestedAbsmax, offset};
  }
};

struct AttrValue {
  enum Kind : uint8_t { Int, Float, Bool, Ints } kind = Int;
  int64_t i = 0;
  double f = 0.0;
  std::vector<int64_t> ints;
};

/// The kernels a program may call, one per tg op.
enum class Kernel : uint8_t {
#define TGC_KERNEL(ID, NAME) ID,
#include "tgc/format/Kernels.def"
};

/// "tg.matmul" for Kernel::Matmul.
const char *kernelName(Kernel kernel);

/// A result index for a result the kernel does not compute.
constexpr int32_t kNotComputed = -1;

/// The collectives: tg.all_reduce, tg.reduce_scatter, tg.all_gather and
/// tg.shard (which needs the rank).
bool isCollective(Kernel kernel);

/// The collectives a backend may run beside the instructions after them
/// (tg.all_reduce, tg.reduce_scatter, tg.all_gather: the CUDA backend's
/// NCCL stream) until the step joins them.
bool overlapsCompute(Kernel kernel);

/// Kernels that may leave results uncomputed (an output mask): the fused
/// gradient kernels, whose callers need only some operand gradients.
bool mayLeaveResults(Kernel kernel);

struct Instruction {
  Kernel kernel;
  std::vector<int32_t> operands;
  std::vector<int32_t> results;
  std::map<std::string, AttrValue> attrs;

  bool hasAttr(const std::string &name) const { return attrs.count(name); }
  int64_t getInt(const std::string &name, int64_t otherwise = 0) const;
  double getFloat(const std::string &name, double otherwise = 0.0) const;
  bool getBool(const std::string &name, bool otherwise = false) const;
  std::vector<int64_t> getInts(const std::string &name) const;
};

/// For an optimizer update (tg.sgd_update, tg.adamw_update, their 8-bit
/// forms, tg.adafactor_update): whether its
/// last operand is the apply predicate (an i1 scalar) that loss scaling
/// adds, and, for each result, the operand it replaces, which a skipped
/// update leaves in place: new_param <- param, then the state.
struct Program;
bool hasApplyPredicate(const Program &program, const Instruction &inst);
std::vector<size_t> updatedOperands(const Instruction &inst);

/// A ZeRO part of blockwise-quantized optimizer state (an 8-bit or 4-bit
/// update's codes, split across ranks): the codes tensor, whether two
/// codes share a byte, how many elements of the flat whole are real (the
/// rest pads it to the parts' total) and the code of zero in its map, the
/// code the update gives padding (whose value stays 0). A part holding
/// padding in a block with real elements must hold that code there: any
/// other would join the block's absmax.
struct QuantizedStatePart {
  int32_t codes = -1;
  bool packed = false;
  int64_t elements = 0;
  unsigned zeroCode = 0;
};
/// The program's quantized state parts, from its updates and their maps.
std::vector<QuantizedStatePart> quantizedStateParts(const Program &program);

/// Another program over the same tensors, with its own instructions and
/// arena plan: `eval_step` (the forward pass and loss; writes no persistent
/// tensor) or `grad_step` (gradient accumulation's micro-step; writes only
/// Accumulator tensors).
struct EntryPoint {
  std::string name;
  std::vector<Instruction> instructions;
  int64_t arenaBytes = 0;
  int64_t peakLiveBytes = 0;
  int32_t loss = -1;
  /// Whether it reads an input (and so consumes a staged batch).
  bool readsInputs = false;
  /// A shape bucket's step: its sequence length (else 0), and whether it
  /// trains (updates parameters and state as the training step does).
  int64_t seqLen = 0;
  bool trains = false;
};

/// One sequence length an executable with shape buckets runs at: its
/// training and evaluation steps (indices into Program::entries; -1: the
/// program's own training step, or no evaluation step) and its inputs by
/// name.
struct Bucket {
  int64_t seqLen = 0;
  int32_t train = -1;
  int32_t eval = -1;
  /// Tensor index of each input (`tokens`, ...) at this length.
  std::map<std::string, int32_t> inputs;

  int32_t input(const std::string &name) const {
    auto it = inputs.find(name);
    return it == inputs.end() ? -1 : it->second;
  }
};

struct Program {
  uint32_t version = 0;
  /// The FNV-1a checksum of the file's program (its trailer; 0 for a
  /// program parsed without one): what ranks compare to know they run the
  /// same executable.
  uint64_t checksum = 0;
  std::string model;
  std::string options;
  std::vector<TensorInfo> tensors;
  int64_t persistentBytes = 0;
  /// The last `hostBytes` of the persistent region live in the host's
  /// pinned memory (offloaded optimizer state); the rest on the device.
  int64_t hostBytes = 0;
  int64_t arenaBytes = 0;
  int64_t peakLiveBytes = 0;
  int64_t alignment = 1;
  std::vector<Instruction> instructions;
  int32_t loss = -1;
  /// What the training step reports beside its loss (tg.metric): each a
  /// float scalar, by name.
  std::vector<std::pair<std::string, int32_t>> metrics;
  /// The preference loss ("dpo", ...), or empty: a batch of P pairs has the
  /// chosen answers in rows [0, P) and the rejected ones in [P, 2P).
  std::string preference;
  int32_t stepCounter = -1;
  std::vector<uint8_t> constants;
  /// The LoRA adapters (tg-lora), checked against their weights.
  std::vector<LoraAdapter> adapters;
  /// The frozen 4-bit weights (the executable's weights_4bit).
  std::vector<QuantizedWeight> quantized;
  /// The one whose codes are tensor `index`, or null.
  const QuantizedWeight *quantizedWith(int32_t codes) const {
    for (const QuantizedWeight &weight : quantized)
      if (weight.codes == codes)
        return &weight;
    return nullptr;
  }
  /// Entry points besides the training step (above: `instructions`, the
  /// arena and `loss` are the training step's; `arenaBytes` covers all).
  std::vector<EntryPoint> entries;
  /// Whether the training step reads an input. It does not with gradient
  /// accumulation: the `grad_step` entry runs on each of
  /// `gradAccumSteps` micro-batches, then the step applies the update.
  bool stepReadsInputs = true;
  int64_t gradAccumSteps = 1;
  /// The CUDA backend may run f32 GEMMs on TF32 tensor cores.
  bool allowTF32 = false;
  /// The model's task ("causal-lm", "masked-lm",
  /// "sequence-classification", "seq2seq"), or empty when the executable
  /// names none.
  std::string task;
  /// Whether the task's batches are padded examples with an attention
  /// mask (every task but the causal LM's).
  bool padsExamples() const {
    return task == "masked-lm" || task == "sequence-classification" ||
           task == "seq2seq";
  }
  /// The config.json of the model's Hugging Face form (tgc-run --save-hf),
  /// or empty when the executable records none (and then, when
  /// tgc-compile said, why not).
  std::string hfConfig, hfConfigError;
  /// Data parallelism: the ranks the program runs on and how ("ddp",
  /// "zero1", "zero2", "zero3"; empty for one process).
  int64_t worldSize = 1;
  std::string dataParallel;
  /// The ranks a tensor's parts are split across: groups of shardGroup
  /// consecutive ranks each hold every part once (hybrid sharding), or
  /// the whole job (shardGroup = worldSize).
  int64_t shardGroup = 1;
  /// The part of a split tensor that rank `rank` holds.
  int64_t partOf(int rank) const { return int64_t(rank) % shardGroup; }
  /// The sequence lengths it runs at, increasing; the last is the training
  /// step's. One bucket when it was compiled without --seq-buckets (its
  /// length that of `tokens`, or 0 for a model without).
  std::vector<Bucket> buckets;

  /// Index of the tensor with `name` among persistent tensors, or -1.
  int32_t findPersistent(const std::string &name) const;
  /// The entry point named `name`, or null.
  const EntryPoint *findEntry(const std::string &name) const;
  /// A bucket's training step (null: the program's own) and evaluation
  /// step (null when there is none).
  const EntryPoint *trainEntry(const Bucket &bucket) const {
    return bucket.train < 0 ? nullptr : &entries[size_t(bucket.train)];
  }
  const EntryPoint *evalEntry(const Bucket &bucket) const {
    return bucket.eval < 0 ? nullptr : &entries[size_t(bucket.eval)];
  }
  /// The smallest bucket whose sequence length is at least `length`, or
  /// null.
  const Bucket *bucketFor(int64_t length) const {
    for (const Bucket &bucket : buckets)
      if (bucket.seqLen >= length)
        return &bucket;
    return nullptr;
  }
};

/// Where a run of `instructions` joins each collective that overlaps
/// compute. The collectives run beside the other instructions, one at a
/// time: a collective is joined right before the first later instruction
/// whose operands or results share memory with its operand or result, or
/// that is the next such collective, else after the last instruction.
/// Until then nothing else touches its memory, which is not free
/// (tg-plan-memory keeps its operand and result live through the
/// instruction before, by the same rule on the same schedule).
struct CollectiveJoins {
  /// before[i]: the collective (its index in `instructions`) joined right
  /// before instruction i, if any; before[size()] the one joined after the
  /// last.
  std::vector<std::vector<size_t>> before;
  /// ordinal[i]: for a collective that overlaps compute, how many such
  /// collectives come before it in `instructions`.
  std::vector<size_t> ordinal;
};
CollectiveJoins collectiveJoins(const Program &program,
                                const std::vector<Instruction> &instructions);

/// Reads, verifies and decodes a .tgx file. On failure the message says
/// which file, and which tensor, instruction or field, is wrong.
Status loadProgram(const std::string &path, Program &program);
/// The same for the bytes of a whole file: its checksum trailer, then the
/// program (parseProgram).
Status parseProgramFile(const uint8_t *data, size_t size, Program &program);
/// Verifies and decodes a FlatBuffers program alone (no trailer): what
/// parseProgramFile does once the checksum matches, and what the fuzzing
/// harness calls so that mutated programs reach the verifier.
Status parseProgram(const uint8_t *data, size_t size, Program &program);

} // namespace tgc::rt

#endif // TGC_RUNTIME_PROGRAM_H
