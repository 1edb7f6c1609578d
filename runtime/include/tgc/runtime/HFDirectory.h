//===- HFDirectory.h - Hugging Face model and adapter directories -*- C++ -*-===//
//
// A trained model saved as the directories Hugging Face's libraries load:
// a model directory (config.json and model.safetensors, or shards of at
// most a size with model.safetensors.index.json) that transformers'
// from_pretrained loads with no missing or unexpected weight, and a LoRA
// adapter directory (adapter_config.json and adapter_model.safetensors)
// that PEFT's PeftModel.from_pretrained loads over the base model. Each
// directory save is written beside the target and swapped in whole
// (runtime/src/StagedDirectory.h): files of an earlier save that the new one
// does not use (shards of another count, a single file after shards) go
// with the old directory, every other file of the directory is kept, and a
// kill at any moment leaves the old model or the new one, never a mix.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_HFDIRECTORY_H
#define TGC_RUNTIME_HFDIRECTORY_H

#include "tgc/runtime/Session.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// transformers' largest shard by default (save_pretrained's
/// max_shard_size, "5GB").
constexpr int64_t kDefaultHFShardBytes = 5'000'000'000;

/// Fails unless `program` can be saved as a Hugging Face model directory:
/// it records the model's config.json (tgc-compile records it for a model
/// exactly as tgc-models generated it, of a family transformers has).
Status checkHuggingFaceSave(const Program &program);

/// Fails unless `directory` may receive a save: absent with an existing
/// parent, or a directory in which none of `files` is a directory or a
/// device.
Status checkDirectoryTarget(const std::string &directory,
                            const std::vector<std::string> &files);

/// The files a model directory save may write (for checkDirectoryTarget),
/// and what a reader of a model directory looks for.
std::vector<std::string> huggingFaceFiles();
/// What a reader of the weights directory `directory` reads or looks for:
/// huggingFaceFiles() and the shards its index names (for the rule that no
/// output replaces an input, UserFiles.h).
std::vector<std::string> weightsDirectoryFiles(const std::string &directory);
/// Whether a model directory save owns the file `name` (writes, replaces or
/// removes it): config.json, model.safetensors, its index, and shards
/// `model-NNNNN-of-NNNNN.safetensors`. Every other file of the directory
/// is kept.
bool isHuggingFaceModelFile(const std::string &name);
/// adapter_config.json and adapter_model.safetensors: what an adapter
/// directory save writes and what a reader of one looks for.
std::vector<std::string> adapterDirectoryFiles();
bool isAdapterDirectoryFile(const std::string &name);

/// Saves the model's parameters (LoRA adapters merged in) as a Hugging Face
/// model directory, in shards of at most `maxShardBytes` when they are
/// larger; `torch_dtype` in config.json is the widest float type saved.
/// In a job of several ranks, rank 0 writes and every rank returns its
/// status.
Status saveHuggingFace(Session &session, const std::string &directory,
                       int64_t maxShardBytes = kDefaultHFShardBytes);

/// Whether `--save-adapters PATH` names a PEFT adapter directory rather
/// than a single safetensors file: a path that is a directory, or that
/// does not end in `.safetensors` and is not an existing file.
bool isAdapterDirectory(const std::string &path);

/// Fails unless the adapters at `path` were trained as the executable's
/// compute: for a PEFT adapter directory, its adapter_config.json (when
/// present) must be a LoRA configuration of the executable's rank and
/// scale (lora_alpha / r, or / sqrt(r) with use_rslora), with no
/// per-module rank or alpha and no bias. Other paths pass.
Status checkAdapterConfiguration(const Program &program,
                                 const std::string &path);
/// Saves the LoRA adapters as a PEFT adapter directory: PEFT's names in
/// adapter_model.safetensors and its adapter_config.json (r, lora_alpha,
/// target_modules, fan_in_fan_out, the task, `baseModel` as
/// base_model_name_or_path when not empty).
Status saveAdapterDirectory(Session &session, const std::string &directory,
                            const std::string &baseModel = "");

} // namespace tgc::rt

#endif // TGC_RUNTIME_HFDIRECTORY_H
