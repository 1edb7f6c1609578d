//===- CheckpointFiles.h - writing the files of a save ----------*- C++ -*-===//
//
// Internal to the runtime: how Checkpoint.cpp and HFDirectory.cpp write
// files (each atomically: a temporary file beside the target, flushed and
// renamed over it) and the tensors a save of the model's weights holds.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_CHECKPOINTFILES_H
#define TGC_RUNTIME_SRC_CHECKPOINTFILES_H

#include "tgc/runtime/Session.h"

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tgc::rt {

/// One tensor to write: its name, type and host bytes.
struct SavedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
  size_t bytes;
};

/// Replaces `path` atomically with what `write` writes (false: it failed).
/// `path` must be absent or a regular file; on failure the previous file
/// is intact.
Status replaceFile(const std::string &path,
                   const std::function<bool(FILE *)> &write);

/// Writes `tensors` as a safetensors file with `metadata`, atomically;
/// refuses (writing nothing) a tensor with a NaN or an infinity.
Status writeSafetensors(const std::string &path,
                        const std::map<std::string, std::string> &metadata,
                        const std::vector<SavedTensor> &tensors);

/// Runs `save` on rank 0 with the persistent tensors pulled to the host
/// and the parts of the split tensors `reads` names (by index) gathered
/// whole there (every rank takes part); every rank returns the job's
/// status.
Status saveOnRankZero(Session &session,
                      const std::function<bool(int32_t)> &reads,
                      const std::function<Status()> &save);

/// What saveOnRankZero gathers for a save of the model's weights (its
/// parameters), or of its LoRA adapters.
std::function<bool(int32_t)> parametersOf(const Program &program);
std::function<bool(int32_t)> adaptersOf(const Program &program);

/// The model's parameters in its base layout: every parameter but the LoRA
/// adapters, each adapted weight merged, W + (alpha/r) B A (transposed for
/// GPT-2's [in, out] Conv1D weights), its bytes in `storage`. The session's
/// host copies must be current and split parameters gathered
/// (saveOnRankZero).
std::vector<SavedTensor>
mergedParameters(Session &session, std::vector<std::vector<uint8_t>> &storage);

/// The LoRA adapters (A and B of every adapted weight) under PEFT's names,
/// and the metadata saveAdapters records (r, lora_alpha, fan_in_fan_out).
/// The session's host copies must be current and gathered.
std::vector<SavedTensor>
adapterTensors(Session &session, std::map<std::string, std::string> &metadata);

/// The shard files a safetensors index (model.safetensors.index.json)
/// names, each once in the index's order; an error naming the index when it
/// is not one, or names a shard outside its directory.
Status readShardNames(const std::string &indexPath,
                      std::vector<std::string> &names);

/// LoRA's rank `r` and `lora_alpha` as safetensors metadata records them
/// (the program must have adapters).
std::map<std::string, std::string> loraMetadata(const Program &program);

/// Fails, naming `source`, unless adapters of `rank` and `alpha` (scaled
/// alpha / sqrt(rank) with `rsLora`, else alpha / rank) compute what the
/// executable's adapters compute.
Status checkLoraScale(const Program &program, const std::string &source,
                      double rank, double alpha, bool rsLora);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_CHECKPOINTFILES_H
