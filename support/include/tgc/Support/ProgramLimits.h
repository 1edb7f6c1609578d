//===- ProgramLimits.h - what an executable may ask of tgc-run --*- C++ -*-===//
//
// The limits the .tgx loader (runtime/src/format/Program.cpp) puts on an
// executable's regions and counts, written once so that tgc-compile refuses
// at compile time what tgc-run would call invalid: the writer (lib/Target),
// the passes that set the counts (tg-grad-accum, tg-data-parallel), the
// batch searches (lib/Pipelines) and the loader all read them here.
// Header-only and dependency-free, like CheckedMath.h.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_PROGRAMLIMITS_H
#define TGC_SUPPORT_PROGRAMLIMITS_H

#include "tgc/Support/CheckedMath.h"

#include <cstdint>
#include <string>
#include <utility>

namespace tgc {

/// The most ranks an executable may be compiled for.
constexpr int64_t kMaxWorldSize = int64_t(1) << 20;

/// The most micro-batches per optimizer step an executable may ask for.
constexpr int64_t kMaxGradAccumSteps = int64_t(1) << 20;

/// The largest region (the persistent tensors, or the arena) of an
/// executable, in bytes: one tensor's limit (256 TiB), since each region is
/// one allocation whose offsets are checked like a tensor's size.
constexpr int64_t kMaxRegionBytes = kMaxTensorBytes;

/// Empty when regions of `persistentBytes` and `arenaBytes` can be loaded;
/// otherwise which region is past which limit, and by how much.
inline std::string checkRegionBytes(int64_t persistentBytes,
                                    int64_t arenaBytes) {
  if (persistentBytes < 0 || arenaBytes < 0)
    return "a region has a negative size";
  for (auto [name, bytes] : {std::pair<const char *, int64_t>{
                                 "persistent", persistentBytes},
                             {"arena", arenaBytes}})
    if (bytes > kMaxRegionBytes)
      return std::string("the ") + name + " region of " +
             std::to_string(bytes) + " bytes is past the limit of " +
             std::to_string(kMaxRegionBytes) +
             " bytes (256 TiB) on one region of an executable";
  return "";
}

} // namespace tgc

#endif // TGC_SUPPORT_PROGRAMLIMITS_H
