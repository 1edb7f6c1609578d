//===- FuzzDataset.cpp - fuzzing the .tgcd dataset reader -----------------===//
//
// Datasets of examples (tools/python/tgcd.py's format). The first byte picks
// the model's vocabulary, so that the checks against it are exercised; a
// dataset accepted must hold non-empty examples whose tokens lie below the
// vocabulary and whose labels lie below the number of labels.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Data.h"

#include <cstddef>
#include <cstdint>

using namespace tgc::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int64_t vocab = 1 + (int64_t(data[0]) << 8);
  DatasetSummary summary;
  if (!parseDataset("fuzz.tgcd", reinterpret_cast<const char *>(data + 1),
                    size - 1, vocab, summary)
           .ok())
    return 0;
  if (summary.examples <= 0 || summary.tokens < summary.examples ||
      summary.longest <= 0 || summary.largestToken >= vocab ||
      summary.largestLabel >= summary.numLabels ||
      (summary.numLabels > 0 && summary.largestLabel < 0))
    __builtin_trap();
  return 0;
}
