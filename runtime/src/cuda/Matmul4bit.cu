//===- Matmul4bit.cu - products with a frozen 4-bit weight ----------------===//
//
// tg.matmul_4bit on the GPU: QLoRA's frozen base weight, stored in
// bitsandbytes' NF4/FP4 format, dequantized as the GEMM loads it. Each
// block computes a kTile x kTile tile of the output; at each step of the
// reduction its threads load a tile of the input and dequantize the tile
// of the weight it meets into shared memory (the code's nibble, its
// block's absmax, double-quantized or not, and the codebook), rounded to
// the input's type as bitsandbytes' dequantize_4bit(...).to(x.dtype). No
// dequantized copy of the weight is ever written to memory: the weight is
// read at half a byte an element.
//
// The product is the plain shared-memory SIMT tile of TiledProduct.cuh
// with f32 accumulation in a fixed order (deterministic, any float type),
// shared with the grouped expert products; dequantizing into a
// tensor-core (mma) fragment is the fast path still to come. The
// arithmetic of the dequantization is spelt with __fmul_rn and __fadd_rn
// so that nvcc fuses nothing: the values are the CPU kernel's bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "TiledProduct.cuh"

#include <algorithm>

namespace tgc::rt::cuda {

namespace {

constexpr int kTile = kTileProduct, kThreads = kTileThreads;

struct Weight4bit {
  const uint8_t *codes;
  const float *absmax32;   // null when double-quantized
  const uint8_t *absmax8;  // null otherwise
  const float *nestedAbsmax, *nestedMap, *offset;
  const float *map;
  int64_t cols, blockSize;
};

/// Element `i` of the flattened weight in f32, as Dequantizer4bit.
__device__ inline float dequantize(const Weight4bit &w, int64_t i) {
  uint8_t byte = w.codes[i >> 1];
  int code = (i & 1) ? byte & 0x0F : byte >> 4;
  int64_t block = i / w.blockSize;
  float scale =
      w.absmax8
          ? __fadd_rn(__fmul_rn(w.nestedMap[w.absmax8[block]],
                                w.nestedAbsmax[block / 256]),
                      *w.offset)
          : w.absmax32[block];
  return __fmul_rn(w.map[code], scale);
}

/// Block (x, y) computes the output tile at column x * kTile of row tile y:
/// `result [m, n] = input [m, k] W'` with `W'[c, j] = W[j, c]` when
/// `transposeRhs`, else `W[c, j]`.
__global__ void matmul4bitKernel(const void *input, DType dtype, Weight4bit w,
                                 bool transposeRhs, int64_t m, int64_t n,
                                 int64_t k, void *result) {
  tiledProduct(
      input, dtype, int64_t(blockIdx.y) * kTile, m, int64_t(blockIdx.x) * kTile,
      n, k,
      [&](int64_t kr, int64_t col) {
        return roundedTo(dtype,
                         dequantize(w, transposeRhs ? col * w.cols + kr
                                                    : kr * w.cols + col));
      },
      result);
}

unsigned ceilTiles(int64_t size) { return unsigned((size + kTile - 1) / kTile); }

} // namespace

Status matmul4bit(Context &ctx, const TensorRef &input,
                  const Weight4bitRefs &weight, bool transposeRhs,
                  TensorRef &result) {
  // Types and shapes as the loader checked them (shapes::matmul4bit); the
  // overlaps are the plan's.
  if (bytesOverlap(input, result))
    return Status::failure("matmul_4bit result overlaps its input");
  int64_t k = transposeRhs ? weight.cols : weight.rows;
  int64_t n = transposeRhs ? weight.rows : weight.cols;
  int64_t m = input.numElements() / k;
  if (m == 0 || n == 0)
    return Status::success();
  if (ceilTiles(m) > 65535)
    return Status::failure("matmul_4bit: more than 2,097,120 rows");
  Weight4bit w = {};
  w.codes = static_cast<const uint8_t *>(weight.codes.data);
  if (weight.nested()) {
    w.absmax8 = static_cast<const uint8_t *>(weight.absmax.data);
    w.nestedAbsmax = static_cast<const float *>(weight.nestedAbsmax.data);
    w.nestedMap = static_cast<const float *>(weight.nestedMap.data);
    w.offset = static_cast<const float *>(weight.offset.data);
  } else {
    w.absmax32 = static_cast<const float *>(weight.absmax.data);
  }
  w.map = static_cast<const float *>(weight.map.data);
  w.cols = weight.cols;
  w.blockSize = weight.blockSize;
  dim3 grid(ceilTiles(n), ceilTiles(m));
  matmul4bitKernel<<<grid, kThreads, 0, streamOf(ctx)>>>(
      input.data, input.dtype, w, transposeRhs, m, n, k, result.data);
  TGC_CUDA_LAUNCH("matmul4bitKernel");
  return Status::success();
}

} // namespace tgc::rt::cuda
