//===- Remat.cpp - rematerialization policies and the budget solver -------===//
//
// The schedule of a choice of dropped values, the fixed policies, and the
// budget solver. The solver works on the exact planner model: every choice
// it considers is scheduled and its live bytes computed by BufferGraph's
// single pass, so "does it fit" is never estimated.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/Remat.h"
#include "tgc/Analysis/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

namespace tgc {

RematProblem makeRematProblem(const BufferGraph &graph, int forwardEnd) {
  RematProblem problem;
  problem.graph = &graph;
  problem.forwardEnd = forwardEnd;
  int n = int(graph.nodes.size());
  problem.cheap.assign(n, false);
  problem.sinkable.assign(n, false);
  problem.movable.assign(n, false);
  std::vector<bool> read(graph.values.size(), false);
  problem.readBackward.assign(graph.values.size(), false);
  std::vector<bool> readAtEnd(graph.values.size(), false);
  std::vector<int> firstReader(graph.values.size(), n);
  problem.barrier = n;
  for (int i = n - 1; i >= 0; --i)
    if (graph.nodes[i].writesPersistent)
      problem.barrier = i;
  for (int i = 0; i < n; ++i) {
    const BufferGraph::Node &node = graph.nodes[i];
    problem.cheap[i] = double(node.flops) <=
                       kCheapFlopsPerByte *
                           double(std::max<int64_t>(1, node.bytesMoved));
    for (int v : node.inputs) {
      read[v] = true;
      firstReader[v] = std::min(firstReader[v], i);
      if (i >= problem.barrier)
        readAtEnd[v] = true; // read by or after an update: must stay
      if (i > forwardEnd)
        problem.readBackward[v] = true;
      if (i == n - 1)
        readAtEnd[v] = true; // returned (the loss): must stay
    }
  }
  for (int i = forwardEnd + 1; i < n; ++i) {
    const BufferGraph::Node &node = graph.nodes[i];
    problem.movable[i] =
        i < problem.barrier && !node.outputs.empty() &&
        llvm::all_of(node.outputs, [&](int v) {
          return read[v] && firstReader[v] < problem.barrier;
        });
  }
  for (int i = 0; i <= forwardEnd && i < n; ++i) {
    const BufferGraph::Node &node = graph.nodes[i];
    bool anyRead = std::any_of(node.outputs.begin(), node.outputs.end(),
                               [&](int v) { return read[v]; });
    problem.sinkable[i] = node.inputs.empty() && !node.outputs.empty() &&
                          anyRead && problem.cheap[i];
    // Values the backward pass does not read matter too: recomputing a
    // dropped value reads its operands, which then run again or live on.
    for (int v : node.outputs)
      if (!readAtEnd[v] && graph.values[v].bytes > 0)
        problem.candidates.push_back(v);
  }
  return problem;
}

/// Whether a backward read by `consumer` of a dropped value whose latest
/// copy was made for `copiedFor` (-1: none) runs its op again.
static bool needsCopy(int copiedFor, int consumer, bool eachUse) {
  return copiedFor < 0 || (eachUse && copiedFor != consumer);
}

RematSchedule buildRematSchedule(const RematProblem &problem,
                                 const RematChoice &choice) {
  const BufferGraph &graph = *problem.graph;
  RematSchedule schedule;
  BufferGraph &out = schedule.graph;
  int n = int(graph.nodes.size());
  out.nodes.reserve(n + n / 2);
  out.values.reserve(graph.values.size() + graph.values.size() / 2);
  // current: the instance reads see; copiedFor: the backward node the
  // latest copy was made for (-1: none yet).
  std::vector<int> current(graph.values.size(), -1);
  std::vector<int> copiedFor(graph.values.size(), -1);
  std::vector<char> emitted(n, 0);

  // Runs node `index` (again, when `recompute`); `consumer` is the backward
  // node it is made for (-1 in the forward pass).
  auto emit = [&](int index, bool recompute, int consumer) {
    const BufferGraph::Node &node = graph.nodes[index];
    BufferGraph::Node copy;
    copy.flops = node.flops;
    copy.bytesMoved = node.bytesMoved;
    copy.op = node.op;
    int at = int(out.nodes.size());
    for (int v : node.inputs)
      copy.inputs.push_back(current[v]);
    for (auto [output, input] : node.reuse)
      copy.reuse.push_back({output, current[input]});
    for (int v : node.outputs) {
      int id = out.addValue(graph.values[v].bytes, at);
      copy.outputs.push_back(id);
      for (auto &pair : copy.reuse)
        if (pair.first == v)
          pair.first = id;
      // A recomputation of an op with a kept output defines a copy of it
      // that nobody reads; reads keep using the original.
      if (!recompute || choice.isDropped(v)) {
        current[v] = id;
        copiedFor[v] = consumer;
      }
    }
    out.nodes.push_back(std::move(copy));
    schedule.entries.push_back({index, recompute});
    if (recompute) {
      schedule.addedFlops += node.flops;
      ++schedule.recomputedNodes;
    }
  };

  // Makes `value` available before `consumer` reads it (-1: a forward
  // read); a backward read of a dropped value runs its op again, once or
  // for each consumer.
  std::function<void(int, int)> prepare = [&](int value, int consumer) {
    int def = graph.values[value].def;
    bool again = false;
    if (consumer >= 0 && choice.isDropped(value))
      again = needsCopy(copiedFor[value], consumer, choice.isEachUse(value));
    if (emitted[def] && !again)
      return;
    for (int input : graph.nodes[def].inputs)
      prepare(input, consumer);
    emit(def, /*recompute=*/emitted[def], consumer);
    emitted[def] = 1;
  };

  for (int i = 0; i < n; ++i) {
    if (emitted[i] || (i <= problem.forwardEnd && problem.sinkable[i]) ||
        choice.isSunk(i))
      continue;
    int consumer = i > problem.forwardEnd ? i : -1;
    for (int input : graph.nodes[i].inputs)
      prepare(input, consumer);
    emit(i, /*recompute=*/false, consumer);
    emitted[i] = 1;
  }
  return schedule;
}

std::vector<bool> chooseNone(const RematProblem &problem) {
  return std::vector<bool>(problem.graph->values.size(), false);
}

/// The distinct forward nodes reading each value.
static std::vector<std::vector<int>> forwardReaders(const RematProblem &problem) {
  const BufferGraph &graph = *problem.graph;
  std::vector<std::vector<int>> readers(graph.values.size());
  for (int i = 0; i <= problem.forwardEnd && i < int(graph.nodes.size()); ++i)
    for (int v : graph.nodes[i].inputs)
      if (readers[v].empty() || readers[v].back() != i)
        readers[v].push_back(i);
  return readers;
}

std::vector<bool> chooseSelective(const RematProblem &problem) {
  const BufferGraph &graph = *problem.graph;
  std::vector<bool> dropped = chooseNone(problem);
  std::vector<std::vector<int>> readers = forwardReaders(problem);
  const std::vector<bool> &readBackward = problem.readBackward;
  // Last to first: a dropped value is recomputed from operands that stay:
  // values the backward pass reads anyway (gelu from its input, which
  // gelu's gradient reads) or values kept for it, which must be smaller
  // than the value (a 16-bit cast of an f32 value is not worth dropping
  // alone). A cheap single-reader operand may be recomputed with it (the
  // bf16 copy of gelu's output, from gelu's input), at most two ops deep.
  std::vector<bool> keep(graph.values.size(), false);
  auto droppable = [&](int v) {
    int def = graph.values[v].def;
    return !keep[v] && problem.cheap[def] && readers[v].size() <= 1;
  };
  for (int v : llvm::reverse(problem.candidates)) {
    int def = graph.values[v].def;
    if (problem.sinkable[def]) {
      dropped[v] = true;
      continue;
    }
    if (!droppable(v))
      continue;
    // Operands that would live longer only for this recomputation.
    llvm::SmallVector<int> alsoDropped;
    int64_t extraBytes = 0;
    for (int input : graph.nodes[def].inputs) {
      if (readBackward[input] || keep[input] || dropped[input])
        continue;
      bool inner = droppable(input) &&
                   llvm::all_of(graph.nodes[graph.values[input].def].inputs,
                                [&](int u) {
                                  return readBackward[u] || keep[u];
                                });
      if (inner) {
        alsoDropped.push_back(input);
        continue;
      }
      extraBytes += graph.values[input].bytes;
    }
    if (extraBytes >= graph.values[v].bytes)
      continue;
    dropped[v] = true;
    for (int input : alsoDropped)
      dropped[input] = true;
    for (int input : graph.nodes[def].inputs)
      if (!dropped[input])
        keep[input] = true;
    for (int input : alsoDropped)
      for (int u : graph.nodes[graph.values[input].def].inputs)
        keep[u] = true;
  }
  return dropped;
}

std::vector<bool> chooseBlocks(const RematProblem &problem,
                               const std::vector<int> &blockOf) {
  const BufferGraph &graph = *problem.graph;
  std::vector<bool> dropped = chooseNone(problem);
  std::vector<std::vector<int>> readers = forwardReaders(problem);
  for (int v : problem.candidates) {
    int def = graph.values[v].def;
    int block = blockOf[def];
    bool inside = block >= 0 &&
                  std::all_of(readers[v].begin(), readers[v].end(),
                              [&](int r) { return blockOf[r] == block; });
    dropped[v] = problem.sinkable[def] || inside;
  }
  return dropped;
}

RematSolution evaluateRemat(const RematProblem &problem,
                            const RematChoice &choice) {
  RematSolution solution;
  solution.choice = choice;
  RematSchedule schedule = buildRematSchedule(problem, choice);
  solution.peak = computePeak(schedule.graph).bytes;
  solution.addedFlops = schedule.addedFlops;
  BufferLiveness liveness = computeLiveness(schedule.graph);
  std::vector<BufferLifetime> lifetimes;
  for (const BufferLiveness::Buffer &buffer : liveness.buffers)
    lifetimes.push_back({buffer.bytes, buffer.start, buffer.end});
  solution.arena = planArena(lifetimes).arenaSize;
  solution.evaluations = 1;
  return solution;
}

namespace {
/// What the solver needs to know of a choice: how far above the target its
/// live bytes go, summed over the schedule, its peak and its added FLOPs.
struct Score {
  int64_t excess = 0;
  int64_t peak = 0;
  int64_t addedFlops = 0;
};

/// buildRematSchedule and computeLiveBytes fused over flat arrays that are
/// reused from one call to the next: the solver's inner loop, thousands of
/// calls on GPT-2 1558M, allocates nothing. The same rules as
/// buildRematSchedule (solveRematBudget checks that they agree).
class ScheduleSimulator {
public:
  explicit ScheduleSimulator(const RematProblem &problem)
      : problem(problem), graph(*problem.graph) {
    size_t n = graph.nodes.size(), values = graph.values.size();
    current.resize(values);
    copiedFor.resize(values);
    emitted.resize(n);
    inputStart.reserve(2 * n);
    inputs.reserve(4 * n);
  }

