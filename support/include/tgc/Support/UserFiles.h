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
//    output (by resolved path where the file does not exist yet). An input
//    that is a directory (a Hugging Face model or adapter directory) counts
//    as every file its reader reads or looks for there; an output that is
//    a directory (--save-hf) as the files of it that the save writes,
//    replaces or removes. So `--save in/model.safetensors`
//    with `--load-weights in` is refused like `--save in.safetensors` with
//    `--load-weights in.safetensors`.
//
// Plain C++ and POSIX (no MLIR, no LLVM), header only.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_USERFILES_H
#define TGC_SUPPORT_USERFILES_H

#include <cerrno>
#include <climits>
#include <dirent.h>
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
///
/// When `path` is (or, for an output, will be) a directory, it stands for
/// the names in `within`, whether or not they exist yet, and every entry
/// for which `owns` returns true: for an input, the files its reader reads
/// or looks for (a model directory's config.json, weights, index and the
/// shards it names); for an output, the files the save writes, replaces or
/// removes. Other entries are neither (a metrics file written beside the
/// weights last time is not an input this time).
struct NamedFile {
  std::string option;
  std::string path;
  std::vector<std::string> within = {};
  bool (*owns)(const std::string &name) = nullptr;
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

inline FileKey fileKeyOf(std::string path) {
  // "out/" names what "out" names.
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
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

inline bool isDirectory(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// One file of a NamedFile: its key and how to name it in an error ("" when
/// it is the NamedFile's path itself).
struct ExpandedFile {
  FileKey key;
  std::string member;
};

/// The files `file` stands for: itself, or the entries of a directory as
/// the struct's comment says. `input` chooses the rule.
inline std::vector<ExpandedFile> expand(const NamedFile &file, bool input) {
  std::vector<ExpandedFile> files;
  bool directory = isDirectory(file.path);
  if (!directory && (input || file.within.empty())) {
    files.push_back({fileKeyOf(file.path), ""});
    return files;
  }
  // An output directory is also itself: no other output may be a file of
  // that name.
  if (!input)
    files.push_back({fileKeyOf(file.path), ""});
  std::vector<std::string> names = file.within;
  if (DIR *dir = ::opendir(file.path.c_str())) {
    while (struct dirent *item = ::readdir(dir)) {
      std::string name = item->d_name;
      if (name != "." && name != ".." && file.owns && file.owns(name))
        names.push_back(name);
    }
    ::closedir(dir);
  }
  std::string prefix = file.path + (file.path.back() == '/' ? "" : "/");
  for (const std::string &name : names)
    files.push_back({fileKeyOf(prefix + name), prefix + name});
  return files;
}
} // namespace detail

/// Returns "" when every output is a file of its own: none names a file of
/// `inputs` or of another output (directories expanded as NamedFile
/// says). Otherwise an error naming the two options and, inside a
/// directory, the file. Empty paths and "-" (a standard stream) are
/// skipped.
inline std::string checkDistinctFiles(const std::vector<NamedFile> &inputs,
                                      const std::vector<NamedFile> &outputs) {
  auto skipped = [](const NamedFile &file) {
    return file.path.empty() || file.path == "-";
  };
  auto expandAll = [&](const std::vector<NamedFile> &files, bool input) {
    std::vector<std::vector<detail::ExpandedFile>> expanded;
    for (const NamedFile &file : files)
      expanded.push_back(skipped(file) ? std::vector<detail::ExpandedFile>()
                                       : detail::expand(file, input));
    return expanded;
  };
  std::vector<std::vector<detail::ExpandedFile>> inputFiles =
      expandAll(inputs, true);
  std::vector<std::vector<detail::ExpandedFile>> outputFiles =
      expandAll(outputs, false);
  // "--save-hf 'out' would replace 'out/config.json', a file of
  // --load-weights 'out'".
  auto clash = [](const NamedFile &output, const detail::ExpandedFile &written,
                  const NamedFile &input, const detail::ExpandedFile &read) {
    std::string owner = read.member.empty() ? ""
                                            : "a file of " + input.option +
                                                  " '" + input.path + "'";
    std::string target = output.option + " '" + output.path + "'";
    if (written.member.empty())
      return target + " would overwrite " +
             (!owner.empty()              ? owner
              : input.path == output.path ? input.option
                                          : input.option + " '" + input.path +
                                                "'") +
             "; write it to another file";
    return target + " would replace '" + written.member + "', " +
           (owner.empty() ? "which is " + input.option : owner) +
           "; write it to another directory";
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (const detail::ExpandedFile &written : outputFiles[o]) {
      for (size_t i = 0; i < inputs.size(); ++i)
        for (const detail::ExpandedFile &read : inputFiles[i]) {
          // A named input file must exist to be clobbered; a file a reader
          // looks for inside a directory counts even before it exists.
          if (!read.key.exists && read.member.empty())
            continue;
          if (detail::sameFile(written.key, read.key))
            return clash(outputs[o], written, inputs[i], read);
        }
      for (size_t p = 0; p < o; ++p)
        for (const detail::ExpandedFile &other : outputFiles[p])
          if (detail::sameFile(written.key, other.key))
            return outputs[p].option + " and " + outputs[o].option +
                   " name the same file '" +
                   (written.member.empty() ? outputs[o].path
                                           : written.member) +
                   "'; each output needs its own";
    }
  }
  return "";
}

} // namespace tgc

#endif // TGC_SUPPORT_USERFILES_H
