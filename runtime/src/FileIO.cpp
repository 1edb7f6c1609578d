//===- FileIO.cpp - reading and replacing users' files ---------------------===//

#include "FileIO.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::rt {

static std::string describeKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISFIFO(mode))
    return "a pipe";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

Status readRegularFile(const std::string &path, std::vector<char> &bytes,
                       uint64_t maxBytes) {
  bytes.clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::failure("cannot open '" + path +
                           "': " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    return Status::failure("cannot read '" + path +
                           "': " + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::failure("'" + path + "' is " + describeKind(info.st_mode) +
                           ", not a file");
  }
  uint64_t size = uint64_t(info.st_size);
  if (size > maxBytes) {
    ::close(fd);
    return Status::failure("'" + path + "' is " + std::to_string(size) +
                           " bytes, more than the " +
                           std::to_string(maxBytes) +
                           " this kind of file may have");
  }
  bytes.resize(size_t(size));
  uint64_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, bytes.data() + done, size_t(size - done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      int error = got < 0 ? errno : 0;
      ::close(fd);
      bytes.clear();
      return Status::failure(
          "cannot read '" + path + "': " +
          (error ? std::strerror(error) : "it shrank while being read"));
    }
    done += uint64_t(got);
  }
  ::close(fd);
  return Status::success();
}

Status checkReplaceable(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return errno == ENOENT
               ? Status::success()
               : Status::failure("cannot write '" + path +
                                 "': " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return Status::failure("refusing to replace '" + path + "': it is " +
                           describeKind(info.st_mode) + ", not a file");
  return Status::success();
}

} // namespace tgc::rt
