//===- Elementwise.cpp - arithmetic, activations, select, casts ------------===//
//
// The elementwise tg ops: binary arithmetic with NumPy broadcasting on floats
// and on i32/i64 counters (integer arithmetic wraps, division truncates
// toward zero and rejects a zero divisor), the unary float functions and
// activations with their gradients, tg.where and tg.cast. Float math is done
// in f32 on f32 views of the operands and rounded once into 16-bit results.
// Each result element is written after its own operands were read, so a
// result may share its buffer with a same-shaped operand. Loops run on the
// thread team in fixed chunks (Parallel.h); tanh, exp and log go through
// the vectorized functions of VecMath.h.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "Common.h"
#include "VecMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tgc::rt::cpu {

template <BinaryKind Kind, typename T>
static void binaryInt(const TensorRef &lhs, const TensorRef &rhs,
                      TensorRef &result, const Shape &shape,
                      const std::array<Shape, 3> &strides) {
  const T *a = static_cast<const T *>(lhs.data);
  const T *b = static_cast<const T *>(rhs.data);
  T *r = static_cast<T *>(result.data);
  forEachOffsetParallel<3>(shape, strides, [&](const auto &o) {
    r[o[0]] = applyInt<Kind, T>(a[o[1]], b[o[2]]);
  });
}

template <BinaryKind Kind>
static Status binary(const TensorRef &lhs, const TensorRef &rhs,
                     TensorRef &result) {
  DType dtype = lhs.dtype;
  if (!isFloat(dtype) && dtype != DType::I32 && dtype != DType::I64)
    return Status::failure(std::string("arithmetic needs f32, f16, bf16, "
                                       "i32 or i64 operands, found ") +
                           dtypeName(dtype));
  // Types (one, or a 16-bit operand beside an f32 operand and result,
  // widened on load) and the result's shape as the loader checked them.
  std::optional<Shape> shape = broadcastShapes(lhs.shape, rhs.shape);
  if (!shape)
    return Status::failure("operand shapes " + shapeString(lhs.shape) +
                           " and " + shapeString(rhs.shape) +
                           " do not broadcast");

  // Equal shapes are one flat loop.
  Shape space = result.shape;
  std::array<Shape, 3> strides;
  if (lhs.shape == result.shape && rhs.shape == result.shape) {
    space = {result.numElements()};
    strides = {Shape{1}, Shape{1}, Shape{1}};
  } else {
    strides = {rowMajorStrides(result.shape),
               broadcastStrides(lhs.shape, result.shape),
               broadcastStrides(rhs.shape, result.shape)};
  }

  if (isFloat(dtype)) {
    F32Operand a(lhs), b(rhs);
    F32Result r(result);
    if (space.size() == 1 && strides[1][0] == 1 && strides[2][0] == 1) {
      const float *x = a.data(), *y = b.data();
      float *out = r.data();
      parallelFor(space[0], kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          out[i] = applyFloat<Kind>(x[i], y[i]);
      });
    } else {
      // Row by row, with the common broadcasts (a row against a scalar or
      // a repeated row) as plain loops the compiler vectorizes.
      forEachRowParallel<3>(space, strides, [&](const auto &o, int64_t count,
                                                const auto &step) {
        float *out = r.data() + o[0];
        const float *x = a.data() + o[1], *y = b.data() + o[2];
        if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
          for (int64_t i = 0; i < count; ++i)
            out[i] = applyFloat<Kind>(x[i], y[i]);
        } else if (step[0] == 1 && step[1] == 1 && step[2] == 0) {
          float yv = *y;
          for (int64_t i = 0; i < count; ++i)
            out[i] = applyFloat<Kind>(x[i], yv);
        } else if (step[0] == 1 && step[1] == 0 && step[2] == 1) {
          float xv = *x;
          for (int64_t i = 0; i < count; ++i)
            out[i] = applyFloat<Kind>(xv, y[i]);
        } else {
          for (int64_t i = 0; i < count; ++i)
            out[i * step[0]] =
                applyFloat<Kind>(x[i * step[1]], y[i * step[2]]);
        }
      });
    }
    r.commit();
    return Status::success();
  }

  if (Kind == BinaryKind::Div && result.numElements() > 0) {
    int64_t count = rhs.numElements();
    for (int64_t i = 0; i < count; ++i)
      if (loadI64(rhs, i) == 0)
        return Status::failure("integer division by zero");
  }
  if (dtype == DType::I32)
    binaryInt<Kind, int32_t>(lhs, rhs, result, space, strides);
  else
    binaryInt<Kind, int64_t>(lhs, rhs, result, space, strides);
  return Status::success();
}

Status add(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Add>(lhs, rhs, result);
}
Status sub(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Sub>(lhs, rhs, result);
}
Status mul(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Mul>(lhs, rhs, result);
}
Status div(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Div>(lhs, rhs, result);
}
Status maximum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Maximum>(lhs, rhs, result);
}
Status minimum(Context &ctx, const TensorRef &lhs, const TensorRef &rhs, TensorRef &result) {
  return binary<BinaryKind::Minimum>(lhs, rhs, result);
}

