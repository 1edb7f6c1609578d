//===- FinetuneOptions.cpp - tgc finetune's keys
//---------------------------===//
//
// One table of keys serves the three ways of giving them: flags, a YAML
// config and key=value overrides; the training pipeline's options are
// keys too, by their own names. An unknown key is an error naming the
// nearest known one.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/Finetune.h"

#include "tgc/Pipelines/TrainPipeline.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <functional>

using namespace llvm;

namespace tgc {
namespace {

struct Key {
  const char *name;
  const char *help;
  /// Sets the key from text; returns an error or "".
  std::function<std::string(FinetuneOptions &, StringRef)> set;
};

std::function<std::string(FinetuneOptions &, StringRef)>
text(std::string FinetuneOptions::*field) {
  return [field](FinetuneOptions &o, StringRef value) {
    o.*field = value.str();
    return std::string();
  };
}

std::function<std::string(FinetuneOptions &, StringRef)>
count(int64_t FinetuneOptions::*field, int64_t least) {
  return [field, least](FinetuneOptions &o, StringRef value) {
    int64_t parsed = 0;
    if (value.getAsInteger(10, parsed) || parsed < least)
      return "needs an integer of at least " + std::to_string(least) +
             ", found '" + value.str() + "'";
    o.*field = parsed;
    return std::string();
  };
}

const std::vector<Key> &keys() {
  static const std::vector<Key> table = {
      {"model", "a Hugging Face model directory (config.json, weights)",
       text(&FinetuneOptions::model)},
      {"data",
       "training data: JSONL (text, prompt/response, messages, "
       "source/target) or an encoded .tgcd",
       text(&FinetuneOptions::data)},
      {"eval-data", "validation data, as --data (default: --data)",
       text(&FinetuneOptions::evalData)},
      {"out",
       "the output: a Hugging Face model directory, or a PEFT adapter "
       "directory with --lora; the same command resumes a run stopped there",
       text(&FinetuneOptions::out)},
      {"fit",
       "the memory budget the step is compiled for (default: the GPU's "
       "free memory, or this machine's on the CPU)",
       text(&FinetuneOptions::fit)},
      {"lora", "LoRA adapters: rank=R,alpha=A,targets=T1,T2 (default: full)",
       text(&FinetuneOptions::lora)},
      {"steps", "optimizer steps (default: --epochs over the data)",
       count(&FinetuneOptions::steps, 1)},
      {"epochs", "passes over the data when --steps is not given (1)",
       count(&FinetuneOptions::epochs, 1)},
      {"seq-len",
       "the sequence length (default: the longest example's, rounded up "
       "to 64, at most the model's positions)",
       count(&FinetuneOptions::seqLen, 1)},
      {"batch", "sequences per optimizer step (8); --fit splits it",
       count(&FinetuneOptions::batch, 1)},
      {"padding",
       "dynamic (one example a row, padded to the batch's longest) or pack "
       "(several examples a row, each attending only to itself; gpt2 and "
       "the Llama family) (dynamic)",
       [](FinetuneOptions &o, StringRef value) {
         if (value != "dynamic" && value != "pack")
           return "needs dynamic or pack, found '" + value.str() + "'";
         o.padding = value.str();
         return std::string();
       }},
      {"lr-schedule", "constant, linear or cosine (cosine)",
       text(&FinetuneOptions::lrSchedule)},
      {"warmup-steps", "learning-rate warmup (default: 5% of the steps)",
       count(&FinetuneOptions::warmupSteps, 0)},
      {"eval-every", "validate every N steps (default: 5 times a run)",
       count(&FinetuneOptions::evalEvery, 1)},
      {"eval-batches", "batches each validation reads (10)",
       count(&FinetuneOptions::evalBatches, 1)},
      {"save-every", "checkpoint every N steps (default: 10 times a run)",
       count(&FinetuneOptions::saveEvery, 1)},
      {"seed", "the seed of initialisation and data order (0)",
       count(&FinetuneOptions::seed, 0)},
      {"device", "auto, cpu or cuda (auto)", text(&FinetuneOptions::device)},
      {"threads", "CPU threads (default: every core)",
       count(&FinetuneOptions::threads, 1)},
  };
  return table;
}

/// The training pipeline's option names (tgc-compile's flags).
const std::vector<std::string> &pipelineNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    TrainPipelineOptions defaults;
    std::string printed;
    raw_string_ostream os(printed);
    defaults.print(os);
    for (StringRef item : split(StringRef(printed).trim("{} "), ' '))
      if (!item.empty())
        out.push_back(item.split('=').first.str());
    return out;
  }();
  return names;
}

/// Sets `name` to `value`; `where` says where it was given, for errors.
std::string setKey(FinetuneOptions &options, StringRef name, StringRef value,
                   const std::string &where) {
  for (const Key &key : keys())
    if (name == key.name) {
      std::string error = key.set(options, value);
      if (error.empty())
        return "";
      // "--steps needs ...", "override 'steps=0': steps needs ...".
      return (where == "--" + name.str() ? where : where + ": " + name.str()) +
             " " + error;
    }
  for (const std::string &option : pipelineNames())
    if (name == option) {
      options.pipeline[option] = value.str();
      return "";
    }
  // The nearest known key by edit distance.
  std::string nearest;
  unsigned best = ~0u;
  auto consider = [&](StringRef candidate) {
    unsigned distance = name.edit_distance(candidate);
    if (distance < best) {
      best = distance;
      nearest = candidate.str();
    }
  };
  for (const Key &key : keys())
    consider(key.name);
  for (const std::string &option : pipelineNames())
    consider(option);
  return where + ": unknown key '" + name.str() + "'" +
         (best <= 3 ? "; did you mean '" + nearest + "'?"
                    : " (see tgc finetune --help)");
}

