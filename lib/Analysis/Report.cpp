//===- Report.cpp - formatting shared by the reports ----------------------===//

#include "tgc/Analysis/Report.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace tgc {

std::string formatWithCommas(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string result;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      result.push_back(',');
    result.push_back(digits[i]);
  }
  return value < 0 ? "-" + result : result;
}

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = bytes;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  if (unit == 0)
    os << bytes << " B";
  else
    os << llvm::format("%.2f ", value) << units[unit];
  return out;
}

} // namespace tgc
