//===- CpuBackend.cpp - the reference backend -----------------------------===//
//
// Regions are aligned host allocations; copies are memcpy; instructions go
// to the kernels of CpuKernels.h through cpu::execute.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Backend.h"

#include "Execute.h"

#include <cstdlib>
#include <cstring>

namespace tgc::rt {

Backend::~Backend() = default;

namespace {

uint8_t *allocateRegion(int64_t bytes) {
  // At least one byte so the pointer is valid for an empty region.
  size_t size = (size_t(std::max<int64_t>(bytes, 1)) + 255) / 256 * 256;
  void *memory = std::aligned_alloc(256, size);
  if (memory)
    std::memset(memory, 0, size);
  return static_cast<uint8_t *>(memory);
}

class CpuBackend : public Backend {
public:
  ~CpuBackend() override {
    std::free(persistent);
    std::free(arena);
  }
  std::string describe() const override { return "the CPU"; }
  bool hostAccessible() const override { return true; }

  Status allocate(int64_t persistentBytes, int64_t arenaBytes) override {
    persistent = allocateRegion(persistentBytes);
    arena = allocateRegion(arenaBytes);
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
  int64_t allocated = 0;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

} // namespace tgc::rt
