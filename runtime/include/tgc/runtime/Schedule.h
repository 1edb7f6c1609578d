//===- Schedule.h - learning-rate schedules ---------------------*- C++ -*-===//
//
// A schedule is a runtime input, not part of the compiled step: the step
// reads its learning rate from the persistent tensor `optimizer.lr`
// (tg-optimizer), and tgc-run writes the schedule's value there before
// each step, staged with the step's batch. The value is a pure function of
// the iteration, so a resumed run continues the sequence exactly.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SCHEDULE_H
#define TGC_RUNTIME_SCHEDULE_H

#include "tgc/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

struct LrSchedule {
  enum Kind { Constant, Cosine, Linear } kind = Constant;
  /// The peak rate: the executable's compiled --lr.
  double peak = 0.0;
  /// Iterations of linear warmup from peak / (warmup + 1) up to the peak.
  int64_t warmupSteps = 0;
  /// Where cosine and linear decay end, at iteration maxSteps and after.
  double minLr = 0.0;
  int64_t maxSteps = 0;

  /// The rate of iteration `it` (0-based: the run's step s is iteration
  /// s - 1), as nanoGPT's get_lr computes it: warmup peak * (it + 1) /
  /// (warmup + 1); then, for cosine, minLr + (peak - minLr) (1 + cos(pi r))
  /// / 2 with r = (it - warmup) / (maxSteps - warmup), for linear minLr +
  /// (peak - minLr) (1 - r); minLr from maxSteps on. Constant stays at the
  /// peak after its warmup.
  double at(int64_t it) const;

  /// Checks the fields (a finite non-negative peak and minimum, minLr <=
  /// peak, warmup >= 0, and for cosine and linear maxSteps > warmupSteps);
  /// errors name tgc-run's options.
  Status validate() const;
};

/// The kind named `name` ("constant", "cosine", "linear").
bool parseLrScheduleKind(const std::string &name, LrSchedule::Kind &kind);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SCHEDULE_H