//===----------------------------------------------------------------------===//
// Unary functions and activation gradients
//===----------------------------------------------------------------------===//

/// Elements per block of the array functions below: a stack buffer's worth.
constexpr int64_t kBlock = 256;

/// Applies the array function `fn(in, out, count)` to a float tensor, in
/// chunks on the thread team.
template <typename ArrayFn>
static Status unaryArray(const TensorRef &input, TensorRef &result,
                         ArrayFn fn) {
  F32Operand x(input);
  F32Result r(result);
  const float *in = x.data();
  float *out = r.data();
  parallelFor(input.numElements(), kElementGrain,
              [&](int64_t begin, int64_t end) {
                fn(in + begin, out + begin, end - begin);
              });
  r.commit();
  return Status::success();
}

/// Applies `fn` to every element of a float tensor.
template <typename Fn>
static Status unary(const TensorRef &input, TensorRef &result, Fn fn) {
  return unaryArray(input, result,
                    [&](const float *in, float *out, int64_t count) {
                      for (int64_t i = 0; i < count; ++i)
                        out[i] = fn(in[i]);
                    });
}

/// Applies the array function `fn(a, b, out, count)` to two float tensors
/// of one type and shape (an activation's operand or result and the
/// incoming gradient), in chunks on the thread team.
template <typename ArrayFn>
static Status pointwise2Array(const TensorRef &a, const char *aName,
                              const TensorRef &b, TensorRef &result,
                              ArrayFn fn) {
  F32Operand x(a), y(b);
  F32Result r(result);
  const float *xs = x.data(), *ys = y.data();
  float *out = r.data();
  parallelFor(a.numElements(), kElementGrain,
              [&](int64_t begin, int64_t end) {
                fn(xs + begin, ys + begin, out + begin, end - begin);
              });
  r.commit();
  return Status::success();
}

/// Applies `fn(a, b)` elementwise as pointwise2Array.
template <typename Fn>
static Status pointwise2(const TensorRef &a, const char *aName,
                         const TensorRef &b, TensorRef &result, Fn fn) {
  return pointwise2Array(
      a, aName, b, result,
      [&](const float *x, const float *y, float *out, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          out[i] = fn(x[i], y[i]);
      });
}

/// tanh(sqrt(2 / pi) (x + 0.044715 x^3)) of `count` elements into `t`.
static void geluTanhInner(const float *x, float *t, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    t[i] = kSqrt2OverPi * (x[i] + kGeluCubic * x[i] * x[i] * x[i]);
  vec::tanh(t, t, count);
}

// The elementwise functions of Kernels.def, from their formulas.
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  Status FUNCTION(Context &, const TensorRef &input, TensorRef &result) {      \
    return unary(input, result,                                                \
                 [](float x) { return formula::ID::value(x); });               \
  }
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  Status FUNCTION##Grad(Context &, const TensorRef &input,                     \
                        const TensorRef &grad, TensorRef &result) {            \
    return pointwise2(input, "input", grad, result, [](float x, float g) {     \
      return formula::ID##Grad::value(x, g);                                   \
    });                                                                        \
  }
#include "tgc/format/Kernels.def"

Status exp(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unaryArray(input, result, vec::exp);
}
Status log(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unaryArray(input, result, vec::log);
}
Status tanh(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unaryArray(input, result, vec::tanh);
}
void geluTanhArray(const float *x, float *out, int64_t count) {
  float t[kBlock];
  for (int64_t b = 0; b < count; b += kBlock) {
    int64_t n = std::min(kBlock, count - b);
    geluTanhInner(x + b, t, n);
    for (int64_t i = 0; i < n; ++i)
      out[b + i] = 0.5f * x[b + i] * (1.0f + t[i]);
  }
}

Status gelu(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unaryArray(input, result, geluTanhArray);
}
Status geluExact(Context &ctx, const TensorRef &input, TensorRef &result) {
  return unary(input, result, [](float x) { return geluErf(x); });
}

void geluTanhGradArray(const float *xs, const float *gs, float *out,
                       int64_t count) {
  float ts[kBlock];
  for (int64_t b = 0; b < count; b += kBlock) {
    int64_t n = std::min(kBlock, count - b);
    geluTanhInner(xs + b, ts, n);
    for (int64_t i = 0; i < n; ++i) {
      float x = xs[b + i], g = gs[b + i], t = ts[i];
      float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
      out[b + i] = g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
    }
  }
}

Status geluGrad(Context &ctx, const TensorRef &input, const TensorRef &grad,
                TensorRef &result) {
  return pointwise2Array(input, "input", grad, result, geluTanhGradArray);
}

Status geluExactGrad(Context &ctx, const TensorRef &input, const TensorRef &grad,
                     TensorRef &result) {
  return pointwise2(input, "input", grad, result, [](float x, float g) {
    float cdf = 0.5f * (1.0f + std::erf(x * kSqrtHalf));
    return g * (cdf + x * kInvSqrt2Pi * std::exp(-0.5f * x * x));
  });
}

