//===- Checkpoint.cpp - safetensors checkpoints ---------------------------===//
//
// A safetensors file is an 8-byte little-endian header length, a JSON
// header mapping names to {dtype, shape, data_offsets} (plus a string map
// __metadata__), then the raw little-endian data. The reader below parses
// just that JSON subset and checks every offset against the file.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Checkpoint.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace tgc::rt {
namespace {

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
  }
  return "?";
}

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool isCheckpointed(const TensorInfo &info) {
  return info.storage == Storage::Persistent &&
         (info.role == Role::Param || info.role == Role::State);
}

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

} // namespace

Status saveCheckpoint(Session &session, const std::string &path,
                      const std::map<std::string, std::string> &metadata) {
  const Program &program = session.program();
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (auto &[key, value] : metadata) {
    header += (first ? "\"" : ",\"") + escape(key) + "\":\"" + escape(value) +
              "\"";
    first = false;
  }
  header += "}";
  std::vector<int32_t> saved;
  int64_t offset = 0;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (!isCheckpointed(info))
      continue;
    header += ",\"" + escape(info.name) + "\":{\"dtype\":\"" +
              safetensorsDType(info.dtype) + "\",\"shape\":[";
    for (size_t d = 0; d < info.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(info.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + info.bytes) + "]}";
    offset += info.bytes;
    saved.push_back(int32_t(i));
  }
  header += "}";
  // The data starts 8-byte aligned, as the format recommends.
  while ((header.size() + 8) % 8 != 0)
    header.push_back(' ');

  std::string temporary = path + ".tmp";
  FILE *file = std::fopen(temporary.c_str(), "wb");
  if (!file)
    return Status::failure("cannot write '" + temporary + "'");
  uint64_t length = header.size();
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = uint8_t(length >> (8 * i));
  bool ok = std::fwrite(prefix, 1, 8, file) == 8 &&
            std::fwrite(header.data(), 1, header.size(), file) == header.size();
  for (int32_t index : saved) {
    TensorRef view = session.view(index);
    ok = ok && std::fwrite(view.data, 1, view.numBytes(), file) ==
                   view.numBytes();
  }
  ok = ok && std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) {
    std::remove(temporary.c_str());
    return Status::failure("could not write the checkpoint '" + path +
                           "' (disk full?); the previous one is intact");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Status::failure("could not move the checkpoint into '" + path +
                           "'");
  }
  return Status::success();
}

Status loadCheckpoint(Session &session, const std::string &path,
                      LoadScope scope,
                      std::map<std::string, std::string> *metadata) {
  auto fail = [&](const std::string &message) {
    return Status::failure("checkpoint '" + path + "': " + message);
  };
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return fail("cannot open it");
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  if (bytes.size() < 8)
    return fail("too short to be a safetensors file");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  if (length > bytes.size() - 8 || length > (100u << 20))
    return fail("the header length is larger than the file");
  std::string headerText(bytes.data() + 8, length);
  Json::Value header;
  if (!Json(headerText).parse(header) || header.kind != Json::Value::Object)
    return fail("the header is not valid JSON");
  const char *data = bytes.data() + 8 + length;
  uint64_t dataSize = bytes.size() - 8 - length;

  const Program &program = session.program();
  struct Pending {
    int32_t index;
    uint64_t begin;
  };
  std::vector<Pending> pending;
  std::vector<bool> found(program.tensors.size(), false);
  for (auto &[name, entry] : header.object) {
    if (name == "__metadata__") {
      if (metadata)
        for (auto &[key, value] : entry.object)
          (*metadata)[key] = value.string;
      continue;
    }
    int32_t index = program.findPersistent(name);
    if (index < 0 || !isCheckpointed(program.tensors[index]))
      return fail("tensor '" + name + "' is not a parameter or state of "
                  "this model");
    const TensorInfo &info = program.tensors[index];
    const Json::Value *dtype = entry.get("dtype");
    const Json::Value *shape = entry.get("shape");
    const Json::Value *offsets = entry.get("data_offsets");
    if (!dtype || !shape || !offsets || offsets->array.size() != 2)
      return fail("tensor '" + name + "' has a malformed entry");
    if (dtype->string != safetensorsDType(info.dtype))
      return fail("tensor '" + name + "' has dtype " + dtype->string +
                  ", the model expects " + safetensorsDType(info.dtype));
    std::vector<int64_t> dims;
    for (const Json::Value &d : shape->array)
      dims.push_back(int64_t(d.number));
    if (dims != info.shape) {
      std::string expected, actual;
      for (int64_t d : info.shape)
        expected += (expected.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : dims)
        actual += (actual.empty() ? "" : ", ") + std::to_string(d);
      return fail("tensor '" + name + "' has shape [" + actual +
                  "], the model expects [" + expected + "]");
    }
    double begin = offsets->array[0].number, end = offsets->array[1].number;
    if (begin < 0 || end < begin || end > double(dataSize) ||
        uint64_t(end - begin) != uint64_t(info.bytes))
      return fail("tensor '" + name + "' has data offsets outside the file "
                  "or of the wrong size");
    pending.push_back({index, uint64_t(begin)});
    found[index] = true;
  }
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorInfo &info = program.tensors[i];
    if (!isCheckpointed(info) || found[i])
      continue;
    if (info.role == Role::Param || scope == LoadScope::Everything)
      return fail("tensor '" + info.name + "' is missing");
  }
  for (const Pending &p : pending) {
    TensorRef view = session.view(p.index);
    std::memcpy(view.data, data + p.begin, view.numBytes());
  }
  return Status::success();
}

} // namespace tgc::rt
