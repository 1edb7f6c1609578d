//===- Elementwise.cu - arithmetic, activations, select, casts on the GPU -===//
//
// The CUDA kernels of the elementwise tg ops, one thread per result element
// in a grid-stride loop, with the semantics of the CPU kernels in
// cpu/Elementwise.cpp: binary arithmetic with NumPy broadcasting on floats
// (f32 math, f16/bf16 rounded once on store) and on i32/i64 (two's complement
// wrap, division toward zero, INT_MIN / -1 wraps, a zero divisor raises
// kIntegerDivisionByZero), the unary float functions and activation
// gradients, tg.where, and tg.cast between every pair of element types. Each
// thread reads its operand elements before writing its result element, so a
// result may be the very buffer of a same-shaped operand.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include "tgc/Support/MultiTensor.h"

#include <type_traits>

namespace tgc::rt::cuda {

static constexpr unsigned kThreads = 256;

__device__ inline bool isFloatType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

/// `flat` when both operands have the result's shape; otherwise each is
/// read through its broadcast strides. Each operand is read in its own
/// type (a 16-bit operand beside f32 is widened exactly).
template <BinaryKind Op>
__global__ void binaryFloatKernel(const void *lhs, DType lhsType,
                                  const void *rhs, DType rhsType, void *result,
                                  DType dtype, Dims lhsDims, Dims rhsDims,
                                  bool flat, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    int64_t a = flat ? i : broadcastOffset(lhsDims, i);
    int64_t b = flat ? i : broadcastOffset(rhsDims, i);
    float value = applyFloat<Op>(loadFloat(lhs, lhsType, a),
                                 loadFloat(rhs, rhsType, b));
    storeFloat(result, dtype, i, value);
  }
}

template <BinaryKind Op, typename T>
__global__ void binaryIntKernel(const T *lhs, const T *rhs, T *result,
                                Dims lhsDims, Dims rhsDims, bool flat,
                                int64_t n, DeviceError *error) {
  TGC_GRID_LOOP(i, n) {
    T a = lhs[flat ? i : broadcastOffset(lhsDims, i)];
    T b = rhs[flat ? i : broadcastOffset(rhsDims, i)];
    if constexpr (Op == BinaryKind::Div) {
      if (b == 0) {
        raiseError(error, kIntegerDivisionByZero, i);
        result[i] = 0;
        continue;
      }
    }
    result[i] = applyInt<Op, T>(a, b);
  }
}

template <BinaryKind Op>
static Status binary(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
                     TensorRef &result, const char *name) {
  int64_t n = result.numElements();
  if (n == 0)
    return Status::success();
  bool flat = lhs.shape == result.shape && rhs.shape == result.shape;
  Dims lhsDims, rhsDims;
  if (!flat && (!broadcastDims(lhs.shape, result.shape, lhsDims) ||
                !broadcastDims(rhs.shape, result.shape, rhsDims)))
    return Status::failure(std::string(name) +
                           ": broadcasting supports up to 8 dimensions");
  cudaStream_t stream = streamOf(ctx);
  unsigned blocks = blocksFor(n, kThreads);
  switch (lhs.dtype) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    binaryFloatKernel<Op><<<blocks, kThreads, 0, stream>>>(
        lhs.data, lhs.dtype, rhs.data, rhs.dtype, result.data, result.dtype,
        lhsDims, rhsDims, flat, n);
    break;
  case DType::I32:
    binaryIntKernel<Op, int32_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const int32_t *>(lhs.data),
        static_cast<const int32_t *>(rhs.data),
        static_cast<int32_t *>(result.data), lhsDims, rhsDims, flat, n,
        ctx.deviceError);
    break;
  case DType::I64:
    binaryIntKernel<Op, int64_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const int64_t *>(lhs.data),
        static_cast<const int64_t *>(rhs.data),
        static_cast<int64_t *>(result.data), lhsDims, rhsDims, flat, n,
        ctx.deviceError);
    break;
  default:
    return Status::failure(std::string(name) +
                           ": needs f32, f16, bf16, i32 or i64 operands, "
                           "found " +
                           dtypeName(lhs.dtype));
  }
  TGC_CUDA_LAUNCH(name);
  return Status::success();
}

Status add(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
           TensorRef &result) {
  return binary<BinaryKind::Add>(ctx, lhs, rhs, result, "add");
}
Status sub(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
           TensorRef &result) {
  return binary<BinaryKind::Sub>(ctx, lhs, rhs, result, "sub");
}
Status mul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
           TensorRef &result) {
  return binary<BinaryKind::Mul>(ctx, lhs, rhs, result, "mul");
}
Status div(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
           TensorRef &result) {
  return binary<BinaryKind::Div>(ctx, lhs, rhs, result, "div");
}
Status maximum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
               TensorRef &result) {
  return binary<BinaryKind::Maximum>(ctx, lhs, rhs, result, "maximum");
}
Status minimum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs,
               TensorRef &result) {
  return binary<BinaryKind::Minimum>(ctx, lhs, rhs, result, "minimum");
}

