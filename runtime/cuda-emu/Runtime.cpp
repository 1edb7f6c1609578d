//===- Runtime.cpp - the CUDA runtime API on the host ---------------------===//
//
// The part of libcudart the CUDA backend calls, implemented on host memory,
// with the toolkit's own declarations. Device memory is host memory from
// the registry.
//
// Streams are queues of work that runs as late as CUDA allows: only when
// the host waits for it (cudaStreamSynchronize, cudaEventSynchronize, a
// synchronous call, a copy into pageable host memory) or another stream
// waits for an event recorded after it. So the host sees a result only if
// it synchronized for it, a copy from pinned memory reads that memory when
// the stream reaches it, not when it was asked for, and one stream's work
// runs before another's only through an event: code that a real GPU would
// run racily computes wrong results here deterministically.
//
// What a GPU would reject is rejected here too, and more strictly: a copy
// or memset that leaves its allocation, a copy whose kind does not match
// its pointers, a handle that is not live. Each rejection is printed on
// stderr with what was wrong, since the error code alone rarely says.
//
// Graphs are captured from a stream (cudaStreamBeginCapture): work queued
// on a capturing stream is recorded, not run, and cudaGraphLaunch queues
// the recorded work again, with the arguments it was captured with, as a
// GPU replays a graph's nodes. Another stream joins a capture by waiting
// for an event recorded in it (a fork), and the streams' work keeps its
// order and its waits: a launch queues each forked stream's nodes on a
// stream of the executable graph's own, again run as late as the waits
// allow; the capture ends on its first stream once every forked stream's
// work has been waited for there (a join), or fails as unjoined. A call
// that a real capture refuses (a synchronization, a synchronous copy or
// allocation, a copy of pageable memory, an event from outside the
// capture) fails here and invalidates the capture, so that
// cudaStreamEndCapture reports it. Stream-ordered
// allocations in a capture are the graph's memory nodes: taken at capture,
// at one address for every launch, and kept.
//
// TGC_CUDA_EMU_DEVICE_BYTES sets the device's memory (default 80 GiB), so
// that running out of it can be tested; TGC_CUDA_EMU_NO_DEVICE=1 makes the
// machine one without a GPU. The emulator serves one host thread (it has
// no locks).
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <vector>
#include <string>


