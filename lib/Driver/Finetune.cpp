//===- Finetune.cpp - a model directory and data to a fine-tuned model ----===//
//
// The stages in order, each a library call where it is C++ (the model
// builders, compileModel, rt::Run) and a child process where it is Python
// (tgc-data for JSONL, tgc-import for families tgc-models does not build).
// OUT/.tgc holds what they make: options.yaml (what the run is), the
// encoded data, the model's IR, the executable and the checkpoint. When
// options.yaml is there and says the same, the run resumes from its
// checkpoint with the same executable, so its end is the uninterrupted
// run's, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/Finetune.h"

#include "tgc/Models/Models.h"
#include "tgc/Pipelines/Compile.h"
#include "tgc/Pipelines/TrainPipeline.h"
#include "tgc/Report/Pages.h"
#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Data.h"
#include "tgc/runtime/HFDirectory.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Run.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <unistd.h>

using namespace llvm;

namespace tgc {
namespace {

/// Where the run's files are, and what the stages chose.
struct Plan {
  std::string work, optionsFile, trainData, evalData, ir, executable,
      checkpoint, metrics;
  bool resuming = false;
  /// Whether tgc-import traced the model (tgc-models did not build it).
  bool imported = false;
  std::string modelType;
  /// A bitsandbytes 4-bit directory's quantization (compiled as it is
  /// stored: --quantize-frozen), else empty.
  std::string quantType;
  bool doubleQuant = false;
  int64_t vocab = 0, maxPositions = 0;
  int64_t seqLen = 0, steps = 0, examples = 0, longest = 0;
};

std::string realPath(const std::string &path) {
  SmallString<256> real;
  if (sys::fs::real_path(path, real))
    return path;
  return std::string(real);
}

/// Runs a Python stage by its command beside this driver (build/bin's
/// tgc-data or tgc-import, which choose the Python with its packages);
/// its own messages go to the terminal.
std::string runStage(const char *command, std::vector<std::string> args,
                     const char *what) {
  static int anchor;
  std::string self = sys::fs::getMainExecutable("tgc", &anchor);
  std::string path = (sys::path::parent_path(self) + "/" + command).str();
  std::vector<StringRef> argv = {path};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::string message;
  std::fflush(stdout);
  int status =
      sys::ExecuteAndWait(path, argv, std::nullopt, {}, 0, 0, &message);
  if (status == 0)
    return "";
  return std::string(what) + " failed (" + command +
         (status < 0 ? ": " + message
                     : " exited with " + std::to_string(status)) +
         "; its message is above)";
}

/// Whether tgc-models' builders take `modelType` (the others are traced
/// by tgc-import).
bool builtByTgc(StringRef modelType) {
  return is_contained({"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3",
                       "mixtral", "gemma2"},
                      modelType);
}

/// Checks the inputs and the output before any work.
std::string checkPaths(const FinetuneOptions &o, Plan &plan) {
  if (!sys::fs::is_directory(o.model) ||
      !sys::fs::exists(o.model + "/config.json"))
    return "--model '" + o.model +
           "' is not a model directory (no config.json in it)";
  auto buffer = MemoryBuffer::getFile(o.model + "/config.json");
  Expected<json::Value> config =
      buffer ? json::parse((*buffer)->getBuffer())
             : Expected<json::Value>(createStringError("unreadable"));
  const json::Object *object = config ? config->getAsObject() : nullptr;
  if (!object) {
    if (!config)
      consumeError(config.takeError());
    return "--model '" + o.model + "': config.json is not a JSON object";
  }
  plan.modelType = object->getString("model_type").value_or("").str();
  if (const json::Object *quant = object->getObject("quantization_config")) {
    // A quantized model: bitsandbytes' 4-bit trains adapters over its
    // base as it is stored; any other is refused by name.
    std::string method = quant->getString("quant_method").value_or("?").str();
    bool fourBit = quant->getBoolean("load_in_4bit").value_or(false);
    if (method != "bitsandbytes" || !fourBit)
      return "--model '" + o.model + "' is quantized (" + method +
             (quant->getBoolean("load_in_8bit").value_or(false) ? ", 8-bit"
                                                                 : "") +
             "); tgc fine-tunes 16- and 32-bit models and bitsandbytes' "
             "4-bit ones";
    plan.quantType =
        quant->getString("bnb_4bit_quant_type").value_or("fp4").str();
    plan.doubleQuant =
        quant->getBoolean("bnb_4bit_use_double_quant").value_or(false);
    if (o.lora.empty())
      return "--model '" + o.model + "' is a bitsandbytes 4-bit model, "
             "whose base stays frozen: give --lora rank=R,alpha=A,"
             "targets=... to train adapters over it (QLoRA)";
  }
  if (o.padding == "pack" && !builtByTgc(plan.modelType))
    return "--padding pack needs a model tgc builds (gpt2 or the Llama "
           "family); model_type '" +
           plan.modelType + "' is imported by tracing";
  if (!o.fit.empty() && !builtByTgc(plan.modelType))
    return "--fit rebuilds the model at each micro-batch, which it cannot "
           "for model_type '" +
           plan.modelType +
           "' (imported by tracing): "
           "leave --fit out, and choose --batch";
  plan.vocab = object->getInteger("vocab_size").value_or(0);
  plan.maxPositions =
      object->getInteger("max_position_embeddings")
          .value_or(object->getInteger("n_positions").value_or(0));
  for (auto [flag, path] :
       {std::pair("--data", o.data), std::pair("--eval-data", o.evalData)}) {
    if (path.empty())
      continue;
    if (!sys::fs::is_regular_file(path))
      return std::string(flag) + " '" + path + "' is not a file";
    StringRef ext = sys::path::extension(path);
    if (ext != ".jsonl" && ext != ".json" && ext != ".tgcd")
      return std::string(flag) + " '" + path +
             "': expected JSONL (.jsonl) or an encoded dataset (.tgcd)";
  }
  // The output: never an input, never a directory of someone else's.
  std::string out = realPath(o.out);
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"--model", o.model}, {"--data", o.data}, {"--eval-data", o.evalData}};
  for (const std::string &config : o.configFiles)
    inputs.push_back({"--config", config});
  for (const auto &[flag, path] : inputs)
    if (!path.empty() && (realPath(path) == out ||
                          StringRef(realPath(path)).starts_with(out + "/")))
      return "--out '" + o.out + "' holds " + flag + " '" + path +
             "': choose a new directory for the output";
  plan.work = o.out + "/.tgc";
  plan.optionsFile = plan.work + "/options.yaml";
  if (sys::fs::exists(o.out) && !sys::fs::is_directory(o.out))
    return "--out '" + o.out + "' is a file, not a directory";
  std::error_code ec;
  bool empty =
      !sys::fs::exists(o.out) ||
      sys::fs::directory_iterator(o.out, ec) == sys::fs::directory_iterator();
  if (!empty && !sys::fs::exists(plan.optionsFile))
    return "--out '" + o.out +
           "' is a directory tgc finetune did not make, and not empty: "
           "choose a new or empty directory";
  return "";
}

