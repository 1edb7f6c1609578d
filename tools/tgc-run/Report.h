//===- Report.h - what tgc-run prints about a run ---------------*- C++ -*-===//

#ifndef TGC_TOOLS_TGC_RUN_REPORT_H
#define TGC_TOOLS_TGC_RUN_REPORT_H

#include "tgc/runtime/Program.h"
#include "tgc/runtime/Run.h"
#include "tgc/runtime/Session.h"

#include "Options.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace tgc::run {

using rt::Program;
using rt::Session;
using rt::StepReport;
using rt::StepResult;

/// Prints each step: a progress bar redrawn in place on a terminal, or a
/// line every --log-every steps (every 10th, the first and the last).
class Progress : public rt::RunObserver {
public:
  Progress(const Options &options, int64_t startStep, bool scheduled)
      : options(options), startStep(startStep), scheduled(scheduled),
        tty(isatty(fileno(stdout)) && !options.quiet && !options.logEvery) {}
  bool onTerminal() const { return tty; }

  Status onStep(const StepReport &report) override;

private:
  static std::string number(const char *format, double value) {
    char text[48];
    std::snprintf(text, sizeof(text), format, value);
    return text;
  }
  static std::string lossText(const StepResult &result) {
    return result.hasLoss ? number("%.4f", double(result.loss)) : "-";
  }
  /// Loss scaling, the scheduled learning rate and validation.
  std::string extras(const StepResult &result) const {
    std::string text;
    if (result.lossScaled)
      text += " | scale " + number("%g", result.scale) + " | skipped " +
              std::to_string(result.skippedTotal);
    if (scheduled)
      text += " | lr " + number("%.3g", result.lr);
    if (result.evaluated)
      text += " | eval " + number("%.4f", result.evalLoss);
    return text;
  }

  const Options &options;
  int64_t startStep;
  bool scheduled, tty;
};

/// Prints the profile of every profiled entry point (time per op kind,
/// then the `top` slowest ops, in ms per run) and returns it as JSON.
nlohmann::ordered_json reportProfile(const Program &program,
                                     const Session &session, int64_t top,
                                     const char *timer);

/// What the run set up: notes on loading, the CPU's kernels, warnings on
/// the environment.
void printSetUp(rt::Run &run, const Options &options);

} // namespace tgc::run

#endif // TGC_TOOLS_TGC_RUN_REPORT_H
