//===- Roofline.h - estimated GPU time of a step, op by op ------*- C++ -*-===//
//
// A roofline model of one execution of a function on a GPU: every op takes
// the longer of its compute time and its memory time,
//   compute = matrix FLOPs / matrix peak(type) + other FLOPs / vector peak
//   memory  = (bytes read + bytes written + scratch bytes) / bandwidth,
// with the FLOPs, bytes and matrix type from CostOpInterface, which
// describes the kernels tgc's CUDA backend runs. The step's estimate is the
// sum over its ops: kernels run one after another on one stream, each
// assumed to reach its roofline, with no launch gaps; it is therefore a
// lower bound of what the backend can achieve, and the ops furthest from
// it in a measurement are the ones to fix.
//
// Collectives (tg.all_reduce, tg.reduce_scatter, tg.all_gather over more
// than one rank) take the time of their algorithm over the device's links
// (LinkSpec: NVLink or PCIe inside a node, InfiniBand between nodes), as
// NCCL runs them: ring for all three, and for an all-reduce the double
// binary tree where that is faster. A function's time is that of two
// streams, as FSDP and DeepSpeed run a step: the ops in IR order on a
// compute stream, the collectives in IR order on a communication stream,
// each op starting when the ops it reads are done; communication that
// the compute stream does not wait for is hidden behind it. Without
// collectives the time is the ops' sum.
//
// Model FLOPs utilisation (MFU) is the FLOPs of the step without
// rematerialised ops, divided by the estimated time and the matrix peak of
// the type most matrix FLOPs run in.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_ANALYSIS_ROOFLINE_H
#define TGC_ANALYSIS_ROOFLINE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// A link between GPUs as a collective sees it: the bytes one GPU sends
/// (and receives) per second over it, and the time of one step of a
/// collective's algorithm across it (the hop's latency and the library's
/// per-step overhead).
struct LinkSpec {
  std::string name;
  double bandwidth = 0;
  double latency = 0;
};

/// The built-in links, each way per GPU: nvlink4 (H100 SXM, 18 links:
/// 450 GB/s), nvlink3 (A100 SXM, 12 links: 300 GB/s), pcie5 (x16:
/// 64 GB/s), pcie4 (x16: 32 GB/s), ib-ndr (400 Gb/s: 50 GB/s), ib-hdr
/// (200 Gb/s: 25 GB/s). Null for another name.
std::optional<LinkSpec> getBuiltinLink(llvm::StringRef name);

/// Peak rates of a device: what the roofline divides by.
struct DeviceSpec {
  std::string name;
  std::string description;
  /// Memory bandwidth, bytes per second.
  double memoryBandwidth = 0;
  /// f32 FLOP/s of the general-purpose cores (elementwise, row kernels).
  double vectorFlops = 0;
  /// Matrix FLOP/s (dense) by the type the products run in: f32 (no matrix
  /// units on NVIDIA GPUs: the vector rate), tf32, bf16, f16.
  double matmulF32 = 0, matmulTF32 = 0, matmulBF16 = 0, matmulF16 = 0;
  /// Bytes per second each way over the link to host memory, which the
  /// updates of offloaded optimizer state (tg.host) read and write
  /// through; the default is PCIe 4.0 x16's.
  double hostBandwidth = 32e9;
  /// The GPUs of a node, connected by `intraNode`; nodes connected by
  /// `interNode`, one network port of its bandwidth per GPU (a
  /// rail-optimised cluster, as NVIDIA's DGX). The defaults are a PCIe 4.0
  /// server's on 200 Gb/s InfiniBand.
  int64_t gpusPerNode = 8;
  LinkSpec intraNode{"pcie4", 32e9, 2e-6};
  LinkSpec interNode{"ib-hdr", 25e9, 5e-6};
};

/// The kinds of collective the links carry.
enum class CollectiveKind { AllReduce, ReduceScatter, AllGather };

