//===- Run.cpp - a training run from its options --------------------------===//

#include "tgc/runtime/Run.h"

#include "tgc/runtime/Backend.h"
#include "tgc/runtime/HFDirectory.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Schedule.h"
#include "tgc/runtime/Threads.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace tgc::rt {

RunObserver::~RunObserver() = default;
Run::~Run() = default;

namespace {

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

/// Whether `source` is read as examples (a .tgcd dataset, or the
/// synthetic examples of a task that pads them, Program::padsExamples):
/// what padding and overlong apply to.
bool readsExamples(const Program &program, const std::string &source) {
  if (source == "synthetic")
    return program.padsExamples();
  return source.size() > 5 &&
         source.compare(source.size() - 5, 5, ".tgcd") == 0;
}

/// The error of an executable compiled for another number of ranks.
std::string worldSizeError(const RunOptions &options, int worldSize,
                           int ranks) {
  std::string compiled = worldSize == 1 ? std::string("one process")
                                        : std::to_string(worldSize) +
                                              " ranks (--world-size " +
                                              std::to_string(worldSize) + ")";
  std::string remedy = worldSize == 1
                           ? "; compile it with --world-size " +
                                 std::to_string(ranks) + " --data-parallel=..."
                           : "; start it with mpirun -n " +
                                 std::to_string(worldSize) + " tgc-run";
  return "'" + options.program + "' was compiled for " + compiled +
         ", and runs on " + std::to_string(ranks) + remedy;
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

} // namespace

double secondsSinceProcessStart() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       processStart)
      .count();
}

int64_t availableMemory() {
  int64_t bytes = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  long long cgroup = 0;
  if (limit >> cgroup && cgroup > 0 && cgroup < bytes)
    bytes = cgroup;
  return bytes;
}

Status checkRunFiles(const RunOptions &opts,
                     const std::vector<NamedFile> &more) {
  // No output may be an input or another output: a mistake on the command
  // line must not cost the user a dataset, a checkpoint or the executable.
  std::vector<tgc::NamedFile> inputs = {
      {"the executable", opts.program},
      {"this program", "/proc/self/exe"},
      {"--data", opts.data == "synthetic" ? "" : opts.data},
      {"--eval-data", opts.evalData == "synthetic" ? "" : opts.evalData},
      {"--load-weights", opts.loadWeights,
       weightsDirectoryFiles(opts.loadWeights), isHuggingFaceModelFile},
      {"--load-adapters", opts.loadAdapters, adapterDirectoryFiles(),
       isAdapterDirectoryFile}};
  // Directory outputs stand for the files they write, replace or remove;
  // the rest of a directory is kept (HFDirectory.h).
  std::vector<tgc::NamedFile> outputs = {
      {"--save", opts.save},
      {"--save-adapters", opts.saveAdapters,
       isAdapterDirectory(opts.saveAdapters) ? adapterDirectoryFiles()
                                             : std::vector<std::string>()},
      {"--export-merged", opts.exportMerged},
      {"--save-hf", opts.saveHF, huggingFaceFiles(), isHuggingFaceModelFile},
  };
  outputs.insert(outputs.end(), more.begin(), more.end());
  std::string clash = tgc::checkDistinctFiles(inputs, outputs);
  // --save may replace the checkpoint the run resumes from (read whole
  // before training, and replaced atomically): one file that a job keeps
  // resuming from and saving to. No other output may.
  std::vector<tgc::NamedFile> resumeOutputs = outputs;
  if (!tgc::checkDistinctFiles({{"--resume", opts.resume}},
                               {{"--save", opts.save}})
           .empty())
    resumeOutputs.erase(resumeOutputs.begin());
  if (clash.empty())
    clash = tgc::checkDistinctFiles({{"--resume", opts.resume}}, resumeOutputs);
  if (!clash.empty())
    return Status::failure(clash);
  // What a save would replace must be a regular file (or nothing): refuse
  // before training rather than after.
  for (const std::string *target :
       {&opts.save, &opts.saveAdapters, &opts.exportMerged}) {
    if (target->empty())
      continue;
    Status status =
        target == &opts.saveAdapters && isAdapterDirectory(*target)
            ? checkDirectoryTarget(
                  *target, {"adapter_config.json", "adapter_model.safetensors"})
            : checkSaveTarget(*target);
    if (!status.ok())
      return status;
  }
  if (!opts.saveHF.empty()) {
    Status status = checkDirectoryTarget(opts.saveHF, huggingFaceFiles());
    if (!status.ok())
      return Status::failure("--save-hf: " + status.error);
  }
  return Status::success();
}

