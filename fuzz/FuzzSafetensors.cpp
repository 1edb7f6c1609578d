//===- FuzzSafetensors.cpp - fuzzing the safetensors reader ---------------===//
//
// The reader behind checkpoints, weights and batch files. Whatever it
// accepts must describe tensors that lie within the bytes: every element of
// every entry is read back (and checked against its own dtype and shape),
// so an entry that reaches past the buffer is caught by AddressSanitizer.
//
//===----------------------------------------------------------------------===//

#include "Safetensors.h"

#include <cstddef>
#include <cstdint>

using namespace tgc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile file;
  file.bytes.assign(reinterpret_cast<const char *>(data),
                    reinterpret_cast<const char *>(data) + size);
  if (!parseSafetensors("fuzz.safetensors", file).ok())
    return 0;
  volatile uint8_t sink = 0;
  for (const SafetensorsEntry &entry : file.entries) {
    std::optional<DType> dtype = parseSafetensorsDType(entry.dtype);
    if (dtype && !checkEntry(entry, *dtype, entry.shape).ok())
      __builtin_trap(); // an entry that does not match itself
    if (file.dataStart + entry.end > file.bytes.size())
      __builtin_trap(); // an entry past the end of the file
    const char *bytes = file.data(entry);
    for (uint64_t i = entry.begin; i < entry.end; ++i)
      sink ^= uint8_t(bytes[i - entry.begin]);
  }
  (void)sink;
  return 0;
}
