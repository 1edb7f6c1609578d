//===- Nccl.h - the emulator's stand-in for NCCL ----------------*- C++ -*-===//
//
// The NCCL 2 entry points the CUDA backend binds (runtime/src/cuda/Nccl.cu),
// with NCCL's C types and semantics, between the processes of a job that
// each run one emulated device. Nccl.cu binds these where it would dlsym
// libnccl.so.2, so that the backend's NCCL path (a communicator per group,
// collectives queued on a stream and captured in CUDA graphs) runs in CI.
// TGC_CUDA_EMU_NO_NCCL=1 makes the machine one without NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CUDA_EMU_NCCL_H
#define TGC_CUDA_EMU_NCCL_H

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tgc::emu::nccl {

/// ncclUniqueId: 128 opaque bytes (here, the name of the job's segment).
struct UniqueId {
  char internal[128];
};

/// Whether NCCL is present (false under TGC_CUDA_EMU_NO_NCCL=1).
bool available();

int getUniqueId(UniqueId *id);
int commInitRank(void **comm, int nranks, UniqueId id, int rank);
int commDestroy(void *comm);
int allReduce(const void *send, void *recv, size_t count, int type, int op,
              void *comm, cudaStream_t stream);
int reduceScatter(const void *send, void *recv, size_t recvCount, int type,
                  int op, void *comm, cudaStream_t stream);
int allGather(const void *send, void *recv, size_t sendCount, int type,
              void *comm, cudaStream_t stream);
const char *getErrorString(int result);

} // namespace tgc::emu::nccl

#endif // TGC_CUDA_EMU_NCCL_H
