//===- ReplayMain.cpp - running a fuzzing harness on saved inputs ---------===//
//
// The harnesses built without libFuzzer (any compiler, any build): each
// argument is a file or a directory of files, each file one input given to
// LLVMFuzzerTestOneInput. The test suite runs the seed corpora and every
// regression input this way, so a crash fixed once stays fixed in every
// build, sanitized or not.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void collect(const std::string &path, std::vector<std::string> &files) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    std::fprintf(stderr, "replay: cannot open '%s'\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(info.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR *dir = opendir(path.c_str());
  std::vector<std::string> names;
  while (dirent *entry = readdir(dir))
    if (entry->d_name[0] != '.')
      names.push_back(entry->d_name);
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names)
    collect(path + "/" + name, files);
}

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
