//===- Optimizers.cpp - SGD, AdamW, gradient norm, loss scaling ------------===//
//
// The optimizer updates and the mixed-precision ops, written to match
// torch.optim.SGD, torch.optim.AdamW (single-tensor path, amsgrad off) and
// torch.cuda.amp.GradScaler: per-element math in f32, hyper-parameter
// scalars (bias corrections, step size) in f64 as torch computes them in
// Python, then rounded to f32. The updates are elementwise and read every
// element of an operand before writing the same element of a result, so
// they are correct in place: new_param over param, the new moments over the
// old ones. An update at step < 1 is a runtime error.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"

#include "Common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tgc::rt::cpu {

/// Reads the f32 learning rate and the 1-based i64 step.
static Status readLrAndStep(const TensorRef &lr, const TensorRef &step,
                            float &lrValue, int64_t &stepValue) {
  TGC_RETURN_IF_ERROR(expectScalar(lr, "lr"));
  TGC_RETURN_IF_ERROR(expectDType(lr, DType::F32, "lr"));
  TGC_RETURN_IF_ERROR(expectScalar(step, "step"));
  TGC_RETURN_IF_ERROR(expectDType(step, DType::I64, "step"));
  lrValue = loadF32(lr, 0);
  stepValue = loadI64(step, 0);
  if (stepValue < 1)
    return Status::failure("optimizer step must be >= 1, found " +
                           std::to_string(stepValue));
  return Status::success();
}

/// Checks a float tensor of the parameter's shape.
namespace {

/// One SGD-with-momentum step, element by element, for the f32 and the
/// 8-bit buffer alike: `direction` from the parameter, gradient and old
/// buffer, which it replaces by the new one. At step 1 the buffer starts as
/// the gradient and the old one is not read (it may be uninitialized), as
/// torch does.
struct SgdMomentumStep {
  float lr, decay, mu, gradWeight;
  bool nesterov, first;

  SgdMomentumStep(float lr, int64_t t, double momentum, double dampening,
                  double weightDecay, bool nesterov)
      : lr(lr), decay(float(weightDecay)), mu(float(momentum)),
        gradWeight(float(1.0 - dampening)), nesterov(nesterov),
        first(t == 1) {}

  /// The new parameter; `buffer` holds the old buffer and gets the new.
  float apply(float p, float g, float &buffer) const {
    float d = g + decay * p;
    float b = first ? d : mu * buffer + gradWeight * d;
    float direction = nesterov ? d + mu * b : b;
    buffer = b;
    return p - lr * direction;
  }
};

/// One AdamW step: the step's scalars as torch computes them in Python
/// floats (f64, then f32), and the element update shared by the f32 and
/// the 8-bit moments.
struct AdamWStep {
  float stepSize, biasCorrection2Sqrt, decay, b1, oneMinusB1, b2, oneMinusB2,
      epsilon;

  AdamWStep(float lr, int64_t t, double beta1, double beta2, double eps,
            double weightDecay) {
    double biasCorrection1 = 1.0 - std::pow(beta1, double(t));
    double biasCorrection2 = 1.0 - std::pow(beta2, double(t));
    stepSize = float(double(lr) / biasCorrection1);
    biasCorrection2Sqrt = float(std::sqrt(biasCorrection2));
    decay = float(1.0 - double(lr) * weightDecay);
    b1 = float(beta1);
    oneMinusB1 = float(1.0 - beta1);
    b2 = float(beta2);
    oneMinusB2 = float(1.0 - beta2);
    epsilon = float(eps);
  }

  /// The new parameter; `m` and `v` hold the old moments and get the new.
  float apply(float p, float g, float &m, float &v) const {
    float decayed = p * decay;
    m = b1 * m + oneMinusB1 * g;
    v = b2 * v + oneMinusB2 * g * g;
    float denom = std::sqrt(v) / biasCorrection2Sqrt + epsilon;
    return decayed - stepSize * (m / denom);
  }
};

/// A new parameter value as the store will round it: stochastically to
/// bf16 with a seed, else unchanged (the store rounds to nearest). `index`
/// is the element's in the whole tensor.
inline float rounded(float value, int64_t seed, int64_t t, int64_t index) {
  return seed ? roundBf16Stochastic(value, uint64_t(seed), t, index) : value;
}

/// The index in the whole tensor of a part's first element (AdamWOptions'
/// roundingPart): 0 for a whole tensor or rounding to nearest. (Only
/// hashed: wrapped, not overflowed, on a hostile part number.)
inline int64_t firstIndex(int64_t seed, const int64_t *part, int64_t count) {
  return seed && part ? int64_t(uint64_t(*part) * uint64_t(count)) : 0;
}

} // namespace