/// The run's files; resumes when OUT/.tgc says the same run.
std::string prepareWork(const FinetuneOptions &o, Plan &plan) {
  plan.trainData = plan.work + "/train.tgcd";
  plan.evalData = plan.work + "/eval.tgcd";
  plan.ir = plan.work + "/model.mlir";
  plan.executable = plan.work + "/model.tgx";
  plan.checkpoint = plan.work + "/checkpoint.safetensors";
  plan.metrics = o.out + "/metrics.jsonl";
  std::string described = describeFinetune(o);
  if (sys::fs::exists(plan.optionsFile)) {
    auto buffer = MemoryBuffer::getFile(plan.optionsFile);
    bool same = buffer && (*buffer)->getBuffer() == described;
    if (!same && sys::fs::exists(plan.executable))
      return "--out '" + o.out + "' holds a run of other options (" +
             plan.optionsFile +
             "): give the same options to resume it, or a new --out";
    plan.resuming = sys::fs::exists(plan.executable);
    if (same)
      return "";
    // A run that stopped before its executable: nothing of it to keep.
    (void)sys::fs::remove(plan.trainData);
    (void)sys::fs::remove(plan.evalData);
  }
  if (std::error_code ec = sys::fs::create_directories(plan.work))
    return "cannot create '" + plan.work + "': " + ec.message();
  std::string error;
  auto file = mlir::openOutputFile(plan.optionsFile, &error);
  if (!file)
    return error;
  file->os() << described;
  file->keep();
  return "";
}

