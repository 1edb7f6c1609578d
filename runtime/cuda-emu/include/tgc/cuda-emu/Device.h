//===- Device.h - CUDA device code as host C++ -------------------*- C++ -*-===//
//
// Force-included (`-include`) into the CUDA backend's sources when they are
// compiled as host C++ for the CUDA emulator. The CUDA toolkit's own headers
// supply the types (dim3, cudaError_t, __half, __nv_bfloat16 with their
// host conversions); this header supplies what only nvcc knows: the
// built-in index variables, __shared__ memory, __syncthreads, warp
// shuffles, atomics, the rounding intrinsics, and the kernel launch that
// lower_launches.py puts where `kernel<<<grid, block, shmem, stream>>>(...)`
// was written.
//
// A launch is queued on its stream and runs when the stream is
// synchronized (runtime/cuda-emu/Runtime.cpp). Each CUDA thread runs as a
// fiber; the threads of one block run on one host thread, one block after
// another, so that __syncthreads and shuffles are
// real rendezvous points (a thread that misses one is reported, as a GPU
// would hang or compute garbage). __shared__ variables become function-
// local statics: one copy, seen by every thread of the block running.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CUDA_EMU_DEVICE_H
#define TGC_CUDA_EMU_DEVICE_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tgc::emu {

/// The CUDA thread a fiber runs.
struct ThreadIndex {
  uint3 threadIdx;
  uint3 blockIdx;
  dim3 blockDim;
  dim3 gridDim;
};

/// The thread running now (valid inside a kernel only).
const ThreadIndex &thisThread();

/// Blocks the calling thread until every thread of its block arrives.
void syncThreads();

/// Exchanges 8 bytes with lane `lane ^ laneMask` of the calling warp, once
/// every lane of the warp has arrived; `mask` must name every lane.
uint64_t shuffleXor(unsigned mask, uint64_t bits, int laneMask, int width);

/// Whether `pointer` lies in (or one past) a live device allocation.
bool isDevicePointer(const void *pointer);

/// Checks the configuration now (a bad one is a launch error, reported by
/// cudaGetLastError) and queues the grid on `stream`: when the stream
/// runs it, `findBadArgument` gives the index of a pointer argument that is
/// not device memory, or -1, and `body` runs for every thread. A failure
/// there (a bad argument, a thread missing a barrier) is reported on stderr
/// and is the sticky error every later synchronization returns.
void launchGrid(const char *kernel, dim3 grid, dim3 block, size_t sharedBytes,
                cudaStream_t stream, std::function<void()> body,
                std::function<int()> findBadArgument);

template <typename T> bool argumentIsDeviceMemory(const T &value) {
  if constexpr (std::is_pointer_v<T>)
    return value == nullptr || isDevicePointer(value);
  else
    return true;
}

/// `kernel<<<grid, block, shmem, stream>>>(args...)`: arguments are
/// converted to the kernel's parameter types and copied, as CUDA does.
template <typename... Params> class Launch {
public:
  Launch(const char *name, void (*kernel)(Params...), dim3 grid, dim3 block,
         size_t sharedBytes, cudaStream_t stream)
      : name(name), kernel(kernel), grid(grid), block(block),
        sharedBytes(sharedBytes), stream(stream) {}

  template <typename... Args> void operator()(Args &&...args) const {
    static_assert(sizeof...(Args) == sizeof...(Params),
                  "kernel launched with the wrong number of arguments");
    auto copies = std::make_shared<std::tuple<std::decay_t<Params>...>>(
        static_cast<Params>(std::forward<Args>(args))...);
    auto *fn = kernel;
    launchGrid(
        name, grid, block, sharedBytes, stream,
        [copies, fn] {
          std::apply([&](auto &...values) { fn(values...); }, *copies);
        },
        [copies] {
          int index = 0, bad = -1;
          std::apply(
              [&](const auto &...values) {
                ((bad = bad < 0 && !argumentIsDeviceMemory(values) ? index
                                                                   : bad,
                  ++index),
                 ...);
              },
              *copies);
          return bad;
        });
  }

private:
  const char *name;
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t sharedBytes;
  cudaStream_t stream;
};

template <typename... Params>
Launch<Params...> launch(const char *name, void (*kernel)(Params...),
                         dim3 grid, dim3 block, size_t sharedBytes = 0,
                         cudaStream_t stream = nullptr) {
  return Launch<Params...>(name, kernel, grid, block, sharedBytes, stream);
}

template <typename T> T shfl_xor(unsigned mask, T value, int laneMask,
                                 int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shuffleXor(mask, bits, laneMask, width);
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}

} // namespace tgc::emu

//===----------------------------------------------------------------------===//
// What nvcc provides to device code
//===----------------------------------------------------------------------===//

#define threadIdx (::tgc::emu::thisThread().threadIdx)
#define blockIdx (::tgc::emu::thisThread().blockIdx)
#define blockDim (::tgc::emu::thisThread().blockDim)
#define gridDim (::tgc::emu::thisThread().gridDim)

#undef __shared__
#define __shared__ static thread_local
// Occupancy hints mean nothing to a fiber.
#define __launch_bounds__(...)

inline void __syncthreads() { ::tgc::emu::syncThreads(); }

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int laneMask, int width = 32) {
  return ::tgc::emu::shfl_xor(mask, value, laneMask, width);
}