Status Run::create(const RunOptions &options, Communicator *comm,
                   const std::string &runKey, std::unique_ptr<Run> &run) {
  run.reset(new Run());
  run->opts = options;
  run->comm = comm;
  bool parallel = comm && comm->size() > 1;
  // The agreements of set-up: a rank that fails takes its next agreement
  // to say so, and every rank learns of it there.
  Status status = run->setUp(runKey);
  if (status.ok() && parallel)
    status = comm->agree(Status::success(), "");
  if (!status.ok())
    run.reset();
  return status;
}

Status Run::setUp(const std::string &runKey) {
  bool parallel = comm && comm->size() > 1;
  int ranks = comm ? comm->size() : 1;
  // A failure of this rank: shared at the agreement the others are in.
  auto fail = [&](const std::string &message) {
    if (!parallel)
      return Status::failure(message);
    (void)comm->agree(Status::failure(message));
    return Status::failure("rank " + std::to_string(comm->rank()) + ": " +
                           message);
  };
  Status status = loadProgram(opts.program, prog);
  if (!status.ok())
    return fail(status.error);
  if (parallel) {
    // Every rank must run the same executable (the same collectives in the
    // same order) and the same run: the same steps, schedule, data, seeds
    // and files. A rank that differed would wait in a collective the others
    // never enter.
    char hash[17];
    std::snprintf(hash, sizeof(hash), "%016llx",
                  (unsigned long long)prog.checksum);
    status = comm->agree(Status::success(),
                         std::string("an executable of FNV-1a hash ") + hash);
    if (status.ok())
      status = comm->agree(Status::success(), runKey);
    if (!status.ok())
      return status;
  }
  if (prog.worldSize != ranks)
    return fail(worldSizeError(opts, prog.worldSize, ranks));
  if (prog.stepCounter < 0)
    return fail("'" + opts.program +
                "' has no optimizer step counter: it is not a training step");
  // The plan is exact: check it against the memory budget before
  // allocating anything.
  int64_t budget = opts.maxMemory > 0 ? opts.maxMemory : availableMemory();
  int64_t planned = prog.persistentBytes + prog.arenaBytes;
  if (planned > budget)
    return fail("'" + opts.program + "' needs " + formatBytes(planned) +
                " (persistent " + formatBytes(prog.persistentBytes) +
                ", arena " + formatBytes(prog.arenaBytes) + "), more than " +
                (opts.maxMemory > 0 ? "--max-memory " : "the ") +
                formatBytes(budget) +
                (opts.maxMemory > 0 ? "" : " this machine has"));

  // One thread count for the CPU kernels and OpenBLAS (the CUDA emulator's
  // host threads too); under mpirun each rank gets its share of the cores.
  threadCount = opts.threadsGiven
                    ? opts.threads
                    : std::max(1, availableCores() / std::max(1, ranks));
  status = setCpuThreads(threadCount);
  if (!status.ok())
    return fail("--threads: " + status.error);
  std::unique_ptr<Backend> backend;
  if (opts.device == "cpu") {
    backend = createCpuBackend();
  } else {
    status = createCudaBackend(backend);
    if (!status.ok()) {
      if (opts.device == "cuda")
        return fail(status.error);
      backend = createCpuBackend();
    }
  }
  status = Session::create(prog, std::move(backend), sess, comm);
  if (!status.ok())
    return fail(status.error);
  sess->setGraphs(opts.cudaGraphs);
  // Initialised around what the files provide, then loaded; a resumed run
  // continues at the saved step, with the saved seed, so it sees the
  // batches it would have seen.
  status = startRun(*sess, {opts.resume, opts.loadWeights, opts.loadAdapters},
                    opts.seed, startPoint);
  if (!status.ok())
    return fail(status.error);
  if (startPoint.seed)
    opts.seed = *startPoint.seed;
  if (!opts.saveAdapters.empty() && prog.adapters.empty())
    return fail("--save-adapters: the model has no LoRA adapters (compile "
                "it with --lora)");
  if (!opts.saveHF.empty()) {
    Status usable = checkHuggingFaceSave(prog);
    if (!usable.ok())
      return fail(usable.error);
  }

  bool evaluates = opts.evalOnly || opts.evalEvery;
  if (opts.exampleOptionsGiven && !readsExamples(prog, opts.data) &&
      !(evaluates && readsExamples(prog, opts.evalData)))
    return fail("--padding and --overlong apply to datasets of examples "
                "(.tgcd files, or the synthetic examples of masked-LM and "
                "classification models); '" +
                opts.data + "' holds none");
  DataOptions examples;
  examples.padding = opts.padding == "max"       ? Padding::Max
                     : opts.padding == "grouped" ? Padding::Grouped
                     : opts.padding == "pack"    ? Padding::Pack
                                                 : Padding::Dynamic;
  examples.truncate = opts.overlong == "truncate";
  examples.rank = comm ? comm->rank() : 0;
  examples.ranks = ranks;
  status = createDataSource(prog, opts.data, opts.seed, dataSource, examples);
  if (!status.ok())
    return fail(status.error);
  // Validation: the executable's eval_step (forward and loss only) on the
  // first evalBatches batches of its source, every time.
  if (evaluates) {
    if (!prog.findEntry("eval_step"))
      return fail("'" + opts.program +
                  "' has no eval_step entry point "
                  "(compile it again with this tgc-compile)");
    status = createDataSource(prog,
                              opts.evalData.empty() ? opts.data : opts.evalData,
                              opts.seed ^ 0xE7A1u, evalSource, examples);
    if (!status.ok())
      return fail("--eval-data: " + status.error);
  }

  TrainerOptions training;
  training.steps = opts.steps;
  training.startStep = startPoint.step;
  training.startBatch = startPoint.batch;
  training.seed = opts.seed;
  if (!opts.lrSchedule.empty()) {
    // Its peak is the executable's lr (the trainer checks it has one).
    LrSchedule schedule;
    parseLrScheduleKind(opts.lrSchedule, schedule.kind);
    schedule.warmupSteps = opts.warmupSteps;
    schedule.minLr = opts.minLr;
    schedule.maxSteps = opts.maxSteps;
    training.schedule = schedule;
  }
  training.evalEvery = opts.evalEvery;
  training.evalBatches = opts.evalBatches;
  training.save = opts.save;
  training.saveEvery = opts.saveEvery;
  training.resume = opts.resume;
  training.profile = opts.profile;
  status =
      Trainer::create(*sess, *dataSource, evalSource.get(), training, train_);
  if (!status.ok())
    return fail(status.error);
  return Status::success();
}

