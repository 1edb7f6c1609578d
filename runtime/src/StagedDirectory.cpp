//===- StagedDirectory.cpp - a directory save that swaps whole -----------===//

#include "StagedDirectory.h"
#include "cpu/Common.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tgc::rt {
namespace {

/// What follows the target's name in a staging directory's.
constexpr const char *kStagingInfix = ".tgc-save.";

std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/"
                                                       : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The entries of `directory` but `.` and `..`; false when it cannot be
/// listed (whole).
bool listEntries(const std::string &directory,
                 std::vector<std::string> &names) {
  names.clear();
  DIR *dir = ::opendir(directory.c_str());
  if (!dir)
    return false;
  errno = 0;
  while (struct dirent *item = ::readdir(dir)) {
    std::string name = item->d_name;
    if (name != "." && name != "..")
      names.push_back(name);
  }
  bool complete = errno == 0;
  ::closedir(dir);
  return complete;
}

std::vector<std::string> entriesOf(const std::string &directory) {
  std::vector<std::string> names;
  listEntries(directory, names);
  return names;
}

/// Whether the save owns `name`: a file it writes, or the temporary file
/// (`NAME.tmp.XXXXXX`) of one.
bool ownedBy(StagedDirectory::Owns owns, const std::string &name) {
  if (owns(name))
    return true;
  size_t at = name.rfind(".tmp.");
  return at != std::string::npos && name.size() == at + 5 + 6 &&
         owns(name.substr(0, at));
}

void syncDirectory(const std::string &directory) {
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Removes from `directory` what may go: at the top, the files the save
/// owns; anywhere, what is a hard link of a file kept elsewhere (a link
/// count above one) and the directories left empty. Everything else is
/// kept and its path added to `kept`. Returns whether `directory` is gone.
bool removeTree(const std::string &directory, StagedDirectory::Owns owns,
                bool top, std::vector<std::string> &kept) {
  std::vector<std::string> names;
  if (!listEntries(directory, names)) {
    kept.push_back(directory);
    return false;
  }
  for (const std::string &name : names) {
    std::string path = directory + "/" + name;
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0)
      continue;
    if (S_ISDIR(info.st_mode)) {
      removeTree(path, owns, false, kept);
      continue;
    }
    if ((top && ownedBy(owns, name)) || info.st_nlink > 1) {
      directorySaveStep();
      ::unlink(path.c_str());
    } else {
      kept.push_back(path);
    }
  }
  if (::rmdir(directory.c_str()) == 0)
    return true;
  if (kept.empty())
    kept.push_back(directory);
  return false;
}

/// Links every entry of `from` (recursively; directories re-created, a
/// symbolic link linked itself) into `into`, skipping at the top the
/// entries the save owns.
Status linkTree(const std::string &from, const std::string &into,
                StagedDirectory::Owns owns, bool top) {
  std::vector<std::string> names;
  if (!listEntries(from, names))
    return Status::failure("cannot keep the files of '" + from +
                           "' in the saved directory (it cannot be listed: " +
                           std::strerror(errno) +
                           "); save into a new directory");
  for (const std::string &name : names) {
    if (top && ownedBy(owns, name))
      continue;
    std::string source = from + "/" + name, copy = into + "/" + name;
    struct stat info;
    if (::lstat(source.c_str(), &info) != 0)
      continue; // removed meanwhile
    directorySaveStep();
    if (S_ISDIR(info.st_mode)) {
      // Writable while it is filled, its own mode after.
      if (::mkdir(copy.c_str(), 0700) != 0)
        return Status::failure("cannot keep the directory '" + source +
                               "' in the saved directory: " +
                               std::strerror(errno));
      TGC_RETURN_IF_ERROR(linkTree(source, copy, owns, false));
      ::chmod(copy.c_str(), info.st_mode & 07777);
      continue;
    }
    if (::linkat(AT_FDCWD, source.c_str(), AT_FDCWD, copy.c_str(), 0) != 0)
      return Status::failure("cannot keep '" + source +
                             "' in the saved directory (a hard link to it "
                             "failed: " +
                             std::strerror(errno) +
                             "); save into a new directory");
  }
  return Status::success();
}

} // namespace

