//===- Random.h - the runtime's random numbers ------------------*- C++ -*-===//
//
// splitmix64 and the draws built on it: a small generator whose sequence is
// fixed across platforms and standard libraries (std::normal_distribution
// is not), so initialisation and synthetic data reproduce everywhere.
// splitmix64 is counter-based: its n-th output (from 0) is mix(state +
// (n + 1) * gamma), so `at(n)` jumps straight to any draw, and a tensor is
// initialised in parallel chunks with the same values as in one sequence.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_RANDOM_H
#define TGC_RUNTIME_SRC_RANDOM_H

#include <cmath>
#include <cstdint>

namespace tgc::rt {

struct SplitMix64 {
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  uint64_t state;

  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t next() { return mix(state += kGamma); }
  /// The generator positioned after `n` draws from `seed`.
  static SplitMix64 at(uint64_t seed, uint64_t n) {
    return SplitMix64{seed + n * kGamma};
  }
  /// Uniform in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Standard normal, by Box-Muller with u1 in (0, 1].
  double normal() {
    double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_RANDOM_H
