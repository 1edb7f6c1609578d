//===- Checkpoint.cpp - safetensors checkpoints ---------------------------===//
//
// Writes safetensors files (atomically) and loads them into a session after
// checking every tensor against the model (Safetensors.h reads the file).
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Checkpoint.h"
#include "tgc/runtime/HFDirectory.h"

#include "CheckpointFiles.h"
#include "FileIO.h"
#include "tgc/runtime/Process.h"
#include "tgc/runtime/Threads.h"
#include "Quant4bitFiles.h"
#include "tgc/runtime/Quant4bit.h"
#include "Safetensors.h"
#include "cpu/Common.h"
#include "tgc/Support/ReadFile.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <algorithm>
#include <cmath>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <thread>
#include <optional>
#include <set>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace tgc::rt {
namespace {

bool isCheckpointed(const TensorInfo &info) {
  return info.storage == Storage::Persistent &&
         (info.role == Role::Param || info.role == Role::State);
}

} // namespace

/// What a save's temporary file adds to the target's name (then six
/// random characters, from mkstemp).
constexpr const char *kTemporarySuffix = ".tmp.";

/// Removes the temporary files of earlier saves to `path` whose writers
/// are gone (their lock is free); fails when another live process is
/// saving to `path` now. `mine` is this save's own.
static Status removeStaleTemporaries(const std::string &path,
                                     const std::string &mine) {
  size_t slash = path.find_last_of('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) +
      kTemporarySuffix;
  std::string mineName =
      slash == std::string::npos ? mine : mine.substr(slash + 1);
  DIR *dir = ::opendir(directory.c_str());
  if (!dir)
    return Status::success();
  Status status = Status::success();
  while (struct dirent *item = ::readdir(dir)) {
    std::string name = item->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(),
                                                         prefix) != 0 ||
        name == mineName)
      continue;
    std::string other = directory + "/" + name;
    int fd = ::open(other.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                                       O_NONBLOCK);
    if (fd < 0)
      continue;
    struct stat opened, named;
    bool regular = ::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode);
    if (regular && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      status = Status::failure("cannot write '" + path +
                               "': another process is saving to it now ('" +
                               other + "' is being written)");
      ::close(fd);
      break;
    }
    // Still the file that was locked: remove it.
    if (regular && ::lstat(other.c_str(), &named) == 0 &&
        named.st_dev == opened.st_dev && named.st_ino == opened.st_ino)
      ::unlink(other.c_str());
    ::close(fd);
  }
  ::closedir(dir);
  return status;
}

Status replaceFile(const std::string &path,
                          const std::function<bool(FILE *)> &write) {
  // Only a regular file (or nothing) may be replaced: renaming over a
  // device node such as /dev/full would replace the device.
  Status replaceable = checkReplaceable(path);
  if (!replaceable.ok())
    return replaceable;
  // A fresh temporary file beside the target (O_EXCL: never one that
  // exists, nor a link someone placed there), locked while it is written:
  // another save to the same path sees it, and the next save removes it
  // when the process that wrote it died without removing it.
  std::string temporary = path + kTemporarySuffix + "XXXXXX";
  // SIGINT and SIGTERM wait until the file is registered for removal: a
  // signal in between would leave it behind.
  sigset_t interrupts, previous;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &interrupts, &previous);
  int fd = ::mkstemp(temporary.data());
  if (fd >= 0) {
    ::flock(fd, LOCK_EX | LOCK_NB);
    setTemporaryFile(temporary.c_str());
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (fd < 0)
    return Status::failure("cannot write '" + path + "' (cannot create a "
                           "temporary file beside it: " +
                           std::strerror(errno) + ")");
  auto abandon = [&](FILE *file, const std::string &message) {
    setTemporaryFile(nullptr);
    std::remove(temporary.c_str());
    if (file)
      std::fclose(file);
    else
      ::close(fd);
    return Status::failure(message);
  };
  Status others = removeStaleTemporaries(path, temporary);
  if (!others.ok())
    return abandon(nullptr, others.error);
  mode_t mask = ::umask(0); // mkstemp makes 0600; a save gets 0666 & ~umask
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  FILE *file = ::fdopen(fd, "wb");
  if (!file)
    return abandon(nullptr, "cannot write '" + path + "'");
  errno = 0;
  bool ok = write(file);
  ok = ok && std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  if (!ok) {
    // ENOSPC, EDQUOT, EFBIG (a file-size limit: SIGXFSZ is ignored, see
    // installInterruptHandlers) or an I/O error.
    int error = errno;
    return abandon(file, "could not write '" + path + "' (" +
                             (error ? std::strerror(error)
                                    : "disk full?") +
                             "); the previous file is intact");
  }
  // Renamed while still locked and open, so no other save takes it for a
  // stale one in between.
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return abandon(file, "could not move the file into '" + path + "'");
  setTemporaryFile(nullptr);
  std::fclose(file);
  return Status::success();
}

Status writeSafetensors(const std::string &path,
                        const std::map<std::string, std::string> &metadata,
                        const std::vector<SavedTensor> &entries) {
  // The header in the order written: metadata, then the tensors in data
  // order.
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["__metadata__"] = nlohmann::ordered_json(metadata);
  uint64_t offset = 0;
  for (const SavedTensor &entry : entries) {
    json[entry.name] = {{"dtype", safetensorsDType(entry.dtype)},
                        {"shape", entry.shape},
                        {"data_offsets", {offset, offset + entry.bytes}}};
    offset += entry.bytes;
  }
  std::string header =
      json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  // The data starts 8-byte aligned, as the format recommends.
  while ((header.size() + 8) % 8 != 0)
    header.push_back(' ');

  // Values that no load accepts are never written over a file that loads.
  for (const SavedTensor &entry : entries) {
    if (!isFloat(entry.dtype))
      continue;
    TensorRef view;
    view.data = const_cast<void *>(entry.data);
    view.dtype = entry.dtype;
    view.shape = {int64_t(entry.bytes / dtypeSize(entry.dtype))};
    int64_t bad = cpu::firstNonFinite(view);
    if (bad >= 0)
      return Status::failure(
          "'" + path + "' was not written: '" + entry.name +
          "' holds a non-finite value (NaN or Inf) at element " +
          std::to_string(bad) + "; the previous file is intact");
  }
  uint64_t length = header.size();
  return replaceFile(path, [&](FILE *file) {
    uint8_t prefix[8];
    for (int i = 0; i < 8; ++i)
      prefix[i] = uint8_t(length >> (8 * i));
    bool ok = std::fwrite(prefix, 1, 8, file) == 8 &&
              std::fwrite(header.data(), 1, header.size(), file) ==
                  header.size();
    // Fault injection for the tests that a crash or a signal during a save
    // leaves the previous checkpoint intact: die (or stop for a second)
    // after writing half the tensors.
    const char *abortAt = std::getenv("TGC_TEST_ABORT_DURING_SAVE");
    const char *pauseAt = std::getenv("TGC_TEST_PAUSE_DURING_SAVE");
    for (size_t i = 0; i < entries.size(); ++i) {
      if (abortAt && i == entries.size() / 2) {
        std::fflush(file);
        std::abort();
      }
      if (pauseAt && i == entries.size() / 2) {
        std::fflush(file);
        for (unsigned left = unsigned(std::atoi(pauseAt)); left;)
          left = ::sleep(left); // a signal's handler cuts a sleep short
      }
      ok = ok && std::fwrite(entries[i].data, 1, entries[i].bytes, file) ==
                     entries[i].bytes;
    }
    return ok;
  });
}

