//===- CommandLine.h - the compiler tools' flags -----------------*- C++ -*-===//
//
// LLVM's command-line parser prints its complaints itself, in its own form
// ("tgc-compile: for the --batch option: 'x' value invalid for long
// argument!"), some to the stream it is given and some straight to stderr.
// parseToolFlags gathers both, so that a bad flag is one
// `<tool>: error: ...` line and status 1 like every other error.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_COMMANDLINE_H
#define TGC_TOOLS_COMMANDLINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace tgc {

/// Parses the flags; on failure returns false with `error` the parser's
/// first complaint, without the tool's name.
inline bool parseToolFlags(int argc, const char *const *argv,
                           llvm::StringRef overview, llvm::StringRef tool,
                           std::string &error) {
  std::string direct;
  llvm::raw_string_ostream directStream(direct);
  // What goes straight to stderr lands in a temporary file meanwhile.
  llvm::errs().flush();
  std::FILE *captured = std::tmpfile();
  int saved = captured ? ::dup(STDERR_FILENO) : -1;
  if (saved >= 0)
    ::dup2(::fileno(captured), STDERR_FILENO);
  bool parsed =
      llvm::cl::ParseCommandLineOptions(argc, argv, overview, &directStream);
  llvm::errs().flush();
  std::string printed;
  if (saved >= 0) {
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    std::rewind(captured);
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), captured)) > 0 &&
           printed.size() < (1 << 16))
      printed.append(buffer, got);
  }
  if (captured)
    std::fclose(captured);
  if (parsed)
    return true;
  llvm::StringRef text = llvm::StringRef(printed).trim();
  if (text.empty())
    text = llvm::StringRef(direct).trim();
  text = text.split('\n').first.trim();
  text.consume_front(tool);
  text.consume_front(":");
  error = text.trim().rtrim('!').str();
  if (error.empty())
    error = "bad command line";
  return false;
}

} // namespace tgc

#endif // TGC_TOOLS_COMMANDLINE_H
