//===- Session.h - running a training step on a backend ---------*- C++ -*-===//
//
// A Session owns the memory of one loaded program (the persistent region
// and the transient arena, each one allocation of the planned size),
// initialises parameters as their tg.init says, and runs the step's
// instructions in order on the CPU backend. It also measures the arena's
// high-water mark from the reads and writes it performs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SESSION_H
#define TGC_RUNTIME_SESSION_H

#include "tgc/runtime/Program.h"

#include <memory>

namespace tgc::rt {

class Session {
public:
  /// Allocates the regions of `program` (already verified by loadProgram).
  static Status create(Program program, std::unique_ptr<Session> &session);
  ~Session();

  const Program &program() const { return prog; }

  /// A view of tensor `index` in this session's memory.
  TensorRef view(int32_t index);

  /// Draws every parameter from its initialisation with a generator seeded
  /// by `seed` and the parameter's name (so the order of the table does not
  /// matter), and zeroes optimizer state, the step counter and inputs.
  void initialize(uint64_t seed);

  /// Runs one training step and returns its loss.
  Status step(float &loss);

  /// The number of optimizer steps taken (the step counter), or -1.
  int64_t stepCount();

  /// The most arena bytes live at once during the first step, measured from
  /// the buffers the instructions wrote and read (each counted at the
  /// program's alignment), or -1 before any step ran.
  int64_t arenaHighWaterMark() const { return highWater; }

private:
  explicit Session(Program program);
  Status run(float &loss, bool measure);

  Program prog;
  uint8_t *persistent = nullptr;
  uint8_t *arena = nullptr;
  int64_t highWater = -1;
};

/// Draws the initial values of one tensor (normal or uniform from a
/// generator seeded by `seed` and `name`). Exposed for tests.
void initializeTensor(const TensorInfo &info, uint64_t seed, TensorRef view);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SESSION_H