Status sgdUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                 const TensorRef &lr, const TensorRef &step,
                 const TensorRef *momentumBuffer, double momentum,
                 double dampening, double weightDecay, bool nesterov,
                 TensorRef &newParam, TensorRef *newMomentumBuffer) {
  // Types and shapes, and a buffer exactly with momentum, as the loader
  // checked them; the step is data.
  bool hasBuffer = momentumBuffer != nullptr;
  float lrValue;
  int64_t stepValue;
  TGC_RETURN_IF_ERROR(readLrAndStep(lr, step, lrValue, stepValue));

  int64_t count = param.numElements();
  float decay = float(weightDecay);
  F32Operand p(param), g(grad);
  F32Result newP(newParam);
  if (!hasBuffer) {
    parallelFor(count, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float d = g[i] + decay * p[i];
        newP[i] = p[i] - lrValue * d;
      }
    });
    newP.commit();
    return Status::success();
  }
  SgdMomentumStep update(lrValue, stepValue, momentum, dampening,
                        weightDecay, nesterov);
  F32Operand buf(*momentumBuffer);
  F32Result newBuf(*newMomentumBuffer);
  parallelFor(count, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float b = update.first ? 0.0f : buf[i];
      newP[i] = update.apply(p[i], g[i], b);
      newBuf[i] = b;
    }
  });
  newP.commit();
  newBuf.commit();
  return Status::success();
}

Status adamwUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                   const TensorRef &expAvg, const TensorRef &expAvgSq,
                   const TensorRef &lr, const TensorRef &step, double beta1,
                   double beta2, double eps, double weightDecay,
                   TensorRef &newParam, TensorRef &newExpAvg,
                   TensorRef &newExpAvgSq, int64_t roundingSeed,
                   const int64_t *roundingPart) {
  // Types, shapes and the rounding seed as the loader checked them.
  float lrValue;
  int64_t t;
  TGC_RETURN_IF_ERROR(readLrAndStep(lr, step, lrValue, t));

  AdamWStep update(lrValue, t, beta1, beta2, eps, weightDecay);
  int64_t count = param.numElements();
  int64_t first = firstIndex(roundingSeed, roundingPart, count);
  F32Operand p(param), g(grad), m(expAvg), v(expAvgSq);
  F32Result newP(newParam), newM(newExpAvg), newV(newExpAvgSq);
  parallelFor(count, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float mi = m[i], vi = v[i];
      newP[i] =
          rounded(update.apply(p[i], g[i], mi, vi), roundingSeed, t, first + i);
      newM[i] = mi;
      newV[i] = vi;
    }
  });
  newP.commit();
  newM.commit();
  newV.commit();
  return Status::success();
}

