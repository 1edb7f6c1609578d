//===- Report.h - what tgc-run prints about a run ---------------*- C++ -*-===//

#ifndef TGC_TOOLS_TGC_RUN_REPORT_H
#define TGC_TOOLS_TGC_RUN_REPORT_H

#include "tgc/runtime/Program.h"
#include "tgc/runtime/Session.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tgc::run {

using rt::Program;
using rt::Session;

/// Prints the profile of every profiled entry point (time per op kind,
/// then the `top` slowest ops, in ms per run) and returns it as JSON.
nlohmann::ordered_json reportProfile(const Program &program,
                                     const Session &session, int64_t top,
                                     const char *timer);

/// The training hyper-parameters the executable was compiled with, from
/// the compile options it records ("name=value ..."), as one line.
std::string describeTraining(const Program &program);

std::string formatDuration(double seconds);

std::string formatBytes(int64_t bytes);

} // namespace tgc::run

#endif // TGC_TOOLS_TGC_RUN_REPORT_H
