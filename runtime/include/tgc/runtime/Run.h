//===- Run.h - a training run from its options ------------------*- C++ -*-===//
//
// What tgc-run and `tgc finetune` do between their command lines and their
// printing: set a run up from its options (the executable loaded, the ranks
// of a job agreeing on it and on the run, the memory plan checked against
// the budget, threads, the backend, the session, the parameters initialised
// or loaded, the data sources, the trainer), train it while observers see
// each step (the progress line, the metrics file), and write what it is
// asked to leave (checkpoint, adapters, Hugging Face directory, merged
// export). The tools parse flags and print; tests drive it directly.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_RUN_H
#define TGC_RUNTIME_RUN_H

#include "tgc/Support/UserFiles.h"
#include "tgc/runtime/Checkpoint.h"
#include "tgc/runtime/Communicator.h"
#include "tgc/runtime/Data.h"
#include "tgc/runtime/Session.h"
#include "tgc/runtime/Trainer.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

using tgc::NamedFile;

/// What a run is asked to do (tgc-run's flags, by the same names).
struct RunOptions {
  std::string program; // the executable (.tgx)
  int64_t steps = 100;
  std::string data = "synthetic";
  uint64_t seed = 0;
  std::string save; // checkpoints
  int64_t saveEvery = 0;
  std::string resume;
  std::string loadWeights;
  std::string loadAdapters;
  std::string saveAdapters;
  std::string exportMerged;
  std::string saveHF; // a Hugging Face model directory
  int64_t hfShardBytes = 5'000'000'000;
  std::string device = "auto"; // auto, cpu or cuda
  bool cudaGraphs = true;
  int64_t maxMemory = -1; // bytes; -1: what the machine has
  std::string lrSchedule; // empty: the learning rate stays as it is
  int64_t warmupSteps = 0;
  double minLr = 0.0;
  int64_t maxSteps = 0;
  std::string evalData; // empty: --data's source
  int64_t evalEvery = 0;
  int64_t evalBatches = 10;
  bool evalOnly = false;
  std::string padding = "dynamic";   // max, dynamic, grouped or pack
  std::string overlong = "truncate"; // truncate or reject
  /// Whether padding or overlong was given (they apply to examples).
  bool exampleOptionsGiven = false;
  int threads = 0; // unless threadsGiven: the cores this process may use
  bool threadsGiven = false;
  bool profile = false;
};

/// One step as the observers of a run see it: what the trainer reported,
/// and the run's pace so far.
struct StepReport {
  StepResult result;
  /// Steps this run has taken (1 for its first).
  int64_t ran = 0;
  /// Seconds since the first step started, items (tokens or examples) per
  /// second over them, and the estimated seconds left.
  double elapsed = 0.0, itemsPerSecond = 0.0, eta = 0.0;
  /// What an item is: "tokens" or "examples" (DataSource::itemName).
  const char *itemName = "tokens";
  /// Sources of padded examples: real tokens per second and the fraction
  /// of positions that were padding (NaN otherwise).
  double realPerSecond = NAN, paddingFraction = NAN;
  /// On the first step only: seconds from the process's start to its end,
  /// and to the start of training (set-up); NaN on the others.
  double firstStepAt = NAN, setup = NAN;
};

/// Sees each step of a run (progress lines, metrics files).
class RunObserver {
public:
  virtual ~RunObserver();
  /// Called after each step, before its checkpoint. An error stops the run.
  virtual Status onStep(const StepReport &report) = 0;
};

/// How training ended: every step run, stopped by a signal between steps,
/// or diverged (the run must fail with this message; nothing is saved).
struct RunEnd {
  int signal = 0;
  std::string diverged;
  /// The first and last losses seen (NaN: none), and the seconds trained.
  double firstLoss = NAN, lastLoss = NAN, seconds = 0.0;
};

