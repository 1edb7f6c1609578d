//===- CpuBackend.cpp - the reference backend -----------------------------===//
//
// Regions are anonymous mappings aligned to 2 MiB and advised to use
// transparent huge pages (fewer page faults and TLB misses on regions of
// GiBs); the kernel zeroes their pages as they are first touched, so
// nothing is written before the program writes it. Copies are memcpy;
// instructions go to the kernels of CpuKernels.h through cpu::execute.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Backend.h"

#include "tgc/runtime/Threads.h"

#include "Execute.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TGC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TGC_ASAN 1
#endif

namespace tgc::rt {

Backend::~Backend() = default;

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

/// A zeroed host region of at least `bytes` (one byte for an empty one, so
/// the pointer is valid); `mapped` receives what freeRegion needs.
uint8_t *allocateRegion(int64_t bytes, size_t &mapped) {
  size_t size = (size_t(std::max<int64_t>(bytes, 1)) + 255) / 256 * 256;
#ifdef TGC_ASAN
  // Under AddressSanitizer a heap block, whose redzone catches a kernel
  // writing past the end of a region.
  mapped = 0;
  void *memory = std::aligned_alloc(256, size);
  if (memory)
    std::memset(memory, 0, size);
  return static_cast<uint8_t *>(memory);
#else
  if (size < kHugePage) {
    mapped = (size + 4095) / 4096 * 4096;
    void *memory = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return memory == MAP_FAILED ? nullptr : static_cast<uint8_t *>(memory);
  }
  // Over-map by a huge page and trim both ends to a 2 MiB-aligned span.
  size = (size + kHugePage - 1) / kHugePage * kHugePage;
  size_t over = size + kHugePage;
  void *memory = mmap(nullptr, over, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(memory);
  uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start)
    munmap(memory, aligned - start);
  uintptr_t end = start + over, alignedEnd = aligned + size;
  if (end > alignedEnd)
    munmap(reinterpret_cast<void *>(alignedEnd), end - alignedEnd);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void *>(aligned), size, MADV_HUGEPAGE);
#endif
  mapped = size;
  return reinterpret_cast<uint8_t *>(aligned);
#endif
}

void freeRegion(uint8_t *region, size_t mapped) {
  if (!region)
    return;
  if (mapped)
    munmap(region, mapped);
  else
    std::free(region);
}

class CpuBackend : public Backend {
public:
  ~CpuBackend() override {
    freeRegion(persistent, persistentMapped);
    freeRegion(arena, arenaMapped);
  }
  std::string describe() const override { return "the CPU"; }
  bool hostAccessible() const override { return true; }

  // Host memory is all this backend has: the host part of the persistent
  // region is the rest of it.
  Status allocate(int64_t persistentBytes, int64_t /*hostBytes*/,
                  int64_t arenaBytes) override {
    // The GEMMs need OpenBLAS: a missing one is an error now, not later.
    Status blas = loadBlas();
    if (!blas.ok())
      return blas;
    persistent = allocateRegion(persistentBytes, persistentMapped);
    arena = allocateRegion(arenaBytes, arenaMapped);
    allocated = persistentBytes + arenaBytes;
    if (!persistent || !arena)
      return Status::failure("cannot allocate " +
                             std::to_string(persistentBytes) +
                             " persistent and " + std::to_string(arenaBytes) +
                             " arena bytes of host memory");
    return Status::success();
  }
  uint8_t *persistentBase() override { return persistent; }
  uint8_t *arenaBase() override { return arena; }
  int64_t bytesAllocated() const override { return allocated; }

  Status upload(void *region, const void *host, size_t bytes) override {
    if (region != host)
      std::memcpy(region, host, bytes);
    return Status::success();
  }
  Status download(void *host, const void *region, size_t bytes) override {
    if (region != host)
      std::memcpy(host, region, bytes);
    return Status::success();
  }
  Status synchronize() override { return Status::success(); }

  Status execute(const Program &program, const Instruction &inst,
                 std::vector<TensorRef> &operands,
                 std::vector<TensorRef> &results) override {
    if (isCollective(inst.kernel)) {
      if (!comm)
        return Status::failure("a collective without a communicator");
      return runCollective(*comm, inst, operands[0], results[0]);
    }
    return cpu::execute(program, inst, operands, results);
  }

private:
  uint8_t *persistent = nullptr;
  uint8_t *arena = nullptr;
  size_t persistentMapped = 0, arenaMapped = 0;
  int64_t allocated = 0;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

} // namespace tgc::rt
