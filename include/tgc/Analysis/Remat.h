//===- Remat.h - rematerialization on a step's buffer graph -----*- C++ -*-===//
//
// Which forward values to keep for the backward pass and which to recompute
// there, decided on the BufferGraph (no MLIR), so a policy or a solver can
// try thousands of choices and ask the planner's peak of each.
//
// A choice (RematChoice) is a set of dropped values, each recomputed once
// or for each use, and a set of sunk backward ops. Its schedule
// (buildRematSchedule) is the original one, except that:
// - before the first backward op that reads a dropped value, the op that
//   defines it runs again (recursively for dropped operands), so the
//   original dies at its last forward read. Later backward reads use that
//   copy, unless the value is recomputed for each use: then every backward
//   op that reads it (directly or through the recomputations it needs) runs
//   the op again just before, and each copy dies at the op it was made for
//   (more FLOPs, shorter lives: what the tightest budgets need);
// - a sunk backward op runs just before its first reader instead of at its
//   place (so its result is not live while unrelated ops run: free, where
//   a fixed order would have to recompute it);
// - forward ops that read only persistent tensors and are cheap (the casts
//   of parameters tg-amp makes, slices of a table) run just before their
//   first reader instead of at the top of the step ("sunk"), so a working
//   copy is not live before it is needed.
// Every policy chooses within this space, and the IR rewrite (tg-remat)
// follows the same schedule, which the pass checks by re-planning.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_REMAT_H
#define TGC_ANALYSIS_REMAT_H

#include "tgc/Analysis/BufferGraph.h"

#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// The parts of a step rematerialization works on.
struct RematProblem {
  const BufferGraph *graph = nullptr;
  /// Nodes [0, forwardEnd] are the forward pass (forwardEnd defines the loss).
  int forwardEnd = -1;
  /// Forward values (but the loss, and values read from the barrier on):
  /// what may be dropped. A dropped value
  /// that the backward pass or a recomputation reads runs again; a kept one
  /// lives until its last read.
  std::vector<int> candidates;
  /// Values some backward node reads.
  std::vector<bool> readBackward;
  /// Forward nodes that read no transient value and are cheap: sunk.
  std::vector<bool> sinkable;
  /// The first node writing a persistent tensor (an optimizer update;
  /// the number of nodes when none does): nothing that reads parameters
  /// may move past it, so recomputations and sunk nodes stay before it.
  int barrier = 0;
  /// Backward nodes a choice may sink: their results are all read, first
  /// before the barrier.
  std::vector<bool> movable;
  /// Nodes whose FLOPs per byte moved are low (elementwise, normalization,
  /// data movement): what `selective` recomputes.
  std::vector<bool> cheap;
};

/// Arithmetic intensity (FLOPs per byte moved) at or below which an op
/// counts as cheap to recompute.
constexpr double kCheapFlopsPerByte = 4.0;

RematProblem makeRematProblem(const BufferGraph &graph, int forwardEnd);

/// What to recompute and what to move. Empty vectors mean none.
struct RematChoice {
  std::vector<bool> dropped; // by value: forward values recomputed
  std::vector<bool> eachUse; // by value: dropped ones recomputed per use
  std::vector<bool> sunk;    // by node: backward ops run at first use

  RematChoice() = default;
  explicit RematChoice(std::vector<bool> dropped)
      : dropped(std::move(dropped)) {}
  bool isDropped(int value) const {
    return !dropped.empty() && dropped[value];
  }
  bool isEachUse(int value) const {
    return !eachUse.empty() && eachUse[value];
  }
  bool isSunk(int node) const { return !sunk.empty() && sunk[node]; }
};

/// The schedule of a choice.
struct RematSchedule {
  struct Entry {
    int node;       // node of the original graph
    bool recompute; // a second execution, for the backward pass
  };
  std::vector<Entry> entries;
  /// The schedule as a graph of its own (recomputations define new values).
  BufferGraph graph;
  int64_t addedFlops = 0;
  int recomputedNodes = 0;
};
RematSchedule buildRematSchedule(const RematProblem &problem,
                                 const RematChoice &choice);

/// The policies.
std::vector<bool> chooseNone(const RematProblem &problem);
/// Recompute values of cheap ops read by one forward op (not the residual
/// stream) from kept operands, one op each, as llm.c's recompute of GeLU
/// and layer norm.
std::vector<bool> chooseSelective(const RematProblem &problem);
/// Keep each block's inputs and outputs, recompute what is inside it (as
/// Hugging Face's gradient checkpointing). `blockOf` gives each node's block
/// (-1 outside any block).
std::vector<bool> chooseBlocks(const RematProblem &problem,
                               const std::vector<int> &blockOf);

/// The result of solving for a budget.
struct RematSolution {
  RematChoice choice;
  int64_t peak = 0;  // peak live transient bytes of its schedule
  /// The same peak as the solver's simulator computed it (must equal
  /// `peak`: two implementations of one model, checked by tg-remat).
  int64_t simulatedPeak = 0;
  int64_t arena = 0; // transient arena after placement
  int64_t addedFlops = 0;
  int evaluations = 0;
  bool feasible = false;
};

/// Chooses dropped values so that `persistentBytes` + the transient arena is
/// at most `budget`, adding as few FLOPs as it can: a lazy greedy on the
/// excess over the budget per added FLOP (a move drops a value, makes a
/// dropped one recomputed for each use, or sinks a backward op), then a
/// reverse pass that undoes every recomputation the budget allows, most
/// expensive first; run from
/// several starting points (nothing dropped, `selective`, the checkpoints
/// of chooseCheckpoints, and `blocks` when `blockOf` is given, segments
/// otherwise), keeping the
/// fewest added FLOPs. When no choice fits, `feasible` is false and the
/// solution is the smallest arena found (the same search aiming as low as
/// it can go).
RematSolution solveRematBudget(const RematProblem &problem, int64_t budget,
                               int64_t persistentBytes,
                               const std::vector<int> *blockOf = nullptr);

/// Keep the values several forward ops read (the residual stream: the
/// checkpoints of a chain of blocks) and drop the rest; a structural
/// starting point of the solver that needs no name scopes.
std::vector<bool> chooseCheckpoints(const RematProblem &problem);

/// chooseCheckpoints with `segments - 1` more checkpoints, evenly spaced by
/// bytes along the forward pass (Chen et al.'s segments, for graphs
/// without name scopes).
std::vector<bool> chooseSegments(const RematProblem &problem, int segments);

/// Peak and arena of a choice.
RematSolution evaluateRemat(const RematProblem &problem,
                            const RematChoice &choice);

/// Parses "6GiB", "512MiB", "1.5GiB", "1000000" (bytes): B, KiB, MiB, GiB,
/// TiB (and KB, MB, GB, TB, decimal). Returns nullopt on malformed input.
std::optional<int64_t> parseByteSize(const std::string &text);

/// A rematerialization policy as tg-remat's `policy` and tgc-compile's
/// `--remat` spell it: none, selective, blocks or budget=<size> (also
/// budget:<size>).
struct RematPolicy {
  enum Kind { None, Selective, Blocks, Budget } kind = None;
  int64_t budget = 0; ///< Bytes, for Budget.
};

/// Parses a policy; on bad input returns nullopt and sets `error` to what
/// was expected and found.
std::optional<RematPolicy> parseRematPolicy(const std::string &text,
                                            std::string &error);

} // namespace tgc

#endif // TGC_ANALYSIS_REMAT_H
