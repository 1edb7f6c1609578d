//===- HFDirectory.cpp - Hugging Face model and adapter directories -------===//

#include "tgc/runtime/HFDirectory.h"

#include "CheckpointFiles.h"
#include "FileIO.h"
#include "StagedDirectory.h"
#include "cpu/Common.h"
#include "tgc/Support/ReadFile.h"
#include "tgc/runtime/Checkpoint.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::rt {
namespace {

constexpr const char *kSingleFile = "model.safetensors";
constexpr const char *kIndexFile = "model.safetensors.index.json";
constexpr const char *kAdapterConfigFile = "adapter_config.json";
constexpr const char *kAdapterWeightsFile = "adapter_model.safetensors";

/// Whether `name` is a shard of a sharded save (`model-00001-of-00003
/// .safetensors`).
bool isShardName(const std::string &name) {
  static const std::string head = "model-", middle = "-of-",
                           tail = ".safetensors";
  if (name.size() != head.size() + 5 + middle.size() + 5 + tail.size() ||
      name.compare(0, head.size(), head) != 0 ||
      name.compare(head.size() + 5, middle.size(), middle) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  for (size_t at : {head.size(), head.size() + 5 + middle.size()})
    for (size_t i = at; i < at + 5; ++i)
      if (name[i] < '0' || name[i] > '9')
        return false;
  return true;
}

std::string shardName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors",
                index + 1, count);
  return name;
}

/// Writes `json` as the text file `path`, atomically.
Status writeJSON(const std::string &path, const nlohmann::ordered_json &json) {
  std::string text = json.dump(2) + "\n";
  return replaceFile(path, [&](FILE *file) {
    return std::fwrite(text.data(), 1, text.size(), file) == text.size();
  });
}

const char *torchDType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bfloat16";
  case DType::F16:
    return "float16";
  default:
    return "float32";
  }
}

Status writeModelDirectory(Session &session, const std::string &directory,
                           int64_t maxShardBytes) {
  const Program &program = session.program();
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(
      program.hfConfig, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object())
    return Status::failure("--save-hf: the executable's Hugging Face "
                           "configuration is not a JSON object");
  std::vector<std::vector<uint8_t>> storage;
  std::vector<SavedTensor> tensors = mergedParameters(session, storage);

  // Shards in the tensors' order, each started when the next tensor would
  // take the current one over the limit (save_pretrained's rule; a tensor
  // larger than the limit gets a shard of its own).
  std::vector<std::vector<SavedTensor>> shards(1);
  int64_t shardBytes = 0, totalBytes = 0;
  DType widest = DType::BF16;
  for (const SavedTensor &tensor : tensors) {
    int64_t bytes = int64_t(tensor.bytes);
    if (!shards.back().empty() && shardBytes + bytes > maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back().push_back(tensor);
    shardBytes += bytes;
    totalBytes += bytes;
    if (tensor.dtype == DType::F32 ||
        (tensor.dtype == DType::F16 && widest == DType::BF16))
      widest = tensor.dtype;
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < shards.size(); ++i)
    names.push_back(shards.size() == 1 ? kSingleFile
                                       : shardName(i, shards.size()));

  // Every file written into a new directory beside the old one, which is
  // then swapped in whole (StagedDirectory.h): the files of an earlier save
  // that this one does not use (shards of another count, a single file
  // after shards) are gone with the old directory, and a kill at any
  // moment leaves the old model or the new one.
  StagedDirectory staged;
  Status status = staged.begin(directory, isHuggingFaceModelFile);
  if (!status.ok())
    return Status::failure("--save-hf: " + status.error);
  for (size_t i = 0; i < shards.size(); ++i) {
    directorySaveStep();
    Status written = staged.named(writeSafetensors(
        staged.pathOf(names[i]), {{"format", "pt"}}, shards[i]));
    if (!written.ok())
      return Status::failure("--save-hf: " + written.error);
  }
  if (shards.size() > 1) {
    std::map<std::string, std::string> weightMap;
    for (size_t i = 0; i < shards.size(); ++i)
      for (const SavedTensor &tensor : shards[i])
        weightMap[tensor.name] = names[i];
    nlohmann::ordered_json index = {
        {"metadata", {{"total_size", totalBytes}}},
        {"weight_map", nlohmann::ordered_json(weightMap)}};
    directorySaveStep();
    Status written =
        staged.named(writeJSON(staged.pathOf(kIndexFile), index));
    if (!written.ok())
      return Status::failure("--save-hf: " + written.error);
  }
  config["torch_dtype"] = torchDType(widest);
  // The weights are written dense (a 4-bit base dequantized): a
  // bitsandbytes quantization_config of the directory the model came from
  // would make transformers read them as 4-bit codes.
  config.erase("quantization_config");
  directorySaveStep();
  status = staged.named(writeJSON(staged.pathOf("config.json"), config));
  if (status.ok())
    status = staged.commit();
  if (!status.ok())
    return Status::failure("--save-hf: " + status.error);
  return Status::success();
}

/// PEFT's target_modules for the adapted weights: a module's last name
/// (`q_proj`) when every weight of that name is adapted, else the module's
/// full name.
nlohmann::ordered_json targetModules(const Program &program) {
  std::set<int32_t> adapted, adapterTensors;
  for (const LoraAdapter &adapter : program.adapters) {
    adapted.insert(adapter.base);
    adapterTensors.insert(adapter.a);
    adapterTensors.insert(adapter.b);
  }
  auto moduleOf = [](const std::string &name) {
    const std::string suffix = ".weight";
    return name.size() > suffix.size() &&
                   name.compare(name.size() - suffix.size(), suffix.size(),
                                suffix) == 0
               ? name.substr(0, name.size() - suffix.size())
               : name;
  };
  auto lastOf = [](const std::string &module) {
    size_t dot = module.rfind('.');
    return dot == std::string::npos ? module : module.substr(dot + 1);
  };
  // For each last name: whether every weight of a module of that name is
  // adapted.
  std::map<std::string, bool> everyOne;
  for (int32_t base : adapted)
    everyOne[lastOf(moduleOf(program.tensors[base].name))] = true;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (info.role != Role::Param || adapterTensors.count(int32_t(i)) ||
        adapted.count(int32_t(i)))
      continue;
    auto found = everyOne.find(lastOf(moduleOf(info.name)));
    if (found != everyOne.end() && moduleOf(info.name) != info.name)
      found->second = false;
  }
  std::set<std::string> targets;
  for (int32_t base : adapted) {
    std::string module = moduleOf(program.tensors[base].name);
    targets.insert(everyOne[lastOf(module)] ? lastOf(module) : module);
  }
  return nlohmann::ordered_json(
      std::vector<std::string>(targets.begin(), targets.end()));
}

