//===- Nccl.cu - NCCL collectives for the CUDA backend --------------------===//
//
// The few NCCL entry points tgc uses, resolved with dlsym. Their types are
// declared here from NCCL's stable C ABI (nccl.h of NCCL 2), so that
// nothing links against libnccl and no NCCL header is needed to build.
// On the CUDA emulator they are the emulator's stand-in (cuda-emu/Nccl.cpp).
//
//===----------------------------------------------------------------------===//

#include "Nccl.h"

#include "KernelAttrs.h"

#include <dlfcn.h>

#ifdef TGC_CUDA_EMU_DEVICE_H
#include "tgc/cuda-emu/Nccl.h"
#endif

#include <cstring>
#include <string>

namespace tgc::rt::cuda {

namespace nccl_abi {
// nccl.h: ncclResult_t, ncclDataType_t, ncclRedOp_t values; the unique id
// is 128 opaque bytes. (A named namespace: Nccl::Api's fields use them.)
constexpr int kNcclSuccess = 0;
enum NcclType : int { kHalf = 6, kFloat = 7, kBfloat16 = 9, kUint8 = 1 };
enum NcclOp : int { kSum = 0, kMax = 2, kMin = 3, kAvg = 4 };
#ifdef TGC_CUDA_EMU_DEVICE_H
using UniqueId = emu::nccl::UniqueId;
#else
struct UniqueId {
  char internal[128];
};
#endif
using Comm = void *;
} // namespace nccl_abi
using namespace nccl_abi;

struct Nccl::Api {
  void *library = nullptr;
  int (*getUniqueId)(UniqueId *) = nullptr;
  int (*commInitRank)(Comm *, int, UniqueId, int) = nullptr;
  int (*commDestroy)(Comm) = nullptr;
  int (*allReduce)(const void *, void *, size_t, int, int, Comm,
                   cudaStream_t) = nullptr;
  int (*reduceScatter)(const void *, void *, size_t, int, int, Comm,
                       cudaStream_t) = nullptr;
  int (*allGather)(const void *, void *, size_t, int, Comm,
                   cudaStream_t) = nullptr;
  const char *(*getErrorString)(int) = nullptr;

  Status load() {
#ifdef TGC_CUDA_EMU_DEVICE_H
    // The emulator's stand-in, between the job's emulated devices.
    if (!emu::nccl::available())
      return Status::failure("cannot load NCCL: TGC_CUDA_EMU_NO_NCCL is set");
    getUniqueId = emu::nccl::getUniqueId;
    commInitRank = emu::nccl::commInitRank;
    commDestroy = emu::nccl::commDestroy;
    allReduce = emu::nccl::allReduce;
    reduceScatter = emu::nccl::reduceScatter;
    allGather = emu::nccl::allGather;
    getErrorString = emu::nccl::getErrorString;
    return Status::success();
#else
    library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return Status::failure(std::string("cannot load NCCL: ") + dlerror());
    auto bind = [&](auto &function, const char *name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
          dlsym(library, name));
      return function != nullptr;
    };
    if (!bind(getUniqueId, "ncclGetUniqueId") ||
        !bind(commInitRank, "ncclCommInitRank") ||
        !bind(commDestroy, "ncclCommDestroy") ||
        !bind(allReduce, "ncclAllReduce") ||
        !bind(reduceScatter, "ncclReduceScatter") ||
        !bind(allGather, "ncclAllGather") ||
        !bind(getErrorString, "ncclGetErrorString"))
      return Status::failure("libnccl.so.2 lacks an NCCL 2 entry point");
    return Status::success();
#endif
  }

  Status check(int result, const char *what) const {
    if (result == kNcclSuccess)
      return Status::success();
    return Status::failure(std::string(what) + " failed: " +
                           (getErrorString ? getErrorString(result)
                                           : "unknown NCCL error"));
  }
};

Status Nccl::create(Communicator &comm, std::unique_ptr<Nccl> &nccl) {
  auto created = std::make_unique<Nccl>();
  created->api = std::make_unique<Api>();
  Api &api = *created->api;
  // Every rank loads NCCL, and all agree before the first NCCL call, so
  // that a rank without NCCL makes every rank fall back together.
  Status status = comm.agree(api.load());
  if (!status.ok())
    return status;
  UniqueId id;
  std::memset(&id, 0, sizeof(id));
  Status made = comm.rank() == 0 ? api.check(api.getUniqueId(&id),
                                             "ncclGetUniqueId")
                                 : Status::success();
  status = comm.agree(made);
  if (status.ok())
    status = comm.broadcast(&id, sizeof(id), 0);
  if (status.ok())
    status = comm.agree(api.check(
        api.commInitRank(&created->comm, comm.size(), id, comm.rank()),
        "ncclCommInitRank"));
  if (!status.ok())
    return status;
  nccl = std::move(created);
  return Status::success();
}

Nccl::~Nccl() {
  if (api && comm)
    api->commDestroy(comm);
}

Status Nccl::run(const Instruction &inst, const TensorRef &in, TensorRef &out,
                 cudaStream_t stream) {
  int type = in.dtype == DType::F32    ? kFloat
             : in.dtype == DType::F16  ? kHalf
             : in.dtype == DType::BF16 ? kBfloat16
                                       : kUint8;
  static const int ops[] = {kSum, kAvg, kMin, kMax};
  int op = ops[reductionOf(inst)]; // in [0, 3], as the loader checked
  switch (inst.kernel) {
  case Kernel::AllReduce:
    return api->check(api->allReduce(in.data, out.data,
                                     size_t(in.numElements()), type, op, comm,
                                     stream),
                      "ncclAllReduce");
  case Kernel::ReduceScatter:
    return api->check(api->reduceScatter(in.data, out.data,
                                         size_t(out.numElements()), type, op,
                                         comm, stream),
                      "ncclReduceScatter");
  case Kernel::AllGather:
    // Bytes, whatever the element type (codes of 8-bit state included).
    return api->check(api->allGather(in.data, out.data, in.numBytes(), kUint8,
                                     comm, stream),
                      "ncclAllGather");
  default:
    return Status::failure(std::string(kernelName(inst.kernel)) +
                           " is not an NCCL collective");
  }
}

} // namespace tgc::rt::cuda