std::vector<std::string> Run::notes() const {
  std::vector<std::string> notes;
  // What the weights did not provide, and what of them the model does not
  // use, as from_pretrained says it.
  if (!startPoint.weights.fresh.empty())
    notes.push_back("initialised fresh (not in the weights): " +
                    joinNames(startPoint.weights.fresh));
  if (!startPoint.weights.unused.empty())
    notes.push_back("unused tensors of the weights (not in this model): " +
                    joinNames(startPoint.weights.unused));
  // The checkpoint's learning rate when it is not the compiled one.
  if (startPoint.lr && float(*startPoint.lr) != float(*startPoint.compiledLr)) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "continuing with the checkpoint's learning rate %g; this "
                  "executable was compiled with --lr=%g",
                  *startPoint.lr, *startPoint.compiledLr);
    notes.push_back(text);
  }
  return notes;
}

std::vector<std::string> Run::describe() const {
  std::vector<std::string> lines;
  char text[512];
  int64_t params = 0, stateBytes = 0;
  // Quantized state: ui8 codes, `<state>.q4` when packed 4-bit.
  const char *quantized = "";
  for (const TensorInfo &info : prog.tensors) {
    if (info.role == Role::Param)
      params += info.wholeElements();
    if (info.role == Role::State && info.storage == Storage::Persistent &&
        info.copyOf.empty()) {
      stateBytes += info.bytes;
      if (info.dtype == DType::U8)
        quantized =
            info.name.size() > 3 &&
                    info.name.compare(info.name.size() - 3, 3, ".q4") == 0
                ? ", 4-bit"
                : ", 8-bit";
    }
  }
  lines.push_back("@" + prog.model + ", " + std::to_string(params) +
                  " parameters, on " + sess->backend().describe());
  int64_t copyBytes = 0;
  for (const TensorInfo &info : prog.tensors)
    copyBytes += info.copyOf.empty() ? 0 : info.bytes;
  if (copyBytes > 0)
    lines.push_back("  reference (" + prog.preference +
                    "): a frozen copy of "
                    "the trained parameters as they start, " +
                    formatBytes(copyBytes));
  if (!prog.dataParallel.empty())
    lines.push_back(
        "  data parallel: " + prog.dataParallel + " over " +
        std::to_string(comm ? comm->size() : 1) + " ranks" +
        (prog.shardGroup != prog.worldSize
             ? ", split across groups of " + std::to_string(prog.shardGroup) +
                   " (" + std::to_string(prog.worldSize / prog.shardGroup) +
                   " replicas)"
             : "") +
        " (" + (comm ? comm->describe() : "1 process") +
        "); memory and batch per rank, throughput of the job");
  std::string offloaded =
      prog.hostBytes > 0
          ? ", " + formatBytes(prog.hostBytes) + " of it in host memory"
          : "";
  lines.push_back("  memory: persistent " + formatBytes(prog.persistentBytes) +
                  " (optimizer state " + formatBytes(stateBytes) + quantized +
                  offloaded + "), arena " + formatBytes(prog.arenaBytes) +
                  " (planned peak " + formatBytes(prog.peakLiveBytes) + ")");
  std::string training = describeTraining(prog);
  if (!training.empty())
    lines.push_back("  training: " + training);
  if (prog.allowTF32)
    lines.push_back(std::string("  f32 matrix products: ") +
                    (sess->backend().hostAccessible()
                         ? "f32 (TF32 is allowed, on the GPU only)"
                         : "TF32 tensor cores (--allow-tf32)"));
  lines.push_back("  data: " + dataSource->describe() + "; steps " +
                  std::to_string(startPoint.step + 1) + " to " +
                  std::to_string(opts.steps));
  if (train_->microStep()) {
    std::snprintf(text, sizeof(text),
                  "  gradient accumulation: %lld micro-batches per optimizer "
                  "step (%lld %s each)",
                  (long long)train_->accumSteps(),
                  (long long)dataSource->itemsPerBatch(),
                  dataSource->itemName());
    lines.push_back(text);
  }
  if (const std::optional<LrSchedule> &fed = train_->options().schedule) {
    std::string decay = fed->kind == LrSchedule::Constant
                            ? ""
                            : ", then down to " + std::to_string(fed->minLr) +
                                  " at step " + std::to_string(fed->maxSteps);
    std::snprintf(text, sizeof(text),
                  "  learning rate: %s to %g after %lld warmup steps%s",
                  opts.lrSchedule.c_str(), fed->peak,
                  (long long)fed->warmupSteps, decay.c_str());
    lines.push_back(text);
  }
  return lines;
}