/// Encodes JSONL with the model's tokenizer (tgc-data); a .tgcd is used
/// as it is.
std::string encode(const FinetuneOptions &o, const std::string &input,
                   const std::string &output, std::string &used) {
  if (StringRef(input).ends_with(".tgcd")) {
    used = input;
    return "";
  }
  used = output;
  if (sys::fs::exists(output))
    return "";
  std::printf("tgc finetune: encoding %s with %s's tokenizer\n", input.c_str(),
              o.model.c_str());
  std::vector<std::string> args = {"encode", "--tokenizer", o.model, "--input",
                                   input,    "-o",          output};
  if (o.seqLen)
    args.insert(args.end(), {"--max-length", std::to_string(o.seqLen),
                             "--overlong", "truncate"});
  return runStage("tgc-data", args, "encoding the data");
}

/// The sequence length and the steps, from the data unless given.
std::string chooseShape(const FinetuneOptions &o, Plan &plan) {
  auto buffer = MemoryBuffer::getFile(plan.trainData);
  if (!buffer)
    return "cannot read '" + plan.trainData + "'";
  rt::DatasetSummary summary;
  rt::Status status =
      rt::parseDataset(plan.trainData, (*buffer)->getBufferStart(),
                       (*buffer)->getBufferSize(), plan.vocab, summary);
  if (!status.ok())
    return status.error;
  plan.examples = summary.examples;
  plan.longest = summary.longest;
  plan.seqLen = o.seqLen;
  if (!plan.seqLen) {
    plan.seqLen = (summary.longest + 63) / 64 * 64;
    if (plan.maxPositions > 0 && plan.seqLen > plan.maxPositions)
      plan.seqLen = plan.maxPositions;
  }
  // Rows an epoch: one example each, or the packed rows (as tgc-run packs
  // them).
  int64_t rows =
      o.padding == "pack"
          ? int64_t(rt::packExamples(summary.lengths, plan.seqLen).size())
          : summary.examples;
  int64_t perEpoch = (rows + o.batch - 1) / o.batch;
  plan.steps = o.steps ? o.steps : o.epochs * perEpoch;
  if (o.padding == "pack")
    std::printf("tgc finetune: --padding pack: %lld examples in %lld rows\n",
                (long long)summary.examples, (long long)rows);
  std::printf("tgc finetune: %lld examples, the longest %lld tokens: "
              "sequences of %lld%s; %lld steps of %lld sequences%s\n",
              (long long)summary.examples, (long long)summary.longest,
              (long long)plan.seqLen,
              o.seqLen ? " (--seq-len)"
              : plan.seqLen < summary.longest
                  ? " (the model's positions; longer examples are cut)"
                  : " (the longest, rounded up to 64)",
              (long long)plan.steps, (long long)o.batch,
              o.steps ? ""
                      : (" (" + std::to_string(o.epochs) + " epoch" +
                         (o.epochs == 1 ? "" : "s") + ")")
                            .c_str());
  return "";
}

/// The model's IR: tgc-models' builders for the families they take,
/// tgc-import (transformers traced) for the others.
std::string buildModel(const FinetuneOptions &o, Plan &plan) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string error;
  StringRef type = plan.modelType;
  if (type == "gpt2") {
    std::optional<GPT2Config> config = readGPT2HFConfig(o.model, error);
    if (!config)
      return error;
    config->batch = o.batch;
    config->seqLen = plan.seqLen;
    config->packed = o.padding == "pack";
    module = buildGPT2(&context, *config);
  } else if (builtByTgc(type)) {
    std::optional<LlamaConfig> config =
        readLlamaHFConfig(o.model, plan.seqLen, error);
    if (!config)
      return error;
    config->batch = o.batch;
    config->seqLen = plan.seqLen;
    config->packed = o.padding == "pack";
    module = buildLlama(&context, *config);
  } else {
    std::printf("tgc finetune: model_type '%s': importing it with "
                "transformers (tgc-import)\n",
                plan.modelType.c_str());
    plan.imported = true;
    return runStage("tgc-import",
                    {"--hf", o.model, "--task", "causal-lm", "--batch",
                     std::to_string(o.batch), "--seq-len",
                     std::to_string(plan.seqLen), "-o", plan.ir},
                    "importing the model");
  }
  if (!module)
    return "the model built from '" + o.model + "' does not verify";
  auto output = mlir::openOutputFile(plan.ir, &error);
  if (!output)
    return error;
  module->print(output->os(), mlir::OpPrintingFlags().enableDebugInfo());
  output->keep();
  return "";
}

