//===- ArenaLayout.h - buffers with lifetimes in one arena ------*- C++ -*-===//
//
// The arena layout problem, independent of MLIR: buffers with sizes and
// lifetimes (steps of a fixed schedule) get static offsets in one arena so
// that no two live at the same step share a byte. MemoryPlan.h places a
// training step's transient buffers with it; tgc-analysis-tests checks it.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_ARENALAYOUT_H
#define TGC_ANALYSIS_ARENALAYOUT_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

/// A buffer needed from step `start` to step `end` (inclusive).
struct BufferLifetime {
  int64_t size = 0;
  int64_t start = 0;
  int64_t end = 0;
};

struct ArenaLayout {
  /// Offset of each buffer, in the order of the requests.
  std::vector<int64_t> offsets;
  /// Bytes the arena needs: the highest end of a placed buffer.
  int64_t arenaSize = 0;
  /// Highest sum of sizes of buffers live at the same step: a lower bound
  /// of any arena, and the step where it is reached.
  int64_t peakLive = 0;
  int64_t peakStep = 0;
};

/// Rounds `size` up to a multiple of `alignment` (a power of two).
int64_t alignTo(int64_t size, int64_t alignment);

/// Places the buffers (sizes already aligned) so that no two buffers live at
/// the same step overlap: in four orders (largest first, longest lived
/// first, earliest first, latest ending first), each buffer at the lowest
/// offset of the smallest gap it fits among the buffers it overlaps in
/// time; the smallest arena is kept.
ArenaLayout planArena(const std::vector<BufferLifetime> &buffers);

/// Checks a layout: every pair of buffers overlapping in time is disjoint in
/// the arena and every buffer lies inside it. Returns an empty string, or
/// the first violation.
std::string checkArenaLayout(const std::vector<BufferLifetime> &buffers,
                             const ArenaLayout &layout);

} // namespace tgc

#endif // TGC_ANALYSIS_ARENALAYOUT_H