Status Run::train(const std::vector<RunObserver *> &observers, RunEnd &end) {
  auto begin = std::chrono::steady_clock::now();
  double setup = std::chrono::duration<double>(begin - processStart).count();
  const int64_t perStep = train_->accumSteps() * dataSource->itemsPerBatch();
  // Between steps a first SIGINT or SIGTERM stops the run after the step
  // (a save under way finishes). In a job of several ranks it ends the
  // process at once: the ranks would not stop at the same step.
  setInterruptsDeferred(!(comm && comm->size() > 1));
  while (!train_->done()) {
    StepReport report;
    Status status = train_->step(report.result);
    if (!status.ok())
      return status;
    const StepResult &result = report.result;
    report.ran = train_->stepsRun();
    auto now = std::chrono::steady_clock::now();
    if (report.ran == 1) {
      report.firstStepAt =
          std::chrono::duration<double>(now - processStart).count();
      report.setup = setup;
    }
    // A batch with nothing to predict (no token masked) has no loss.
    if (result.hasLoss) {
      if (std::isnan(end.firstLoss))
        end.firstLoss = result.loss;
      end.lastLoss = result.loss;
    }
    double elapsed = std::chrono::duration<double>(now - begin).count();
    report.elapsed = elapsed;
    report.itemName = dataSource->itemName();
    // Sources of padded examples: every position computed counts.
    int64_t real = train_->realTokens(), padded = train_->paddedTokens();
    double items = padded > 0 ? double(padded) : double(report.ran * perStep);
    report.itemsPerSecond = elapsed > 0 ? items / elapsed : 0.0;
    if (padded > 0) {
      report.realPerSecond = elapsed > 0 ? double(real) / elapsed : 0.0;
      report.paddingFraction = 1.0 - double(real) / double(padded);
    }
    report.eta =
        elapsed / double(report.ran) * double(opts.steps - result.step);
    end.seconds = elapsed;
    for (RunObserver *observer : observers) {
      status = observer->onStep(report);
      if (!status.ok())
        return status;
    }
    // A run that diverged ends with an error, and saves nothing.
    if (!result.diverged.empty()) {
      end.diverged = result.diverged;
      return Status::success();
    }
    status = train_->checkpointIfDue(result);
    if (!status.ok())
      return status;
    if ((end.signal = interruptSignal()))
      return Status::success();
  }
  end.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  // From here a signal abandons what is being saved, leaving the previous
  // file.
  setInterruptsDeferred(false);
  return Status::success();
}