namespace tgc::emu {
namespace {

struct Allocation {
  size_t bytes;
  Memory kind;
};

/// A node of a captured graph: work, or (lane >= 0) a wait for the first
/// `count` nodes of another lane.
struct Node {
  std::function<void()> work;
  int lane = -1;
  size_t count = 0;
};

/// Work recorded by a capture: a lane per stream that took part (lane 0:
/// the stream the capture began on), each in order.
struct Graph {
  std::vector<std::vector<Node>> lanes;
  /// The kernels, copies and memory nodes (waits are edges).
  size_t workNodes() const {
    size_t n = 0;
    for (const std::vector<Node> &lane : lanes)
      for (const Node &node : lane)
        n += node.lane < 0;
    return n;
  }
};

struct Stream;
/// A capture in progress: its graph, the stream of each lane, and whether
/// a refused call has invalidated it.
struct Capture {
  Graph graph;
  std::vector<Stream *> streams;
  bool invalidated = false;
};

/// Work queued on a stream; `executed` of `enqueued` items have run.
struct Stream {
  std::deque<std::function<void()>> work;
  uint64_t enqueued = 0, executed = 0;
  /// While capturing: where queued work goes instead (null otherwise),
  /// shared by the streams forked into it, and this stream's lane.
  std::shared_ptr<Capture> capture;
  int lane = 0;
};

/// An executable graph: its nodes, and a stream for each lane but the
/// first (which is queued on the stream it is launched on).
struct Executable {
  Graph graph;
  std::vector<Stream *> lanes;
};

/// Where an event was last recorded: after `marker` items of `stream`, or
/// in a capture, after `position` nodes of lane `lane`.
struct Event {
  Stream *stream = nullptr;
  uint64_t marker = 0;
  std::weak_ptr<Capture> capture;
  int lane = 0;
  size_t position = 0;
  /// When the stream reached the record (a work item stamps it, as the
  /// GPU stamps an event when its stream gets there).
  std::chrono::steady_clock::time_point reached;
  bool stamped = false;
};

struct DeviceState {
  std::map<uintptr_t, Allocation> allocations;
  size_t deviceBytesUsed = 0;
  std::map<void *, std::unique_ptr<Stream>> streams;
  std::map<void *, Event> events;
  Stream defaultStream;
  /// Captured graphs and their instantiations (an executable graph is a
  /// copy of its graph's nodes).
  std::map<void *, std::unique_ptr<Graph>> graphs;
  std::map<void *, std::unique_ptr<Executable>> executables;
  /// Streams capturing now.
  int capturing = 0;
  cudaError_t lastError = cudaSuccess;
  cudaError_t sticky = cudaSuccess;
};

DeviceState &state() {
  static DeviceState *device = new DeviceState; // outlives static destructors
  return *device;
}

/// The device's memory: TGC_CUDA_EMU_DEVICE_BYTES, read once.
size_t deviceCapacity() {
  static const size_t capacity = [] {
    const char *text = std::getenv("TGC_CUDA_EMU_DEVICE_BYTES");
    if (!text)
      return size_t(80) << 30;
    char *end = nullptr;
    unsigned long long bytes = std::strtoull(text, &end, 10);
    if (!*text || *end || *text == '-') {
      std::fprintf(stderr,
                   "tgc CUDA emulator: TGC_CUDA_EMU_DEVICE_BYTES must be a "
                   "number of bytes, found '%s'\n",
                   text);
      std::exit(2);
    }
    return size_t(bytes);
  }();
  return capacity;
}

bool noDevice() {
  const char *text = std::getenv("TGC_CUDA_EMU_NO_DEVICE");
  return text && std::strcmp(text, "1") == 0;
}

/// Records and returns `error`, printing why.
cudaError_t fail(cudaError_t error, const std::string &why) {
  std::fprintf(stderr, "tgc CUDA emulator: %s\n", why.c_str());
  state().lastError = error;
  return error;
}

/// The allocation holding `pointer` (locked by the caller), or null.
const Allocation *find(DeviceState &s, const void *pointer, uintptr_t &base) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin())
    return nullptr;
  --it;
  if (address > it->first + it->second.bytes)
    return nullptr;
  base = it->first;
  return &it->second;
}

/// Bytes behind an allocation of `bytes`: 256-byte granules, as cudaMalloc
/// aligns.
size_t roundedBytes(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
}

cudaError_t allocate(void **pointer, size_t bytes, Memory kind) {
  if (!pointer)
    return fail(cudaErrorInvalidValue, "allocation into a null pointer");
  *pointer = nullptr;
  DeviceState &s = state();
  if (kind == Memory::Device &&
      bytes > deviceCapacity() - s.deviceBytesUsed) {
    s.lastError = cudaErrorMemoryAllocation;
    return cudaErrorMemoryAllocation;
  }
  size_t rounded = roundedBytes(bytes);
  void *memory = std::aligned_alloc(256, rounded);
  if (!memory) {
    s.lastError = cudaErrorMemoryAllocation;
    return cudaErrorMemoryAllocation;
  }
  // Fresh device memory holds garbage on a GPU: a kernel that reads what
  // nothing wrote should not find zeros here.
  std::memset(memory, 0xA5, rounded);
#ifdef TGC_EMU_ASAN
  // Under AddressSanitizer the rounding is out of bounds too.
  __asan_poison_memory_region(static_cast<char *>(memory) + bytes,
                              rounded - bytes);
#endif
  s.allocations[reinterpret_cast<uintptr_t>(memory)] = {bytes, kind};
  if (kind == Memory::Device)
    s.deviceBytesUsed += bytes;
  *pointer = memory;
  return cudaSuccess;
}

