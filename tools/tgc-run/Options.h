//===- Options.h - tgc-run's command line -----------------------*- C++ -*-===//
//
// What tgc-run's flags say (CLI11, grouped by purpose in --help), and the
// run key the ranks of a job agree on.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGC_RUN_OPTIONS_H
#define TGC_TOOLS_TGC_RUN_OPTIONS_H

#include "tgc/runtime/Run.h"

#include <cstdint>
#include <string>

namespace tgc::run {

using rt::Status;

/// tgc-run's flags: the run's (rt::RunOptions, by the same names), and
/// what the tool prints and records.
struct Options : rt::RunOptions {
  std::string metrics;
  int64_t logEvery = 0;
  bool quiet = false;
  bool dryRun = false; // set everything up and exit before the first step
  int64_t profileTop = 10;
};

/// Parses argv with CLI11 (`--name value` or `--name=value`; --help lists
/// the options grouped by purpose). Returns an error message, or "" with
/// `exitNow` set when --help was answered.
std::string parseOptions(int argc, char **argv, Options &options,
                         bool &exitNow);

/// The options every rank of a job must share, as `--name=value` items, the
/// files it reads by fingerprint (their paths may differ from rank to
/// rank). Output options count only by whether they are set: which file
/// rank 0 writes is its own affair.
Status describeRun(const Options &options, std::string &key);

/// A byte count with an optional K, M, G or T suffix (powers of 1024,
/// optionally followed by "iB" or "B").
bool parseBytes(const std::string &text, int64_t &value);

} // namespace tgc::run

#endif // TGC_TOOLS_TGC_RUN_OPTIONS_H
