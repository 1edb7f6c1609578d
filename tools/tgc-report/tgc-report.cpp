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
// truncated JSON) or an inconsistent one (a field missing or of the wrong
// type, a negative byte count, an index outside the ops, an end before its
// start, counts that disagree) is an error that names the file and the
// field: the page draws only what was checked.
//
// `run` reads tgc-run --metrics files (JSON lines, one object a step) and
// writes a page of their loss, validation loss, learning rate, throughput
// and loss scale over the steps, the runs overlaid. An empty file, a line
// that is not a JSON object with an integer step, a drawn metric that is
// not a number, is an error that names the file and the line.
//
// Every input is read through ReadFile.h: a FIFO, a device or a file past
// kMaxReportFileBytes is refused by name, and JSON nested past
// kMaxJSONNesting is refused before the (recursive) parser sees it.
//
//===----------------------------------------------------------------------===//

#include "tgc/Report/Pages.h"

#include "tgc/Analysis/MemoryPlan.h"
#include "tgc/Support/ReadFile.h"

#include "llvm/ADT/StringSet.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;
using tgc::report::describeJSON;
using tgc::report::kMaxExactInteger;

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

namespace {
/// Reads a memory report's fields one at a time, each checked for its type
/// and range; the first problem names its field as a path
/// ("buffers[3].end"). Absent or mistyped fields read as null.
class FieldReader {
public:
  std::string problem;

  bool bad(const std::string &message) {
    if (problem.empty())
      problem = message;
    return false;
  }
  static std::string at(const std::string &name, size_t index) {
    return name + "[" + std::to_string(index) + "]";
  }
  static std::string member(const std::string &name, llvm::StringRef key) {
    return name.empty() ? key.str() : name + "." + key.str();
  }

  const Value *get(const Object &object, llvm::StringRef key,
                   const std::string &parent) {
    const Value *value = object.get(key);
    if (!value)
      bad(member(parent, key) + " is missing");
    return value;
  }
  const Object *object(const Value *value, const std::string &name) {
    if (!value)
      return nullptr;
    const Object *object = value->getAsObject();
    if (!object)
      bad(name + " is " + describeJSON(*value) + ", not an object");
    return object;
  }
  const Array *array(const Value *value, const std::string &name) {
    if (!value)
      return nullptr;
    const Array *array = value->getAsArray();
    if (!array)
      bad(name + " is " + describeJSON(*value) + ", not an array");
    return array;
  }
  std::optional<llvm::StringRef> string(const Value *value,
                                        const std::string &name) {
    if (!value)
      return std::nullopt;
    std::optional<llvm::StringRef> text = value->getAsString();
    if (!text)
      bad(name + " is " + describeJSON(*value) + ", not a string");
    return text;
  }
  /// An integer in [min, max]; `range` says what that is ("a byte count").
  std::optional<int64_t> integer(const Value *value, const std::string &name,
                                 int64_t min, int64_t max,
                                 const std::string &range) {
    if (!value)
      return std::nullopt;
    if (value->kind() != Value::Number) {
      bad(name + " is " + describeJSON(*value) + ", not an integer");
      return std::nullopt;
    }
    std::optional<int64_t> number = value->getAsInteger();
    if (!number) {
      bad(name + " is " + describeJSON(*value) + ", not an integer");
      return std::nullopt;
    }
    if (*number < min || *number > max) {
      bad(name + " is " + std::to_string(*number) + ", not " + range);
      return std::nullopt;
    }
    return number;
  }
  std::optional<int64_t> bytes(const Value *value, const std::string &name) {
    return integer(value, name, 0, kMaxExactInteger,
                   "a byte count (0 to 2^53)");
  }
  std::optional<int64_t> bytes(const Object &object, llvm::StringRef key,
                               const std::string &parent) {
    return bytes(get(object, key, parent), member(parent, key));
  }
  /// A count the page does not draw (FLOPs, buffers): any from 0.
  std::optional<int64_t> count(const Object &object, llvm::StringRef key,
                               const std::string &parent) {
    return integer(get(object, key, parent), member(parent, key), 0,
                   std::numeric_limits<int64_t>::max(), "a count (from 0)");
  }
  std::optional<llvm::StringRef>
  string(const Object &object, llvm::StringRef key, const std::string &parent) {
    return string(get(object, key, parent), member(parent, key));
  }
};
} // namespace

