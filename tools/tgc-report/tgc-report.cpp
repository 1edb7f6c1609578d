//===- tgc-report.cpp - pages that show a plan --------------------------===//
//
//   tgc-report plan report.json [--compare other.json] -o plan.html
//   tgc-report run a.jsonl [b.jsonl ...] [--label A --label B] -o run.html
//
// Reads the JSON memory report of tgc-compile --memory-report (format
// "tgc-memory-report", version kMemoryReportVersion) and writes one
// self-contained HTML page (PlanPage.cpp): the step's memory over its ops
// as stacked areas by kind, the peak and the tensors live there, the
// recomputed ops, and with --compare a second plan's total on the same
// axes. A file that is not such a report (another format or version,
// truncated JSON, missing fields) is an error that names it.
//
// `run` reads tgc-run --metrics files (JSON lines, one object a step) and
// writes a page of their loss, validation loss, learning rate, throughput
// and loss scale over the steps, the runs overlaid. An empty file, a line
// that is not a JSON object with an integer step, is an error that names
// the file and the line.
//
//===----------------------------------------------------------------------===//

#include "Pages.h"

#include "tgc/Analysis/MemoryPlan.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <optional>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

static cl::SubCommand planCommand(
    "plan", "The memory timeline of one plan (tgc-compile --memory-report), "
            "or of two on one axis (--compare)");
static cl::opt<std::string> reportFile(cl::Positional, cl::Required,
                                       cl::desc("<report.json>"),
                                       cl::sub(planCommand));
static cl::opt<std::string>
    compareFile("compare", cl::desc("A second report, drawn on the same axes"),
                cl::value_desc("other.json"), cl::sub(planCommand));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("The HTML page to write"),
                                       cl::value_desc("page.html"),
                                       cl::sub(planCommand));

static cl::SubCommand runCommand(
    "run", "The curves of one or more training runs (tgc-run --metrics), "
           "overlaid");
static cl::list<std::string> metricsFiles(cl::Positional, cl::OneOrMore,
                                          cl::desc("<metrics.jsonl>..."),
                                          cl::sub(runCommand));
static cl::list<std::string>
    labels("label", cl::desc("Each run's name, in order (default: the file "
                             "names)"),
           cl::sub(runCommand));
static cl::opt<std::string> runOutputFile("o", cl::Required,
                                          cl::desc("The HTML page to write"),
                                          cl::value_desc("run.html"),
                                          cl::sub(runCommand));

static bool fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "tgc-report") << message << "\n";
  return false;
}

/// Reads `path` as a memory report of this version, checked enough that
/// the page can draw it: the op count, names and timeline agree, and the
/// peak is one of the ops.
static std::optional<Value> readReport(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    fail("cannot read '" + path + "': " + buffer.getError().message());
    return std::nullopt;
  }
  llvm::Expected<Value> parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    fail("'" + path + "' is not valid JSON (" +
         llvm::toString(parsed.takeError()) +
         "): a truncated or damaged report?");
    return std::nullopt;
  }
  auto bad = [&](const std::string &what) {
    fail("'" + path + "': " + what);
    return std::nullopt;
  };
  Object *report = parsed->getAsObject();
  if (!report)
    return bad("not a JSON object");
  std::optional<llvm::StringRef> format = report->getString("format");
  if (!format || *format != "tgc-memory-report")
    return bad("not a tgc memory report (no \"format\": "
               "\"tgc-memory-report\"; write one with tgc-compile "
               "--memory-report)");
  std::optional<int64_t> version = report->getInteger("version");
  if (!version || *version != tgc::kMemoryReportVersion)
    return bad("a memory report of format version " +
               (version ? std::to_string(*version) : std::string("?")) +
               ", but this tgc-report reads version " +
               std::to_string(tgc::kMemoryReportVersion) +
               " (compile the step again with this tgc-compile)");
  std::optional<int64_t> ops = report->getInteger("ops");
  const Array *names = report->getArray("op_names");
  const Object *timeline = report->getObject("timeline");
  const Array *kinds = timeline ? timeline->getArray("kinds") : nullptr;
  const Array *bytes = timeline ? timeline->getArray("bytes") : nullptr;
  const Object *peak = report->getObject("peak");
  std::optional<int64_t> peakOp =
      peak ? peak->getInteger("op_index") : std::nullopt;
  for (const char *field : {"function", "persistent_bytes", "host_bytes",
                            "arena_bytes", "persistent", "buffers", "remat"})
    if (!report->get(field))
      return bad(std::string("its \"") + field + "\" is missing");
  if (!ops || *ops < 1 || !names || !kinds || !bytes || !peakOp)
    return bad("its ops, op_names, timeline or peak are missing");
  if (int64_t(names->size()) != *ops || int64_t(bytes->size()) != *ops)
    return bad("it names " + std::to_string(names->size()) +
               " ops and times " + std::to_string(bytes->size()) +
               ", but has " + std::to_string(*ops));
  for (const Value &row : *bytes) {
    const Array *values = row.getAsArray();
    if (!values || values->size() != kinds->size())
      return bad("a timeline row does not have one number per kind");
  }
  if (*peakOp < 0 || *peakOp >= *ops)
    return bad("its peak op #" + std::to_string(*peakOp) + " is not an op");
  // The page's legend names the file.
  report->try_emplace("label", llvm::sys::path::filename(path).str());
  return std::move(*parsed);
}