/// --fit's default: the GPU's free memory, less 5% for what the run
/// allocates beside its plan (the CUDA context's and the libraries'
/// workspaces); else the machine's. Says which.
std::string defaultFit(const FinetuneOptions &o) {
  std::unique_ptr<rt::Backend> gpu;
  int64_t free = -1;
  if (o.device != "cpu" && rt::createCudaBackend(gpu).ok())
    free = gpu->freeMemory();
  int64_t budget = free > 0 ? free / 20 * 19 : rt::availableMemory();
  std::printf("tgc finetune: --fit %s (%s; give --fit for another budget)\n",
              rt::formatBytes(budget).c_str(),
              free > 0
                  ? ("95% of the free memory of " + gpu->describe()).c_str()
                  : "this machine's memory");
  return std::to_string(budget >> 20) + "MiB";
}

/// The executable, compiled for the budget (--fit) where tgc-models built
/// the model (--fit rebuilds it at each micro-batch); an imported model at
/// its batch, its plan checked against the memory when the run starts.
std::string compile(const FinetuneOptions &o, const Plan &plan) {
  CompileRequest request;
  request.input = plan.ir;
  request.output = plan.executable;
  request.lora = o.lora;
  if (!plan.imported) {
    request.globalBatch = o.batch;
    request.globalBatchGiven = true;
    request.fit = o.fit.empty() ? defaultFit(o) : o.fit;
  } else {
    std::printf("tgc finetune: model_type '%s' is imported: compiled at "
                "--batch %lld as it is (--fit takes the models tgc builds)\n",
                plan.modelType.c_str(), (long long)o.batch);
  }
  TrainPipelineOptions options;
  std::string text = "lr=" + std::string(o.lora.empty() ? "2e-5" : "2e-4");
  // A 4-bit directory compiles to its own format, unless told otherwise.
  if (!plan.quantType.empty() && !o.pipeline.count("quantize-frozen"))
    text += " quantize-frozen=" + plan.quantType +
            " double-quant=" + (plan.doubleQuant ? "true" : "false");
  for (const auto &[name, value] : o.pipeline)
    text += " " + name + "=" + value;
  std::string parseErrors;
  raw_string_ostream parseStream(parseErrors);
  if (failed(options.parseFromString(text, parseStream)))
    return "bad training option in '" + text + "': " + parseErrors;
  std::string error, log;
  std::fflush(stdout);
  raw_string_ostream logStream(log);
  bool ok = compileModel(request, options, logStream, outs(), error);
  // compileModel's lines name tgc-compile: say them as this driver's.
  for (StringRef line : split(StringRef(log).trim(), '\n'))
    if (!line.trim().empty())
      outs() << "tgc finetune: "
             << line.drop_front(line.starts_with("tgc-compile: ") ? 13 : 0)
             << "\n";
  outs().flush();
  return ok ? "" : error;
}

/// The progress line: step, loss, validation, throughput, time left.
class Progress : public rt::RunObserver {
public:
  Progress(int64_t steps) : steps(steps), tty(isatty(fileno(stdout))) {}
  rt::Status onStep(const rt::StepReport &report) override {
    const rt::StepResult &r = report.result;
    if (r.evaluated)
      lastEval = r.evalLoss;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "  step %lld/%lld | loss %s | eval %s | %.0f %s/s | ETA %s",
                  (long long)r.step, (long long)steps,
                  r.hasLoss ? format("%.4f", r.loss).c_str() : "-",
                  std::isnan(lastEval) ? "-" : format("%.4f", lastEval).c_str(),
                  report.itemsPerSecond, report.itemName,
                  rt::formatDuration(report.eta).c_str());
    bool log = r.evaluated || r.step == steps || r.step % 10 == 0;
    if (tty)
      std::printf("\r%s %s", line, r.step == steps ? "\n" : "");
    else if (log)
      std::printf("%s\n", line);
    std::fflush(stdout);
    return rt::Status::success();
  }

