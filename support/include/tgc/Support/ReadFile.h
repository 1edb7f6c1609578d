//===- ReadFile.h - reading a user's file without trusting it ----*- C++ -*-===//
//
// Every tool and the runtime read the user's small files (config.json, a
// safetensors index, a memory report, a metrics file, a device file) through
// readUserFile: a FIFO would hang the reader and a device such as /dev/zero
// would grow it until the kernel kills the process, so only a regular file
// is read, it is opened without waiting for a writer, and its size is
// checked against a limit for its kind before a byte is allocated. JSON
// text is then checked by checkJSONNesting before any recursive parser or
// walker sees it: a file of a million `[` must be an error, not a stack
// overflow.
//
// Plain C++ and POSIX (no MLIR, no LLVM), header only.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_READFILE_H
#define TGC_SUPPORT_READFILE_H

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc {

/// The limits per kind of file, stated in the errors that enforce them.
/// JSON configuration files (config.json, adapter_config.json, a
/// safetensors index, a device description): the largest real ones are
/// hundreds of KB.
constexpr uint64_t kMaxConfigFileBytes = uint64_t(64) << 20;
/// Reports and metrics written by tgc (a memory report of a large model's
/// step, the metrics of a long run).
constexpr uint64_t kMaxReportFileBytes = uint64_t(1) << 30;
/// How deeply arrays and objects may nest in any JSON tgc reads; tgc's own
/// files nest at most 4 deep and Hugging Face's configurations about 4.
constexpr int kMaxJSONNesting = 64;

/// What `mode` is, for an error ("a pipe").
inline const char *describeFileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISFIFO(mode))
    return "a pipe (FIFO)";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Opens `path` for reading when it is a regular file of at most
/// `maxBytes` bytes: `fd` and `size` are set and "" returned; otherwise an
/// error naming the file, what it is and the limit. Never waits on a FIFO.
inline std::string openUserFile(const std::string &path, uint64_t maxBytes,
                                int &fd, uint64_t &size) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return "cannot open '" + path + "': " + std::strerror(errno);
  struct stat info;
  std::string error;
  if (::fstat(fd, &info) != 0)
    error = "cannot read '" + path + "': " + std::strerror(errno);
  else if (!S_ISREG(info.st_mode))
    error = "'" + path + "' is " + describeFileKind(info.st_mode) +
            ", not a file";
  else if (uint64_t(info.st_size) > maxBytes)
    error = "'" + path + "' is " + std::to_string(uint64_t(info.st_size)) +
            " bytes, more than the " + std::to_string(maxBytes) +
            " a file of this kind may have";
  if (!error.empty()) {
    ::close(fd);
    fd = -1;
    return error;
  }
  // Blocking reads from here on (a regular file never blocks anyway).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size = uint64_t(info.st_size);
  return "";
}

/// Reads the whole of `path` into `contents` under openUserFile's rules.
/// Returns "" or an error naming the file.
inline std::string readUserFile(const std::string &path, uint64_t maxBytes,
                                std::string &contents) {
  contents.clear();
  int fd;
  uint64_t size;
  std::string error = openUserFile(path, maxBytes, fd, size);
  if (!error.empty())
    return error;
  // Read until the end, but never past the limit: a file that grows while
  // it is read is cut off there and refused.
  contents.resize(size_t(size));
  uint64_t done = 0;
  for (;;) {
    if (done == contents.size()) {
      if (done > maxBytes)
        break;
      contents.resize(size_t(std::min<uint64_t>(done + 65536, maxBytes + 1)));
    }
    ssize_t got = ::read(fd, &contents[done], contents.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = "cannot read '" + path + "': " + std::strerror(errno);
      break;
    }
    if (got == 0)
      break;
    done += uint64_t(got);
  }
  ::close(fd);
  if (error.empty() && done > maxBytes)
    error = "'" + path + "' grew past the " + std::to_string(maxBytes) +
            " bytes a file of this kind may have while it was read";
  if (!error.empty()) {
    contents.clear();
    return error;
  }
  contents.resize(size_t(done));
  return "";
}

/// "" when no array or object in the JSON `text` is nested more than
/// `maxDepth` deep (brackets inside strings do not count); otherwise an
/// error giving the byte offset. Linear, with no recursion, so it can run
/// before a recursive parser.
inline std::string checkJSONNesting(std::string_view text,
                                    int maxDepth = kMaxJSONNesting) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return "arrays and objects nest more than " +
               std::to_string(maxDepth) + " deep (at byte " +
               std::to_string(i) + ")";
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return "";
}

/// readUserFile, then checkJSONNesting: "" or an error naming the file.
inline std::string readUserJSONFile(const std::string &path,
                                    uint64_t maxBytes, std::string &contents) {
  std::string error = readUserFile(path, maxBytes, contents);
  if (error.empty()) {
    error = checkJSONNesting(contents);
    if (!error.empty()) {
      error = "'" + path + "' is not JSON tgc reads: " + error;
      contents.clear();
    }
  }
  return error;
}

} // namespace tgc

#endif // TGC_SUPPORT_READFILE_H
