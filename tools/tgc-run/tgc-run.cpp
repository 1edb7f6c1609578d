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
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Program.h"
#include "tgc/runtime/Schedule.h"
#include "tgc/runtime/Session.h"
#include "tgc/runtime/Threads.h"
#include "tgc/runtime/Trainer.h"
#include "tgc/Support/UserFiles.h"

#include <CLI/CLI.hpp>
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
#include <map>
#include <string>
#include <tuple>
#include <unistd.h>

using namespace tgc::rt;

namespace {

/// When the process started (as static initialisation ran): time to the
/// first step counts loading the executable, allocating, initialising and
/// loading weights.
const std::chrono::steady_clock::time_point processStart =
    std::chrono::steady_clock::now();

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
  std::string device = "auto";
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
  std::string padding = "dynamic";
  std::string overlong = "truncate";
  int threads = 0; // unless threadsGiven: the cores this process may use
  bool threadsGiven = false;
  // Whether --padding or --overlong was given (they apply to examples).
  bool exampleOptionsGiven = false;
  bool profile = false;
  int64_t profileTop = 10;
};

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

/// A byte count with an optional K, M, G or T suffix (powers of 1024,
/// optionally followed by "iB" or "B").
bool parseBytes(const std::string &text, int64_t &value) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit((unsigned char)text[digits]))
    ++digits;
  if (digits == 0 || digits > 15)
    return false;
  int64_t number = std::stoll(text.substr(0, digits));
  std::string unit = text.substr(digits);
  int shift = 0;
  if (!unit.empty()) {
    const std::string units = "KMGT";
    size_t at = units.find(char(std::toupper((unsigned char)unit[0])));
    if (at == std::string::npos)
      return false;
    shift = 10 * int(at + 1);
    std::string rest = unit.substr(1);
    if (!rest.empty() && rest != "B" && rest != "iB")
      return false;
  }
  if (number > (int64_t(1) << 62) >> shift)
    return false;
  value = number << shift;
  return true;
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

/// Prints the profile of every profiled entry point (time per op kind,
/// then the `top` slowest ops, in ms per run) and returns it as JSON.
nlohmann::ordered_json reportProfile(const Program &program,
                                     const Session &session, int64_t top,
                                     const char *timer) {
  nlohmann::ordered_json report = nlohmann::ordered_json::object();
  for (const auto &[name, profile] : session.profile()) {
    if (!profile.runs || !profile.instructions)
      continue;
    double runs = double(profile.runs), total = 0.0;
    std::map<std::string, std::pair<double, int64_t>> kinds;
    for (size_t i = 0; i < profile.seconds.size(); ++i) {
      auto &kind = kinds[kernelName((*profile.instructions)[i].kernel)];
      kind.first += profile.seconds[i] / runs;
      ++kind.second;
      total += profile.seconds[i] / runs;
    }
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> byTime(
        kinds.begin(), kinds.end());
    std::stable_sort(byTime.begin(), byTime.end(),
                     [](const auto &a, const auto &b) {
                       return a.second.first > b.second.first;
                     });
    std::printf("tgc-run: profile of %s over %lld runs (%s): %.2f ms a run\n",
                name.c_str(), (long long)profile.runs, timer, total * 1e3);
    std::printf("  %-22s %10s %7s %5s\n", "op kind", "ms/run", "share",
                "ops");
    nlohmann::ordered_json kindRows = nlohmann::ordered_json::array();
    for (const auto &[kind, value] : byTime) {
      std::printf("  %-22s %10.3f %6.1f%% %5lld\n", kind.c_str(),
                  value.first * 1e3,
                  total > 0 ? 100.0 * value.first / total : 0.0,
                  (long long)value.second);
      kindRows.push_back({{"kind", kind},
                          {"ms", value.first * 1e3},
                          {"share", total > 0 ? value.first / total : 0.0},
                          {"ops", value.second}});
    }
    std::vector<size_t> order(profile.seconds.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return profile.seconds[a] > profile.seconds[b];
    });
    order.resize(std::min(order.size(), size_t(top)));
    std::printf("  slowest ops:\n");
    nlohmann::ordered_json topRows = nlohmann::ordered_json::array();
    for (size_t i : order) {
      const Instruction &inst = (*profile.instructions)[i];
      std::string result = "-", shape;
      std::vector<int64_t> dims;
      for (int32_t index : inst.results)
        if (index != kNotComputed) {
          result = program.tensors[index].name;
          dims = program.tensors[index].shape;
          break;
        }
      for (size_t d = 0; d < dims.size(); ++d)
        shape += (d ? "x" : "") + std::to_string(dims[d]);
      double ms = profile.seconds[i] / runs * 1e3;
      std::printf("  #%-5zu %-18s %10.3f ms  %s [%s]\n", i,
                  kernelName(inst.kernel), ms, result.c_str(),
                  shape.c_str());
      topRows.push_back({{"index", i},
                         {"kind", kernelName(inst.kernel)},
                         {"ms", ms},
                         {"result", result},
                         {"shape", dims}});
    }
    report[name] = {{"runs", profile.runs},
                    {"timer", timer},
                    {"ms", total * 1e3},
                    {"kinds", kindRows},
                    {"top", topRows}};
  }
  return report;
}