/// The padding in this rank's parts of quantized state among `loaded`,
/// as the update leaves it: the code of zero. (A whole from a file holds
/// none there, or a 0 nibble after an odd 4-bit count, and code 0 of a
/// signed map is its most negative value: the block's absmax would grow.)
static void settleStatePadding(Session &session,
                               const std::vector<int32_t> &loaded) {
  const Program &program = session.program();
  int64_t part = program.partOf(session.communicator().rank());
  for (const QuantizedStatePart &state : quantizedStateParts(program)) {
    if (std::find(loaded.begin(), loaded.end(), state.codes) == loaded.end())
      continue;
    TensorRef view = session.hostView(state.codes);
    auto *codes = static_cast<uint8_t *>(view.data);
    int64_t perByte = state.packed ? 2 : 1;
    int64_t count = view.numElements() * perByte, first = part * count;
    auto zero = uint8_t(state.zeroCode);
    for (int64_t e = std::max<int64_t>(0, state.elements - first); e < count;
         ++e) {
      if (!state.packed)
        codes[e] = zero;
      else if (e % 2)
        codes[e / 2] = uint8_t((codes[e / 2] & 0xF0) | zero);
      else
        codes[e / 2] = uint8_t((codes[e / 2] & 0x0F) | (zero << 4));
    }
  }
}

/// The entry of a persistent tensor, from the session's host copy (a
/// part's gathered whole).
static SavedTensor entryOf(Session &session, int32_t index, std::string name = "") {
  const TensorInfo &info = session.program().tensors[index];
  TensorRef view = session.wholeView(index);
  return {name.empty() ? info.name : name, info.dtype, view.shape, view.data,
          view.numBytes()};
}

Status saveOnRankZero(Session &session,
                      const std::function<bool(int32_t)> &reads,
                      const std::function<Status()> &save) {
  Communicator &comm = session.communicator();
  Status status = session.pullPersistent();
  if (status.ok())
    status = session.gatherWholes(reads, 0);
  if (status.ok() && comm.rank() == 0)
    status = save();
  session.releaseWholes();
  if (comm.size() > 1)
    status = comm.agree(status);
  return status;
}

std::function<bool(int32_t)> parametersOf(const Program &program) {
  return [&program](int32_t index) {
    return program.tensors[size_t(index)].role == Role::Param;
  };
}

std::function<bool(int32_t)> adaptersOf(const Program &program) {
  return [&program](int32_t index) {
    for (const LoraAdapter &adapter : program.adapters)
      if (index == adapter.a || index == adapter.b)
        return true;
    return false;
  };
}

Status checkSaveTarget(const std::string &path) {
  return checkReplaceable(path);
}

Status saveCheckpoint(Session &session, const std::string &path,
                      const std::map<std::string, std::string> &metadata) {
  const Program &program = session.program();
  // Parts of tensors split across ranks are gathered on rank 0 into the
  // whole (the padding after its last element dropped), so the file is the
  // same whatever the world size, and rank 0 writes it.
  auto checkpointed = [&](int32_t index) {
    return isCheckpointed(program.tensors[size_t(index)]);
  };
  Status status = saveOnRankZero(session, checkpointed, [&] {
    // 4-bit state parts' padding after an odd count shares the last real
    // byte, which a whole tensor's update leaves with a 0 low nibble.
    for (const QuantizedStatePart &state : quantizedStateParts(program)) {
      TensorRef whole = session.wholeView(state.codes);
      if (state.packed && state.elements % 2 &&
          whole.shape == program.tensors[size_t(state.codes)].shardOf &&
          state.elements / 2 < whole.numElements())
        static_cast<uint8_t *>(whole.data)[state.elements / 2] &= 0xF0;
    }
    std::vector<SavedTensor> entries;
    for (size_t i = 0; i < program.tensors.size(); ++i)
      if (isCheckpointed(program.tensors[i]))
        entries.push_back(entryOf(session, int32_t(i)));
    // LoRA's scale is compiled into the step, not a tensor: recorded, so a
    // resume under another alpha is refused (checkLoraMetadata).
    std::map<std::string, std::string> recorded = metadata;
    if (!program.adapters.empty())
      for (const auto &[key, value] : loraMetadata(program))
        recorded["tgc." + key] = value;
    return writeSafetensors(path, recorded, entries);
  });
  if (!status.ok())
    return Status::failure("checkpoint: " + status.error);
  return status;
}

std::vector<SavedTensor>
adapterTensors(Session &session, std::map<std::string, std::string> &metadata) {
  const Program &program = session.program();
  std::vector<SavedTensor> tensors;
  for (const LoraAdapter &adapter : program.adapters)
    for (int32_t index : {adapter.a, adapter.b})
      tensors.push_back(entryOf(session, index,
                                kAdapterPrefix + program.tensors[index].name));
  metadata = loraMetadata(program);
  metadata["format"] = "pt";
  metadata["fan_in_fan_out"] =
      program.adapters.front().fanInFanOut ? "true" : "false";
  return tensors;
}

std::map<std::string, std::string> loraMetadata(const Program &program) {
  const TensorInfo &b = program.tensors[program.adapters.front().b];
  int64_t rank = b.wholeShape()[1];
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%.17g",
                program.adapters.front().scale * double(rank));
  return {{"r", std::to_string(rank)}, {"lora_alpha", alpha}};
}

Status checkLoraScale(const Program &program, const std::string &source,
                      double rank, double alpha, bool rsLora) {
  const LoraAdapter &first = program.adapters.front();
  double compiledRank = double(program.tensors[first.b].wholeShape()[1]);
  double scale = alpha / (rsLora ? std::sqrt(rank) : rank);
  char text[256];
  if (rank != compiledRank) {
    std::snprintf(text, sizeof text,
                  " has LoRA rank %.17g, but the executable was compiled "
                  "with rank %.17g",
                  rank, compiledRank);
    return Status::failure(source + text);
  }
  if (!(std::fabs(scale - first.scale) <= 1e-6 * std::fabs(first.scale))) {
    std::snprintf(text, sizeof text,
                  " has LoRA alpha %.17g%s (scale %.17g), but the executable "
                  "was compiled with alpha %.17g (scale %.17g); compile with "
                  "--lora rank=%.17g,alpha=%.17g",
                  alpha, rsLora ? " with rsLoRA" : "", scale,
                  first.scale * compiledRank, first.scale, compiledRank,
                  rsLora ? scale * compiledRank : alpha);
    return Status::failure(source + text);
  }
  return Status::success();
}