/// Writes `page` to `path` (whole, or not at all), which must not be one
/// of the `inputs` the page was made from.
static bool writePage(const std::string &path, const std::string &page,
                      const std::vector<std::string> &inputs) {
  for (const std::string &input : inputs) {
    bool same = false;
    if (!input.empty() && !llvm::sys::fs::equivalent(path, input, same) &&
        same)
      return fail("-o '" + path + "' is the input '" + input +
                  "': refusing to write the page over it");
  }
  std::error_code error;
  llvm::ToolOutputFile out(path, error, llvm::sys::fs::OF_None);
  if (error)
    return fail("cannot write '" + path + "': " + error.message());
  out.os() << page;
  out.os().flush();
  if (out.os().has_error())
    return fail("cannot write '" + path + "'");
  out.keep();
  return true;
}

/// Reads a metrics file: every line a JSON object with an integer "step".
static std::optional<Array> readMetrics(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    fail("cannot read '" + path + "': " + buffer.getError().message());
    return std::nullopt;
  }
  Array rows;
  llvm::StringRef rest = (*buffer)->getBuffer();
  for (int line = 1; !rest.empty(); ++line) {
    auto [text, next] = rest.split('\n');
    rest = next;
    if (text.trim().empty())
      continue;
    llvm::Expected<Value> row = llvm::json::parse(text);
    if (!row) {
      fail("'" + path + "' line " + std::to_string(line) +
           " is not JSON (" + llvm::toString(row.takeError()) +
           "): not a tgc-run --metrics file, or cut short?");
      return std::nullopt;
    }
    const Object *object = row->getAsObject();
    if (!object || !object->getInteger("step")) {
      fail("'" + path + "' line " + std::to_string(line) +
           " is not a step's metrics (a JSON object with an integer "
           "\"step\")");
      return std::nullopt;
    }
    rows.push_back(std::move(*row));
  }
  if (rows.empty()) {
    fail("'" + path + "' has no metrics: it is empty (did the run reach "
         "its first step?)");
    return std::nullopt;
  }
  return rows;
}

static bool writeRunPage() {
  if (!labels.empty() && labels.size() != metricsFiles.size())
    return fail(std::to_string(labels.size()) + " --label for " +
                std::to_string(metricsFiles.size()) +
                " metrics files: give one a file, or none");
  Array runs;
  for (size_t i = 0; i < metricsFiles.size(); ++i) {
    std::optional<Array> rows = readMetrics(metricsFiles[i]);
    if (!rows)
      return false;
    std::string label = labels.empty()
                            ? llvm::sys::path::filename(metricsFiles[i]).str()
                            : labels[i];
    runs.push_back(Object{{"label", label}, {"rows", std::move(*rows)}});
  }
  std::string json;
  llvm::raw_string_ostream os(json);
  os << Value(std::move(runs));
  return writePage(runOutputFile, tgc::report::runPage(json),
                   std::vector<std::string>(metricsFiles.begin(),
                                            metricsFiles.end()));
}

static bool writePlanPage() {
  Array reports;
  for (const std::string &path : {reportFile.getValue(),
                                  compareFile.getValue()}) {
    if (path.empty())
      continue;
    std::optional<Value> report = readReport(path);
    if (!report)
      return false;
    reports.push_back(std::move(*report));
  }
  std::string json;
  llvm::raw_string_ostream os(json);
  os << Value(std::move(reports));
  return writePage(outputFile, tgc::report::planPage(json),
                   {reportFile.getValue(), compareFile.getValue()});
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc-report: pages that show a plan\n\n"
      "  tgc-report plan report.json [--compare other.json] -o plan.html\n"
      "  tgc-report run a.jsonl [b.jsonl ...] [--label A ...] -o run.html\n");
  if (planCommand)
    return writePlanPage() ? 0 : 1;
  if (runCommand)
    return writeRunPage() ? 0 : 1;
  fail("name what to draw: tgc-report plan report.json -o plan.html, or "
       "tgc-report run metrics.jsonl -o run.html");
  return 1;
}
