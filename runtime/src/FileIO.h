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
#include <string>
#include <vector>

namespace tgc::rt {

/// Reads the whole of `path`, which must be a regular file of at most
/// `maxBytes` bytes. Errors name the file.
Status readRegularFile(const std::string &path, std::vector<char> &bytes,
                       uint64_t maxBytes);

/// Fails unless `path` is absent or a regular file: what a save may replace
/// (atomically, by renaming a temporary file over it).
Status checkReplaceable(const std::string &path);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_FILEIO_H
