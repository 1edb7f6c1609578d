//===- MemoryPlan.h - static memory plan of a training step -----*- C++ -*-===//
//
// Plans every byte a training step uses:
// - persistent tensors (parameters, optimizer and step state, the batch)
//   live in their own region across steps; updates are written in place
//   (donated), so an updated parameter costs no second buffer;
// - every other value is a transient buffer whose lifetime runs from the op
//   that defines it to its last use in the fixed schedule (IR order);
//   reshapes alias their operand's buffer, and a result takes the buffer of
//   an operand dying at its op when the op allows it (InPlaceOpInterface);
// - transient buffers get static offsets in one arena, placed greedily with
//   best fit in several orders, by size first among them (as TFLite's arena
//   planner and XLA's heap simulator; ArenaLayout.h).
// The arena can never be smaller than the peak of simultaneously live bytes;
// the report gives both, the breakdown at the peak and the ops live there.
//
// Liveness and the peak come from the function's BufferGraph
// (BufferGraph.h), which rematerialization also queries for candidate
// schedules; placement and reporting run once, in MemoryPlanAnalysis.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_MEMORYPLAN_H
#define TGC_ANALYSIS_MEMORYPLAN_H

#include "tgc/Analysis/ArenaLayout.h"
#include "tgc/Analysis/BufferGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tgc {

//===----------------------------------------------------------------------===//
// The plan of a training-step function
//===----------------------------------------------------------------------===//

/// What a byte of memory holds, for the breakdown of the peak.
enum class MemoryKind { Param, FrozenParam, OptimizerState, GradAccumulator,
                        OffloadedActivation, Input, Activation,
                        Gradient, Workspace };
const char *stringifyMemoryKind(MemoryKind kind);

/// A function as the planner sees it: its BufferGraph (one node per op in
/// IR order, the terminator included) and how MLIR values map onto it.
struct StepGraph {
  BufferGraph graph;
  /// The op of each node.
  std::vector<mlir::Operation *> ops;
  /// The graph value holding each transient MLIR value; a reshape view maps
  /// to its operand's value.
  llvm::DenseMap<mlir::Value, int> valueOf;
  /// Values written in place into a persistent tensor: value -> argument.
  llvm::DenseMap<mlir::Value, unsigned> donatedTo;
  /// What each graph value holds.
  std::vector<MemoryKind> kinds;
  /// Index of the op defining the loss: the end of the forward pass (-1
  /// when the function returns no loss).
  int forwardEnd = -1;
};

/// Builds the graph of `function` (a tg.train_step, a tg.model or any
/// function of tensors in one block). Emits a diagnostic and fails on ops
/// with regions, which the planner does not plan yet, and when an update
/// cannot be written in place.
/// `inPlace` false disables in-place reuse of transient buffers (to
/// measure what it saves). The collectives that overlap compute keep their
/// operand and result live until the runtime joins them (the op there
/// reads them in the graph); `joinCollectives` false leaves that out
/// (tg-remat's model, whose recomputed ops move the joins).
mlir::FailureOr<StepGraph> buildStepGraph(mlir::func::FuncOp function,
                                          int64_t alignment,
                                          bool inPlace = true,
                                          bool joinCollectives = true);

struct PlannedBuffer {
  /// The op (in schedule order) defining the buffer's first value and its
  /// result number.
  int64_t opIndex = 0;
  unsigned resultNumber = 0;
  mlir::Operation *op = nullptr;
  int64_t bytes = 0;        // bytes of the tensor
  int64_t alignedBytes = 0; // bytes it takes in the arena
  int64_t offset = 0;
  int64_t start = 0, end = 0;
  MemoryKind kind = MemoryKind::Workspace;
  /// What the buffer holds from each step on, when results reuse it in
  /// place (the first entry is (start, kind)).
  std::vector<std::pair<int64_t, MemoryKind>> holds;
  MemoryKind kindAt(int64_t step) const;
};