  Score run(const RematChoice &choice, int64_t target) {
    this->choice = &choice;
    std::fill(current.begin(), current.end(), -1);
    std::fill(copiedFor.begin(), copiedFor.end(), -1);
    std::fill(emitted.begin(), emitted.end(), 0);
    entryNode.clear();
    inputStart.clear();
    inputs.clear();
    firstOutput.clear();
    reuseStart.clear();
    reuse.clear();
    bytes.clear();
    added = 0;
    int n = int(graph.nodes.size());
    for (int i = 0; i < n; ++i) {
      if (emitted[i] || (i <= problem.forwardEnd && problem.sinkable[i]) ||
          choice.isSunk(i))
        continue;
      int consumer = i > problem.forwardEnd ? i : -1;
      for (int input : graph.nodes[i].inputs)
        prepare(input, consumer);
      emit(i, false, consumer);
      emitted[i] = 1;
    }
    inputStart.push_back(int(inputs.size()));
    reuseStart.push_back(int(reuse.size()));
    firstOutput.push_back(int(bytes.size()));
    return sweep(target);
  }

private:
  void emit(int index, bool recompute, int consumer) {
    const BufferGraph::Node &node = graph.nodes[index];
    entryNode.push_back(index);
    inputStart.push_back(int(inputs.size()));
    for (int v : node.inputs)
      inputs.push_back(current[v]);
    reuseStart.push_back(int(reuse.size()));
    int first = int(bytes.size());
    firstOutput.push_back(first);
    for (auto [output, input] : node.reuse) {
      auto it = std::find(node.outputs.begin(), node.outputs.end(), output);
      reuse.push_back({first + int(it - node.outputs.begin()), current[input]});
    }
    for (int v : node.outputs) {
      int id = int(bytes.size());
      bytes.push_back(graph.values[v].bytes);
      if (!recompute || choice->isDropped(v)) {
        current[v] = id;
        copiedFor[v] = consumer;
      }
    }
    if (recompute)
      added += node.flops;
  }

