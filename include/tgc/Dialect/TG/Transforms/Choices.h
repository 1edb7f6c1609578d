//===- Choices.h - the passes' choice options as enums ----------*- C++ -*-===//
//
// The options that choose one of a few things (a 16-bit type, an optimizer,
// a state format, a data-parallel mode) are enums, each with its names
// written once, here. Passes.td and the training pipeline declare options
// of these types; the command-line parser below reads and prints them by
// these names and refuses anything else with the list of what is accepted,
// so neither a tool nor a pass checks the spelling again.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_CHOICES_H
#define TGC_DIALECT_TG_TRANSFORMS_CHOICES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace tgc::tg {

/// A 16-bit floating-point type, or none (f32 kept): tg-amp's dtype, the
/// frozen parameters' storage.
enum class Half { None, BF16, F16 };
/// tg-optimizer's update rule.
enum class OptimizerKind { AdamW, SGD, Adafactor };
/// How optimizer state is stored (tg-quantize-optimizer-state).
enum class StateFormat { F32, Int8, Int4 };
/// How trainable parameters are stored (tg-master-weights): f32, or bf16
/// with no f32 copy.
enum class MasterWeights { F32, BF16 };
/// What lives in the host's memory instead of the device's: the optimizer
/// state (tg-offload), the activations saved for the backward pass
/// (tg-offload-activations), or both.
enum class Offload { None, Optimizer, Activations, All };

/// Whether `offload` moves the optimizer state (the activations).
inline bool offloadsOptimizer(Offload offload) {
  return offload == Offload::Optimizer || offload == Offload::All;
}
inline bool offloadsActivations(Offload offload) {
  return offload == Offload::Activations || offload == Offload::All;
}

/// How frozen weights are stored by tg-quantize-frozen: bitsandbytes'
/// 4-bit NF4 or FP4 (none: as they are).
enum class FrozenQuant { None, NF4, FP4 };

/// How ranks share the step (tg-data-parallel).
enum class ParallelMode { None, DDP, Zero1, Zero2, Zero3 };
/// Whether each rank keeps only its part of the optimizer state (ZeRO).
inline bool splitsState(ParallelMode mode) {
  return mode == ParallelMode::Zero1 || mode == ParallelMode::Zero2 ||
         mode == ParallelMode::Zero3;
}

/// A choice's names: the first name of a value is the one printed; later
/// ones are accepted aliases.
template <typename E> struct ChoiceName {
  E value;
  llvm::StringLiteral name;
};
template <typename E> struct Choices;
template <> struct Choices<Half> {
  static constexpr ChoiceName<Half> names[] = {
      {Half::None, "none"}, {Half::BF16, "bf16"}, {Half::F16, "f16"}};
};
template <> struct Choices<OptimizerKind> {
  static constexpr ChoiceName<OptimizerKind> names[] = {
      {OptimizerKind::AdamW, "adamw"},
      {OptimizerKind::SGD, "sgd"},
      {OptimizerKind::Adafactor, "adafactor"}};
};
template <> struct Choices<StateFormat> {
  static constexpr ChoiceName<StateFormat> names[] = {
      {StateFormat::F32, "none"},
      {StateFormat::F32, "f32"},
      {StateFormat::Int8, "8bit"},
      {StateFormat::Int4, "4bit"}};
};
template <> struct Choices<MasterWeights> {
  static constexpr ChoiceName<MasterWeights> names[] = {
      {MasterWeights::F32, "f32"}, {MasterWeights::BF16, "bf16"}};
};

template <> struct Choices<Offload> {
  static constexpr ChoiceName<Offload> names[] = {
      {Offload::None, "none"},
      {Offload::Optimizer, "optimizer"},
      {Offload::Activations, "activations"},
      {Offload::All, "all"}};
};

template <> struct Choices<FrozenQuant> {
  static constexpr ChoiceName<FrozenQuant> names[] = {
      {FrozenQuant::None, "none"},
      {FrozenQuant::NF4, "nf4"},
      {FrozenQuant::FP4, "fp4"}};
};

