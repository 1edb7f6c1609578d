//===- PlanPage.h - the memory timeline page's HTML -------------*- C++ -*-===//
//
// One self-contained HTML page (no network: its script and style inline)
// that draws one or two tgc memory reports: see PlanPage.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGC_REPORT_PLANPAGE_H
#define TGC_TOOLS_TGC_REPORT_PLANPAGE_H

#include <string>

namespace tgc::report {

/// The page for `reportsJson`, a JSON array of one or two memory reports
/// (each with a "label" added), as text safe inside a <script> element.
std::string planPage(const std::string &reportsJson);

} // namespace tgc::report

#endif // TGC_TOOLS_TGC_REPORT_PLANPAGE_H