Status multiAdamwUpdate(Context &ctx, const std::vector<TensorRef> &in,
                        std::vector<TensorRef> &out, double beta1,
                        double beta2, double eps, double weightDecay) {
  // N params, grads, exp_avgs and exp_avg_sqs, lr and step; 3 x N
  // results (the loader checked).
  size_t n = out.size() / 3;
  for (size_t i = 0; i < n; ++i)
    TGC_RETURN_IF_ERROR(adamwUpdate(ctx, in[i], in[n + i], in[2 * n + i],
                                    in[3 * n + i], in[4 * n], in[4 * n + 1],
                                    beta1, beta2, eps, weightDecay, out[i],
                                    out[n + i], out[2 * n + i], 0));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// 8-bit state (bitsandbytes' blockwise dynamic quantization)
//===----------------------------------------------------------------------===//

namespace {

/// A moment kept as ui8 codes into a 256-entry map, scaled by one f32
/// absmax per block: the operand and result views of one state tensor.
struct QuantizedState {
  const uint8_t *codes;
  const float *absmax;
  const float *map;
  uint8_t *newCodes;
  float *newAbsmax;
  bool isSigned;

  QuantCodebook codebook;

  QuantizedState(const QuantizedStateRefs &state, bool isSigned)
      : codes(static_cast<const uint8_t *>(state.codes.data)),
        absmax(static_cast<const float *>(state.absmax.data)),
        map(static_cast<const float *>(state.map.data)),
        newCodes(static_cast<uint8_t *>(state.newCodes.data)),
        newAbsmax(static_cast<float *>(state.newAbsmax.data)),
        isSigned(isSigned) {
    codebook.build(this->map);
  }

  float dequantize(int64_t i, int64_t block) const {
    return map[codes[i]] * absmax[block];
  }
  void requantize(const float *values, int64_t count, int64_t first,
                  int64_t block) const;
};

/// Quantizes the updated values of one block (`values`, `count` of them)
/// into codes starting at element `first`, and stores the block's absmax.
void requantizeBlock(const QuantizedState &state, const float *values,
                     int64_t count, int64_t first, int64_t block) {
  float absmax = 0.0f;
  for (int64_t e = 0; e < count; ++e)
    absmax = std::max(absmax, std::fabs(values[e]));
  float inverse = absmax > 0.0f ? 1.0f / absmax : 0.0f;
  for (int64_t e = 0; e < count; ++e)
    state.newCodes[first + e] =
        state.codebook.quantize(values[e] * inverse, state.isSigned);
  state.newAbsmax[block] = absmax;
}

void QuantizedState::requantize(const float *values, int64_t count,
                                int64_t first, int64_t block) const {
  requantizeBlock(*this, values, count, first, block);
}

/// The AdamW update over blocks of quantized moments, for either width:
/// `State` dequantizes element i of block b (`dequantize(i, b)`) and
/// requantizes a block's new values (`requantize(values, count, first,
/// b)`). One block of f32 moments at a time, never a copy of the whole
/// state; blocks are independent (each has its own scale and whole bytes
/// of codes), so threads take chunks of them, in place.
template <typename State>
void quantizedAdamW(const TensorRef &param, const TensorRef &grad,
                    const State &m, const State &v, const AdamWStep &update,
                    const AdamWOptions &options, int64_t t, int64_t blockSize,
                    TensorRef &newParam) {
  int64_t count = param.numElements();
  int64_t seed = options.roundingSeed;
  int64_t whole = firstIndex(seed, options.roundingPart, count);
  F32Operand p(param), g(grad);
  F32Result newP(newParam);
  int64_t blocks = (count + blockSize - 1) / blockSize;
  parallelFor(blocks, grainFor(blockSize), [&](int64_t begin, int64_t end) {
    std::vector<float> mBlock(static_cast<size_t>(blockSize)),
        vBlock(static_cast<size_t>(blockSize));
    for (int64_t block = begin; block < end; ++block) {
      int64_t first = block * blockSize;
      int64_t size = std::min(blockSize, count - first);
      for (int64_t e = 0; e < size; ++e) {
        int64_t i = first + e;
        float &mi = mBlock[size_t(e)], &vi = vBlock[size_t(e)];
        mi = m.dequantize(i, block);
        vi = v.dequantize(i, block);
        newP[i] = rounded(update.apply(p[i], g[i], mi, vi), seed, t, whole + i);
      }
      m.requantize(mBlock.data(), size, first, block);
      v.requantize(vBlock.data(), size, first, block);
    }
  });
  newP.commit();
}

/// The step's scalars the 8-bit and 4-bit AdamW updates share, then their
/// block loop: `make(refs, isSigned)` makes a moment's State. The loader
/// checked the types, shapes, block size and rounding seed.
template <typename Make>
Status quantizedAdamWUpdate(const TensorRef &param, const TensorRef &grad,
                            const TensorRef &lr, const TensorRef &step,
                            const QuantizedStateRefs &m,
                            const QuantizedStateRefs &v,
                            const AdamWOptions &options, int64_t blockSize,
                            TensorRef &newParam, Make make) {
  float lrValue;
  int64_t t;
  TGC_RETURN_IF_ERROR(readLrAndStep(lr, step, lrValue, t));
  AdamWStep update(lrValue, t, options.beta1, options.beta2, options.eps,
                   options.weightDecay);
  quantizedAdamW(param, grad, make(m, /*isSigned=*/true),
                 make(v, /*isSigned=*/false), update, options, t, blockSize,
                 newParam);
  return Status::success();
}

} // namespace

void QuantCodebook::build(const float *values) {
  std::copy(values, values + 256, map);
  for (int i = 0; i < 255; ++i)
    midpoints[i] = (map[i] + map[i + 1]) * 0.5f;
  // The counts of midpoints below each bucket's smallest and largest value,
  // by a sweep in increasing value: positive buckets upward, negative ones
  // downward (their values fall as their bits rise). Buckets of infinities
  // and NaNs search everything.
  auto bucketValue = [](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  };
  auto sweep = [&](int first, int last, int direction) {
    int below = 0;
    for (int key = first; key != last; key += direction) {
      uint32_t lowBits = uint32_t(key) << 20, highBits = lowBits | 0xFFFFFu;
      bool negative = key >= 2048;
      float smallest = bucketValue(negative ? highBits : lowBits);
      float largest = bucketValue(negative ? lowBits : highBits);
      while (below < 255 && midpoints[below] < smallest)
        ++below;
      low[key] = uint8_t(below);
      int up = below;
      while (up < 255 && midpoints[up] < largest)
        ++up;
      high[key] = uint8_t(up);
    }
  };
  sweep(4087, 2047, -1); // negative finite values, most negative first
  sweep(0, 2040, +1);    // positive finite values
  for (int key : {2040, 2041, 2042, 2043, 2044, 2045, 2046, 2047, 4088, 4089,
                  4090, 4091, 4092, 4093, 4094, 4095}) {
    low[key] = 0;
    high[key] = 255;
  }
}

uint8_t QuantCodebook::quantize(float x, bool isSigned) const {
  // The number of midpoints below x: those below the bucket of x, then the
  // few inside it.
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  unsigned key = bits >> 20;
  int code = low[key];
  for (int k = code, end = high[key]; k < end; ++k)
    code += midpoints[k] < x;
  // bitsandbytes keeps the sign of a moment: a negative value that lands on
  // 0 (or above) takes the nearest negative code instead.
  if (isSigned && x < 0.0f && map[code] >= 0.0f && code > 0)
    --code;
  return uint8_t(code);
}

Status adamw8bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step, const QuantizedStateRefs &m8,
                       const QuantizedStateRefs &v8,
                       const AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam) {
  return quantizedAdamWUpdate(
      param, grad, lr, step, m8, v8, options, blockSize, newParam,
      [](const QuantizedStateRefs &refs, bool isSigned) {
        return QuantizedState(refs, isSigned);
      });
}

