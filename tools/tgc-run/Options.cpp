//===- Options.cpp - tgc-run's command line -------------------------------===//

#include "Options.h"

#include "tgc/runtime/Checkpoint.h"
#include "tgc/runtime/Data.h"
#include "tgc/runtime/HFDirectory.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Program.h"
#include "tgc/runtime/Schedule.h"
#include "tgc/runtime/Session.h"
#include "tgc/runtime/Threads.h"
#include "tgc/Support/UserFiles.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace tgc::rt;

namespace tgc::run {

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

/// What some flags say before it is checked and converted.
struct OptionTexts {
  std::string cudaGraphs = "on", maxMemory, hfShardSize;
};

namespace {

/// Steps, seed, device, CUDA graphs, memory and threads.
void addTrainingOptions(CLI::App &app, Options &options, OptionTexts &texts) {
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
  app.add_option("--cuda-graphs", texts.cudaGraphs,
                 "on (default): on the GPU, each step after the first is "
                 "captured once as a CUDA graph and replayed, one launch a "
                 "step; off: every kernel is launched on its own")
      ->check(CLI::IsMember({"on", "off"}))
      ->option_text("on|off")
      ->group(training);
  app.add_option("--max-memory", texts.maxMemory,
                 "Refuse to start when the plan needs more than SIZE bytes "
                 "(K, M, G, T suffixes, powers of 1024; default: the memory "
                 "this process may use)")
      ->option_text("SIZE")
      ->group(training);
}

/// The data source and how examples are batched.
void addDataOptions(CLI::App &app, Options &options, OptionTexts &texts) {
  const char *data = "Data";
  app.add_option("--data", options.data,
                 "'synthetic' (default), a token file (llm.c shard or raw "
                 "uint16), a .safetensors file of batches (one tensor per "
                 "input, [N, ...]), or a .tgcd dataset of examples "
                 "(tgc-data)")
      ->option_text("SOURCE")
      ->group(data);
  app.add_option("--padding", options.padding,
                 "Batches of examples: pad every batch to the largest "
                 "sequence length (max), each to the smallest compiled "
                 "length that fits it (dynamic, the default), or that after "
                 "grouping examples of similar length into batches, in "
                 "shuffled order (grouped); or pack several examples into "
                 "each row, kept apart, no padding between them (pack: a "
                 "model of packed rows, tgc-models --packed)")
      ->check(CLI::IsMember({"max", "dynamic", "grouped", "pack"}))
      ->option_text("MODE")
      ->group(data);
  app.add_option("--overlong", options.overlong,
                 "Examples longer than the largest sequence length: cut "
                 "them (truncate, the default) or refuse the dataset "
                 "(reject)")
      ->check(CLI::IsMember({"truncate", "reject"}))
      ->option_text("POLICY")
      ->group(data);
}

/// The learning-rate schedule and validation.
void addScheduleAndValidationOptions(CLI::App &app, Options &options,
                                     OptionTexts &texts) {
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
}

/// Weights, adapters and checkpoints, in and out.
void addWeightsOptions(CLI::App &app, Options &options, OptionTexts &texts) {
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
                 "Start from these parameters: a safetensors file or a "
                 "Hugging Face model directory (float precisions are "
                 "converted)")
      ->option_text("FILE|DIR")
      ->group(weights);
  app.add_option("--load-adapters", options.loadAdapters,
                 "Load LoRA adapters (tgc's or PEFT's names) over the "
                 "weights: a safetensors file or a PEFT adapter directory")
      ->option_text("FILE|DIR")
      ->group(weights);
  app.add_option("--save-adapters", options.saveAdapters,
                 "Save the LoRA adapters at the end, as PEFT names them: a "
                 "PEFT adapter directory (adapter_config.json and "
                 "adapter_model.safetensors), or one .safetensors file")
      ->option_text("DIR|FILE")
      ->group(weights);
  app.add_option("--export-merged", options.exportMerged,
                 "Save the parameters at the end with the LoRA adapters "
                 "merged in (W + alpha/r B A)")
      ->option_text("FILE")
      ->group(weights);
  app.add_option("--save-hf", options.saveHF,
                 "Save the model at the end as a Hugging Face model "
                 "directory (config.json and safetensors, LoRA adapters "
                 "merged) that transformers' from_pretrained loads")
      ->option_text("DIR")
      ->group(weights);
  app.add_option("--save-hf-shard-size", texts.hfShardSize,
                 "--save-hf's largest file; larger models are split into "
                 "shards with an index (default 5GB, as save_pretrained)")
      ->option_text("SIZE")
      ->group(weights);
}

/// What the run prints and records.
void addOutputOptions(CLI::App &app, Options &options, OptionTexts &texts) {
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
  app.add_flag("--dry-run", options.dryRun,
               "Set everything up (executable, memory, weights or "
               "checkpoint, data) and exit before the first step: checks a "
               "checkpoint or a dataset without training")
      ->group(output);
  app.add_option("--profile-top", options.profileTop,
                 "How many of the slowest ops --profile lists (default 10)")
      ->check(CLI::PositiveNumber)
      ->group(output);
  app.add_option("--threads", options.threads,
                 "Threads of the CPU kernels and of OpenBLAS (default: the "
                 "cores this process may use)")
      ->option_text("N")
      ->group("Training");
}

/// The flags' values checked against each other and the sizes converted:
/// the first problem, or "".
std::string checkOptions(Options &options, const OptionTexts &texts) {
  if (!texts.maxMemory.empty() &&
      (!parseBytes(texts.maxMemory, options.maxMemory) ||
       options.maxMemory <= 0))
    return "--max-memory needs a positive size in bytes (like 512M or 16G)";
  if (!texts.hfShardSize.empty() &&
      (!parseBytes(texts.hfShardSize, options.hfShardBytes) ||
       options.hfShardBytes <= 0))
    return "--save-hf-shard-size needs a positive size in bytes (like 500M "
           "or 5G)";
  if (!texts.hfShardSize.empty() && options.saveHF.empty())
    return "--save-hf-shard-size needs --save-hf";
  if (!std::isfinite(options.minLr))
    return "--min-lr needs a finite number >= 0";
  if (options.saveEvery && options.save.empty())
    return "--save-every needs --save";
  if (options.evalOnly &&
      (!options.save.empty() || !options.saveAdapters.empty() ||
       !options.exportMerged.empty() || !options.saveHF.empty() ||
       options.evalEvery))
    return "--eval-only trains nothing: it takes no --save, "
           "--save-adapters, --export-merged, --save-hf or --eval-every";
  if (options.dryRun &&
      (!options.save.empty() || !options.saveAdapters.empty() ||
       !options.exportMerged.empty() || !options.saveHF.empty() ||
       !options.metrics.empty() || options.evalOnly || options.profile))
    return "--dry-run runs no step: it takes no --save, --save-adapters, "
           "--export-merged, --save-hf, --metrics, --eval-only or --profile";
  if (!options.evalOnly && !options.evalEvery &&
      (!options.evalData.empty() || options.evalBatches != 10))
    return "--eval-data and --eval-batches need --eval-every or --eval-only";
  if (options.lrSchedule.empty() &&
      (options.warmupSteps || options.minLr != 0.0 || options.maxSteps))
    return "--warmup-steps, --min-lr and --max-steps shape a schedule; "
           "choose one with --lr-schedule";
  if (!options.resume.empty() && !options.loadWeights.empty())
    return "--resume and --load-weights both set the parameters; use one";
  return "";
}

} // namespace

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
  OptionTexts texts;
  addTrainingOptions(app, options, texts);
  addDataOptions(app, options, texts);
  addScheduleAndValidationOptions(app, options, texts);
  addWeightsOptions(app, options, texts);
  addOutputOptions(app, options, texts);
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
  options.cudaGraphs = texts.cudaGraphs == "on";
  options.exampleOptionsGiven =
      app.count("--padding") > 0 || app.count("--overlong") > 0;
  if (std::string error = checkOptions(options, texts); !error.empty())
    return error;
  // No output may be an input or another output, and what a save would
  // replace must be a file (the run's rule, checked before any work).
  Status files = checkRunFiles(options, {{"--metrics", options.metrics}});
  return files.ok() ? "" : files.error;
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
    struct stat info;
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      // A weights or adapter directory: its safetensors and JSON files, by
      // name.
      std::error_code error;
      std::vector<std::string> names;
      for (const auto &entry :
           std::filesystem::directory_iterator(path, error)) {
        std::string name = entry.path().filename().string();
        for (const char *suffix : {".safetensors", ".json"})
          if (name.size() > std::strlen(suffix) &&
              name.compare(name.size() - std::strlen(suffix), std::string::npos,
                           suffix) == 0)
            names.push_back(name);
      }
      if (error)
        return Status::failure("cannot list '" + path +
                               "': " + error.message());
      std::sort(names.begin(), names.end());
      text = "directory:";
      for (const std::string &name : names) {
        std::string one;
        Status status = fingerprintFile(path + "/" + name, one);
        if (!status.ok())
          return status;
        text += name + "=" + one + ",";
      }
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
        " --dry-run=" + (options.dryRun ? "yes" : "no") +
        " --resume=" + resume + " --load-weights=" + weights +
        " --load-adapters=" + adapters + " --save=" + set(options.save) +
        " --save-every=" + std::to_string(options.saveEvery) +
        " --save-adapters=" + set(options.saveAdapters) +
        " --export-merged=" + set(options.exportMerged) +
        " --save-hf=" + set(options.saveHF) +
        " --lr-schedule=" +
        (options.lrSchedule.empty() ? "none" : options.lrSchedule) +
        " --warmup-steps=" + std::to_string(options.warmupSteps) +
        " --min-lr=" + minLr +
        " --max-steps=" + std::to_string(options.maxSteps) +
        " --profile=" + (options.profile ? "yes" : "no");
  return Status::success();
}

} // namespace tgc::run
