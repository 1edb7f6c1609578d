//===- RematTest.cpp - remat schedules, policies and the budget solver ----===//
//
// On a synthetic training step (a chain forward pass whose backward pass
// reads every activation, as an MLP's does): the schedule of a choice is
// what the rules say, the budget solver meets the budgets it reports
// feasible with a peak its own simulator agrees with, and sizes parse.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/Remat.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace tgc;

namespace {

/// A chain of `layers` forward nodes (each 1 KiB, `flops` FLOPs) and a
/// backward node per layer reading the gradient so far and that layer's
/// activation, then an update reading the last gradient. The loss is the
/// last forward node.
BufferGraph makeChainStep(int layers, int64_t flops) {
  BufferGraph graph;
  auto add = [&](std::vector<int> inputs, int64_t bytes, int64_t cost) {
    BufferGraph::Node node;
    node.inputs = std::move(inputs);
    node.flops = cost;
    node.bytesMoved = 1 << 30; // everything is cheap per byte
    int value = graph.addValue(bytes, int(graph.nodes.size()));
    node.outputs.push_back(value);
    graph.nodes.push_back(node);
    return value;
  };
  std::vector<int> activations;
  int x = add({}, 1024, flops);
  activations.push_back(x);
  for (int i = 1; i < layers; ++i)
    activations.push_back(x = add({x}, 1024, flops));
  int grad = add({x}, 1024, flops); // the loss seed's cotangent
  for (int i = layers - 1; i >= 0; --i)
    grad = add({grad, activations[i]}, 1024, 2 * flops);
  BufferGraph::Node update;
  update.inputs = {grad};
  graph.nodes.push_back(update);
  return graph;
}

TEST(Remat, NothingDroppedIsTheOriginalSchedule) {
  BufferGraph graph = makeChainStep(6, 100);
  RematProblem problem = makeRematProblem(graph, 5);
  RematSchedule schedule = buildRematSchedule(problem, RematChoice(chooseNone(problem)));
  EXPECT_EQ(schedule.addedFlops, 0);
  EXPECT_EQ(schedule.entries.size(), graph.nodes.size());
  EXPECT_EQ(computePeak(schedule.graph).bytes, computePeak(graph).bytes);
}

TEST(Remat, ADroppedValueRunsAgainBeforeItsFirstBackwardRead) {
  BufferGraph graph = makeChainStep(4, 100);
  RematProblem problem = makeRematProblem(graph, 3);
  std::vector<bool> dropped = chooseNone(problem);
  dropped[1] = true; // the second activation
  RematSchedule schedule = buildRematSchedule(problem, RematChoice(dropped));
  EXPECT_EQ(schedule.addedFlops, 100);
  EXPECT_EQ(schedule.recomputedNodes, 1);
  // Forward 0..3, seed 4, backward of layers 3 and 2, then node 1 again,
  // then the backward of layer 1 reading the copy.
  std::vector<int> order;
  for (const RematSchedule::Entry &entry : schedule.entries)
    order.push_back(entry.recompute ? -entry.node : entry.node);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, -1, 7, 8, 9}));
}

/// Adds a node reading `inputs` and defining one 1 KiB value (none when
/// `defines` is false); returns the value (or -1).
static int addNode(BufferGraph &graph, std::vector<int> inputs,
                   bool defines = true) {
  BufferGraph::Node node;
  node.inputs = std::move(inputs);
  node.flops = 10;
  node.bytesMoved = 1 << 30;
  int value = -1;
  if (defines) {
    value = graph.addValue(1024, int(graph.nodes.size()));
    node.outputs.push_back(value);
  }
  graph.nodes.push_back(node);
  return value;
}

/// The schedule as node indices, recomputations negated.
static std::vector<int> orderOf(const RematSchedule &schedule) {
  std::vector<int> order;
  for (const RematSchedule::Entry &entry : schedule.entries)
    order.push_back(entry.recompute ? -entry.node : entry.node);
  return order;
}