namespace {

/// A moment of 4-bit state: codes into a 16-entry map packed two a byte
/// (element 2k in the high nibble of byte k, 2k + 1 in the low one, as
/// torchao packs them), scaled by one f32 per block; rounded by
/// rt::quantize4 (torchao's rule).
struct Quant4State {
  const uint8_t *codes;
  const float *scales;
  uint8_t *newCodes;
  float *newScales;
  float map[16];

  explicit Quant4State(const QuantizedStateRefs &state)
      : codes(static_cast<const uint8_t *>(state.codes.data)),
        scales(static_cast<const float *>(state.absmax.data)),
        newCodes(static_cast<uint8_t *>(state.newCodes.data)),
        newScales(static_cast<float *>(state.newAbsmax.data)) {
    std::memcpy(map, state.map.data, sizeof(map));
  }

  float dequantize(int64_t i, int64_t block) const {
    unsigned code = i & 1 ? codes[i >> 1] & 0xFu : codes[i >> 1] >> 4;
    return map[code] * scales[block];
  }

  /// A block's new values (`count` from the even element `first`) with the
  /// scale max(max |x|, 1e-12), as torchao's scale_tensor and
  /// quantize_4bit_with_qmap compute them.
  void requantize(const float *values, int64_t count, int64_t first,
                  int64_t block) const {
    float absmax = 0.0f;
    for (int64_t e = 0; e < count; ++e)
      absmax = std::max(absmax, std::fabs(values[e]));
    float scale = std::max(absmax, 1e-12f);
    for (int64_t e = 0; e < count; e += 2) {
      unsigned high = quantize4(map, values[e] / scale);
      unsigned low =
          e + 1 < count ? quantize4(map, values[e + 1] / scale) : 0;
      newCodes[(first + e) >> 1] = uint8_t(high << 4 | low);
    }
    newScales[block] = scale;
  }
};

} // namespace

