//===- UserFiles.h - what a tool may write, and where ------------*- C++ -*-===//
//
// Shared by every tool (tgc-compile, tgc-run, tgc-models, tgc-opt): the
// rules that keep what the user has from being overwritten by a mistake on
// the command line.
//
//  - reopenClosedStandardStreams: a tool started with a standard stream
//    closed (`2>&-`) would otherwise hand that descriptor to the first file
//    it opens, and its messages would land in the user's output file.
//  - checkDistinctFiles: no output names an input (the same file by device
//    and inode, whatever path, link or hard link names it) or another
//    output (by resolved path where the file does not exist yet).
//
// Plain C++ and POSIX (no MLIR, no LLVM), header only.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_USERFILES_H
#define TGC_SUPPORT_USERFILES_H

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tgc {

/// Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed, so
/// that no file the tool opens later takes a standard stream's number.
/// Call first thing in main.
inline void reopenClosedStandardStreams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF)
      continue;
    // open returns the lowest free descriptor: this one.
    int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

/// A file a tool reads or writes, and the option that names it ("--save",
/// "the executable").
struct NamedFile {
  std::string option;
  std::string path;
};

namespace detail {
/// What identifies a file: device and inode when it exists, else the path
/// with its directory resolved (links and `..` followed).
struct FileKey {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string resolved;
};

inline FileKey fileKeyOf(const std::string &path) {
  FileKey key;
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) {
    key.exists = true;
    key.device = info.st_dev;
    key.inode = info.st_ino;
  }
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer)) {
    key.resolved = buffer;
    return key;
  }
  // Not there yet: resolve its directory.
  size_t slash = path.find_last_of('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  std::string name =
      slash == std::string::npos ? path : path.substr(slash + 1);
  if (::realpath(directory.c_str(), buffer))
    key.resolved = std::string(buffer) + (buffer[1] ? "/" : "") + name;
  else
    key.resolved = path;
  return key;
}

inline bool sameFile(const FileKey &a, const FileKey &b) {
  if (a.exists && b.exists)
    return a.device == b.device && a.inode == b.inode;
  return !a.exists && !b.exists && a.resolved == b.resolved;
}
} // namespace detail

/// Returns "" when every output is a file of its own: none names one of
/// `inputs` (which exist) or another output. Otherwise an error naming the
/// two options. Empty paths and "-" (a standard stream) are skipped.
inline std::string checkDistinctFiles(const std::vector<NamedFile> &inputs,
                                      const std::vector<NamedFile> &outputs) {
  auto skipped = [](const NamedFile &file) {
    return file.path.empty() || file.path == "-";
  };
  std::vector<detail::FileKey> inputKeys, outputKeys;
  for (const NamedFile &input : inputs)
    inputKeys.push_back(skipped(input) ? detail::FileKey()
                                       : detail::fileKeyOf(input.path));
  for (const NamedFile &output : outputs)
    outputKeys.push_back(skipped(output) ? detail::FileKey()
                                         : detail::fileKeyOf(output.path));
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (skipped(outputs[o]))
      continue;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!skipped(inputs[i]) && inputKeys[i].exists &&
          detail::sameFile(outputKeys[o], inputKeys[i]))
        return outputs[o].option + " '" + outputs[o].path +
               "' would overwrite " + inputs[i].option +
               (inputs[i].path == outputs[o].path
                    ? ""
                    : " '" + inputs[i].path + "'") +
               "; write it to another file";
    for (size_t p = 0; p < o; ++p)
      if (!skipped(outputs[p]) &&
          detail::sameFile(outputKeys[o], outputKeys[p]))
        return outputs[p].option + " and " + outputs[o].option +
               " name the same file '" + outputs[o].path +
               "'; each output needs its own";
  }
  return "";
}

} // namespace tgc

#endif // TGC_SUPPORT_USERFILES_H