/// The LoRA rank and alpha that the safetensors metadata `metadata`
/// records under `prefix` ("tgc." in a checkpoint, "" in an adapter file),
/// checked against the executable's; absent ones are not checked (files
/// written before they were recorded, or by another tool).
static Status checkLoraMetadata(const Program &program,
                                const std::map<std::string, std::string> &metadata,
                                const std::string &prefix,
                                const std::string &source) {
  auto rank = metadata.find(prefix + "r");
  auto alpha = metadata.find(prefix + "lora_alpha");
  if (rank == metadata.end() && alpha == metadata.end())
    return Status::success();
  if (program.adapters.empty())
    return Status::failure(source + " records LoRA adapters, but the "
                                    "executable has none (compile it with "
                                    "--lora)");
  auto number = [&](auto found, double &value) -> Status {
    if (found == metadata.end())
      return Status::failure(source + " records " +
                             (found == rank ? prefix + "lora_alpha"
                                            : prefix + "r") +
                             " without the other");
    char *end = nullptr;
    errno = 0;
    value = std::strtod(found->second.c_str(), &end);
    if (found->second.empty() || *end || errno || !std::isfinite(value) ||
        value <= 0)
      return Status::failure(source + ": its " + found->first + " '" +
                             found->second + "' is not a positive number");
    return Status::success();
  };
  double r = 0, a = 0;
  TGC_RETURN_IF_ERROR(number(rank, r));
  TGC_RETURN_IF_ERROR(number(alpha, a));
  return checkLoraScale(program, source, r, a, /*rsLora=*/false);
}

Status saveAdapters(Session &session, const std::string &path) {
  if (session.program().adapters.empty())
    return Status::failure("--save-adapters: the model has no LoRA adapters "
                           "(compile it with --lora)");
  return saveOnRankZero(session, adaptersOf(session.program()), [&] {
    std::map<std::string, std::string> metadata;
    std::vector<SavedTensor> tensors = adapterTensors(session, metadata);
    return writeSafetensors(path, metadata, tensors);
  });
}

std::vector<SavedTensor>
mergedParameters(Session &session, std::vector<std::vector<uint8_t>> &merged) {
  const Program &program = session.program();
  std::vector<bool> adapterTensor(program.tensors.size(), false);
  std::map<int32_t, const LoraAdapter *> adapterOf;
  for (const LoraAdapter &adapter : program.adapters) {
    adapterTensor[adapter.a] = adapterTensor[adapter.b] = true;
    adapterOf[adapter.base] = &adapter;
  }
  // A 4-bit weight's scales go with it: it is saved dequantized.
  std::vector<bool> scaleTensor(program.tensors.size(), false);
  for (const QuantizedWeight &weight : program.quantized)
    for (int32_t index : {weight.absmax, weight.nestedAbsmax, weight.offset})
      if (index >= 0)
        scaleTensor[size_t(index)] = true;
  std::vector<SavedTensor> entries;
  merged.clear();
  merged.reserve(program.adapters.size() + program.quantized.size());
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (info.role != Role::Param || adapterTensor[i] || scaleTensor[i])
      continue;
    auto found = adapterOf.find(int32_t(i));
    const QuantizedWeight *quantized = program.quantizedWith(int32_t(i));
    TensorRef w = session.wholeView(int32_t(i));
    if (quantized) {
      // bitsandbytes' dequantize_4bit, in f32: the base PEFT's
      // merge_and_unload adds the adapter to.
      float values[quant4::kValues];
      std::memcpy(values,
                  quant4::values(quantized->fp4 ? quant4::Type::FP4
                                                : quant4::Type::NF4),
                  sizeof(values));
      float dynamic[quant4::kNestedValues];
      for (int c = 0; c < quant4::kNestedValues; ++c)
        dynamic[c] = quant4::dynamicMap(c);
      auto viewOf = [&](int32_t index) {
        return index >= 0 ? session.wholeView(index) : TensorRef();
      };
      Weight4bitRefs refs;
      refs.codes = w;
      refs.absmax = viewOf(quantized->absmax);
      refs.nestedAbsmax = viewOf(quantized->nestedAbsmax);
      refs.offset = viewOf(quantized->offset);
      refs.map.data = values;
      refs.nestedMap.data = dynamic;
      refs.blockSize = quantized->blockSize;
      Dequantizer4bit dequantize(refs);
      int64_t n = quantized->rows * quantized->cols;
      merged.emplace_back(size_t(n) * sizeof(float));
      float *into = reinterpret_cast<float *>(merged.back().data());
      for (int64_t e = 0; e < n; ++e)
        into[e] = dequantize(e);
      w.data = into;
      w.dtype = DType::F32;
      w.shape = {quantized->rows, quantized->cols};
      if (found == adapterOf.end()) {
        entries.push_back({info.name, w.dtype, w.shape, w.data, w.numBytes()});
        continue;
      }
    }
    if (found == adapterOf.end()) {
      entries.push_back(entryOf(session, int32_t(i)));
      continue;
    }
    // W + scale (B A), transposed for a [in, out] weight; in f32, stored
    // in the weight's dtype (in place over a dequantized one).
    const LoraAdapter &adapter = *found->second;
    TensorRef a = session.wholeView(adapter.a),
              b = session.wholeView(adapter.b);
    int64_t rank = a.shape[0], in = a.shape[1], out = b.shape[0];
    TensorRef result = w;
    if (!quantized) {
      merged.emplace_back(w.numBytes());
      result.data = merged.back().data();
    }
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < in; ++k) {
        double sum = 0.0;
        for (int64_t r = 0; r < rank; ++r)
          sum += double(loadF32(b, o * rank + r)) * loadF32(a, r * in + k);
        int64_t at = adapter.fanInFanOut ? k * out + o : o * in + k;
        storeF32(result, at,
                 float(double(loadF32(w, at)) + adapter.scale * sum));
      }
    entries.push_back({info.name, result.dtype, result.shape, result.data,
                       result.numBytes()});
  }
  return entries;
}

Status exportMerged(Session &session, const std::string &path) {
  return saveOnRankZero(session, parametersOf(session.program()), [&] {
    std::vector<std::vector<uint8_t>> storage;
    return writeSafetensors(path, {{"format", "pt"}},
                            mergedParameters(session, storage));
  });
}