Status adamw4bitUpdate(Context &ctx, const TensorRef &param,
                       const TensorRef &grad, const TensorRef &lr,
                       const TensorRef &step, const QuantizedStateRefs &m4,
                       const QuantizedStateRefs &v4,
                       const AdamWOptions &options, int64_t blockSize,
                       TensorRef &newParam) {
  return quantizedAdamWUpdate(
      param, grad, lr, step, m4, v4, options, blockSize, newParam,
      [](const QuantizedStateRefs &refs, bool) { return Quant4State(refs); });
}

Status sgd8bitUpdate(Context &ctx, const TensorRef &param,
                     const TensorRef &grad, const TensorRef &lr,
                     const TensorRef &step, const QuantizedStateRefs &buffer,
                     const SGDOptions &options, int64_t blockSize,
                     TensorRef &newParam) {
  // Types, shapes and the block size as the loader checked them.
  float lrValue;
  int64_t stepValue;
  TGC_RETURN_IF_ERROR(readLrAndStep(lr, step, lrValue, stepValue));

  SgdMomentumStep update(lrValue, stepValue, options.momentum,
                         options.dampening, options.weightDecay,
                         options.nesterov);
  QuantizedState buf(buffer, /*isSigned=*/true);
  int64_t count = param.numElements();
  F32Operand p(param), g(grad);
  F32Result newP(newParam);
  int64_t blocks = (count + blockSize - 1) / blockSize;
  parallelFor(blocks, grainFor(blockSize), [&](int64_t begin, int64_t end) {
    std::vector<float> bBlock(static_cast<size_t>(blockSize));
    for (int64_t block = begin; block < end; ++block) {
      int64_t start = block * blockSize;
      int64_t size = std::min(blockSize, count - start);
      for (int64_t e = 0; e < size; ++e) {
        int64_t i = start + e;
        float &b = bBlock[size_t(e)];
        b = update.first ? 0.0f : buf.dequantize(i, block);
        newP[i] = update.apply(p[i], g[i], b);
      }
      requantizeBlock(buf, bBlock.data(), size, start, block);
    }
  });
  newP.commit();
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Adafactor
//===----------------------------------------------------------------------===//

namespace {
/// The step's scalars from the options, the step, the learning rate operand
/// and the parameter's RMS, as Hugging Face computes them (f64, then f32).
struct AdafactorScalars {
  float lr, beta2t, oneMinusBeta2t, eps1, decay;
};
} // namespace

static AdafactorScalars adafactorScalars(const AdafactorOptions &options,
                                         int64_t t, float lr,
                                         double paramRms) {
  AdafactorScalars s;
  double step = double(t);
  double relative = options.relativeStep
                        ? std::min(options.warmupInit ? 1e-6 * step : 1e-2,
                                   1.0 / std::sqrt(step))
                        : double(lr);
  double scale =
      options.scaleParameter ? std::max(options.eps2, paramRms) : 1.0;
  s.lr = float(scale * relative);
  double beta2t = 1.0 - std::pow(step, options.decayRate);
  s.beta2t = float(beta2t);
  s.oneMinusBeta2t = float(1.0 - beta2t);
  s.eps1 = float(options.eps1);
  s.decay = float(-options.weightDecay * double(s.lr));
  return s;
}

Status adafactorUpdate(Context &ctx, const TensorRef &param, const TensorRef &grad,
                       const std::vector<TensorRef> &state,
                       const TensorRef &lr, const TensorRef &step,
                       const AdafactorOptions &options, TensorRef &newParam,
                       std::vector<TensorRef> &newState) {
  // Types and shapes (row and column state for a parameter of rank >= 2,
  // else one tensor, all f32) as the loader checked them.
  bool factored = param.rank() >= 2;
  int64_t count = param.numElements();
  int64_t m = factored ? param.shape.back() : count;
  int64_t n = factored ? param.shape[param.shape.size() - 2] : 1;
  int64_t batches = (n == 0 || m == 0) ? 0 : count / (n * m);
  float lrValue;
  int64_t t;
  TGC_RETURN_IF_ERROR(readLrAndStep(lr, step, lrValue, t));

  F32Operand p(param), g(grad);
  double sumSquares = 0.0;
  for (int64_t i = 0; i < count; ++i)
    sumSquares += double(p[i]) * p[i];
  double paramRms = count ? std::sqrt(sumSquares / double(count)) : 0.0;
  AdafactorScalars s = adafactorScalars(options, t, lrValue, paramRms);

  // The second moment, then the update's scale per element.
  const float *v0 = static_cast<const float *>(state[0].data);
  float *newV0 = static_cast<float *>(newState[0].data);
  std::vector<float> rowMean(static_cast<size_t>(factored ? batches : 0));
  if (factored) {
    const float *col = static_cast<const float *>(state[1].data);
    float *newCol = static_cast<float *>(newState[1].data);
    std::vector<double> rowSum(static_cast<size_t>(n)),
        colSum(static_cast<size_t>(m));
    for (int64_t b = 0; b < batches; ++b) {
      std::fill(rowSum.begin(), rowSum.end(), 0.0);
      std::fill(colSum.begin(), colSum.end(), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          float gi = g[(b * n + i) * m + j];
          float u = gi * gi + s.eps1;
          rowSum[size_t(i)] += u;
          colSum[size_t(j)] += u;
        }
      double rowTotal = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        float r = s.beta2t * v0[b * n + i] +
                  s.oneMinusBeta2t * float(rowSum[size_t(i)] / double(m));
        newV0[b * n + i] = r;
        rowTotal += r;
      }
      for (int64_t j = 0; j < m; ++j)
        newCol[b * m + j] = s.beta2t * col[b * m + j] +
                            s.oneMinusBeta2t *
                                float(colSum[size_t(j)] / double(n));
      rowMean[size_t(b)] = float(rowTotal / double(n));
    }
  } else {
    for (int64_t i = 0; i < count; ++i)
      newV0[i] = s.beta2t * v0[i] + s.oneMinusBeta2t * (g[i] * g[i] + s.eps1);
  }
  const float *newCol =
      factored ? static_cast<const float *>(newState[1].data) : nullptr;
  auto update = [&](int64_t index) {
    if (!factored)
      return g[index] / std::sqrt(newV0[index]);
    int64_t j = index % m, i = (index / m) % n, b = index / (n * m);
    float r = 1.0f / std::sqrt(newV0[b * n + i] / rowMean[size_t(b)]);
    float c = 1.0f / std::sqrt(newCol[b * m + j]);
    return r * c * g[index];
  };
  double updateSquares = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    float u = update(i);
    updateSquares += double(u) * u;
  }
  float updateRms = count ? float(std::sqrt(updateSquares / double(count)))
                          : 0.0f;
  float denom = std::max(1.0f, updateRms / float(options.clipThreshold));
  F32Result newP(newParam);
  for (int64_t i = 0; i < count; ++i) {
    float u = update(i) / denom * s.lr;
    float pi = p[i];
    if (options.weightDecay != 0.0)
      pi = pi + pi * s.decay;
    newP[i] = pi - u;
  }
  newP.commit();
  return Status::success();
}

