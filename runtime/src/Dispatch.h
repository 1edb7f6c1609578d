//===- Dispatch.h - one instruction to its kernel, for every backend -*- C++ -*-===//
//
// Maps an instruction to a backend's kernel: operands, results and
// attributes by position and name, as lib/Target/TGXWriter.cpp emits them
// and format/Verify.cpp has checked them. Written once for all backends: the
// kernels are called unqualified with the backend's context first, so
// argument-dependent lookup picks cpu::add for a cpu::Context and cuda::add
// for a cuda::Context. The elementwise functions of Kernels.def need no case
// of their own. Besides its kernels a backend provides
// `programConstant(ctx, program, offset, bytes, result)`, the one kernel
// whose source lives in the program (the CPU reads it in place, CUDA from
// its device copy).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_DISPATCH_H
#define TGC_RUNTIME_SRC_DISPATCH_H

#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Program.h"

#include <string>
#include <vector>

namespace tgc::rt {

/// An instruction's tg.adafactor_update attributes (their defaults where
/// absent).
inline cpu::AdafactorOptions adafactorOptions(const Instruction &inst) {
  cpu::AdafactorOptions options;
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

inline cpu::SGDOptions sgdOptions(const Instruction &inst) {
  return {inst.getFloat("momentum"), inst.getFloat("dampening"),
          inst.getFloat("weight_decay"), inst.getBool("nesterov")};
}

inline cpu::AdamWOptions adamwOptions(const Instruction &inst) {
  return {inst.getFloat("beta1"), inst.getFloat("beta2"), inst.getFloat("eps"),
          inst.getFloat("weight_decay"), inst.getInt("rounding_seed", 0)};
}

/// Runs `inst` with the kernels of `ctx`'s backend.
template <typename Context>
Status dispatch(Context &ctx, const Program &program, const Instruction &inst,
                std::vector<TensorRef> &in, std::vector<TensorRef> &out) {
  switch (inst.kernel) {
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  case Kernel::ID:                                                             \
    return FUNCTION(ctx, in[0], out[0]);
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  case Kernel::ID##Grad:                                                       \
    return FUNCTION##Grad(ctx, in[0], in[1], out[0]);
#include "tgc/format/Kernels.def"
  case Kernel::Matmul:
    return matmul(ctx, in[0], in[1], inst.getBool("transpose_lhs"),
                  inst.getBool("transpose_rhs"), out[0]);
  case Kernel::MatmulAdd:
    return matmulAdd(ctx, in[0], in[1], in[2], inst.getBool("transpose_lhs"),
                     inst.getBool("transpose_rhs"), out[0]);
  case Kernel::MatmulBiasGrad:
    return matmulBiasGrad(ctx, in[0], in[1], inst.getBool("bias_of_lhs"),
                          out[0], out[1]);
  case Kernel::MatmulGeluGrad:
    return matmulGeluGrad(ctx, in[0], in[1], in[2],
                          inst.getBool("transpose_rhs"), out[0], out[1]);
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
  case Kernel::Exp:
    return exp(ctx, in[0], out[0]);
  case Kernel::Log:
    return log(ctx, in[0], out[0]);
  case Kernel::Tanh:
    return tanh(ctx, in[0], out[0]);
  case Kernel::Gelu:
    return inst.getBool("exact") ? geluExact(ctx, in[0], out[0])
                                 : gelu(ctx, in[0], out[0]);
  case Kernel::Where:
    return where(ctx, in[0], in[1], in[2], out[0]);
  case Kernel::Softmax:
    return softmax(ctx, in[0], inst.getInt("axis"), out[0]);
  case Kernel::LayerNorm:
    return layerNorm(ctx, in[0], in[1], in[2], inst.getFloat("epsilon"),
                     out[0], in.size() > 3 ? &in[3] : nullptr,
                     out.size() > 1 ? &out[1] : nullptr);
  case Kernel::RmsNorm:
    return rmsNorm(ctx, in[0], in[1], inst.getFloat("epsilon"), out[0],
                   in.size() > 2 ? &in[2] : nullptr,
                   out.size() > 1 ? &out[1] : nullptr);
  case Kernel::Rope:
    return rope(ctx, in[0], in[1], inst.getBool("inverse"), out[0],
                inst.getBool("bshd"));
  case Kernel::Embedding:
    return embedding(ctx, in[0], in[1], out[0]);
  case Kernel::Attention:
    return attention(ctx, in[0], in[1], in[2], in.size() > 3 ? &in[3] : nullptr,
                     inst.getBool("causal"), inst.getInt("window", 0),
                     inst.getFloat("scale"), out[0], inst.getBool("bshd"),
                     out.size() > 1 ? &out[1] : nullptr, inst.getBool("packed"),
                     inst.getFloat("softcap", 0.0));
  case Kernel::CrossEntropy:
    return crossEntropy(ctx, in[0], in[1], inst.getInt("ignore_index"), out[0],
                        in.size() > 2 ? &in[2] : nullptr,
                        out.size() > 1 ? &out[1] : nullptr,
                        inst.getFloat("softcap", 0.0));
  case Kernel::TargetCount:
    return targetCount(ctx, in[0], inst.getInt("ignore_index"), out[0]);
  case Kernel::Reshape:
    return reshape(ctx, in[0], out[0]);
  case Kernel::Offload:
    return offload(ctx, in[0], out[0]);
  case Kernel::Reload:
    return reload(ctx, in[0], out[0]);
  case Kernel::Transpose:
    return transpose(ctx, in[0], inst.getInts("permutation"), out[0]);
  case Kernel::Slice:
    return slice(ctx, in[0], inst.getInts("offsets"), out[0]);
  case Kernel::Split:
    return split(ctx, in[0], inst.getInt("axis"), out);
  case Kernel::Concat:
    return concat(ctx, in, inst.getInt("axis"), out[0]);
  case Kernel::ReduceSum:
    return reduceSum(ctx, in[0], inst.getInts("axes"),
                     inst.getBool("keep_dims"), out[0]);
  case Kernel::ReduceMean:
    return reduceMean(ctx, in[0], inst.getInts("axes"),
                      inst.getBool("keep_dims"), out[0]);
  case Kernel::ReduceMax:
    return reduceMax(ctx, in[0], inst.getInts("axes"),
                     inst.getBool("keep_dims"), out[0]);
  case Kernel::BroadcastTo:
    return broadcastTo(ctx, in[0], out[0]);
  case Kernel::Cast:
    return cast(ctx, in[0], out[0]);
  case Kernel::MultiCast:
    return multiCast(ctx, in, out);
  case Kernel::Constant: {
    int64_t offset = inst.getInt("blob_offset");
    int64_t bytes = inst.getInt("blob_bytes");
    if (offset < 0 || bytes < 0 ||
        size_t(offset) + size_t(bytes) > program.constants.size())
      return Status::failure("constant outside the executable's constants");
    return programConstant(ctx, program, size_t(offset), size_t(bytes),
                           out[0]);
  }
  case Kernel::Fill:
    return fill(ctx, inst.getFloat("value"), out[0]);
  case Kernel::SumTo:
    return sumTo(ctx, in[0], out[0]);
  case Kernel::GeluGrad:
    return inst.getBool("exact") ? geluExactGrad(ctx, in[0], in[1], out[0])
                                 : geluGrad(ctx, in[0], in[1], out[0]);
  case Kernel::TanhGrad:
    return tanhGrad(ctx, in[0], in[1], out[0]);
  case Kernel::SoftmaxGrad:
    return softmaxGrad(ctx, in[0], in[1], inst.getInt("axis"), out[0]);
  case Kernel::LayerNormGrad:
    return layerNormGrad(ctx, in[0], in[1], in[2], inst.getFloat("epsilon"),
                         out[0], out[1], out[2],
                         in.size() > 3 ? &in[3] : nullptr,
                         out.size() > 3 ? &out[3] : nullptr);
  case Kernel::RmsNormGrad:
    return rmsNormGrad(ctx, in[0], in[1], in[2], inst.getFloat("epsilon"),
                       out[0], out[1], in.size() > 3 ? &in[3] : nullptr,
                       out.size() > 2 ? &out[2] : nullptr);
  case Kernel::EmbeddingGrad:
    return embeddingGrad(ctx, in[0], in[1], in.size() > 2 ? &in[2] : nullptr,
                         inst.getInt("padding_idx", -1), out[0]);
  case Kernel::AttentionGrad: {
    // The optional key mask (an index tensor) and lse (f32), in order.
    const TensorRef *mask = nullptr, *lse = nullptr;
    for (size_t i = 5; i < in.size(); ++i)
      (isFloat(in[i].dtype) ? lse : mask) = &in[i];
    return attentionGrad(ctx, in[0], in[1], in[2], in[3], in[4], mask,
                         inst.getBool("causal"), inst.getInt("window", 0),
                         inst.getFloat("scale"), out[0], out[1], out[2],
                         inst.getBool("bshd"), lse, inst.getBool("packed"),
                         inst.getFloat("softcap", 0.0));
  }
  case Kernel::CrossEntropyGrad:
    return crossEntropyGrad(ctx, in[0], in[1], in[2],
                            inst.getInt("ignore_index"), out[0],
                            inst.getFloat("softcap", 0.0));
  case Kernel::ReduceMaxGrad:
    return reduceMaxGrad(ctx, in[0], in[1], in[2], inst.getInts("axes"),
                         inst.getBool("keep_dims"), out[0]);
  case Kernel::SliceGrad:
    return sliceGrad(ctx, in[0], inst.getInts("offsets"), out[0]);
  case Kernel::Gather:
    return gather(ctx, in[0], in[1], inst.getInt("axis"), out[0]);
  case Kernel::TopK:
    return topK(ctx, in[0], inst.getInt("k"), out[0]);
  case Kernel::MoeRoute:
    return moeRoute(ctx, in[0], out[0], out[1], out[2]);
  case Kernel::ExpertLinear: {
    std::vector<TensorRef> weights(in.begin() + 2, in.end());
    return expertLinear(ctx, in[0], in[1], weights,
                        inst.getBool("transpose_weight"), out[0]);
  }
  case Kernel::ExpertLinearWeightGrad:
    return expertLinearWeightGrad(ctx, in[0], in[1], in[2], out);
  case Kernel::GatherGrad:
    return gatherGrad(ctx, in[0], in[1], inst.getInt("axis"), out[0]);
  case Kernel::Cumsum:
    return cumsum(ctx, in[0], inst.getInt("axis"), inst.getBool("reverse"),
                  out[0]);
  case Kernel::SGDUpdate: {
    bool buffer = out.size() == 2;
    cpu::SGDOptions o = sgdOptions(inst);
    return sgdUpdate(ctx, in[0], in[1], in[2], in[3],
                     buffer ? &in[4] : nullptr, o.momentum, o.dampening,
                     o.weightDecay, o.nesterov, out[0],
                     buffer ? &out[1] : nullptr);
  }
  case Kernel::AdamWUpdate: {
    cpu::AdamWOptions o = adamwOptions(inst);
    return adamwUpdate(ctx, in[0], in[1], in[2], in[3], in[4], in[5], o.beta1,
                       o.beta2, o.eps, o.weightDecay, out[0], out[1], out[2],
                       o.roundingSeed);
  }
  case Kernel::MultiAdamWUpdate: {
    cpu::AdamWOptions o = adamwOptions(inst);
    return multiAdamwUpdate(ctx, in, out, o.beta1, o.beta2, o.eps,
                            o.weightDecay);
  }
  case Kernel::AdamW8bitUpdate: {
    // param, grad, m codes, m absmax, v codes, v absmax, signed map,
    // unsigned map, lr, step.
    cpu::QuantizedStateRefs m{in[2], in[3], in[6], out[1], out[2]};
    cpu::QuantizedStateRefs v{in[4], in[5], in[7], out[3], out[4]};
    return adamw8bitUpdate(ctx, in[0], in[1], in[8], in[9], m, v,
                           adamwOptions(inst), inst.getInt("block_size"),
                           out[0]);
  }
  case Kernel::AdamW4bitUpdate: {
    // As AdamW8bitUpdate, the codes packed two a byte.
    cpu::QuantizedStateRefs m{in[2], in[3], in[6], out[1], out[2]};
    cpu::QuantizedStateRefs v{in[4], in[5], in[7], out[3], out[4]};
    return adamw4bitUpdate(ctx, in[0], in[1], in[8], in[9], m, v,
                           adamwOptions(inst), inst.getInt("block_size"),
                           out[0]);
  }
  case Kernel::SGD8bitUpdate: {
    // param, grad, buffer codes, buffer absmax, map, lr, step.
    cpu::QuantizedStateRefs buffer{in[2], in[3], in[4], out[1], out[2]};
    return sgd8bitUpdate(ctx, in[0], in[1], in[5], in[6], buffer,
                         sgdOptions(inst), inst.getInt("block_size"), out[0]);
  }
  case Kernel::AdafactorUpdate: {
    size_t states = out.size() - 1;
    std::vector<TensorRef> state(in.begin() + 2, in.begin() + 2 + states);
    std::vector<TensorRef> newState(out.begin() + 1, out.end());
    return adafactorUpdate(ctx, in[0], in[1], state, in[2 + states],
                           in[3 + states], adafactorOptions(inst), out[0],
                           newState);
  }
  case Kernel::GlobalNorm:
    return globalNorm(ctx, in, out[0]);
  case Kernel::ScaleLoss:
    return scaleLoss(ctx, in[0], in[1], out[0]);
  case Kernel::Unscale:
    return unscale(ctx, in[0], in[1], out[0]);
  case Kernel::AllFinite:
    return allFinite(ctx, in, out[0]);
  case Kernel::UpdateLossScale:
    return updateLossScale(ctx, in[0], in[1], in[2],
                           inst.getFloat("growth_factor"),
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

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_DISPATCH_H
