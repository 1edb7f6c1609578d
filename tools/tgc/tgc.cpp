//===- tgc.cpp - the driver: tgc finetune ---------------------------------===//
//
//   tgc finetune --model DIR --data FILE --out DIR [--key value ...]
//                [--config FILE.yaml] [key=value ...]
//
// One command from a model directory and a data file to a fine-tuned
// model, over the stages each tool runs alone (tgc-data, tgc-models or
// tgc-import, tgc-compile, tgc-run). The work is the library's
// (tgc/Driver/Finetune.h); this parses and reports.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/Finetune.h"
#include "tgc/Support/UserFiles.h"

#include "llvm/Support/InitLLVM.h"

#include <cstdio>
#include <cstring>

static int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tgc finetune: error: %s\n", message.c_str());
  return 1;
}

int main(int argc, char **argv) {
  tgc::reopenClosedStandardStreams();
  llvm::InitLLVM init(argc, argv);
  if (argc < 2 || std::strcmp(argv[1], "finetune") != 0) {
    bool help = argc >= 2 && (std::strcmp(argv[1], "--help") == 0 ||
                              std::strcmp(argv[1], "-h") == 0);
    std::fprintf(help ? stdout : stderr,
                 "%susage: tgc finetune --model DIR --data FILE --out DIR "
                 "[...] (tgc finetune --help)\n",
                 help ? "" : "tgc: error: name a command\n");
    return help ? 0 : 1;
  }
  tgc::FinetuneOptions options;
  bool help = false;
  std::string error = tgc::parseFinetuneArgs(argc - 1, argv + 1, options, help);
  if (help) {
    tgc::printFinetuneHelp(llvm::outs());
    return 0;
  }
  if (!error.empty())
    return fail(error);
  int status = tgc::runFinetune(options, error);
  if (status != 0 && !error.empty())
    return fail(error);
  return status;
}
