//===- Pages.h - the HTML pages of plans and runs ----------------*- C++
//-*-===//
//
// Each page is one self-contained HTML file (script and style inline, no
// network) with its data embedded as JSON: PlanPage.cpp draws memory
// reports, RunPage.cpp metrics files. Every value read from a file reaches
// a page one way: as JSON that scriptJSON makes inert inside its <script>
// element, which the page's script parses and puts into the document as
// text (textContent), never as markup.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_REPORT_PAGES_H
#define TGC_REPORT_PAGES_H

#include "llvm/Support/JSON.h"

#include <cstdint>

#include <string>
#include <vector>

namespace tgc::report {

/// The page for `reports`, an array of one or two memory reports' drawn
/// fields (tgc-report.cpp's planData, each with a "label").
std::string planPage(llvm::json::Value reports);

/// The page for `runs`, an array of {"label", "rows"} (rows: a metrics
/// file's steps in order).
std::string runPage(llvm::json::Value runs);

/// Reads a metrics file (tgc-run --metrics, tgc finetune's): every line a
/// JSON object with an integer "step" (tgc-run --profile's last line is
/// skipped); of each, the step and the metrics the run page draws, each a
/// finite number (null, a non-finite value, left out). Returns the error,
/// naming the file and line, or "".
std::string readRunMetrics(const std::string &path, llvm::json::Array &rows);

/// Writes the run page of `metricsFiles` (labelled by `labels`, one a file,
/// or by their names) to `output`. Returns the error or "".
std::string writeRunPage(const std::vector<std::string> &metricsFiles,
                         const std::vector<std::string> &labels,
                         const std::string &output);

/// Writes `page` to `path` (whole, or not at all), which must not be one
/// of the `inputs` the page was made from. Returns the error or "".
std::string writePageFile(const std::string &path, const std::string &page,
                          const std::vector<std::string> &inputs);

/// What a JSON value is, for an error: a number as written, else its type.
std::string describeJSON(const llvm::json::Value &value);

/// The largest integer the pages' scripts (which count in doubles) hold
/// exactly: byte counts, and the totals they sum from them, stay below it.
constexpr int64_t kMaxExactInteger = int64_t(1) << 53;

/// `data` as JSON text that cannot end or escape the <script> element it
/// is written into: '<', '>', '&', U+2028 and U+2029 are written as \u
/// escapes (only strings hold them, and JSON reads the escapes back as the
/// same characters), so no value can spell `</script>`, `<!--` or markup.
std::string scriptJSON(const llvm::json::Value &data);

} // namespace tgc::report

#endif // TGC_REPORT_PAGES_H
