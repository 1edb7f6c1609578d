//===- Execute.h - running one instruction on the CPU -----------*- C++ -*-===//

#ifndef TGC_RUNTIME_SRC_CPU_EXECUTE_H
#define TGC_RUNTIME_SRC_CPU_EXECUTE_H

#include "tgc/runtime/Program.h"

namespace tgc::rt::cpu {

/// Calls the CPU kernel of `inst` on views of its operands and results
/// (verified against the kernel's signature when the program was loaded).
Status execute(const Program &program, const Instruction &inst,
               std::vector<TensorRef> &operands,
               std::vector<TensorRef> &results);

} // namespace tgc::rt::cpu

#endif // TGC_RUNTIME_SRC_CPU_EXECUTE_H