Status Run::finish() {
  Status status;
  if (!opts.save.empty()) {
    status = train_->save(startPoint.step + train_->stepsRun());
    if (!status.ok())
      return status;
  }
  if (!opts.saveAdapters.empty()) {
    status = isAdapterDirectory(opts.saveAdapters)
                 ? saveAdapterDirectory(*sess, opts.saveAdapters,
                                        baseModelName(opts.loadWeights))
                 : saveAdapters(*sess, opts.saveAdapters);
    if (!status.ok())
      return status;
  }
  if (!opts.saveHF.empty()) {
    status = saveHuggingFace(*sess, opts.saveHF, opts.hfShardBytes);
    if (!status.ok())
      return status;
  }
  if (!opts.exportMerged.empty()) {
    status = exportMerged(*sess, opts.exportMerged);
    if (!status.ok())
      return status;
  }
  return Status::success();
}

std::vector<std::string> Run::summary(const RunEnd &end) const {
  std::vector<std::string> lines;
  char text[256];
  const int64_t ran = train_->stepsRun();
  const int64_t real = train_->realTokens(), padded = train_->paddedTokens();
  const double seconds = end.seconds;
  if (ran == 0) {
    std::snprintf(text, sizeof(text),
                  "no step to run: the run is at step %lld of --steps %lld",
                  (long long)startPoint.step, (long long)opts.steps);
  } else {
    double items =
        padded > 0
            ? double(padded)
            : double(ran * train_->accumSteps() * dataSource->itemsPerBatch());
    std::snprintf(text, sizeof(text),
                  "%lld steps in %.2f s, loss %.4f -> %.4f, %.1f %s/s",
                  (long long)ran, seconds, end.firstLoss, end.lastLoss,
                  seconds > 0 ? items / seconds : 0.0, dataSource->itemName());
  }
  lines.push_back(text);
  if (padded > 0) {
    std::snprintf(text, sizeof(text),
                  "%lld real tokens in %lld positions (%.1f%% padding), %.1f "
                  "real tokens/s",
                  (long long)real, (long long)padded,
                  100.0 * (1.0 - double(real) / double(padded)),
                  seconds > 0 ? double(real) / seconds : 0.0);
    lines.push_back(text);
  }
  std::snprintf(text, sizeof(text), "%lld bytes of %s memory allocated",
                (long long)sess->backend().bytesAllocated(),
                sess->backend().hostAccessible() ? "host" : "device");
  lines.push_back(text);
  for (const std::string &note : sess->graphNotes())
    lines.push_back(note);
  if (prog.findPersistent("amp.loss_scale") >= 0) {
    std::snprintf(text, sizeof(text), "loss scaling skipped %lld of %lld steps",
                  (long long)train_->skippedSteps(), (long long)ran);
    lines.push_back(text);
  }
  if (sess->arenaHighWaterMark() >= 0) {
    std::snprintf(text, sizeof(text),
                  "arena high-water mark %lld bytes (planned peak %lld, "
                  "arena %lld)",
                  (long long)sess->arenaHighWaterMark(),
                  (long long)prog.peakLiveBytes, (long long)prog.arenaBytes);
    lines.push_back(text);
  }
  const EntryPoint *micro = train_->microStep();
  if (micro && sess->arenaHighWaterMark(micro) >= 0) {
    std::snprintf(text, sizeof(text),
                  "grad_step arena high-water mark %lld bytes (planned peak "
                  "%lld)",
                  (long long)sess->arenaHighWaterMark(micro),
                  (long long)micro->peakLiveBytes);
    lines.push_back(text);
  }
  return lines;
}

