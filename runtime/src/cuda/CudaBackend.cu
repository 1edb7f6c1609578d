//===- CudaBackend.cu - the CUDA backend ----------------------------------===//
//
// One cudaMalloc for the persistent region and one for the arena, of the
// planned sizes; every kernel on one stream; copies to and from the host on
// that stream, except the next step's inputs, which a second stream brings
// in from pinned memory while the current step runs; NCCL's collectives on
// a third, beside the kernels, one at a time, joined where the Session
// says (collectiveJoins). Kernels that find bad data (an index out of range)
// set a device flag, checked whenever the host synchronizes, so the step that
// hit it fails with a message instead of computing garbage. Every CUDA call
// is checked. A machine without a GPU or driver (cudaGetDeviceCount fails
// with "no device" or "insufficient driver") gets a clear error.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "Common.cuh"
#include "BlasLt.h"
#include "Linalg.h"
#include "Nccl.h"
#include "tgc/runtime/Backend.h"

#include <cublasLt.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace tgc::rt {

bool hasCudaBackend() { return true; }

namespace {

using cuda::check;
using cuda::streamOf;
using namespace cuda; // the error codes

class CudaBackend : public Backend {
public:
  ~CudaBackend() override {
    // The collectives' stream first: what it still holds runs while the
    // memory it uses is there.
    if (commStream)
      cudaStreamDestroy(commStream);
    for (cudaEvent_t event : collectiveEvents)
      cudaEventDestroy(event);
    if (forked)
      cudaEventDestroy(forked);
    for (Graph &graph : graphs)
      if (graph.executable)
        cudaGraphExecDestroy(graph.executable);
    for (int slot = 0; slot < 2; ++slot) {
      cudaFreeHost(hostStaging[slot]);
      cudaFree(deviceStaging[slot]);
      if (staged[slot])
        cudaEventDestroy(staged[slot]);
    }
    if (copyStream)
      cudaStreamDestroy(copyStream);
    for (cudaEvent_t event : profileEvents)
      cudaEventDestroy(event);
    cudaFree(persistent);
    cudaFreeHost(hostPart);
    cudaFree(arena);
    cudaFree(ctx.workspace);
    cudaFree(ctx.constants);
    cudaFree(ctx.deviceError);
    cudaFree(ctx.reduceCounters);
    cudaFreeHost(ctx.hostError);
    if (ctx.blasLt)
      blasLt().destroy(static_cast<cublasLtHandle_t>(ctx.blasLt));
    if (ctx.stream)
      cudaStreamDestroy(static_cast<cudaStream_t>(ctx.stream));
  }

  Status open(int device) {
    this->device = device;
    TGC_CUDA_CALL(cudaSetDevice(device));
    TGC_CUDA_CALL(cudaGetDeviceProperties(&properties, device));
    cudaStream_t stream;
    TGC_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ctx.stream = stream;
    if (Status loaded = loadBlasLt(); !loaded.ok())
      return loaded;
    cublasLtHandle_t handle;
    if (blasLt().create(&handle) != CUBLAS_STATUS_SUCCESS)
      return Status::failure("cannot create a cuBLASLt handle");
    ctx.blasLt = handle;
    TGC_CUDA_CALL(cudaMalloc(&ctx.deviceError, sizeof(DeviceError)));
    TGC_CUDA_CALL(cudaMalloc(&ctx.reduceCounters,
                             Context::kReduceCounters * sizeof(unsigned)));
    // The compute stream does not synchronize with the default stream:
    // every memset goes on it.
    TGC_CUDA_CALL(
        cudaMemsetAsync(ctx.deviceError, 0, sizeof(DeviceError), stream));
    TGC_CUDA_CALL(cudaMemsetAsync(
        ctx.reduceCounters, 0, Context::kReduceCounters * sizeof(unsigned),
        stream));
    TGC_CUDA_CALL(cudaMallocHost(&ctx.hostError, sizeof(DeviceError)));
    TGC_CUDA_CALL(cudaStreamCreateWithFlags(&copyStream,
                                            cudaStreamNonBlocking));
    for (int slot = 0; slot < 2; ++slot)
      TGC_CUDA_CALL(cudaEventCreateWithFlags(&staged[slot],
                                             cudaEventDisableTiming));
    return Status::success();
  }

