//===- Execute.cu - running one instruction on the GPU --------------------===//
//
// Maps an instruction to its CUDA launcher: operands, results and attributes
// by position and name, as lib/Target/TGXWriter.cpp emits them.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "Common.cuh"
#include "CudaKernels.h"

namespace tgc::rt::cuda {

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
  switch (inst.kernel) {
  case Kernel::Matmul:
    return matmul(ctx, in[0], in[1], inst.getBool("transpose_lhs"),
                  inst.getBool("transpose_rhs"), out[0]);
  case Kernel::Linear:
    return linear(ctx, in[0], in[1], in[2], inst.getBool("gelu"), out[0],
                  out.size() > 1 ? &out[1] : nullptr);
  case Kernel::Add:
    return add(ctx, in[0], in[1], out[0]);
  case Kernel::Sub:
    return sub(ctx, in[0], in[1], out[0]);
  case Kernel::Mul:
    return mul(ctx, in[0], in[1], out[0]);
  case Kernel::Div:
    return div(ctx, in[0], in[1], out[0]);
  case Kernel::Maximum:
    return maximum(ctx, in[0], in[1], out[0]);
  case Kernel::Minimum:
    return minimum(ctx, in[0], in[1], out[0]);
  case Kernel::Neg:
    return neg(ctx, in[0], out[0]);
  case Kernel::Exp:
    return exp(ctx, in[0], out[0]);
  case Kernel::Log:
    return log(ctx, in[0], out[0]);
  case Kernel::Sqrt:
    return sqrt(ctx, in[0], out[0]);
  case Kernel::Rsqrt:
    return rsqrt(ctx, in[0], out[0]);
  case Kernel::Tanh:
    return tanh(ctx, in[0], out[0]);
  case Kernel::Relu:
    return relu(ctx, in[0], out[0]);
  case Kernel::Gelu:
    return inst.getBool("exact") ? geluExact(ctx, in[0], out[0])
                                 : gelu(ctx, in[0], out[0]);
  case Kernel::Where:
    return where(ctx, in[0], in[1], in[2], out[0]);
  case Kernel::Softmax:
    return softmax(ctx, in[0], inst.getInt("axis"), out[0]);
  case Kernel::LayerNorm:
    return layerNorm(ctx, in[0], in[1], in[2], inst.getFloat("epsilon"), out[0]);
  case Kernel::Embedding:
    return embedding(ctx, in[0], in[1], out[0]);
  case Kernel::Attention:
    return attention(ctx, in[0], in[1], in[2],
                     in.size() > 3 ? &in[3] : nullptr, inst.getBool("causal"),
                     inst.getFloat("scale"), out[0]);
  case Kernel::CrossEntropy:
    return crossEntropy(ctx, in[0], in[1], inst.getInt("ignore_index"), out[0]);
  case Kernel::TargetCount:
    return targetCount(ctx, in[0], inst.getInt("ignore_index"), out[0]);
  case Kernel::Reshape:
    return reshape(ctx, in[0], out[0]);
  case Kernel::Transpose:
    return transpose(ctx, in[0], inst.getInts("permutation"), out[0]);
  case Kernel::Slice:
    return slice(ctx, in[0], inst.getInts("offsets"), out[0]);
  case Kernel::Split:
    return split(ctx, in[0], inst.getInt("axis"), out);
  case Kernel::Concat:
    return concat(ctx, in, inst.getInt("axis"), out[0]);
  case Kernel::ReduceSum:
    return reduceSum(ctx, in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                     out[0]);
  case Kernel::ReduceMean:
    return reduceMean(ctx, in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                      out[0]);
  case Kernel::ReduceMax:
    return reduceMax(ctx, in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                     out[0]);
  case Kernel::BroadcastTo:
    return broadcastTo(ctx, in[0], out[0]);
  case Kernel::Cast:
    return cast(ctx, in[0], out[0]);
  case Kernel::Constant: {
    // The whole blob goes to the device once; each constant is then a
    // device-to-device copy that does not wait for the host.
    int64_t offset = inst.getInt("blob_offset"), bytes = inst.getInt("blob_bytes");
    if (offset < 0 || bytes < 0 ||
        size_t(offset) + size_t(bytes) > program.constants.size())
      return Status::failure("constant outside the executable's constants");
    if (Status s = ctx.uploadConstants(program.constants.data(),
                                       program.constants.size());
        !s.ok())
      return s;
    return constant(ctx, static_cast<const uint8_t *>(ctx.constants) + offset,
                    size_t(bytes), out[0]);
  }
  case Kernel::Fill:
    return fill(ctx, inst.getFloat("value"), out[0]);
  case Kernel::SumTo:
    return sumTo(ctx, in[0], out[0]);
  case Kernel::ReluGrad:
    return reluGrad(ctx, in[0], in[1], out[0]);
  case Kernel::GeluGrad:
    return inst.getBool("exact") ? geluExactGrad(ctx, in[0], in[1], out[0])
                                 : geluGrad(ctx, in[0], in[1], out[0]);
  case Kernel::TanhGrad:
    return tanhGrad(ctx, in[0], in[1], out[0]);
  case Kernel::SoftmaxGrad:
    return softmaxGrad(ctx, in[0], in[1], inst.getInt("axis"), out[0]);
  case Kernel::LayerNormGrad:
    return layerNormGrad(ctx, in[0], in[1], in[2], inst.getFloat("epsilon"), out[0],
                         out[1], out[2]);
  case Kernel::EmbeddingGrad:
    return embeddingGrad(ctx, in[0], in[1], out[0]);
  case Kernel::AttentionGrad:
    return attentionGrad(ctx, in[0], in[1], in[2], in[3], in[4],
                         in.size() > 5 ? &in[5] : nullptr,
                         inst.getBool("causal"), inst.getFloat("scale"),
                         out[0], out[1], out[2]);
  case Kernel::CrossEntropyGrad:
    return crossEntropyGrad(ctx, in[0], in[1], in[2], inst.getInt("ignore_index"),
                            out[0]);
  case Kernel::ReduceMaxGrad:
    return reduceMaxGrad(ctx, in[0], in[1], in[2], inst.getInts("axes"),
                         inst.getBool("keep_dims"), out[0]);
  case Kernel::SliceGrad:
    return sliceGrad(ctx, in[0], inst.getInts("offsets"), out[0]);
  case Kernel::SGDUpdate: {
    bool buffer = out.size() == 2;
    return sgdUpdate(ctx, in[0], in[1], in[2], in[3], buffer ? &in[4] : nullptr,
                     inst.getFloat("momentum"), inst.getFloat("dampening"),
                     inst.getFloat("weight_decay"), inst.getBool("nesterov"),
                     out[0], buffer ? &out[1] : nullptr);
  }
  case Kernel::AdamWUpdate:
    return adamwUpdate(ctx, in[0], in[1], in[2], in[3], in[4], in[5],
                       inst.getFloat("beta1"), inst.getFloat("beta2"),
                       inst.getFloat("eps"), inst.getFloat("weight_decay"),
                       out[0], out[1], out[2]);
  case Kernel::AdafactorUpdate: {
    size_t states = out.size() - 1;
    std::vector<TensorRef> state(in.begin() + 2, in.begin() + 2 + states);
    std::vector<TensorRef> newState(out.begin() + 1, out.end());
    return adafactorUpdate(ctx, in[0], in[1], state, in[2 + states],
                           in[3 + states], cpu::adafactorOptions(inst), out[0],
                           newState);
  }
  case Kernel::AdamW8bitUpdate:
    return adamw8bitUpdate(ctx, in[0], in[1], in[2], in[3], in[4], in[5],
                           in[6], in[7], in[8], in[9], inst.getFloat("beta1"),
                           inst.getFloat("beta2"), inst.getFloat("eps"),
                           inst.getFloat("weight_decay"),
                           inst.getInt("block_size"), out[0], out[1], out[2],
                           out[3], out[4]);
  case Kernel::SGD8bitUpdate:
    return sgd8bitUpdate(ctx, in[0], in[1], in[2], in[3], in[4], in[5], in[6],
                         inst.getFloat("momentum"), inst.getFloat("dampening"),
                         inst.getFloat("weight_decay"), inst.getBool("nesterov"),
                         inst.getInt("block_size"), out[0], out[1], out[2]);
  case Kernel::GlobalNorm:
    return globalNorm(ctx, in, out[0]);
  case Kernel::ScaleLoss:
    return scaleLoss(ctx, in[0], in[1], out[0]);
  case Kernel::Unscale:
    return unscale(ctx, in[0], in[1], out[0]);
  case Kernel::AllFinite:
    return allFinite(ctx, in, out[0]);
  case Kernel::UpdateLossScale:
    return updateLossScale(ctx, in[0], in[1], in[2], inst.getFloat("growth_factor"),
                           inst.getFloat("backoff_factor"),
                           inst.getInt("growth_interval"), out[0], out[1]);
  case Kernel::AllReduce:
  case Kernel::ReduceScatter:
  case Kernel::AllGather:
  case Kernel::Shard:
    // The backend runs them with its communicator.
    return Status::failure(std::string(kernelName(inst.kernel)) +
                           " needs the backend's communicator");
  }
  return Status::failure("unknown kernel");
}

} // namespace tgc::rt::cuda