/// Records `problem` as the report's; for `return refuse(r, ...)`.
static bool refuse(FieldReader &r, const std::string &problem) {
  r.bad(problem);
  return false;
}

/// What the sections of a plan report are checked against: its counts and
/// sizes, read first.
struct PlanFacts {
  int64_t ops = 0, arenaBytes = 0, persistentBytes = 0, deviceBytes = 0,
          peakLive = 0;
  std::string opIndex; // "an op index (0 to N - 1)"
};

/// The op sequence: each op's name, and the timeline's kinds.
static bool readOpNames(const Object &report, const PlanFacts &f,
                        FieldReader &r, Array &opNames, Array &kindNames,
                        const Array *&kinds, const Array *&rows) {
  const Array *names = r.array(r.get(report, "op_names", ""), "op_names");
  const Object *timeline = r.object(r.get(report, "timeline", ""), "timeline");
  kinds = timeline
              ? r.array(r.get(*timeline, "kinds", "timeline"), "timeline.kinds")
              : nullptr;
  rows = timeline
             ? r.array(r.get(*timeline, "bytes", "timeline"), "timeline.bytes")
             : nullptr;
  if (!r.problem.empty())
    return false;
  if (int64_t(names->size()) != f.ops || int64_t(rows->size()) != f.ops)
    return refuse(r, "it names " + std::to_string(names->size()) +
                         " ops and times " + std::to_string(rows->size()) +
                         ", but has " + std::to_string(f.ops));
  for (size_t i = 0; i < names->size(); ++i)
    if (std::optional<llvm::StringRef> name =
            r.string(&(*names)[i], FieldReader::at("op_names", i)))
      opNames.push_back(name->str());
  llvm::StringSet<> seenKinds;
  for (size_t k = 0; k < kinds->size(); ++k) {
    std::string name = FieldReader::at("timeline.kinds", k);
    std::optional<llvm::StringRef> kind = r.string(&(*kinds)[k], name);
    if (kind && !seenKinds.insert(*kind).second)
      r.bad(name + " is \"" + kind->str() + "\" again");
    if (kind)
      kindNames.push_back(kind->str());
  }
  return r.problem.empty();
}

/// The timeline's rows of bytes by kind, one an op, and the peak op: the
/// first op where the row adds up to the most, as the page draws it.
static bool readTimelineRows(const Object &report, const PlanFacts &f,
                             FieldReader &r, const Array &kindList,
                             const Array &rowList, Array &timelineRows,
                             int64_t &peakAt) {
  const Array *kinds = &kindList, *rows = &rowList;
  // Each op's total as the page sums it (the device's persistent bytes
  // and the row), and the first op where it is largest: the peak drawn.
  int64_t largest = -1, largestAt = 0, peakRowLive = 0;
  std::optional<int64_t> peakOp;
  if (const Object *peak = r.object(r.get(report, "peak", ""), "peak"))
    peakOp = r.integer(r.get(*peak, "op_index", "peak"), "peak.op_index", 0,
                       f.ops - 1, f.opIndex);
  for (size_t i = 0; i < rows->size() && r.problem.empty(); ++i) {
    std::string name = FieldReader::at("timeline.bytes", i);
    const Array *row = r.array(&(*rows)[i], name);
    if (!row)
      break;
    if (row->size() != kinds->size())
      return refuse(r, name + " has " + std::to_string(row->size()) +
                           " numbers for the " + std::to_string(kinds->size()) +
                           " timeline.kinds");
    Array values;
    int64_t live = 0;
    for (size_t k = 0; k < row->size(); ++k) {
      std::optional<int64_t> bytes =
          r.bytes(&(*row)[k], FieldReader::at(name, k));
      if (!bytes)
        break;
      live += *bytes;
      if (live + f.deviceBytes > kMaxExactInteger)
        return refuse(r, name + " adds up, with the persistent bytes, to more "
                                "than 2^53 bytes");
      values.push_back(*bytes);
    }
    if (live > largest) {
      largest = live;
      largestAt = int64_t(i);
    }
    if (peakOp && int64_t(i) == *peakOp)
      peakRowLive = live;
    timelineRows.push_back(std::move(values));
  }
  if (!r.problem.empty())
    return false;
  if (peakRowLive != f.peakLive)
    return refuse(r, "peak_live_bytes is " + std::to_string(f.peakLive) +
                         ", but timeline.bytes[" + std::to_string(*peakOp) +
                         "] (the peak op's) adds up to " +
                         std::to_string(peakRowLive));
  if (largestAt != *peakOp)
    return refuse(r, "peak.op_index is " + std::to_string(*peakOp) +
                         ", but the timeline is first at its largest (" +
                         std::to_string(largest) + " bytes) at op " +
                         std::to_string(largestAt));

  peakAt = *peakOp;
  return true;
}