cudaError_t release(void *pointer, Memory kind, const char *what) {
  if (!pointer)
    return cudaSuccess;
  DeviceState &s = state();
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (it != s.allocations.end() && it->second.kind == kind) {
    if (kind == Memory::Device)
      s.deviceBytesUsed -= it->second.bytes;
#ifdef TGC_EMU_ASAN
    __asan_unpoison_memory_region(pointer, roundedBytes(it->second.bytes));
#endif
    s.allocations.erase(it);
    std::free(pointer);
    return cudaSuccess;
  }
  return fail(cudaErrorInvalidValue,
              std::string(what) + " of a pointer that is not the start of a "
                                  "live allocation of its kind");
}

std::string rangeText(const void *pointer, size_t bytes) {
  char text[96];
  std::snprintf(text, sizeof(text), "[%p, +%zu bytes)", pointer, bytes);
  return text;
}

const char *kindName(cudaMemcpyKind kind) {
  switch (kind) {
  case cudaMemcpyHostToDevice:
    return "host to device";
  case cudaMemcpyDeviceToHost:
    return "device to host";
  case cudaMemcpyDeviceToDevice:
    return "device to device";
  case cudaMemcpyHostToHost:
    return "host to host (not emulated)";
  default:
    return "of inferred direction (not emulated)";
  }
}

/// The stream of a handle (the default stream for null), or null when the
/// handle is not a live stream.
Stream *streamOf(cudaStream_t handle) {
  if (!handle)
    return &state().defaultStream;
  auto it = state().streams.find(handle);
  return it == state().streams.end() ? nullptr : it->second.get();
}

Event *eventOf(cudaEvent_t handle) {
  auto it = state().events.find(handle);
  return it == state().events.end() ? nullptr : &it->second;
}

/// Runs `stream`'s work up to item `upTo` (a work item may drain other
/// streams it waits for).
void drain(Stream &stream, uint64_t upTo) {
  while (stream.executed < upTo && !stream.work.empty()) {
    std::function<void()> work = std::move(stream.work.front());
    stream.work.pop_front();
    ++stream.executed;
    work();
  }
}

void drain(Stream &stream) { drain(stream, stream.enqueued); }

/// Runs everything queued on every stream.
void drainAll() {
  bool ran = true;
  while (ran) {
    ran = false;
    DeviceState &s = state();
    for (Stream *stream : [&] {
           std::vector<Stream *> all = {&s.defaultStream};
           for (auto &entry : s.streams)
             all.push_back(entry.second.get());
           return all;
         }()) {
      if (!stream->work.empty()) {
        drain(*stream);
        ran = true;
      }
    }
  }
}

/// A call a stream capture refuses: on a capturing stream (or, for
/// `stream` null, any capture in progress, as for the synchronous calls)
/// it fails and invalidates the capture.
cudaError_t refuseInCapture(Stream *stream, const char *what) {
  DeviceState &s = state();
  bool refused = false;
  auto invalidate = [&](Stream &candidate) {
    if (candidate.capture) {
      candidate.capture->invalidated = true;
      refused = true;
    }
  };
  if (stream) {
    invalidate(*stream);
  } else if (s.capturing) {
    invalidate(s.defaultStream);
    for (auto &entry : s.streams)
      invalidate(*entry.second);
  }
  if (!refused)
    return cudaSuccess;
  return fail(cudaErrorStreamCaptureUnsupported,
              std::string(what) + " while a stream is being captured");
}

cudaError_t checkStream(cudaStream_t stream, const char *what) {
  if (!streamOf(stream))
    return fail(cudaErrorInvalidResourceHandle,
                std::string(what) + " on a stream that is not live");
  return cudaSuccess;
}

} // namespace

void raiseLaunchError(cudaError_t error, const std::string &message) {
  fail(error, message);
}