Status globalNorm(Context &ctx, const std::vector<TensorRef> &inputs, TensorRef &result) {
  // Float operands, at least one, and an f32 scalar: the loader checked.
  double sum = 0.0;
  for (const TensorRef &input : inputs) {
    F32Operand x(input);
    sum += parallelSum(input.numElements(), kElementGrain,
                       [&](int64_t begin, int64_t end) {
                         double part = 0.0;
                         for (int64_t i = begin; i < end; ++i)
                           part += double(x[i]) * x[i];
                         return part;
                       });
  }
  storeF32(result, 0, float(std::sqrt(sum)));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

Status scaleLoss(Context &ctx, const TensorRef &loss, const TensorRef &scale,
                 TensorRef &result) {
  TGC_RETURN_IF_ERROR(expectScalar(loss, "loss"));
  TGC_RETURN_IF_ERROR(expectFloat(loss, "loss"));
  TGC_RETURN_IF_ERROR(expectScalar(scale, "scale"));
  TGC_RETURN_IF_ERROR(expectDType(scale, DType::F32, "scale"));
  TGC_RETURN_IF_ERROR(expectScalar(result, "result"));
  TGC_RETURN_IF_ERROR(expectDType(result, DType::F32, "result"));
  storeF32(result, 0, loadF32(loss, 0) * loadF32(scale, 0));
  return Status::success();
}

Status unscale(Context &ctx, const TensorRef &grad, const TensorRef &scale,
               TensorRef &result) {
  TGC_RETURN_IF_ERROR(expectValid(grad, "grad"));
  TGC_RETURN_IF_ERROR(expectFloat(grad, "grad"));
  TGC_RETURN_IF_ERROR(expectScalar(scale, "scale"));
  TGC_RETURN_IF_ERROR(expectDType(scale, DType::F32, "scale"));
  TGC_RETURN_IF_ERROR(expectValid(result, "result"));
  TGC_RETURN_IF_ERROR(expectFloat(result, "result"));
  TGC_RETURN_IF_ERROR(expectShape(result, grad.shape, "result"));
  // One f32 reciprocal, then a multiply per element, as GradScaler does.
  float inverse = 1.0f / loadF32(scale, 0);
  F32Operand g(grad);
  std::vector<float> copy;
  const float *source = g.data();
  if (result.dtype != grad.dtype && overlaps(grad, result)) {
    copy.assign(g.data(), g.data() + grad.numElements());
    source = copy.data();
  }
  F32Result r(result);
  parallelFor(grad.numElements(), kElementGrain,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  r[i] = source[i] * inverse;
              });
  r.commit();
  return Status::success();
}