  std::string describe() const override {
    return std::string("the GPU (") + properties.name + ", CUDA device " +
           std::to_string(device) + ")";
  }
  bool hostAccessible() const override { return false; }

  Status allocate(int64_t persistentBytes, int64_t hostBytes,
                  int64_t arenaBytes) override {
    deviceBytes = persistentBytes - hostBytes;
    Status status = allocateRegion(persistent, deviceBytes, "persistent");
    if (!status.ok())
      return status;
    if (hostBytes > 0) {
      // Pinned and mapped into the device's address space: the update
      // kernels read and write the state in place over the bus.
      void *pinned = nullptr;
      cudaError_t error =
          cudaHostAlloc(&pinned, size_t(hostBytes), cudaHostAllocMapped);
      if (error != cudaSuccess) {
        cudaGetLastError();
        return Status::failure(
            "cannot pin " + std::to_string(hostBytes) +
            " bytes of host memory for the offloaded optimizer state (" +
            cudaGetErrorString(error) + ")");
      }
      hostPart = static_cast<uint8_t *>(pinned);
      hostPartBytes = hostBytes;
      void *mapped = nullptr;
      TGC_CUDA_CALL(cudaHostGetDevicePointer(&mapped, pinned, 0));
      hostPartDevice = static_cast<uint8_t *>(mapped);
      std::memset(hostPart, 0, size_t(hostBytes));
    }
    regionBytes = deviceBytes + arenaBytes;
    status = allocateRegion(arena, arenaBytes, "arena");
    if (!status.ok())
      return status;
    // The GEMM workspace is taken now, so that a device too small for it
    // fails before the first step rather than in it.
    return ctx.reserveWorkspace(cuda::kGemmWorkspaceBytes);
  }
  uint8_t *persistentBase() override { return persistent; }
  uint8_t *hostPartForHost() override { return hostPart; }
  uint8_t *persistentAt(int64_t offset) override {
    return offset < deviceBytes ? persistent + offset
                                : hostPartDevice + (offset - deviceBytes);
  }
  uint8_t *arenaBase() override { return arena; }
  int64_t freeMemory() const override {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return int64_t(freeBytes);
  }
  int64_t bytesAllocated() const override {
    return regionBytes + int64_t(ctx.workspaceBytes) +
           2 * int64_t(stagingBytes);
  }

  Status upload(void *region, const void *host, size_t bytes) override {
    if (inHostPart(region)) {
      // Written by the host once the kernels queued before have run.
      TGC_CUDA_CALL(cudaStreamSynchronize(streamOf(ctx)));
      std::memcpy(hostPart + (static_cast<uint8_t *>(region) - hostPartDevice),
                  host, bytes);
      return Status::success();
    }
    TGC_CUDA_CALL(cudaMemcpyAsync(region, host, bytes, cudaMemcpyHostToDevice,
                                  streamOf(ctx)));
    return Status::success();
  }
  Status download(void *host, const void *region, size_t bytes) override {
    if (inHostPart(region)) {
      TGC_CUDA_CALL(cudaStreamSynchronize(streamOf(ctx)));
      std::memcpy(host,
                  hostPart + (static_cast<const uint8_t *>(region) -
                              hostPartDevice),
                  bytes);
      return Status::success();
    }
    TGC_CUDA_CALL(cudaMemcpyAsync(host, region, bytes, cudaMemcpyDeviceToHost,
                                  streamOf(ctx)));
    return Status::success();
  }

