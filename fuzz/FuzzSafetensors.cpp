//===- FuzzSafetensors.cpp - fuzzing the safetensors reader ---------------===//
//
// The reader behind checkpoints, weights and batch files. Whatever it
// accepts must describe tensors that lie within the bytes: every byte of
// every entry is read back, so an entry that reaches past the buffer is
// caught by AddressSanitizer. Then the file is loaded, in each scope
// (resume, weights, adapters), into a small model whose names the seeds
// use (`layers.0.weight`, its AdamW state, the step counter and learning
// rate): the name resolution, dtype conversion and value checks of
// loadCheckpoint run on whatever the parser let through.
//
//===----------------------------------------------------------------------===//

#include "Safetensors.h"

#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Session.h"

#include <cstddef>
#include <cstdint>
#include <vector>

using namespace tgc::rt;

namespace {
TensorInfo persistent(const char *name, DType dtype, std::vector<int64_t> shape,
                      Role role, int64_t offset) {
  TensorInfo info;
  info.name = name;
  info.dtype = dtype;
  info.shape = std::move(shape);
  info.storage = Storage::Persistent;
  info.role = role;
  info.offset = offset;
  info.bytes = info.numElements() * int64_t(dtypeSize(dtype));
  return info;
}

/// A 4-3 linear layer with AdamW: the tensors of fuzz/corpus's
/// mlp-checkpoint.safetensors.
std::unique_ptr<Session> makeSession() {
  Program program;
  program.alignment = 64;
  int64_t at = 0;
  auto add = [&](const char *name, DType dtype, std::vector<int64_t> shape,
                 Role role) {
    program.tensors.push_back(persistent(name, dtype, shape, role, at));
    at += 64;
  };
  add("layers.0.weight", DType::F32, {3, 4}, Role::Param);
  add("layers.0.bias", DType::F32, {3}, Role::Param);
  add("layers.0.weight.exp_avg", DType::F32, {3, 4}, Role::State);
  add("layers.0.weight.exp_avg_sq", DType::F32, {3, 4}, Role::State);
  add("layers.0.bias.exp_avg", DType::F32, {3}, Role::State);
  add("layers.0.bias.exp_avg_sq", DType::F32, {3}, Role::State);
  add("optimizer.step", DType::I64, {}, Role::State);
  add("optimizer.lr", DType::F32, {}, Role::State);
  program.persistentBytes = at;
  TensorInfo loss;
  loss.name = "loss";
  loss.storage = Storage::Arena;
  loss.role = Role::Transient;
  loss.bytes = 4;
  program.tensors.push_back(loss);
  program.arenaBytes = 64;
  program.loss = int32_t(program.tensors.size() - 1);
  program.stepCounter = 6;
  std::unique_ptr<Session> session;
  if (!Session::create(program, createCpuBackend(), session).ok() ||
      !session->initialize(0).ok())
    __builtin_trap();
  return session;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile file;
  file.bytes.assign(reinterpret_cast<const char *>(data),
                    reinterpret_cast<const char *>(data) + size);
  if (!parseSafetensors("fuzz.safetensors", file).ok())
    return 0;
  volatile uint8_t sink = 0;
  for (const SafetensorsEntry &entry : file.entries) {
    if (file.dataStart + entry.end > file.bytes.size())
      __builtin_trap(); // an entry past the end of the file
    std::vector<char> bytes(entry.end - entry.begin);
    if (!file.read(entry, 0, bytes.data(), bytes.size()).ok())
      __builtin_trap(); // a parsed file whose data cannot be read
    for (char byte : bytes)
      sink ^= uint8_t(byte);
  }
  (void)sink;
  static std::unique_ptr<Session> session = makeSession();
  std::map<std::string, std::string> metadata;
  for (LoadScope scope :
       {LoadScope::Everything, LoadScope::Parameters, LoadScope::Adapters})
    (void)loadCheckpointFrom(*session, "fuzz.safetensors", file, scope,
                             &metadata);
  return 0;
}
