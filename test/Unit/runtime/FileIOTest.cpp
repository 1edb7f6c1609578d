//===- FileIOTest.cpp - reading files that change underneath --------------===//
//
// Weights are read from their file piece by piece, as they are loaded: a
// file truncated after it was opened (another process rewriting it, a full
// disk) must give an error that names it, not a crash (SIGBUS is what an
// mmap'd read would give) or a tensor of stale bytes.
//
//===----------------------------------------------------------------------===//

#include "FileIO.h"
#include "Safetensors.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace tgc::rt;

namespace {

std::string tempPath(const char *name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/tgc-fileio-" +
         std::to_string(getpid()) + "-" + name;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  ASSERT_EQ(std::fclose(file), 0);
}

TEST(FileIOTest, ReadAtAFileTruncatedWhileOpen) {
  std::string path = tempPath("plain");
  writeFile(path, std::string(1 << 20, 'x'));
  std::unique_ptr<RegularFile> file;
  ASSERT_TRUE(RegularFile::open(path, 1 << 30, file).ok());
  EXPECT_EQ(file->size, uint64_t(1) << 20);
  ASSERT_EQ(truncate(path.c_str(), 1000), 0);
  std::vector<char> bytes(1 << 20);
  Status status = file->readAt(0, bytes.data(), bytes.size());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error.find(path), std::string::npos) << status.error;
  EXPECT_NE(status.error.find("ended at byte 1000"), std::string::npos)
      << status.error;
  std::remove(path.c_str());
}

// Written in place while open (same size, other bytes): the read itself
// cannot tell, the check after it can; a file replaced by a rename is not
// the open one, which stays whole and unchanged.
TEST(FileIOTest, AFileWrittenWhileOpenIsNoticed) {
  std::string path = tempPath("written");
  writeFile(path, std::string(4096, 'x'));
  std::unique_ptr<RegularFile> file;
  ASSERT_TRUE(RegularFile::open(path, 1 << 30, file).ok());
  EXPECT_TRUE(file->checkUnchanged().ok());
  struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 123}};
  std::FILE *writer = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(writer, nullptr);
  ASSERT_EQ(std::fwrite("yy", 1, 2, writer), 2u);
  ASSERT_EQ(std::fclose(writer), 0);
  // (A new modification time, whatever the clock's resolution.)
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  Status status = file->checkUnchanged();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error.find(path), std::string::npos) << status.error;
  EXPECT_NE(status.error.find("was written while it was read"),
            std::string::npos)
      << status.error;

  std::unique_ptr<RegularFile> old;
  ASSERT_TRUE(RegularFile::open(path, 1 << 30, old).ok());
  std::string replacement = tempPath("replacement");
  writeFile(replacement, std::string(100, 'z'));
  ASSERT_EQ(std::rename(replacement.c_str(), path.c_str()), 0);
  EXPECT_TRUE(old->checkUnchanged().ok());
  std::vector<char> bytes(4096);
  EXPECT_TRUE(old->readAt(0, bytes.data(), bytes.size()).ok());
  EXPECT_EQ(bytes[0], 'y');
  std::remove(path.c_str());
}

TEST(FileIOTest, SafetensorsTruncatedAfterItsHeaderWasRead) {
  std::string header =
      R"({"w":{"dtype":"F32","shape":[1000],"data_offsets":[0,4000]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[size_t(i)] = char((header.size() >> (8 * i)) & 0xFF);
  bytes += header + std::string(4000, '\0');
  std::string path = tempPath("weights.safetensors");
  writeFile(path, bytes);
  SafetensorsFile file;
  ASSERT_TRUE(readSafetensors(path, file).ok());
  ASSERT_EQ(file.entries.size(), 1u);
  // Only the header was read.
  EXPECT_EQ(file.bytes.size(), 8 + header.size());
  std::vector<float> values(1000);
  EXPECT_TRUE(file.read(file.entries[0], 0, values.data(), 4000).ok());
  ASSERT_EQ(truncate(path.c_str(), 8 + header.size() + 100), 0);
  Status status = file.read(file.entries[0], 0, values.data(), 4000);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error.find("truncated while being read"),
            std::string::npos)
      << status.error;
  // Opened again, the short file is refused by its header check.
  SafetensorsFile again;
  Status reopened = readSafetensors(path, again);
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.error.find("outside the file"), std::string::npos)
      << reopened.error;
  std::remove(path.c_str());
}

} // namespace