Status allFinite(Context &ctx, const std::vector<TensorRef> &inputs, TensorRef &result) {
  // Float operands, at least one, and an i1 scalar: the loader checked.
  bool finite = true;
  for (const TensorRef &input : inputs) {
    F32Operand x(input);
    int64_t count = input.numElements();
    for (int64_t i = 0; finite && i < count; ++i)
      finite = std::isfinite(x[i]);
  }
  storeI64(result, 0, finite ? 1 : 0);
  return Status::success();
}

Status updateLossScale(Context &ctx, const TensorRef &scale, const TensorRef &growthTracker,
                       const TensorRef &foundFinite, double growthFactor,
                       double backoffFactor, int64_t growthInterval,
                       TensorRef &newScale, TensorRef &newGrowthTracker) {
  TGC_RETURN_IF_ERROR(expectScalar(scale, "scale"));
  TGC_RETURN_IF_ERROR(expectDType(scale, DType::F32, "scale"));
  TGC_RETURN_IF_ERROR(expectScalar(growthTracker, "growth_tracker"));
  TGC_RETURN_IF_ERROR(expectDType(growthTracker, DType::I64, "growth_tracker"));
  TGC_RETURN_IF_ERROR(expectScalar(foundFinite, "found_finite"));
  TGC_RETURN_IF_ERROR(expectDType(foundFinite, DType::I1, "found_finite"));
  TGC_RETURN_IF_ERROR(expectScalar(newScale, "new_scale"));
  TGC_RETURN_IF_ERROR(expectDType(newScale, DType::F32, "new_scale"));
  TGC_RETURN_IF_ERROR(expectScalar(newGrowthTracker, "new_growth_tracker"));
  TGC_RETURN_IF_ERROR(
      expectDType(newGrowthTracker, DType::I64, "new_growth_tracker"));
  // Read everything before writing: the results replace the operands.
  float current = loadF32(scale, 0);
  int64_t tracker = loadI64(growthTracker, 0);
  bool finite = loadI64(foundFinite, 0) != 0;
  float next = current;
  if (!finite) {
    next = float(double(current) * backoffFactor);
    tracker = 0;
  } else if (tracker + 1 >= growthInterval) {
    // torch's _amp_update_scale_ keeps the scale when growing overflows.
    float grown = float(double(current) * growthFactor);
    if (std::isfinite(grown))
      next = grown;
    tracker = 0;
  } else {
    ++tracker;
  }
  storeF32(newScale, 0, next);
  storeI64(newGrowthTracker, 0, tracker);
  return Status::success();
}

} // namespace tgc::rt::cpu