  void prepare(int value, int consumer) {
    int def = graph.values[value].def;
    bool again = consumer >= 0 && choice->isDropped(value) &&
                 needsCopy(copiedFor[value], consumer,
                           choice->isEachUse(value));
    if (emitted[def] && !again)
      return;
    for (int input : graph.nodes[def].inputs)
      prepare(input, consumer);
    emit(def, emitted[def], consumer);
    emitted[def] = 1;
  }

  /// The memory model of BufferGraph's walkSchedule, on the flat arrays.
  Score sweep(int64_t target) {
    Score result;
    result.addedFlops = added;
    int entries = int(entryNode.size());
    size_t instances = bytes.size();
    lastUse.assign(instances, -1);
    stamp.assign(instances, -1);
    taken.assign(instances, -1);
    for (int e = 0; e < entries; ++e) {
      for (int o = firstOutput[e]; o < firstOutput[e + 1]; ++o)
        lastUse[o] = e;
      for (int k = inputStart[e]; k < inputStart[e + 1]; ++k)
        lastUse[inputs[k]] = e;
    }
    int64_t live = 0;
    for (int e = 0; e < entries; ++e) {
      for (int o = firstOutput[e]; o < firstOutput[e + 1]; ++o)
        live += bytes[o];
      for (int k = reuseStart[e]; k < reuseStart[e + 1]; ++k) {
        auto [output, input] = reuse[k];
        if (lastUse[input] != e || taken[input] == e || taken[output] == e ||
            bytes[input] != bytes[output])
          continue;
        taken[input] = taken[output] = e;
        live -= bytes[output];
      }
      result.peak = std::max(result.peak, live);
      result.excess += std::max<int64_t>(0, live - target);
      for (int k = inputStart[e]; k < inputStart[e + 1]; ++k) {
        int input = inputs[k];
        if (stamp[input] == e)
          continue;
        stamp[input] = e;
        if (lastUse[input] == e && taken[input] != e)
          live -= bytes[input];
      }
      for (int o = firstOutput[e]; o < firstOutput[e + 1]; ++o)
        if (lastUse[o] == e)
          live -= bytes[o];
    }
    return result;
  }