private:
  double lastEval = NAN;
  static std::string format(const char *spec, double value) {
    char text[32];
    std::snprintf(text, sizeof(text), spec, value);
    return text;
  }
  int64_t steps;
  bool tty;
};

/// A resumed run's metrics: the rows of the steps up to the checkpoint's
/// (a run killed after it wrote rows of steps it will take again).
std::string trimMetrics(const std::string &path, int64_t step) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  std::string kept;
  for (StringRef line : split((*buffer)->getBuffer(), '\n')) {
    Expected<json::Value> row = json::parse(line);
    if (!row) {
      consumeError(row.takeError());
      continue; // a line cut short by the kill
    }
    std::optional<int64_t> at = row->getAsObject()
                                    ? row->getAsObject()->getInteger("step")
                                    : std::nullopt;
    if (at && *at <= step)
      kept += line.str() + "\n";
  }
  std::string error;
  auto file = mlir::openOutputFile(path, &error);
  if (!file)
    return error;
  file->os() << kept;
  file->keep();
  return "";
}

/// The run's options from the driver's: the data, the weights, the
/// schedule, validation and checkpoints, and where the output goes.
rt::RunOptions runOptions(const FinetuneOptions &o, const Plan &plan) {
  rt::RunOptions run;
  run.program = plan.executable;
  run.steps = plan.steps;
  run.data = plan.trainData;
  run.evalData = o.evalData.empty() ? plan.trainData : plan.evalData;
  run.seed = uint64_t(o.seed);
  run.loadWeights = o.model;
  run.resume =
      plan.resuming && sys::fs::exists(plan.checkpoint) ? plan.checkpoint : "";
  run.save = plan.checkpoint;
  run.saveEvery =
      o.saveEvery ? o.saveEvery : std::max<int64_t>(1, plan.steps / 10);
  (o.lora.empty() ? run.saveHF : run.saveAdapters) = o.out;
  run.lrSchedule = o.lrSchedule;
  run.warmupSteps = o.warmupSteps >= 0 ? o.warmupSteps : plan.steps / 20;
  run.maxSteps = plan.steps;
  run.evalEvery =
      o.evalEvery ? o.evalEvery : std::max<int64_t>(1, plan.steps / 5);
  run.evalBatches = o.evalBatches;
  run.padding = o.padding;
  run.device = o.device;
  run.threads = int(o.threads);
  run.threadsGiven = o.threads > 0;
  return run;
}

/// Sets the run up and says what it is; a resumed run's metrics keep the
/// rows up to its checkpoint.
std::string startRun(const rt::RunOptions &run, const Plan &plan,
                     std::unique_ptr<rt::Run> &session,
                     std::unique_ptr<rt::MetricsLog> &metrics) {
  rt::Status status = rt::checkRunFiles(run, {{"metrics", plan.metrics}});
  if (status.ok())
    status = rt::Run::create(run, nullptr, "", session);
  if (!status.ok())
    return status.error;
  for (const std::string &note : session->notes())
    std::fprintf(stderr, "tgc finetune: note: %s\n", note.c_str());
  for (const std::string &line : session->describe())
    std::printf("%s%s\n", line[0] == ' ' ? "" : "tgc finetune: ", line.c_str());
  bool resumed = !run.resume.empty();
  if (resumed) {
    std::printf("tgc finetune: resuming at step %lld from %s\n",
                (long long)session->start().step + 1, plan.checkpoint.c_str());
    if (std::string error = trimMetrics(plan.metrics, session->start().step);
        !error.empty())
      return error;
  }
  status = rt::MetricsLog::open(plan.metrics, metrics, /*append=*/resumed);
  return status.ok() ? "" : status.error;
}

/// The run page of the metrics so far, beside them (tgc-report run's).
void writeRunPage(const FinetuneOptions &o, const Plan &plan) {
  std::string page = o.out + "/run.html";
  if (std::string error = report::writeRunPage({plan.metrics}, {o.out}, page);
      !error.empty())
    std::fprintf(stderr, "tgc finetune: warning: no run page: %s\n",
                 error.c_str());
}