// Every thread of a launch runs on one host thread, so a plain
// read-modify-write is atomic; the builtins keep it so if that changes.
inline float atomicAdd(float *address, float value) {
  float old = *address;
  *address = old + value;
  return old;
}
inline double atomicAdd(double *address, double value) {
  double old = *address;
  *address = old + value;
  return old;
}
inline int atomicAdd(int *address, int value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
inline unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
// Memory is the host's, seen at once by every (sequential) block.
inline void __threadfence() {}
inline int atomicCAS(int *address, int compare, int value) {
  __atomic_compare_exchange_n(address, &compare, value, false,
                              __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}
inline int atomicExch(int *address, int value) {
  return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST);
}

// IEEE round-to-nearest arithmetic (the emulator is built with
// -ffp-contract=off, so no multiply is fused into an add).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline float __double2float_rn(double a) { return float(a); }
inline float __ll2float_rn(long long a) { return float(a); }
inline double __ll2double_rn(long long a) { return double(a); }
inline float __uint_as_float(unsigned bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline unsigned __float_as_uint(float value) {
  unsigned bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// Every lane of the warp arrives before any goes on (a full-warp
/// rendezvous, as the shuffles).
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::tgc::emu::shuffleXor(mask, 0, 0, 32);
}

//===----------------------------------------------------------------------===//
// Tensor cores: nvcuda::wmma (mma.h)
//
// A fragment is distributed over a warp's lanes on a GPU, in a layout CUDA
// leaves unspecified; here every lane holds the whole tile (row-major in
// `x`), so code that treats a fragment's elements uniformly (fill, scale)
// behaves as on the GPU. The load, store and multiply are warp-collective
// rendezvous points as on the GPU: every lane arrives before the warp reads
// or writes memory, so a tile another lane wrote just before is seen. The
// product accumulates in f32 in k order; tensor cores multiply 16-bit
// inputs exactly and add in an unspecified order, so results agree to f32
// rounding.
//===----------------------------------------------------------------------===//

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T,
          typename Layout = void>
struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];
};

namespace detail {
inline void warpRendezvous() { ::tgc::emu::shuffleXor(0xffffffffu, 0, 0, 32); }
inline float toFloat(float v) { return v; }
inline float toFloat(__half v) { return __half2float(v); }
inline float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout> &f, const T &value) {
  for (int i = 0; i < f.num_elements; ++i)
    f.x[i] = value;
}

/// matrix_a / matrix_b: the layout is the fragment's.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f, const T *pointer,
                      unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>,
                "an accumulator load names its layout");
  using Frag = fragment<Use, M, N, K, T, Layout>;
  detail::warpRendezvous();
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      f.x[r * Frag::cols + c] = std::is_same_v<Layout, col_major>
                                    ? pointer[size_t(c) * ldm + r]
                                    : pointer[size_t(r) * ldm + c];
  detail::warpRendezvous();
}

template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *pointer,
                      unsigned ldm, layout_t layout) {
  detail::warpRendezvous();
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      f.x[r * N + c] = layout == mem_col_major ? pointer[size_t(c) * ldm + r]
                                               : pointer[size_t(r) * ldm + c];
  detail::warpRendezvous();
}

template <int M, int N, int K, typename T>
void store_matrix_sync(T *pointer, const fragment<accumulator, M, N, K, T> &f,
                       unsigned ldm, layout_t layout) {
  detail::warpRendezvous();
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      size_t at = layout == mem_col_major ? size_t(c) * ldm + r
                                          : size_t(r) * ldm + c;
      pointer[at] = f.x[r * N + c];
    }
  detail::warpRendezvous();
}

template <int M, int N, int K, typename TA, typename LA, typename TB,
          typename LB>
void mma_sync(fragment<accumulator, M, N, K, float> &d,
              const fragment<matrix_a, M, N, K, TA, LA> &a,
              const fragment<matrix_b, M, N, K, TB, LB> &b,
              const fragment<accumulator, M, N, K, float> &c) {
  detail::warpRendezvous();
  // Every lane of the warp holds the whole fragment here and the lanes run
  // one after another on this host thread, so the product of the same
  // operands is computed once and copied: the memo is compared bit for bit
  // (a lane whose operands differ computes its own).
  struct Memo {
    bool valid = false;
    fragment<matrix_a, M, N, K, TA, LA> a;
    fragment<matrix_b, M, N, K, TB, LB> b;
    fragment<accumulator, M, N, K, float> c, d;
  };
  static thread_local Memo memo;
  if (memo.valid && std::memcmp(&memo.a, &a, sizeof a) == 0 &&
      std::memcmp(&memo.b, &b, sizeof b) == 0 &&
      std::memcmp(&memo.c, &c, sizeof c) == 0) {
    d = memo.d;
    return;
  }
  memo.a = a;
  memo.b = b;
  memo.c = c;
  // Widened once (a half's host conversion is a software routine), then
  // each element summed over p in order, from c: the i-p-j loop order
  // changes no sum, and lets the compiler vectorize over j. The sum is
  // taken in the memo, so d may alias c.
  float wideA[M * K], wideB[K * N];
  for (int i = 0; i < M * K; ++i)
    wideA[i] = detail::toFloat(a.x[i]);
  for (int i = 0; i < K * N; ++i)
    wideB[i] = detail::toFloat(b.x[i]);
  memo.d = c;
  for (int i = 0; i < M; ++i)
    for (int p = 0; p < K; ++p) {
      float left = wideA[i * K + p];
      for (int j = 0; j < N; ++j)
        memo.d.x[i * N + j] += left * wideB[p * N + j];
    }
  memo.valid = true;
  d = memo.d;
}

} // namespace nvcuda::wmma

using std::isfinite;
using std::isinf;
using std::isnan;

template <typename T> T min(T a, T b) { return b < a ? b : a; }
template <typename T> T max(T a, T b) { return a < b ? b : a; }

#endif // TGC_CUDA_EMU_DEVICE_H