template <> struct Choices<ParallelMode> {
  static constexpr ChoiceName<ParallelMode> names[] = {
      {ParallelMode::None, "none"},
      {ParallelMode::DDP, "ddp"},
      {ParallelMode::Zero1, "zero1"},
      {ParallelMode::Zero2, "zero2"},
      {ParallelMode::Zero3, "zero3"}};
};

template <typename E> std::optional<E> parseChoice(llvm::StringRef text) {
  for (const ChoiceName<E> &choice : Choices<E>::names)
    if (choice.name == text)
      return choice.value;
  return std::nullopt;
}

template <typename E> llvm::StringRef choiceName(E value) {
  for (const ChoiceName<E> &choice : Choices<E>::names)
    if (choice.value == value)
      return choice.name;
  return "?";
}

/// "none, bf16 or f16": every accepted name, for messages.
template <typename E> std::string choiceList() {
  std::string list;
  size_t count = std::size(Choices<E>::names);
  for (size_t i = 0; i < count; ++i) {
    if (i != 0)
      list += i + 1 == count ? " or " : ", ";
    list += Choices<E>::names[i].name.str();
  }
  return list;
}

/// Options print by name (MLIR's pass options print through operator<<).
template <typename E, typename = decltype(Choices<E>::names)>
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, E value) {
  return os << choiceName(value);
}

/// Where a refused choice is reported. By default the option's own error
/// ("tgc-opt: for the --dtype option: must be bf16 or f16, found 'fp8'");
/// a tool that reports errors its own way (tgc-compile's one line) installs
/// a handler for the time it parses.
using ChoiceErrorHandler = void (*)(llvm::StringRef option,
                                    llvm::StringRef message);
inline ChoiceErrorHandler &choiceErrorHandler() {
  static ChoiceErrorHandler handler = nullptr;
  return handler;
}

/// The command-line parser of a choice option: its names, nothing else.
template <typename E> class ChoiceParser : public llvm::cl::basic_parser<E> {
public:
  using llvm::cl::basic_parser<E>::basic_parser;

  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef arg,
             E &value) {
    if (std::optional<E> parsed = parseChoice<E>(arg)) {
      value = *parsed;
      return false;
    }
    std::string message =
        "must be " + choiceList<E>() + ", found '" + arg.str() + "'";
    if (ChoiceErrorHandler handler = choiceErrorHandler()) {
      handler(option.ArgStr, message);
      return true;
    }
    return option.error(message);
  }

  // The value's name in --help stays "value" (the descriptions list the
  // choices): help columns are laid out for short names.

  void printOptionDiff(const llvm::cl::Option &option, E value,
                       const llvm::cl::OptionValue<E> &defaultValue,
                       size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << choiceName(value);
    if (defaultValue.hasValue())
      llvm::outs() << " (default: " << choiceName(defaultValue.getValue())
                   << ")";
    llvm::outs() << "\n";
  }
};

} // namespace tgc::tg

/// LLVM's command line (and so MLIR's pass options) reads each choice with
/// its ChoiceParser.
namespace llvm::cl {
#define TGC_CHOICE_PARSER(E)                                                   \
  template <> class parser<E> : public ::tgc::tg::ChoiceParser<E> {            \
  public:                                                                      \
    using ::tgc::tg::ChoiceParser<E>::ChoiceParser;                            \
  };
TGC_CHOICE_PARSER(::tgc::tg::Half)
TGC_CHOICE_PARSER(::tgc::tg::OptimizerKind)
TGC_CHOICE_PARSER(::tgc::tg::StateFormat)
TGC_CHOICE_PARSER(::tgc::tg::MasterWeights)
TGC_CHOICE_PARSER(::tgc::tg::Offload)
TGC_CHOICE_PARSER(::tgc::tg::ParallelMode)
TGC_CHOICE_PARSER(::tgc::tg::FrozenQuant)
#undef TGC_CHOICE_PARSER
} // namespace llvm::cl

#endif // TGC_DIALECT_TG_TRANSFORMS_CHOICES_H
