//===- StagedDirectory.h - a directory save that swaps whole -----*- C++ -*-===//
//
// Internal to the runtime: how --save-hf and --save-adapters replace the
// files of a directory so that a kill at any moment leaves either the old
// model or the new one in it, never a mix of old and new shards.
//
// The new files are written into a staging directory beside the target
// (`.NAME.tgc-save.XXXXXX` in the same parent, so on the same file system).
// commit() then hard-links every entry of the target that the save does not
// own into the staging directory (the user's tokenizer, README, a
// checkpoint: kept, byte for byte, at no cost in space), and exchanges the
// two directories with one renameat2(RENAME_EXCHANGE). Only then are the
// old model's files removed, from the old tree now under the staging name;
// an entry there that is not a hard link of one kept and not a file the
// save owns (something written into the target during the save) is left
// where it is and named. A staging directory whose writer died (its lock is
// free) is removed by the next save to the same target under the same rule.
//
// On a file system without RENAME_EXCHANGE the swap is two renames (the
// old directory aside, the new one in place): a kill between them leaves
// the target absent and both complete trees beside it, never a mix.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_STAGEDDIRECTORY_H
#define TGC_RUNTIME_SRC_STAGEDDIRECTORY_H

#include "tgc/runtime/Tensor.h"

#include <string>

namespace tgc::rt {

class StagedDirectory {
public:
  using Owns = bool (*)(const std::string &name);
  StagedDirectory() = default;
  StagedDirectory(const StagedDirectory &) = delete;
  StagedDirectory &operator=(const StagedDirectory &) = delete;
  /// Removes the staging directory unless commit() succeeded.
  ~StagedDirectory();

  /// Starts a save into `target` (created when absent; its parent must
  /// exist), whose files named by `owns` the save replaces or removes.
  Status begin(const std::string &target, Owns owns);
  /// Where the save writes its file `name`.
  std::string pathOf(const std::string &name) const;
  /// `status` with the staging directory's path in its message replaced by
  /// the target's: errors name the file the user asked for.
  Status named(Status status) const;
  /// Keeps the target's other entries and swaps the new directory in.
  Status commit();

private:
  std::string target, staging;
  Owns owns = nullptr;
  int lockFd = -1;
  bool committed = false;
};

/// Counts one step of a directory save. For the tests that a kill at every
/// step leaves the old or the new model: TGC_TEST_ABORT_AT_SAVE_STEP=N
/// aborts the process at the N-th step (from 1).
void directorySaveStep();

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_STAGEDDIRECTORY_H
