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

#include "FileIO.h"

#include <map>
#include <memory>
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

/// A parsed safetensors file. Read from disk (readSafetensors), `bytes`
/// holds only the length and the header, and tensor data is read on demand
/// from `source` into wherever it goes; parsed from memory
/// (parseSafetensors on a whole file in `bytes`, as the fuzzer does), the
/// data is in `bytes`.
struct SafetensorsFile {
  std::vector<char> bytes;
  std::shared_ptr<RegularFile> source;
  uint64_t size = 0; // of the whole file
  uint64_t dataStart = 0;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;

  /// Reads `count` bytes of `entry`'s data from byte `offset` of it.
  Status read(const SafetensorsEntry &entry, uint64_t offset, void *into,
              uint64_t count) const;
  const SafetensorsEntry *find(const std::string &name) const;
};

/// The safetensors name of a dtype ("F32", ..., "BOOL").
const char *safetensorsDType(DType dtype);
/// The dtype of a safetensors name, if tgc has it.
std::optional<DType> parseSafetensorsDType(const std::string &name);

/// Reads and checks `path`; errors name the file and the tensor.
Status readSafetensors(const std::string &path, SafetensorsFile &file);

/// Checks `file.bytes` (the whole file, or with `file.source` set its
/// header; `path` names it in errors) and fills in the rest of `file`. What readSafetensors does after reading, and
/// what the fuzzing harness calls directly.
Status parseSafetensors(const std::string &path, SafetensorsFile &file);

/// A shape as errors print it: "[2, 3]".
std::string formatShape(const std::vector<int64_t> &shape);

/// Checks that `entry` has `dtype` and `shape`, naming what differs.
Status checkEntry(const SafetensorsEntry &entry, DType dtype,
                  const std::vector<int64_t> &shape);

/// loadCheckpoint once the file's header is read and parsed (`path` names
/// it in errors): what the fuzzing harness calls on parsed bytes. With
/// `provided`, nothing is loaded: it receives, by tensor index, what the
/// load would set (checkpointProvides).
Status loadCheckpointFrom(Session &session, const std::string &path,
                          const SafetensorsFile &file, LoadScope scope,
                          std::map<std::string, std::string> *metadata,
                          std::vector<bool> *provided = nullptr);

/// One file of a checkpoint that may span several (a sharded model).
struct CheckpointPart {
  std::string path;
  const SafetensorsFile *file;
};

/// loadCheckpointFrom over the parts of one checkpoint: each tensor from
/// whichever part holds it. `report` (may be null) receives what a
/// Parameters load initialised fresh and what it left unused.
Status loadCheckpointParts(Session &session, const std::string &path,
                           const std::vector<CheckpointPart> &parts,
                           LoadScope scope,
                           std::map<std::string, std::string> *metadata,
                           std::vector<bool> *provided, LoadReport *report);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_SAFETENSORS_H
