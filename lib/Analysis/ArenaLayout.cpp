//===- ArenaLayout.cpp - placing buffers with lifetimes in one arena ------===//
//
// Greedy best-fit placement in several orders, the smallest arena kept
// (ArenaLayout.h).
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/ArenaLayout.h"

#include <algorithm>
#include <climits>
#include <map>

namespace tgc {

int64_t alignTo(int64_t size, int64_t alignment) {
  return (size + alignment - 1) / alignment * alignment;
}

static bool overlapInTime(const BufferLifetime &a, const BufferLifetime &b) {
  return a.start <= b.end && b.start <= a.end;
}

/// Places the buffers in `order`, each at the lowest offset of the smallest
/// gap it fits among the placed buffers it overlaps in time.
static void placeInOrder(const std::vector<BufferLifetime> &buffers,
                         const std::vector<size_t> &order,
                         ArenaLayout &layout) {
  layout.offsets.assign(buffers.size(), 0);
  layout.arenaSize = 0;
  // Placed buffers, kept sorted by offset.
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferLifetime &buffer = buffers[i];
    int64_t best = -1, bestGap = INT64_MAX, prevEnd = 0;
    for (size_t j : placed) {
      if (!overlapInTime(buffer, buffers[j]))
        continue;
      int64_t gap = layout.offsets[j] - prevEnd;
      if (gap >= buffer.size && gap < bestGap) {
        best = prevEnd;
        bestGap = gap;
      }
      prevEnd = std::max(prevEnd, layout.offsets[j] + buffers[j].size);
    }
    layout.offsets[i] = best >= 0 ? best : prevEnd;
    layout.arenaSize =
        std::max(layout.arenaSize, layout.offsets[i] + buffer.size);
    auto at = std::upper_bound(
        placed.begin(), placed.end(), layout.offsets[i],
        [&](int64_t offset, size_t j) { return offset < layout.offsets[j]; });
    placed.insert(at, i);
  }
}

ArenaLayout planArena(const std::vector<BufferLifetime> &buffers) {
  size_t n = buffers.size();
  // Four orders, the smallest arena wins: largest first (TFLite's greedy
  // by size); longest-lived first, which packs chains of short buffers
  // around the long ones (what the recomputed copies of rematerialization
  // create); earliest first; and latest-ending first, which stacks what
  // lives to the end of the step (the gradients of full fine-tuning, made
  // one by one through the backward pass) and fills the space they have
  // not taken yet with the activations that die before them: Mistral-7B's
  // f32 step (bench/MODELS.md) packs at its peak of live bytes, 27.01 GiB,
  // where the first two orders left 0.85 GiB of holes.
  auto bySize = [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size)
      return buffers[a].size > buffers[b].size;
    return buffers[a].start < buffers[b].start;
  };
  auto byLifetime = [&](size_t a, size_t b) {
    int64_t la = buffers[a].end - buffers[a].start;
    int64_t lb = buffers[b].end - buffers[b].start;
    if (la != lb)
      return la > lb;
    return bySize(a, b);
  };
  ArenaLayout layout;
  auto byStart = [&](size_t a, size_t b) {
    if (buffers[a].start != buffers[b].start)
      return buffers[a].start < buffers[b].start;
    return bySize(a, b);
  };
  auto byEnd = [&](size_t a, size_t b) {
    if (buffers[a].end != buffers[b].end)
      return buffers[a].end > buffers[b].end;
    return bySize(a, b);
  };
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i)
      order[i] = i;
    if (attempt == 0)
      std::stable_sort(order.begin(), order.end(), bySize);
    else if (attempt == 1)
      std::stable_sort(order.begin(), order.end(), byLifetime);
    else if (attempt == 2)
      std::stable_sort(order.begin(), order.end(), byStart);
    else
      std::stable_sort(order.begin(), order.end(), byEnd);
    ArenaLayout candidate;
    placeInOrder(buffers, order, candidate);
    if (attempt == 0 || candidate.arenaSize < layout.arenaSize)
      layout = std::move(candidate);
  }

  // Peak of simultaneously live bytes, by a sweep over the steps.
  std::map<int64_t, int64_t> delta;
  for (const BufferLifetime &buffer : buffers) {
    delta[buffer.start] += buffer.size;
    delta[buffer.end + 1] -= buffer.size;
  }
  int64_t live = 0;
  for (auto [step, change] : delta) {
    live += change;
    if (live > layout.peakLive) {
      layout.peakLive = live;
      layout.peakStep = step;
    }
  }
  return layout;
}

std::string checkArenaLayout(const std::vector<BufferLifetime> &buffers,
                             const ArenaLayout &layout) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (layout.offsets[i] < 0 ||
        layout.offsets[i] + buffers[i].size > layout.arenaSize)
      return "buffer " + std::to_string(i) + " lies outside the arena";
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!overlapInTime(buffers[i], buffers[j]) || !buffers[i].size ||
          !buffers[j].size)
        continue;
      bool disjoint =
          layout.offsets[i] + buffers[i].size <= layout.offsets[j] ||
          layout.offsets[j] + buffers[j].size <= layout.offsets[i];
      if (!disjoint)
        return "buffers " + std::to_string(i) + " and " + std::to_string(j) +
               " are live together and overlap";
    }
  }
  return "";
}

} // namespace tgc