  const RematProblem &problem;
  const BufferGraph &graph;
  const RematChoice *choice = nullptr;
  std::vector<int> current, copiedFor;
  std::vector<char> emitted;
  std::vector<int> entryNode, inputStart, inputs, firstOutput, reuseStart;
  std::vector<std::pair<int, int>> reuse;
  std::vector<int64_t> bytes;
  std::vector<int> lastUse, stamp, taken;
  int64_t added = 0;
};

/// The work the search with the extended moves may do, in schedule nodes
/// simulated (evaluations times the step's nodes), in solving for the
/// budget and again in finding the floor: about 0.1 s per search on GPT-2
/// 124M or 1558M, which completes it on small steps.
constexpr int64_t kExtendedWork = 4000000;

class BudgetSolver {
public:
  /// `extended`: besides dropping values, recompute them for each use and
  /// sink backward ops (each offered move costs an evaluation).
  /// `maxEvaluations` (0: no limit) stops the greedy after that many.
  BudgetSolver(const RematProblem &problem, int64_t target, bool extended,
               int maxEvaluations = 0)
      : problem(problem), graph(*problem.graph), target(target),
        extended(extended), maxEvaluations(maxEvaluations),
        simulator(problem),
        candidate(graph.values.size(), false) {
    for (int v : problem.candidates)
      candidate[v] = true;
  }

  Score score(const RematChoice &choice) {
    ++evaluations;
    return simulator.run(choice, target);
  }

