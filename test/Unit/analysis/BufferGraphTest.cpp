//===- BufferGraphTest.cpp - liveness and peak of a buffer graph ----------===//
//
// The single-pass peak against the buffers and lifetimes placement uses, on
// hand-made graphs whose peaks are known and on random ones.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/BufferGraph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace tgc;

namespace {

/// Adds a node reading `inputs` and defining one value of `bytes` (none
/// when bytes < 0).
int addNode(BufferGraph &graph, std::vector<int> inputs, int64_t bytes,
            std::vector<std::pair<int, int>> reuse = {}) {
  BufferGraph::Node node;
  node.inputs = std::move(inputs);
  int index = int(graph.nodes.size());
  int value = -1;
  if (bytes >= 0) {
    value = graph.addValue(bytes, index);
    node.outputs.push_back(value);
  }
  for (auto [output, input] : reuse)
    node.reuse.push_back({output < 0 ? value : output, input});
  graph.nodes.push_back(node);
  return value;
}

/// The peak as the sweep over computeLiveness's buffers gives it.
int64_t peakOfBuffers(const BufferGraph &graph) {
  BufferLiveness liveness = computeLiveness(graph);
  int64_t peak = 0;
  for (size_t step = 0; step < graph.nodes.size(); ++step) {
    int64_t live = 0;
    for (const BufferLiveness::Buffer &buffer : liveness.buffers)
      if (buffer.start <= int(step) && int(step) <= buffer.end)
        live += buffer.bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(BufferGraph, ChainPeaksWhereTwoValuesMeet) {
  BufferGraph graph;
  int a = addNode(graph, {}, 100);
  int b = addNode(graph, {a}, 200);
  int c = addNode(graph, {b}, 50);
  addNode(graph, {c}, -1);
  PeakResult peak = computePeak(graph);
  EXPECT_EQ(peak.bytes, 300); // a and b at node 1
  EXPECT_EQ(peak.node, 1);
  EXPECT_EQ(peakOfBuffers(graph), 300);
}

TEST(BufferGraph, AnOutputTakesADyingInputsBuffer) {
  BufferGraph graph;
  int a = addNode(graph, {}, 256);
  int b = addNode(graph, {a}, 256, {{-1, a}}); // a dies here: b takes it
  int c = addNode(graph, {b}, 256, {{-1, b}});
  addNode(graph, {c}, -1);
  EXPECT_EQ(computePeak(graph).bytes, 256);
  BufferLiveness liveness = computeLiveness(graph);
  ASSERT_EQ(liveness.buffers.size(), 1u);
  EXPECT_EQ(liveness.buffers[0].values, (std::vector<int>{a, b, c}));
  EXPECT_EQ(liveness.buffers[0].start, 0);
  EXPECT_EQ(liveness.buffers[0].end, 3);
}

TEST(BufferGraph, AnInputReadLaterIsNotTaken) {
  BufferGraph graph;
  int a = addNode(graph, {}, 256);
  int b = addNode(graph, {a}, 256, {{-1, a}}); // a is read again below
  addNode(graph, {a, b}, -1);
  EXPECT_EQ(computePeak(graph).bytes, 512);
  EXPECT_EQ(computeLiveness(graph).buffers.size(), 2u);
}

TEST(BufferGraph, AnInputReadTwiceByOneNodeIsFreedOnce) {
  BufferGraph graph;
  int a = addNode(graph, {}, 64);
  int b = addNode(graph, {a, a}, 64);
  int c = addNode(graph, {b}, 64);
  addNode(graph, {c}, -1);
  std::vector<int64_t> live = computeLiveBytes(graph);
  EXPECT_EQ(live, (std::vector<int64_t>{64, 128, 128, 64}));
}

TEST(BufferGraph, RandomGraphsAgreeWithTheirBuffers) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    BufferGraph graph;
    int nodes = 2 + int(random() % 40);
    std::vector<int> values;
    for (int i = 0; i < nodes; ++i) {
      std::vector<int> inputs;
      int reads = values.empty() ? 0 : int(random() % 3);
      for (int r = 0; r < reads; ++r)
        inputs.push_back(values[random() % values.size()]);
      int64_t bytes = 256 * int64_t(1 + random() % 4);
      std::vector<std::pair<int, int>> reuse;
      for (int input : inputs)
        if (graph.values[input].bytes == bytes && random() % 2)
          reuse.push_back({-1, input});
      int value = addNode(graph, inputs, random() % 5 ? bytes : -1, reuse);
      if (value < 0)
        graph.nodes.back().reuse.clear();
      else
        values.push_back(value);
    }
    ASSERT_EQ(computePeak(graph).bytes, peakOfBuffers(graph))
        << "trial " << trial;
    std::vector<int64_t> live = computeLiveBytes(graph);
    ASSERT_EQ(*std::max_element(live.begin(), live.end()),
              computePeak(graph).bytes);
  }
}

} // namespace
