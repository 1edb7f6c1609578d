//===- Safetensors.cpp - reading safetensors files ------------------------===//

#include "Safetensors.h"

#include <cstring>

#include <cctype>
#include <cstdlib>
#include "FileIO.h"
#include "tgc/Support/CheckedMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>

namespace tgc::rt {
namespace {

using Json = nlohmann::ordered_json;

/// Parses a safetensors header with nlohmann-json, refusing what the format
/// does not allow and the library would accept: a name given twice (the
/// library keeps the last), and nesting deeper than the format's (bounded
/// so that hostile input cannot make the library build a huge tree).
bool parseHeader(const std::string &text, Json &header, std::string &error) {
  std::vector<std::vector<std::string>> keys; // per open object
  bool repeated = false, tooDeep = false;
  auto callback = [&](int depth, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (depth >= 4) {
        tooDeep = true;
        return false;
      }
      if (event == Json::parse_event_t::object_start)
        keys.emplace_back();
      return true;
    case Json::parse_event_t::object_end:
      if (!keys.empty())
        keys.pop_back();
      return true;
    case Json::parse_event_t::key: {
      if (keys.empty())
        return true;
      std::vector<std::string> &seen = keys.back();
      const std::string &key = parsed.get_ref<const std::string &>();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        if (!repeated)
          error = "the header names '" + key + "' twice";
        repeated = true;
      }
      seen.push_back(key);
      return true;
    }
    default:
      return true;
    }
  };
  header = Json::parse(text, callback, /*allow_exceptions=*/false);
  if (header.is_discarded() || tooDeep || !header.is_object()) {
    error = "the header is not valid JSON";
    return false;
  }
  return !repeated;
}

/// A shape or offset: an exact non-negative integer below 2^63 (the
/// library reads a sign, a fraction, an exponent or a larger number as
/// another kind).
bool exactIndex(const Json &value, int64_t &out) {
  if (!value.is_number_unsigned())
    return false;
  uint64_t number = value.get<uint64_t>();
  if (number > uint64_t(INT64_MAX))
    return false;
  out = int64_t(number);
  return true;
}


} // namespace

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

const char *safetensorsDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I8:
    return "I8";
  case DType::I1:
    return "BOOL";
  case DType::U8:
    return "U8";
  }
  return "?";
}

const SafetensorsEntry *SafetensorsFile::find(const std::string &name) const {
  for (const SafetensorsEntry &entry : entries)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

std::optional<DType> parseSafetensorsDType(const std::string &name) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::I64,
                      DType::I32, DType::I8, DType::I1, DType::U8})
    if (name == safetensorsDType(dtype))
      return dtype;
  return std::nullopt;
}

Status checkEntry(const SafetensorsEntry &entry, DType dtype,
                  const std::vector<int64_t> &shape) {
  if (entry.dtype != safetensorsDType(dtype))
    return Status::failure("tensor '" + entry.name + "' has dtype " +
                           entry.dtype + ", the model expects " +
                           safetensorsDType(dtype));
  if (entry.shape != shape)
    return Status::failure("tensor '" + entry.name + "' has shape " +
                           formatShape(entry.shape) +
                           ", the model expects " + formatShape(shape));
  return Status::success();
}

/// The bytes per element of a safetensors dtype name, or 0 when unknown:
/// tgc's own dtypes, and the others a file from elsewhere may hold (their
/// tensors can be skipped, not loaded).
static int64_t safetensorsElementBytes(const std::string &dtype) {
  if (std::optional<DType> known = parseSafetensorsDType(dtype))
    return int64_t(dtypeSize(*known));
  static const std::pair<const char *, int64_t> kForeign[] = {
      {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2},
      {"U32", 4},     {"F64", 8},     {"U64", 8}};
  for (auto &[name, bytes] : kForeign)
    if (dtype == name)
      return bytes;
  return 0;
}

