//===- FileIO.cpp - reading and replacing users' files ---------------------===//

#include "FileIO.h"

#include "tgc/Support/ReadFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::rt {

RegularFile::~RegularFile() {
  if (fd >= 0)
    ::close(fd);
}

Status RegularFile::open(const std::string &path, uint64_t maxBytes,
                         std::unique_ptr<RegularFile> &file) {
  // The checks every reader of a user's file makes (tgc/Support/ReadFile.h):
  // a regular file (a FIFO is not waited on), of at most maxBytes.
  int fd;
  uint64_t size;
  std::string error = openUserFile(path, maxBytes, fd, size);
  if (!error.empty())
    return Status::failure(error);
  std::unique_ptr<RegularFile> opened(new RegularFile());
  opened->fd = fd;
  opened->path = path;
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status::failure("cannot read '" + path +
                           "': " + std::strerror(errno));
  opened->size = size;
  opened->modifiedSeconds = int64_t(info.st_mtim.tv_sec);
  opened->modifiedNanoseconds = int64_t(info.st_mtim.tv_nsec);
  file = std::move(opened);
  return Status::success();
}

Status RegularFile::readAt(uint64_t offset, void *into, uint64_t count) const {
  char *out = static_cast<char *>(into);
  uint64_t done = 0;
  while (done < count) {
    // At most 1 GiB per call (Linux caps a read at 2 GiB - 4 KiB).
    size_t piece = size_t(std::min<uint64_t>(count - done, uint64_t(1) << 30));
    ssize_t got = ::pread(fd, out + done, piece, off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return Status::failure(
          "cannot read '" + path + "': " +
          (got < 0 ? std::string(std::strerror(errno))
                   : "it ended at byte " + std::to_string(offset + done) +
                         " of the " + std::to_string(size) +
                         " it had when opened (truncated while being "
                         "read?)"));
    done += uint64_t(got);
  }
  return Status::success();
}

Status RegularFile::checkUnchanged() const {
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status::failure("cannot read '" + path +
                           "': " + std::strerror(errno));
  if (uint64_t(info.st_size) != size ||
      int64_t(info.st_mtim.tv_sec) != modifiedSeconds ||
      int64_t(info.st_mtim.tv_nsec) != modifiedNanoseconds)
    return Status::failure(
        "'" + path +
        "' was written while it was read (its size or modification time "
        "changed since it was opened), so what was read may mix old and new "
        "bytes; load it again once it is complete");
  return Status::success();
}

Status readRegularFile(const std::string &path, std::vector<char> &bytes,
                       uint64_t maxBytes) {
  bytes.clear();
  std::unique_ptr<RegularFile> file;
  Status status = RegularFile::open(path, maxBytes, file);
  if (!status.ok())
    return status;
  bytes.resize(size_t(file->size));
  status = file->readAt(0, bytes.data(), file->size);
  if (!status.ok())
    bytes.clear();
  return status;
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
                           describeFileKind(info.st_mode) + ", not a file");
  return Status::success();
}

} // namespace tgc::rt
