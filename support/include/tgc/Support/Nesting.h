//===- Nesting.h - a bound on the nesting of IR text ------------*- C++ -*-===//
//
// MLIR's parser descends recursively into nested types, attributes and
// regions, so a file of 100,000 `[` overflows the stack before any
// diagnostic. The tools first scan the text: brackets of every kind ( [ {
// and < (but not the `>` of `->`), outside string literals and comments,
// may nest at most kMaxIRNesting deep. Real IR nests a few dozen levels.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_SUPPORT_NESTING_H
#define TGC_SUPPORT_NESTING_H

#include <cstddef>
#include <optional>

namespace tgc {

constexpr unsigned kMaxIRNesting = 512;

struct NestingViolation {
  size_t offset, line, column; // of the bracket that goes too deep (1-based)
};

/// The first bracket of `text` nested deeper than `limit`, if any.
inline std::optional<NestingViolation>
findExcessNesting(const char *text, size_t size,
                  unsigned limit = kMaxIRNesting) {
  unsigned depth = 0;
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < size; ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
    } else if (c == '"') {
      // A string literal: skip to its closing quote (escapes included).
      for (++i; i < size && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      }
    } else if (c == '/' && i + 1 < size && text[i + 1] == '/') {
      while (i + 1 < size && text[i + 1] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > limit)
        return NestingViolation{i, line, i - lineStart + 1};
    } else if (c == ')' || c == ']' || c == '}' ||
               (c == '>' && !(i > 0 && text[i - 1] == '-'))) {
      if (depth > 0)
        --depth;
    }
  }
  return std::nullopt;
}

} // namespace tgc

#endif // TGC_SUPPORT_NESTING_H
