//===- Process.cpp - signals, temporary files, file fingerprints ----------===//

#include "tgc/runtime/Process.h"

#include "FileIO.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <unistd.h>
#include <vector>

namespace tgc::rt {

namespace {

// What the handler reads: plain atomics and a fixed buffer (a handler may
// call only async-signal-safe functions: unlink, write, _exit).
constexpr size_t kMaxTemporaryPath = 4096;
char temporaryPath[kMaxTemporaryPath + 1];
std::atomic<bool> temporaryRegistered{false};
// Who says what the handler says ("tgc-run", "tgc finetune").
char programName[32] = "tgc-run";
std::atomic<bool> deferred{false};
volatile std::sig_atomic_t requested = 0;

void say(const char *text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void onInterrupt(int signal) {
  say("\n");
  say(programName);
  if (deferred.load() && requested == 0) {
    requested = signal;
    say(signal == SIGINT ? ": interrupted: stopping after this step (press "
                           "Ctrl-C again to stop now)\n"
                         : ": terminated: stopping after this step\n");
    return;
  }
  if (temporaryRegistered.load())
    ::unlink(temporaryPath);
  say(signal == SIGINT
          ? ": interrupted; nothing half-written was left "
            "behind\n"
          : ": terminated; nothing half-written was left behind\n");
  ::_exit(128 + signal);
}

} // namespace

void installInterruptHandlers(const char *program) {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  std::strncpy(programName, program, sizeof(programName) - 1);
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  // Both signals blocked while the handler runs: one handler at a time.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;
  // A file-size limit (ulimit -f) must not kill a save half-way with
  // SIGXFSZ: ignored, the write fails with EFBIG and the save reports it,
  // its temporary file removed and the previous file intact.
  std::signal(SIGXFSZ, SIG_IGN);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction previous;
    // A signal the parent set to be ignored (nohup, a shell's background
    // job) stays ignored.
    if (sigaction(signal, nullptr, &previous) == 0 &&
        previous.sa_handler == SIG_IGN)
      continue;
    sigaction(signal, &action, nullptr);
  }
}

void setInterruptsDeferred(bool value) { deferred.store(value); }

int interruptSignal() { return int(requested); }

void setTemporaryFile(const char *path) {
  temporaryRegistered.store(false);
  if (!path || std::strlen(path) > kMaxTemporaryPath)
    return;
  std::strcpy(temporaryPath, path);
  temporaryRegistered.store(true);
}

Status fingerprintFile(const std::string &path, std::string &fingerprint) {
  std::unique_ptr<RegularFile> file;
  Status status =
      RegularFile::open(path, std::numeric_limits<uint64_t>::max(), file);
  if (!status.ok())
    return status;
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](const uint8_t *bytes, size_t count) {
    for (size_t i = 0; i < count; ++i)
      hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  };
  uint64_t size = file->size;
  mix(reinterpret_cast<const uint8_t *>(&size), sizeof(size));
  constexpr uint64_t kHead = uint64_t(1) << 20, kBlock = 4096, kBlocks = 64;
  std::vector<uint8_t> buffer(size_t(std::min(size, kHead)));
  status = file->readAt(0, buffer.data(), buffer.size());
  mix(buffer.data(), buffer.size());
  if (status.ok() && size > kHead) {
    uint64_t rest = size - kHead;
    buffer.resize(kBlock);
    for (uint64_t b = 0; b < kBlocks && status.ok(); ++b) {
      uint64_t at = kHead + rest / kBlocks * b;
      uint64_t count = std::min(kBlock, size - at);
      status = file->readAt(at, buffer.data(), count);
      mix(buffer.data(), size_t(count));
    }
  }
  if (!status.ok())
    return status;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", (unsigned long long)hash);
  fingerprint = text;
  return Status::success();
}

} // namespace tgc::rt
