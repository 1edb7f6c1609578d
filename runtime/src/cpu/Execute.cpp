//===- Execute.cpp - running one instruction on the CPU -------------------===//
//
// The CPU's side of one instruction: a step skipped by loss scaling, and
// the program's constants read in place; everything else is Dispatch.h's.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include "../Dispatch.h"

#include <cstring>

namespace tgc::rt::cpu {

/// tg.constant: the bytes lie in the program, which outlives the run.
static Status programConstant(Context &ctx, const Program &program,
                              size_t offset, size_t bytes, TensorRef &result) {
  return constant(ctx, program.constants.data() + offset, bytes, result);
}

Status execute(const Program &program, const Instruction &inst,
               std::vector<TensorRef> &in, std::vector<TensorRef> &out) {
  // A step skipped by loss scaling: the results keep the updated operands'
  // values (the same memory when the update is in place).
  if (hasApplyPredicate(program, inst) && !loadI64(in.back(), 0)) {
    std::vector<size_t> sources = updatedOperands(inst);
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].data != in[sources[i]].data)
        std::memcpy(out[i].data, in[sources[i]].data, out[i].numBytes());
    return Status::success();
  }
  Context ctx;
  return dispatch(ctx, program, inst, in, out);
}

} // namespace tgc::rt::cpu
