//===- Schedule.cpp - learning-rate schedules -----------------------------===//

#include "tgc/runtime/Schedule.h"

#include <cmath>

namespace tgc::rt {

double LrSchedule::at(int64_t it) const {
  if (it < warmupSteps)
    return peak * double(it + 1) / double(warmupSteps + 1);
  if (kind == Constant)
    return peak;
  if (it >= maxSteps)
    return minLr;
  double ratio = double(it - warmupSteps) / double(maxSteps - warmupSteps);
  double coefficient = kind == Cosine
                           ? 0.5 * (1.0 + std::cos(M_PI * ratio))
                           : 1.0 - ratio;
  return minLr + coefficient * (peak - minLr);
}

Status LrSchedule::validate() const {
  if (!(peak >= 0.0) || !std::isfinite(peak))
    return Status::failure("the executable's learning rate is not a finite "
                           "non-negative number");
  if (!(minLr >= 0.0) || !(minLr <= peak))
    return Status::failure("--min-lr must be in [0, the compiled --lr = " +
                           std::to_string(peak) + "]");
  if (warmupSteps < 0)
    return Status::failure("--warmup-steps must not be negative");
  if (kind != Constant && maxSteps <= warmupSteps)
    return Status::failure(
        std::string("--lr-schedule=") +
        (kind == Cosine ? "cosine" : "linear") +
        " decays until --max-steps, which it needs, greater than "
        "--warmup-steps (" +
        std::to_string(warmupSteps) + ")");
  return Status::success();
}

bool parseLrScheduleKind(const std::string &name, LrSchedule::Kind &kind) {
  if (name == "constant")
    kind = LrSchedule::Constant;
  else if (name == "cosine")
    kind = LrSchedule::Cosine;
  else if (name == "linear")
    kind = LrSchedule::Linear;
  else
    return false;
  return true;
}

} // namespace tgc::rt
