//===- Pages.h - tgc-report's HTML pages ------------------------*- C++ -*-===//
//
// Each page is one self-contained HTML file (script and style inline, no
// network) with its data embedded as JSON: PlanPage.cpp draws memory
// reports, RunPage.cpp metrics files.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGC_REPORT_PAGES_H
#define TGC_TOOLS_TGC_REPORT_PAGES_H

#include <string>

namespace tgc::report {

/// The page for `reportsJson`, a JSON array of one or two memory reports
/// (each with a "label" added).
std::string planPage(const std::string &reportsJson);

/// The page for `runsJson`, a JSON array of {"label", "rows"} (rows: a
/// metrics file's objects in order).
std::string runPage(const std::string &runsJson);

/// `json` made safe inside a <script> element ("</" written "<\/", which
/// JSON reads as the same string).
std::string scriptSafe(const std::string &json);

} // namespace tgc::report

#endif // TGC_TOOLS_TGC_REPORT_PAGES_H