void raiseKernelError(cudaError_t error, const std::string &message) {
  std::fprintf(stderr, "tgc CUDA emulator: %s\n", message.c_str());
  if (state().sticky == cudaSuccess)
    state().sticky = error;
  state().lastError = error;
}

bool enqueue(cudaStream_t handle, std::function<void()> work) {
  Stream *stream = streamOf(handle);
  if (!stream)
    return false;
  if (stream->capture) {
    stream->capture->graph.lanes[size_t(stream->lane)].push_back(
        {std::move(work)});
    return true;
  }
  stream->work.push_back(std::move(work));
  ++stream->enqueued;
  return true;
}

cudaError_t stickyError() {
  return state().sticky;
}

bool inAllocation(const void *pointer, size_t bytes, Memory kind) {
  DeviceState &s = state();
  uintptr_t base = 0;
  const Allocation *allocation = find(s, pointer, base);
  return allocation && allocation->kind == kind &&
         reinterpret_cast<uintptr_t>(pointer) - base + bytes <=
             allocation->bytes;
}

bool isDevicePointer(const void *pointer) {
  // Pinned host memory is mapped into the device's address space.
  return inAllocation(pointer, 0, Memory::Device) ||
         inAllocation(pointer, 0, Memory::PinnedHost);
}

} // namespace tgc::emu

using namespace tgc::emu;

#define TGC_EMU_STICKY()                                                       \
  do {                                                                         \
    if (cudaError_t sticky_ = stickyError(); sticky_ != cudaSuccess)           \
      return sticky_;                                                          \
  } while (0)

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
  if (noDevice()) {
    *count = 0;
    state().lastError = cudaErrorNoDevice;
    return cudaErrorNoDevice;
  }
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (noDevice() || device != 0)
    return fail(cudaErrorInvalidDevice,
                "cudaSetDevice(" + std::to_string(device) + ")");
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (noDevice() || device != 0)
    return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties(" +
                                            std::to_string(device) + ")");
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "tgc CUDA emulator");
  prop->totalGlobalMem = deviceCapacity();
  prop->major = 9;
  prop->minor = 0;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  *totalBytes = deviceCapacity();
  *freeBytes = *totalBytes - state().deviceBytesUsed;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t error = state().lastError;
  state().lastError = state().sticky;
  return error;
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorIllegalAddress:
    return "an illegal memory access was encountered";
  case cudaErrorLaunchFailure:
    return "unspecified launch failure";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorIllegalState:
    return "the operation cannot be performed in the present state";
  case cudaErrorStreamCaptureUnjoined:
    return "capture was not joined";
  case cudaErrorStreamCaptureUnmatched:
    return "capture was not initiated in this stream";
  case cudaErrorStreamCaptureIsolation:
    return "dependency created on uncaptured work in another stream";
  default:
    return "unrecognized error code";
  }
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t error = refuseInCapture(nullptr, "cudaDeviceSynchronize"))
    return error;
  drainAll();
  TGC_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  TGC_EMU_STICKY();
  if (cudaError_t error = refuseInCapture(nullptr, "cudaMalloc"))
    return error;
  return allocate(pointer, bytes, Memory::Device);
}

cudaError_t cudaFree(void *pointer) {
  if (cudaError_t error = refuseInCapture(nullptr, "cudaFree"))
    return error;
  drainAll(); // cudaFree waits for the device
  return release(pointer, Memory::Device, "cudaFree");
}

cudaError_t cudaMallocHost(void **pointer, size_t bytes) {
  TGC_EMU_STICKY();
  return allocate(pointer, bytes, Memory::PinnedHost);
}

// cuda_runtime.h's C++ overload of cudaMallocHost calls this.
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  (void)flags;
  TGC_EMU_STICKY();
  return allocate(pointer, bytes, Memory::PinnedHost);
}

