//===- ArenaLayoutTest.cpp - the arena placement of planArena -------------===//
//
// planArena's layouts are valid (no two buffers live together share bytes)
// and reach the peak of live bytes where one of its placement orders can:
// a hand-made case that only the order by falling end packs, and random
// ones checked against checkArenaLayout.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/ArenaLayout.h"

#include <gtest/gtest.h>

#include <random>

using namespace tgc;

namespace {

BufferLifetime buffer(int64_t start, int64_t end, int64_t size) {
  BufferLifetime b;
  b.start = start;
  b.end = end;
  b.size = size;
  return b;
}

// Live bytes: 4 over steps 2-3, 7 at step 4, 8 at step 5 (the three
// buffers of step 5). Largest first puts the 4 at 0 and leaves no room
// beside it for the 3 that outlives it; longest first and earliest first
// do as badly (9). Placing the latest-ending first stacks the step-5
// buffers and lets the 4 take the bytes above the one it overlaps: 8, the
// peak.
TEST(PlanArena, ReachesThePeakWhereOnlyTheOrderByEndPacks) {
  std::vector<BufferLifetime> buffers = {buffer(5, 5, 3), buffer(2, 4, 4),
                                         buffer(5, 5, 2), buffer(4, 6, 3)};
  ArenaLayout layout = planArena(buffers);
  EXPECT_EQ(layout.peakLive, 8);
  EXPECT_EQ(layout.peakStep, 5);
  EXPECT_EQ(layout.arenaSize, 8);
  EXPECT_EQ(checkArenaLayout(buffers, layout), "");
}

TEST(PlanArena, RandomLayoutsAreValidAndNeverBelowThePeak) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers;
    int n = 1 + int(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int64_t start = rng() % 30;
      buffers.push_back(
          buffer(start, start + rng() % 12, 256 * (1 + rng() % 16)));
    }
    ArenaLayout layout = planArena(buffers);
    ASSERT_EQ(checkArenaLayout(buffers, layout), "") << "trial " << trial;
    EXPECT_GE(layout.arenaSize, layout.peakLive) << "trial " << trial;
  }
}

} // namespace