/// Checks the values of a tensor before it is loaded: floats must be
/// finite (a NaN weight trains nothing and poisons every step after it),
/// and the step counter must not be negative.
static Status checkValues(const SafetensorsEntry &entry, const char *data,
                          DType stored, int64_t count, int64_t first,
                          const TensorInfo &info, bool stepCounter) {
  TensorRef view;
  view.data = const_cast<char *>(data);
  view.dtype = stored;
  view.shape = {count};
  if (isFloat(stored)) {
    // On the loader's reader threads: one thread a piece.
    if (int64_t i = cpu::firstNonFiniteSerial(view); i >= 0) {
      float value = loadF32(view, i);
      return Status::failure(
          "tensor '" + entry.name + "' holds " +
          (std::isnan(value) ? "NaN" : "an infinite value") +
          " at element " + std::to_string(first + i) +
          "; refusing to load a corrupt or diverged checkpoint");
    }
    // The learning rate and the loss scale are scalars the run divides
    // and multiplies by: a negative rate or a scale <= 0 is corrupt.
    if (count == 1 && ((info.name == "optimizer.lr" && loadF32(view, 0) < 0) ||
                       (info.name == "amp.loss_scale" &&
                        !(loadF32(view, 0) > 0))))
      return Status::failure("tensor '" + entry.name + "' holds " +
                             std::to_string(loadF32(view, 0)) +
                             ", out of its range");
  } else if (stored == DType::I64 && stepCounter) {
    int64_t step;
    std::memcpy(&step, data, sizeof(step));
    if (count != 1 || step < 0 || step > kMaxCheckpointStep)
      return Status::failure("tensor '" + entry.name + "' holds the step " +
                             std::to_string(step) + ", outside [0, " +
                             std::to_string(kMaxCheckpointStep) + "]");
  }
  return Status::success();
}

/// A non-negative decimal integer of at most kMaxCheckpointStep.
static bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 19)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return value <= kMaxCheckpointStep;
}

Status checkRunMetadata(const std::map<std::string, std::string> &metadata) {
  int64_t value;
  for (const char *key : {"tgc.step", "tgc.seed", "tgc.batch"}) {
    auto found = metadata.find(key);
    if (found == metadata.end())
      continue;
    if (!parseCount(found->second, value))
      return Status::failure(std::string("its ") + key + " '" +
                             found->second + "' is not an integer in [0, " +
                             std::to_string(kMaxCheckpointStep) + "]");
  }
  return Status::success();
}

Status readShardNames(const std::string &indexPath,
                      std::vector<std::string> &names) {
  std::string text;
  if (std::string error =
          readUserJSONFile(indexPath, kMaxConfigFileBytes, text);
      !error.empty())
    return Status::failure(error);
  nlohmann::json index = nlohmann::json::parse(text, nullptr,
                                               /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object() ||
      !index.contains("weight_map") || !index["weight_map"].is_object())
    return Status::failure("'" + indexPath +
                           "' is not a safetensors index (a JSON object "
                           "with a weight_map)");
  names.clear();
  for (const auto &[tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      return Status::failure("'" + indexPath + "': the shard of '" + tensor +
                             "' is not a file name");
    std::string name = shard.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos)
      return Status::failure("'" + indexPath + "': shard '" + name +
                             "' is not a file of the directory");
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  }
  if (names.empty())
    return Status::failure("'" + indexPath + "' names no shard");
  return Status::success();
}

/// The files of the checkpoint `path`: the file itself or, for weights, a
/// Hugging Face model directory's model.safetensors or the shards its
/// model.safetensors.index.json names (each once, in the index's order).
static Status checkpointFiles(const std::string &path, LoadScope scope,
                              std::vector<std::string> &files) {
  struct stat info;
  if (scope == LoadScope::Everything || ::stat(path.c_str(), &info) != 0 ||
      !S_ISDIR(info.st_mode)) {
    files = {path};
    return Status::success();
  }
  // Whether `file` is there: absent is false; there but not a regular file
  // (a FIFO, a device, a directory) is an error naming what it is.
  Status notRegular = Status::success();
  auto exists = [&](const std::string &file) {
    struct stat s;
    if (::stat(file.c_str(), &s) != 0)
      return false;
    if (!S_ISREG(s.st_mode) && notRegular.ok())
      notRegular = Status::failure("'" + file + "' is " +
                                   describeFileKind(s.st_mode) +
                                   ", not a file");
    return S_ISREG(s.st_mode);
  };
  // A PEFT adapter directory: its adapter_model.safetensors.
  if (scope == LoadScope::Adapters) {
    std::string file = path + "/adapter_model.safetensors";
    if (!exists(file))
      return notRegular.ok()
                 ? Status::failure("adapter directory '" + path +
                                   "' has no adapter_model.safetensors")
                 : notRegular;
    files = {file};
    return Status::success();
  }
  std::string single = path + "/model.safetensors";
  std::string indexPath = path + "/model.safetensors.index.json";
  if (exists(single)) {
    files = {single};
    return Status::success();
  }
  if (!notRegular.ok())
    return notRegular;
  if (!exists(indexPath))
    return notRegular.ok()
               ? Status::failure("weights directory '" + path +
                                 "' has neither model.safetensors nor "
                                 "model.safetensors.index.json")
               : notRegular;
  std::vector<std::string> names;
  TGC_RETURN_IF_ERROR(readShardNames(indexPath, names));
  files.clear();
  for (const std::string &name : names) {
    std::string file = path + "/" + name;
    if (!exists(file))
      return notRegular.ok()
                 ? Status::failure("'" + indexPath + "' names shard '" +
                                   name + "', which is missing")
                 : notRegular;
    files.push_back(file);
  }
  return Status::success();
}

/// Reads the checkpoint `path` (all its files) and loads it, or with
/// `provided` only says what it would set.
static Status loadCheckpointPath(Session &session, const std::string &path,
                                 LoadScope scope,
                                 std::map<std::string, std::string> *metadata,
                                 std::vector<bool> *provided,
                                 LoadReport *report) {
  std::vector<std::string> paths;
  TGC_RETURN_IF_ERROR(checkpointFiles(path, scope, paths));
  std::vector<SafetensorsFile> files(paths.size());
  std::vector<CheckpointPart> parts;
  for (size_t i = 0; i < paths.size(); ++i) {
    Status status = readSafetensors(paths[i], files[i]);
    if (!status.ok())
      return Status::failure("checkpoint " + status.error);
    parts.push_back({paths[i], &files[i]});
  }
  TGC_RETURN_IF_ERROR(loadCheckpointParts(session, path, parts, scope,
                                          metadata, provided, report));
  // Every byte loaded came from the files as they were when opened.
  for (const SafetensorsFile &file : files)
    if (file.source)
      if (Status status = file.source->checkUnchanged(); !status.ok())
        return Status::failure("checkpoint " + status.error);
  return Status::success();
}

Status loadCheckpoint(Session &session, const std::string &path,
                      LoadScope scope,
                      std::map<std::string, std::string> *metadata,
                      LoadReport *report) {
  return loadCheckpointPath(session, path, scope, metadata, nullptr, report);
}

Status checkpointProvides(Session &session, const std::string &path,
                          LoadScope scope, std::vector<bool> &provided) {
  return loadCheckpointPath(session, path, scope, nullptr, &provided,
                            nullptr);
}