  /// Lazy greedy from `choice`: apply the move removing the most excess
  /// per added FLOP until the peak fits; scores are refreshed only when a
  /// stale one is on top (they rarely grow as more is dropped). Applying a
  /// move offers the moves it makes useful (the operands of a dropped
  /// value, now read by a recomputation, and its each-use move).
  void greedy(RematChoice &choice) {
    choice.eachUse.resize(graph.values.size(), false);
    choice.sunk.resize(graph.nodes.size(), false);
    Score current = score(choice);
    if (current.peak <= target)
      return;
    struct Item {
      double priority;
      Move move;
      int stamp;
      bool operator<(const Item &o) const {
        if (priority != o.priority)
          return priority < o.priority;
        // Deterministic: lower ids first.
        return std::tie(move.id, move.kind) > std::tie(o.move.id, o.move.kind);
      }
    };
    auto priorityOf = [&](Move move, Score &with) {
      apply(choice, move);
      with = score(choice);
      undo(choice, move);
      int64_t gain = current.excess - with.excess;
      if (gain <= 0)
        return -1.0;
      return double(gain) /
             (double(with.addedFlops - current.addedFlops) + 1.0);
    };
    std::priority_queue<Item> heap;
    int stamp = 0;
    auto offer = [&](Move move) {
      if (!applicable(choice, move) || (!extended && move.kind != Move::Drop))
        return;
      Score with;
      double priority = priorityOf(move, with);
      if (priority > 0)
        heap.push({priority, move, stamp});
    };
    // A value only the forward pass reads gains nothing dropped alone (no
    // recomputation reads it yet): it is offered once one does.
    for (int v : problem.candidates) {
      if (choice.dropped[v])
        offer({Move::EachUse, v});
      else if (problem.readBackward[v])
        offer({Move::Drop, v});
    }
    for (int i = problem.forwardEnd + 1; i < int(graph.nodes.size()); ++i)
      offer({Move::Sink, i});
    while (current.peak > target && !heap.empty() &&
           (!maxEvaluations || evaluations < maxEvaluations)) {
      Item top = heap.top();
      heap.pop();
      if (!applicable(choice, top.move))
        continue; // applied since
      Score with;
      double priority = priorityOf(top.move, with);
      if (priority <= 0)
        continue;
      if (top.stamp != stamp && !heap.empty() &&
          priority < heap.top().priority) {
        heap.push({priority, top.move, stamp});
        continue;
      }
      apply(choice, top.move);
      current = with;
      ++stamp;
      if (top.move.kind == Move::Drop) {
        std::vector<int> dropped = moved;
        for (int v : dropped) {
          offer({Move::EachUse, v});
          for (int input : graph.nodes[graph.values[v].def].inputs)
            offer({Move::Drop, input});
        }
      }
    }
  }

  /// Undoes every recomputation the target allows, the one whose op costs
  /// most first: each-use back to once, then dropped back to kept.
  Score keepWhatFits(RematChoice &choice) {
    std::vector<int> order;
    for (int v : problem.candidates)
      if (choice.dropped[v])
        order.push_back(v);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return graph.nodes[graph.values[a].def].flops >
             graph.nodes[graph.values[b].def].flops;
    });
    Score current = score(choice);
    auto tryUndo = [&](std::vector<bool>::reference flag) {
      flag = false;
      Score without = score(choice);
      if (without.peak <= target && without.addedFlops <= current.addedFlops)
        current = without;
      else
        flag = true;
    };
    for (int v : order) {
      if (choice.eachUse[v])
        tryUndo(choice.eachUse[v]);
      if (!choice.eachUse[v])
        tryUndo(choice.dropped[v]);
    }
    return current;
  }

  int evaluations = 0;

private:
  struct Move {
    enum Kind { Drop, EachUse, Sink } kind;
    int id; // a value, or a node for Sink
  };

  bool applicable(const RematChoice &choice, Move move) const {
    switch (move.kind) {
    case Move::Drop:
      return candidate[move.id] && !choice.dropped[move.id];
    case Move::EachUse:
      return candidate[move.id] && choice.dropped[move.id] &&
             !choice.eachUse[move.id];
    case Move::Sink:
      return problem.movable[move.id] && !choice.sunk[move.id];
    }
    return false;
  }

  /// A drop or each-use move carries along the operands of the value's op
  /// that only the forward pass reads (recursively): dropping a value
  /// drops them (kept, they would live on only to recompute it), and
  /// recomputing it for each use recomputes them for each use (a shared
  /// copy would live from the first use to the last). `moved` lists them.
  void apply(RematChoice &choice, Move move) {
    moved.clear();
    if (move.kind == Move::Sink) {
      choice.sunk[move.id] = true;
      return;
    }
    bool each = move.kind == Move::EachUse;
    std::vector<bool> &flags = each ? choice.eachUse : choice.dropped;
    std::function<void(int)> visit = [&](int v) {
      flags[v] = true;
      moved.push_back(v);
      for (int input : graph.nodes[graph.values[v].def].inputs)
        if (candidate[input] && !flags[input] &&
            !problem.readBackward[input] && (!each || choice.dropped[input]))
          visit(input);
    };
    visit(move.id);
  }