  // Profiling: an event per mark on the compute stream, read once the
  // step is finished.
  void mark(size_t index) override {
    while (profileEvents.size() <= index) {
      cudaEvent_t event = nullptr;
      if (cudaEventCreateWithFlags(&event, cudaEventDefault) != cudaSuccess)
        return;
      profileEvents.push_back(event);
    }
    cudaEventRecord(profileEvents[index], streamOf(ctx));
  }
  Status readMarks(size_t count, std::vector<double> &seconds) override {
    seconds.assign(count, 0.0);
    if (count == 0 || profileEvents.size() < count)
      return Status::failure("profiling events were not recorded");
    TGC_CUDA_CALL(cudaEventSynchronize(profileEvents[count - 1]));
    for (size_t i = 1; i < count; ++i) {
      float ms = 0.0f;
      TGC_CUDA_CALL(
          cudaEventElapsedTime(&ms, profileEvents[0], profileEvents[i]));
      seconds[i] = double(ms) / 1000.0;
    }
    return Status::success();
  }

  Status synchronize() override {
    TGC_CUDA_CALL(cudaMemcpyAsync(ctx.hostError, ctx.deviceError,
                                  sizeof(DeviceError), cudaMemcpyDeviceToHost,
                                  streamOf(ctx)));
    Status status = check(int(cudaStreamSynchronize(streamOf(ctx))),
                          "a kernel failed");
    if (!status.ok())
      return status;
    DeviceError error = *ctx.hostError;
    if (error.code == kNoError)
      return Status::success();
    TGC_CUDA_CALL(cudaMemsetAsync(ctx.deviceError, 0, sizeof(DeviceError),
                                  streamOf(ctx)));
    std::string at = error.position >= 0
                         ? " at position " + std::to_string(error.position)
                         : std::string();
    switch (error.code) {
    case kIndexOutOfRange:
      return Status::failure(
          "an index (token id, class label, gathered position or expert) "
          "is outside its table: " +
          std::to_string(error.value) + at + ", table [0, " +
          std::to_string(error.limit) + ")");
    case kIntegerDivisionByZero:
      return Status::failure("integer division by zero" + at);
    case kBadStep:
      return Status::failure("an optimizer update at step " +
                             std::to_string(error.value) +
                             " (steps count from 1)");
    default:
      return Status::failure("a kernel reported error " +
                             std::to_string(error.code));
    }
  }

  // Data preloading: the inputs of the next step go from the host mirror
  // into a pinned buffer, then on a copy stream into a device staging
  // buffer, while the compute stream runs the current step. Two slots, so
  // that staging step i+1 never touches what step i consumes.
  Status stageInputs(int slot, const uint8_t *mirror,
                     const std::vector<Range> &ranges) override {
    size_t total = 0;
    for (const Range &range : ranges)
      total += size_t(range.bytes);
    if (total == 0)
      return Status::success();
    if (total > stagingBytes) {
      TGC_CUDA_CALL(cudaStreamSynchronize(copyStream));
      for (int s = 0; s < 2; ++s) {
        TGC_CUDA_CALL(cudaFreeHost(hostStaging[s]));
        TGC_CUDA_CALL(cudaFree(deviceStaging[s]));
        hostStaging[s] = deviceStaging[s] = nullptr;
        TGC_CUDA_CALL(cudaMallocHost(&hostStaging[s], total));
        TGC_CUDA_CALL(cudaMalloc(&deviceStaging[s], total));
      }
      stagingBytes = total;
    }
    // The pinned slot was last copied from two stages ago, and that copy
    // was waited for by the step that consumed it.
    TGC_CUDA_CALL(cudaEventSynchronize(staged[slot]));
    size_t packed = 0;
    for (const Range &range : ranges) {
      std::memcpy(hostStaging[slot] + packed, mirror + range.offset,
                  size_t(range.bytes));
      packed += size_t(range.bytes);
    }
    TGC_CUDA_CALL(cudaMemcpyAsync(deviceStaging[slot], hostStaging[slot],
                                  total, cudaMemcpyHostToDevice, copyStream));
    TGC_CUDA_CALL(cudaEventRecord(staged[slot], copyStream));
    return Status::success();
  }

