//===- Verify.h - checking instructions against their kernels ---*- C++ -*-===//

#ifndef TGC_RUNTIME_SRC_FORMAT_VERIFY_H
#define TGC_RUNTIME_SRC_FORMAT_VERIFY_H

#include "tgc/runtime/Program.h"

namespace tgc::rt {

/// Checks one decoded instruction: its tensor indices in range (a result
/// not computed only where its kernel may leave one), then what its ODS
/// says and its kernel's rules. Kernels rely on it: they do not check their
/// operands again.
Status verifyInstruction(const Program &program, const Instruction &inst);

/// verifyInstruction of every instruction of the program and its entry
/// points, for a program built in memory (Session::create; a loaded one
/// was checked as it was read).
Status verifyInstructions(const Program &program);

/// Checks `program.quantized`, the executable's table of 4-bit weights:
/// each weight's tensors are frozen parameters of its layout's types and
/// whole shapes, of no other weight; every tg.matmul_4bit's codebook is a
/// constant of NF4's or FP4's values and its nested map bitsandbytes'
/// dynamic map; a product that reads persistent codes directly reads a
/// table entry as it lays the weight out (what the runtime quantizes with
/// when it loads or draws the weight). zero3's products read gathered
/// copies of the parts.
Status checkQuantizedWeights(const Program &program);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_FORMAT_VERIFY_H
