//===- BufferGraph.cpp - liveness and peak over a schedule ----------------===//
//
// One memory model, two views: computePeak walks the schedule once keeping
// a running sum (what rematerialization calls in its inner loop), and
// computeLiveness builds the buffers and lifetimes that placement and the
// report need. A unit test holds them equal.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/BufferGraph.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace tgc {

/// The last node reading each value, or its defining node when unread.
static std::vector<int> computeLastUses(const BufferGraph &graph) {
  std::vector<int> lastUse(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v)
    lastUse[v] = graph.values[v].def;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (int input : graph.nodes[i].inputs)
      lastUse[input] = std::max(lastUse[input], int(i));
  return lastUse;
}

namespace {
/// Walks the schedule once, calling `visit(node, liveBytes)` at each node
/// and `transfer(output, input)` when an output takes an input's buffer.
template <typename Visit, typename Transfer>
void walkSchedule(const BufferGraph &graph, const std::vector<int> &lastUse,
                  Visit visit, Transfer transfer) {
  // `stamp` marks the values already handled at the current node, so that
  // an input read twice is freed once and a buffer is taken once.
  std::vector<int> stamp(graph.values.size(), -1);
  std::vector<int> taken(graph.values.size(), -1);
  int64_t live = 0;
  for (int i = 0, e = int(graph.nodes.size()); i < e; ++i) {
    const BufferGraph::Node &node = graph.nodes[i];
    for (int output : node.outputs)
      live += graph.values[output].bytes;
    for (auto [output, input] : node.reuse) {
      if (lastUse[input] != i || taken[input] == i || taken[output] == i ||
          graph.values[input].bytes != graph.values[output].bytes)
        continue;
      taken[input] = taken[output] = i;
      live -= graph.values[output].bytes;
      transfer(output, input);
    }
    visit(i, live);
    for (int input : node.inputs) {
      if (stamp[input] == i)
        continue;
      stamp[input] = i;
      if (lastUse[input] == i && taken[input] != i)
        live -= graph.values[input].bytes;
    }
    for (int output : node.outputs)
      if (lastUse[output] == i)
        live -= graph.values[output].bytes;
  }
}
} // namespace

PeakResult computePeak(const BufferGraph &graph) {
  PeakResult peak;
  std::vector<int> lastUse = computeLastUses(graph);
  walkSchedule(
      graph, lastUse,
      [&](int node, int64_t live) {
        if (live > peak.bytes) {
          peak.bytes = live;
          peak.node = node;
        }
      },
      [](int, int) {});
  return peak;
}

std::vector<int64_t> computeLiveBytes(const BufferGraph &graph) {
  std::vector<int64_t> curve(graph.nodes.size(), 0);
  std::vector<int> lastUse = computeLastUses(graph);
  walkSchedule(
      graph, lastUse, [&](int node, int64_t live) { curve[node] = live; },
      [](int, int) {});
  return curve;
}

BufferLiveness computeLiveness(const BufferGraph &graph) {
  BufferLiveness result;
  result.lastUse = computeLastUses(graph);
  std::vector<int> takesBufferOf(graph.values.size(), -1);
  walkSchedule(
      graph, result.lastUse, [](int, int64_t) {},
      [&](int output, int input) { takesBufferOf[output] = input; });
  // In schedule order, so that an input's buffer is known before an output
  // takes it; every other value opens a buffer of its own.
  result.bufferOf.assign(graph.values.size(), -1);
  for (const BufferGraph::Node &node : graph.nodes) {
    for (int output : node.outputs) {
      int from = takesBufferOf[output];
      if (from >= 0) {
        result.bufferOf[output] = result.bufferOf[from];
      } else {
        result.bufferOf[output] = int(result.buffers.size());
        BufferLiveness::Buffer buffer;
        buffer.bytes = graph.values[output].bytes;
        buffer.start = buffer.end = graph.values[output].def;
        result.buffers.push_back(buffer);
      }
      BufferLiveness::Buffer &buffer = result.buffers[result.bufferOf[output]];
      buffer.end = std::max(buffer.end, result.lastUse[output]);
      buffer.values.push_back(output);
    }
  }
  return result;
}

std::string writeBufferGraphJSON(const BufferGraph &graph,
                                 const std::vector<std::string> &names,
                                 const std::vector<bool> &forward,
                                 int64_t persistentBytes) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream json(os, 1);
  json.object([&] {
    json.attribute("persistent_bytes", persistentBytes);
    json.attributeArray("values", [&] {
      for (const BufferGraph::Value &value : graph.values)
        json.object([&] {
          json.attribute("bytes", value.bytes);
          json.attribute("def", value.def);
        });
    });
    json.attributeArray("nodes", [&] {
      for (size_t i = 0; i < graph.nodes.size(); ++i) {
        const BufferGraph::Node &node = graph.nodes[i];
        json.object([&] {
          json.attribute("name", i < names.size() ? names[i] : "");
          json.attribute("flops", node.flops);
          json.attribute("forward", i < forward.size() && forward[i]);
          json.attributeArray("inputs", [&] {
            for (int v : node.inputs)
              json.value(v);
          });
          json.attributeArray("outputs", [&] {
            for (int v : node.outputs)
              json.value(v);
          });
          json.attributeArray("reuse", [&] {
            for (auto [output, input] : node.reuse)
              json.array([&] {
                json.value(output);
                json.value(input);
              });
          });
        });
      }
    });
  });
  os << "\n";
  return out;
}

} // namespace tgc