/// Trains and writes the output; a signal leaves a checkpoint to resume.
int train(const FinetuneOptions &o, const Plan &plan, std::string &error) {
  std::unique_ptr<rt::Run> session;
  std::unique_ptr<rt::MetricsLog> metrics;
  if (!(error = startRun(runOptions(o, plan), plan, session, metrics)).empty())
    return 1;
  Progress progress(plan.steps);
  rt::RunEnd end;
  rt::Status status = session->train({&progress, metrics.get()}, end);
  if (status.ok() && !end.diverged.empty())
    status = rt::Status::failure(end.diverged);
  if (status.ok())
    status = metrics->close();
  if (!status.ok())
    return error = status.error, 1;
  writeRunPage(o, plan);
  if (end.signal) {
    int64_t step = session->start().step + session->trainer().stepsRun();
    status = session->trainer().save(step);
    std::fprintf(stderr,
                 "\ntgc finetune: %s after step %lld of %lld; %s; the same "
                 "command resumes it\n",
                 end.signal == SIGINT ? "interrupted" : "terminated",
                 (long long)step, (long long)plan.steps,
                 status.ok() ? ("saved " + plan.checkpoint).c_str()
                             : status.error.c_str());
    return 128 + end.signal;
  }
  double evalLoss = 0.0;
  if (!(status = session->trainer().evaluate(evalLoss)).ok() ||
      !(status = session->finish()).ok())
    return error = status.error, 1;
  for (const std::string &line : session->summary(end))
    std::printf("tgc finetune: %s\n", line.c_str());
  std::printf("tgc finetune: eval loss %.6f\n", evalLoss);
  std::printf("tgc finetune: wrote %s (%s), %s and %s/run.html\n",
              o.out.c_str(),
              o.lora.empty() ? "a Hugging Face model directory"
                             : "a PEFT adapter directory",
              plan.metrics.c_str(), o.out.c_str());
  return 0;
}

/// The tokenizer's files beside the model, so that the output loads with
/// its tokenizer as save_pretrained's would.
void copyTokenizer(const FinetuneOptions &o) {
  for (const char *name :
       {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "tokenizer.model", "vocab.json", "merges.txt",
        "generation_config.json"}) {
    std::string from = o.model + "/" + name, to = o.out + "/" + name;
    if (sys::fs::exists(from) && !sys::fs::exists(to))
      (void)sys::fs::copy_file(from, to);
  }
}

/// The stages before training: the data encoded, its shape chosen, the
/// model built and compiled (a resumed run keeps its executable).
std::string prepare(const FinetuneOptions &o, Plan &plan) {
  std::string error, used;
  if (!(error = encode(o, o.data, plan.trainData, used)).empty())
    return error;
  plan.trainData = used;
  if (!o.evalData.empty()) {
    if (!(error = encode(o, o.evalData, plan.evalData, used)).empty())
      return error;
    plan.evalData = used;
  }
  if (!(error = chooseShape(o, plan)).empty())
    return error;
  if (plan.resuming) {
    std::printf("tgc finetune: the executable of the stopped run: %s\n",
                plan.executable.c_str());
    return "";
  }
  if (!(error = buildModel(o, plan)).empty())
    return error;
  return compile(o, plan);
}

} // namespace

int runFinetune(const FinetuneOptions &o, std::string &error) {
  rt::installInterruptHandlers("tgc finetune");
  Plan plan;
  if (!(error = checkPaths(o, plan)).empty())
    return 1;
  bool madeOut = !sys::fs::exists(o.out);
  if (!(error = prepareWork(o, plan)).empty())
    return 1;
  std::printf("tgc finetune: %s (model_type %s) on %s into %s%s\n",
              o.model.c_str(), plan.modelType.c_str(), o.data.c_str(),
              o.out.c_str(), plan.resuming ? " (resuming)" : "");
  if (!(error = prepare(o, plan)).empty()) {
    // Nothing to resume yet: leave no directory behind.
    if (madeOut)
      (void)sys::fs::remove_directories(o.out);
    return 1;
  }
  copyTokenizer(o);
  return train(o, plan, error);
}

} // namespace tgc
