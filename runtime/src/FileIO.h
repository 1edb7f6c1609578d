//===- FileIO.h - reading and replacing users' files -------------*- C++ -*-===//
//
// Every file the runtime reads (executables, checkpoints, weights, token
// and batch files) goes through readRegularFile, and every file it replaces
// through checkReplaceable: a directory, a device such as /dev/zero, a pipe
// or a socket is refused by name before a byte is read or written.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_FILEIO_H
#define TGC_RUNTIME_SRC_FILEIO_H

#include "tgc/runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

/// An open regular file read at offsets (pread), so a large file is read
/// piece by piece straight where its bytes go, never held whole. A file
/// that shrinks while it is read is an error that names it, not a crash
/// (as a truncated mmap'd file would be, with SIGBUS).
class RegularFile {
public:
  ~RegularFile();
  /// Opens `path`, which must be a regular file of at most `maxBytes`.
  static Status open(const std::string &path, uint64_t maxBytes,
                     std::unique_ptr<RegularFile> &file);
  /// Reads `count` bytes at `offset` into `into`.
  Status readAt(uint64_t offset, void *into, uint64_t count) const;
  /// Fails when the file was written since it was opened (its size or
  /// modification time differ): what was read may mix old and new bytes.
  /// (A file replaced by a rename is not this one: the open file is the
  /// old one, read whole and unchanged.)
  Status checkUnchanged() const;
  uint64_t size = 0;
  std::string path;

private:
  RegularFile() = default;
  int fd = -1;
  int64_t modifiedSeconds = 0, modifiedNanoseconds = 0;
};

/// Reads the whole of `path`, which must be a regular file of at most
/// `maxBytes` bytes. Errors name the file.
Status readRegularFile(const std::string &path, std::vector<char> &bytes,
                       uint64_t maxBytes);

/// Fails unless `path` is absent or a regular file: what a save may replace
/// (atomically, by renaming a temporary file over it).
Status checkReplaceable(const std::string &path);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_FILEIO_H
