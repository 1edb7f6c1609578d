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

#include "KernelAttrs.h"
#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Program.h"

#include <string>
#include <vector>

namespace tgc::rt {

inline cpu::AdafactorOptions adafactorOptions(const AdafactorUpdateAttrs &a) {
  cpu::AdafactorOptions options;
  options.decayRate = a.decayRate;
  options.clipThreshold = a.clipThreshold;
  options.eps1 = a.eps1;
  options.eps2 = a.eps2;
  options.weightDecay = a.weightDecay;
  options.relativeStep = a.relativeStep;
  options.scaleParameter = a.scaleParameter;
  options.warmupInit = a.warmupInit;
  return options;
}

template <typename Attrs> cpu::SGDOptions sgdOptions(const Attrs &a) {
  return {a.momentum, a.dampening, a.weightDecay, a.nesterov};
}

template <typename Attrs>
cpu::AdamWOptions adamwOptions(const Attrs &a, int64_t roundingSeed,
                               const int64_t *roundingPart = nullptr) {
  return {a.beta1, a.beta2, a.eps, a.weightDecay, roundingSeed, roundingPart};
}

/// An AdamW update's part number: operand `at` when it is there and an i64
/// scalar (the loader checked; an i1 there is the apply predicate).
inline const int64_t *partNumber(const std::vector<TensorRef> &in, size_t at) {
  return at < in.size() && in[at].dtype == DType::I64
             ? static_cast<const int64_t *>(in[at].data)
             : nullptr;
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
  case Kernel::Matmul: {
    auto a = MatmulAttrs::read(inst);
    return matmul(ctx, in[0], in[1], a.transposeLhs, a.transposeRhs, out[0]);
  }
  case Kernel::Matmul4bit: {
    // input, codes, absmax, map, then nested_absmax, nested_map, offset
    // when the absmax is double-quantized.
    auto a = Matmul4bitAttrs::read(inst);
    Weight4bitRefs weight;
    weight.codes = in[1];
    weight.absmax = in[2];
    weight.map = in[3];
    if (in.size() == 7) {
      weight.nestedAbsmax = in[4];
      weight.nestedMap = in[5];
      weight.offset = in[6];
    }
    weight.rows = a.rows;
    weight.cols = a.cols;
    weight.blockSize = a.blockSize;
    return matmul4bit(ctx, in[0], weight, a.transposeRhs, out[0]);
  }
  case Kernel::MatmulAdd: {
    auto a = MatmulAddAttrs::read(inst);
    return matmulAdd(ctx, in[0], in[1], in[2], a.transposeLhs, a.transposeRhs,
                     out[0]);
  }
  case Kernel::MatmulBiasGrad:
    return matmulBiasGrad(ctx, in[0], in[1],
                          MatmulBiasGradAttrs::read(inst).biasOfLhs, out[0],
                          out[1]);
  case Kernel::MatmulGeluGrad:
    return matmulGeluGrad(ctx, in[0], in[1], in[2],
                          MatmulGeluGradAttrs::read(inst).transposeRhs, out[0],
                          out[1]);
  case Kernel::Linear:
    return linear(ctx, in[0], in[1], in[2], LinearAttrs::read(inst).gelu,
                  out[0], out.size() > 1 ? &out[1] : nullptr);
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
    return GeluAttrs::read(inst).exact ? geluExact(ctx, in[0], out[0])
                                       : gelu(ctx, in[0], out[0]);
  case Kernel::Where:
    return where(ctx, in[0], in[1], in[2], out[0]);
  case Kernel::Softmax:
    return softmax(ctx, in[0], SoftmaxAttrs::read(inst).axis, out[0]);
  case Kernel::LayerNorm:
    return layerNorm(
        ctx, in[0], in[1], in[2], LayerNormAttrs::read(inst).epsilon, out[0],
        in.size() > 3 ? &in[3] : nullptr, out.size() > 1 ? &out[1] : nullptr);
  case Kernel::RmsNorm:
    return rmsNorm(ctx, in[0], in[1], RmsNormAttrs::read(inst).epsilon, out[0],
                   in.size() > 2 ? &in[2] : nullptr,
                   out.size() > 1 ? &out[1] : nullptr);
  case Kernel::Rope: {
    auto a = RopeAttrs::read(inst);
    return rope(ctx, in[0], in[1], a.inverse, out[0], a.bshd,
                in.size() > 2 ? &in[2] : nullptr);
  }
  case Kernel::Embedding:
    return embedding(ctx, in[0], in[1], out[0]);
  case Kernel::Attention: {
    // The writer resolves the default scale (the loader requires one).
    auto a = AttentionAttrs::read(inst);
    return attention(ctx, in[0], in[1], in[2], in.size() > 3 ? &in[3] : nullptr,
                     a.causal, a.window, *a.scale, out[0], a.bshd,
                     out.size() > 1 ? &out[1] : nullptr, a.packed,
                     a.softcap.value_or(0.0), a.segments);
  }
  case Kernel::CrossEntropy: {
    auto a = CrossEntropyAttrs::read(inst);
    return crossEntropy(ctx, in[0], in[1], a.ignoreIndex, out[0],
                        in.size() > 2 ? &in[2] : nullptr,
                        out.size() > 1 ? &out[1] : nullptr,
                        a.softcap.value_or(0.0));
  }
  case Kernel::TargetCount:
    return targetCount(ctx, in[0], TargetCountAttrs::read(inst).ignoreIndex,
                       out[0]);
  case Kernel::Reshape:
    return reshape(ctx, in[0], out[0]);
  case Kernel::Offload:
    return offload(ctx, in[0], out[0]);
  case Kernel::Reload:
    return reload(ctx, in[0], out[0]);
  case Kernel::Transpose:
    return transpose(ctx, in[0], TransposeAttrs::read(inst).permutation,
                     out[0]);
  case Kernel::Slice:
    return slice(ctx, in[0], SliceAttrs::read(inst).offsets, out[0]);
  case Kernel::Split:
    return split(ctx, in[0], SplitAttrs::read(inst).axis, out);
  case Kernel::Concat:
    return concat(ctx, in, ConcatAttrs::read(inst).axis, out[0]);
  case Kernel::ReduceSum: {
    auto a = ReduceSumAttrs::read(inst);
    return reduceSum(ctx, in[0], a.axes, a.keepDims, out[0]);
  }
  case Kernel::ReduceMean: {
    auto a = ReduceMeanAttrs::read(inst);
    return reduceMean(ctx, in[0], a.axes, a.keepDims, out[0]);
  }
  case Kernel::ReduceMax: {
    auto a = ReduceMaxAttrs::read(inst);
    return reduceMax(ctx, in[0], a.axes, a.keepDims, out[0]);
  }
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
    return fill(ctx, FillAttrs::read(inst).value, out[0]);
  case Kernel::SumTo:
    return sumTo(ctx, in[0], out[0]);
  case Kernel::GeluGrad:
    return GeluGradAttrs::read(inst).exact
               ? geluExactGrad(ctx, in[0], in[1], out[0])
               : geluGrad(ctx, in[0], in[1], out[0]);
  case Kernel::TanhGrad:
    return tanhGrad(ctx, in[0], in[1], out[0]);
  case Kernel::Swiglu:
    return swiglu(ctx, in[0], in[1], out[0]);
  case Kernel::SwigluGrad:
    return swigluGrad(ctx, in[0], in[1], in[2], out[0], out[1]);
  case Kernel::SoftmaxGrad:
    return softmaxGrad(ctx, in[0], in[1], SoftmaxGradAttrs::read(inst).axis,
                       out[0]);
  case Kernel::LayerNormGrad:
    return layerNormGrad(ctx, in[0], in[1], in[2],
                         LayerNormGradAttrs::read(inst).epsilon, out[0], out[1],
                         out[2], in.size() > 3 ? &in[3] : nullptr,
                         out.size() > 3 ? &out[3] : nullptr);
  case Kernel::RmsNormGrad:
    return rmsNormGrad(ctx, in[0], in[1], in[2],
                       RmsNormGradAttrs::read(inst).epsilon, out[0], out[1],
                       in.size() > 3 ? &in[3] : nullptr,
                       out.size() > 2 ? &out[2] : nullptr);
  case Kernel::EmbeddingGrad:
    return embeddingGrad(ctx, in[0], in[1], in.size() > 2 ? &in[2] : nullptr,
                         EmbeddingGradAttrs::read(inst).paddingIdx.value_or(-1),
                         out[0]);
  case Kernel::AttentionGrad: {
    // The optional key mask (an index tensor) and lse (f32), in order.
    const TensorRef *mask = nullptr, *lse = nullptr;
    for (size_t i = 5; i < in.size(); ++i)
      (isFloat(in[i].dtype) ? lse : mask) = &in[i];
    auto a = AttentionGradAttrs::read(inst);
    return attentionGrad(ctx, in[0], in[1], in[2], in[3], in[4], mask, a.causal,
                         a.window, *a.scale, out[0], out[1], out[2], a.bshd,
                         lse, a.packed, a.softcap.value_or(0.0), a.segments);
  }
  case Kernel::CrossEntropyGrad: {
    auto a = CrossEntropyGradAttrs::read(inst);
    return crossEntropyGrad(ctx, in[0], in[1], in[2], a.ignoreIndex, out[0],
                            a.softcap.value_or(0.0));
  }
  case Kernel::ReduceMaxGrad: {
    auto a = ReduceMaxGradAttrs::read(inst);
    return reduceMaxGrad(ctx, in[0], in[1], in[2], a.axes, a.keepDims, out[0]);
  }
  case Kernel::SliceGrad:
    return sliceGrad(ctx, in[0], SliceGradAttrs::read(inst).offsets, out[0]);
  case Kernel::Gather:
    return gather(ctx, in[0], in[1], GatherAttrs::read(inst).axis, out[0]);
  case Kernel::TopK:
    return topK(ctx, in[0], TopKAttrs::read(inst).k, out[0]);
  case Kernel::MoeRoute:
    return moeRoute(ctx, in[0], out[0], out[1], out[2]);
  case Kernel::ExpertLinear: {
    std::vector<TensorRef> weights(in.begin() + 2, in.end());
    return expertLinear(ctx, in[0], in[1], weights,
                        ExpertLinearAttrs::read(inst).transposeWeight, out[0]);
  }
  case Kernel::ExpertLinearWeightGrad:
    return expertLinearWeightGrad(ctx, in[0], in[1], in[2], out);
  case Kernel::GatherGrad:
    return gatherGrad(ctx, in[0], in[1], GatherGradAttrs::read(inst).axis,
                      out[0]);
  case Kernel::Cumsum: {
    auto a = CumsumAttrs::read(inst);
    return cumsum(ctx, in[0], a.axis, a.reverse, out[0]);
  }
  case Kernel::SGDUpdate: {
    bool buffer = out.size() == 2;
    cpu::SGDOptions o = sgdOptions(SGDUpdateAttrs::read(inst));
    return sgdUpdate(ctx, in[0], in[1], in[2], in[3],
                     buffer ? &in[4] : nullptr, o.momentum, o.dampening,
                     o.weightDecay, o.nesterov, out[0],
                     buffer ? &out[1] : nullptr);
  }
  case Kernel::AdamWUpdate: {
    auto a = AdamWUpdateAttrs::read(inst);
    cpu::AdamWOptions o = adamwOptions(a, a.roundingSeed);
    return adamwUpdate(ctx, in[0], in[1], in[2], in[3], in[4], in[5], o.beta1,
                       o.beta2, o.eps, o.weightDecay, out[0], out[1], out[2],
                       o.roundingSeed, partNumber(in, 6));
  }
  case Kernel::MultiAdamWUpdate: {
    cpu::AdamWOptions o = adamwOptions(MultiAdamWUpdateAttrs::read(inst), 0);
    return multiAdamwUpdate(ctx, in, out, o.beta1, o.beta2, o.eps,
                            o.weightDecay);
  }
  case Kernel::AdamW8bitUpdate: {
    // param, grad, m codes, m absmax, v codes, v absmax, signed map,
    // unsigned map, lr, step.
    cpu::QuantizedStateRefs m{in[2], in[3], in[6], out[1], out[2]};
    cpu::QuantizedStateRefs v{in[4], in[5], in[7], out[3], out[4]};
    auto a = AdamW8bitUpdateAttrs::read(inst);
    return adamw8bitUpdate(ctx, in[0], in[1], in[8], in[9], m, v,
                           adamwOptions(a, a.roundingSeed, partNumber(in, 10)),
                           a.blockSize, out[0]);
  }
  case Kernel::AdamW4bitUpdate: {
    // As AdamW8bitUpdate, the codes packed two a byte.
    cpu::QuantizedStateRefs m{in[2], in[3], in[6], out[1], out[2]};
    cpu::QuantizedStateRefs v{in[4], in[5], in[7], out[3], out[4]};
    auto a = AdamW4bitUpdateAttrs::read(inst);
    return adamw4bitUpdate(ctx, in[0], in[1], in[8], in[9], m, v,
                           adamwOptions(a, a.roundingSeed, partNumber(in, 10)),
                           a.blockSize, out[0]);
  }
  case Kernel::SGD8bitUpdate: {
    // param, grad, buffer codes, buffer absmax, map, lr, step.
    cpu::QuantizedStateRefs buffer{in[2], in[3], in[4], out[1], out[2]};
    auto a = SGD8bitUpdateAttrs::read(inst);
    return sgd8bitUpdate(ctx, in[0], in[1], in[5], in[6], buffer, sgdOptions(a),
                         a.blockSize, out[0]);
  }
  case Kernel::AdafactorUpdate: {
    size_t states = out.size() - 1;
    std::vector<TensorRef> state(in.begin() + 2, in.begin() + 2 + states);
    std::vector<TensorRef> newState(out.begin() + 1, out.end());
    return adafactorUpdate(
        ctx, in[0], in[1], state, in[2 + states], in[3 + states],
        adafactorOptions(AdafactorUpdateAttrs::read(inst)), out[0], newState);
  }
  case Kernel::GlobalNorm:
    return globalNorm(ctx, in, out[0]);
  case Kernel::ScaleLoss:
    return scaleLoss(ctx, in[0], in[1], out[0]);
  case Kernel::Unscale:
    return unscale(ctx, in[0], in[1], out[0]);
  case Kernel::AllFinite:
    return allFinite(ctx, in, out[0]);
  case Kernel::UpdateLossScale: {
    auto a = UpdateLossScaleAttrs::read(inst);
    return updateLossScale(ctx, in[0], in[1], in[2], a.growthFactor,
                           a.backoffFactor, a.growthInterval, out[0], out[1]);
  }
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
