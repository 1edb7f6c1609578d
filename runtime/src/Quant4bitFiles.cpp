//===- Quant4bitFiles.cpp - 4-bit weights in checkpoints ------------------===//

#include "Quant4bitFiles.h"

#include "tgc/runtime/Quant4bit.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <vector>

namespace tgc::rt {

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The last bits between two f32 values (0: equal).
int64_t ulps(float a, float b) {
  int32_t x, y;
  std::memcpy(&x, &a, sizeof(x));
  std::memcpy(&y, &b, sizeof(y));
  if ((x < 0) != (y < 0))
    return a == b ? 0 : INT64_MAX;
  return std::abs(int64_t(x) - int64_t(y));
}

/// Reads float entry `entry` (F32, BF16 or F16) into `values`.
Status readF32(const SafetensorsFile &file, const SafetensorsEntry &entry,
               std::vector<float> &values) {
  std::optional<DType> dtype = parseSafetensorsDType(entry.dtype);
  if (!dtype || !isFloat(*dtype))
    return Status::failure("tensor '" + entry.name + "' has dtype " +
                           entry.dtype + ", not a float type");
  uint64_t count = (entry.end - entry.begin) / dtypeSize(*dtype);
  values.resize(size_t(count));
  if (*dtype == DType::F32)
    return file.read(entry, 0, values.data(), count * sizeof(float));
  std::vector<uint16_t> half(static_cast<size_t>(count));
  Status status = file.read(entry, 0, half.data(), count * sizeof(uint16_t));
  if (!status.ok())
    return status;
  for (uint64_t i = 0; i < count; ++i)
    values[i] = *dtype == DType::BF16 ? bf16ToF32(half[i]) : f16ToF32(half[i]);
  return Status::success();
}

} // namespace

std::optional<Quant4Side> parseQuant4Side(const std::string &name) {
  static const std::string kMap = ".quant_map", kNested = ".nested_quant_map",
                           kState = ".quant_state.bitsandbytes__";
  if (endsWith(name, kNested))
    return Quant4Side{Quant4Side::NestedQuantMap,
                      name.substr(0, name.size() - kNested.size()), ""};
  if (endsWith(name, kMap))
    return Quant4Side{Quant4Side::QuantMap,
                      name.substr(0, name.size() - kMap.size()), ""};
  size_t at = name.rfind(kState);
  if (at != std::string::npos)
    return Quant4Side{Quant4Side::QuantState, name.substr(0, at),
                      name.substr(at + kState.size())};
  return std::nullopt;
}

std::string foreignQuantization(const std::string &name) {
  for (const char *suffix : {".qweight", ".qzeros", ".g_idx"})
    if (endsWith(name, suffix))
      return "GPTQ or AWQ";
  if (endsWith(name, ".SCB") || endsWith(name, ".weight_format"))
    return "bitsandbytes' 8-bit (LLM.int8())";
  return "";
}

