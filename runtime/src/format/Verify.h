//===- Verify.h - checking instructions against their kernels ---*- C++ -*-===//

#ifndef TGC_RUNTIME_SRC_FORMAT_VERIFY_H
#define TGC_RUNTIME_SRC_FORMAT_VERIFY_H

#include "tgc/runtime/Program.h"

namespace tgc::rt {

/// Checks one decoded instruction (whose tensor indices are in range)
/// against the signature of its kernel.
Status verifyInstruction(const Program &program, const Instruction &inst);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_FORMAT_VERIFY_H
