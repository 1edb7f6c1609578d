//===- Parallel.h - loops of the CPU kernels on the thread team --*- C++ -*-===//
//
// The kernels split their loops into chunks whose bounds depend only on the
// problem size, never on the thread count: each chunk is computed the same
// way by whichever thread runs it, and a reduction sums its chunks' partial
// results in chunk order afterwards. Results are therefore the same bits
// at any thread count (tgc-run --threads). The team is OpenMP's, sized by
// setCpuThreads (tgc/runtime/Threads.h).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CPU_PARALLEL_H
#define TGC_RUNTIME_SRC_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tgc::rt::cpu {

/// Elements per chunk of an elementwise loop: enough work to pay for a
/// thread's start (microseconds), small enough to balance two cores on a
/// tensor of a few hundred KiB.
constexpr int64_t kElementGrain = 16384;

/// Units of `cost` elements each per chunk so that a chunk holds about
/// kElementGrain elements (at least one unit).
inline int64_t grainFor(int64_t cost) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cost));
}

/// Calls `fn(begin, end)` on the chunks [c * grain, (c + 1) * grain) of
/// [0, count), in parallel when there is more than one.
template <typename Fn>
void parallelFor(int64_t count, int64_t grain, Fn &&fn) {
  if (count <= 0)
    return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = (count + grain - 1) / grain;
  if (chunks == 1) {
    fn(int64_t(0), count);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    fn(c * grain, std::min(count, (c + 1) * grain));
}

/// The sum over the chunks of [0, count) of `fn(begin, end)` (a double),
/// added in chunk order: the same bits at any thread count.
template <typename Fn>
double parallelSum(int64_t count, int64_t grain, Fn &&fn) {
  if (count <= 0)
    return 0.0;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = (count + grain - 1) / grain;
  std::vector<double> partial(size_t(chunks), 0.0);
  parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      partial[size_t(c)] = fn(c * grain, std::min(count, (c + 1) * grain));
  });
  double sum = 0.0;
  for (double p : partial)
    sum += p;
  return sum;
}

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_SRC_CPU_PARALLEL_H