Status writeAdapterDirectory(Session &session, const std::string &directory,
                             const std::string &baseModel) {
  const Program &program = session.program();
  // Both files swapped in together (StagedDirectory.h): never the new
  // weights under the old configuration.
  StagedDirectory staged;
  Status written = staged.begin(directory, isAdapterDirectoryFile);
  if (!written.ok())
    return Status::failure("--save-adapters: " + written.error);
  std::map<std::string, std::string> metadata;
  std::vector<SavedTensor> tensors = adapterTensors(session, metadata);
  directorySaveStep();
  written = staged.named(writeSafetensors(staged.pathOf(kAdapterWeightsFile),
                                          metadata, tensors));
  if (!written.ok())
    return Status::failure("--save-adapters: " + written.error);
  const LoraAdapter &first = program.adapters.front();
  int64_t rank = program.tensors[first.b].wholeShape()[1];
  nlohmann::ordered_json taskType = nullptr;
  if (program.task == "causal-lm")
    taskType = "CAUSAL_LM";
  else if (program.task == "sequence-classification")
    taskType = "SEQ_CLS";
  else if (program.task == "seq2seq")
    taskType = "SEQ_2_SEQ_LM";
  // Only the fields PEFT 0.4's LoraConfig takes (it refuses others).
  nlohmann::ordered_json config = {
      {"peft_type", "LORA"},
      {"task_type", taskType},
      {"base_model_name_or_path",
       baseModel.empty() ? nlohmann::ordered_json(nullptr)
                         : nlohmann::ordered_json(baseModel)},
      {"inference_mode", true},
      {"r", rank},
      {"lora_alpha", first.scale * double(rank)},
      {"lora_dropout", 0.0},
      {"target_modules", targetModules(program)},
      {"fan_in_fan_out", first.fanInFanOut},
      {"bias", "none"},
      {"modules_to_save", nullptr},
      {"init_lora_weights", true}};
  directorySaveStep();
  written = staged.named(writeJSON(staged.pathOf(kAdapterConfigFile), config));
  if (written.ok())
    written = staged.commit();
  if (!written.ok())
    return Status::failure("--save-adapters: " + written.error);
  return Status::success();
}

} // namespace

Status checkHuggingFaceSave(const Program &program) {
  if (program.hfConfig.empty())
    return Status::failure(
        "--save-hf: the executable records no Hugging Face configuration" +
        (program.hfConfigError.empty() ? std::string()
                                       : " (" + program.hfConfigError + ")") +
        "; compile a model that tgc-models generated (gpt2, bert, or a "
        "llama, mistral or qwen2 of Hugging Face's layout), unedited, or "
        "one tgc-import --hf imported");
  return Status::success();
}

std::vector<std::string> huggingFaceFiles() {
  return {"config.json", kSingleFile, kIndexFile};
}

std::vector<std::string> weightsDirectoryFiles(const std::string &directory) {
  std::vector<std::string> names = huggingFaceFiles(), shards;
  if (readShardNames(directory + "/" + kIndexFile, shards).ok())
    names.insert(names.end(), shards.begin(), shards.end());
  return names;
}

bool isHuggingFaceModelFile(const std::string &name) {
  return name == "config.json" || name == kSingleFile || name == kIndexFile ||
         isShardName(name);
}

