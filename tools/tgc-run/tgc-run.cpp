//===- tgc-run.cpp - trains with a compiled training step -----------------===//
//
//   tgc-run model.tgx [--steps N] [--data synthetic|FILE] ... (--help)
//
// Loads and verifies the executable, initialises (or loads) parameters,
// and runs N optimizer steps on batches from the data source (K micro-steps
// and the update for an executable that accumulates gradients), showing
// the loss, throughput and time left; validates, schedules the learning
// rate, saves and resumes. Links only the runtime (no MLIR), CLI11 for
// its command line and nlohmann-json for its metrics.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Checkpoint.h"
#include "tgc/runtime/Communicator.h"
#include "tgc/runtime/Data.h"
#include "tgc/runtime/HFDirectory.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Program.h"
#include "tgc/runtime/Schedule.h"
#include "tgc/runtime/Session.h"
#include "tgc/runtime/Threads.h"
#include "tgc/runtime/Trainer.h"
#include "tgc/Support/UserFiles.h"

#include "Options.h"
#include "Report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <string>
#include <tuple>
#include <climits>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

using namespace tgc::rt;
using namespace tgc::run;

namespace {

/// What an adapter directory names as its base model: the --load-weights
/// model directory (absolute), or none.
std::string baseModelName(const std::string &weights) {
  struct stat info;
  char resolved[PATH_MAX];
  if (weights.empty() || ::stat(weights.c_str(), &info) != 0 ||
      !S_ISDIR(info.st_mode) || !::realpath(weights.c_str(), resolved))
    return "";
  return resolved;
}

/// Seconds from the process's exec to now as the kernel counts them
/// (/proc/self/stat's start time, in clock ticks since boot, against
/// CLOCK_BOOTTIME; to a tick, 10 ms), or 0 where that is unknown.
double secondsSinceExec() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  size_t close = text.rfind(')'); // the command name may hold anything
  timespec now{};
  long ticks = sysconf(_SC_CLK_TCK);
  if (close == std::string::npos || ticks <= 0 ||
      clock_gettime(CLOCK_BOOTTIME, &now) != 0)
    return 0.0;
  // Fields from the third (state) on; the start time is the 22nd.
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i) {
  }
  char *end = nullptr;
  unsigned long long start = std::strtoull(field.c_str(), &end, 10);
  if (field.empty() || *end)
    return 0.0;
  double since = double(now.tv_sec) + 1e-9 * double(now.tv_nsec) -
                 double(start) / double(ticks);
  return since > 0.0 && since < 3600.0 ? since : 0.0;
}

/// When the process started: its exec, so that the time to the first step
/// counts the dynamic loader and the libraries' start-up as well as loading
/// the executable, allocating, initialising and loading weights.
const std::chrono::steady_clock::time_point processStart =
    std::chrono::steady_clock::now() -
    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(secondsSinceExec()));

/// The job this process is part of: the communicator of an mpirun job
/// (null for a single process), and whether the run is still setting up.
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

/// A point every rank of a job reaches during set-up: fails on every rank
/// when one has failed or `key` differs across ranks.
int agreeOrFail(const std::string &key = "") {
  if (!job.parallel())
    return 0;
  Status agreed = job.comm->agree(Status::success(), key);
  if (agreed.ok())
    return 0;
  std::fprintf(stderr, "tgc-run: error: %s\n", agreed.error.c_str());
  return 1;
}

/// The memory this process may use: the machine's, or its cgroup's limit
/// when lower.
int64_t availableMemory() {
  int64_t bytes = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  long long cgroup = 0;
  if (limit >> cgroup && cgroup > 0 && cgroup < bytes)
    bytes = cgroup;
  return bytes;
}