struct CollectiveEstimate {
  double seconds = 0;
  /// "ring" or "tree"; the link, "nvlink4" or, across nodes,
  /// "nvlink4 + ib-ndr".
  std::string algorithm, link;
};

/// The time of a collective over `worldSize` ranks (numbered node by
/// node) of a tensor of `bytes` (the whole: an all-reduce's operand, a
/// reduce-scatter's operand, an all-gather's result), with bandwidth B
/// and step latency a of the links it crosses:
///   ring, all-gather or reduce-scatter: (N - 1) a + (N - 1) / N * bytes / B
///   ring, all-reduce (reduce-scatter then all-gather): twice that
///   tree, all-reduce (double binary tree: each rank sends the whole
///     tensor up one tree and down the other, pipelined):
///     2 ceil(log2 N) a + 2 * bytes / B
/// taking the faster for an all-reduce. Across nodes, B is the smaller of
/// the intra-node link and a node's network ports together (one ring per
/// port), and a the larger latency. Zero for one rank. A group of ranks
/// `rankStride` apart (hybrid sharding's replicas) spans nodes when
/// stride x N exceeds a node; then m = max(1, gpusPerNode / stride) of its
/// members share a node and its ring has m ports of each node: B = the
/// smaller of the intra-node link and m ports (for a stride of a node or
/// more, m = 1: the network's bandwidth and latency alone, the ring never
/// crossing NVLink).
CollectiveEstimate estimateCollective(CollectiveKind kind, int64_t bytes,
                                      int64_t worldSize,
                                      const DeviceSpec &device,
                                      int64_t rankStride = 1);

/// The built-in devices: "h100" (H100 SXM5) and "a100" (A100 SXM4 80GB),
/// from NVIDIA's data sheets. Null for another name.
std::optional<DeviceSpec> getBuiltinDevice(llvm::StringRef name);

/// Parses a device file (JSON):
///   {"name": "...", "memory_bandwidth": 3.35e12, "vector_flops": 67e12,
///    "host_bandwidth": 64e9,
///    "matmul_flops": {"f32": 67e12, "tf32": 495e12, "bf16": 989e12,
///                     "f16": 989e12},
///    "links": {"gpus_per_node": 8, "intra_node": "nvlink4",
///              "inter_node": {"name": "roce", "bandwidth": 25e9,
///                             "latency": 8e-6}}}
/// Rates are per second and must be positive; tf32, bf16 and f16 default
/// to f32's rate; a link is a built-in name or its bandwidth (bytes per
/// second) and latency (seconds); links default to DeviceSpec's. Fails
/// with `error` naming the file and field at fault.
std::optional<DeviceSpec> parseDeviceSpec(llvm::StringRef path,
                                          std::string &error);

/// A built-in name or a device file.
std::optional<DeviceSpec> resolveDevice(llvm::StringRef nameOrPath,
                                        std::string &error);

struct RooflineOptions {
  /// f32 matrix products run on the tf32 matrix units (--allow-tf32).
  bool allowTF32 = false;
};

struct OpEstimate {
  mlir::Operation *op = nullptr;
  int64_t index = 0; // in the function, IR order
  int64_t flops = 0, matmulFlops = 0;
  std::string matmulType; // f32, tf32, bf16, f16 ("" without matmul FLOPs)
  int64_t bytesRead = 0, bytesWritten = 0, scratchBytes = 0;
  /// Of those, the bytes of host-memory operands (offloaded state), read
  /// and written back over the host link.
  int64_t hostBytes = 0;
  /// Kernels, products and copies it puts on the stream.
  int64_t launches = 0;
  double computeSeconds = 0, memorySeconds = 0;
  /// A collective over more than one rank: its time over the links, and
  /// the algorithm and link (CollectiveEstimate); it runs on the
  /// communication stream.
  double linkSeconds = 0;
  bool communication = false;
  /// The collective's group: its ranks, and how far apart they are.
  int64_t worldSize = 1, rankStride = 1;
  std::string algorithm, link;
  /// When it starts in the two streams' schedule.
  double startSeconds = 0;
  bool recomputed = false;
  int64_t bytes() const { return bytesRead + bytesWritten + scratchBytes; }
  double seconds() const {
    return std::max({computeSeconds, memorySeconds, linkSeconds});
  }
  bool linkBound() const {
    return linkSeconds > 0 && linkSeconds >= computeSeconds &&
           linkSeconds >= memorySeconds;
  }
  bool computeBound() const {
    return !linkBound() && computeSeconds >= memorySeconds;
  }
  /// "compute", "memory" or "link".
  llvm::StringRef bound() const {
    return linkBound() ? "link" : computeBound() ? "compute" : "memory";
  }
};

