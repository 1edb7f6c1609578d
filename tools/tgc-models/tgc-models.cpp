//===- tgc-models.cpp - prints built-in models as tg IR -------------------===//
//
//   tgc-models gpt2 --preset 124M [--batch 8 --seq-len 1024] [-o gpt2.mlir]
//   tgc-models gpt2 --n-layer 2 --n-head 4 --n-embd 64 --vocab-size 256 ...
//   tgc-models mlp --widths 784,256,10 --batch 32
//   tgc-models mlp --in-features 784 --width 512 --depth 3 --classes 10
//   tgc-models gpt2 --preset 124M --stats
//   tgc-models bert --preset base --task=seq-cls --num-labels 3
//   tgc-models llama --preset tiny | --from-hf DIR --batch 4 --seq-len 256
//
// Builds the model with the generators of lib/Models, verifies it, and
// prints the IR or (with --stats) its parameter count and op statistics.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/ModelStats.h"
#include "tgc/Models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>
#include "tgc/Support/UserFiles.h"
#include "tgc/Tools/CommandLine.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tgc-models options");

// Each model is a subcommand with its own options.
static cl::SubCommand gpt2Command("gpt2", "GPT-2 (Hugging Face layout)");
static cl::SubCommand mlpCommand("mlp", "Multi-layer perceptron classifier");
static cl::SubCommand llamaCommand(
    "llama", "Llama, Mistral or Qwen2 decoder (Hugging Face layout), from "
             "flags or a model directory's config.json (--from-hf)");
static cl::SubCommand bertCommand(
    "bert", "BERT encoder with a masked-LM or sequence-classification head "
            "(Hugging Face layout)");
#define BOTH                                                                   \
  cl::sub(gpt2Command), cl::sub(mlpCommand), cl::sub(bertCommand),             \
      cl::sub(llamaCommand)
#define GPT2 cl::sub(gpt2Command)
#define SEQ cl::sub(gpt2Command), cl::sub(bertCommand), cl::sub(llamaCommand)
#define LLAMA cl::sub(llamaCommand)
#define WIDE cl::sub(bertCommand), cl::sub(llamaCommand)
#define BERT cl::sub(bertCommand)
#define MLP cl::sub(mlpCommand)
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category), BOTH);
static cl::opt<bool> stats("stats",
                           cl::desc("Print the parameter count and op "
                                    "statistics instead of the IR"),
                           cl::cat(category), BOTH);
static cl::opt<int64_t> batch("batch", cl::desc("Batch size"),
                              cl::cat(category), BOTH);

// GPT-2.
static cl::opt<std::string> preset(
    "preset",
    cl::desc(
        "Model size: GPT-2 124M, 350M, 774M, 1558M or tiny; "
        "BERT base or tiny; Llama tiny, llama-3-8b, llama-3-70b, mistral-7b, "
        "qwen2-7b, "
        "qwen3-0.6b, qwen3-8b, phi-3-mini, mixtral-8x7b, mixtral-tiny, "
        "gemma-2-2b"),
    cl::cat(category), SEQ);
static cl::opt<int64_t> nLayer("n-layer", cl::desc("Transformer blocks"),
                               cl::cat(category), SEQ);
static cl::opt<int64_t> nHead("n-head", cl::desc("Attention heads"),
                              cl::cat(category), SEQ);
static cl::opt<int64_t> nEmbd("n-embd", cl::desc("GPT-2 embedding width"),
                              cl::cat(category), GPT2);
static cl::opt<int64_t> vocabSize("vocab-size", cl::desc("Vocabulary"),
                                  cl::cat(category), SEQ);
static cl::opt<int64_t> blockSize("block-size",
                                  cl::desc("GPT-2 positions (wpe rows)"),
                                  cl::cat(category), GPT2);
static cl::opt<int64_t> seqLen("seq-len", cl::desc("Sequence length"),
                               cl::cat(category), SEQ);
static cl::opt<bool>
    packed("packed",
           cl::desc("Rows of packed examples: inputs 'segments' (each "
                    "token's example, 1, 2, ... along a row, 0 for padding; "
                    "attention stays within an example) and 'positions' "
                    "(restarting at 0 in each example)"),
           cl::cat(category), SEQ);

// BERT.
static cl::opt<int64_t> hidden("hidden", cl::desc("Hidden size"),
                               cl::cat(category), WIDE);
static cl::opt<int64_t> intermediate("intermediate",
                                     cl::desc("MLP width"),
                                     cl::cat(category), WIDE);
static cl::opt<int64_t>
    maxPositions("max-positions",
                 cl::desc("Positions (the longest sequence)"),
                 cl::cat(category), WIDE);