Status checkQuant4Side(const Program &program, const QuantizedWeight &weight,
                       const Quant4Side &side, const SafetensorsFile &file,
                       const SafetensorsEntry &entry,
                       std::optional<float> &offset) {
  const std::string &name = program.tensors[size_t(weight.codes)].name;
  quant4::Type type = weight.fp4 ? quant4::Type::FP4 : quant4::Type::NF4;
  const char *typeName = weight.fp4 ? "fp4" : "nf4";
  if (side.kind != Quant4Side::QuantState) {
    bool nested = side.kind == Quant4Side::NestedQuantMap;
    int64_t entries = nested ? quant4::kNestedValues : quant4::kValues;
    if (entry.dtype != "F32" || entry.shape != std::vector<int64_t>{entries})
      return Status::failure("tensor '" + entry.name + "' must be an F32 [" +
                             std::to_string(entries) + "] codebook");
    if (nested && !weight.nested())
      return Status::failure(
          "tensor '" + entry.name + "': the checkpoint's '" + name +
          "' is double-quantized but this executable's is not (compile it "
          "with --double-quant=true)");
    std::vector<float> values(static_cast<size_t>(entries));
    Status status =
        file.read(entry, 0, values.data(), values.size() * sizeof(float));
    if (!status.ok())
      return status;
    for (int64_t i = 0; i < entries; ++i) {
      float want = nested ? quant4::dynamicMap(int(i))
                          : quant4::values(type)[i];
      // The dynamic map may differ in the last bit where torch 1.x built
      // it (its linspace); the NF4 and FP4 tables are exact.
      if (ulps(values[size_t(i)], want) > (nested ? 1 : 0))
        return Status::failure(
            "tensor '" + entry.name + "' is not " +
            (nested ? std::string("bitsandbytes' dynamic map")
                    : std::string(weight.fp4 ? "FP4" : "NF4") + "'s values") +
            " (entry " + std::to_string(i) + " is " +
            std::to_string(values[size_t(i)]) + ")");
    }
    return Status::success();
  }
  if (side.type != typeName)
    return Status::failure("tensor '" + entry.name + "': the checkpoint's '" +
                           name + "' is " + side.type +
                           ", this executable's " + typeName +
                           " (compile it with --quantize-frozen=" + side.type +
                           ")");
  if (entry.dtype != "U8" || entry.end - entry.begin > (uint64_t(1) << 20))
    return Status::failure("tensor '" + entry.name +
                           "' must be a U8 tensor of JSON");
  std::string text(size_t(entry.end - entry.begin), '\0');
  Status status = file.read(entry, 0, text.data(), text.size());
  if (!status.ok())
    return status;
  nlohmann::json state = nlohmann::json::parse(text, nullptr, false);
  auto fail = [&](const std::string &message) {
    return Status::failure("tensor '" + entry.name + "': " + message);
  };
  if (!state.is_object())
    return fail("not a JSON object");
  auto intField = [&](const char *key, int64_t &value) {
    auto it = state.find(key);
    if (it == state.end() || !it->is_number_integer())
      return false;
    value = it->get<int64_t>();
    return true;
  };
  int64_t block = 0;
  if (!state.contains("quant_type") || state["quant_type"] != typeName)
    return fail(std::string("quant_type is not \"") + typeName + "\"");
  if (!intField("blocksize", block) || block != weight.blockSize)
    return fail("blocksize is not " + std::to_string(weight.blockSize) +
                " (compile with --quant-block-size=" +
                (block > 0 ? std::to_string(block) : std::string("?")) + ")");
  auto shape = state.find("shape");
  if (shape == state.end() || !shape->is_array() || shape->size() != 2 ||
      !(*shape)[0].is_number_integer() || !(*shape)[1].is_number_integer() ||
      (*shape)[0].get<int64_t>() != weight.rows ||
      (*shape)[1].get<int64_t>() != weight.cols)
    return fail("shape is not [" + std::to_string(weight.rows) + ", " +
                std::to_string(weight.cols) + "]");
  bool nested = state.contains("nested_offset");
  if (nested != weight.nested())
    return fail(nested ? "the checkpoint's weight is double-quantized, this "
                         "executable's is not (compile it with "
                         "--double-quant=true)"
                       : "the checkpoint's weight is not double-quantized, "
                         "this executable's is (compile it with "
                         "--double-quant=false)");
  if (nested) {
    int64_t nestedBlock = 0;
    if (!intField("nested_blocksize", nestedBlock) ||
        nestedBlock != quant4::kNestedBlockSize)
      return fail("nested_blocksize is not 256");
    const nlohmann::json &value = state["nested_offset"];
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      return fail("nested_offset is not a finite number");
    offset = float(value.get<double>());
  }
  return Status::success();
}

Status quantizeEntry(Session &session, const QuantizedWeight &weight,
                     const SafetensorsFile &file,
                     const SafetensorsEntry &entry) {
  std::vector<float> values;
  Status status = readF32(file, entry, values);
  if (!status.ok())
    return status;
  if (int64_t(values.size()) != weight.rows * weight.cols)
    return Status::failure("tensor '" + entry.name + "' has " +
                           std::to_string(values.size()) + " values, the " +
                           std::to_string(weight.rows) + " x " +
                           std::to_string(weight.cols) + " weight needs " +
                           std::to_string(weight.rows * weight.cols));
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return Status::failure("tensor '" + entry.name + "' has a non-finite "
                             "value at element " + std::to_string(i));
  session.quantizeInto(weight, values.data());
  return Status::success();
}

} // namespace tgc::rt
