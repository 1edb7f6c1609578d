//===- Safetensors.cpp - reading safetensors files ------------------------===//

#include "Safetensors.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace tgc::rt {
namespace {

/// A minimal JSON reader for safetensors headers.
class Json {
public:
  struct Value {
    enum Kind { Null, Number, String, Array, Object } kind = Null;
    double number = 0;
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
    // A number (integers only appear in safetensors headers).
    size_t start = pos;
    while (pos < text.size() &&
           (std::isdigit((unsigned char)text[pos]) || text[pos] == '-' ||
            text[pos] == '+' || text[pos] == '.' || text[pos] == 'e' ||
            text[pos] == 'E'))
      ++pos;
    if (start == pos)
      return false;
    value.kind = Value::Number;
    value.number = std::strtod(text.substr(start, pos - start).c_str(), nullptr);
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

Status readSafetensors(const std::string &path, SafetensorsFile &file) {
  auto fail = [&](const std::string &message) {
    return Status::failure("'" + path + "': " + message);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("cannot open it");
  file = SafetensorsFile();
  file.bytes.assign(std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>());
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
  for (auto &[name, value] : header.object) {
    if (name == "__metadata__") {
      for (auto &[key, item] : value.object)
        file.metadata[key] = item.string;
      continue;
    }
    const Json::Value *dtype = value.get("dtype");
    const Json::Value *shape = value.get("shape");
    const Json::Value *offsets = value.get("data_offsets");
    if (!dtype || !shape || !offsets || offsets->array.size() != 2 ||
        dtype->kind != Json::Value::String)
      return fail("tensor '" + name + "' has a malformed entry");
    SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = dtype->string;
    uint64_t elements = 1;
    for (const Json::Value &d : shape->array) {
      if (d.kind != Json::Value::Number || d.number < 0 || d.number > 1e15)
        return fail("tensor '" + name + "' has a malformed shape");
      entry.shape.push_back(int64_t(d.number));
      elements *= uint64_t(d.number);
    }
    double begin = offsets->array[0].number, end = offsets->array[1].number;
    if (!(begin >= 0 && end >= begin && end <= double(dataSize)))
      return fail("tensor '" + name + "' has data offsets outside the file");
    entry.begin = uint64_t(begin);
    entry.end = uint64_t(end);
    uint64_t elementSize = entry.dtype == "F32" || entry.dtype == "I32" ? 4
                           : entry.dtype == "F16" || entry.dtype == "BF16" ? 2
                           : entry.dtype == "I64" ? 8
                                                  : 1;
    if (entry.end - entry.begin != elements * elementSize)
      return fail("tensor '" + name + "' has " +
                  std::to_string(entry.end - entry.begin) +
                  " bytes of data, its shape needs " +
                  std::to_string(elements * elementSize));
    file.entries.push_back(std::move(entry));
  }
  return Status::success();
}

} // namespace tgc::rt
