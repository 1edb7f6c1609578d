//===- FuzzTokens.cpp - fuzzing the token-file reader ---------------------===//
//
// llm.c shards and raw uint16 files. The first byte picks the window length
// and the vocabulary, so that the checks against both are exercised; every
// token accepted must be below the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Data.h"

#include <cstddef>
#include <cstdint>

using namespace tgc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int64_t length = 1 + (data[0] & 15);
  int64_t vocab = 1 + (int64_t(data[0]) << 4);
  std::vector<uint16_t> tokens;
  if (!parseTokenFile("fuzz.bin", reinterpret_cast<const char *>(data + 1),
                      size - 1, vocab, length, tokens)
           .ok())
    return 0;
  if (int64_t(tokens.size()) < length + 1)
    __builtin_trap();
  for (uint16_t token : tokens)
    if (token >= vocab)
      __builtin_trap();
  return 0;
}
