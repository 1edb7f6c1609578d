//===- Tensor.h - tensors as the runtime sees them --------------*- C++ -*-===//
//
// The runtime's view of a tensor: a pointer into the arena or the persistent
// region, an element type and a static shape. Plain C++17, no MLIR: the
// runtime is built and shipped without the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TENSOR_H
#define TGC_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tgc::rt {

/// Element types, with the same meaning as in the tg dialect. f16 and bf16
/// are stored as 16 bits and computed in f32; i1 is stored as one byte; u8
/// (MLIR's ui8) holds the codes of 8-bit optimizer state.
enum class DType : uint8_t { F32, F16, BF16, I64, I32, I8, I1, U8 };

/// Bytes of one element of `dtype`.
size_t dtypeSize(DType dtype);
/// "f32", "bf16", ... as in MLIR.
const char *dtypeName(DType dtype);
bool isFloat(DType dtype);
/// Whether a float stored as `stored` may stand for one computed as
/// `computed` (the same type, or f16/bf16 beside f32:
/// tgc/Support/Precision.h, the rule of ops that fold a tg.cast).
bool mixesInto(DType stored, DType computed);
/// Whether a binary op's operands of different types mix: f16/bf16 beside
/// an f32 operand and result.
bool mixedOperands(DType lhs, DType rhs, DType result);

/// A non-owning view of a dense row-major tensor.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numElements() const;
  size_t numBytes() const { return size_t(numElements()) * dtypeSize(dtype); }
  /// False for a default-constructed view: a result the kernel skips (an
  /// instruction's result index -1, kNotComputed).
  bool present() const { return data != nullptr || !shape.empty(); }
  int64_t rank() const { return int64_t(shape.size()); }
};

/// Conversions between f32 and the 16-bit float formats (round to nearest
/// even, NaN preserved).
uint16_t f32ToF16(float value);
float f16ToF32(uint16_t bits);
uint16_t f32ToBF16(float value);
float bf16ToF32(uint16_t bits);

/// Reads element `i` of a float tensor as f32 / writes it from f32.
float loadF32(const TensorRef &t, int64_t i);
void storeF32(TensorRef &t, int64_t i, float value);
/// Reads element `i` of an integer or i1 tensor as i64.
int64_t loadI64(const TensorRef &t, int64_t i);
void storeI64(TensorRef &t, int64_t i, int64_t value);

/// The outcome of a kernel: empty on success, otherwise a message for the
/// user (an index out of range, a division by zero).
struct Status {
  std::string error;
  bool ok() const { return error.empty(); }
  static Status success() { return {}; }
  static Status failure(std::string message) { return {std::move(message)}; }
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_TENSOR_H