//===----------------------------------------------------------------------===//
// Unary functions and activation gradients
//===----------------------------------------------------------------------===//

namespace {
enum class UnaryOp { Exp, Log, Tanh, Gelu, GeluExact };
enum class GradOp { Gelu, GeluExact, Tanh };
} // namespace

template <UnaryOp Op> __device__ inline float applyUnary(float x) {
  if constexpr (Op == UnaryOp::Exp)
    return expf(x);
  else if constexpr (Op == UnaryOp::Log)
    return logf(x);
  else if constexpr (Op == UnaryOp::Tanh)
    return tanhf(x);
  else if constexpr (Op == UnaryOp::GeluExact)
    return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
  else
    return geluTanh(x);
}

/// `x` is the activation's operand (its result for tanh), `g` the incoming
/// gradient.
template <GradOp Op> __device__ inline float applyGrad(float x, float g) {
  if constexpr (Op == GradOp::Gelu) {
    return geluTanhGrad(x, g);
  } else if constexpr (Op == GradOp::GeluExact) {
    float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
    return g * (cdf + x * kInvSqrt2Pi * expf(-0.5f * x * x));
  } else {
    return g * (1.0f - x * x);
  }
}

/// The functions above as types, beside the formula:: types of Kernels.def.
template <UnaryOp Op> struct Unary {
  static __device__ float value(float x) { return applyUnary<Op>(x); }
};
template <GradOp Op> struct Grad {
  static __device__ float value(float x, float g) { return applyGrad<Op>(x, g); }
};

template <typename F>
__global__ void unaryKernel(const void *input, void *result, DType dtype,
                            int64_t n) {
  TGC_GRID_LOOP(i, n) {
    storeFloat(result, dtype, i, F::value(loadFloat(input, dtype, i)));
  }
}

template <typename F>
__global__ void gradKernel(const void *input, const void *grad, void *result,
                           DType dtype, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    float value =
        F::value(loadFloat(input, dtype, i), loadFloat(grad, dtype, i));
    storeFloat(result, dtype, i, value);
  }
}

template <typename F>
static Status unary(Context &ctx, const TensorRef &input, TensorRef &result,
                    const char *name) {
  int64_t n = input.numElements();
  if (n == 0)
    return Status::success();
  unaryKernel<F><<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      input.data, result.data, input.dtype, n);
  TGC_CUDA_LAUNCH(name);
  return Status::success();
}

template <typename F>
static Status activationGrad(Context &ctx, const TensorRef &input,
                             const TensorRef &grad, TensorRef &result,
                             const char *name) {
  int64_t n = input.numElements();
  if (n == 0)
    return Status::success();
  gradKernel<F><<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      input.data, grad.data, result.data, input.dtype, n);
  TGC_CUDA_LAUNCH(name);
  return Status::success();
}

// The elementwise functions of Kernels.def, from their formulas.
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  Status FUNCTION(Context &ctx, const TensorRef &input, TensorRef &result) {   \
    return unary<formula::ID>(ctx, input, result, NAME);                       \
  }
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  Status FUNCTION##Grad(Context &ctx, const TensorRef &input,                  \
                        const TensorRef &grad, TensorRef &result) {            \
    return activationGrad<formula::ID##Grad>(ctx, input, grad, result,         \
                                             NAME "_grad");                    \
  }
#include "tgc/format/Kernels.def"

Status exp(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary<Unary<UnaryOp::Exp>>(ctx, input, result, "exp");
}
Status log(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary<Unary<UnaryOp::Log>>(ctx, input, result, "log");
}
Status tanh(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary<Unary<UnaryOp::Tanh>>(ctx, input, result, "tanh");
}
Status gelu(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary<Unary<UnaryOp::Gelu>>(ctx, input, result, "gelu");
}
Status geluExact(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary<Unary<UnaryOp::GeluExact>>(ctx, input, result, "gelu");
}

//===----------------------------------------------------------------------===//
// SwiGLU
//===----------------------------------------------------------------------===//

/// silu(gate) rounded to the type, times up (tg.silu's and tg.mul's values).
__global__ void swigluKernel(const void *gate, const void *up, void *result,
                             DType dtype, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    float silu =
        roundedTo(dtype, formula::Silu::value(loadFloat(gate, dtype, i)));
    storeFloat(result, dtype, i, silu * loadFloat(up, dtype, i));
  }
}

