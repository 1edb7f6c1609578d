//===- BufferGraph.h - a step as ops reading and defining buffers -*- C++ -*-===//
//
// The memory planner's view of a schedule, free of MLIR: nodes (ops, in
// execution order) read and define values, each value a transient buffer of
// known size. Persistent tensors (parameters, state, inputs) and values
// written into them are not values here: they cost the arena nothing. A
// reshape reads its operand and defines nothing (its users read the
// operand's value: it is a view). A node may declare that an output may take
// the buffer of an input that dies at that node (in-place reuse).
//
// `computePeak` answers "what would the peak be if the step ran this
// schedule" in one pass, without side effects, so that rematerialization
// can ask it thousands of times; `computeLiveness` gives the same model's
// buffers and lifetimes for placement and reporting. Both implement one
// memory model:
// - a value is live from the node defining it through the last node
//   reading it (inclusive), or only at its defining node when unread;
// - at a node, the live bytes include the inputs that die there and the
//   outputs it defines, except that an output taking a dying input's
//   buffer adds nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_BUFFERGRAPH_H
#define TGC_ANALYSIS_BUFFERGRAPH_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

struct BufferGraph {
  struct Value {
    int64_t bytes = 0; // bytes it takes in the arena (aligned)
    int def = -1;      // the node defining it
  };
  struct Node {
    std::vector<int> inputs;  // values read (persistent tensors omitted)
    std::vector<int> outputs; // values defined
    /// (output, input): the output may take the input's buffer when the
    /// input dies at this node.
    std::vector<std::pair<int, int>> reuse;
    int64_t flops = 0;
    int64_t bytesMoved = 0; // bytes read and written, from the cost model
    /// Index of the op this node executes in the function the graph was
    /// built from (a recomputation executes the same op again).
    int op = -1;
    /// Writes a persistent tensor that other ops read (an optimizer
    /// update of a parameter): every read of that tensor, recomputations
    /// included, must come before it. (An accumulator that only its own
    /// update reads does not count.)
    bool writesPersistent = false;
  };
  std::vector<Value> values;
  std::vector<Node> nodes;

  int addValue(int64_t bytes, int def) {
    values.push_back({bytes, def});
    return int(values.size()) - 1;
  }
};

/// The highest number of live bytes over the schedule `graph.nodes`, and
/// the first node where it is reached.
struct PeakResult {
  int64_t bytes = 0;
  int node = 0;
};
PeakResult computePeak(const BufferGraph &graph);

/// Live bytes at every node (the curve whose maximum computePeak returns).
std::vector<int64_t> computeLiveBytes(const BufferGraph &graph);

/// Buffers of the memory model: each value belongs to one buffer; an output
/// that takes a dying input's buffer joins that input's buffer.
struct BufferLiveness {
  struct Buffer {
    int64_t bytes = 0;
    int start = 0, end = 0; // first and last node where it is live
    std::vector<int> values; // in the order they occupy it
  };
  std::vector<Buffer> buffers;
  std::vector<int> bufferOf; // value -> buffer
  std::vector<int> lastUse;  // value -> last node reading it (or its def)
};
BufferLiveness computeLiveness(const BufferGraph &graph);

/// Writes the graph as JSON (the format test/Transforms/Inputs/checkmate.py
/// reads): values with bytes and defining node, nodes with FLOPs, inputs,
/// outputs and reuse pairs, and the persistent bytes outside the graph.
/// `names` labels the nodes (may be empty).
std::string writeBufferGraphJSON(const BufferGraph &graph,
                                 const std::vector<std::string> &names,
                                 const std::vector<bool> &forward,
                                 int64_t persistentBytes);

} // namespace tgc

#endif // TGC_ANALYSIS_BUFFERGRAPH_H