/// The ops of one kind, summed.
struct KindEstimate {
  std::string kind;
  int64_t count = 0, flops = 0, bytes = 0, launches = 0;
  double seconds = 0;
  /// Time of its compute-bound and link-bound ops (the rest is
  /// memory-bound).
  double computeBoundSeconds = 0, linkBoundSeconds = 0;
};

struct FunctionEstimate {
  std::string function;
  std::vector<OpEstimate> ops;
  /// By kind, most time first.
  std::vector<KindEstimate> kinds;
  /// The two streams' schedule: `seconds` is when both are done;
  /// `computeSeconds` the compute stream's ops together,
  /// `communicationSeconds` the collectives', and `exposedSeconds` what the
  /// communication adds to the compute stream's time (seconds -
  /// computeSeconds).
  double seconds = 0;
  double computeSeconds = 0, communicationSeconds = 0, exposedSeconds = 0;
  /// The most ranks a collective spans and the link it crosses there.
  int64_t worldSize = 1;
  std::string link;
  int64_t flops = 0, bytes = 0;
  /// Work items on the stream (kernels, products, copies): the nodes of
  /// the CUDA graph the backend captures.
  int64_t launches = 0;
  /// FLOPs without the rematerialised ops.
  int64_t modelFlops = 0;
};

/// Estimates one execution of `function` on `device`.
FunctionEstimate estimateFunction(mlir::func::FuncOp function,
                                  const DeviceSpec &device,
                                  const RooflineOptions &options);

/// The matrix peak of `type` (f32, tf32, bf16, f16) on `device`.
double matmulPeak(const DeviceSpec &device, llvm::StringRef type);

/// One line describing the device's rates.
std::string describeDevice(const DeviceSpec &device);

/// An optimizer step: `runs` executions of each entry (K micro-steps and
/// one apply step under gradient accumulation).
struct StepEstimate {
  struct Entry {
    std::string name;
    int64_t runs = 1;
    FunctionEstimate estimate;
  };
  std::vector<Entry> entries;
  double seconds() const;
  /// The collectives' time, and what of it the compute streams wait for.
  double communicationSeconds() const;
  double exposedSeconds() const;
  int64_t modelFlops() const;
  /// Kernels, products and copies a step puts on the stream, and the CUDA
  /// graph launches they go in (one per entry run).
  int64_t launches() const;
  int64_t graphLaunches() const;
  /// MFU against the matrix peak of the type most matrix FLOPs run in.
  double utilisation(const DeviceSpec &device) const;
  std::string peakType() const;
};

/// The human-readable estimate: per entry, the op kinds by time (count,
/// GFLOP, GB moved, time, share, bound); then the step total and MFU. With
/// `topOps`, also the most expensive single ops.
void printEstimate(const StepEstimate &step, const DeviceSpec &device,
                   llvm::raw_ostream &os, unsigned topOps = 0);

/// The estimate as JSON: the device, each entry with its kinds and every op,
/// and the step's totals.
llvm::json::Value estimateToJSON(const StepEstimate &step,
                                 const DeviceSpec &device);

} // namespace tgc

#endif // TGC_ANALYSIS_ROOFLINE_H