// Pinned memory is mapped at the same address on the device (unified
// addressing, as on every 64-bit system CUDA supports).
cudaError_t cudaHostGetDevicePointer(void **device, void *host,
                                     unsigned flags) {
  TGC_EMU_STICKY();
  if (flags != 0 || !inAllocation(host, 0, Memory::PinnedHost))
    return fail(cudaErrorInvalidValue,
                "cudaHostGetDevicePointer of memory cudaHostAlloc did not "
                "allocate");
  *device = host;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *pointer) {
  drainAll();
  return release(pointer, Memory::PinnedHost, "cudaFreeHost");
}

cudaError_t cudaMallocAsync(void **pointer, size_t bytes,
                            cudaStream_t stream) {
  TGC_EMU_STICKY();
  if (cudaError_t error = checkStream(stream, "cudaMallocAsync"))
    return error;
  // In a capture, a graph allocation node: the memory is the graph's, at
  // one address for every launch, so it is taken now and kept.
  if (Stream *queue = streamOf(stream); queue->capture)
    enqueue(stream, [] {});
  return allocate(pointer, bytes, Memory::Device);
}

cudaError_t cudaFreeAsync(void *pointer, cudaStream_t stream) {
  if (cudaError_t error = checkStream(stream, "cudaFreeAsync"))
    return error;
  // In a capture, a graph free node: the memory stays the graph's.
  if (Stream *queue = streamOf(stream); queue->capture) {
    enqueue(stream, [] {});
    return cudaSuccess;
  }
  // Freed once the work queued before it has run.
  enqueue(stream, [pointer] {
    release(pointer, Memory::Device, "cudaFreeAsync");
  });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  TGC_EMU_STICKY();
  if (cudaError_t error = checkStream(stream, "cudaMemcpyAsync"))
    return error;
  if (count == 0)
    return cudaSuccess;
  bool dstDevice = inAllocation(dst, count, Memory::Device);
  bool srcDevice = inAllocation(src, count, Memory::Device);
  bool dstWanted = kind == cudaMemcpyHostToDevice ||
                   kind == cudaMemcpyDeviceToDevice;
  bool srcWanted = kind == cudaMemcpyDeviceToHost ||
                   kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost ||
      dstDevice != dstWanted || srcDevice != srcWanted)
    return fail(cudaErrorInvalidValue,
                std::string("cudaMemcpyAsync ") + kindName(kind) + " from " +
                    rangeText(src, count) + " (" +
                    (srcDevice ? "device memory" : "not inside device memory") +
                    ") to " + rangeText(dst, count) + " (" +
                    (dstDevice ? "device memory" : "not inside device memory") +
                    ")");
  Stream &queue = *streamOf(stream);
  bool pageable = (kind == cudaMemcpyHostToDevice &&
                   !inAllocation(src, count, Memory::PinnedHost)) ||
                  (kind == cudaMemcpyDeviceToHost &&
                   !inAllocation(dst, count, Memory::PinnedHost));
  if (pageable)
    if (cudaError_t error =
            refuseInCapture(&queue, "cudaMemcpyAsync of pageable memory"))
      return error;
  if (kind == cudaMemcpyHostToDevice &&
      !inAllocation(src, count, Memory::PinnedHost)) {
    // Pageable memory is staged when the call is made.
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(src), static_cast<const char *>(src) + count);
    enqueue(stream, [dst, staged] {
      std::memcpy(dst, staged->data(), staged->size());
    });
  } else if (kind == cudaMemcpyDeviceToHost &&
             !inAllocation(dst, count, Memory::PinnedHost)) {
    // Into pageable memory the call returns once the copy is done.
    drain(queue);
    TGC_EMU_STICKY();
    std::memcpy(dst, src, count);
  } else {
    // Pinned host memory is read or written when the stream gets there.
    enqueue(stream, [dst, src, count] { std::memmove(dst, src, count); });
  }
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *pointer, int value, size_t count,
                            cudaStream_t stream) {
  TGC_EMU_STICKY();
  if (cudaError_t error = checkStream(stream, "cudaMemsetAsync"))
    return error;
  if (count == 0)
    return cudaSuccess;
  if (!inAllocation(pointer, count, Memory::Device))
    return fail(cudaErrorInvalidValue, "cudaMemsetAsync of " +
                                           rangeText(pointer, count) +
                                           ", outside device memory");
  enqueue(stream,
          [pointer, value, count] { std::memset(pointer, value, count); });
  return cudaSuccess;
}