std::vector<std::string> adapterDirectoryFiles() {
  return {kAdapterConfigFile, kAdapterWeightsFile};
}

bool isAdapterDirectoryFile(const std::string &name) {
  return name == kAdapterConfigFile || name == kAdapterWeightsFile;
}

Status checkDirectoryTarget(const std::string &directory,
                            const std::vector<std::string> &files) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0) {
    if (errno != ENOENT)
      return Status::failure("cannot write '" + directory +
                             "': " + std::strerror(errno));
    size_t slash = directory.find_last_of('/');
    std::string parent = slash == std::string::npos ? "."
                         : slash == 0               ? "/"
                                                    : directory.substr(0, slash);
    if (::stat(parent.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      return Status::failure("cannot create the directory '" + directory +
                             "': '" + parent + "' is not a directory");
    return Status::success();
  }
  if (!S_ISDIR(info.st_mode))
    return Status::failure("cannot save into '" + directory +
                           "': it exists and is not a directory");
  for (const std::string &file : files) {
    Status replaceable = checkReplaceable(directory + "/" + file);
    if (!replaceable.ok())
      return replaceable;
  }
  return Status::success();
}

Status saveHuggingFace(Session &session, const std::string &directory,
                       int64_t maxShardBytes) {
  Status usable = checkHuggingFaceSave(session.program());
  if (!usable.ok())
    return usable;
  return saveOnRankZero(session, parametersOf(session.program()), [&] {
    return writeModelDirectory(session, directory, maxShardBytes);
  });
}

bool isAdapterDirectory(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0)
    return S_ISDIR(info.st_mode);
  const std::string suffix = ".safetensors";
  return !(path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
               0);
}

Status checkAdapterConfiguration(const Program &program,
                                 const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return Status::success();
  std::string file = path + "/" + kAdapterConfigFile;
  if (::lstat(file.c_str(), &info) != 0 && errno == ENOENT)
    return Status::success(); // weights only: their names and shapes speak
  std::string text;
  if (std::string error = readUserJSONFile(file, kMaxConfigFileBytes, text);
      !error.empty())
    return Status::failure("--load-adapters: " + error);
  nlohmann::json config =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string &what) {
    return Status::failure("--load-adapters: '" + file + "': " + what);
  };
  if (config.is_discarded() || !config.is_object())
    return bad("not a JSON object (a damaged adapter_config.json?)");
  if (program.adapters.empty())
    return bad("these are LoRA adapters, but the executable has none "
               "(compile it with --lora)");
  if (config.contains("peft_type") &&
      !(config["peft_type"].is_string() && config["peft_type"] == "LORA"))
    return bad("peft_type is " + config["peft_type"].dump() +
               ", not \"LORA\"");
  auto number = [&](const char *key, double &value) -> Status {
    if (!config.contains(key))
      return bad(std::string("has no ") + key);
    const nlohmann::json &field = config[key];
    if (!field.is_number() || !std::isfinite(field.get<double>()) ||
        field.get<double>() <= 0)
      return bad(std::string(key) + " is " + field.dump() +
                 ", not a positive number");
    value = field.get<double>();
    return Status::success();
  };
  double rank = 0, alpha = 0;
  TGC_RETURN_IF_ERROR(number("r", rank));
  if (!config["r"].is_number_integer())
    return bad("r is " + config["r"].dump() + ", not an integer");
  TGC_RETURN_IF_ERROR(number("lora_alpha", alpha));
  bool rsLora = false;
  if (config.contains("use_rslora") && !config["use_rslora"].is_null()) {
    if (!config["use_rslora"].is_boolean())
      return bad("use_rslora is " + config["use_rslora"].dump() +
                 ", not true or false");
    rsLora = config["use_rslora"].get<bool>();
  }
  // Per-module ranks and alphas (PEFT's rank_pattern, alpha_pattern): the
  // executable has one rank and one alpha.
  for (const char *key : {"rank_pattern", "alpha_pattern"})
    if (config.contains(key) && !config[key].is_null() &&
        !(config[key].is_object() && config[key].empty()))
      return bad(std::string(key) + " gives some modules their own " +
                 (key[0] == 'r' ? "rank" : "alpha") +
                 "; tgc compiles one for every adapter");
  if (config.contains("bias") && config["bias"] != "none")
    return bad("bias is " + config["bias"].dump() +
               "; tgc's adapters train no bias (\"none\")");
  return checkLoraScale(program, "--load-adapters: '" + file + "'", rank,
                        alpha, rsLora);
}

Status saveAdapterDirectory(Session &session, const std::string &directory,
                            const std::string &baseModel) {
  if (session.program().adapters.empty())
    return Status::failure("--save-adapters: the model has no LoRA adapters "
                           "(compile it with --lora)");
  return saveOnRankZero(session, adaptersOf(session.program()), [&] {
    return writeAdapterDirectory(session, directory, baseModel);
  });
}

} // namespace tgc::rt
