//===- tgc-report.cpp - pages that show a plan --------------------------===//
//
//   tgc-report plan report.json [--compare other.json] -o plan.html
//
// Reads the JSON memory report of tgc-compile --memory-report (format
// "tgc-memory-report", version kMemoryReportVersion) and writes one
// self-contained HTML page (PlanPage.cpp): the step's memory over its ops
// as stacked areas by kind, the peak and the tensors live there, the
// recomputed ops, and with --compare a second plan's total on the same
// axes. A file that is not such a report (another format or version,
// truncated JSON, missing fields) is an error that names it.
//
//===----------------------------------------------------------------------===//

#include "PlanPage.h"

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
  std::error_code error;
  llvm::ToolOutputFile out(outputFile, error, llvm::sys::fs::OF_None);
  if (error)
    return fail("cannot write '" + outputFile + "': " + error.message());
  out.os() << tgc::report::planPage(json);
  out.os().flush();
  if (out.os().has_error())
    return fail("cannot write '" + outputFile + "'");
  out.keep();
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc-report: pages that show a plan\n\n"
      "  tgc-report plan report.json [--compare other.json] -o plan.html\n");
  if (planCommand)
    return writePlanPage() ? 0 : 1;
  fail("name what to draw: tgc-report plan report.json -o plan.html");
  return 1;
}
