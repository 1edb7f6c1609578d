//===- Safetensors.h - reading safetensors files ----------------*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length, a JSON header
// mapping names to {dtype, shape, data_offsets} (plus a string map
// __metadata__), then the raw little-endian data. readSafetensors parses
// the header with nlohmann-json (refusing repeated names, deep nesting and
// numbers that are not exact non-negative integers) and checks every
// entry's offsets against the file.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_SAFETENSORS_H
#define TGC_RUNTIME_SRC_SAFETENSORS_H

#include "tgc/runtime/Checkpoint.h"
#include "tgc/runtime/Tensor.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tgc::rt {

struct SafetensorsEntry {
  std::string name;
  std::string dtype; // "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // within the data section
};

struct SafetensorsFile {
  std::vector<char> bytes;
  uint64_t dataStart = 0;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;

  const char *data(const SafetensorsEntry &entry) const {
    return bytes.data() + dataStart + entry.begin;
  }
  const SafetensorsEntry *find(const std::string &name) const;
};

/// The safetensors name of a dtype ("F32", ..., "BOOL").
const char *safetensorsDType(DType dtype);
/// The dtype of a safetensors name, if tgc has it.
std::optional<DType> parseSafetensorsDType(const std::string &name);

/// Reads and checks `path`; errors name the file and the tensor.
Status readSafetensors(const std::string &path, SafetensorsFile &file);

/// Checks `file.bytes` (already read; `path` names it in errors) and fills
/// in the rest of `file`. What readSafetensors does after reading, and
/// what the fuzzing harness calls directly.
Status parseSafetensors(const std::string &path, SafetensorsFile &file);

/// Checks that `entry` has `dtype` and `shape`, naming what differs.
Status checkEntry(const SafetensorsEntry &entry, DType dtype,
                  const std::vector<int64_t> &shape);

/// loadCheckpoint once the file is read and parsed (`path` names it in
/// errors): what the fuzzing harness calls on parsed bytes.
Status loadCheckpointFrom(Session &session, const std::string &path,
                          const SafetensorsFile &file, LoadScope scope,
                          std::map<std::string, std::string> *metadata);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_SAFETENSORS_H