/// The peak's breakdown: bytes by category.
static bool readPeakBreakdown(const Object &report, FieldReader &r,
                              Object &peakBreakdown) {
  const Object *peak = report.getObject("peak");
  const Object *breakdown =
      r.object(r.get(*peak, "breakdown", "peak"), "peak.breakdown");
  r.string(peak->get("op"), "peak.op");
  if (breakdown)
    for (const auto &[key, value] : *breakdown)
      if (std::optional<int64_t> bytes =
              r.bytes(&value, "peak.breakdown[\"" + key.str() + "\"]"))
        peakBreakdown[key] = *bytes;

  return r.problem.empty();
}

/// The persistent region's tensors: on the device in its first
/// deviceBytes, in host memory after them.
static bool readPersistent(const Object &report, const PlanFacts &f,
                           FieldReader &r, Array &persistent) {
  // The persistent region: device tensors in its first f.deviceBytes, host
  // tensors after them.
  int64_t deviceListed = 0;
  if (const Array *tensors =
          r.array(r.get(report, "persistent", ""), "persistent"))
    for (size_t i = 0; i < tensors->size() && r.problem.empty(); ++i) {
      std::string name = FieldReader::at("persistent", i);
      const Object *tensor = r.object(&(*tensors)[i], name);
      if (!tensor)
        break;
      r.string(*tensor, "name", name);
      std::optional<llvm::StringRef> kind = r.string(*tensor, "kind", name);
      std::optional<int64_t> bytes = r.bytes(*tensor, "bytes", name);
      std::optional<int64_t> offset = r.bytes(*tensor, "offset", name);
      bool host = false;
      if (const Value *flag = tensor->get("host")) {
        std::optional<bool> value = flag->getAsBoolean();
        if (!value)
          r.bad(name + ".host is " + describeJSON(*flag) +
                ", not true or false");
        host = value.value_or(false);
      }
      if (!r.problem.empty())
        break;
      int64_t begin = host ? f.deviceBytes : 0,
              end = host ? f.persistentBytes : f.deviceBytes;
      if (*offset < begin || *offset + *bytes > end)
        return refuse(
            r, name + " (offset " + std::to_string(*offset) + ", " +
                   std::to_string(*bytes) + " bytes) is outside the " +
                   (host ? "host" : "device") +
                   " part of the persistent region (bytes " +
                   std::to_string(begin) + " to " + std::to_string(end) + ")");
      if (!host)
        deviceListed += *bytes;
      Object entry{{"kind", kind->str()}, {"bytes", *bytes}};
      if (host)
        entry["host"] = true;
      persistent.push_back(std::move(entry));
    }
  if (r.problem.empty() && deviceListed > f.deviceBytes)
    return refuse(r, "the persistent tensors on the device add up to " +
                         std::to_string(deviceListed) +
                         " bytes, more than persistent_bytes - host_bytes (" +
                         std::to_string(f.deviceBytes) + ")");

  return r.problem.empty();
}

