//===- Checkpoint.h - safetensors checkpoints -------------------*- C++ -*-===//
//
// Parameters and optimizer state saved to and loaded from safetensors files
// (the format Hugging Face and PyTorch users exchange weights in), under the
// names of the model (`transformer.h.0.attn.c_attn.weight`) and of
// torch.optim's state (`<param>.exp_avg`, `optimizer.step`). A save writes a
// temporary file, flushes it and renames it over the target, so a crash
// during the save leaves the previous checkpoint intact.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CHECKPOINT_H
#define TGC_RUNTIME_CHECKPOINT_H

#include "tgc/runtime/Session.h"

#include <map>
#include <optional>
#include <vector>
#include <string>

namespace tgc::rt {

/// Fails unless `path` may be saved to: absent, or a regular file (never a
/// directory or a device such as /dev/full, which a save's rename would
/// replace).
Status checkSaveTarget(const std::string &path);

/// Saves every parameter and every optimizer or step state tensor, with
/// `metadata` in the header's __metadata__.
Status saveCheckpoint(Session &session, const std::string &path,
                      const std::map<std::string, std::string> &metadata);

/// The prefix PEFT gives the names in an adapter file
/// (`base_model.model.transformer.h.0.attn.c_attn.lora_A.weight`).
inline const std::string kAdapterPrefix = "base_model.model.";

/// Saves the LoRA adapters (A and B of every adapted weight) under PEFT's
/// names, with r, lora_alpha and fan_in_fan_out in the metadata. Fails when
/// the model has no adapters.
Status saveAdapters(Session &session, const std::string &path);

/// Saves every parameter but the adapters, each adapted weight merged,
/// W + (alpha/r) B A (transposed for GPT-2's [in, out] Conv1D weights): a
/// checkpoint in the base model's own layout.
Status exportMerged(Session &session, const std::string &path);

/// What loadCheckpoint must find in the file.
enum class LoadScope {
  /// Parameters and state: resuming a run.
  Everything,
  /// Parameters only (a full checkpoint's optimizer state and step are
  /// skipped: the run starts its own): starting from weights trained
  /// elsewhere. LoRA adapters may be absent (they keep
  /// their initialisation); Hugging Face's GPT-2 names (GPT2Model's, the
  /// mask buffers, a tied lm_head) are understood.
  Parameters,
  /// The LoRA adapters only (names with or without PEFT's prefix): every
  /// adapter tensor of the model, and nothing else.
  Adapters,
};

/// The largest step a checkpoint may record (2^62): far beyond any run,
/// and small enough that counting on from it cannot overflow.
constexpr int64_t kMaxCheckpointStep = int64_t(1) << 62;

/// Checks the run's metadata of a checkpoint: `tgc.step` and `tgc.seed`,
/// when present, are decimal integers in [0, kMaxCheckpointStep].
Status checkRunMetadata(const std::map<std::string, std::string> &metadata);

/// Loads tensors into the session. Every tensor of the scope must be in the
/// file with the model's dtype and shape, every tensor in the file must be
/// one of the model's parameters or state, every float finite, the step
/// counter and (when resuming) the metadata's step in range; otherwise
/// nothing is changed and the error names the file and the tensor.
/// What a load of weights (LoadScope::Parameters) did not take from the
/// file, as Hugging Face's from_pretrained reports it: parameters of the
/// model it initialised fresh (a head the base model's file lacks) and
/// tensors of the file the model does not use (another head's).
struct LoadReport {
  std::vector<std::string> fresh, unused;
};

/// With LoadScope::Parameters, `path` may be a Hugging Face model
/// directory: its model.safetensors, or the shards its
/// model.safetensors.index.json names; with LoadScope::Adapters, a PEFT
/// adapter directory: its adapter_model.safetensors.
Status loadCheckpoint(Session &session, const std::string &path,
                      LoadScope scope,
                      std::map<std::string, std::string> *metadata = nullptr,
                      LoadReport *report = nullptr);

/// Which persistent tensors (by index) loading `path` with `scope` would
/// set, from the file's header alone: what Session::initialize may then
/// leave uninitialised. Fails as the load would on names, dtypes and
/// shapes.
Status checkpointProvides(Session &session, const std::string &path,
                          LoadScope scope, std::vector<bool> &provided);

/// The files a run starts from (empty: none): a checkpoint it resumes
/// (parameters, state and position), weights (parameters only), LoRA
/// adapters (over the weights).
struct StartFiles {
  std::string resume, weights, adapters;
};

/// Where a resumed run continues: the steps done, the data batch the next
/// step reads (-1: K per step from 0), the seed the run had, and the
/// learning rate it had reached beside the one the executable was compiled
/// with (a schedule or a resume may differ from --lr).
struct StartPoint {
  /// What loading the weights left out (empty otherwise).
  LoadReport weights;
  int64_t step = 0;
  int64_t batch = -1;
  std::optional<uint64_t> seed;
  std::optional<double> lr, compiledLr;
};

/// Starts a session's run: initialises every tensor from `seed` except
/// those the files will provide (not drawn at all), then loads the files
/// (the checkpoint resumed, or the weights; then the adapters) and reads a
/// resumed run's position from its metadata. Errors name the file.
Status startRun(Session &session, const StartFiles &files, uint64_t seed,
                StartPoint &point);

} // namespace tgc::rt

#endif // TGC_RUNTIME_CHECKPOINT_H
