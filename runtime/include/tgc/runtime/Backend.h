//===- Backend.h - where a program's memory lives and runs ------*- C++ -*-===//
//
// A backend owns the two memory regions of a program (one allocation each,
// of the planned sizes), copies bytes between them and the host, and runs
// instructions on views into them. The CPU backend's regions are host
// memory; the CUDA backend's are device memory.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_BACKEND_H
#define TGC_RUNTIME_BACKEND_H

#include "tgc/runtime/Communicator.h"
#include "tgc/runtime/Program.h"

#include <chrono>
#include <memory>

namespace tgc::rt {

class Backend {
public:
  virtual ~Backend();

  /// "cpu", or "cuda (NVIDIA H100 80GB HBM3)".
  virtual std::string describe() const = 0;
  /// Whether region memory is host memory (then no copies are needed).
  virtual bool hostAccessible() const = 0;
  /// The device memory free now, in bytes (-1: the backend's memory is
  /// the host's; see availableMemory()).
  virtual int64_t freeMemory() const { return -1; }

  /// Allocates both regions, zero-filled. The last `hostBytes` of the
  /// persistent region (offloaded optimizer state) are host memory that
  /// the kernels reach over the bus; the CUDA backend allocates them
  /// apart, pinned and mapped, so the persistent region's two parts need
  /// not be contiguous: address it through persistentAt().
  virtual Status allocate(int64_t persistentBytes, int64_t hostBytes,
                          int64_t arenaBytes) = 0;
  virtual uint8_t *persistentBase() = 0;
  /// The address of byte `offset` of the persistent region, as kernels
  /// and upload()/download() take it.
  virtual uint8_t *persistentAt(int64_t offset) {
    return persistentBase() + offset;
  }
  /// The host's address of the persistent region's host part, when it is
  /// memory apart that the host may read and write between steps (the
  /// CUDA backend's pinned state), else null.
  virtual uint8_t *hostPartForHost() { return nullptr; }
  virtual uint8_t *arenaBase() = 0;
  /// Bytes the backend holds now: the regions plus its own workspace and
  /// staging buffers.
  virtual int64_t bytesAllocated() const = 0;

  /// Copies between host memory and region memory. They may be asynchronous
  /// with respect to the host until synchronize().
  virtual Status upload(void *region, const void *host, size_t bytes) = 0;
  virtual Status download(void *host, const void *region, size_t bytes) = 0;
  virtual Status synchronize() = 0;

  /// Byte ranges of the persistent region that hold a step's inputs.
  struct Range {
    int64_t offset;
    int64_t bytes;
  };

  /// Starts moving the inputs at `ranges` of the host mirror towards the
  /// device, into staging slot `slot` (0 or 1), without waiting: the copy
  /// of the next batch overlaps the step running now. The CPU backend,
  /// whose mirror is the region, has nothing to do.
  virtual Status stageInputs(int slot, const uint8_t *mirror,
                             const std::vector<Range> &ranges) {
    return Status::success();
  }
  /// Makes the work queued next (the step) wait for slot `slot` and copies
  /// it into the inputs' places in the persistent region.
  virtual Status consumeInputs(int slot, const std::vector<Range> &ranges) {
    return Status::success();
  }

  /// Runs one instruction on views into the regions.
  virtual Status execute(const Program &program, const Instruction &inst,
                         std::vector<TensorRef> &operands,
                         std::vector<TensorRef> &results) = 0;

  /// Collectives that overlap compute (overlapsCompute): a backend may
  /// return from execute() of one once it is queued (the CUDA backend's
  /// NCCL stream). The Session then calls join(k) right before the
  /// instruction that collectiveJoins says joins the run's k-th such
  /// collective (from 0), so that the work queued next waits for it, and
  /// joinAll() after the run's last instruction, which also starts the
  /// count again.
  virtual Status join(size_t collective) { return Status::success(); }
  virtual Status joinAll() { return Status::success(); }
  /// Before a run's first instruction (its count starts at 0).
  virtual void beginRun() {}

  /// Graphs: a backend that can record the work of a whole step once and
  /// replay it (the CUDA backend's CUDA graphs: one launch a step instead
  /// of one per kernel) says so here. Between beginCapture() and
  /// endCapture(), execute() records instead of running; nothing recorded
  /// has run. endCapture() gives the graph's id, or fails when something
  /// recorded cannot be replayed (a collective through host memory), and
  /// then nothing is kept and the same work may run as usual. endCapture()
  /// also says how many nodes (kernels and copies) the graph holds.
  virtual bool capturesGraphs() const { return false; }
  virtual Status beginCapture() {
    return Status::failure("this backend does not capture graphs");
  }
  /// `nodes`: the graph's kernels and copies.
  virtual Status endCapture(int &graph, int64_t &nodes) {
    return Status::failure("this backend does not capture graphs");
  }
  /// Queues graph `graph`'s work. `replayed` is false when the backend has
  /// dropped the graph (memory its work used has moved: a larger
  /// workspace); then nothing was queued and the step must be captured
  /// again.
  virtual Status replay(int graph, bool &replayed) {
    replayed = false;
    return Status::failure("this backend does not capture graphs");
  }

  /// Profiling (tgc-run --profile): the Session marks point `index` before
  /// instruction `index` of a step and after its last; once the step is
  /// finished, `readMarks` gives the seconds from mark 0 to each mark. The
  /// CPU backend reads a clock (its kernels are synchronous); the CUDA
  /// backend records events on its stream.
  virtual void mark(size_t index) {
    if (marks.size() <= index)
      marks.resize(index + 1);
    marks[index] = std::chrono::steady_clock::now();
  }
  virtual Status readMarks(size_t count, std::vector<double> &seconds) {
    seconds.assign(count, 0.0);
    for (size_t i = 1; i < count && i < marks.size(); ++i)
      seconds[i] = std::chrono::duration<double>(marks[i] - marks[0]).count();
    return Status::success();
  }

  /// The ranks collective instructions run across (set by the Session
  /// before the first step; it outlives the backend).
  void setCommunicator(Communicator *communicator) { comm = communicator; }

protected:
  Communicator *comm = nullptr;
  std::vector<std::chrono::steady_clock::time_point> marks;
};

/// The reference backend: host memory and the kernels of CpuKernels.h.
std::unique_ptr<Backend> createCpuBackend();

/// Whether this build has the CUDA backend.
bool hasCudaBackend();

/// The CUDA backend on device 0; fails with a clear message when the build
/// has no CUDA backend, or the machine no usable GPU.
Status createCudaBackend(std::unique_ptr<Backend> &backend);

} // namespace tgc::rt

#endif // TGC_RUNTIME_BACKEND_H