Status MetricsLog::open(const std::string &path,
                        std::unique_ptr<MetricsLog> &log, bool append) {
  std::FILE *file = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file)
    return Status::failure("cannot write metrics to '" + path + "'");
  log.reset(new MetricsLog(file, path));
  return Status::success();
}

MetricsLog::~MetricsLog() {
  if (file)
    std::fclose(file);
}

Status MetricsLog::writeLine(const std::string &json) {
  std::string line = json + "\n";
  // Whole lines only: flushed row by row, so that a run that stops leaves
  // complete rows.
  std::fwrite(line.data(), 1, line.size(), file);
  std::fflush(file);
  return Status::success();
}

Status MetricsLog::onStep(const StepReport &report) {
  const StepResult &result = report.result;
  // f32 values are written as the doubles they convert to exactly (the
  // shortest text that reads back to that double); non-finite ones as null.
  nlohmann::ordered_json row = {{"step", result.step},
                                {"loss", double(result.loss)}};
  if (!result.hasLoss)
    row["loss"] = nullptr;
  for (const auto &[name, value] : result.metrics)
    row[name] = std::isfinite(value) ? nlohmann::ordered_json(value)
                                     : nlohmann::ordered_json(nullptr);
  row[std::string(report.itemName) + "_per_s"] = report.itemsPerSecond;
  if (!std::isnan(report.paddingFraction)) {
    row["real_tokens_per_s"] = report.realPerSecond;
    row["padding_fraction"] = report.paddingFraction;
  }
  row["elapsed_s"] = report.elapsed;
  if (!std::isnan(report.firstStepAt)) {
    row["time_to_first_step_s"] = report.firstStepAt;
    row["setup_s"] = report.setup;
  }
  if (!std::isnan(result.lr))
    row["lr"] = result.lr;
  if (result.lossScaled) {
    row["loss_scale"] = result.scale;
    row["skipped"] = result.skipped;
  }
  if (result.evaluated)
    row["eval_loss"] = result.evalLoss;
  return writeLine(row.dump(-1, ' ', false,
                            nlohmann::ordered_json::error_handler_t::replace));
}

Status MetricsLog::close() {
  bool failed = std::ferror(file) != 0;
  failed = std::fclose(file) != 0 || failed;
  file = nullptr;
  if (failed)
    return Status::failure("could not write the metrics to '" + path +
                           "' (disk full?)");
  return Status::success();
}

std::string describeTraining(const Program &program) {
  std::map<std::string, std::string> options;
  size_t at = 0;
  const std::string &text = program.options;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(at, end - at);
    size_t eq = item.find('=');
    if (eq != std::string::npos)
      options[item.substr(0, eq)] = item.substr(eq + 1);
    at = end + 1;
  }
  auto number = [&](const std::string &name) {
    double value = std::strtod(options[name].c_str(), nullptr);
    char out[32];
    std::snprintf(out, sizeof(out), "%g", value);
    return std::string(out);
  };
  if (!options.count("optimizer") || !options.count("lr"))
    return "";
  const std::string optimizer = options["optimizer"];
  std::string out = optimizer + ", lr " + number("lr");
  bool defaultDecay = options["weight-decay"].rfind("-1", 0) == 0;
  std::string decay = defaultDecay ? (optimizer == "adamw" ? "0.01" : "0")
                                   : number("weight-decay");
  if (optimizer == "adamw")
    out += ", betas (" + number("beta1") + ", " + number("beta2") + "), eps " +
           number("eps");
  if (optimizer == "sgd")
    out += ", momentum " + number("momentum") +
           (options["nesterov"] == "true" ? " (nesterov)" : "");
  out += ", weight decay " + decay;
  if (options["optimizer-state"] == "8bit")
    out += ", 8-bit state";
  if (options["optimizer-state"] == "4bit")
    out += ", 4-bit state";
  if (options.count("clip-grad-norm") && number("clip-grad-norm") != "0")
    out += "; clip-grad-norm " + number("clip-grad-norm");
  if (options.count("amp") && options["amp"] != "none")
    out += "; amp " + options["amp"];
  if (options.count("remat") && options["remat"] != "none")
    out += "; remat " + options["remat"];
  return out;
}

std::string formatDuration(double seconds) {
  int64_t s = int64_t(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%02lld:%02lld:%02lld",
                (long long)(s / 3600), (long long)(s / 60 % 60),
                (long long)(s % 60));
  return text;
}

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%lld B", (long long)bytes);
  else
    std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

} // namespace tgc::rt
