//===- Checkpoint.cpp - safetensors checkpoints ---------------------------===//
//
// Writes safetensors files (atomically) and loads them into a session after
// checking every tensor against the model (Safetensors.h reads the file).
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Checkpoint.h"

#include "Safetensors.h"

#include <optional>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace tgc::rt {
namespace {

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool isCheckpointed(const TensorInfo &info) {
  return info.storage == Storage::Persistent &&
         (info.role == Role::Param || info.role == Role::State);
}

} // namespace

Status saveCheckpoint(Session &session, const std::string &path,
                      const std::map<std::string, std::string> &metadata) {
  const Program &program = session.program();
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (auto &[key, value] : metadata) {
    header += (first ? "\"" : ",\"") + escape(key) + "\":\"" + escape(value) +
              "\"";
    first = false;
  }
  header += "}";
  std::vector<int32_t> saved;
  int64_t offset = 0;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (!isCheckpointed(info))
      continue;
    header += ",\"" + escape(info.name) + "\":{\"dtype\":\"" +
              safetensorsDType(info.dtype) + "\",\"shape\":[";
    for (size_t d = 0; d < info.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(info.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + info.bytes) + "]}";
    offset += info.bytes;
    saved.push_back(int32_t(i));
  }
  header += "}";
  // The data starts 8-byte aligned, as the format recommends.
  while ((header.size() + 8) % 8 != 0)
    header.push_back(' ');

  Status pulled = session.pullPersistent();
  if (!pulled.ok())
    return pulled;
  std::string temporary = path + ".tmp";
  FILE *file = std::fopen(temporary.c_str(), "wb");
  if (!file)
    return Status::failure("cannot write '" + temporary + "'");
  uint64_t length = header.size();
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = uint8_t(length >> (8 * i));
  bool ok = std::fwrite(prefix, 1, 8, file) == 8 &&
            std::fwrite(header.data(), 1, header.size(), file) == header.size();
  // Fault injection for the test that a crash during a save leaves the
  // previous checkpoint intact: die after writing half the tensors.
  const char *abortAt = std::getenv("TGC_TEST_ABORT_DURING_SAVE");
  for (size_t i = 0; i < saved.size(); ++i) {
    if (abortAt && i == saved.size() / 2) {
      std::fflush(file);
      std::abort();
    }
    TensorRef view = session.hostView(saved[i]);
    ok = ok && std::fwrite(view.data, 1, view.numBytes(), file) ==
                   view.numBytes();
  }
  ok = ok && std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) {
    std::remove(temporary.c_str());
    return Status::failure("could not write the checkpoint '" + path +
                           "' (disk full?); the previous one is intact");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Status::failure("could not move the checkpoint into '" + path +
                           "'");
  }
  return Status::success();
}

Status loadCheckpoint(Session &session, const std::string &path,
                      LoadScope scope,
                      std::map<std::string, std::string> *metadata) {
  auto fail = [&](const std::string &message) {
    return Status::failure("checkpoint '" + path + "': " + message);
  };
  SafetensorsFile file;
  Status status = readSafetensors(path, file);
  if (!status.ok())
    return Status::failure("checkpoint " + status.error);
  const Program &program = session.program();
  std::vector<bool> found(program.tensors.size(), false);
  struct Pending {
    int32_t index;
    const SafetensorsEntry *entry;
    DType stored; // the file's dtype
  };
  std::vector<Pending> pending;
  for (const SafetensorsEntry &entry : file.entries) {
    int32_t index = program.findPersistent(entry.name);
    if (index < 0 || !isCheckpointed(program.tensors[index]))
      return fail("tensor '" + entry.name + "' is not a parameter or state "
                  "of this model");
    const TensorInfo &info = program.tensors[index];
    // Starting from weights (not resuming), a float parameter may be stored
    // in another float precision: a Hugging Face checkpoint in f16 or
    // bf16, or f32 weights for a 16-bit frozen copy. It is converted
    // (rounding to nearest even); resuming needs the exact dtypes.
    DType stored = info.dtype;
    std::optional<DType> fileDType = parseSafetensorsDType(entry.dtype);
    if (scope == LoadScope::Parameters && info.role == Role::Param &&
        fileDType && isFloat(*fileDType) && isFloat(info.dtype))
      stored = *fileDType;
    status = checkEntry(entry, stored, info.shape);
    if (!status.ok())
      return fail(status.error);
    pending.push_back({index, &entry, stored});
    found[index] = true;
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (!isCheckpointed(info) || found[i])
      continue;
    if (info.role == Role::Param || scope == LoadScope::Everything)
      return fail("tensor '" + info.name + "' is missing");
  }
  for (const Pending &item : pending) {
    TensorRef view = session.hostView(item.index);
    if (item.stored == view.dtype) {
      std::memcpy(view.data, file.data(*item.entry), view.numBytes());
      continue;
    }
    TensorRef source;
    source.data = const_cast<char *>(file.data(*item.entry));
    source.dtype = item.stored;
    source.shape = view.shape;
    for (int64_t i = 0, n = view.numElements(); i < n; ++i)
      storeF32(view, i, loadF32(source, i));
  }
  if (metadata)
    *metadata = file.metadata;
  return session.pushPersistent();
}

} // namespace tgc::rt