Status parseSafetensors(const std::string &path, SafetensorsFile &file) {
  auto fail = [&](const std::string &message) {
    return Status::failure("'" + path + "': " + message);
  };
  if (!file.source)
    file.size = file.bytes.size();
  if (file.bytes.size() < 8)
    return fail("too short to be a safetensors file");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(file.bytes[i])) << (8 * i);
  if (length > file.bytes.size() - 8 || length > (100u << 20))
    return fail("the header length is larger than the file");
  std::string headerText(file.bytes.data() + 8, length);
  Json header;
  std::string headerError;
  if (!parseHeader(headerText, header, headerError))
    return fail(headerError);
  file.dataStart = 8 + length;
  uint64_t dataSize = file.size - file.dataStart;
  for (auto &[name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object())
        return fail("__metadata__ is not a map of strings");
      for (auto &[key, item] : value.items()) {
        if (!item.is_string())
          return fail("__metadata__ entry '" + key + "' is not a string");
        file.metadata[key] = item.get<std::string>();
      }
      continue;
    }
    auto field = [&](const char *key) -> const Json * {
      if (!value.is_object())
        return nullptr;
      auto it = value.find(key);
      return it == value.end() ? nullptr : &*it;
    };
    const Json *dtype = field("dtype");
    const Json *shape = field("shape");
    const Json *offsets = field("data_offsets");
    int64_t begin = 0, end = 0;
    if (!dtype || !shape || !offsets || !shape->is_array() ||
        !dtype->is_string() || !offsets->is_array() || offsets->size() != 2 ||
        !exactIndex((*offsets)[0], begin) || !exactIndex((*offsets)[1], end))
      return fail("tensor '" + name + "' has a malformed entry");
    SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = dtype->get<std::string>();
    int64_t elementBytes = safetensorsElementBytes(entry.dtype);
    if (!elementBytes)
      return fail("tensor '" + name + "' has the unknown dtype '" +
                  entry.dtype + "'");
    for (const Json &d : *shape) {
      int64_t size = 0;
      if (!exactIndex(d, size))
        return fail("tensor '" + name + "' has a malformed shape");
      entry.shape.push_back(size);
    }
    std::optional<int64_t> bytes =
        checkedTensorBytes(entry.shape, elementBytes);
    if (!bytes)
      return fail("tensor '" + name + "' has a shape too large for any "
                  "tensor");
    if (end < begin || uint64_t(end) > dataSize)
      return fail("tensor '" + name + "' has data offsets outside the file");
    entry.begin = uint64_t(begin);
    entry.end = uint64_t(end);
    if (end - begin != *bytes)
      return fail("tensor '" + name + "' has " + std::to_string(end - begin) +
                  " bytes of data, its shape needs " + std::to_string(*bytes));
    file.entries.push_back(std::move(entry));
  }
  // As the format requires, the tensors tile the data section: no bytes
  // shared by two tensors, none unaccounted for.
  std::vector<const SafetensorsEntry *> order;
  for (const SafetensorsEntry &entry : file.entries)
    order.push_back(&entry);
  std::sort(order.begin(), order.end(),
            [](const SafetensorsEntry *a, const SafetensorsEntry *b) {
              return a->begin != b->begin ? a->begin < b->begin
                                          : a->end < b->end;
            });
  uint64_t covered = 0;
  for (const SafetensorsEntry *entry : order) {
    if (entry->begin != covered)
      return fail("tensor '" + entry->name + "' " +
                  (entry->begin < covered ? "overlaps another tensor's data"
                                          : "leaves a gap before its data"));
    covered = entry->end;
  }
  if (covered != dataSize)
    return fail("the file has " + std::to_string(dataSize - covered) +
                " bytes after its last tensor");
  return Status::success();
}

Status SafetensorsFile::read(const SafetensorsEntry &entry, uint64_t offset,
                             void *into, uint64_t count) const {
  if (count == 0)
    return Status::success();
  uint64_t at = dataStart + entry.begin + offset;
  if (source)
    return source->readAt(at, into, count);
  std::memcpy(into, bytes.data() + at, count);
  return Status::success();
}

Status readSafetensors(const std::string &path, SafetensorsFile &file) {
  file = SafetensorsFile();
  // 1 TiB: larger than any checkpoint tgc writes; the point is to refuse
  // devices and unbounded streams before reading them.
  std::unique_ptr<RegularFile> source;
  Status status = RegularFile::open(path, uint64_t(1) << 40, source);
  if (!status.ok())
    return status;
  // The length and the header now; the data as it is loaded.
  uint64_t length = 0;
  if (source->size >= 8) {
    unsigned char prefix[8];
    status = source->readAt(0, prefix, 8);
    if (!status.ok())
      return status;
    for (int i = 0; i < 8; ++i)
      length |= uint64_t(prefix[i]) << (8 * i);
  }
  uint64_t headerBytes =
      source->size < 8 ? source->size
                       : 8 + std::min(length, std::min<uint64_t>(
                                                  source->size - 8, 100u << 20));
  file.bytes.resize(size_t(headerBytes));
  status = source->readAt(0, file.bytes.data(), headerBytes);
  if (!status.ok())
    return status;
  file.size = source->size;
  file.source = std::move(source);
  return parseSafetensors(path, file);
}

} // namespace tgc::rt