// Llama family.
static cl::opt<std::string>
    fromHF("from-hf",
           cl::desc("Read the model from a Hugging Face directory's "
                    "config.json (model_type gpt2, bert, or llama, mistral, "
                    "qwen2, qwen3, phi3, mixtral and gemma2); --batch and "
                    "--seq-len "
                    "give the "
                    "shape"),
           cl::value_desc("DIR"), cl::cat(category), SEQ);
static cl::opt<int64_t> kvHeads("kv-heads",
                                cl::desc("Key/value heads (grouped-query "
                                         "attention below --n-head)"),
                                cl::cat(category), LLAMA);
static cl::opt<double> ropeTheta("rope-theta", cl::desc("Rotary base"),
                                 cl::cat(category), LLAMA);
static cl::opt<double> rmsEps("rms-eps", cl::desc("RMSNorm epsilon"),
                              cl::cat(category), LLAMA);
static cl::opt<bool> tieEmbeddings("tie-embeddings",
                                   cl::desc("lm_head is the token embedding"),
                                   cl::cat(category), LLAMA);
static cl::opt<int64_t>
    slidingWindow("sliding-window",
                  cl::desc("Attend to this many keys back, itself included "
                           "(Mistral's sliding window; 0: all)"),
                  cl::cat(category), LLAMA);
static cl::opt<bool> qkvBias("qkv-bias",
                             cl::desc("Biases on q, k and v (Qwen2)"),
                             cl::cat(category), LLAMA);
static cl::opt<std::string>
    task("task", cl::desc("BERT head: mlm (masked LM) or seq-cls"),
         cl::init("mlm"), cl::cat(category), BERT);
static cl::opt<std::string>
    geluForm("gelu",
             cl::desc("BERT GELU: exact (the erf form, BERT's \"gelu\") or "
                       "tanh (\"gelu_new\")"),
             cl::init("exact"), cl::cat(category), BERT);
static cl::opt<int64_t> numLabels("num-labels",
                                  cl::desc("Classes of the seq-cls head"),
                                  cl::cat(category), BERT);

// MLP.
static cl::list<int64_t> widths("widths", cl::CommaSeparated,
                                cl::desc("MLP widths: inputs,hidden...,classes"),
                                cl::cat(category), MLP);
static cl::opt<int64_t> inFeatures("in-features", cl::desc("MLP inputs"),
                                   cl::cat(category), MLP);
static cl::opt<int64_t> width("width", cl::desc("MLP hidden width"),
                              cl::cat(category), MLP);
static cl::opt<int64_t> depth("depth", cl::desc("MLP hidden layers"),
                              cl::cat(category), MLP);
static cl::opt<int64_t> classes("classes", cl::desc("MLP classes"),
                                cl::cat(category), MLP);

static int fail(const llvm::Twine &message) {
  llvm::errs() << "tgc-models: error: " << message << "\n";
  return 1;
}

/// Names of the given options that were set on the command line.
static std::string setOptions(llvm::ArrayRef<cl::Option *> options) {
  std::string names;
  for (cl::Option *option : options)
    if (option->getNumOccurrences())
      names += (names.empty() ? "--" : ", --") + option->ArgStr.str();
  return names;
}

/// A configuration field from its flag, when the flag was given.
static void setIfGiven(const cl::opt<int64_t> &option, int64_t &field) {
  if (option.getNumOccurrences())
    field = option;
}

/// With --from-hf, the model's own flags would change what config.json
/// says: refused.
static bool refuseModelFlags(llvm::ArrayRef<cl::Option *> options,
                             std::string &error) {
  std::string conflicting = setOptions(options);
  if (conflicting.empty())
    return false;
  error = "--from-hf takes the model from config.json; " + conflicting +
          " would change it";
  return true;
}

static OwningOpRef<ModuleOp> buildGPT2FromFlags(MLIRContext *context,
                                                std::string &error) {
  tgc::GPT2Config config;
  if (!fromHF.empty()) {
    if (refuseModelFlags({&preset, &nLayer, &nHead, &nEmbd, &vocabSize,
                          &blockSize},
                         error))
      return nullptr;
    std::optional<tgc::GPT2Config> read = tgc::readGPT2HFConfig(fromHF, error);
    if (!read)
      return nullptr;
    config = *read;
  } else if (!preset.empty()) {
    std::optional<tgc::GPT2Config> found = tgc::getGPT2Preset(preset);
    if (!found) {
      error = "unknown GPT-2 preset '" + preset +
              "' (expected 124M, 350M, 774M, 1558M or tiny)";
      return nullptr;
    }
    config = *found;
  }
  setIfGiven(nLayer, config.nLayer);
  setIfGiven(nHead, config.nHead);
  setIfGiven(nEmbd, config.nEmbd);
  setIfGiven(vocabSize, config.vocabSize);
  setIfGiven(blockSize, config.blockSize);
  setIfGiven(batch, config.batch);
  setIfGiven(seqLen, config.seqLen);
  if (!seqLen.getNumOccurrences() && config.seqLen > config.blockSize)
    config.seqLen = config.blockSize;
  config.packed = packed;
  error = tgc::validateGPT2Config(config);
  if (!error.empty())
    return nullptr;
  return tgc::buildGPT2(context, config);
}

