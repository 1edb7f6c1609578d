//===- tgc-run.cpp - trains with a compiled training step -----------------===//
//
//   tgc-run model.tgx [--steps N] [--data synthetic|FILE] ... (--help)
//
// Loads and verifies the executable, initialises (or loads) parameters,
// and runs N optimizer steps on batches from the data source (K micro-steps
// and the update for an executable that accumulates gradients), showing
// the loss, throughput and time left; validates, schedules the learning
// rate, saves and resumes. The run itself is the runtime's (rt::Run); this
// tool parses its flags (CLI11) and prints. Links only the runtime (no
// MLIR), and nlohmann-json for its profile.
//
//===----------------------------------------------------------------------===//

#include "tgc/Support/UserFiles.h"
#include "tgc/runtime/Communicator.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Run.h"
#include "tgc/runtime/Threads.h"

#include "Options.h"
#include "Report.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace tgc::rt;
using namespace tgc::run;

namespace {

/// The communicator of an mpirun job (null for a single process), and
/// whether the run is still setting up.
struct Job {
  std::unique_ptr<Communicator> comm;
  bool settingUp = true;
  bool parallel() const { return comm && comm->size() > 1; }
} job;

/// Reports an error and returns the exit status. In a job of several
/// ranks, every rank learns of it: while setting up, the error takes the
/// place of this rank's next agreement (Communicator::agree), so every
/// rank reports it and exits; once training, this rank ends the whole job
/// (MPI_Abort), as the others may be waiting for it in a collective.
int fail(const std::string &message) {
  if (!job.parallel()) {
    std::fprintf(stderr, "tgc-run: error: %s\n", message.c_str());
    return 1;
  }
  std::fprintf(stderr, "tgc-run: error: rank %d: %s\n", job.comm->rank(),
               message.c_str());
  std::fflush(stderr);
  if (job.settingUp) {
    (void)job.comm->agree(Status::failure(message));
    return 1;
  }
  job.comm->abort(1);
  return 1;
}

/// --eval-only: the validation loss of the run's start, printed and
/// recorded.
int evaluateOnly(Run &run, const Options &options, MetricsLog *metrics) {
  double mean = 0.0;
  Status status = run.trainer().evaluate(mean);
  if (!status.ok())
    return fail(status.error);
  std::printf("tgc-run: eval loss %.6f over %lld batches of %s\n", mean,
              (long long)options.evalBatches,
              run.evalData()->describe().c_str());
  if (metrics) {
    nlohmann::ordered_json row = {{"step", run.start().step},
                                  {"eval_loss", mean}};
    metrics->writeLine(row.dump());
    status = metrics->close();
    if (!status.ok())
      return fail(status.error);
  }
  return 0;
}

/// Trains, records and saves: the part of run() after set-up.
int trainAndSave(Run &run, const Options &options, MetricsLog *metrics) {
  Progress progress(options, run.start().step,
                    run.trainer().options().schedule.has_value());
  std::vector<RunObserver *> observers = {&progress};
  if (metrics)
    observers.push_back(metrics);
  RunEnd end;
  Status status = run.train(observers, end);
  if (!status.ok())
    return fail(status.error);
  if (!end.diverged.empty())
    return fail(end.diverged);
  if (end.signal) {
    if (progress.onTerminal())
      std::printf("\n");
    std::fprintf(stderr, "tgc-run: %s after step %lld of %lld; %s\n",
                 end.signal == SIGINT ? "interrupted" : "terminated",
                 (long long)(run.start().step + run.trainer().stepsRun()),
                 (long long)options.steps, run.trainer().savedSoFar().c_str());
    return 128 + end.signal;
  }
  if (progress.onTerminal())
    std::printf("\n");
  bool rank0 = !job.comm || job.comm->rank() == 0;
  if (options.profile && rank0) {
    nlohmann::ordered_json report = reportProfile(
        run.program(), run.session(), options.profileTop,
        run.session().backend().hostAccessible() ? "CPU clock" : "CUDA events");
    if (metrics)
      metrics->writeLine(
          nlohmann::ordered_json({{"profile", report}})
              .dump(-1, ' ', false,
                    nlohmann::ordered_json::error_handler_t::replace));
  }
  if (metrics && !(status = metrics->close()).ok())
    return fail(status.error);
  if (!(status = run.finish()).ok())
    return fail(status.error);
  if (rank0)
    for (const std::string &line : run.summary(end))
      std::printf("tgc-run: %s\n", line.c_str());
  return 0;
}

} // namespace

int run(int argc, char **argv) {
  // Started by mpirun: join the job first, so that every error after this
  // reaches every rank.
  installInterruptHandlers();
  if (launchedByMpi()) {
    Status joined = createMpiCommunicator(job.comm);
    if (!joined.ok())
      return fail(joined.error);
  }
  Options options;
  bool exitNow = false;
  std::string error = parseOptions(argc, argv, options, exitNow);
  if (!error.empty())
    return fail(error);
  if (exitNow)
    return 0;
  // Rank 0 alone prints progress and writes metrics.
  int rank = job.comm ? job.comm->rank() : 0;
  if (rank != 0) {
    options.quiet = true;
    options.metrics.clear();
  }
  // The ranks of a job agree on the run: the same steps, data and files.
  std::string runKey;
  Status status;
  if (job.parallel() && !(status = describeRun(options, runKey)).ok())
    return fail(status.error);
  // Set-up agrees across ranks itself: its errors are every rank's.
  std::unique_ptr<Run> run;
  status = Run::create(options, job.comm.get(), runKey, run);
  if (!status.ok()) {
    std::fprintf(stderr, "tgc-run: error: %s\n", status.error.c_str());
    return 1;
  }
  job.settingUp = false; // from here a rank that fails ends the job
  std::unique_ptr<MetricsLog> metrics;
  if (!options.metrics.empty() &&
      !(status = MetricsLog::open(options.metrics, metrics)).ok())
    return fail(status.error);
  printSetUp(*run, options);
  if (options.evalOnly)
    return evaluateOnly(*run, options, metrics.get());
  if (!options.quiet) {
    for (const std::string &line : run->describe())
      std::printf("%s%s\n", line[0] == ' ' ? "" : "tgc-run: ", line.c_str());
    std::fflush(stdout);
  }
  if (options.dryRun) {
    if (rank == 0)
      std::printf("tgc-run: dry run: set up %.2f s after start (executable, "
                  "memory, initialisation, weights, data); no step run\n"
                  "tgc-run: %lld bytes of %s memory allocated\n",
                  secondsSinceProcessStart(),
                  (long long)run->session().backend().bytesAllocated(),
                  run->session().backend().hostAccessible() ? "host"
                                                            : "device");
    return 0;
  }
  return trainAndSave(*run, options, metrics.get());
}

int main(int argc, char **argv) {
  // Started with a standard stream closed (`2>&-`): messages must not land
  // in the first file opened (the metrics).
  tgc::reopenClosedStandardStreams();
  // Nothing the runtime does should throw; a failed allocation still may.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail("out of host memory");
  } catch (const std::exception &error) {
    return fail(std::string("internal error: ") + error.what());
  }
}
