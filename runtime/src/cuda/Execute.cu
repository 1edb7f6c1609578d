//===- Execute.cu - running one instruction on the GPU --------------------===//
//
// The GPU's side of one instruction: a step loss scaling may skip, and the
// program's constants from their device copy; everything else is
// Dispatch.h's.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "../Dispatch.h"

#include "Common.cuh"
#include "CudaKernels.h"

namespace tgc::rt::cuda {

/// tg.constant: the whole blob goes to the device once; each constant is
/// then a device-to-device copy that does not wait for the host.
static Status programConstant(Context &ctx, const Program &program,
                              size_t offset, size_t bytes, TensorRef &result) {
  if (Status s = ctx.uploadConstants(program.constants.data(),
                                     program.constants.size());
      !s.ok())
    return s;
  return constant(ctx, static_cast<const uint8_t *>(ctx.constants) + offset,
                  bytes, result);
}

Status execute(Context &ctx, const Program &program, const Instruction &inst,
               std::vector<TensorRef> &in, std::vector<TensorRef> &out) {
  // A step loss scaling may skip: the update's kernels read the predicate
  // on the device and write nothing when it is false, so the stream never
  // waits for the host. Results that are not in place (the planner writes
  // updates in place; this is for any other plan) first receive the
  // operands they replace, which a skipped step leaves them holding.
  ctx.apply = nullptr;
  if (hasApplyPredicate(program, inst)) {
    std::vector<size_t> sources = updatedOperands(inst);
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].data != in[sources[i]].data)
        TGC_CUDA_CALL(cudaMemcpyAsync(out[i].data, in[sources[i]].data,
                                      out[i].numBytes(),
                                      cudaMemcpyDeviceToDevice, streamOf(ctx)));
    ctx.apply = static_cast<const uint8_t *>(in.back().data);
  }
  struct ClearPredicate {
    Context &ctx;
    ~ClearPredicate() { ctx.apply = nullptr; }
  } clear{ctx};
  return dispatch(ctx, program, inst, in, out);
}

} // namespace tgc::rt::cuda
