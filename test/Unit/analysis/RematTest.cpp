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
  RematSchedule schedule = buildRematSchedule(problem, chooseNone(problem));
  EXPECT_EQ(schedule.addedFlops, 0);
  EXPECT_EQ(schedule.entries.size(), graph.nodes.size());
  EXPECT_EQ(computePeak(schedule.graph).bytes, computePeak(graph).bytes);
}

TEST(Remat, ADroppedValueRunsAgainBeforeItsFirstBackwardRead) {
  BufferGraph graph = makeChainStep(4, 100);
  RematProblem problem = makeRematProblem(graph, 3);
  std::vector<bool> dropped = chooseNone(problem);
  dropped[1] = true; // the second activation
  RematSchedule schedule = buildRematSchedule(problem, dropped);
  EXPECT_EQ(schedule.addedFlops, 100);
  EXPECT_EQ(schedule.recomputedNodes, 1);
  // Forward 0..3, seed 4, backward of layers 3 and 2, then node 1 again,
  // then the backward of layer 1 reading the copy.
  std::vector<int> order;
  for (const RematSchedule::Entry &entry : schedule.entries)
    order.push_back(entry.recompute ? -entry.node : entry.node);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, -1, 7, 8, 9}));
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