Status tanhGrad(Context &ctx, const TensorRef &output, const TensorRef &grad,
                TensorRef &result) {
  return pointwise2(output, "output", grad, result,
                    [](float y, float g) { return g * (1.0f - y * y); });
}

//===----------------------------------------------------------------------===//
// SwiGLU
//===----------------------------------------------------------------------===//

// silu(gate) rounded to the type, then its product with up: tg.silu's and
// tg.mul's kernels' values. Each element's operands are read before its
// result is written, so the result may be either operand's storage.
Status swiglu(Context &ctx, const TensorRef &gate, const TensorRef &up,
              TensorRef &result) {
  F32Operand g(gate), u(up);
  F32Result r(result);
  const float *gs = g.data(), *us = u.data();
  float *out = r.data();
  DType dtype = gate.dtype;
  parallelFor(
      gate.numElements(), kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          out[i] = roundedTo(dtype, formula::Silu::value(gs[i])) * us[i];
      });
  r.commit();
  return Status::success();
}

// tg.mul's and tg.silu_grad's values: grad * up rounded to the type, then
// silu's gradient at gate; grad * silu(gate), silu(gate) rounded first.
Status swigluGrad(Context &ctx, const TensorRef &gate, const TensorRef &up,
                  const TensorRef &grad, TensorRef &gateGrad,
                  TensorRef &upGrad) {
  F32Operand g(gate), u(up), d(grad);
  F32Result rg(gateGrad), ru(upGrad);
  const float *gs = g.data(), *us = u.data(), *ds = d.data();
  float *dg = rg.data(), *du = ru.data();
  DType dtype = gate.dtype;
  parallelFor(gate.numElements(), kElementGrain,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  float x = gs[i], y = us[i], dy = ds[i];
                  float silu = roundedTo(dtype, formula::Silu::value(x));
                  float dsilu = roundedTo(dtype, dy * y);
                  dg[i] = formula::SiluGrad::value(x, dsilu);
                  du[i] = dy * silu;
                }
              });
  rg.commit();
  ru.commit();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Select and cast
//===----------------------------------------------------------------------===//

Status where(Context &ctx, const TensorRef &condition, const TensorRef &lhs,
             const TensorRef &rhs, TensorRef &result) {
  std::optional<Shape> shape = broadcastShapes(lhs.shape, rhs.shape);
  if (shape)
    shape = broadcastShapes(condition.shape, *shape);
  if (!shape)
    return Status::failure("condition, lhs and rhs shapes " +
                           shapeString(condition.shape) + ", " +
                           shapeString(lhs.shape) + " and " +
                           shapeString(rhs.shape) + " do not broadcast");
  const uint8_t *c = static_cast<const uint8_t *>(condition.data);
  F32Operand a(lhs), b(rhs);
  F32Result r(result);
  forEachOffsetParallel<4>(result.shape,
                   {rowMajorStrides(result.shape),
                    broadcastStrides(condition.shape, result.shape),
                    broadcastStrides(lhs.shape, result.shape),
                    broadcastStrides(rhs.shape, result.shape)},
                   [&](const auto &o) {
                     r[o[0]] = c[o[1]] ? a[o[2]] : b[o[3]];
                   });
  r.commit();
  return Status::success();
}

Status cast(Context &ctx, const TensorRef &input, TensorRef &result) {
  int64_t count = input.numElements();
  if (input.dtype == result.dtype) {
    if (count > 0 && result.data != input.data)
      std::memmove(result.data, input.data, input.numBytes());
    return Status::success();
  }
  // Element sizes differ, so an overlapping result would overwrite operand
  // elements not yet read: convert from a copy then.
  TensorRef source = input;
  std::vector<char> copy;
  if (overlaps(input, result)) {
    const char *bytes = static_cast<const char *>(input.data);
    copy.assign(bytes, bytes + input.numBytes());
    source.data = copy.data();
  }
  if (isFloat(source.dtype) && isFloat(result.dtype)) {
    F32Operand x(source);
    storeF32Array(x.data(), count, result);
  } else if (isFloat(source.dtype)) {
    // To an integer (toward zero, saturating) or to i1 (x != 0).
    for (int64_t i = 0; i < count; ++i)
      storeF32(result, i, loadF32(source, i));
  } else {
    // From an integer or i1: integers wrap, floats are correctly rounded.
    for (int64_t i = 0; i < count; ++i)
      storeI64(result, i, loadI64(source, i));
  }
  return Status::success();
}

Status multiCast(Context &ctx, const std::vector<TensorRef> &in,
                 std::vector<TensorRef> &out) {
  if (in.empty() || in.size() != out.size())
    return Status::failure("multi_cast needs as many results as operands, "
                           "at least one");
  for (size_t i = 0; i < in.size(); ++i) {
    TGC_RETURN_IF_ERROR(cast(ctx, in[i], out[i]));
  }
  return Status::success();
}

} // namespace tgc::rt::cpu
