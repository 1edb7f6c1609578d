//===- Execute.cpp - running one instruction on the CPU -------------------===//
//
// Maps an instruction to its CPU kernel: operands, results and attributes
// by position and name, as lib/Target/TGXWriter.cpp emits them.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include "tgc/runtime/CpuKernels.h"

#include <cstring>

namespace tgc::rt::cpu {

AdafactorOptions adafactorOptions(const Instruction &inst) {
  AdafactorOptions options;
  options.decayRate = inst.getFloat("decay_rate", -0.8);
  options.clipThreshold = inst.getFloat("clip_threshold", 1.0);
  options.eps1 = inst.getFloat("eps1", 1e-30);
  options.eps2 = inst.getFloat("eps2", 1e-3);
  options.weightDecay = inst.getFloat("weight_decay", 0.0);
  options.relativeStep = inst.getBool("relative_step", true);
  options.scaleParameter = inst.getBool("scale_parameter", true);
  options.warmupInit = inst.getBool("warmup_init", false);
  return options;
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
  switch (inst.kernel) {
  case Kernel::Matmul:
    return matmul(in[0], in[1], inst.getBool("transpose_lhs"),
                  inst.getBool("transpose_rhs"), out[0]);
  case Kernel::Linear:
    return linear(in[0], in[1], in[2], inst.getBool("gelu"), out[0],
                  out.size() > 1 ? &out[1] : nullptr);
  case Kernel::Add:
    return add(in[0], in[1], out[0]);
  case Kernel::Sub:
    return sub(in[0], in[1], out[0]);
  case Kernel::Mul:
    return mul(in[0], in[1], out[0]);
  case Kernel::Div:
    return div(in[0], in[1], out[0]);
  case Kernel::Maximum:
    return maximum(in[0], in[1], out[0]);
  case Kernel::Minimum:
    return minimum(in[0], in[1], out[0]);
  case Kernel::Neg:
    return neg(in[0], out[0]);
  case Kernel::Exp:
    return exp(in[0], out[0]);
  case Kernel::Log:
    return log(in[0], out[0]);
  case Kernel::Sqrt:
    return sqrt(in[0], out[0]);
  case Kernel::Rsqrt:
    return rsqrt(in[0], out[0]);
  case Kernel::Tanh:
    return tanh(in[0], out[0]);
  case Kernel::Relu:
    return relu(in[0], out[0]);
  case Kernel::Gelu:
    return inst.getBool("exact") ? geluExact(in[0], out[0])
                                 : gelu(in[0], out[0]);
  case Kernel::Where:
    return where(in[0], in[1], in[2], out[0]);
  case Kernel::Softmax:
    return softmax(in[0], inst.getInt("axis"), out[0]);
  case Kernel::LayerNorm:
    return layerNorm(in[0], in[1], in[2], inst.getFloat("epsilon"), out[0]);
  case Kernel::Embedding:
    return embedding(in[0], in[1], out[0]);
  case Kernel::Attention:
    return attention(in[0], in[1], in[2], in.size() > 3 ? &in[3] : nullptr,
                     inst.getBool("causal"),
                     inst.getFloat("scale"), out[0]);
  case Kernel::CrossEntropy:
    return crossEntropy(in[0], in[1], inst.getInt("ignore_index"), out[0]);
  case Kernel::TargetCount:
    return targetCount(in[0], inst.getInt("ignore_index"), out[0]);
  case Kernel::Reshape:
    return reshape(in[0], out[0]);
  case Kernel::Transpose:
    return transpose(in[0], inst.getInts("permutation"), out[0]);
  case Kernel::Slice:
    return slice(in[0], inst.getInts("offsets"), out[0]);
  case Kernel::Split:
    return split(in[0], inst.getInt("axis"), out);
  case Kernel::Concat:
    return concat(in, inst.getInt("axis"), out[0]);
  case Kernel::ReduceSum:
    return reduceSum(in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                     out[0]);
  case Kernel::ReduceMean:
    return reduceMean(in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                      out[0]);
  case Kernel::ReduceMax:
    return reduceMax(in[0], inst.getInts("axes"), inst.getBool("keep_dims"),
                     out[0]);
  case Kernel::BroadcastTo:
    return broadcastTo(in[0], out[0]);
  case Kernel::Cast:
    return cast(in[0], out[0]);
  case Kernel::Constant:
    return constant(program.constants.data() + inst.getInt("blob_offset"),
                    size_t(inst.getInt("blob_bytes")), out[0]);
  case Kernel::Fill:
    return fill(inst.getFloat("value"), out[0]);
  case Kernel::SumTo:
    return sumTo(in[0], out[0]);
  case Kernel::ReluGrad:
    return reluGrad(in[0], in[1], out[0]);
  case Kernel::GeluGrad:
    return inst.getBool("exact") ? geluExactGrad(in[0], in[1], out[0])
                                 : geluGrad(in[0], in[1], out[0]);
  case Kernel::TanhGrad:
    return tanhGrad(in[0], in[1], out[0]);
  case Kernel::SoftmaxGrad:
    return softmaxGrad(in[0], in[1], inst.getInt("axis"), out[0]);
  case Kernel::LayerNormGrad:
    return layerNormGrad(in[0], in[1], in[2], inst.getFloat("epsilon"), out[0],
                         out[1], out[2]);
  case Kernel::EmbeddingGrad:
    return embeddingGrad(in[0], in[1], out[0]);
  case Kernel::AttentionGrad:
    return attentionGrad(in[0], in[1], in[2], in[3], in[4],
                         in.size() > 5 ? &in[5] : nullptr,
                         inst.getBool("causal"), inst.getFloat("scale"),
                         out[0], out[1], out[2]);
  case Kernel::CrossEntropyGrad:
    return crossEntropyGrad(in[0], in[1], in[2], inst.getInt("ignore_index"),
                            out[0]);
  case Kernel::ReduceMaxGrad:
    return reduceMaxGrad(in[0], in[1], in[2], inst.getInts("axes"),
                         inst.getBool("keep_dims"), out[0]);
  case Kernel::SliceGrad:
    return sliceGrad(in[0], inst.getInts("offsets"), out[0]);
  case Kernel::SGDUpdate: {
    bool buffer = out.size() == 2;
    return sgdUpdate(in[0], in[1], in[2], in[3], buffer ? &in[4] : nullptr,
                     inst.getFloat("momentum"), inst.getFloat("dampening"),
                     inst.getFloat("weight_decay"), inst.getBool("nesterov"),
                     out[0], buffer ? &out[1] : nullptr);
  }
  case Kernel::AdamWUpdate:
    return adamwUpdate(in[0], in[1], in[2], in[3], in[4], in[5],
                       inst.getFloat("beta1"), inst.getFloat("beta2"),
                       inst.getFloat("eps"), inst.getFloat("weight_decay"),
                       out[0], out[1], out[2]);
  case Kernel::AdamW8bitUpdate:
    return adamw8bitUpdate(in[0], in[1], in[2], in[3], in[4], in[5], in[6],
                           in[7], in[8], in[9], inst.getFloat("beta1"),
                           inst.getFloat("beta2"), inst.getFloat("eps"),
                           inst.getFloat("weight_decay"),
                           inst.getInt("block_size"), out[0], out[1], out[2],
                           out[3], out[4]);
  case Kernel::SGD8bitUpdate:
    return sgd8bitUpdate(in[0], in[1], in[2], in[3], in[4], in[5], in[6],
                         inst.getFloat("momentum"), inst.getFloat("dampening"),
                         inst.getFloat("weight_decay"), inst.getBool("nesterov"),
                         inst.getInt("block_size"), out[0], out[1], out[2]);
  case Kernel::AdafactorUpdate: {
    size_t states = out.size() - 1;
    std::vector<TensorRef> state(in.begin() + 2, in.begin() + 2 + states);
    std::vector<TensorRef> newState(out.begin() + 1, out.end());
    return adafactorUpdate(in[0], in[1], state, in[2 + states],
                           in[3 + states], adafactorOptions(inst), out[0],
                           newState);
  }
  case Kernel::GlobalNorm:
    return globalNorm(in, out[0]);
  case Kernel::ScaleLoss:
    return scaleLoss(in[0], in[1], out[0]);
  case Kernel::Unscale:
    return unscale(in[0], in[1], out[0]);
  case Kernel::AllFinite:
    return allFinite(in, out[0]);
  case Kernel::UpdateLossScale:
    return updateLossScale(in[0], in[1], in[2], inst.getFloat("growth_factor"),
                           inst.getFloat("backoff_factor"),
                           inst.getInt("growth_interval"), out[0], out[1]);
  case Kernel::AllReduce:
  case Kernel::ReduceScatter:
  case Kernel::AllGather:
  case Kernel::Shard:
    // The backend runs them with its communicator (runCollective).
    return Status::failure(std::string(kernelName(inst.kernel)) +
                           " needs the backend's communicator");
  }
  return Status::failure("unknown kernel");
}

} // namespace tgc::rt::cpu
