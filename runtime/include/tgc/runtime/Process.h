//===- Process.h - signals, temporary files, file fingerprints ---*- C++ -*-===//
//
// What a run does when it is told to stop, and how it names the files it
// reads to the other ranks of a job.
//
//  - SIGINT and SIGTERM end the process with status 128 + the signal, after
//    removing the temporary file of a save in progress (the file being
//    replaced is untouched). Between steps of training they are deferred:
//    the first only asks the loop to stop after the current step (and a
//    save under way finishes); a second ends the process at once.
//  - A fingerprint of a file (its size, and a hash of its first MiB and of
//    64 blocks spread over the rest): enough for ranks to tell two
//    different checkpoints or datasets apart without reading gigabytes.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_PROCESS_H
#define TGC_RUNTIME_PROCESS_H

#include "tgc/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Installs the SIGINT and SIGTERM handlers (once; later calls do nothing);
/// what they say starts with `program` (at most 31 bytes of it).
void installInterruptHandlers(const char *program = "tgc-run");

/// While deferred, a first SIGINT or SIGTERM only sets the flag that
/// interruptSignal() returns.
void setInterruptsDeferred(bool deferred);

/// The signal that asked the run to stop, or 0.
int interruptSignal();

/// The temporary file this process is writing (nullptr: none): removed
/// when a signal ends the process. Paths longer than 4 KiB are not
/// registered.
void setTemporaryFile(const char *path);

/// A fingerprint of the file at `path` as 16 hex digits (FNV-1a over its
/// size, its first MiB and 64 blocks of 4 KiB spread evenly after it).
Status fingerprintFile(const std::string &path, std::string &fingerprint);

} // namespace tgc::rt

#endif // TGC_RUNTIME_PROCESS_H