  Status consumeInputs(int slot, const std::vector<Range> &ranges) override {
    if (ranges.empty() || !stagingBytes)
      return Status::success();
    TGC_CUDA_CALL(cudaStreamWaitEvent(streamOf(ctx), staged[slot], 0));
    size_t packed = 0;
    for (const Range &range : ranges) {
      TGC_CUDA_CALL(cudaMemcpyAsync(persistent + range.offset,
                                    deviceStaging[slot] + packed,
                                    size_t(range.bytes),
                                    cudaMemcpyDeviceToDevice, streamOf(ctx)));
      packed += size_t(range.bytes);
    }
    return Status::success();
  }

  // CUDA graphs: the step's kernels, copies and GEMMs recorded from the
  // compute stream once, and launched as one graph each step after.
  bool capturesGraphs() const override { return true; }

  Status beginCapture() override {
    if (ctx.capturing)
      return Status::failure("a capture is already in progress");
    // Thread-local: another thread's allocations (the data loader's
    // pinned buffers) do not invalidate this capture.
    TGC_CUDA_CALL(cudaStreamBeginCapture(streamOf(ctx),
                                         cudaStreamCaptureModeThreadLocal));
    ctx.capturing = true;
    return Status::success();
  }

  Status endCapture(int &graph, int64_t &nodes) override {
    ctx.capturing = false;
    cudaGraph_t captured = nullptr;
    cudaError_t ended = cudaStreamEndCapture(streamOf(ctx), &captured);
    if (ended != cudaSuccess) {
      cudaGetLastError(); // an invalidated capture is not a sticky error
      if (captured)
        cudaGraphDestroy(captured);
      return Status::failure(std::string("the step could not be captured (") +
                             cudaGetErrorString(ended) + ")");
    }
    size_t count = 0;
    cudaError_t counted = cudaGraphGetNodes(captured, nullptr, &count);
    nodes = counted == cudaSuccess ? int64_t(count) : -1;
    cudaGraphExec_t executable = nullptr;
    cudaError_t made = cudaGraphInstantiate(&executable, captured, 0);
    cudaGraphDestroy(captured);
    TGC_CUDA_CALL(made);
    graph = int(graphs.size());
    graphs.push_back({executable, ctx.moves});
    return Status::success();
  }

  Status replay(int graph, bool &replayed) override {
    replayed = false;
    if (graph < 0 || size_t(graph) >= graphs.size() ||
        !graphs[size_t(graph)].executable)
      return Status::failure("replay of a graph that was not captured");
    Graph &recorded = graphs[size_t(graph)];
    if (recorded.moves != ctx.moves) {
      // Captured with the workspace or constants at old addresses.
      TGC_CUDA_CALL(cudaGraphExecDestroy(recorded.executable));
      recorded.executable = nullptr;
      return Status::success();
    }
    TGC_CUDA_CALL(cudaGraphLaunch(recorded.executable, streamOf(ctx)));
    replayed = true;
    return Status::success();
  }

  Status execute(const Program &program, const Instruction &inst,
                 std::vector<TensorRef> &operands,
                 std::vector<TensorRef> &results) override {
    ctx.allowTF32 = program.allowTF32;
    if (isCollective(inst.kernel))
      return collective(inst, operands[0], results[0]);
    return cuda::execute(ctx, program, inst, operands, results);
  }

  /// The run's k-th collective that overlaps compute: the work queued
  /// next on the compute stream waits for it (and so for every collective
  /// queued before it on the collectives' stream).
  Status join(size_t collective) override {
    if (collective >= queuedCollectives)
      return Status::failure("a join of collective " +
                             std::to_string(collective) + " of " +
                             std::to_string(queuedCollectives) + " queued");
    if (cudaEvent_t done = doneEvents[collective])
      TGC_CUDA_CALL(cudaStreamWaitEvent(streamOf(ctx), done, 0));
    return Status::success();
  }

  /// After a run's last instruction: the compute stream waits for every
  /// collective (a captured step's collectives join its graph).
  Status joinAll() override {
    size_t queued = queuedCollectives;
    queuedCollectives = 0;
    for (size_t k = queued; k-- > 0;)
      if (cudaEvent_t done = doneEvents[k]) {
        TGC_CUDA_CALL(cudaStreamWaitEvent(streamOf(ctx), done, 0));
        break;
      }
    return Status::success();
  }