static OwningOpRef<ModuleOp> buildBERTFromFlags(MLIRContext *context,
                                                std::string &error) {
  tgc::BERTConfig config;
  if (!fromHF.empty()) {
    if (refuseModelFlags({&preset, &nLayer, &nHead, &hidden, &intermediate,
                          &vocabSize, &maxPositions, &geluForm},
                         error))
      return nullptr;
    std::optional<tgc::BERTTask> chosen;
    if (task.getNumOccurrences()) {
      chosen = tgc::parseBERTTask(task);
      if (!chosen) {
        error = "unknown BERT task '" + task + "' (expected mlm or seq-cls)";
        return nullptr;
      }
    }
    std::optional<tgc::BERTConfig> read =
        tgc::readBERTHFConfig(fromHF, chosen, error);
    if (!read)
      return nullptr;
    config = *read;
    if (numLabels.getNumOccurrences() &&
        config.task != tgc::BERTTask::SequenceClassification) {
      error = "--num-labels is for --task=seq-cls";
      return nullptr;
    }
    setIfGiven(numLabels, config.numLabels);
    setIfGiven(batch, config.batch);
    setIfGiven(seqLen, config.seqLen);
    config.packed = packed;
    error = tgc::validateBERTConfig(config);
    if (!error.empty())
      return nullptr;
    return tgc::buildBERT(context, config);
  }
  if (!preset.empty()) {
    std::optional<tgc::BERTConfig> found = tgc::getBERTPreset(preset);
    if (!found) {
      error = "unknown BERT preset '" + preset + "' (expected base or tiny)";
      return nullptr;
    }
    config = *found;
  }
  std::optional<tgc::BERTTask> parsed = tgc::parseBERTTask(task);
  if (!parsed) {
    error = "unknown BERT task '" + task + "' (expected mlm or seq-cls)";
    return nullptr;
  }
  config.task = *parsed;
  if (geluForm != "exact" && geluForm != "tanh") {
    error = "unknown GELU '" + geluForm + "' (expected exact or tanh)";
    return nullptr;
  }
  config.exactGelu = geluForm == "exact";
  if (numLabels.getNumOccurrences() &&
      config.task != tgc::BERTTask::SequenceClassification) {
    error = "--num-labels is for --task=seq-cls";
    return nullptr;
  }
  setIfGiven(nLayer, config.nLayer);
  setIfGiven(nHead, config.nHead);
  setIfGiven(hidden, config.hidden);
  setIfGiven(intermediate, config.intermediate);
  setIfGiven(vocabSize, config.vocabSize);
  setIfGiven(maxPositions, config.maxPositions);
  setIfGiven(numLabels, config.numLabels);
  setIfGiven(batch, config.batch);
  setIfGiven(seqLen, config.seqLen);
  if (!seqLen.getNumOccurrences() && config.seqLen > config.maxPositions)
    config.seqLen = config.maxPositions;
  config.packed = packed;
  error = tgc::validateBERTConfig(config);
  if (!error.empty())
    return nullptr;
  return tgc::buildBERT(context, config);
}

static OwningOpRef<ModuleOp> buildMLPFromFlags(MLIRContext *context,
                                               std::string &error) {
  tgc::MLPConfig config;
  std::string shapeFlags = setOptions({&inFeatures, &width, &depth, &classes});
  if (!widths.empty() && !shapeFlags.empty()) {
    error = "--widths and " + shapeFlags + " describe the same layers; use one";
    return nullptr;
  }
  if (!widths.empty())
    config.widths.assign(widths.begin(), widths.end());
  if (!shapeFlags.empty()) {
    int64_t hidden = width.getNumOccurrences() ? width : 256;
    int64_t layers = depth.getNumOccurrences() ? depth : 1;
    if (layers < 0) {
      error = "--depth must not be negative";
      return nullptr;
    }
    config.widths.clear();
    config.widths.push_back(inFeatures.getNumOccurrences() ? inFeatures : 784);
    config.widths.append(layers, hidden);
    config.widths.push_back(classes.getNumOccurrences() ? classes : 10);
  }
  if (batch.getNumOccurrences())
    config.batch = batch;
  error = tgc::validateMLPConfig(config);
  if (!error.empty())
    return nullptr;
  return tgc::buildMLP(context, config);
}