class Run {
public:
  /// Sets the run up. With a communicator of several ranks, every rank
  /// agrees on the executable and on `runKey` (what must be equal across
  /// ranks: tgc-run's describeRun), and a failure on one rank fails every
  /// rank: the failing rank's error reads "rank R: ...", the others'
  /// "rank R of N failed: ...". Checks before allocating that the memory
  /// plan fits options.maxMemory (or the machine's memory).
  static Status create(const RunOptions &options, Communicator *comm,
                       const std::string &runKey, std::unique_ptr<Run> &run);
  ~Run();

  const RunOptions &options() const { return opts; }
  const Program &program() const { return prog; }
  Session &session() { return *sess; }
  Trainer &trainer() { return *train_; }
  DataSource &data() { return *dataSource; }
  DataSource *evalData() { return evalSource.get(); }
  const StartPoint &start() const { return startPoint; }
  int threads() const { return threadCount; }
  /// The communicator of the job (null: one process).
  Communicator *communicator() const { return comm; }

  /// What was set up, one line each (the model and its parameters, data
  /// parallelism, memory, training, data, accumulation, schedule), then
  /// the notes on loading (weights left fresh or unused, the learning rate
  /// resumed): for the header a tool prints.
  std::vector<std::string> describe() const;
  std::vector<std::string> notes() const;

  /// Trains until the last step, a signal (between steps: the first
  /// SIGINT or SIGTERM stops after the step; in a job of several ranks it
  /// ends the process), or divergence. Each step is reported to every
  /// observer, then checkpointed when due.
  Status train(const std::vector<RunObserver *> &observers, RunEnd &end);

  /// Writes what the options ask for at the end: the checkpoint (--save),
  /// the adapters, the Hugging Face directory and the merged export.
  Status finish();

  /// The lines a tool prints after training: steps, losses and
  /// throughput, padding, memory allocated and measured, CUDA graphs,
  /// skipped steps.
  std::vector<std::string> summary(const RunEnd &end) const;

private:
  Run() = default;
  Status setUp(const std::string &runKey);

  RunOptions opts;
  Communicator *comm = nullptr;
  Program prog;
  std::unique_ptr<Session> sess;
  std::unique_ptr<DataSource> dataSource, evalSource;
  std::unique_ptr<Trainer> train_;
  StartPoint startPoint;
  int threadCount = 1;
};

/// The metrics file of a run: one JSON object per line, written and
/// flushed line by line (a run that stops leaves whole lines).
class MetricsLog : public RunObserver {
public:
  /// Opens `path`: truncated, or appended to (a resumed run's).
  static Status open(const std::string &path, std::unique_ptr<MetricsLog> &log,
                     bool append = false);
  ~MetricsLog() override;
  Status onStep(const StepReport &report) override;
  /// Writes one line of JSON text as it is.
  Status writeLine(const std::string &json);
  /// Closes the file; fails when anything was not written (disk full).
  Status close();

private:
  explicit MetricsLog(std::FILE *file, std::string path)
      : file(file), path(std::move(path)) {}
  std::FILE *file;
  std::string path;
};

/// Checks the run's files before any work: no output is an input or
/// another output (the checkpoint resumed from may be --save's), and what a
/// save would replace is a file (a directory output's own files, for the
/// Hugging Face and adapter directories). `more`: the caller's outputs
/// (tgc-run's --metrics).
Status checkRunFiles(const RunOptions &options,
                     const std::vector<NamedFile> &more = {});

/// Seconds since this process's exec (the dynamic loader and libraries'
/// start-up included, where the kernel says when that was).
double secondsSinceProcessStart();

/// The memory this process may use: the machine's, or its cgroup's limit
/// when lower.
int64_t availableMemory();

/// The training hyper-parameters the executable was compiled with, from
/// the compile options it records ("name=value ..."), as one line.
std::string describeTraining(const Program &program);

/// "HH:MM:SS", and a byte count in B, KiB, MiB, GiB or TiB.
std::string formatDuration(double seconds);
std::string formatBytes(int64_t bytes);

} // namespace tgc::rt

#endif // TGC_RUNTIME_RUN_H
