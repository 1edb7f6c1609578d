//===- RunMetrics.cpp - metrics files read for the run page ---------------===//
//
// What tgc-report run and tgc finetune share: a metrics file read and
// checked line by line (its values reach the page only as the numbers
// drawn), the run page written, and the page file written whole, never
// over its inputs.
//
//===----------------------------------------------------------------------===//

#include "tgc/Report/Pages.h"

#include "tgc/Support/ReadFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace tgc::report {

std::string describeJSON(const Value &value) {
  switch (value.kind()) {
  case Value::Null:
    return "null";
  case Value::Boolean:
    return *value.getAsBoolean() ? "true" : "false";
  case Value::Number: {
    std::string text;
    llvm::raw_string_ostream(text) << value;
    return text;
  }
  case Value::String:
    return "a string";
  case Value::Array:
    return "an array";
  case Value::Object:
    return "an object";
  }
  return "a value";
}

std::string writePageFile(const std::string &path, const std::string &page,
                          const std::vector<std::string> &inputs) {
  for (const std::string &input : inputs) {
    bool same = false;
    if (!input.empty() && !llvm::sys::fs::equivalent(path, input, same) && same)
      return "-o '" + path + "' is the input '" + input +
             "': refusing to write the page over it";
  }
  std::error_code error;
  llvm::ToolOutputFile out(path, error, llvm::sys::fs::OF_None);
  if (error)
    return "cannot write '" + path + "': " + error.message();
  out.os() << page;
  out.os().flush();
  if (out.os().has_error())
    return "cannot write '" + path + "'";
  out.keep();
  return "";
}

/// Whether the run page draws metric `key` (a panel's, or the throughput's,
/// which names what a batch holds: "tokens_per_s").
static bool isDrawnMetric(llvm::StringRef key) {
  return key == "loss" || key == "eval_loss" || key == "lr" ||
         key == "loss_scale" || key.ends_with("_per_s");
}

/// Of one line's object, the step and the metrics drawn; "" or the error.
static std::string readRow(const Object &object, const std::string &where,
                           Array &rows) {
  std::optional<int64_t> step = object.getInteger("step");
  if (!step)
    return where + " is not a step's metrics (a JSON object with an "
                   "integer \"step\")";
  if (*step < 0 || *step > kMaxExactInteger)
    return where + ": \"step\" is " + std::to_string(*step) +
           ", not a step number (0 to 2^53)";
  Object drawn{{"step", *step}};
  for (const auto &[key, value] : object) {
    if (!isDrawnMetric(key) || value.kind() == Value::Null)
      continue;
    std::optional<double> number = value.getAsNumber();
    if (!number || !std::isfinite(*number))
      return where + ": \"" + key.str() + "\" is " + describeJSON(value) +
             ", not a number";
    drawn[key] = value;
  }
  rows.push_back(std::move(drawn));
  return "";
}

std::string readRunMetrics(const std::string &path, Array &rows) {
  std::string text;
  if (std::string error = readUserFile(path, kMaxReportFileBytes, text);
      !error.empty())
    return error;
  llvm::StringRef rest = text;
  for (int line = 1; !rest.empty(); ++line) {
    auto [lineText, next] = rest.split('\n');
    rest = next;
    if (lineText.trim().empty())
      continue;
    std::string where = "'" + path + "' line " + std::to_string(line);
    if (std::string nesting = checkJSONNesting(lineText); !nesting.empty())
      return where + " is not JSON tgc reads: " + nesting;
    llvm::Expected<Value> row = llvm::json::parse(lineText);
    if (!row)
      return where + " is not JSON (" + llvm::toString(row.takeError()) +
             "): not a tgc-run --metrics file, or cut short?";
    const Object *object = row->getAsObject();
    if (object && !object->get("step") && object->get("profile"))
      continue;
    if (!object)
      return where + " is not a step's metrics (a JSON object with an "
                     "integer \"step\")";
    if (std::string error = readRow(*object, where, rows); !error.empty())
      return error;
  }
  if (rows.empty())
    return "'" + path +
           "' has no metrics: it is empty (did the run reach "
           "its first step?)";
  return "";
}

std::string writeRunPage(const std::vector<std::string> &metricsFiles,
                         const std::vector<std::string> &labels,
                         const std::string &output) {
  Array runs;
  for (size_t i = 0; i < metricsFiles.size(); ++i) {
    Array rows;
    if (std::string error = readRunMetrics(metricsFiles[i], rows);
        !error.empty())
      return error;
    std::string label = i < labels.size()
                            ? labels[i]
                            : llvm::sys::path::filename(metricsFiles[i]).str();
    runs.push_back(Object{{"label", label}, {"rows", std::move(rows)}});
  }
  return writePageFile(output, runPage(std::move(runs)), metricsFiles);
}

} // namespace tgc::report
