//===- Communicator.h - the ranks of a data-parallel job --------*- C++ -*-===//
//
// What the runtime needs from the processes of a data-parallel job
// (mpirun -n N tgc-run): its rank and size, the collectives of the tg
// dialect on host buffers, and the means to agree at start-up and to end
// the whole job. Open MPI's MPI_COMM_WORLD implements it; a single process
// has a local communicator of size 1 whose collectives are copies. The
// CUDA backend runs its collectives with NCCL, bootstrapped through this.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_COMMUNICATOR_H
#define TGC_RUNTIME_COMMUNICATOR_H

#include "tgc/runtime/Program.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

namespace tgc::rt {

/// How a collective combines the ranks' values; the values of the tg
/// dialect's ReduceKind (an instruction's `reduction` attribute).
enum class Reduction : uint8_t { Sum = 0, Mean = 1, Min = 2, Max = 3 };

class Communicator {
public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "1 process", "rank 1 of 2 (Open MPI 4.1.4)".
  virtual std::string describe() const = 0;

  /// Replaces `count` f32 values with their reduction over the ranks.
  virtual Status allReduce(float *data, size_t count, Reduction op) = 0;
  /// `in` holds size() parts of `count` values; `out` gets the reduction
  /// of part rank() over the ranks.
  virtual Status reduceScatter(const float *in, float *out, size_t count,
                               Reduction op) = 0;
  /// `out` gets every rank's `bytes` of `in`, in rank order.
  virtual Status allGather(const void *in, void *out, size_t bytes) = 0;
  /// Every rank gets rank `root`'s `bytes` of `data`.
  virtual Status broadcast(void *data, size_t bytes, int root) = 0;
  /// Rank `root`'s `out` gets every rank's `bytes` of `in`, in rank order
  /// (`out` is unused elsewhere).
  virtual Status gather(const void *in, void *out, size_t bytes,
                        int root) = 0;
  /// Ends every process of the job at once, with `code`: for a rank that
  /// cannot go on while the others may be waiting in a collective.
  [[noreturn]] virtual void abort(int code) = 0;

  /// This rank's group when the ranks fall in groups of `size` ranks
  /// `stride` apart (a collective's world_size and rank_stride: rank r's
  /// group is the ranks b + j stride, j < size, b = r mod stride +
  /// floor(r / (stride size)) stride size; r is its member (r / stride)
  /// mod size): this communicator when the group is every rank, else one
  /// made on first use and kept. Collective the first time: every rank
  /// asks for the same groups in the same order (as every rank runs the
  /// same instructions). Fails when the groups do not tile the ranks.
  Status group(int64_t size, int64_t stride, Communicator *&out);

  /// Every rank learns whether every rank succeeded: on success of all
  /// with the same `key` (what must be equal across ranks, such as a hash
  /// of the executable), success; otherwise, on every rank, a failure
  /// naming the first rank that failed and its message, or the first
  /// rank whose key differs from rank 0's (for a key of options,
  /// `--steps=5 --seed=0 ...`, the first option that differs; at most
  /// 3070 bytes). Collective: all ranks call it.
  Status agree(const Status &mine, const std::string &key = "");

protected:
  /// The ranks that pass the same `color`, numbered in the order of their
  /// `key`s, as a communicator. Collective: every rank calls it.
  virtual Status split(int color, int key, std::unique_ptr<Communicator> &out);

private:
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Communicator>> groups;
};

/// A single process: rank 0 of 1.
std::unique_ptr<Communicator> createLocalCommunicator();

/// Whether this build can join an MPI job.
bool hasMpi();
/// Whether mpirun (Open MPI, or another PMIx launcher) started this
/// process: then tgc-run joins the job.
bool launchedByMpi();
/// MPI_COMM_WORLD: initialises MPI (once; it is finalised at exit).
Status createMpiCommunicator(std::unique_ptr<Communicator> &communicator);

/// Runs a collective instruction's kernel (tg.all_reduce,
/// tg.reduce_scatter, tg.all_gather, tg.shard) on host tensors, within
/// the instruction's group of the job's ranks: f16 and bf16 travel and
/// combine as f32.
Status runCollective(Communicator &communicator, const Instruction &inst,
                     const TensorRef &in, TensorRef &out);

/// The group of `communicator`'s ranks that a collective instruction runs
/// within (its world_size and rank_stride; Communicator::group).
Status collectiveGroup(Communicator &communicator, const Instruction &inst,
                       Communicator *&group);

} // namespace tgc::rt

#endif // TGC_RUNTIME_COMMUNICATOR_H
