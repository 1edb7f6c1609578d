//===- Session.h - running a training step on a backend ---------*- C++ -*-===//
//
// A Session runs one loaded program on a backend, which holds its memory
// (the persistent region and the transient arena, each one allocation of
// the planned size). The host sees the persistent tensors through a mirror
// (the region itself on the CPU): data sources write inputs there, which
// step() uploads; initialisation and checkpoint loads write parameters
// there and push them; checkpoint saves pull them first. The session also
// measures the arena's high-water mark from the reads and writes it
// performs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SESSION_H
#define TGC_RUNTIME_SESSION_H

#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Program.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

class ArenaTrace;

class Session {
public:
  /// Allocates the regions of `program` (already verified by loadProgram)
  /// on `backend`. Its collectives run across `communicator`'s ranks (a
  /// local one of size 1 when null), whose size must be the program's
  /// world size; it must outlive the session.
  static Status create(Program program, std::unique_ptr<Backend> backend,
                       std::unique_ptr<Session> &session,
                       Communicator *communicator = nullptr);
  ~Session();

  const Program &program() const { return prog; }
  const Backend &backend() const { return *device; }
  Communicator &communicator() { return *comm; }

  /// A view of tensor `index` in the backend's memory.
  TensorRef view(int32_t index);

  /// A host view of persistent tensor `index` in the mirror.
  TensorRef hostView(int32_t index);
  /// Copies the persistent region from the backend into the mirror.
  Status pullPersistent();

  /// Gathers the parts of tensors split across ranks (ZeRO's state,
  /// zero3's parameters) that `wanted` names (by index) from the mirrors
  /// of all ranks into wholes on rank `root` (a collective: every rank
  /// calls it with the same `wanted`; pull first), where wholeView reads
  /// them until releaseWholes().
  Status gatherWholes(const std::function<bool(int32_t)> &wanted, int root = 0);
  /// Persistent tensor `index` whole, on the root after gatherWholes():
  /// the gathered whole of a part, else hostView(index).
  TensorRef wholeView(int32_t index);
  void releaseWholes() { wholes.clear(); }
  /// Quantizes `values` (4-bit weight `weight`'s rows x cols, f32) into
  /// its tensors in the mirror, as bitsandbytes quantizes it whole: this
  /// rank's part of each tensor zero3 split, the rest whole.
  void quantizeInto(const QuantizedWeight &weight, const float *values);
  /// Copies the mirror into the backend's persistent region.
  Status pushPersistent();
  /// Copies only persistent tensors `indices` (any order; neighbours in
  /// the region go in one copy): for a writer that changed only those in
  /// the mirror since the backend last matched it.
  Status pushTensors(std::vector<int32_t> indices);

  /// Draws every parameter from its initialisation with a generator seeded
  /// by `seed` and the parameter's name (so the order of the table does not
  /// matter), and zeroes optimizer state, the step counter and inputs.
  /// Tensors marked in `provided` (by index; a checkpoint about to be
  /// loaded sets them, see checkpointProvides) are left alone. Draws are
  /// counter-based and run in parallel: the values do not depend on the
  /// thread count.
  Status initialize(uint64_t seed, const std::vector<bool> *provided = nullptr);

  /// Runs one training step on the inputs written into the mirror and
  /// returns its loss: stageInputs(), launch(), finish().
  Status step(float &loss);

  /// The step in three parts, so that the next batch is prepared while the
  /// device computes this one:
  ///   fill inputs; stageInputs(); loop { launch(); fill next inputs;
  ///   stageInputs(); finish(loss); }
  /// stageInputs() starts copying the inputs now in the mirror towards the
  /// device (double-buffered, pinned on the GPU); launch() queues the step
  /// on the staged inputs; finish() waits for it and reads the loss.
  /// launch(entry) runs another entry point of the program (eval_step) on
  /// the staged inputs instead of the training step; finish() returns its
  /// loss. With gradient accumulation (Program::gradAccumSteps = K > 1)
  /// an optimizer step is K launches of the `grad_step` entry, each on its
  /// staged micro-batch, then launch() of the training step, which reads
  /// no input and leaves the next staged batch in place.
  Status stageInputs();
  Status launch(const EntryPoint *entry = nullptr);
  Status finish(float &loss);

  /// Makes persistent tensor `index` travel with the inputs: written into
  /// the mirror before stageInputs(), it reaches the step that consumes
  /// those inputs, not the one running now (how tgc-run feeds the
  /// learning rate of a schedule).
  Status streamWithInputs(int32_t index);

  /// The number of optimizer steps taken (the step counter), or -1. With
  /// loss scaling, skipped steps do not count.
  int64_t stepCount();

  /// The value of scalar tensor `index` (read from the backend), as double.
  Status readScalar(int32_t index, double &value);