struct PersistentTensor {
  unsigned argNumber = 0;
  std::string name;
  int64_t bytes = 0;
  int64_t offset = 0; // in the persistent region
  MemoryKind kind = MemoryKind::Param;
  /// In host memory (`tg.host`, tg-offload): placed after every device
  /// tensor, in the region's host part.
  bool host = false;
};

/// An op that recomputes a forward value (marked `tg.remat`).
struct RecomputedOp {
  int64_t opIndex = 0;
  mlir::Operation *op = nullptr;
  int64_t flops = 0;
};

struct MemoryPlan {
  std::string function;
  int64_t alignment = 0;
  /// The schedule: the function's ops in IR order.
  std::vector<mlir::Operation *> schedule;
  std::vector<PersistentTensor> persistent;
  /// The persistent region: its first `persistentSize - hostSize` bytes on
  /// the device, the last `hostSize` (tensors marked `tg.host`) in host
  /// memory.
  int64_t persistentSize = 0;
  int64_t hostSize = 0;
  int64_t devicePersistentSize() const { return persistentSize - hostSize; }
  std::vector<PlannedBuffer> buffers;
  /// The arena buffer of each value; reshape results share their operand's,
  /// and a result reusing an operand's buffer shares it too.
  llvm::DenseMap<mlir::Value, int64_t> bufferOfValue;
  /// Values written in place into a persistent tensor: value -> argument.
  llvm::DenseMap<mlir::Value, unsigned> donatedTo;
  ArenaLayout layout;
  /// Index in the schedule of the op defining the loss: the end of the
  /// forward pass.
  int64_t forwardEnd = -1;
  /// Results that took an operand's buffer in place.
  int64_t reusedBuffers = 0;
  /// Rematerialization: the recomputing ops, and FLOPs of the whole step.
  std::vector<RecomputedOp> recomputed;
  int64_t recomputedFlops = 0;
  int64_t totalFlops = 0;

  /// Bytes of persistent tensors of `kind`; with `deviceOnly`, those in
  /// host memory (tg.host) left out.
  int64_t persistentBytes(MemoryKind kind, bool deviceOnly = false) const;
  /// Bytes of each kind of transient buffer live at schedule step `step`.
  int64_t liveBytesAt(int64_t step, MemoryKind kind) const;
};

/// Plans `function`, a tg.train_step (or any function of tensors). Emits a
/// diagnostic and fails when the function cannot be planned.
mlir::FailureOr<MemoryPlan> computeMemoryPlan(mlir::func::FuncOp function,
                                              int64_t alignment = 256,
                                              bool inPlace = true);

/// The plan as an MLIR analysis of a func.func: computed once per pipeline
/// run and shared by the passes that need it (tg-plan-memory's report, the
/// lowering to an executable) as long as the IR is unchanged.
class MemoryPlanAnalysis {
public:
  explicit MemoryPlanAnalysis(mlir::Operation *function);

  /// The plan at `alignment`, computed on first request (diagnostics are
  /// emitted then); null when the function cannot be planned.
  const MemoryPlan *getPlan(int64_t alignment, bool inPlace = true);

private:
  mlir::func::FuncOp function;
  int64_t alignment = 0;
  bool inPlace = true;
  bool computed = false;
  mlir::FailureOr<MemoryPlan> plan = mlir::failure();
};

/// The human-readable report: totals, the peak, its breakdown and the
/// largest buffers live there.
void printMemoryReport(const MemoryPlan &plan, llvm::raw_ostream &os,
                       unsigned topBuffers = 10);

/// The version of the JSON memory report's format ("format":
/// "tgc-memory-report"); readers refuse others. 1: op_names and timeline.
constexpr int64_t kMemoryReportVersion = 1;

/// The report as JSON, and the plan as a Chrome trace (chrome://tracing,
/// Perfetto): a counter of live bytes per kind and one slice per buffer.
void writeMemoryReportJSON(const MemoryPlan &plan, llvm::raw_ostream &os);
void writeChromeTrace(const MemoryPlan &plan, llvm::raw_ostream &os);

} // namespace tgc

#endif // TGC_ANALYSIS_MEMORYPLAN_H