/// Reads a YAML config: a flat mapping of keys to scalars.
std::string readConfig(const std::string &path, FinetuneOptions &options) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return "--config: cannot read '" + path +
           "': " + buffer.getError().message();
  SourceMgr sources;
  std::string diagnostics;
  raw_string_ostream diagnosticStream(diagnostics);
  yaml::Stream stream((*buffer)->getBuffer(), sources, /*ShowColors=*/false);
  auto it = stream.begin();
  if (it == stream.end() || !it->getRoot())
    return "--config '" + path + "': empty";
  auto *mapping = dyn_cast<yaml::MappingNode>(it->getRoot());
  if (!mapping)
    return "--config '" + path + "': not a mapping of keys to values";
  for (yaml::KeyValueNode &entry : *mapping) {
    auto *key = dyn_cast_or_null<yaml::ScalarNode>(entry.getKey());
    auto *value = dyn_cast_or_null<yaml::ScalarNode>(entry.getValue());
    if (!key || !value)
      return "--config '" + path + "': every entry must be key: value";
    SmallString<64> keyStorage, valueStorage;
    StringRef name = key->getValue(keyStorage);
    unsigned line = sources.FindLineNumber(key->getSourceRange().Start);
    std::string error =
        setKey(options, name, value->getValue(valueStorage),
               "--config '" + path + "', line " + std::to_string(line));
    if (!error.empty())
      return error;
  }
  if (stream.failed())
    return "--config '" + path + "': not valid YAML";
  return "";
}

} // namespace

std::string parseFinetuneArgs(int argc, char **argv, FinetuneOptions &options,
                              bool &help) {
  help = false;
  // The config first, wherever it is given: the command line overrides it.
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return "";
    }
    std::string path;
    if (arg == "--config") {
      if (i + 1 >= argc)
        return "--config needs a file";
      path = argv[++i];
    } else if (arg.consume_front("--config=")) {
      path = arg.str();
    } else {
      continue;
    }
    if (std::string error = readConfig(path, options); !error.empty())
      return error;
    options.configFiles.push_back(path);
  }
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "--config") {
      ++i;
      continue;
    }
    if (arg.starts_with("--config="))
      continue;
    std::string error;
    if (arg.consume_front("--")) {
      auto [name, value] = arg.split('=');
      if (!arg.contains('=')) {
        if (i + 1 >= argc)
          return "--" + name.str() + " needs a value";
        value = argv[++i];
      }
      error = setKey(options, name, value, "--" + name.str());
    } else if (arg.contains('=')) {
      auto [name, value] = arg.split('=');
      error = setKey(options, name, value, "override '" + arg.str() + "'");
    } else {
      error = "unexpected argument '" + arg.str() +
              "' (keys are --key value, or key=value)";
    }
    if (!error.empty())
      return error;
  }
  for (auto [name, value] :
       {std::pair("model", &options.model), std::pair("data", &options.data),
        std::pair("out", &options.out)})
    if (value->empty())
      return std::string("--") + name +
             " is required (see tgc finetune --help)";
  return "";
}

void printFinetuneHelp(raw_ostream &os) {
  os << "tgc finetune: a model directory and a data file to a fine-tuned "
        "model\n\n"
        "usage: tgc finetune --model DIR --data FILE --out DIR [--key value "
        "...] [key=value ...]\n"
        "       tgc finetune --config FILE.yaml [key=value ...]\n\n"
        "keys (flags, keys of the YAML config, or key=value overrides):\n";
  for (const Key &key : keys())
    os << "  " << left_justify(key.name, 14) << " " << key.help << "\n";
  os << "  and the training pipeline's options (tgc-compile --help): lr, "
        "weight-decay, optimizer, amp, ...\n";
}

std::string describeFinetune(const FinetuneOptions &o) {
  std::string text;
  auto add = [&](const char *name, const std::string &value) {
    text += std::string(name) + ": \"" + value + "\"\n";
  };
  add("model", o.model);
  add("data", o.data);
  add("eval-data", o.evalData);
  add("fit", o.fit);
  add("lora", o.lora);
  add("steps", std::to_string(o.steps));
  add("epochs", std::to_string(o.epochs));
  add("seq-len", std::to_string(o.seqLen));
  add("batch", std::to_string(o.batch));
  add("padding", o.padding);
  add("lr-schedule", o.lrSchedule);
  add("warmup-steps", std::to_string(o.warmupSteps));
  add("eval-every", std::to_string(o.evalEvery));
  add("eval-batches", std::to_string(o.evalBatches));
  add("save-every", std::to_string(o.saveEvery));
  add("seed", std::to_string(o.seed));
  for (const auto &[name, value] : o.pipeline)
    add(name.c_str(), value);
  return text;
}

} // namespace tgc
