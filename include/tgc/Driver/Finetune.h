//===- Finetune.h - a model directory and data to a fine-tuned model -*- C++
//-*-===//
//
// `tgc finetune`: the driver over tgc's stages, as clang's is over its
// own. From a Hugging Face model directory and a data file it encodes the
// data (tgc-data, for JSONL), builds the model's IR (the tgc-models
// builders, or tgc-import for other families), compiles the training step
// for a memory budget (the compile API, --fit), trains it (the runtime's
// Run) and writes a Hugging Face directory, or a PEFT adapter directory
// with LoRA, with the metrics beside it. Its work files and checkpoint are
// in OUT/.tgc: the same command run again resumes a stopped run there.
//
// Every key is a flag (--key value or --key=value), a key of a YAML
// config (--config FILE, a flat mapping), and an override (key=value),
// applied in that order: the config, then the command line left to right.
// The training pipeline's own options (tgc-compile's: lr, weight-decay,
// amp, ...) are keys too.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DRIVER_FINETUNE_H
#define TGC_DRIVER_FINETUNE_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgc {

struct FinetuneOptions {
  std::string model;    // a Hugging Face model directory
  std::string data;     // JSONL, or an encoded .tgcd
  std::string evalData; // the same (empty: the training data)
  std::string out;      // the output directory
  std::string fit;      // the memory budget (empty: the device's)
  std::string lora;     // rank=R,alpha=A,targets=... (empty: full)
  int64_t steps = 0;    // 0: epochs over the data
  int64_t epochs = 1;
  int64_t seqLen = 0; // 0: the longest example's (rounded up to 64)
  int64_t batch = 8;  // sequences per optimizer step
  /// "dynamic": one example a row; "pack": several a row, kept apart.
  std::string padding = "dynamic";
  std::string lrSchedule = "cosine";
  int64_t warmupSteps = -1; // -1: 5% of the steps
  int64_t evalEvery = 0;    // 0: five times in the run (and at its end)
  int64_t evalBatches = 10;
  int64_t saveEvery = 0; // 0: ten checkpoints in the run
  int64_t seed = 0;
  std::string device = "auto";
  int64_t threads = 0; // 0: every core
  /// The training pipeline's options given ("lr" -> "1e-4"), applied over
  /// the driver's defaults (lr 2e-5, or 2e-4 with LoRA).
  std::map<std::string, std::string> pipeline;
  /// The --config files read (inputs, like the model and the data).
  std::vector<std::string> configFiles;
};

/// Parses `tgc finetune`'s arguments (argv[0] is "finetune"). Returns an
/// error message, or "" with `help` set when --help was asked.
std::string parseFinetuneArgs(int argc, char **argv, FinetuneOptions &options,
                              bool &help);
/// The keys with their help, for --help.
void printFinetuneHelp(llvm::raw_ostream &os);
/// The options as `key: value` lines (YAML): what a run is, for resuming.
std::string describeFinetune(const FinetuneOptions &options);

/// Runs it: progress to stdout, notes and errors (one line, no prefix) as
/// the return value's message. Returns the exit status.
int runFinetune(const FinetuneOptions &options, std::string &error);

} // namespace tgc

#endif // TGC_DRIVER_FINETUNE_H