TEST(Remat, ADroppedValueRecomputedForEachUseRunsAgainBeforeEach) {
  // a = n0, b = n1(a), loss = n2(b); the backward pass reads a twice.
  BufferGraph graph;
  int a = addNode(graph, {});
  int b = addNode(graph, {a});
  int loss = addNode(graph, {b});
  int g1 = addNode(graph, {loss, a});
  int g2 = addNode(graph, {g1});
  int g3 = addNode(graph, {g2, a});
  addNode(graph, {g3}, /*defines=*/false);
  RematProblem problem = makeRematProblem(graph, 2);
  RematChoice once(chooseNone(problem));
  once.dropped[a] = true;
  EXPECT_EQ(orderOf(buildRematSchedule(problem, once)),
            (std::vector<int>{0, 1, 2, -0, 3, 4, 5, 6}));
  RematChoice each = once;
  each.eachUse.assign(graph.values.size(), false);
  each.eachUse[a] = true;
  RematSchedule schedule = buildRematSchedule(problem, each);
  EXPECT_EQ(orderOf(schedule), (std::vector<int>{0, 1, 2, -0, 3, 4, -0, 5, 6}));
  EXPECT_EQ(schedule.addedFlops, 20);
  // Each copy dies at the op it was made for: nothing after node 3 (entry
  // 4) reads the first one.
  int firstCopy = schedule.graph.nodes[3].outputs[0];
  for (size_t e = 5; e < schedule.graph.nodes.size(); ++e)
    EXPECT_EQ(std::count(schedule.graph.nodes[e].inputs.begin(),
                         schedule.graph.nodes[e].inputs.end(), firstCopy),
              0)
        << "entry " << e;
}

TEST(Remat, ASunkBackwardOpRunsJustBeforeItsFirstReader) {
  BufferGraph graph;
  int a = addNode(graph, {});
  int loss = addNode(graph, {a});
  int p = addNode(graph, {loss});    // node 2: read only by node 4
  int q = addNode(graph, {loss, a}); // node 3
  int r = addNode(graph, {p, q});    // node 4
  addNode(graph, {r}, /*defines=*/false);
  RematProblem problem = makeRematProblem(graph, 1);
  EXPECT_TRUE(problem.movable[2]);
  EXPECT_FALSE(problem.movable[5]); // defines nothing
  RematChoice choice(chooseNone(problem));
  choice.sunk.assign(graph.nodes.size(), false);
  choice.sunk[2] = true;
  RematSchedule schedule = buildRematSchedule(problem, choice);
  EXPECT_EQ(orderOf(schedule), (std::vector<int>{0, 1, 3, 2, 4, 5}));
  EXPECT_EQ(schedule.addedFlops, 0);
}

TEST(Remat, NothingMovesPastAnUpdate) {
  // An update (writing a persistent tensor) at node 3: a value read from
  // there on cannot be dropped, and an op first read there cannot sink.
  BufferGraph graph;
  int a = addNode(graph, {});
  int loss = addNode(graph, {a});
  int g = addNode(graph, {loss});
  addNode(graph, {g}, /*defines=*/false);
  graph.nodes.back().writesPersistent = true;
  int late = addNode(graph, {a}); // node 4, after the update
  addNode(graph, {late}, /*defines=*/false);
  RematProblem problem = makeRematProblem(graph, 1);
  EXPECT_EQ(problem.barrier, 3);
  EXPECT_EQ(std::count(problem.candidates.begin(), problem.candidates.end(), a),
            0);
  EXPECT_FALSE(problem.movable[2]); // first read by the update
  EXPECT_FALSE(problem.movable[4]); // after it
}

TEST(Remat, BudgetsAreMetWithThePeakTheSolverSimulated) {
  BufferGraph graph = makeChainStep(12, 1000);
  RematProblem problem = makeRematProblem(graph, 11);
  int64_t none = computePeak(graph).bytes;
  int64_t previousFlops = 0;
  bool sawInfeasible = false;
  for (int64_t budget = none; budget > 0; budget -= 1024) {
    RematSolution solution = solveRematBudget(problem, budget, 0);
    if (!solution.feasible) {
      sawInfeasible = true;
      EXPECT_GT(solution.arena, budget);
      break;
    }
    EXPECT_LE(solution.arena, budget);
    EXPECT_EQ(solution.simulatedPeak, solution.peak);
    // A tighter budget never costs fewer FLOPs on a chain.
    EXPECT_GE(solution.addedFlops, previousFlops) << "budget " << budget;
    previousFlops = solution.addedFlops;
  }
  EXPECT_TRUE(sawInfeasible);
  EXPECT_GT(previousFlops, 0);
}

TEST(Remat, ParsesSizes) {
  EXPECT_EQ(parseByteSize("1000000"), 1000000);
  EXPECT_EQ(parseByteSize("512B"), 512);
  EXPECT_EQ(parseByteSize("6GiB"), int64_t(6) << 30);
  EXPECT_EQ(parseByteSize("1.5MiB"), int64_t(3) << 19);
  EXPECT_EQ(parseByteSize("2KB"), 2000);
  EXPECT_FALSE(parseByteSize(""));
  EXPECT_FALSE(parseByteSize("-5GiB"));
  EXPECT_FALSE(parseByteSize("0"));
  EXPECT_FALSE(parseByteSize("6 GiB"));
  EXPECT_FALSE(parseByteSize("6gib"));
  EXPECT_FALSE(parseByteSize("1.2.3"));
  EXPECT_FALSE(parseByteSize("1e99GiB"));
}

} // namespace
