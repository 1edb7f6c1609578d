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
};

/// The built-in devices: "h100" (H100 SXM5) and "a100" (A100 SXM4 80GB),
/// from NVIDIA's data sheets. Null for another name.
std::optional<DeviceSpec> getBuiltinDevice(llvm::StringRef name);

/// Parses a device file (JSON):
///   {"name": "...", "memory_bandwidth": 3.35e12, "vector_flops": 67e12,
///    "host_bandwidth": 64e9,
///    "matmul_flops": {"f32": 67e12, "tf32": 495e12, "bf16": 989e12,
///                     "f16": 989e12}}
/// Rates are per second and must be positive; tf32, bf16 and f16 default
/// to f32's rate. Fails with `error` naming the file and field at fault.
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
  bool recomputed = false;
  int64_t bytes() const { return bytesRead + bytesWritten + scratchBytes; }
  double seconds() const { return std::max(computeSeconds, memorySeconds); }
  bool computeBound() const { return computeSeconds >= memorySeconds; }
};

/// The ops of one kind, summed.
struct KindEstimate {
  std::string kind;
  int64_t count = 0, flops = 0, bytes = 0, launches = 0;
  double seconds = 0;
  /// Time of its compute-bound ops (the rest is memory-bound).
  double computeBoundSeconds = 0;
};

struct FunctionEstimate {
  std::string function;
  std::vector<OpEstimate> ops;
  /// By kind, most time first.
  std::vector<KindEstimate> kinds;
  double seconds = 0;
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