static OwningOpRef<ModuleOp> buildLlamaFromFlags(MLIRContext *context,
                                                 std::string &error) {
  tgc::LlamaConfig config;
  if (!fromHF.empty()) {
    if (refuseModelFlags({&preset, &nLayer, &nHead, &kvHeads, &hidden,
                          &intermediate, &vocabSize, &maxPositions,
                          &ropeTheta, &rmsEps, &tieEmbeddings, &qkvBias,
                          &slidingWindow},
                         error))
      return nullptr;
    std::optional<tgc::LlamaConfig> read = tgc::readLlamaHFConfig(
        fromHF, seqLen.getNumOccurrences() ? int64_t(seqLen) : config.seqLen,
        error);
    if (!read)
      return nullptr;
    config = *read;
  } else if (!preset.empty()) {
    std::optional<tgc::LlamaConfig> found = tgc::getLlamaPreset(preset);
    if (!found) {
      error =
          "unknown Llama preset '" + preset +
          "' (expected tiny, llama-3-8b, llama-3-70b, mistral-7b, qwen2-7b, "
          "qwen3-0.6b, qwen3-8b, phi-3-mini, mixtral-8x7b, mixtral-tiny or "
          "gemma-2-2b)";
      return nullptr;
    }
    config = *found;
  } else {
    config = *tgc::getLlamaPreset("tiny");
  }
  setIfGiven(nLayer, config.nLayer);
  setIfGiven(nHead, config.nHead);
  if (nHead.getNumOccurrences() && !kvHeads.getNumOccurrences())
    config.nKVHead = config.nHead;
  setIfGiven(kvHeads, config.nKVHead);
  setIfGiven(hidden, config.hidden);
  setIfGiven(intermediate, config.intermediate);
  setIfGiven(vocabSize, config.vocabSize);
  setIfGiven(maxPositions, config.maxPositions);
  setIfGiven(batch, config.batch);
  setIfGiven(seqLen, config.seqLen);
  if (ropeTheta.getNumOccurrences())
    config.ropeTheta = ropeTheta;
  if (rmsEps.getNumOccurrences())
    config.rmsEps = rmsEps;
  if (tieEmbeddings.getNumOccurrences())
    config.tieEmbeddings = tieEmbeddings;
  if (qkvBias.getNumOccurrences())
    config.qkvBias = qkvBias;
  setIfGiven(slidingWindow, config.slidingWindow);
  if (!seqLen.getNumOccurrences() && config.seqLen > config.maxPositions)
    config.seqLen = config.maxPositions;
  config.packed = packed;
  error = tgc::validateLlamaConfig(config);
  if (!error.empty())
    return nullptr;
  return tgc::buildLlama(context, config);
}

int main(int argc, char **argv) {
  // A closed standard stream must not become the output file.
  tgc::reopenClosedStandardStreams();
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category, gpt2Command);
  cl::HideUnrelatedOptions(category, mlpCommand);
  cl::HideUnrelatedOptions(category, bertCommand);
  cl::HideUnrelatedOptions(category, llamaCommand);
  // A bad flag is one `tgc-models: error: ...` line, like every other error.
  std::string flagError;
  if (!tgc::parseToolFlags(argc, argv,
                           "tgc-models: prints built-in models as tg IR\n",
                           "tgc-models", flagError))
    return fail(flagError + " (see --help)");

  MLIRContext context;
  std::string error;
  OwningOpRef<ModuleOp> module;
  if (gpt2Command)
    module = buildGPT2FromFlags(&context, error);
  else if (mlpCommand)
    module = buildMLPFromFlags(&context, error);
  else if (bertCommand)
    module = buildBERTFromFlags(&context, error);
  else if (llamaCommand)
    module = buildLlamaFromFlags(&context, error);
  else
    return fail("name a model: tgc-models gpt2 ..., tgc-models bert ..., "
                "tgc-models llama ... or tgc-models mlp ... (see --help)");
  if (!error.empty())
    return fail(error);
  if (!module)
    return fail("the generated model does not verify");

  // The output may not replace a file of the model directory it was read
  // from (config.json, the weights), nor the tool.
  if (std::string clash = tgc::checkDistinctFiles(
          {{"--from-hf", fromHF,
            {"config.json", "model.safetensors",
             "model.safetensors.index.json"}},
           {"tgc-models itself", "/proc/self/exe"}},
          {{"-o", outputFile == "-" ? "" : std::string(outputFile)}});
      !clash.empty())
    return fail(clash);
  std::string openError;
  auto output = openOutputFile(outputFile, &openError);
  if (!output)
    return fail(openError);
  if (stats) {
    for (auto function : module->getOps<func::FuncOp>())
      tgc::printModelStats(tgc::computeModelStats(function), output->os());
  } else {
    // With the name scopes of the ops (loc("transformer.h.0.attn")):
    // reports and tg-remat's blocks policy read them.
    module->print(output->os(), OpPrintingFlags().enableDebugInfo());
    output->os() << "\n";
  }
  output->keep();
  return 0;
}