/// The arena's buffers: each made by an op, live from its start to its
/// end, inside the arena.
static bool readBuffers(const Object &report, const PlanFacts &f,
                        FieldReader &r, Array &buffers) {
  if (const Array *list = r.array(r.get(report, "buffers", ""), "buffers"))
    for (size_t i = 0; i < list->size() && r.problem.empty(); ++i) {
      std::string name = FieldReader::at("buffers", i);
      const Object *buffer = r.object(&(*list)[i], name);
      if (!buffer)
        break;
      auto index = [&](llvm::StringRef key) {
        return r.integer(r.get(*buffer, key, name),
                         FieldReader::member(name, key), 0, f.ops - 1,
                         f.opIndex);
      };
      std::optional<int64_t> madeBy = index("op_index");
      std::optional<llvm::StringRef> op = r.string(*buffer, "op", name);
      std::optional<llvm::StringRef> kind = r.string(*buffer, "kind", name);
      r.count(*buffer, "result", name);
      r.count(*buffer, "values", name);
      std::optional<int64_t> bytes = r.bytes(*buffer, "bytes", name);
      std::optional<int64_t> offset = r.bytes(*buffer, "offset", name);
      std::optional<int64_t> start = index("start");
      std::optional<int64_t> end = index("end");
      if (!r.problem.empty())
        break;
      if (*end < *start)
        return refuse(r, name + ".end is " + std::to_string(*end) +
                             ", before its start " + std::to_string(*start));
      if (*offset + *bytes > f.arenaBytes)
        return refuse(r, name + " (offset " + std::to_string(*offset) + ", " +
                             std::to_string(*bytes) +
                             " bytes) is outside the arena (arena_bytes " +
                             std::to_string(f.arenaBytes) + ")");
      buffers.push_back(Object{{"op_index", *madeBy},
                               {"op", op->str()},
                               {"kind", kind->str()},
                               {"bytes", *bytes},
                               {"start", *start},
                               {"end", *end}});
    }

  return r.problem.empty();
}

/// The recomputed ops, as many as the report counts.
static bool readRemat(const Object &report, const PlanFacts &f, FieldReader &r,
                      Array &recomputed) {
  if (const Object *remat = r.object(r.get(report, "remat", ""), "remat")) {
    std::optional<int64_t> count = r.count(*remat, "recomputed_ops", "remat");
    r.count(*remat, "recomputed_flops", "remat");
    const Array *list = r.array(r.get(*remat, "ops", "remat"), "remat.ops");
    for (size_t i = 0; list && i < list->size() && r.problem.empty(); ++i) {
      std::string name = FieldReader::at("remat.ops", i);
      const Object *op = r.object(&(*list)[i], name);
      if (!op)
        break;
      std::optional<int64_t> index = r.integer(
          r.get(*op, "op_index", name), FieldReader::member(name, "op_index"),
          0, f.ops - 1, f.opIndex);
      r.string(*op, "op", name);
      r.count(*op, "flops", name);
      if (index)
        recomputed.push_back(Object{{"op_index", *index}});
    }
    if (r.problem.empty() && int64_t(list->size()) != *count)
      r.bad("remat.recomputed_ops is " + std::to_string(*count) +
            ", but remat.ops lists " + std::to_string(list->size()));
  }
  return r.problem.empty();
}

