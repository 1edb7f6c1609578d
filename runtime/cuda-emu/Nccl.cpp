//===- Nccl.cpp - NCCL's collectives between emulated devices -------------===//
//
// The emulator's stand-in for NCCL: each rank of the job is a process with
// one emulated device, and a communicator is a POSIX shared-memory segment
// that its ranks map. ncclGetUniqueId names a segment (the job's
// bootstrap, Open MPI in tgc, carries the name to the other ranks), and
// ncclCommInitRank maps it and waits until every rank has; the last rank
// to arrive unlinks the name, so nothing is left behind once every rank
// has joined (a rank that never joins leaves the name in /dev/shm).
//
// A collective is queued on its stream like a kernel and runs when the
// stream does (as late as CUDA allows, Runtime.cpp), in chunks: each rank
// copies its chunk into its slot of the segment, waits for every rank,
// computes its output from all the slots, and waits again before the
// slots are reused. Every rank reduces the slots in rank order, in f32, so
// every rank gets the same bits. A rank that waits 300 s for the others
// fails the collective as a kernel fault (the stream's sticky error), and
// the collectives queued after a fault do not run, as kernels do not.
//
//===----------------------------------------------------------------------===//

#include "tgc/cuda-emu/Nccl.h"

#include "Emulator.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

namespace tgc::emu::nccl {
namespace {

// nccl.h's values.
enum Result : int {
  kSuccess = 0,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
};
enum Type : int { kUint8 = 1, kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9 };
enum Op : int { kSum = 0, kMax = 2, kMin = 3, kAvg = 4 };

/// The bytes of one rank's slot: a collective moves this much per rank at
/// a time.
constexpr size_t kSlotBytes = size_t(256) << 10;
constexpr auto kPatience = std::chrono::seconds(300);

/// The start of a segment; every rank's slot follows it. Zero-filled by
/// ftruncate, which is every field's initial value.
struct Header {
  std::atomic<int32_t> joined;
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
};
static_assert(std::atomic<int32_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the segment's counters are shared between processes");
constexpr size_t kHeaderBytes = 64;

struct Comm {
  int rank = 0, size = 0;
  uint8_t *mapped = nullptr;
  size_t mappedBytes = 0;

  Header &header() const { return *reinterpret_cast<Header *>(mapped); }
  uint8_t *slot(int of) const {
    return mapped + kHeaderBytes + size_t(of) * kSlotBytes;
  }
};

/// Waits until `done()`, spinning then sleeping; false after kPatience.
template <typename Done> bool waitFor(Done done) {
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  for (int spin = 0; !done(); ++spin) {
    if (spin < 256) {
      sched_yield();
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

/// Every rank of `comm` reaches this point before any leaves it.
bool barrier(const Comm &comm) {
  Header &header = comm.header();
  uint32_t generation = header.generation.load(std::memory_order_acquire);
  if (header.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      uint32_t(comm.size)) {
    header.arrived.store(0, std::memory_order_relaxed);
    header.generation.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }
  return waitFor([&] {
    return header.generation.load(std::memory_order_acquire) != generation;
  });
}

void fault(const Comm &comm, const char *what) {
  raiseKernelError(cudaErrorLaunchFailure,
                   std::string("NCCL stand-in: rank ") +
                       std::to_string(comm.rank) + " waited " +
                       std::to_string(kPatience.count()) +
                       " s for the other ranks in " + what);
}

size_t sizeOf(int type) {
  switch (type) {
  case kFloat32:
    return 4;
  case kFloat16:
  case kBfloat16:
    return 2;
  case kUint8:
    return 1;
  default:
    return 0;
  }
}

bool reducible(int type, int op) {
  return (type == kFloat32 || type == kFloat16 || type == kBfloat16) &&
         (op == kSum || op == kMax || op == kMin || op == kAvg);
}

float load(const uint8_t *at, int type) {
  if (type == kFloat32) {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  if (type == kFloat16) {
    __half value;
    std::memcpy(&value, at, 2);
    return __half2float(value);
  }
  __nv_bfloat16 value;
  std::memcpy(&value, at, 2);
  return __bfloat162float(value);
}

void store(uint8_t *at, int type, float value) {
  if (type == kFloat32) {
    std::memcpy(at, &value, 4);
  } else if (type == kFloat16) {
    __half narrow = __float2half_rn(value);
    std::memcpy(at, &narrow, 2);
  } else {
    __nv_bfloat16 narrow = __float2bfloat16_rn(value);
    std::memcpy(at, &narrow, 2);
  }
}

/// out[i] = op over the ranks' `count` elements at `offset` bytes of
/// their slots, in rank order.
void reduceSlots(const Comm &comm, size_t offset, size_t count, int type,
                 int op, uint8_t *out) {
  size_t bytes = sizeOf(type);
  for (size_t i = 0; i < count; ++i) {
    float value = load(comm.slot(0) + offset + i * bytes, type);
    for (int rank = 1; rank < comm.size; ++rank) {
      float next = load(comm.slot(rank) + offset + i * bytes, type);
      value = op == kMax   ? std::max(value, next)
              : op == kMin ? std::min(value, next)
                           : value + next;
    }
    if (op == kAvg)
      value /= float(comm.size);
    store(out + i * bytes, type, value);
  }
}

/// Queues a collective on `stream`: `count` elements in chunks of
/// `chunk`, each through the slots. fill(at, n) writes this rank's slot,
/// every rank arrives, read(at, n) computes from all the slots, and every
/// rank arrives again (the slots are free). Skipped after a fault, as
/// kernels are.
template <typename Fill, typename Read>
int queue(Comm *comm, cudaStream_t stream, const char *what, size_t count,
          size_t chunk, Fill fill, Read read) {
  auto work = [=] {
    if (stickyError() != cudaSuccess)
      return;
    for (size_t at = 0; at < count; at += chunk) {
      size_t n = std::min(chunk, count - at);
      fill(at, n);
      if (!barrier(*comm))
        return fault(*comm, what);
      read(at, n);
      if (!barrier(*comm))
        return fault(*comm, what);
    }
  };
  return enqueue(stream, work) ? kSuccess : kInvalidUsage;
}

bool deviceRange(const void *pointer, size_t bytes) {
  return bytes == 0 || inAllocation(pointer, bytes, Memory::Device);
}

} // namespace

bool available() {
  const char *off = std::getenv("TGC_CUDA_EMU_NO_NCCL");
  return !(off && *off && std::strcmp(off, "0") != 0);
}

int getUniqueId(UniqueId *id) {
  if (!id)
    return kInvalidArgument;
  std::memset(id, 0, sizeof(*id));
  std::random_device entropy;
  std::snprintf(id->internal, sizeof(id->internal), "/tgc-emu-nccl-%d-%08x%08x",
                int(getpid()), entropy(), entropy());
  return kSuccess;
}

int commInitRank(void **out, int nranks, UniqueId id, int rank) {
  if (!out || nranks < 1 || rank < 0 || rank >= nranks ||
      id.internal[0] != '/' ||
      std::memchr(id.internal, 0, sizeof(id.internal)) == nullptr)
    return kInvalidArgument;
  auto comm = std::make_unique<Comm>();
  comm->rank = rank;
  comm->size = nranks;
  comm->mappedBytes = kHeaderBytes + size_t(nranks) * kSlotBytes;
  int fd = shm_open(id.internal, O_CREAT | O_RDWR, 0600);
  if (fd < 0)
    return kSystemError;
  // Every rank sizes it the same; the bytes start as zeros.
  if (ftruncate(fd, off_t(comm->mappedBytes)) != 0) {
    close(fd);
    return kSystemError;
  }
  void *mapped = mmap(nullptr, comm->mappedBytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED)
    return kSystemError;
  comm->mapped = static_cast<uint8_t *>(mapped);
  Header &header = comm->header();
  if (header.joined.fetch_add(1, std::memory_order_acq_rel) + 1 == nranks)
    shm_unlink(id.internal); // all have it mapped
  if (!waitFor([&] {
        return header.joined.load(std::memory_order_acquire) >= nranks;
      })) {
    munmap(comm->mapped, comm->mappedBytes);
    return kSystemError;
  }
  *out = comm.release();
  return kSuccess;
}

int commDestroy(void *handle) {
  auto *comm = static_cast<Comm *>(handle);
  if (!comm)
    return kInvalidArgument;
  // As ncclCommDestroy finalizes: the collectives queued on it complete.
  cudaDeviceSynchronize();
  munmap(comm->mapped, comm->mappedBytes);
  delete comm;
  return kSuccess;
}

int allReduce(const void *send, void *recv, size_t count, int type, int op,
              void *handle, cudaStream_t stream) {
  auto *comm = static_cast<Comm *>(handle);
  size_t bytes = sizeOf(type);
  if (!comm || !reducible(type, op))
    return kInvalidArgument;
  if (!deviceRange(send, count * bytes) || !deviceRange(recv, count * bytes))
    return kInvalidArgument;
  auto *in = static_cast<const uint8_t *>(send);
  auto *out = static_cast<uint8_t *>(recv);
  return queue(
      comm, stream, "ncclAllReduce", count, kSlotBytes / bytes,
      [=](size_t at, size_t n) {
        std::memcpy(comm->slot(comm->rank), in + at * bytes, n * bytes);
      },
      [=](size_t at, size_t n) {
        reduceSlots(*comm, 0, n, type, op, out + at * bytes);
      });
}

int reduceScatter(const void *send, void *recv, size_t recvCount, int type,
                  int op, void *handle, cudaStream_t stream) {
  auto *comm = static_cast<Comm *>(handle);
  size_t bytes = sizeOf(type);
  if (!comm || !reducible(type, op))
    return kInvalidArgument;
  size_t ranks = size_t(comm->size);
  if (!deviceRange(send, ranks * recvCount * bytes) ||
      !deviceRange(recv, recvCount * bytes))
    return kInvalidArgument;
  auto *in = static_cast<const uint8_t *>(send);
  auto *out = static_cast<uint8_t *>(recv);
  // A slot holds the chunk of every rank's part.
  return queue(
      comm, stream, "ncclReduceScatter", recvCount,
      kSlotBytes / (bytes * ranks),
      [=](size_t at, size_t n) {
        for (size_t part = 0; part < ranks; ++part)
          std::memcpy(comm->slot(comm->rank) + part * n * bytes,
                      in + (part * recvCount + at) * bytes, n * bytes);
      },
      [=](size_t at, size_t n) {
        reduceSlots(*comm, size_t(comm->rank) * n * bytes, n, type, op,
                    out + at * bytes);
      });
}

int allGather(const void *send, void *recv, size_t sendCount, int type,
              void *handle, cudaStream_t stream) {
  auto *comm = static_cast<Comm *>(handle);
  size_t bytes = sizeOf(type);
  if (!comm || bytes == 0)
    return kInvalidArgument;
  size_t ranks = size_t(comm->size), total = sendCount * bytes;
  if (!deviceRange(send, total) || !deviceRange(recv, ranks * total))
    return kInvalidArgument;
  auto *in = static_cast<const uint8_t *>(send);
  auto *out = static_cast<uint8_t *>(recv);
  return queue(
      comm, stream, "ncclAllGather", total, kSlotBytes,
      [=](size_t at, size_t n) {
        std::memcpy(comm->slot(comm->rank), in + at, n);
      },
      [=](size_t at, size_t n) {
        for (size_t part = 0; part < ranks; ++part)
          std::memcpy(out + part * total + at, comm->slot(int(part)), n);
      });
}

const char *getErrorString(int result) {
  switch (result) {
  case kSuccess:
    return "no error";
  case kSystemError:
    return "unhandled system error (the emulator's shared memory)";
  case kInternalError:
    return "internal error";
  case kInvalidArgument:
    return "invalid argument (a pointer outside device memory, or a type "
           "or operation the stand-in does not reduce)";
  case kInvalidUsage:
    return "invalid usage (a stream that is not live)";
  default:
    return "unknown result";
  }
}

} // namespace tgc::emu::nccl