/// Parses argv with CLI11 (`--name value` or `--name=value`; --help lists
/// the options grouped by purpose). Returns an error message, or "" with
/// `exitNow` set when --help was answered.
std::string parseOptions(int argc, char **argv, Options &options,
                         bool &exitNow) {
  CLI::App app("tgc-run: trains with a compiled training step (.tgx)",
               "tgc-run");
  app.get_formatter()->column_width(34);
  app.add_option("program", options.program, "The executable (.tgx)")
      ->required()
      ->option_text("FILE");

  const char *training = "Training";
  app.add_option("--steps", options.steps,
                 "Optimizer steps to run (default 100)")
      ->check(CLI::Range(int64_t(0), kMaxCheckpointStep))
      ->group(training);
  app.add_option("--seed", options.seed,
                 "Seed of the initialisation and the data (default 0)")
      ->group(training);
  app.add_option("--device", options.device,
                 "cpu, cuda or auto (default: the GPU when this build has "
                 "the CUDA backend and the machine a GPU, else the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->group(training);
  std::string maxMemory;
  app.add_option("--max-memory", maxMemory,
                 "Refuse to start when the plan needs more than SIZE bytes "
                 "(K, M, G, T suffixes, powers of 1024; default: the memory "
                 "this process may use)")
      ->option_text("SIZE")
      ->group(training);

  const char *data = "Data";
  app.add_option("--data", options.data,
                 "'synthetic' (default), a token file (llm.c shard or raw "
                 "uint16), a .safetensors file of batches (one tensor per "
                 "input, [N, ...]), or a .tgcd dataset of examples "
                 "(scripts/tgc-data.py)")
      ->option_text("SOURCE")
      ->group(data);
  app.add_option("--padding", options.padding,
                 "Batches of examples: pad every batch to the largest "
                 "sequence length (max), each to the smallest compiled "
                 "length that fits it (dynamic, the default), or that after "
                 "grouping examples of similar length into batches, in "
                 "shuffled order (grouped)")
      ->check(CLI::IsMember({"max", "dynamic", "grouped"}))
      ->option_text("MODE")
      ->group(data);
  app.add_option("--overlong", options.overlong,
                 "Examples longer than the largest sequence length: cut "
                 "them (truncate, the default) or refuse the dataset "
                 "(reject)")
      ->check(CLI::IsMember({"truncate", "reject"}))
      ->option_text("POLICY")
      ->group(data);

  const char *schedule = "Learning-rate schedule";
  app.add_option("--lr-schedule", options.lrSchedule,
                 "Set the learning rate before every step: linear warmup to "
                 "the compiled --lr, then constant, or cosine or linear "
                 "decay to --min-lr at --max-steps (nanoGPT's formula)")
      ->check(CLI::IsMember({"constant", "cosine", "linear"}))
      ->group(schedule);
  app.add_option("--warmup-steps", options.warmupSteps,
                 "Warmup steps of the schedule (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->group(schedule);
  app.add_option("--min-lr", options.minLr,
                 "Where decay ends (default 0)")
      ->check(CLI::NonNegativeNumber)
      ->group(schedule);
  app.add_option("--max-steps", options.maxSteps,
                 "The step at which decay ends (cosine, linear)")
      ->check(CLI::PositiveNumber)
      ->group(schedule);

  const char *validation = "Validation";
  app.add_option("--eval-data", options.evalData,
                 "Validation data (as --data; default: --data's)")
      ->option_text("SOURCE")
      ->group(validation);
  app.add_option("--eval-every", options.evalEvery,
                 "Report the validation loss every N steps")
      ->check(CLI::PositiveNumber)
      ->group(validation);
  app.add_option("--eval-batches", options.evalBatches,
                 "Batches per validation (default 10; the same M every time)")
      ->check(CLI::PositiveNumber)
      ->group(validation);
  app.add_flag("--eval-only", options.evalOnly,
               "Report the validation loss of the weights (--resume or "
               "--load-weights) and exit")
      ->group(validation);

  const char *weights = "Weights and checkpoints";
  app.add_option("--save", options.save,
                 "Save parameters and optimizer state (safetensors) at the "
                 "end")
      ->option_text("CKPT")
      ->group(weights);
  app.add_option("--save-every", options.saveEvery,
                 "Also save every K steps")
      ->check(CLI::PositiveNumber)
      ->group(weights);
  app.add_option("--resume", options.resume,
                 "Continue a run saved with --save")
      ->option_text("CKPT")
      ->group(weights);
  app.add_option("--load-weights", options.loadWeights,
                 "Start from these parameters (safetensors; float "
                 "precisions are converted)")
      ->option_text("FILE")
      ->group(weights);
  app.add_option("--load-adapters", options.loadAdapters,
                 "Load LoRA adapters (tgc's or PEFT's names) over the "
                 "weights")
      ->option_text("FILE")
      ->group(weights);
  app.add_option("--save-adapters", options.saveAdapters,
                 "Save the LoRA adapters at the end, as PEFT names them")
      ->option_text("FILE")
      ->group(weights);
  app.add_option("--export-merged", options.exportMerged,
                 "Save the parameters at the end with the LoRA adapters "
                 "merged in (W + alpha/r B A)")
      ->option_text("FILE")
      ->group(weights);

  const char *output = "Output";
  app.add_option("--metrics", options.metrics,
                 "Write one JSON object per step (JSONL)")
      ->option_text("FILE")
      ->group(output);
  app.add_option("--log-every", options.logEvery,
                 "Print a line every K steps instead of a progress bar")
      ->check(CLI::PositiveNumber)
      ->group(output);
  app.add_flag("--quiet", options.quiet, "Print only the summary")
      ->group(output);
  app.add_flag("--profile", options.profile,
               "Time every op of the steps after the first; print the time "
               "per op kind and the slowest ops, and add them to --metrics")
      ->group(output);
  app.add_option("--profile-top", options.profileTop,
                 "How many of the slowest ops --profile lists (default 10)")
      ->check(CLI::PositiveNumber)
      ->group(output);
  app.add_option("--threads", options.threads,
                 "Threads of the CPU kernels and of OpenBLAS (default: the "
                 "cores this process may use)")
      ->option_text("N")
      ->group(training);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    std::fputs(app.help().c_str(), stdout);
    exitNow = true;
    return "";
  } catch (const CLI::ParseError &error) {
    return std::string(error.what()) + " (see --help)";
  }
  options.threadsGiven = app.count("--threads") > 0;
  options.exampleOptionsGiven =
      app.count("--padding") > 0 || app.count("--overlong") > 0;
  if (!maxMemory.empty() &&
      (!parseBytes(maxMemory, options.maxMemory) || options.maxMemory <= 0))
    return "--max-memory needs a positive size in bytes (like 512M or 16G)";
  if (!std::isfinite(options.minLr))
    return "--min-lr needs a finite number >= 0";
  if (options.saveEvery && options.save.empty())
    return "--save-every needs --save";
  if (options.evalOnly &&
      (!options.save.empty() || !options.saveAdapters.empty() ||
       !options.exportMerged.empty() || options.evalEvery))
    return "--eval-only trains nothing: it takes no --save, "
           "--save-adapters, --export-merged or --eval-every";
  if (!options.evalOnly && !options.evalEvery &&
      (!options.evalData.empty() || options.evalBatches != 10))
    return "--eval-data and --eval-batches need --eval-every or --eval-only";
  if (options.lrSchedule.empty() &&
      (options.warmupSteps || options.minLr != 0.0 || options.maxSteps))
    return "--warmup-steps, --min-lr and --max-steps shape a schedule; "
           "choose one with --lr-schedule";
  if (!options.resume.empty() && !options.loadWeights.empty())
    return "--resume and --load-weights both set the parameters; use one";
  // No output may be an input or another output: a mistake on the command
  // line must not cost the user a dataset, a checkpoint or the executable.
  std::vector<tgc::NamedFile> inputs = {
      {"the executable", options.program},
      {"tgc-run itself", "/proc/self/exe"},
      {"--data", options.data == "synthetic" ? "" : options.data},
      {"--eval-data", options.evalData == "synthetic" ? "" : options.evalData},
      {"--load-weights", options.loadWeights},
      {"--load-adapters", options.loadAdapters}};
  std::vector<tgc::NamedFile> outputs = {
      {"--save", options.save},
      {"--save-adapters", options.saveAdapters},
      {"--export-merged", options.exportMerged},
      {"--metrics", options.metrics}};
  std::string clash = tgc::checkDistinctFiles(inputs, outputs);
  // --save may replace the checkpoint the run resumes from (read whole
  // before training, and replaced atomically): one file that a job keeps
  // resuming from and saving to. No other output may.
  std::vector<tgc::NamedFile> resumeOutputs = outputs;
  if (!tgc::checkDistinctFiles({{"--resume", options.resume}},
                               {{"--save", options.save}})
           .empty())
    resumeOutputs.erase(resumeOutputs.begin());
  if (clash.empty())
    clash = tgc::checkDistinctFiles({{"--resume", options.resume}},
                                    resumeOutputs);
  if (!clash.empty())
    return clash;
  // What a save would replace must be a regular file (or nothing): refuse
  // before training rather than after.
  for (const std::string *target :
       {&options.save, &options.saveAdapters, &options.exportMerged}) {
    if (target->empty())
      continue;
    Status status = checkSaveTarget(*target);
    if (!status.ok())
      return status.error;
  }
  return "";
}

/// The training hyper-parameters the executable was compiled with, from
/// the compile options it records ("name=value ..."), as one line.
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
    char *end = nullptr;
    double value = std::strtod(options[name].c_str(), &end);
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
    out += ", betas (" + number("beta1") + ", " + number("beta2") +
           "), eps " + number("eps");
  if (optimizer == "sgd")
    out += ", momentum " + number("momentum") +
           (options["nesterov"] == "true" ? " (nesterov)" : "");
  out += ", weight decay " + decay;
  if (options["optimizer-state"] == "8bit")
    out += ", 8-bit state";
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

/// The options every rank of a job must share, as `--name=value` items, the
/// files it reads by fingerprint (their paths may differ from rank to
/// rank). Output options count only by whether they are set: which file
/// rank 0 writes is its own affair.
Status describeRun(const Options &options, std::string &key) {
  auto file = [&](const std::string &path, std::string &text) -> Status {
    if (path.empty() || path == "synthetic") {
      text = path.empty() ? "none" : path;
      return Status::success();
    }
    Status status = fingerprintFile(path, text);
    if (!status.ok())
      return status;
    text = "file:" + text;
    return Status::success();
  };
  std::string data, evalData, resume, weights, adapters;
  for (auto [option, path, text] :
       {std::tuple("--data", &options.data, &data),
        std::tuple("--eval-data", &options.evalData, &evalData),
        std::tuple("--resume", &options.resume, &resume),
        std::tuple("--load-weights", &options.loadWeights, &weights),
        std::tuple("--load-adapters", &options.loadAdapters, &adapters)}) {
    Status status = file(*path, *text);
    if (!status.ok())
      return Status::failure(std::string(option) + ": " + status.error);
  }
  auto set = [](const std::string &path) { return path.empty() ? "no" : "yes"; };
  char minLr[32];
  std::snprintf(minLr, sizeof(minLr), "%.17g", options.minLr);
  key = "--steps=" + std::to_string(options.steps) +
        " --seed=" + std::to_string(options.seed) + " --data=" + data +
        " --padding=" + options.padding + " --overlong=" + options.overlong +
        " --eval-data=" + evalData +
        " --eval-every=" + std::to_string(options.evalEvery) +
        " --eval-batches=" + std::to_string(options.evalBatches) +
        " --eval-only=" + (options.evalOnly ? "yes" : "no") +
        " --resume=" + resume + " --load-weights=" + weights +
        " --load-adapters=" + adapters + " --save=" + set(options.save) +
        " --save-every=" + std::to_string(options.saveEvery) +
        " --save-adapters=" + set(options.saveAdapters) +
        " --export-merged=" + set(options.exportMerged) +
        " --lr-schedule=" +
        (options.lrSchedule.empty() ? "none" : options.lrSchedule) +
        " --warmup-steps=" + std::to_string(options.warmupSteps) +
        " --min-lr=" + minLr +
        " --max-steps=" + std::to_string(options.maxSteps) +
        " --profile=" + (options.profile ? "yes" : "no");
  return Status::success();
}

/// Whether `source` is read as examples (a .tgcd dataset, or the
/// synthetic examples of a masked LM or a classifier): what --padding and
/// --overlong apply to.
bool readsExamples(const Program &program, const std::string &source) {
  if (source == "synthetic")
    return program.task == "masked-lm" ||
           program.task == "sequence-classification";
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
  bool quantizedState = false;
  for (const TensorInfo &info : program.tensors) {
    if (info.role == Role::Param)
      params += info.numElements();
    if (info.role == Role::State && info.storage == Storage::Persistent) {
      stateBytes += info.bytes;
      quantizedState |= info.dtype == DType::U8;
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
    std::printf("  memory: persistent %s (optimizer state %s%s), arena %s "
                "(planned peak %s)\n",
                formatBytes(program.persistentBytes).c_str(),
                formatBytes(stateBytes).c_str(),
                quantizedState ? ", 8-bit" : "",
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
    status = saveAdapters(*session, options.saveAdapters);
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