/// The fields of a memory report the plan page draws, each checked for its
/// type and range and against the others (counts, indices, the peak); the
/// page is given these and nothing else. Null, with `r.problem` naming the
/// field, when the report is inconsistent.
static std::optional<Value> planData(const Object &report,
                                     const std::string &label, FieldReader &r) {
  std::optional<llvm::StringRef> function = r.string(report, "function", "");
  std::optional<int64_t> ops = r.integer(r.get(report, "ops", ""), "ops", 1,
                                         kMaxExactInteger, "a count from 1");
  std::optional<int64_t> arenaBytes = r.bytes(report, "arena_bytes", "");
  std::optional<int64_t> persistentBytes =
      r.bytes(report, "persistent_bytes", "");
  std::optional<int64_t> hostBytes = r.bytes(report, "host_bytes", "");
  std::optional<int64_t> peakLive = r.bytes(report, "peak_live_bytes", "");
  r.count(report, "flops", "");
  r.count(report, "reused_buffers", "");
  r.integer(r.get(report, "alignment", ""), "alignment", 1, kMaxExactInteger,
            "a positive number of bytes");
  if (!r.problem.empty())
    return std::nullopt;
  if (*hostBytes > *persistentBytes) {
    r.bad("host_bytes is " + std::to_string(*hostBytes) +
          ", more than the persistent_bytes (" +
          std::to_string(*persistentBytes) + ") it is part of");
    return std::nullopt;
  }
  PlanFacts f;
  f.ops = *ops;
  f.arenaBytes = *arenaBytes;
  f.persistentBytes = *persistentBytes;
  f.deviceBytes = *persistentBytes - *hostBytes;
  f.peakLive = *peakLive;
  f.opIndex = "an op index (0 to " + std::to_string(*ops - 1) + ")";
  Array opNames, kindNames, timelineRows, persistent, buffers, recomputed;
  Object peakBreakdown;
  const Array *kinds = nullptr, *rows = nullptr;
  int64_t peakOp = 0;
  if (!readOpNames(report, f, r, opNames, kindNames, kinds, rows) ||
      !readTimelineRows(report, f, r, *kinds, *rows, timelineRows, peakOp) ||
      !readPeakBreakdown(report, r, peakBreakdown) ||
      !readPersistent(report, f, r, persistent) ||
      !readBuffers(report, f, r, buffers) ||
      !readRemat(report, f, r, recomputed))
    return std::nullopt;
  return Value(Object{{"label", label},
                      {"function", function->str()},
                      {"ops", *ops},
                      {"arena_bytes", *arenaBytes},
                      {"persistent_bytes", *persistentBytes},
                      {"host_bytes", *hostBytes},
                      {"peak", Object{{"op_index", peakOp},
                                      {"breakdown", std::move(peakBreakdown)}}},
                      {"op_names", std::move(opNames)},
                      {"timeline", Object{{"kinds", std::move(kindNames)},
                                          {"bytes", std::move(timelineRows)}}},
                      {"persistent", std::move(persistent)},
                      {"buffers", std::move(buffers)},
                      {"remat", Object{{"ops", std::move(recomputed)}}}});
}

/// Reads `path` as a memory report of this version, checked field by field
/// (planData): what the plan page draws of it, labelled with the file's
/// name.
static std::optional<Value> readReport(const std::string &path) {
  std::string text;
  if (std::string error =
          tgc::readUserJSONFile(path, tgc::kMaxReportFileBytes, text);
      !error.empty()) {
    fail(error);
    return std::nullopt;
  }
  llvm::Expected<Value> parsed = llvm::json::parse(text);
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
  const Object *report = parsed->getAsObject();
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
  FieldReader r;
  std::optional<Value> data =
      planData(*report, llvm::sys::path::filename(path).str(), r);
  if (!data)
    return bad(r.problem);
  return data;
}

static bool writeRunPage() {
  if (!labels.empty() && labels.size() != metricsFiles.size())
    return fail(std::to_string(labels.size()) + " --label for " +
                std::to_string(metricsFiles.size()) +
                " metrics files: give one a file, or none");
  std::string error = tgc::report::writeRunPage(
      std::vector<std::string>(metricsFiles.begin(), metricsFiles.end()),
      std::vector<std::string>(labels.begin(), labels.end()), runOutputFile);
  return error.empty() || fail(error);
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
  std::string error = tgc::report::writePageFile(
      outputFile, tgc::report::planPage(std::move(reports)),
      {reportFile.getValue(), compareFile.getValue()});
  return error.empty() || fail(error);
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