void directorySaveStep() {
  static long count = 0, abortAt = [] {
    const char *text = std::getenv("TGC_TEST_ABORT_AT_SAVE_STEP");
    return text ? std::atol(text) : 0L;
  }();
  if (abortAt > 0 && ++count == abortAt)
    std::abort();
}

StagedDirectory::~StagedDirectory() {
  if (!staging.empty() && !committed) {
    std::vector<std::string> kept;
    removeTree(staging, owns, true, kept);
  }
  if (lockFd >= 0)
    ::close(lockFd);
}

Status StagedDirectory::begin(const std::string &path, Owns ownsName) {
  owns = ownsName;
  target = path;
  while (target.size() > 1 && target.back() == '/')
    target.pop_back();
  struct stat info;
  bool exists = ::stat(target.c_str(), &info) == 0;
  mode_t mode;
  if (exists) {
    if (!S_ISDIR(info.st_mode))
      return Status::failure("cannot save into '" + path +
                             "': it exists and is not a directory");
    // A link to a directory: the directory itself is swapped, the link
    // left as it is.
    char resolved[PATH_MAX];
    if (!::realpath(target.c_str(), resolved))
      return Status::failure("cannot save into '" + path +
                             "': " + std::strerror(errno));
    target = resolved;
    mode = info.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0777 & ~mask;
  }
  std::string parent = parentOf(target), name = baseOf(target);
  if (name.empty() || name == "." || name == ".." || target == "/")
    return Status::failure("cannot save into '" + path +
                           "': name a directory by its own name");
  std::string prefix = "." + name + kStagingInfix;
  // A save killed between the two renames of the fallback left the target
  // absent and the old directory aside (`...-old`): it is put back first.
  if (!exists)
    for (const std::string &entry : entriesOf(parent))
      if (entry.compare(0, prefix.size(), prefix) == 0 &&
          entry.size() > 4 && entry.compare(entry.size() - 4, 4, "-old") == 0 &&
          ::rename((parent + "/" + entry).c_str(), target.c_str()) == 0) {
        exists = ::stat(target.c_str(), &info) == 0;
        mode = info.st_mode & 07777;
        break;
      }
  // Staging directories of saves that died: removed; one that is locked
  // belongs to a save running now.
  std::string newPrefix = "." + name + ".tgc-new.";
  for (const std::string &entry : entriesOf(parent)) {
    bool unnamed = entry.compare(0, newPrefix.size(), newPrefix) == 0;
    if (!unnamed && entry.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string other = parent + "/" + entry;
    int fd = ::open(other.c_str(),
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return Status::failure("cannot save into '" + path +
                             "': another process is saving to it now ('" +
                             other + "' is being written)");
    }
    std::vector<std::string> kept;
    removeTree(other, owns, true, kept);
    ::close(fd);
  }
  // Made under another name and locked before it takes the staging name,
  // so no other save ever sees it unlocked and takes it for a stale one.
  std::string fresh = parent + "/" + newPrefix + "XXXXXX";
  if (!::mkdtemp(fresh.data())) {
    int error = errno;
    staging.clear();
    return Status::failure(
        "cannot save into '" + path + "': the save is written into a new "
        "directory beside it and swapped in whole, but '" + parent +
        "' does not take one (" + std::strerror(error) +
        "); save into a directory inside '" + path + "' instead");
  }
  ::chmod(fresh.c_str(), mode);
  lockFd = ::open(fresh.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lockFd < 0 || ::flock(lockFd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::rmdir(fresh.c_str());
    return Status::failure("cannot save into '" + path +
                           "' (cannot lock its staging directory: " +
                           std::strerror(error) + ")");
  }
  staging = parent + "/" + prefix + fresh.substr(fresh.size() - 6);
  if (::rename(fresh.c_str(), staging.c_str()) != 0) {
    int error = errno;
    ::rmdir(fresh.c_str());
    staging.clear();
    return Status::failure("cannot save into '" + path +
                           "' (cannot name its staging directory: " +
                           std::strerror(error) + ")");
  }
  return Status::success();
}

std::string StagedDirectory::pathOf(const std::string &name) const {
  return staging + "/" + name;
}

Status StagedDirectory::named(Status status) const {
  if (status.ok() || staging.empty())
    return status;
  for (size_t at = status.error.find(staging); at != std::string::npos;
       at = status.error.find(staging, at + target.size()))
    status.error.replace(at, staging.size(), target);
  return status;
}

Status StagedDirectory::commit() {
  struct stat info;
  bool exists = ::lstat(target.c_str(), &info) == 0;
  if (exists)
    TGC_RETURN_IF_ERROR(linkTree(target, staging, owns, true));
  syncDirectory(staging);
  std::string parent = parentOf(target);
  std::string old = staging; // where the old tree ends up
  // Where the working directory is inside the target ("" for the target
  // itself is "/"; empty when outside).
  std::string cwdWithin;
  if (exists) {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) {
      std::string here = cwd;
      if (here == target)
        cwdWithin = "/";
      else if (here.compare(0, target.size() + 1, target + "/") == 0)
        cwdWithin = here.substr(target.size());
    }
  }
  directorySaveStep();
  if (!exists) {
    // (A file system without rename flags, NFS: a plain rename, the target
    // checked absent just before.)
    int moved = ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD,
                            target.c_str(), RENAME_NOREPLACE);
    if (moved != 0 && (errno == EINVAL || errno == ENOSYS) &&
        ::lstat(target.c_str(), &info) != 0 && errno == ENOENT)
      moved = ::rename(staging.c_str(), target.c_str());
    if (moved != 0)
      return Status::failure("cannot move the saved directory into '" +
                             target + "': " + std::strerror(errno));
    committed = true;
    syncDirectory(parent);
    return Status::success();
  }
  // TGC_TEST_NO_RENAME_EXCHANGE: the tests of the fallback below.
  static const bool exchange = !std::getenv("TGC_TEST_NO_RENAME_EXCHANGE");
  if (!exchange ||
      ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(),
                  RENAME_EXCHANGE) != 0) {
    if (!exchange)
      errno = EINVAL;
    if (errno != EINVAL && errno != ENOSYS)
      return Status::failure(
          "cannot swap the saved directory into '" + target + "': " +
          std::strerror(errno) +
          (errno == EBUSY || errno == EXDEV
               ? " (a mount point? save into a directory inside it)"
               : "") +
          "; the previous directory is intact");
    // No exchange on this file system: the old tree aside, then the new
    // one in place.
    old = staging + "-old";
    if (::rename(target.c_str(), old.c_str()) != 0)
      return Status::failure("cannot move the previous '" + target +
                             "' aside: " + std::strerror(errno) +
                             "; it is intact");
    directorySaveStep();
    if (::rename(staging.c_str(), target.c_str()) != 0) {
      int error = errno;
      ::rename(old.c_str(), target.c_str());
      return Status::failure("cannot move the saved directory into '" +
                             target + "': " + std::strerror(error));
    }
  }
  committed = true;
  syncDirectory(parent);
  // A working directory inside the target is now inside the old tree: it
  // follows the target, so later relative paths mean what they meant.
  if (!cwdWithin.empty())
    if (::chdir((target + cwdWithin).c_str()) != 0)
      std::fprintf(stderr, "tgc-run: warning: the working directory '%s' "
                           "is gone after the save\n",
                   (target + cwdWithin).c_str());
  std::vector<std::string> kept;
  if (!removeTree(old, owns, true, kept) && !kept.empty())
    std::fprintf(stderr,
                 "tgc-run: warning: '%s' was written into '%s' during the "
                 "save; it was not kept there but left in '%s'\n",
                 kept.front().c_str(), target.c_str(), old.c_str());
  return Status::success();
}

} // namespace tgc::rt