  /// A run counts its collectives from 0, whatever an earlier run that
  /// failed (or a capture that was refused) left queued.
  void beginRun() override { queuedCollectives = 0; }

  /// A collective: this rank's part of a tensor is a device copy; the
  /// others run on NCCL when it loads (the first collective tries; one
  /// NCCL communicator per group of ranks, made the first time the group
  /// runs a collective), else through host memory: the operand comes
  /// down, the communicator (Open MPI) combines it with the other ranks',
  /// the result goes back up. On NCCL, a collective runs on a stream of
  /// its own, after the compute stream's work queued so far, while the
  /// compute stream goes on until the Session joins it (join()); through
  /// host memory it is complete when this returns.
  Status collective(const Instruction &inst, const TensorRef &in,
                    TensorRef &out) {
    cudaEvent_t done = nullptr;
    Status status = collectiveOn(inst, in, out, done);
    if (status.ok() && overlapsCompute(inst.kernel)) {
      if (doneEvents.size() <= queuedCollectives)
        doneEvents.resize(queuedCollectives + 1, nullptr);
      doneEvents[queuedCollectives++] = done;
    }
    return status;
  }

  /// `done`: the event the collective records when it completes (null
  /// when it is complete on return).
  Status collectiveOn(const Instruction &inst, const TensorRef &in,
                      TensorRef &out, cudaEvent_t &done) {
    if (!comm)
      return Status::failure("a collective without a communicator");
    Communicator *group = nullptr;
    Status grouped = collectiveGroup(*comm, inst, group);
    if (!grouped.ok())
      return grouped;
    if (inst.kernel == Kernel::Shard) {
      TGC_CUDA_CALL(cudaMemcpyAsync(out.data,
                                    static_cast<const uint8_t *>(in.data) +
                                        size_t(group->rank()) * out.numBytes(),
                                    out.numBytes(), cudaMemcpyDeviceToDevice,
                                    streamOf(ctx)));
      return Status::success();
    }
    if (ctx.capturing && !nccl)
      return Status::failure("collectives through host memory cannot be "
                             "captured in a graph");
    if (!ncclTried) {
      ncclTried = true;
      Status loaded = cuda::Nccl::create(*comm, nccl);
      if (!loaded.ok() && comm->rank() == 0)
        std::fprintf(stderr, "tgc-run: note: collectives go through host "
                     "memory (%s)\n", loaded.error.c_str());
      if (nccl) {
        TGC_CUDA_CALL(
            cudaStreamCreateWithFlags(&commStream, cudaStreamNonBlocking));
        TGC_CUDA_CALL(
            cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
      }
    }
    if (nccl) {
      cuda::Nccl *on = nccl.get();
      if (group != comm) {
        std::unique_ptr<cuda::Nccl> &made = groupNccl[group];
        if (!made) {
          if (ctx.capturing)
            return Status::failure("a group's first collective cannot be "
                                   "captured in a graph");
          Status status = cuda::Nccl::create(*group, made);
          if (!status.ok())
            return status;
        }
        on = made.get();
      }
      // Forked from the compute stream's work so far; joined by an event
      // of the collective's own (one per collective of the run, kept).
      TGC_CUDA_CALL(cudaEventRecord(forked, streamOf(ctx)));
      TGC_CUDA_CALL(cudaStreamWaitEvent(commStream, forked, 0));
      Status status = on->run(inst, in, out, commStream);
      if (!status.ok())
        return status;
      while (collectiveEvents.size() <= queuedCollectives) {
        cudaEvent_t made = nullptr;
        TGC_CUDA_CALL(cudaEventCreateWithFlags(&made, cudaEventDisableTiming));
        collectiveEvents.push_back(made);
      }
      done = collectiveEvents[queuedCollectives];
      TGC_CUDA_CALL(cudaEventRecord(done, commStream));
      return Status::success();
    }
    std::vector<uint8_t> hostIn(in.numBytes()), hostOut(out.numBytes());
    Status status = download(hostIn.data(), in.data, hostIn.size());
    if (status.ok())
      status = synchronize();
    if (!status.ok())
      return status;
    TensorRef hin = in, hout = out;
    hin.data = hostIn.data();
    hout.data = hostOut.data();
    status = runCollective(*comm, inst, hin, hout);
    if (!status.ok())
      return status;
    status = upload(out.data, hostOut.data(), hostOut.size());
    return status.ok() ? synchronize() : status;
  }

private:
  Status allocateRegion(uint8_t *&region, int64_t bytes, const char *what) {
    size_t size = size_t(std::max<int64_t>(bytes, 1));
    cudaError_t error = cudaMalloc(&region, size);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t freeBytes = 0, totalBytes = 0;
      cudaMemGetInfo(&freeBytes, &totalBytes);
      return Status::failure(
          std::string("out of GPU memory: the ") + what + " region needs " +
          std::to_string(bytes) + " bytes, " + std::to_string(freeBytes) +
          " of " + std::to_string(totalBytes) + " are free on " +
          properties.name);
    }
    TGC_CUDA_CALL(error);
    TGC_CUDA_CALL(cudaMemsetAsync(region, 0, size, streamOf(ctx)));
    return Status::success();
  }

