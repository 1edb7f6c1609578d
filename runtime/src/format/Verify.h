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

/// Fills `program.quantized` from the tg.matmul_4bit instructions that read
/// persistent parameters: every reader of one weight agrees on its layout,
/// its scales are parameters too, its codebook is a constant of NF4's or
/// FP4's values and its nested map bitsandbytes' dynamic map (what the
/// runtime quantizes with when it loads or draws the weight).
Status findQuantizedWeights(Program &program);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_FORMAT_VERIFY_H
