//===- Report.h - formatting shared by the reports --------------*- C++ -*-===//
//
// Number formatting used by the statistics and memory reports.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_REPORT_H
#define TGC_ANALYSIS_REPORT_H

#include <cstdint>
#include <string>

namespace tgc {

/// 124439808 -> "124,439,808".
std::string formatWithCommas(int64_t value);

/// 1536 -> "1.50 KiB"; below 1 KiB, whole bytes: "240 B".
std::string formatBytes(int64_t bytes);

} // namespace tgc

#endif // TGC_ANALYSIS_REPORT_H