/// Whether `source` is read as examples (a .tgcd dataset, or the
/// synthetic examples of a task that pads them, Program::padsExamples):
/// what --padding and --overlong apply to.
bool readsExamples(const Program &program, const std::string &source) {
  if (source == "synthetic")
    return program.padsExamples();
  return source.size() > 5 &&
         source.compare(source.size() - 5, 5, ".tgcd") == 0;
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
  int rank = job.comm ? job.comm->rank() : 0;
  int ranks = job.comm ? job.comm->size() : 1;

  Options options;
  bool exitNow = false;
  std::string error = parseOptions(argc, argv, options, exitNow);
  if (!error.empty())
    return fail(error);
  if (exitNow)
    return 0;
  // Rank 0 alone prints progress and writes metrics.
  if (rank != 0) {
    options.quiet = true;
    options.metrics.clear();
  }

  Program program;
  Status status = loadProgram(options.program, program);
  if (!status.ok())
    return fail(status.error);
  // Every rank must run the same executable: the same step, the same
  // collectives in the same order.
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                (unsigned long long)program.checksum);
  if (int failed = agreeOrFail(std::string("an executable of FNV-1a hash ") +
                               hash))
    return failed;
  // ... and the same run: the same steps, schedule, data, seeds and the
  // same files loaded. A rank that differed would wait in a collective the
  // others never enter.
  if (job.parallel()) {
    std::string runKey;
    status = describeRun(options, runKey);
    if (!status.ok())
      return fail(status.error);
    if (int failed = agreeOrFail(runKey))
      return failed;
  }
  if (program.worldSize != ranks)
    return fail("'" + options.program + "' was compiled for " +
                (program.worldSize == 1
                     ? std::string("one process")
                     : std::to_string(program.worldSize) +
                           " ranks (--world-size " +
                           std::to_string(program.worldSize) + ")") +
                ", and runs on " + std::to_string(ranks) +
                (program.worldSize == 1
                     ? "; compile it with --world-size " +
                           std::to_string(ranks) + " --data-parallel=..."
                     : "; start it with mpirun -n " +
                           std::to_string(program.worldSize) + " tgc-run"));
  if (program.stepCounter < 0)
    return fail("'" + options.program +
                "' has no optimizer step counter: it is not a training step");
  // The plan is exact: check it against the memory budget before
  // allocating anything.
  int64_t budget =
      options.maxMemory > 0 ? options.maxMemory : availableMemory();
  int64_t planned = program.persistentBytes + program.arenaBytes;
  if (planned > budget)
    return fail("'" + options.program + "' needs " + formatBytes(planned) +
                " (persistent " + formatBytes(program.persistentBytes) +
                ", arena " + formatBytes(program.arenaBytes) + "), more than " +
                (options.maxMemory > 0 ? "--max-memory " : "the ") +
                formatBytes(budget) +
                (options.maxMemory > 0 ? "" : " this machine has"));

  // One thread count for the CPU kernels and OpenBLAS (the CUDA emulator's
  // host threads too); under mpirun each rank gets its share of the cores.
  int threads = options.threads;
  if (!options.threadsGiven)
    threads = std::max(1, availableCores() / std::max(1, ranks));
  status = setCpuThreads(threads);
  if (!status.ok())
    return fail("--threads: " + status.error);

  std::unique_ptr<Backend> backend;
  if (options.device == "cpu") {
    backend = createCpuBackend();
  } else {
    status = createCudaBackend(backend);
    if (!status.ok()) {
      if (options.device == "cuda")
        return fail(status.error);
      backend = createCpuBackend();
    }
  }
  std::unique_ptr<Session> session;
  status = Session::create(program, std::move(backend), session,
                           job.comm.get());
  if (!status.ok())
    return fail(status.error);
  session->setGraphs(options.cudaGraphs);
  // Initialised around what the files provide, then loaded; a resumed run
  // continues at the saved step, with the saved seed, so it sees the
  // batches it would have seen.
  StartPoint start;
  status = startRun(*session,
                    {options.resume, options.loadWeights, options.loadAdapters},
                    options.seed, start);
  if (!status.ok())
    return fail(status.error);
  if (start.seed)
    options.seed = *start.seed;
  // What the weights did not provide, and what of them the model does not
  // use, as from_pretrained says it.
  auto list = [](const std::vector<std::string> &names) {
    std::string text;
    for (const std::string &name : names)
      text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  if (!start.weights.fresh.empty())
    std::fprintf(stderr,
                 "tgc-run: note: initialised fresh (not in the weights): "
                 "%s\n",
                 list(start.weights.fresh).c_str());
  if (!start.weights.unused.empty())
    std::fprintf(stderr,
                 "tgc-run: note: unused tensors of the weights (not in this "
                 "model): %s\n",
                 list(start.weights.unused).c_str());
  // Say when the checkpoint's learning rate is not the compiled --lr.
  if (start.lr && float(*start.lr) != float(*start.compiledLr))
    std::fprintf(stderr,
                 "tgc-run: note: continuing with the checkpoint's learning "
                 "rate %g; this executable was compiled with --lr=%g\n",
                 *start.lr, *start.compiledLr);
  const int64_t startStep = start.step;
  const int64_t startBatch = start.batch;
  if (!options.quiet && session->backend().hostAccessible())
    std::printf("tgc-run: %d thread%s; OpenBLAS %s kernels%s; vector math "
                "%s\n",
                threads, threads == 1 ? "" : "s", blasCoreName().c_str(),
                blasCoreChosenByRuntime()
                    ? " (chosen from the CPU's instruction sets)"
                    : "",
                vectorMathIsa().c_str());
  if (const char *asked = std::getenv("TGC_VECMATH"))
    if (vectorMathIsa() != asked)
      std::fprintf(stderr,
                   "tgc-run: warning: TGC_VECMATH=%s is not a vector math "
                   "instruction set this CPU runs (avx512f, avx2, sse2 or "
                   "libm, as the CPU has them); using %s\n",
                   asked, vectorMathIsa().c_str());
  if (const char *gemm = std::getenv("TGC_GEMM"))
    if (std::strcmp(gemm, "openblas") != 0)
      std::fprintf(stderr,
                   "tgc-run: warning: TGC_GEMM=%s is not known (only "
                   "'openblas', OpenBLAS's own threading, is); GEMMs run in "
                   "tiles on tgc's threads\n",
                   gemm);

  if (!options.saveAdapters.empty() && program.adapters.empty())
    return fail("--save-adapters: the model has no LoRA adapters (compile "
                "it with --lora)");
  if (!options.saveHF.empty()) {
    Status usable = checkHuggingFaceSave(program);
    if (!usable.ok())
      return fail(usable.error);
  }

  // A learning-rate schedule: its peak is the executable's --lr (the
  // trainer checks that it has one).
  std::optional<LrSchedule> schedule;
  if (!options.lrSchedule.empty()) {
    schedule.emplace();
    parseLrScheduleKind(options.lrSchedule, schedule->kind);
    schedule->warmupSteps = options.warmupSteps;
    schedule->minLr = options.minLr;
    schedule->maxSteps = options.maxSteps;
  }
  if (options.exampleOptionsGiven &&
      !readsExamples(program, options.data) &&
      !((options.evalOnly || options.evalEvery) &&
        readsExamples(program, options.evalData)))
    return fail("--padding and --overlong apply to datasets of examples "
                "(.tgcd files, or the synthetic examples of masked-LM and "
                "classification models); '" + options.data +
                "' holds none");
  DataOptions exampleOptions;
  exampleOptions.padding = options.padding == "max"       ? Padding::Max
                           : options.padding == "grouped" ? Padding::Grouped
                                                          : Padding::Dynamic;
  exampleOptions.truncate = options.overlong == "truncate";
  exampleOptions.rank = rank;
  exampleOptions.ranks = ranks;
  std::unique_ptr<DataSource> data;
  status = createDataSource(program, options.data, options.seed, data,
                            exampleOptions);
  if (!status.ok())
    return fail(status.error);

  // Validation: the executable's eval_step (forward and loss only) on the
  // first --eval-batches batches of its source, every time.
  const EntryPoint *evalEntry = program.findEntry("eval_step");
  std::unique_ptr<DataSource> evalData;
  if (options.evalOnly || options.evalEvery) {
    if (!evalEntry)
      return fail("'" + options.program + "' has no eval_step entry point "
                  "(compile it again with this tgc-compile)");
    status = createDataSource(
        program, options.evalData.empty() ? options.data : options.evalData,
        options.seed ^ 0xE7A1u, evalData, exampleOptions);
    if (!status.ok())
      return fail("--eval-data: " + status.error);
  }
  TrainerOptions training;
  training.steps = options.steps;
  training.startStep = startStep;
  training.startBatch = startBatch;
  training.seed = options.seed;
  training.schedule = schedule;
  training.evalEvery = options.evalEvery;
  training.evalBatches = options.evalBatches;
  training.save = options.save;
  training.saveEvery = options.saveEvery;
  training.resume = options.resume;
  training.profile = options.profile;
  std::unique_ptr<Trainer> trainer;
  status = Trainer::create(*session, *data, evalData.get(), training, trainer);
  if (!status.ok())
    return fail(status.error);
  std::FILE *metrics = nullptr;
  if (!options.metrics.empty()) {
    metrics = std::fopen(options.metrics.c_str(), "w");
    if (!metrics)
      return fail("cannot write metrics to '" + options.metrics + "'");
  }
  // Every rank is ready: from here a rank that fails ends the job.
  if (int failed = agreeOrFail())
    return failed;
  job.settingUp = false;

  // One JSON object per line (non-finite numbers become null).
  auto writeMetrics = [&](const nlohmann::ordered_json &row) {
    std::string line =
        row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    line.push_back('\n');
    // Whole lines only: flushed row by row, so that a run that stops
    // leaves complete rows.
    std::fwrite(line.data(), 1, line.size(), metrics);
    std::fflush(metrics);
  };

  if (options.evalOnly) {
    double mean = 0.0;
    status = trainer->evaluate(mean);
    if (!status.ok())
      return fail(status.error);
    std::printf("tgc-run: eval loss %.6f over %lld batches of %s\n", mean,
                (long long)options.evalBatches, evalData->describe().c_str());
    if (metrics) {
      writeMetrics({{"step", startStep}, {"eval_loss", mean}});
      if (std::fclose(metrics) != 0)
        return fail("could not write the metrics to '" + options.metrics +
                    "'");
    }
    return 0;
  }

  int64_t params = 0, stateBytes = 0;
  // Quantized state: ui8 codes, `<state>.q4` when packed 4-bit.
  const char *quantizedState = "";
  for (const TensorInfo &info : program.tensors) {
    if (info.role == Role::Param)
      params += info.numElements();
    if (info.role == Role::State && info.storage == Storage::Persistent) {
      stateBytes += info.bytes;
      if (info.dtype == DType::U8)
        quantizedState =
            info.name.size() > 3 &&
                    info.name.compare(info.name.size() - 3, 3, ".q4") == 0
                ? ", 4-bit"
                : ", 8-bit";
    }
  }
  if (!options.quiet) {
    std::printf("tgc-run: @%s, %lld parameters, on %s\n",
                program.model.c_str(), (long long)params,
                session->backend().describe().c_str());
    if (!program.dataParallel.empty())
      std::printf("  data parallel: %s over %d ranks (%s); memory and "
                  "batch per rank, throughput of the job\n",
                  program.dataParallel.c_str(), ranks,
                  job.comm ? job.comm->describe().c_str() : "1 process");
    std::string offloaded =
        program.hostBytes > 0
            ? ", " + formatBytes(program.hostBytes) + " of it in host memory"
            : "";
    std::printf("  memory: persistent %s (optimizer state %s%s%s), arena %s "
                "(planned peak %s)\n",
                formatBytes(program.persistentBytes).c_str(),
                formatBytes(stateBytes).c_str(),
                quantizedState, offloaded.c_str(),
                formatBytes(program.arenaBytes).c_str(),
                formatBytes(program.peakLiveBytes).c_str());
    std::string training = describeTraining(program);
    if (!training.empty())
      std::printf("  training: %s\n", training.c_str());
    if (program.allowTF32)
      std::printf("  f32 matrix products: %s\n",
                  session->backend().hostAccessible()
                      ? "f32 (TF32 is allowed, on the GPU only)"
                      : "TF32 tensor cores (--allow-tf32)");
    std::printf("  data: %s; steps %lld to %lld\n", data->describe().c_str(),
                (long long)startStep + 1, (long long)options.steps);
    if (trainer->microStep())
      std::printf("  gradient accumulation: %lld micro-batches per "
                  "optimizer step (%lld %s each)\n",
                  (long long)trainer->accumSteps(),
                  (long long)data->itemsPerBatch(), data->itemName());
    if (const std::optional<LrSchedule> &fed = trainer->options().schedule)
      std::printf("  learning rate: %s to %g after %lld warmup steps%s\n",
                  options.lrSchedule.c_str(), fed->peak,
                  (long long)fed->warmupSteps,
                  fed->kind == LrSchedule::Constant
                      ? ""
                      : (", then down to " + std::to_string(fed->minLr) +
                         " at step " + std::to_string(fed->maxSteps))
                            .c_str());
    std::fflush(stdout);
  }

  if (options.dryRun) {
    double setup = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - processStart)
                       .count();
    if (rank == 0) {
      std::printf("tgc-run: dry run: set up %.2f s after start (executable, "
                  "memory, initialisation, weights, data); no step run\n",
                  setup);
      std::printf("tgc-run: %lld bytes of %s memory allocated\n",
                  (long long)session->backend().bytesAllocated(),
                  session->backend().hostAccessible() ? "host" : "device");
    }
    return 0;
  }

  bool tty = isatty(fileno(stdout)) && !options.quiet && !options.logEvery;
  const int64_t accumSteps = trainer->accumSteps();
  auto begin = std::chrono::steady_clock::now();
  double firstLoss = NAN, lastLoss = NAN;
  // Between steps a first SIGINT or SIGTERM stops the run after the step
  // (a save under way finishes). In a job of several ranks it ends the
  // process at once: the ranks would not stop at the same step.
  setInterruptsDeferred(!job.parallel());
  while (!trainer->done()) {
    StepResult result;
    status = trainer->step(result);
    if (!status.ok())
      return fail(status.error);
    int64_t step = result.step, ran = trainer->stepsRun();
    double firstStepAt = NAN;
    if (ran == 1) {
      auto now = std::chrono::steady_clock::now();
      firstStepAt = std::chrono::duration<double>(now - processStart).count();
      double setup = std::chrono::duration<double>(begin - processStart)
                         .count();
      if (!options.quiet)
        std::printf("%stgc-run: first step done %.2f s after start (%.2f s "
                    "to set up: executable, memory, initialisation, "
                    "weights)\n",
                    tty ? "\r" : "", firstStepAt, setup);
    }
    std::string scaleText;
    if (result.lossScaled) {
      char text[96];
      std::snprintf(text, sizeof(text), " | scale %g | skipped %lld",
                    result.scale, (long long)result.skippedTotal);
      scaleText = text;
    }
    if (trainer->options().schedule) {
      char text[48];
      std::snprintf(text, sizeof(text), " | lr %.3g", result.lr);
      scaleText += text;
    }
    if (result.evaluated) {
      char text[48];
      std::snprintf(text, sizeof(text), " | eval %.4f", result.evalLoss);
      scaleText += text;
    }
    // A batch with nothing to predict (no token masked) has no loss: the
    // step computes 0 (and zero gradients), PyTorch NaN; neither is a loss.
    float loss = result.loss;
    bool noLoss = !result.hasLoss;
    if (noLoss)
      std::fprintf(stderr, "%stgc-run: warning: step %lld: its batch has "
                   "no token to predict (no token was masked), so it has no "
                   "loss\n", tty ? "\r" : "", (long long)step);
    if (std::isnan(firstLoss) && !noLoss)
      firstLoss = loss;
    if (!noLoss)
      lastLoss = loss;
    char lossText[32];
    std::snprintf(lossText, sizeof(lossText), noLoss ? "-" : "%.4f",
                  double(loss));
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - begin)
                         .count();
    double perSecond =
        elapsed > 0 ? double(ran * accumSteps * data->itemsPerBatch()) / elapsed
                    : 0.0;
    // Sources of padded examples: every position computed counts.
    int64_t realTokens = trainer->realTokens();
    int64_t paddedTokens = trainer->paddedTokens();
    if (paddedTokens > 0)
      perSecond = elapsed > 0 ? double(paddedTokens) / elapsed : 0.0;
    double eta = ran ? elapsed / double(ran) * double(options.steps - step)
                     : 0.0;
    if (metrics) {
      // f32 values are written as the doubles they convert to exactly
      // (the shortest text that reads back to that double).
      nlohmann::ordered_json row = {{"step", step}, {"loss", double(loss)}};
      if (noLoss)
        row["loss"] = nullptr;
      row[std::string(data->itemName()) + "_per_s"] = perSecond;
      if (paddedTokens > 0) {
        row["real_tokens_per_s"] =
            elapsed > 0 ? double(realTokens) / elapsed : 0.0;
        row["padding_fraction"] =
            1.0 - double(realTokens) / double(paddedTokens);
      }
      row["elapsed_s"] = elapsed;
      if (!std::isnan(firstStepAt)) {
        row["time_to_first_step_s"] = firstStepAt;
        row["setup_s"] =
            std::chrono::duration<double>(begin - processStart).count();
      }
      if (!std::isnan(result.lr))
        row["lr"] = result.lr;
      if (result.lossScaled) {
        row["loss_scale"] = result.scale;
        row["skipped"] = result.skipped;
      }
      if (result.evaluated)
        row["eval_loss"] = result.evalLoss;
      writeMetrics(row);
    }
    // A run that diverged ends with an error, and saves nothing.
    if (!result.diverged.empty()) {
      if (tty)
        std::printf("\n");
      if (metrics)
        std::fclose(metrics);
      return fail(result.diverged);
    }
    if (tty) {
      int width = 30;
      int filled = int(double(width) * double(step) / double(options.steps));
      std::string bar(filled, '=');
      bar.resize(width, ' ');
      std::printf("\r  step %lld/%lld [%s] loss %s | %.1f %s/s | ETA %s%s ",
                  (long long)step, (long long)options.steps, bar.c_str(),
                  lossText, perSecond, data->itemName(),
                  formatDuration(eta).c_str(), scaleText.c_str());
      if (result.evaluated && step != options.steps)
        std::printf("\n"); // keep the line with the validation loss
      std::fflush(stdout);
    } else if (!options.quiet &&
               (result.evaluated ||
                (options.logEvery ? step % options.logEvery == 0
                                  : (step == options.steps || step % 10 == 0 ||
                                     step == startStep + 1)))) {
      std::printf("  step %lld/%lld loss %s | %.1f %s/s | ETA %s%s\n",
                  (long long)step, (long long)options.steps, lossText,
                  perSecond, data->itemName(), formatDuration(eta).c_str(),
                  scaleText.c_str());
      std::fflush(stdout);
    }
    status = trainer->checkpointIfDue(result);
    if (!status.ok())
      return fail(status.error);
    if (int signal = interruptSignal()) {
      if (tty)
        std::printf("\n");
      std::fprintf(stderr, "tgc-run: %s after step %lld of %lld; %s\n",
                   signal == SIGINT ? "interrupted" : "terminated",
                   (long long)step, (long long)options.steps,
                   trainer->savedSoFar().c_str());
      if (metrics)
        std::fclose(metrics);
      return 128 + signal;
    }
  }
  const int64_t ran = trainer->stepsRun();
  const int64_t realTokens = trainer->realTokens();
  const int64_t paddedTokens = trainer->paddedTokens();
  const EntryPoint *microStep = trainer->microStep();
  int32_t scaleTensor = program.findPersistent("amp.loss_scale");
  int64_t skipped = trainer->skippedSteps();
  // From here a signal abandons what is being saved, leaving the previous
  // file.
  setInterruptsDeferred(false);
  if (tty)
    std::printf("\n");
  if (options.profile && rank == 0) {
    nlohmann::ordered_json report = reportProfile(
        program, *session, options.profileTop,
        session->backend().hostAccessible() ? "CPU clock"
                                            : "CUDA events");
    if (metrics)
      writeMetrics({{"profile", report}});
  }
  if (metrics) {
    bool failed = std::ferror(metrics) != 0;
    failed = std::fclose(metrics) != 0 || failed;
    if (failed)
      return fail("could not write the metrics to '" + options.metrics +
                  "' (disk full?)");
  }
  if (!options.save.empty()) {
    status = trainer->save(startStep + ran);
    if (!status.ok())
      return fail(status.error);
  }
  if (!options.saveAdapters.empty()) {
    status = isAdapterDirectory(options.saveAdapters)
                 ? saveAdapterDirectory(*session, options.saveAdapters,
                                        baseModelName(options.loadWeights))
                 : saveAdapters(*session, options.saveAdapters);
    if (!status.ok())
      return fail(status.error);
  }
  if (!options.saveHF.empty()) {
    status = saveHuggingFace(*session, options.saveHF, options.hfShardBytes);
    if (!status.ok())
      return fail(status.error);
  }
  if (!options.exportMerged.empty()) {
    status = exportMerged(*session, options.exportMerged);
    if (!status.ok())
      return fail(status.error);
  }

  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  if (rank != 0)
    return 0;
  if (ran == 0)
    std::printf("tgc-run: no step to run: the run is at step %lld of "
                "--steps %lld\n",
                (long long)startStep, (long long)options.steps);
  else
    std::printf("tgc-run: %lld steps in %.2f s, loss %.4f -> %.4f, %.1f "
                "%s/s\n",
                (long long)ran, elapsed, firstLoss, lastLoss,
                elapsed > 0
                    ? double(paddedTokens > 0
                                 ? paddedTokens
                                 : ran * accumSteps * data->itemsPerBatch()) /
                          elapsed
                    : 0.0,
                data->itemName());
  if (paddedTokens > 0)
    std::printf("tgc-run: %lld real tokens in %lld positions (%.1f%% "
                "padding), %.1f real tokens/s\n",
                (long long)realTokens, (long long)paddedTokens,
                100.0 * (1.0 - double(realTokens) / double(paddedTokens)),
                elapsed > 0 ? double(realTokens) / elapsed : 0.0);
  std::printf("tgc-run: %lld bytes of %s memory allocated\n",
              (long long)session->backend().bytesAllocated(),
              session->backend().hostAccessible() ? "host" : "device");
  for (const std::string &note : session->graphNotes())
    std::printf("tgc-run: %s\n", note.c_str());
  if (scaleTensor >= 0)
    std::printf("tgc-run: loss scaling skipped %lld of %lld steps\n",
                (long long)skipped, (long long)ran);
  if (session->arenaHighWaterMark() >= 0)
    std::printf("tgc-run: arena high-water mark %lld bytes (planned peak "
                "%lld, arena %lld)\n",
                (long long)session->arenaHighWaterMark(),
                (long long)program.peakLiveBytes,
                (long long)program.arenaBytes);
  if (microStep && session->arenaHighWaterMark(microStep) >= 0)
    std::printf("tgc-run: grad_step arena high-water mark %lld bytes "
                "(planned peak %lld)\n",
                (long long)session->arenaHighWaterMark(microStep),
                (long long)microStep->peakLiveBytes);
  return 0;
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
