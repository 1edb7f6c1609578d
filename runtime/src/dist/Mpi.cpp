//===- Mpi.cpp - MPI_COMM_WORLD as the job's communicator -----------------===//
//
// Open MPI carries the collectives of the CPU backend and the start-up
// agreement of every job. MPI is initialised on first use and finalised at
// exit; errors return (MPI_ERRORS_RETURN) instead of aborting, so that
// tgc-run reports them. Large buffers go in pieces of at most 2^30
// elements, below MPI's int counts. Groups of ranks (hybrid sharding's
// shard groups and replicas) are communicators split from it.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Communicator.h"

#ifdef TGC_HAVE_MPI
// The C API only (not Open MPI's deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace tgc::rt {

bool launchedByMpi() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

#ifndef TGC_HAVE_MPI

bool hasMpi() { return false; }

Status createMpiCommunicator(std::unique_ptr<Communicator> &) {
  return Status::failure("this tgc-run was built without MPI (install "
                         "libopenmpi-dev and rebuild)");
}

#else

bool hasMpi() { return true; }

namespace {

constexpr size_t kPiece = size_t(1) << 30;

Status check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return Status::success();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::failure(std::string(what) + " failed: " +
                         std::string(text, size_t(length)));
}

MPI_Op mpiOp(Reduction op) {
  switch (op) {
  case Reduction::Min:
    return MPI_MIN;
  case Reduction::Max:
    return MPI_MAX;
  default:
    return MPI_SUM;
  }
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

class MpiCommunicator : public Communicator {
public:
  /// MPI_COMM_WORLD, or (owned) a communicator split from it.
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &mySize);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_WORLD && !finalized)
      MPI_Comm_free(&comm);
  }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string library(version, size_t(length));
    library = library.substr(0, library.find(','));
    return "rank " + std::to_string(myRank) + " of " + std::to_string(mySize) +
           " (" + library + ")";
  }

  Status allReduce(float *data, size_t count, Reduction op) override {
    for (size_t at = 0; at < count; at += kPiece) {
      int n = int(std::min(kPiece, count - at));
      Status status = check(
          MPI_Allreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, mpiOp(op), comm),
          "MPI_Allreduce");
      if (!status.ok())
        return status;
    }
    if (op == Reduction::Mean)
      for (size_t i = 0; i < count; ++i)
        data[i] /= float(mySize);
    return Status::success();
  }

  Status reduceScatter(const float *in, float *out, size_t count,
                       Reduction op) override {
    if (count <= kPiece) {
      Status status =
          check(MPI_Reduce_scatter_block(in, out, int(count), MPI_FLOAT,
                                         mpiOp(op), comm),
                "MPI_Reduce_scatter_block");
      if (!status.ok())
        return status;
    } else {
      // Piece by piece: piece p of every rank's part, reduced to its owner.
      std::vector<float> send, recv;
      for (size_t at = 0; at < count; at += kPiece) {
        size_t n = std::min(kPiece, count - at);
        send.resize(n * size_t(mySize));
        for (int r = 0; r < mySize; ++r)
          std::copy(in + size_t(r) * count + at,
                    in + size_t(r) * count + at + n,
                    send.begin() + ptrdiff_t(size_t(r) * n));
        Status status =
            check(MPI_Reduce_scatter_block(send.data(), out + at, int(n),
                                           MPI_FLOAT, mpiOp(op), comm),
                  "MPI_Reduce_scatter_block");
        if (!status.ok())
          return status;
      }
    }
    if (op == Reduction::Mean)
      for (size_t i = 0; i < count; ++i)
        out[i] /= float(mySize);
    return Status::success();
  }

  Status allGather(const void *in, void *out, size_t bytes) override {
    if (bytes > kPiece)
      return gatherInPieces(in, out, bytes, -1);
    return check(MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes),
                               MPI_BYTE, comm),
                 "MPI_Allgather");
  }

  Status broadcast(void *data, size_t bytes, int root) override {
    auto *p = static_cast<char *>(data);
    for (size_t at = 0; at < bytes; at += kPiece) {
      Status status = check(MPI_Bcast(p + at, int(std::min(kPiece, bytes - at)),
                                      MPI_BYTE, root, comm),
                            "MPI_Bcast");
      if (!status.ok())
        return status;
    }
    return Status::success();
  }

  Status gather(const void *in, void *out, size_t bytes, int root) override {
    if (bytes > kPiece)
      return gatherInPieces(in, out, bytes, root);
    return check(MPI_Gather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE,
                            root, comm),
                 "MPI_Gather");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

protected:
  Status split(int color, int key,
               std::unique_ptr<Communicator> &out) override {
    MPI_Comm part = MPI_COMM_NULL;
    Status status =
        check(MPI_Comm_split(comm, color, key, &part), "MPI_Comm_split");
    if (!status.ok())
      return status;
    MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN);
    out = std::make_unique<MpiCommunicator>(part);
    return Status::success();
  }

private:
  /// (All-)gathers more than kPiece bytes per rank piece by piece through a
  /// staging buffer; root -1 gathers to every rank.
  Status gatherInPieces(const void *in, void *out, size_t bytes, int root) {
    std::vector<char> staging;
    for (size_t at = 0; at < bytes; at += kPiece) {
      size_t n = std::min(kPiece, bytes - at);
      staging.resize(n * size_t(mySize));
      const char *src = static_cast<const char *>(in) + at;
      Status status =
          root < 0 ? check(MPI_Allgather(src, int(n), MPI_BYTE, staging.data(),
                                         int(n), MPI_BYTE, comm),
                           "MPI_Allgather")
                   : check(MPI_Gather(src, int(n), MPI_BYTE, staging.data(),
                                      int(n), MPI_BYTE, root, comm),
                           "MPI_Gather");
      if (!status.ok())
        return status;
      if (root >= 0 && root != myRank)
        continue;
      for (int r = 0; r < mySize; ++r)
        std::copy(staging.begin() + ptrdiff_t(size_t(r) * n),
                  staging.begin() + ptrdiff_t(size_t(r + 1) * n),
                  static_cast<char *>(out) + size_t(r) * bytes + at);
    }
    return Status::success();
  }

  MPI_Comm comm;
  int myRank = 0, mySize = 1;
};

} // namespace

Status createMpiCommunicator(std::unique_ptr<Communicator> &communicator) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      return Status::failure("MPI_Init failed");
    std::atexit(finalize);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  communicator = std::make_unique<MpiCommunicator>();
  return Status::success();
}

#endif

} // namespace tgc::rt
