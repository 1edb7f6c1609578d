//===- Emulator.h - state the CUDA emulator's parts share -------*- C++ -*-===//
//
// The emulated device: its error state (a launch error cudaGetLastError
// clears, and a sticky one, as a kernel fault leaves a real context) and
// the registry of live allocations that every copy, memset and kernel
// pointer argument is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CUDA_EMU_EMULATOR_H
#define TGC_CUDA_EMU_EMULATOR_H

#include <cuda_runtime_api.h>

// Built with AddressSanitizer (the emulator's memcheck): its interface.
#if defined(__SANITIZE_ADDRESS__)
#define TGC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TGC_EMU_ASAN 1
#endif
#endif
#ifdef TGC_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <cstddef>
#include <functional>
#include <string>

namespace tgc::emu {

/// A bad launch configuration: reported once by cudaGetLastError.
void raiseLaunchError(cudaError_t error, const std::string &message);
/// A kernel that failed while running: every later call reports it.
void raiseKernelError(cudaError_t error, const std::string &message);
/// The sticky error, cudaSuccess while the emulated context is healthy.
cudaError_t stickyError();

/// Queues `work` on `stream` (null: the default stream); false when the
/// stream is not live. Queued work runs, in order, when something waits
/// for it: a synchronization of its stream or of an event recorded after
/// it, a synchronous copy, or a stream waiting for such an event.
bool enqueue(cudaStream_t stream, std::function<void()> work);

/// Runs `body` for every thread of `grid` x `block` now.
void runGrid(const char *kernel, dim3 grid, dim3 block,
             const std::function<void()> &body);

/// What a live allocation is.
enum class Memory { Device, PinnedHost };

/// Whether [pointer, pointer + bytes) lies inside one live allocation of
/// kind `kind`.
bool inAllocation(const void *pointer, size_t bytes, Memory kind);

} // namespace tgc::emu

#endif // TGC_CUDA_EMU_EMULATOR_H
