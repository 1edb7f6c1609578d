//===- Safetensors.cpp - reading safetensors files ------------------------===//

#include "Safetensors.h"

#include <cctype>
#include <cstdlib>
#include "FileIO.h"
#include "tgc/Support/CheckedMath.h"

#include <algorithm>
#include <climits>

namespace tgc::rt {
namespace {

/// A minimal JSON reader for safetensors headers.
class Json {
public:
  struct Value {
    enum Kind { Null, Number, String, Array, Object } kind = Null;
    int64_t number = 0; // exact, >= 0
    std::string string;
    std::vector<Value> array;
    std::vector<std::pair<std::string, Value>> object;
    const Value *get(const std::string &key) const {
      for (auto &[k, v] : object)
        if (k == key)
          return &v;
      return nullptr;
    }
  };

  explicit Json(const std::string &text) : text(text) {}

  bool parse(Value &value) {
    if (!parseValue(value, 0))
      return false;
    skipSpace();
    return pos == text.size();
  }

private:
  void skipSpace() {
    while (pos < text.size() && std::isspace((unsigned char)text[pos]))
      ++pos;
  }
  bool parseString(std::string &out) {
    if (pos >= text.size() || text[pos] != '"')
      return false;
    ++pos;
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\') {
        if (++pos >= text.size())
          return false;
        char c = text[pos];
        if (c == 'u')
          return false; // names here are plain ASCII
        out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
      } else {
        out.push_back(text[pos]);
      }
      ++pos;
    }
    if (pos >= text.size())
      return false;
    ++pos;
    return true;
  }
  bool parseValue(Value &value, int depth) {
    if (depth > 8)
      return false;
    skipSpace();
    if (pos >= text.size())
      return false;
    char c = text[pos];
    if (c == '"') {
      value.kind = Value::String;
      return parseString(value.string);
    }
    if (c == '{' || c == '[') {
      bool object = c == '{';
      value.kind = object ? Value::Object : Value::Array;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == (object ? '}' : ']')) {
        ++pos;
        return true;
      }
      while (true) {
        skipSpace();
        std::string key;
        if (object) {
          if (!parseString(key))
            return false;
          skipSpace();
          if (pos >= text.size() || text[pos++] != ':')
            return false;
        }
        Value element;
        if (!parseValue(element, depth + 1))
          return false;
        if (object)
          value.object.emplace_back(std::move(key), std::move(element));
        else
          value.array.push_back(std::move(element));
        skipSpace();
        if (pos >= text.size())
          return false;
        if (text[pos] == ',') {
          ++pos;
          continue;
        }
        if (text[pos] == (object ? '}' : ']')) {
          ++pos;
          return true;
        }
        return false;
      }
    }
    // A number. Safetensors headers hold only non-negative integers
    // (shapes, offsets); they are read exactly, and anything else (a sign,
    // a fraction, an exponent, more than 63 bits) is refused.
    if (!std::isdigit((unsigned char)c))
      return false;
    value.kind = Value::Number;
    uint64_t number = 0;
    while (pos < text.size() && std::isdigit((unsigned char)text[pos])) {
      unsigned digit = unsigned(text[pos++] - '0');
      if (number > (uint64_t(INT64_MAX) - digit) / 10)
        return false;
      number = number * 10 + digit;
    }
    if (pos < text.size() && (text[pos] == '.' || text[pos] == 'e' ||
                              text[pos] == 'E'))
      return false;
    value.number = int64_t(number);
    return true;
  }

  const std::string &text;
  size_t pos = 0;
};


std::string formatShape(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

} // namespace

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
  if (file.bytes.size() < 8)
    return fail("too short to be a safetensors file");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(file.bytes[i])) << (8 * i);
  if (length > file.bytes.size() - 8 || length > (100u << 20))
    return fail("the header length is larger than the file");
  std::string headerText(file.bytes.data() + 8, length);
  Json::Value header;
  if (!Json(headerText).parse(header) || header.kind != Json::Value::Object)
    return fail("the header is not valid JSON");
  file.dataStart = 8 + length;
  uint64_t dataSize = file.bytes.size() - file.dataStart;
  std::map<std::string, bool> seen;
  for (auto &[name, value] : header.object) {
    if (seen[name])
      return fail("the header names '" + name + "' twice");
    seen[name] = true;
    if (name == "__metadata__") {
      if (value.kind != Json::Value::Object)
        return fail("__metadata__ is not a map of strings");
      for (auto &[key, item] : value.object) {
        if (item.kind != Json::Value::String)
          return fail("__metadata__ entry '" + key + "' is not a string");
        file.metadata[key] = item.string;
      }
      continue;
    }
    const Json::Value *dtype = value.get("dtype");
    const Json::Value *shape = value.get("shape");
    const Json::Value *offsets = value.get("data_offsets");
    if (value.kind != Json::Value::Object || !dtype || !shape || !offsets ||
        shape->kind != Json::Value::Array ||
        offsets->kind != Json::Value::Array || offsets->array.size() != 2 ||
        dtype->kind != Json::Value::String ||
        offsets->array[0].kind != Json::Value::Number ||
        offsets->array[1].kind != Json::Value::Number)
      return fail("tensor '" + name + "' has a malformed entry");
    SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = dtype->string;
    int64_t elementBytes = safetensorsElementBytes(entry.dtype);
    if (!elementBytes)
      return fail("tensor '" + name + "' has the unknown dtype '" +
                  entry.dtype + "'");
    for (const Json::Value &d : shape->array) {
      if (d.kind != Json::Value::Number)
        return fail("tensor '" + name + "' has a malformed shape");
      entry.shape.push_back(d.number);
    }
    std::optional<int64_t> bytes =
        checkedTensorBytes(entry.shape, elementBytes);
    if (!bytes)
      return fail("tensor '" + name + "' has a shape too large for any "
                  "tensor");
    int64_t begin = offsets->array[0].number, end = offsets->array[1].number;
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

Status readSafetensors(const std::string &path, SafetensorsFile &file) {
  file = SafetensorsFile();
  // 1 TiB: larger than any checkpoint tgc writes; the point is to refuse
  // devices and unbounded streams before reading them.
  Status status = readRegularFile(path, file.bytes, uint64_t(1) << 40);
  if (!status.ok())
    return status;
  return parseSafetensors(path, file);
}

} // namespace tgc::rt