  bool inHostPart(const void *pointer) const {
    auto *p = static_cast<const uint8_t *>(pointer);
    return hostPartDevice && p >= hostPartDevice &&
           p < hostPartDevice + hostPartBytes;
  }

  /// A captured step: its executable graph (null once dropped) and the
  /// value of ctx.moves it was captured at.
  struct Graph {
    cudaGraphExec_t executable;
    uint64_t moves;
  };
  std::vector<Graph> graphs;

  int device = 0;
  /// NCCL, once the first collective has tried to load it.
  bool ncclTried = false;
  std::unique_ptr<cuda::Nccl> nccl;
  /// NCCL over the groups of hybrid sharding, by the group's communicator.
  std::map<Communicator *, std::unique_ptr<cuda::Nccl>> groupNccl;
  /// NCCL's stream, beside the compute stream; `forked` marks the compute
  /// stream's work each collective follows.
  cudaStream_t commStream = nullptr;
  cudaEvent_t forked = nullptr;
  /// One event per collective of a run (the k-th collective records the
  /// k-th, made the first time a run has k + 1); doneEvents[k] is the
  /// run's k-th collective's (null: it ran through host memory), of
  /// queuedCollectives so far.
  std::vector<cudaEvent_t> collectiveEvents, doneEvents;
  size_t queuedCollectives = 0;
  cudaDeviceProp properties{};
  cuda::Context ctx;
  uint8_t *persistent = nullptr;
  int64_t deviceBytes = 0;
  /// The persistent region's host part (offloaded optimizer state): the
  /// host's address and the device's for the same pinned bytes.
  uint8_t *hostPart = nullptr;
  uint8_t *hostPartDevice = nullptr;
  int64_t hostPartBytes = 0;
  uint8_t *arena = nullptr;
  cudaStream_t copyStream = nullptr;
  uint8_t *hostStaging[2] = {nullptr, nullptr};
  uint8_t *deviceStaging[2] = {nullptr, nullptr};
  cudaEvent_t staged[2] = {nullptr, nullptr};
  std::vector<cudaEvent_t> profileEvents;
  size_t stagingBytes = 0;
  int64_t regionBytes = 0;
};

} // namespace

Status createCudaBackend(std::unique_ptr<Backend> &backend) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    cudaGetLastError();
    return Status::failure(
        std::string("no usable CUDA device: ") +
        (error == cudaSuccess ? "no GPU found" : cudaGetErrorString(error)));
  }
  auto created = std::make_unique<CudaBackend>();
  Status status = created->open(0);
  if (!status.ok())
    return status;
  backend = std::move(created);
  return Status::success();
}

} // namespace tgc::rt