Status loadCheckpointFrom(Session &session, const std::string &path,
                          const SafetensorsFile &file, LoadScope scope,
                          std::map<std::string, std::string> *metadata,
                          std::vector<bool> *provided) {
  return loadCheckpointParts(session, path, {{path, &file}}, scope, metadata,
                             provided, nullptr);
}

/// Buffers Hugging Face's files carry that are not parameters: GPT-2's
/// causal masks, BERT's position ids, rotary frequencies.
/// When `name` is optimizer state that this executable keeps in another
/// format (f32 `<state>`, 8-bit `<state>.q8` or 4-bit `<state>.q4`, with
/// `<state>.absmax` beside a quantized one), what the checkpoint holds and
/// how to resume it; else empty.
static std::string stateFormatMismatch(const Program &program,
                                       const std::string &name) {
  struct Format {
    const char *suffix, *description, *flag;
  };
  static const Format formats[] = {
      {"", "f32", "without --optimizer-state"},
      {".q8", "8-bit", "with --optimizer-state=8bit"},
      {".q4", "4-bit", "with --optimizer-state=4bit"}};
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return name.size() > n && name.compare(name.size() - n, n, suffix) == 0;
  };
  // The checkpoint's format and the state's name, from the tensor's name
  // (an absmax is quantized state of either width: its codes say which).
  std::string base = name;
  const Format *stored = &formats[0];
  for (const Format &format : formats)
    if (*format.suffix && endsWith(format.suffix)) {
      stored = &format;
      base = name.substr(0, name.size() - std::strlen(format.suffix));
    }
  bool absmax = stored == &formats[0] && endsWith(".absmax");
  if (absmax)
    base = name.substr(0, name.size() - std::strlen(".absmax"));
  for (const Format &kept : formats) {
    if (program.findPersistent(base + kept.suffix) < 0 ||
        (!absmax && &kept == stored) || (absmax && *kept.suffix))
      continue;
    std::string what = absmax ? "the scale of quantized optimizer state"
                              : std::string(stored->description) +
                                    " optimizer state";
    std::string resume =
        absmax ? "an executable compiled with the checkpoint's "
                 "--optimizer-state"
               : std::string("an executable compiled ") + stored->flag;
    return what + ", but this executable keeps that state in " +
           kept.description +
           (*kept.suffix ? " ('" + base + kept.suffix + "')" : "") +
           "; resume it with " + resume;
  }
  return "";
}