/// The VJPs of tg.mul and tg.silu, each intermediate rounded as they round
/// it; the three operands read before either gradient is stored.
__global__ void swigluGradKernel(const void *gate, const void *up,
                                 const void *grad, void *gateGrad, void *upGrad,
                                 DType dtype, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    float x = loadFloat(gate, dtype, i), y = loadFloat(up, dtype, i),
          dy = loadFloat(grad, dtype, i);
    float silu = roundedTo(dtype, formula::Silu::value(x));
    float dsilu = roundedTo(dtype, dy * y);
    storeFloat(gateGrad, dtype, i, formula::SiluGrad::value(x, dsilu));
    storeFloat(upGrad, dtype, i, dy * silu);
  }
}

Status swiglu(Context &ctx, const TensorRef &gate, const TensorRef &up,
              TensorRef &result) {
  int64_t n = gate.numElements();
  if (n == 0)
    return Status::success();
  swigluKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      gate.data, up.data, result.data, gate.dtype, n);
  TGC_CUDA_LAUNCH("swiglu");
  return Status::success();
}

Status swigluGrad(Context &ctx, const TensorRef &gate, const TensorRef &up,
                  const TensorRef &grad, TensorRef &gateGrad,
                  TensorRef &upGrad) {
  int64_t n = gate.numElements();
  if (n == 0)
    return Status::success();
  swigluGradKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      gate.data, up.data, grad.data, gateGrad.data, upGrad.data, gate.dtype, n);
  TGC_CUDA_LAUNCH("swiglu_grad");
  return Status::success();
}

Status geluGrad(Context &ctx, const TensorRef &input, const TensorRef &grad,
                TensorRef &result) {
  return activationGrad<Grad<GradOp::Gelu>>(ctx, input, grad, result, "gelu_grad");
}
Status geluExactGrad(Context &ctx, const TensorRef &input,
                     const TensorRef &grad, TensorRef &result) {
  return activationGrad<Grad<GradOp::GeluExact>>(ctx, input, grad, result,
                                           "gelu_grad");
}
Status tanhGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                TensorRef &result) {
  return activationGrad<Grad<GradOp::Tanh>>(ctx, output, grad, result, "tanh_grad");
}

//===----------------------------------------------------------------------===//
// Select
//===----------------------------------------------------------------------===//

__global__ void whereKernel(const uint8_t *condition, const void *lhs,
                            const void *rhs, void *result, DType dtype,
                            Dims conditionDims, Dims lhsDims, Dims rhsDims,
                            bool flat, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    int64_t c = flat ? i : broadcastOffset(conditionDims, i);
    int64_t a = flat ? i : broadcastOffset(lhsDims, i);
    int64_t b = flat ? i : broadcastOffset(rhsDims, i);
    float value =
        condition[c] ? loadFloat(lhs, dtype, a) : loadFloat(rhs, dtype, b);
    storeFloat(result, dtype, i, value);
  }
}

