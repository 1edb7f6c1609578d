//===- TGXFile.h - the .tgx file around the FlatBuffers program -*- C++ -*-===//
//
// A .tgx file is the FlatBuffers `Program` of tgx.fbs followed by a 16-byte
// trailer: the magic "TGXC", four zero bytes, and the 64-bit FNV-1a hash of
// every byte before the trailer (little-endian). The hash catches a file
// changed after compilation (bit rot, a truncated copy, an edit that
// reorders instructions into a valid but different program) before the
// runtime trusts a byte of it. Shared by the compiler (writer) and the
// runtime (reader); no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FORMAT_TGXFILE_H
#define TGC_FORMAT_TGXFILE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tgc::tgx {

/// The version of the format, in the Program's `version` field.
constexpr uint32_t kFormatVersion = 4;

constexpr size_t kTrailerSize = 16;
constexpr char kTrailerMagic[4] = {'T', 'G', 'X', 'C'};

/// 64-bit FNV-1a.
inline uint64_t checksum(const uint8_t *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// Appends the trailer over `bytes` (a finished FlatBuffers program).
inline void appendTrailer(std::vector<uint8_t> &bytes) {
  uint64_t hash = checksum(bytes.data(), bytes.size());
  bytes.insert(bytes.end(), kTrailerMagic, kTrailerMagic + 4);
  bytes.insert(bytes.end(), 4, 0);
  for (int i = 0; i < 8; ++i)
    bytes.push_back(uint8_t(hash >> (8 * i)));
}

/// The checksum a trailer records (the file's last 8 bytes): what names
/// an executable's contents.
inline uint64_t storedChecksum(const uint8_t *data, size_t size) {
  uint64_t hash = 0;
  for (int i = 0; i < 8; ++i)
    hash |= uint64_t(data[size - 8 + i]) << (8 * i);
  return hash;
}

/// Checks the trailer of a file of `size` bytes; on success, `payload` is
/// the size of the program before it. Returns nullptr or the reason.
inline const char *checkTrailer(const uint8_t *data, size_t size,
                                size_t &payload) {
  if (size < kTrailerSize ||
      std::memcmp(data + size - kTrailerSize, kTrailerMagic, 4) != 0)
    return "it has no checksum trailer (truncated, or written by an older "
           "tgc-compile: recompile it)";
  payload = size - kTrailerSize;
  if (checksum(data, payload) != storedChecksum(data, size))
    return "its checksum does not match its contents (the file was "
           "changed or damaged after it was compiled)";
  return nullptr;
}

} // namespace tgc::tgx

#endif // TGC_FORMAT_TGXFILE_H