  /// The most arena bytes live at once during the first step (or the first
  /// run of `entry`), measured from the buffers the instructions wrote and
  /// read (each counted at the program's alignment), or -1 before any ran.
  int64_t arenaHighWaterMark(const EntryPoint *entry = nullptr) const {
    if (!entry)
      return highWater;
    auto it = entryHighWater.find(entry->name);
    return it == entryHighWater.end() ? -1 : it->second;
  }

  /// Profiling (tgc-run --profile): from now on, every launched step
  /// times each of its instructions (Backend::mark), added up per entry
  /// point when the step finishes.
  void setProfiling(bool on) { profiling = on; }
  struct Profile {
    /// The instructions of the entry point ("step" is the training step).
    const std::vector<Instruction> *instructions = nullptr;
    /// Seconds per instruction, summed over `runs` steps.
    std::vector<double> seconds;
    int64_t runs = 0;
  };
  const std::map<std::string, Profile> &profile() const { return profiles; }

  /// Graphs, on a backend that captures them (the CUDA backend): each
  /// entry point's first run goes kernel by kernel, its second is captured
  /// as one graph, and every later run replays it, one launch a step. On
  /// by default; off, every run goes kernel by kernel.
  void setGraphs(bool on) { graphsOn = on; }
  /// One line per entry point that ran: how many times as a graph, or why
  /// it could not be captured.
  std::vector<std::string> graphNotes() const;

private:
  Session(Program program, std::unique_ptr<Backend> backend);

  Program prog;
  std::unique_ptr<Backend> device;
  std::unique_ptr<Communicator> localComm;
  Communicator *comm = nullptr;
  /// Host copy of the persistent region's device part; the region itself
  /// on the CPU.
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> mirrorStorage;
  uint8_t *mirror = nullptr;
  /// gatherWholes' wholes of the parts, by tensor.
  std::map<int32_t, std::vector<uint8_t>> wholes;
  /// Whether the mirror holds only the zeros it was allocated with (the
  /// backend's regions are zero-filled too): initialize() then writes no
  /// zeros.
  bool mirrorZero = true;
  /// A zero-filled mirror of `bytes`, its pages untouched; false when out
  /// of memory.
  bool allocateMirror(int64_t bytes);
  /// The host part (offloaded state) as the host sees it: the backend's
  /// pinned memory itself where it has one (nothing to copy), else the
  /// rest of the mirror.
  uint8_t *hostMirror = nullptr;
  bool hostPartShared = false;
  int64_t highWater = -1;
  std::map<std::string, int64_t> entryHighWater;
  std::vector<Backend::Range> inputRanges;
  /// The staging slot the next launch() consumes, and whether it is full.
  int nextSlot = 0;
  bool staged = false;
  bool launched = false;
  /// The loss tensor of the entry point launched.
  int32_t runningLoss = -1;
  bool profiling = false;
  /// The profile the launched step adds to (null: not profiled).
  Profile *runningProfile = nullptr;
  std::map<std::string, Profile> profiles;

  /// Each entry point's graph: the backend's id (-1 before a capture),
  /// how often it was captured and replayed, and why it cannot be
  /// captured (empty while it can).
  struct GraphRuns {
    int id = -1;
    int64_t captures = 0, replays = 0;
    /// The kernels and copies the graph holds (-1: unknown).
    int64_t nodes = -1;
    std::string refused;
  };
  bool graphsOn = true;
  std::map<std::string, GraphRuns> graphs;
  /// Each instruction list's collective joins (collectiveJoins), by the
  /// list's address (the program's and its entry points' lists, which
  /// do not move).
  std::map<const std::vector<Instruction> *, CollectiveJoins> joins;
  /// Runs (or, while capturing, records) `instructions`; with `trace`,
  /// records the arena bytes they touch. An error says "NAME VERB in
  /// instruction #i (kernel): why".
  Status runInstructions(const std::vector<Instruction> &instructions,
                         const char *name, ArenaTrace *trace,
                         const char *verb = "failed");
  /// Captures `instructions` as `graph`; a capture the backend refuses
  /// leaves graph.refused set and is not an error.
  Status capture(const std::vector<Instruction> &instructions,
                 const char *name, GraphRuns &graph);
};

/// Draws the initial values of one tensor (normal or uniform from a
/// generator seeded by `seed` and `name`). Exposed for tests.
/// `viewIsZero`: the view holds zeros already, so a zero initialisation
/// writes nothing (and touches none of its pages). The view holds the
/// tensor's elements from `first` on (a part of a split tensor draws what
/// its elements draw in the whole).
void initializeTensor(const TensorInfo &info, uint64_t seed, TensorRef view,
                      bool viewIsZero = false, int64_t first = 0);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SESSION_H