Status where(Context &ctx, const TensorRef &condition, const TensorRef &lhs,
             const TensorRef &rhs, TensorRef &result) {
  int64_t n = result.numElements();
  if (n == 0)
    return Status::success();
  bool flat = condition.shape == result.shape && lhs.shape == result.shape &&
              rhs.shape == result.shape;
  Dims conditionDims, lhsDims, rhsDims;
  if (!flat && (!broadcastDims(condition.shape, result.shape, conditionDims) ||
                !broadcastDims(lhs.shape, result.shape, lhsDims) ||
                !broadcastDims(rhs.shape, result.shape, rhsDims)))
    return Status::failure("where: broadcasting supports up to 8 dimensions");
  whereKernel<<<blocksFor(n, kThreads), kThreads, 0, streamOf(ctx)>>>(
      static_cast<const uint8_t *>(condition.data), lhs.data, rhs.data,
      result.data, lhs.dtype, conditionDims, lhsDims, rhsDims, flat, n);
  TGC_CUDA_LAUNCH("where");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Float to integer as tg.cast: toward zero, saturating, NaN to 0 (the
/// CPU's truncateToInt, in f64).
__device__ inline int64_t truncateToInt(double value, int64_t low,
                                        int64_t high) {
  if (isnan(value))
    return 0;
  if (value <= double(low))
    return low;
  if (value >= double(high))
    return high;
  return int64_t(value);
}

__device__ inline int64_t floatToInt(float value, DType to) {
  switch (to) {
  case DType::I64:
    return truncateToInt(value, INT64_MIN, INT64_MAX);
  case DType::I32:
    return truncateToInt(value, INT32_MIN, INT32_MAX);
  case DType::I8:
    return truncateToInt(value, INT8_MIN, INT8_MAX);
  default: // i1: x != 0, so NaN is true
    return value != 0.0f ? 1 : 0;
  }
}

/// Integer (or i1) to float: correctly rounded into every float type.
__device__ inline float intToFloat(int64_t value, DType to) {
  if (to == DType::F32)
    return __ll2float_rn(value);
  return roundToOddF32(__ll2double_rn(value));
}

__global__ void castKernel(const void *input, DType from, void *result,
                           DType to, int64_t n) {
  TGC_GRID_LOOP(i, n) {
    if (isFloatType(from)) {
      float value = loadFloat(input, from, i);
      if (isFloatType(to))
        storeFloat(result, to, i, value);
      else
        storeInt(result, to, i, floatToInt(value, to));
    } else {
      // loadInt reads i1 as 0/1; storeInt wraps into narrower integers.
      int64_t value = loadInt(input, from, i);
      if (isFloatType(to))
        storeFloat(result, to, i, intToFloat(value, to));
      else
        storeInt(result, to, i, value);
    }
  }
}

Status cast(Context &ctx, const TensorRef &input, TensorRef &result) {
  int64_t n = input.numElements();
  if (n == 0)
    return Status::success();
  cudaStream_t stream = streamOf(ctx);
  bool sameElements = input.data == result.data &&
                      dtypeSize(input.dtype) == dtypeSize(result.dtype);
  StreamScratch scratch;
  const void *source = input.data;
  if (input.dtype == result.dtype) {
    if (input.data == result.data)
      return Status::success();
    if (bytesOverlap(input, result)) {
      Status status = stageCopy(ctx, input, scratch, source);
      if (!status.ok())
        return status;
    }
    TGC_CUDA_CALL(cudaMemcpyAsync(result.data, source, input.numBytes(),
                                  cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  // Element sizes differ (or the buffers are offset), so an overlapping
  // result would overwrite operand elements other threads have not read.
  if (!sameElements && bytesOverlap(input, result)) {
    Status status = stageCopy(ctx, input, scratch, source);
    if (!status.ok())
      return status;
  }
  castKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(
      source, input.dtype, result.data, result.dtype, n);
  TGC_CUDA_LAUNCH("cast");
  return Status::success();
}

/// The tensors of one multi_cast launch (in the kernel's parameters).
struct MultiCastTable {
  const void *input[kTensorsPerLaunch];
  void *result[kTensorsPerLaunch];
  int64_t count[kTensorsPerLaunch];
  int64_t firstBlock[kTensorsPerLaunch + 1];
  DType from[kTensorsPerLaunch], to[kTensorsPerLaunch];
  int tensors;
};
static_assert(sizeof(MultiCastTable) + 64 <= kKernelParamBytes,
              "a kernel's parameters hold at most 32,764 bytes");

/// castKernel's float conversion over the blocks of the launch's tensors:
/// each block converts elements of one tensor.
__global__ void multiCastKernel(MultiCastTable table) {
  TensorBlock b = tensorBlock(table.firstBlock, table.tensors);
  int k = b.tensor;
  for (int64_t i = b.first; i < table.count[k]; i += b.stride)
    storeFloat(table.result[k], table.to[k], i,
               loadFloat(table.input[k], table.from[k], i));
}

Status multiCast(Context &ctx, const std::vector<TensorRef> &in,
                 std::vector<TensorRef> &out) {
  // As many float results as float operands, as the loader checked.
  bool overlap = false;
  for (size_t i = 0; i < in.size(); ++i) {
    for (const TensorRef &result : out)
      overlap = overlap || bytesOverlap(in[i], result);
  }
  // A result over an operand (no plan makes one) is converted a tensor at
  // a time, as cast stages it.
  if (overlap) {
    for (size_t i = 0; i < in.size(); ++i)
      if (Status s = cast(ctx, in[i], out[i]); !s.ok())
        return s;
    return Status::success();
  }
  for (size_t first = 0; first < in.size();
       first += size_t(kTensorsPerLaunch)) {
    MultiCastTable table{};
    int64_t blocks = 0;
    for (size_t i = first;
         i < in.size() && i < first + size_t(kTensorsPerLaunch); ++i) {
      int k = table.tensors++;
      table.input[k] = in[i].data;
      table.result[k] = out[i].data;
      table.from[k] = in[i].dtype;
      table.to[k] = out[i].dtype;
      table.count[k] = in[i].numElements();
      table.firstBlock[k] = blocks;
      blocks += blocksFor(table.count[k], kThreads);
    }
    table.firstBlock[table.tensors] = blocks;
    if (blocks > int64_t(0x7fffffff))
      return Status::failure("multi_cast: too many blocks for one launch");
    multiCastKernel<<<unsigned(blocks), kThreads, 0, streamOf(ctx)>>>(table);
    TGC_CUDA_LAUNCH("multi_cast");
  }
  return Status::success();
}

} // namespace tgc::rt::cuda