// The synchronous calls wait for all work queued before them and for
// their own.
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       cudaMemcpyKind kind) {
  if (cudaError_t error = refuseInCapture(nullptr, "cudaMemcpy"))
    return error;
  drainAll();
  cudaError_t error = cudaMemcpyAsync(dst, src, count, kind, nullptr);
  drainAll();
  if (error == cudaSuccess)
    TGC_EMU_STICKY();
  return error;
}

cudaError_t cudaMemset(void *pointer, int value, size_t count) {
  if (cudaError_t error = refuseInCapture(nullptr, "cudaMemset"))
    return error;
  drainAll();
  cudaError_t error = cudaMemsetAsync(pointer, value, count, nullptr);
  drainAll();
  if (error == cudaSuccess)
    TGC_EMU_STICKY();
  return error;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  (void)flags;
  auto created = std::make_unique<Stream>();
  *stream = reinterpret_cast<cudaStream_t>(created.get());
  state().streams[*stream] = std::move(created);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Stream *queue = stream ? streamOf(stream) : nullptr;
  if (!queue)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaStreamDestroy of a stream that is not live");
  if (queue->capture)
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaStreamDestroy of a stream that is being captured");
  drain(*queue); // queued work still runs
  state().streams.erase(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t error = checkStream(stream, "cudaStreamSynchronize"))
    return error;
  if (cudaError_t error =
          refuseInCapture(streamOf(stream), "cudaStreamSynchronize"))
    return error;
  drain(*streamOf(stream));
  TGC_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags) {
  (void)flags;
  void *handle = std::malloc(1); // a unique address
  *event = static_cast<cudaEvent_t>(handle);
  state().events[handle] = Event();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!eventOf(event))
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventDestroy of an event that is not live");
  state().events.erase(event);
  std::free(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  TGC_EMU_STICKY();
  Event *recorded = eventOf(event);
  if (!recorded)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventRecord of an event that is not live");
  if (cudaError_t error = checkStream(stream, "cudaEventRecord"))
    return error;
  Stream *queue = streamOf(stream);
  // In a capture: a point other streams may fork from or join at (not a
  // node: a captured event is not stamped).
  if (queue->capture) {
    *recorded = Event();
    recorded->capture = queue->capture;
    recorded->lane = queue->lane;
    recorded->position =
        queue->capture->graph.lanes[size_t(queue->lane)].size();
    return cudaSuccess;
  }
  queue->work.push_back([event] {
    if (Event *reached = eventOf(event)) {
      reached->reached = std::chrono::steady_clock::now();
      reached->stamped = true;
    }
  });
  ++queue->enqueued;
  *recorded = Event();
  recorded->stream = queue;
  recorded->marker = queue->enqueued;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  Event *first = eventOf(start), *last = eventOf(end);
  if (!first || !last)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventElapsedTime of an event that is not live");
  if (!first->stamped || !last->stamped)
    return fail(cudaErrorNotReady,
                "cudaEventElapsedTime of an event not yet reached");
  *ms = float(std::chrono::duration<double, std::milli>(last->reached -
                                                        first->reached)
                  .count());
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Event *recorded = eventOf(event);
  if (!recorded)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventSynchronize of an event that is not live");
  if (!recorded->capture.expired() ||
      (recorded->stream && recorded->stream->capture))
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaEventSynchronize of an event whose stream is being "
                "captured");
  if (recorded->stream) // never recorded: nothing to wait for
    drain(*recorded->stream, recorded->marker);
  TGC_EMU_STICKY();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned flags) {
  (void)flags;
  TGC_EMU_STICKY();
  Event *recorded = eventOf(event);
  if (!recorded)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaStreamWaitEvent on an event that is not live");
  if (cudaError_t error = checkStream(stream, "cudaStreamWaitEvent"))
    return error;
  Stream *queue = streamOf(stream);
  if (std::shared_ptr<Capture> capture = recorded->capture.lock()) {
    // An event of a capture: a stream outside it joins it (a fork); one
    // in it waits for the event's lane there (a join).
    if (queue->capture && queue->capture != capture) {
      refuseInCapture(queue, "cudaStreamWaitEvent");
      return fail(cudaErrorStreamCaptureIsolation,
                  "cudaStreamWaitEvent for an event of another capture");
    }
    if (!queue->capture) {
      queue->capture = capture;
      queue->lane = int(capture->graph.lanes.size());
      capture->graph.lanes.emplace_back();
      capture->streams.push_back(queue);
    }
    if (recorded->lane != queue->lane) {
      Node wait;
      wait.lane = recorded->lane;
      wait.count = recorded->position;
      capture->graph.lanes[size_t(queue->lane)].push_back(std::move(wait));
    }
    return cudaSuccess;
  }
  // Waiting inside a capture for work outside it: a capture isolation
  // error on a GPU.
  if (cudaError_t error =
          refuseInCapture(streamOf(stream), "cudaStreamWaitEvent"))
    return error;
  // The wait is for the event as recorded now.
  Event waited = *recorded;
  if (waited.stream)
    enqueue(stream, [waited] { drain(*waited.stream, waited.marker); });
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode mode) {
  (void)mode; // one host thread: every mode refuses the same calls here
  TGC_EMU_STICKY();
  if (!stream)
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaStreamBeginCapture of the legacy default stream");
  if (cudaError_t error = checkStream(stream, "cudaStreamBeginCapture"))
    return error;
  Stream &queue = *streamOf(stream);
  if (queue.capture)
    return fail(cudaErrorIllegalState,
                "cudaStreamBeginCapture of a stream already capturing");
  queue.capture = std::make_shared<Capture>();
  queue.capture->graph.lanes.emplace_back();
  queue.capture->streams.push_back(&queue);
  queue.lane = 0;
  ++state().capturing;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  cudaStreamCaptureStatus *status) {
  if (cudaError_t error = checkStream(stream, "cudaStreamIsCapturing"))
    return error;
  Stream &queue = *streamOf(stream);
  *status = !queue.capture               ? cudaStreamCaptureStatusNone
            : queue.capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                         : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  if (cudaError_t error = checkStream(stream, "cudaStreamEndCapture"))
    return error;
  Stream &queue = *streamOf(stream);
  if (!queue.capture)
    return fail(cudaErrorIllegalState,
                "cudaStreamEndCapture of a stream that is not capturing");
  if (queue.lane != 0)
    return fail(cudaErrorStreamCaptureUnmatched,
                "cudaStreamEndCapture of a stream forked into a capture, "
                "not the one it began on");
  std::shared_ptr<Capture> capture = std::move(queue.capture);
  for (Stream *member : capture->streams) {
    member->capture.reset();
    member->lane = 0;
  }
  --state().capturing;
  *graph = nullptr;
  if (capture->invalidated)
    return fail(cudaErrorStreamCaptureInvalidated,
                "cudaStreamEndCapture of a capture that a refused call "
                "invalidated");
  // Joined: the first lane's end waits, directly or through other lanes'
  // waits, for every node of every lane.
  std::vector<std::vector<Node>> &lanes = capture->graph.lanes;
  std::vector<size_t> reached(lanes.size(), 0);
  reached[0] = lanes[0].size();
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t lane = 0; lane < lanes.size(); ++lane)
      for (size_t i = 0; i < reached[lane]; ++i) {
        const Node &node = lanes[lane][i];
        if (node.lane >= 0 && reached[size_t(node.lane)] < node.count) {
          reached[size_t(node.lane)] = node.count;
          grew = true;
        }
      }
  }
  for (size_t lane = 1; lane < lanes.size(); ++lane)
    if (reached[lane] < lanes[lane].size())
      return fail(cudaErrorStreamCaptureUnjoined,
                  "cudaStreamEndCapture before the work of a stream forked "
                  "into the capture was joined to it");
  auto captured = std::make_unique<Graph>(std::move(capture->graph));
  *graph = reinterpret_cast<cudaGraph_t>(captured.get());
  state().graphs[captured.get()] = std::move(captured);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                              size_t *count) {
  auto it = state().graphs.find(graph);
  if (it == state().graphs.end() || !count)
    return fail(cudaErrorInvalidValue,
                "cudaGraphGetNodes of a graph that is not live");
  if (nodes)
    return fail(cudaErrorInvalidValue,
                "cudaGraphGetNodes: node handles are not emulated, only "
                "their count");
  *count = it->second->workNodes();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *executable,
                                 cudaGraph_t graph, unsigned long long flags) {
  (void)flags;
  auto it = state().graphs.find(graph);
  if (it == state().graphs.end())
    return fail(cudaErrorInvalidValue,
                "cudaGraphInstantiate of a graph that is not live");
  auto copy = std::make_unique<Executable>();
  copy->graph = *it->second;
  for (size_t lane = 1; lane < copy->graph.lanes.size(); ++lane) {
    cudaStream_t made = nullptr;
    cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking);
    copy->lanes.push_back(streamOf(made));
  }
  *executable = reinterpret_cast<cudaGraphExec_t>(copy.get());
  state().executables[copy.get()] = std::move(copy);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t executable, cudaStream_t stream) {
  TGC_EMU_STICKY();
  auto it = state().executables.find(executable);
  if (it == state().executables.end())
    return fail(cudaErrorInvalidResourceHandle,
                "cudaGraphLaunch of an executable graph that is not live");
  if (cudaError_t error = checkStream(stream, "cudaGraphLaunch"))
    return error;
  if (streamOf(stream)->capture)
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaGraphLaunch into a capture (child graphs are not "
                "emulated)");
  // Each lane's nodes on its stream; a wait, for the other lane's nodes
  // of this launch.
  Executable &graph = *it->second;
  std::vector<Stream *> lanes = {streamOf(stream)};
  lanes.insert(lanes.end(), graph.lanes.begin(), graph.lanes.end());
  std::vector<uint64_t> base;
  for (Stream *lane : lanes)
    base.push_back(lane->enqueued);
  for (size_t lane = 0; lane < lanes.size(); ++lane)
    for (const Node &node : graph.graph.lanes[lane]) {
      std::function<void()> work = node.work;
      if (node.lane >= 0) {
        Stream *other = lanes[size_t(node.lane)];
        uint64_t upTo = base[size_t(node.lane)] + node.count;
        work = [other, upTo] { drain(*other, upTo); };
      }
      lanes[lane]->work.push_back(std::move(work));
      ++lanes[lane]->enqueued;
    }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t executable) {
  // A launched graph's work was queued as copies: it still runs (its
  // forked lanes' now, before their streams go).
  auto it = state().executables.find(executable);
  if (it == state().executables.end())
    return fail(cudaErrorInvalidValue,
                "cudaGraphExecDestroy of an executable graph that is not "
                "live");
  // Launches queued on other streams wait for its lanes' streams.
  if (!it->second->lanes.empty())
    drainAll();
  for (Stream *lane : it->second->lanes)
    cudaStreamDestroy(reinterpret_cast<cudaStream_t>(lane));
  state().executables.erase(it);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!state().graphs.erase(graph))
    return fail(cudaErrorInvalidValue,
                "cudaGraphDestroy of a graph that is not live");
  return cudaSuccess;
}

} // extern "C"
