//===- Quant4bitFiles.h - 4-bit weights in checkpoints ----------*- C++ -*-===//
//
// How a checkpoint's tensors meet a program's frozen 4-bit weights
// (tg-quantize-frozen): a 16- or 32-bit weight is quantized as it loads,
// bit for bit as bitsandbytes' quantize_4bit would; a weight transformers
// saved from a bitsandbytes 4-bit model (its codes `W`, `W.absmax`,
// `W.nested_absmax` and the side tensors `W.quant_map`,
// `W.nested_quant_map`, `W.quant_state.bitsandbytes__nf4`) loads as it is,
// once its side tensors agree with the program's layout and codebooks.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_QUANT4BITFILES_H
#define TGC_RUNTIME_SRC_QUANT4BITFILES_H

#include "Safetensors.h"
#include "tgc/runtime/Session.h"

#include <optional>
#include <string>

namespace tgc::rt {

/// A bitsandbytes side tensor beside weight `base`.
struct Quant4Side {
  enum Kind { QuantMap, NestedQuantMap, QuantState } kind;
  std::string base;
  std::string type; // QuantState's "nf4" or "fp4" (from the name)
};

/// Whether `name` is a bitsandbytes side tensor, and of which weight.
std::optional<Quant4Side> parseQuant4Side(const std::string &name);

/// The quantization method whose tensor `name` is when it is one tgc does
/// not load (GPTQ's or AWQ's `qweight`, `qzeros`, `scales`, `g_idx`), or
/// empty.
std::string foreignQuantization(const std::string &name);

/// Checks side tensor `entry` of `file` against `weight`: the codebooks'
/// values, the quant state's type, block sizes and shape. A quant state
/// gives the weight's offset (`offset`, when double-quantized).
Status checkQuant4Side(const Program &program, const QuantizedWeight &weight,
                       const Quant4Side &side, const SafetensorsFile &file,
                       const SafetensorsEntry &entry,
                       std::optional<float> &offset);

/// Reads float tensor `entry` (the weight, [rows, cols]) whole as f32,
/// checks that every value is finite and quantizes it into the session's
/// host views of `weight`'s tensors.
Status quantizeEntry(Session &session, const QuantizedWeight &weight,
                     const SafetensorsFile &file,
                     const SafetensorsEntry &entry);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_QUANT4BITFILES_H