static bool isHuggingFaceBuffer(const std::string &name) {
  auto endsWith = [&](const std::string &suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  return endsWith(".attn.bias") || endsWith(".attn.masked_bias") ||
         endsWith("embeddings.position_ids") ||
         endsWith("rotary_emb.inv_freq");
}

/// Loading reads at most this many bytes a piece: each is read (and
/// converted) by one reader while the others read theirs.
constexpr uint64_t kLoadPieceBytes = uint64_t(16) << 20;
/// Readers at least, whatever the thread count: a cold file reads faster
/// with several requests in flight, whose threads mostly wait.
constexpr int64_t kMinLoadReaders = 4;

/// Elements [first, first + count) of a tensor loaded from `entry`.
struct LoadPiece {
  int32_t index;
  const SafetensorsEntry *entry;
  const SafetensorsFile *file;
  size_t part; // the file's place among the checkpoint's files
  DType stored; // the file's dtype
  int64_t first, count;
};

/// Reads, checks and (where the dtypes differ) converts one piece into the
/// session's host copy; `buffer` is the reader's conversion buffer. Runs on
/// a reader thread: nothing here starts threads of its own.
static Status loadPiece(Session &session, const LoadPiece &piece,
                        std::vector<char> &buffer) {
  const Program &program = session.program();
  TensorRef view = session.hostView(piece.index);
  const TensorInfo &info = program.tensors[piece.index];
  const SafetensorsEntry &entry = *piece.entry;
  bool counter = piece.index == program.stepCounter;
  size_t storedSize = dtypeSize(piece.stored);
  // The piece's place in the host copy (a part of a split tensor holds
  // the whole's elements from partStart on).
  int64_t local =
      piece.first -
      info.partStart(session.program().partOf(session.communicator().rank()));
  char *into =
      static_cast<char *>(view.data) + uint64_t(local) * dtypeSize(view.dtype);
  if (piece.stored == view.dtype) {
    char *at = into;
    TGC_RETURN_IF_ERROR(piece.file->read(entry,
                                         uint64_t(piece.first) * storedSize,
                                         at, uint64_t(piece.count) *
                                                 storedSize));
    return checkValues(entry, at, view.dtype, piece.count, piece.first, info,
                       counter);
  }
  buffer.resize(std::max(buffer.size(), size_t(piece.count) * storedSize));
  TGC_RETURN_IF_ERROR(piece.file->read(entry,
                                       uint64_t(piece.first) * storedSize,
                                       buffer.data(),
                                       uint64_t(piece.count) * storedSize));
  if (piece.stored == DType::BF16 && view.dtype == DType::F32 &&
      piece.count > 1) {
    // The common case (16-bit hub files into f32 weights): a bf16 is the
    // top half of its f32; checked as it is converted, in one pass.
    int64_t bad =
        cpu::widenBF16(reinterpret_cast<const uint16_t *>(buffer.data()),
                       reinterpret_cast<uint32_t *>(into), piece.count);
    if (bad >= 0)
      return checkValues(entry, buffer.data(), piece.stored, piece.count,
                         piece.first, info, counter);
    return Status::success();
  }
  TGC_RETURN_IF_ERROR(checkValues(entry, buffer.data(), piece.stored,
                                  piece.count, piece.first, info, counter));
  TensorRef source;
  source.data = buffer.data();
  source.dtype = piece.stored;
  source.shape = {piece.count};
  for (int64_t i = 0; i < piece.count; ++i)
    storeF32(view, local + i, loadF32(source, i));
  return Status::success();
}

/// Loads `pieces` on several reader threads, so that a cold file is read
/// with several requests in flight and a warm one is copied (and
/// converted, and its destination pages first touched) on every core. The
/// error reported is the first piece's in `pieces`' order that fails, as
/// one reader would report it: a reader skips only pieces after a failure.
static Status loadPieces(Session &session,
                         const std::vector<LoadPiece> &pieces) {
  int64_t total = int64_t(pieces.size());
  std::vector<Status> statuses(pieces.size());
  std::atomic<int64_t> next{0}, firstFailed{total};
  auto reader = [&]() {
    std::vector<char> buffer;
    for (int64_t i = next++; i < total; i = next++) {
      if (i > firstFailed.load())
        continue;
      statuses[size_t(i)] = loadPiece(session, pieces[size_t(i)], buffer);
      if (!statuses[size_t(i)].ok()) {
        int64_t seen = firstFailed.load();
        while (i < seen && !firstFailed.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  int64_t readers = std::min<int64_t>(total, std::max(kMinLoadReaders,
                                                      int64_t(cpuThreads())));
  std::vector<std::thread> threads;
  for (int64_t r = 1; r < readers; ++r)
    threads.emplace_back(reader);
  reader();
  for (std::thread &thread : threads)
    thread.join();
  if (int64_t failed = firstFailed.load(); failed < total)
    return statuses[size_t(failed)];
  return Status::success();
}

Status loadCheckpointParts(Session &session, const std::string &path,
                           const std::vector<CheckpointPart> &parts,
                           LoadScope scope,
                           std::map<std::string, std::string> *metadata,
                           std::vector<bool> *provided, LoadReport *report) {
  // Errors name the file a tensor came from (the checkpoint, or its shard).
  std::string current = path;
  auto fail = [&](const std::string &message) {
    return Status::failure("checkpoint '" + current + "': " + message);
  };
  auto findEntry = [&](const std::string &name)
      -> std::pair<const SafetensorsEntry *, const SafetensorsFile *> {
    for (const CheckpointPart &part : parts)
      if (const SafetensorsEntry *entry = part.file->find(name))
        return {entry, part.file};
    return {nullptr, nullptr};
  };
  // Starting from weights, a module the file lacks entirely (a head a base
  // model's file has not, a pooler a masked-LM file has not) keeps its
  // initialisation and is reported, as from_pretrained does; a module the
  // file has only part of is an error (a damaged or edited file).
  std::set<std::string> modulesPresent;
  auto moduleOf = [](const std::string &name) {
    size_t dot = name.rfind('.');
    return dot == std::string::npos ? std::string() : name.substr(0, dot);
  };
  std::vector<std::string> unused;
  Status status;
  const Program &program = session.program();
  std::vector<bool> found(program.tensors.size(), false);
  struct Pending {
    int32_t index;
    const SafetensorsEntry *entry;
    DType stored; // the file's dtype
  };
  std::vector<Pending> pending;
  std::vector<const SafetensorsFile *> sourceOf(program.tensors.size(),
                                                 nullptr);
  std::vector<bool> adapterTensor(program.tensors.size(), false);
  for (const LoraAdapter &adapter : program.adapters)
    adapterTensor[adapter.a] = adapterTensor[adapter.b] = true;
  // 4-bit weights quantized as they load, and the offsets of
  // double-quantized ones read from bitsandbytes' quant states.
  struct Quantizing {
    const QuantizedWeight *weight;
    const SafetensorsEntry *entry;
    const SafetensorsFile *file;
  };
  std::vector<Quantizing> quantizing;
  std::vector<std::pair<int32_t, float>> offsets;
  // A persistent tensor by a checkpoint's name, as Hugging Face's files
  // name it (a base model's names lack `transformer.`, `bert.`, `model.`).
  auto findNamed = [&](const std::string &name) {
    int32_t index = program.findPersistent(name);
    if (index < 0 && scope == LoadScope::Parameters)
      for (const char *prefix : {"transformer.", "bert.", "model."})
        if ((index = program.findPersistent(prefix + name)) >= 0)
          break;
    return index;
  };
  for (const CheckpointPart &part : parts) {
  const SafetensorsFile &file = *part.file;
  current = part.path;
  for (const SafetensorsEntry &entry : file.entries) {
    std::string name = entry.name;
    if (name.compare(0, kAdapterPrefix.size(), kAdapterPrefix) == 0)
      name = name.substr(kAdapterPrefix.size()); // PEFT's adapter names
    if (std::string method = foreignQuantization(name); !method.empty())
      return fail("tensor '" + entry.name + "' is " + method +
                  "-quantized; tgc loads 16- and 32-bit weights, and "
                  "bitsandbytes' 4-bit (NF4, FP4) ones");
    if (std::optional<Quant4Side> side = parseQuant4Side(name)) {
      // A codebook or quant state beside a bitsandbytes 4-bit weight.
      int32_t codes = findNamed(side->base);
      const QuantizedWeight *weight =
          codes >= 0 ? program.quantizedWith(codes) : nullptr;
      if (!weight && codes >= 0)
        return fail("tensor '" + entry.name + "' belongs to a bitsandbytes "
                    "4-bit '" + side->base + "', which this executable "
                    "stores unquantized; compile it with "
                    "--quantize-frozen=" +
                    (side->type.empty() ? std::string("nf4") : side->type) +
                    " to load it");
      if (!weight) {
        if (scope == LoadScope::Parameters) {
          unused.push_back(entry.name);
          continue;
        }
        return fail("tensor '" + entry.name + "' is not a parameter or "
                    "state of this model");
      }
      std::optional<float> offset;
      status = checkQuant4Side(program, *weight, *side, file, entry, offset);
      if (!status.ok())
        return fail(status.error);
      if (offset) {
        if (found[size_t(weight->offset)])
          return fail("the offset of '" + side->base +
                      "' is in the checkpoint twice");
        found[size_t(weight->offset)] = true;
        offsets.emplace_back(weight->offset, *offset);
      }
      continue;
    }
    int32_t index = program.findPersistent(name);
    if (index < 0 && scope == LoadScope::Parameters) {
      // Hugging Face's files: a base model's names (no `transformer.`,
      // `bert.` or `model.`), buffers, and an lm_head tied to the
      // embedding.
      bool mapped = false;
      for (const char *prefix : {"transformer.", "bert.", "model."})
        if (program.findPersistent(prefix + name) >= 0) {
          name = prefix + name;
          index = program.findPersistent(name);
          mapped = true;
          break;
        }
      if (mapped) {
        // Loaded below under the model's name.
      } else if (isHuggingFaceBuffer(name)) {
        continue; // a buffer, not a parameter
      } else if (name == "lm_head.weight" &&
                 program.findPersistent("transformer.wte.weight") >= 0) {
        const SafetensorsEntry *wte = findEntry("transformer.wte.weight").first;
        if (!wte)
          wte = findEntry("wte.weight").first;
        std::vector<char> head, embedding;
        if (wte && wte->dtype == entry.dtype && wte->shape == entry.shape) {
          head.resize(entry.end - entry.begin);
          embedding.resize(head.size());
          status = file.read(entry, 0, head.data(), head.size());
          const SafetensorsFile *wteFile =
              findEntry(wte->name).second ? findEntry(wte->name).second
                                          : &file;
          if (status.ok())
            status =
                wteFile->read(*wte, 0, embedding.data(), embedding.size());
          if (!status.ok())
            return fail(status.error);
        }
        if (!wte || wte->dtype != entry.dtype || wte->shape != entry.shape ||
            head != embedding)
          return fail("lm_head.weight is not tied to wte.weight; this model "
                      "ties its LM head to the token embedding");
        continue;
      }
    }
    if (scope == LoadScope::Parameters) {
      // Weights only: a full checkpoint's optimizer and step state (in any
      // format: `<param>.exp_avg`, `<param>.exp_avg.q8`, `optimizer.step`)
      // is not loaded; the run starts its own.
      bool state = index >= 0 ? program.tensors[index].role == Role::State
                              : name.compare(0, 10, "optimizer.") == 0 ||
                                    name.compare(0, 4, "amp.") == 0;
      for (size_t dot = name.find('.'); !state && dot != std::string::npos;
           dot = name.find('.', dot + 1)) {
        int32_t owner = program.findPersistent(name.substr(0, dot));
        state = owner >= 0 && program.tensors[owner].role == Role::Param &&
                index < 0;
      }
      if (state)
        continue;
    }
    if (scope == LoadScope::Adapters && (index < 0 || !adapterTensor[index]))
      return fail("tensor '" + entry.name + "' is not a LoRA adapter of "
                  "this model (an adapter file for another model?)");
    if (index < 0 || !isCheckpointed(program.tensors[index])) {
      // Optimizer state in another format: f32 `<state>`, 8-bit
      // `<state>.q8` or 4-bit `<state>.q4`, each quantized one with
      // `<state>.absmax` (tg-quantize-optimizer-state).
      if (std::string error = stateFormatMismatch(program, name);
          !error.empty())
        return fail("tensor '" + entry.name + "' is " + error);
      // Starting from weights, a tensor the model does not have (another
      // head's) is left unused and reported, as from_pretrained does.
      if (scope == LoadScope::Parameters && index < 0) {
        unused.push_back(entry.name);
        continue;
      }
      return fail("tensor '" + entry.name + "' is not a parameter or state "
                  "of this model");
    }
    const TensorInfo &info = program.tensors[index];
    std::vector<int64_t> expectedShape = info.wholeShape();
    if (const QuantizedWeight *weight = program.quantizedWith(index)) {
      std::optional<DType> fileDType = parseSafetensorsDType(entry.dtype);
      if (fileDType && isFloat(*fileDType)) {
        // A 16- or 32-bit weight: quantized as it loads.
        if (scope != LoadScope::Parameters)
          return fail("tensor '" + entry.name + "' is " + entry.dtype +
                      "; this executable keeps it in 4 bits (U8 codes), "
                      "as a checkpoint it saved does (load 16-bit weights "
                      "with --load-weights)");
        if (entry.shape != std::vector<int64_t>{weight->rows, weight->cols})
          return fail("tensor '" + entry.name + "' has shape " +
                      formatShape(entry.shape) + ", the model expects [" +
                      std::to_string(weight->rows) + ", " +
                      std::to_string(weight->cols) + "]");
        for (int32_t part : weight->tensors())
          if (part >= 0) {
            if (found[size_t(part)])
              return fail("tensor '" + info.name +
                          "' is in the checkpoint twice (as 4-bit codes "
                          "and as a weight to quantize?)");
            found[size_t(part)] = true;
          }
        quantizing.push_back({weight, &entry, &file});
        modulesPresent.insert(moduleOf(info.name));
        continue;
      }
      // bitsandbytes saves the codes as [n / 2, 1].
      if (entry.shape == std::vector<int64_t>{expectedShape[0], 1})
        expectedShape = entry.shape;
    }
    // Starting from weights (not resuming), a float parameter may be stored
    // in another float precision: a Hugging Face checkpoint in f16 or
    // bf16, or f32 weights for a 16-bit frozen copy. It is converted
    // (rounding to nearest even); resuming needs the exact dtypes.
    DType stored = info.dtype;
    std::optional<DType> fileDType = parseSafetensorsDType(entry.dtype);
    if (scope == LoadScope::Parameters && info.role == Role::Param &&
        fileDType && isFloat(*fileDType) && isFloat(info.dtype))
      stored = *fileDType;
    if (isFloat(info.dtype) && entry.dtype == "U8")
      for (const char *type : {"nf4", "fp4"})
        if (findEntry(entry.name + ".quant_state.bitsandbytes__" + type)
                .first)
          return fail("tensor '" + entry.name + "' is a bitsandbytes 4-bit "
                      "weight, which this executable stores unquantized; "
                      "compile it with --quantize-frozen=" + type +
                      " to load it");
    status = checkEntry(entry, stored, expectedShape);
    if (!status.ok())
      return fail(status.error);
    if (found[index])
      return fail("tensor '" + info.name + "' is in the checkpoint twice");
    pending.push_back({index, &entry, stored});
    modulesPresent.insert(moduleOf(info.name));
    sourceOf[index] = &file;
    found[index] = true;
  }
  }
  current = path;
  if (scope == LoadScope::Parameters && pending.empty() && quantizing.empty())
    return fail("none of its tensors is a parameter of this model (weights "
                "of another model?)");
  if (scope == LoadScope::Everything) {
    status = checkRunMetadata(parts.front().file->metadata);
    if (!status.ok())
      return fail(status.error);
  }
  if (scope == LoadScope::Adapters && program.adapters.empty())
    return fail("the model has no LoRA adapters (compile it with --lora)");
  std::vector<std::string> fresh;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (!isCheckpointed(info) || found[i])
      continue;
    if (scope == LoadScope::Parameters && info.role == Role::Param &&
        !adapterTensor[i] && !modulesPresent.count(moduleOf(info.name))) {
      fresh.push_back(info.name);
      continue;
    }
    // Starting from base weights, LoRA adapters keep their initialisation.
    bool needed = scope == LoadScope::Adapters
                      ? bool(adapterTensor[i])
                  : scope == LoadScope::Everything
                      ? true
                      : info.role == Role::Param && !adapterTensor[i];
    if (needed)
      return fail("tensor '" + info.name + "' is missing");
  }
  if (report) {
    report->fresh = fresh;
    // The optimizer state of an unused tensor (`<name>.exp_avg`, ...) is
    // not listed apart from it.
    std::set<std::string> unusedNames(unused.begin(), unused.end());
    for (const std::string &name : unused) {
      bool state = false;
      for (size_t dot = name.find('.'); !state && dot != std::string::npos;
           dot = name.find('.', dot + 1))
        state = unusedNames.count(name.substr(0, dot)) != 0;
      if (!state)
        report->unused.push_back(name);
    }
  }
  if (provided) {
    provided->assign(program.tensors.size(), false);
    for (const Pending &item : pending)
      (*provided)[size_t(item.index)] = true;
    for (const Quantizing &item : quantizing)
      for (int32_t part : item.weight->tensors())
        if (part >= 0)
          (*provided)[size_t(part)] = true;
    for (const auto &[index, value] : offsets)
      (*provided)[size_t(index)] = true;
    return Status::success();
  }
  // The data, read straight into each tensor's place (or, to convert its
  // dtype, through a bounded buffer per reader), checked there. A failure
  // leaves the session's tensors partly loaded; the caller discards it.
  std::map<const SafetensorsFile *, size_t> partOf;
  for (size_t i = 0; i < parts.size(); ++i)
    partOf.emplace(parts[i].file, i);
  auto partPathOf = [&](const SafetensorsFile *file) {
    return parts[partOf.at(file)].path;
  };
  std::vector<LoadPiece> pieces;
  pieces.reserve(pending.size());
  for (const Pending &item : pending) {
    const TensorInfo &info = program.tensors[item.index];
    TensorRef view = session.hostView(item.index);
    int64_t first =
        info.partStart(program.partOf(session.communicator().rank()));
    int64_t n = view.numElements();
    if (info.isShard()) {
      std::memset(view.data, 0, view.numBytes());
      n = std::min(n, info.wholeElements() - first);
    }
    LoadPiece piece{item.index,
                    item.entry,
                    sourceOf[item.index],
                    partOf.at(sourceOf[item.index]),
                    item.stored,
                    first,
                    n};
    if (item.stored == view.dtype) {
      // Read in place: one piece (a reader reads at most kLoadPieceBytes
      // at a time, but the bytes of one piece are contiguous).
      pieces.push_back(piece);
      continue;
    }
    int64_t perPiece = int64_t(kLoadPieceBytes / dtypeSize(item.stored));
    for (int64_t at = first; at < first + n; at += perPiece) {
      piece.first = at;
      piece.count = std::min(perPiece, first + n - at);
      pieces.push_back(piece);
    }
  }
  // In the files' order: each shard read front to back.
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const LoadPiece &x, const LoadPiece &y) {
                     if (x.part != y.part)
                       return x.part < y.part;
                     return x.entry->begin + x.first <
                            y.entry->begin + y.first;
                   });
  status = loadPieces(session, pieces);
  if (!status.ok())
    return fail(status.error);
  // Only what was loaded goes to the backend: the rest already matches
  // the mirror (startRun's initialisation pushed it).
  std::vector<int32_t> loaded;
  loaded.reserve(pending.size());
  for (const Pending &item : pending)
    loaded.push_back(item.index);
  for (const Quantizing &item : quantizing) {
    current = partPathOf(item.file);
    status = quantizeEntry(session, *item.weight, *item.file, *item.entry);
    if (!status.ok())
      return fail(status.error);
    for (int32_t part : item.weight->tensors())
      if (part >= 0)
        loaded.push_back(part);
  }
  current = path;
  for (const auto &[index, value] : offsets) {
    *static_cast<float *>(session.hostView(index).data) = value;
    loaded.push_back(index);
  }
  if (metadata)
    *metadata = parts.front().file->metadata;
  settleStatePadding(session, loaded);
  return session.pushTensors(std::move(loaded));
}

Status startRun(Session &session, const StartFiles &files, uint64_t seed,
                StartPoint &point) {
  point = StartPoint();
  // What the files about to be loaded provide is not drawn first.
  std::vector<bool> provided;
  auto provides = [&](const std::string &path, LoadScope scope) -> Status {
    if (path.empty())
      return Status::success();
    std::vector<bool> part;
    TGC_RETURN_IF_ERROR(checkpointProvides(session, path, scope, part));
    provided.resize(part.size(), false);
    for (size_t i = 0; i < part.size(); ++i)
      provided[i] = provided[i] || part[i];
    return Status::success();
  };
  TGC_RETURN_IF_ERROR(provides(files.resume, LoadScope::Everything));
  TGC_RETURN_IF_ERROR(provides(files.weights, LoadScope::Parameters));
  TGC_RETURN_IF_ERROR(provides(files.adapters, LoadScope::Adapters));
  TGC_RETURN_IF_ERROR(
      session.initialize(seed, provided.empty() ? nullptr : &provided));

  const Program &program = session.program();
  if (!files.resume.empty()) {
    std::map<std::string, std::string> metadata;
    TGC_RETURN_IF_ERROR(loadCheckpoint(session, files.resume,
                                       LoadScope::Everything, &metadata));
    TGC_RETURN_IF_ERROR(checkLoraMetadata(
        program, metadata, "tgc.", "checkpoint '" + files.resume + "'"));
    // Batches already consumed (skipped steps consume one too, so this can
    // exceed the optimizer's step count); loadCheckpoint checked the
    // numbers to be integers in [0, 2^62].
    auto number = [&](const char *key, int64_t &value) -> Status {
      auto it = metadata.find(key);
      if (it == metadata.end())
        return Status::success();
      errno = 0;
      char *end = nullptr;
      long long parsed = std::strtoll(it->second.c_str(), &end, 10);
      if (it->second.empty() || *end || errno || parsed < 0)
        return Status::failure("checkpoint '" + files.resume + "' has a bad " +
                               key);
      value = parsed;
      return Status::success();
    };
    point.step = session.stepCount();
    TGC_RETURN_IF_ERROR(number("tgc.step", point.step));
    TGC_RETURN_IF_ERROR(number("tgc.batch", point.batch));
    if (metadata.count("tgc.seed")) {
      int64_t saved = 0;
      TGC_RETURN_IF_ERROR(number("tgc.seed", saved));
      point.seed = uint64_t(saved);
    }
    // The learning rate is optimizer state (as in torch.optim's state
    // dict): a resumed run continues with the checkpoint's.
    int32_t lrTensor = program.findPersistent("optimizer.lr");
    if (lrTensor >= 0 &&
        program.tensors[lrTensor].init == InitKind::Constant) {
      double lr = 0.0;
      TGC_RETURN_IF_ERROR(session.readScalar(lrTensor, lr));
      point.lr = lr;
      point.compiledLr = program.tensors[lrTensor].initA;
    }
  } else if (!files.weights.empty()) {
    TGC_RETURN_IF_ERROR(loadCheckpoint(session, files.weights,
                                       LoadScope::Parameters, nullptr,
                                       &point.weights));
  }
  // Frozen copies (a preference loss's reference) of the parameters as
  // they start, where no file provided them.
  std::vector<int32_t> copied;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &copy = program.tensors[i];
    if (copy.copyOf.empty() || (i < provided.size() && provided[i]))
      continue;
    TensorRef to = session.hostView(int32_t(i));
    TensorRef from = session.hostView(program.findPersistent(copy.copyOf));
    std::memcpy(to.data, from.data, size_t(to.numBytes()));
    copied.push_back(int32_t(i));
  }
  if (!copied.empty())
    TGC_RETURN_IF_ERROR(session.pushTensors(std::move(copied)));
  if (!files.adapters.empty()) {
    // The adapters' own rank and alpha: adapter_config.json in a PEFT
    // directory, the metadata of a single file.
    TGC_RETURN_IF_ERROR(checkAdapterConfiguration(program, files.adapters));
    std::map<std::string, std::string> metadata;
    TGC_RETURN_IF_ERROR(loadCheckpoint(session, files.adapters,
                                       LoadScope::Adapters, &metadata));
    TGC_RETURN_IF_ERROR(checkLoraMetadata(
        program, metadata, "", "adapter file '" + files.adapters + "'"));
  }
  return Status::success();
}

} // namespace tgc::rt