  void undo(RematChoice &choice, Move move) {
    if (move.kind == Move::Sink) {
      choice.sunk[move.id] = false;
      return;
    }
    std::vector<bool> &flags =
        move.kind == Move::EachUse ? choice.eachUse : choice.dropped;
    for (int v : moved)
      flags[v] = false;
  }

  const RematProblem &problem;
  const BufferGraph &graph;
  int64_t target;
  bool extended;
  int maxEvaluations;
  ScheduleSimulator simulator;
  std::vector<bool> candidate;
  std::vector<int> moved;
};
} // namespace

std::vector<bool> chooseCheckpoints(const RematProblem &problem) {
  const BufferGraph &graph = *problem.graph;
  std::vector<bool> dropped = chooseNone(problem);
  std::vector<std::vector<int>> readers = forwardReaders(problem);
  for (int v : problem.candidates)
    dropped[v] = problem.sinkable[graph.values[v].def] || readers[v].size() <= 1;
  return dropped;
}

std::vector<bool> chooseSegments(const RematProblem &problem, int segments) {
  const BufferGraph &graph = *problem.graph;
  std::vector<bool> dropped = chooseCheckpoints(problem);
  // Checkpoints are values the backward pass reads (keeping any other one
  // would only lengthen its life).
  const std::vector<bool> &readBackward = problem.readBackward;
  int64_t total = 0;
  for (int v : problem.candidates)
    if (readBackward[v])
      total += graph.values[v].bytes;
  int64_t seen = 0;
  int next = 1;
  for (int v : problem.candidates) {
    if (!readBackward[v])
      continue;
    seen += graph.values[v].bytes;
    if (next < segments && seen * segments >= total * next) {
      dropped[v] = false; // a checkpoint
      ++next;
    }
  }
  return dropped;
}

