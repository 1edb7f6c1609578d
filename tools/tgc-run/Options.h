//===- Options.h - tgc-run's command line -----------------------*- C++ -*-===//
//
// What tgc-run's flags say (CLI11, grouped by purpose in --help), and the
// run key the ranks of a job agree on.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGC_RUN_OPTIONS_H
#define TGC_TOOLS_TGC_RUN_OPTIONS_H

#include "tgc/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace tgc::run {

using rt::Status;

struct Options {
  std::string program;
  int64_t steps = 100;
  std::string data = "synthetic";
  uint64_t seed = 0;
  std::string metrics;
  std::string save;
  int64_t saveEvery = 0;
  std::string resume;
  std::string loadWeights;
  std::string loadAdapters;
  std::string saveAdapters;
  std::string exportMerged;
  std::string saveHF; // a Hugging Face model directory
  int64_t hfShardBytes = 5'000'000'000;
  std::string device = "auto";
  bool cudaGraphs = true; // --cuda-graphs=on|off
  int64_t logEvery = 0;
  bool quiet = false;
  int64_t maxMemory = -1; // bytes; -1: what the machine has
  std::string lrSchedule;  // empty: the learning rate stays as it is
  int64_t warmupSteps = 0;
  double minLr = 0.0;
  int64_t maxSteps = 0;
  std::string evalData; // empty: --data's source
  int64_t evalEvery = 0;
  int64_t evalBatches = 10;
  bool evalOnly = false;
  bool dryRun = false; // set everything up and exit before the first step
  std::string padding = "dynamic";
  std::string overlong = "truncate";
  int threads = 0; // unless threadsGiven: the cores this process may use
  bool threadsGiven = false;
  // Whether --padding or --overlong was given (they apply to examples).
  bool exampleOptionsGiven = false;
  bool profile = false;
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
