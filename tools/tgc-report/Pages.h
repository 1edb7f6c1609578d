//===- Pages.h - tgc-report's HTML pages ------------------------*- C++ -*-===//
//
// Each page is one self-contained HTML file (script and style inline, no
// network) with its data embedded as JSON: PlanPage.cpp draws memory
// reports, RunPage.cpp metrics files. Every value read from a file reaches
// a page one way: as JSON that scriptJSON makes inert inside its <script>
// element, which the page's script parses and puts into the document as
// text (textContent), never as markup.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGC_REPORT_PAGES_H
#define TGC_TOOLS_TGC_REPORT_PAGES_H

#include "llvm/Support/JSON.h"

#include <string>

namespace tgc::report {

/// The page for `reports`, an array of one or two memory reports' drawn
/// fields (tgc-report.cpp's planData, each with a "label").
std::string planPage(llvm::json::Value reports);

/// The page for `runs`, an array of {"label", "rows"} (rows: a metrics
/// file's steps in order).
std::string runPage(llvm::json::Value runs);

/// `data` as JSON text that cannot end or escape the <script> element it
/// is written into: '<', '>', '&', U+2028 and U+2029 are written as \u
/// escapes (only strings hold them, and JSON reads the escapes back as the
/// same characters), so no value can spell `</script>`, `<!--` or markup.
std::string scriptJSON(const llvm::json::Value &data);

} // namespace tgc::report

#endif // TGC_TOOLS_TGC_REPORT_PAGES_H