RematSolution solveRematBudget(const RematProblem &problem, int64_t budget,
                               int64_t persistentBytes,
                               const std::vector<int> *blockOf) {
  // Starting points: nothing dropped, and structured choices the greedy
  // cannot reach one value at a time (dropping a whole segment between
  // checkpoints pays only once all of it is dropped).
  std::vector<std::vector<bool>> starts = {chooseNone(problem),
                                           chooseSelective(problem),
                                           chooseCheckpoints(problem)};
  if (blockOf) {
    starts.push_back(chooseBlocks(problem, *blockOf));
  } else {
    // Without name scopes, Chen et al.'s segments: k evenly spaced
    // checkpoints, everything between them dropped.
    for (int segments : {2, 3, 4, 8, 16})
      if (2 * segments <= int(problem.candidates.size()))
        starts.push_back(chooseSegments(problem, segments));
  }

  int evaluations = 0;
  std::optional<RematSolution> best, lowest;
  // The extended moves cost an evaluation each to offer, so their search
  // has a budget of its own: it completes on small steps, and gives way to
  // the structured starts on large ones.
  const int extendedEvaluations = int(std::max<int64_t>(
      100, kExtendedWork / std::max<size_t>(1, problem.graph->nodes.size())));
  int extendedLeft = extendedEvaluations;
  // Solves from `start` for the budget; the target is on the peak of live
  // bytes, and placement can need a little more than the peak, so it is
  // tightened by the overshoot and solved again.
  auto solveFrom = [&](const std::vector<bool> &start, bool extended) {
    int64_t target = budget - persistentBytes;
    for (int attempt = 0; attempt < 4 && target > 0; ++attempt) {
      if (extended && extendedLeft <= 0)
        return;
      BudgetSolver solver(problem, target, extended,
                          extended ? extendedLeft : 0);
      RematChoice choice(start);
      solver.greedy(choice);
      Score score = solver.keepWhatFits(choice);
      evaluations += solver.evaluations;
      if (extended)
        extendedLeft -= solver.evaluations;
      if (best && score.addedFlops >= best->addedFlops)
        return; // cannot improve on what already fits
      if (score.peak > target)
        return;
      RematSolution solution = evaluateRemat(problem, choice);
      solution.simulatedPeak = score.peak;
      if (persistentBytes + solution.arena <= budget) {
        solution.feasible = true;
        best = solution;
        return;
      }
      target = std::min(target, score.peak) -
               (persistentBytes + solution.arena - budget);
    }
  };
  // From nothing dropped, the extended moves (what the tightest budgets of
  // small steps need); from the structured starts, drops alone.
  for (auto [index, start] : llvm::enumerate(starts)) {
    RematSolution plain = evaluateRemat(problem, RematChoice(start));
    ++evaluations;
    if (!lowest || plain.arena < lowest->arena)
      lowest = plain;
    solveFrom(start, /*extended=*/index == 0);
  }

  if (!best) {
    // The floor. Nothing here depends on the budget, so the floor reported
    // is a budget the search meets. Two descents: the extended moves from
    // nothing dropped, and drops alone from the start with the lowest
    // peak; each aims a little below the lowest peak so far until it stops
    // gaining, then undoes what its peak does not need.
    RematChoice fromLowest = lowest->choice;
    auto descend = [&](RematChoice choice, bool extended) {
      int64_t peak =
          computePeak(buildRematSchedule(problem, choice).graph).bytes;
      ++evaluations;
      int64_t level = std::min(peak, lowest->peak);
      int left = extended ? extendedEvaluations : 0;
      for (int round = 0; round < 6 && (!extended || left > 0); ++round) {
        BudgetSolver aim(problem, level - std::max<int64_t>(1, level / 16),
                         extended, left);
        aim.greedy(choice);
        int64_t reached = aim.score(choice).peak;
        evaluations += aim.evaluations;
        left -= aim.evaluations;
        if (reached >= peak)
          break;
        peak = level = reached;
      }
      BudgetSolver solver(problem, peak, extended);
      Score score = solver.keepWhatFits(choice);
      evaluations += solver.evaluations;
      RematSolution solution = evaluateRemat(problem, choice);
      solution.simulatedPeak = score.peak;
      if (solution.arena < lowest->arena ||
          (solution.arena == lowest->arena &&
           solution.addedFlops < lowest->addedFlops))
        lowest = solution;
    };
    descend(RematChoice(starts.front()), /*extended=*/true);
    descend(fromLowest, /*extended=*/false);
    lowest->feasible = persistentBytes + lowest->arena <= budget;
  }
  RematSolution result = best ? *best : *lowest;
  result.evaluations = evaluations;
  return result;
}

std::optional<int64_t> parseByteSize(const std::string &text) {
  size_t i = 0;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0)
    return std::nullopt;
  std::string number = text.substr(0, i), unit = text.substr(i);
  if (std::count(number.begin(), number.end(), '.') > 1)
    return std::nullopt;
  double value = std::strtod(number.c_str(), nullptr);
  static const std::pair<const char *, double> units[] = {
      {"", 1.0},           {"B", 1.0},
      {"KiB", 1024.0},     {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024}, {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"KB", 1e3},         {"MB", 1e6},
      {"GB", 1e9},         {"TB", 1e12}};
  for (auto [name, scale] : units) {
    if (unit != name)
      continue;
    double bytes = std::floor(value * scale);
    if (!std::isfinite(bytes) || bytes < 1.0 || bytes > 9.0e18)
      return std::nullopt;
    return int64_t(bytes);
  }
  return std::nullopt;
}

std::optional<RematPolicy> parseRematPolicy(const std::string &text,
                                            std::string &error) {
  llvm::StringRef rest = text;
  if (rest == "none")
    return RematPolicy{RematPolicy::None, 0};
  if (rest == "selective")
    return RematPolicy{RematPolicy::Selective, 0};
  if (rest == "blocks")
    return RematPolicy{RematPolicy::Blocks, 0};
  if (!rest.consume_front("budget=") && !rest.consume_front("budget:")) {
    error = "must be none, selective, blocks or budget=<size>, found '" +
            text + "'";
    return std::nullopt;
  }
  std::optional<int64_t> bytes = parseByteSize(rest.str());
  if (!bytes) {
    error = "budget=<size> needs a positive size such as 6GiB, 512MiB or 1000000 "
            "(bytes), found '" + rest.str() + "'";
    return std::nullopt;
  }
  return RematPolicy{RematPolicy::Budget, *bytes};
}

} // namespace tgc
