//===- Roofline.cpp - estimated GPU time of a step, op by op --------------===//
//
// See Roofline.h. The built-in rates are NVIDIA's published dense peaks;
// everything else comes from the ops' CostOpInterface.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/Roofline.h"
#include "tgc/Analysis/Report.h"
#include "tgc/Support/ReadFile.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;

namespace tgc {

std::optional<LinkSpec> getBuiltinLink(StringRef name) {
  // Bandwidths each way per GPU from the data sheets; the latencies are
  // round figures for one step of a collective over the link (NCCL's own
  // tuning model takes a few microseconds a hop, more across a network).
  if (name == "nvlink4")
    return LinkSpec{"nvlink4", 450e9, 1e-6}; // 18 x 25 GB/s
  if (name == "nvlink3")
    return LinkSpec{"nvlink3", 300e9, 1e-6}; // 12 x 25 GB/s
  if (name == "pcie5")
    return LinkSpec{"pcie5", 64e9, 2e-6}; // x16
  if (name == "pcie4")
    return LinkSpec{"pcie4", 32e9, 2e-6}; // x16
  if (name == "ib-ndr")
    return LinkSpec{"ib-ndr", 50e9, 5e-6}; // 400 Gb/s a port
  if (name == "ib-hdr")
    return LinkSpec{"ib-hdr", 25e9, 5e-6}; // 200 Gb/s a port
  return std::nullopt;
}

CollectiveEstimate estimateCollective(CollectiveKind kind, int64_t bytes,
                                      int64_t worldSize,
                                      const DeviceSpec &device,
                                      int64_t rankStride) {
  CollectiveEstimate estimate;
  if (worldSize <= 1)
    return estimate;
  double bandwidth = device.intraNode.bandwidth;
  double latency = device.intraNode.latency;
  estimate.link = device.intraNode.name;
  int64_t stride = std::max<int64_t>(1, rankStride);
  if (worldSize * stride > device.gpusPerNode) {
    // One ring per network port: a node sends through all its ports at
    // once, and every ring still crosses the GPUs inside each node. The
    // group has `onNode` members on each node, so as many ports.
    int64_t onNode = std::max<int64_t>(1, device.gpusPerNode / stride);
    double ports = double(onNode) * device.interNode.bandwidth;
    if (onNode == 1 && stride > 1) {
      bandwidth = device.interNode.bandwidth;
      latency = device.interNode.latency;
      estimate.link = device.interNode.name;
    } else {
      bandwidth = std::min(bandwidth, ports);
      latency = std::max(latency, device.interNode.latency);
      estimate.link += " + " + device.interNode.name;
    }
  }
  double n = double(worldSize), size = double(bytes);
  double steps = (kind == CollectiveKind::AllReduce ? 2 : 1) * (n - 1);
  estimate.seconds = steps * latency + steps / n * size / bandwidth;
  estimate.algorithm = "ring";
  if (kind == CollectiveKind::AllReduce) {
    double depth = std::ceil(std::log2(n));
    double tree = 2 * depth * latency + 2 * size / bandwidth;
    if (tree < estimate.seconds) {
      estimate.seconds = tree;
      estimate.algorithm = "tree";
    }
  }
  return estimate;
}

std::optional<DeviceSpec> getBuiltinDevice(StringRef name) {
  DeviceSpec spec;
  spec.name = name.str();
  if (name == "h100") {
    // H100 SXM5 80GB data sheet: HBM3 3.35 TB/s; FP32 67 TFLOP/s; dense
    // tensor cores: TF32 494.7, BF16 and FP16 989.4 TFLOP/s.
    spec.description = "NVIDIA H100 SXM5 80GB";
    spec.memoryBandwidth = 3.35e12;
    spec.vectorFlops = 67e12;
    spec.matmulF32 = 67e12;
    spec.matmulTF32 = 494.7e12;
    spec.matmulBF16 = spec.matmulF16 = 989.4e12;
    spec.hostBandwidth = 64e9; // PCIe 5.0 x16, each way
    // DGX H100: 8 GPUs on NVLink 4, a 400 Gb/s InfiniBand port each.
    spec.gpusPerNode = 8;
    spec.intraNode = *getBuiltinLink("nvlink4");
    spec.interNode = *getBuiltinLink("ib-ndr");
    return spec;
  }
  if (name == "a100") {
    // A100 SXM4 80GB data sheet: HBM2e 2,039 GB/s; FP32 19.5 TFLOP/s;
    // dense tensor cores: TF32 156, BF16 and FP16 312 TFLOP/s.
    spec.description = "NVIDIA A100 SXM4 80GB";
    spec.memoryBandwidth = 2.039e12;
    spec.vectorFlops = 19.5e12;
    spec.matmulF32 = 19.5e12;
    spec.matmulTF32 = 156e12;
    spec.matmulBF16 = spec.matmulF16 = 312e12;
    spec.hostBandwidth = 32e9; // PCIe 4.0 x16, each way
    // DGX A100: 8 GPUs on NVLink 3, a 200 Gb/s InfiniBand port each.
    spec.gpusPerNode = 8;
    spec.intraNode = *getBuiltinLink("nvlink3");
    spec.interNode = *getBuiltinLink("ib-hdr");
    return spec;
  }
  return std::nullopt;
}

std::optional<DeviceSpec> parseDeviceSpec(StringRef path, std::string &error) {
  // A device file is a few hundred bytes: a FIFO, a device such as
  // /dev/zero, a huge or deeply nested file is refused before it is parsed.
  std::string text;
  if (std::string why = readUserJSONFile(path.str(), kMaxConfigFileBytes, text);
      !why.empty()) {
    error = "device file: " + why;
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = "device file '" + path.str() +
            "' is not valid JSON: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = "device file '" + path.str() + "': expected a JSON object";
    return std::nullopt;
  }
  auto fail = [&](const Twine &message) {
    error = ("device file '" + path + "': " + message).str();
    return std::nullopt;
  };
  for (const auto &entry : *root) {
    StringRef key = entry.first;
    if (key != "name" && key != "description" && key != "memory_bandwidth" &&
        key != "vector_flops" && key != "matmul_flops" &&
        key != "host_bandwidth" && key != "links")
      return fail("unknown field '" + key +
                  "' (expected name, description, memory_bandwidth, "
                  "vector_flops, matmul_flops, host_bandwidth, links)");
  }
  DeviceSpec spec;
  spec.name = root->getString("name").value_or(
      llvm::sys::path::stem(path)).str();
  spec.description = root->getString("description").value_or("").str();
  // A positive, finite rate.
  auto rate = [&](const llvm::json::Object &object, StringRef key,
                  StringRef field, double &out, bool required) -> bool {
    const llvm::json::Value *value = object.get(key);
    if (!value) {
      if (required)
        error = ("device file '" + path + "': missing '" + field +
                 "' (per second)")
                    .str();
      return !required;
    }
    std::optional<double> number = value->getAsNumber();
    if (!number || !(*number > 0) || !std::isfinite(*number)) {
      error = ("device file '" + path + "': '" + field +
               "' must be a positive number (per second)")
                  .str();
      return false;
    }
    out = *number;
    return true;
  };
  if (!rate(*root, "memory_bandwidth", "memory_bandwidth",
            spec.memoryBandwidth, true) ||
      !rate(*root, "vector_flops", "vector_flops", spec.vectorFlops, true) ||
      !rate(*root, "host_bandwidth", "host_bandwidth", spec.hostBandwidth,
            false))
    return std::nullopt;
  const llvm::json::Object *matmul = root->getObject("matmul_flops");
  if (!matmul)
    return fail("missing 'matmul_flops', an object of FLOP/s by type "
                "(f32, tf32, bf16, f16)");
  for (const auto &entry : *matmul) {
    StringRef key = entry.first;
    if (key != "f32" && key != "tf32" && key != "bf16" && key != "f16")
      return fail("unknown type 'matmul_flops." + key +
                  "' (expected f32, tf32, bf16, f16)");
  }
  if (!rate(*matmul, "f32", "matmul_flops.f32", spec.matmulF32, true))
    return std::nullopt;
  spec.matmulTF32 = spec.matmulBF16 = spec.matmulF16 = spec.matmulF32;
  if (!rate(*matmul, "tf32", "matmul_flops.tf32", spec.matmulTF32, false) ||
      !rate(*matmul, "bf16", "matmul_flops.bf16", spec.matmulBF16, false) ||
      !rate(*matmul, "f16", "matmul_flops.f16", spec.matmulF16, false))
    return std::nullopt;
  if (const llvm::json::Value *links = root->get("links")) {
    const llvm::json::Object *object = links->getAsObject();
    if (!object)
      return fail("'links' must be an object of gpus_per_node, intra_node "
                  "and inter_node");
    for (const auto &entry : *object) {
      StringRef key = entry.first;
      if (key != "gpus_per_node" && key != "intra_node" && key != "inter_node")
        return fail("unknown field 'links." + key +
                    "' (expected gpus_per_node, intra_node, inter_node)");
    }
    if (const llvm::json::Value *gpus = object->get("gpus_per_node")) {
      std::optional<int64_t> count = gpus->getAsInteger();
      if (!count || *count < 1 || *count > (int64_t(1) << 20))
        return fail("'links.gpus_per_node' must be a whole number from 1 "
                    "to 1048576");
      spec.gpusPerNode = *count;
    }
    // A built-in link's name, or its bandwidth and latency.
    auto link = [&](StringRef key, LinkSpec &out) -> bool {
      const llvm::json::Value *value = object->get(key);
      if (!value)
        return true;
      std::string field = ("links." + key).str();
      if (std::optional<StringRef> name = value->getAsString()) {
        std::optional<LinkSpec> builtin = getBuiltinLink(*name);
        if (!builtin) {
          error = ("device file '" + path + "': unknown link '" + *name +
                   "' in '" + field +
                   "' (built in: nvlink4, nvlink3, pcie5, pcie4, ib-ndr, "
                   "ib-hdr; or an object of bandwidth and latency)")
                      .str();
          return false;
        }
        out = *builtin;
        return true;
      }
      const llvm::json::Object *spec = value->getAsObject();
      if (!spec) {
        error = ("device file '" + path + "': '" + field +
                 "' must be a link's name or an object of name, bandwidth "
                 "(bytes per second) and latency (seconds)")
                    .str();
        return false;
      }
      for (const auto &entry : *spec) {
        StringRef inner = entry.first;
        if (inner != "name" && inner != "bandwidth" && inner != "latency") {
          error = ("device file '" + path + "': unknown field '" + field + "." +
                   inner + "' (expected name, bandwidth, latency)")
                      .str();
          return false;
        }
      }
      LinkSpec parsed;
      parsed.name = spec->getString("name").value_or(key).str();
      if (!rate(*spec, "bandwidth", field + ".bandwidth", parsed.bandwidth,
                true))
        return false;
      // The latency is seconds, not a rate, but as positive and finite.
      const llvm::json::Value *latency = spec->get("latency");
      std::optional<double> seconds =
          latency ? latency->getAsNumber() : std::nullopt;
      if (!seconds || !(*seconds > 0) || !std::isfinite(*seconds)) {
        error = ("device file '" + path + "': '" + field +
                 ".latency' must be a positive number (seconds)")
                    .str();
        return false;
      }
      parsed.latency = *seconds;
      out = parsed;
      return true;
    };
    if (!link("intra_node", spec.intraNode) ||
        !link("inter_node", spec.interNode))
      return std::nullopt;
  }
  return spec;
}

std::optional<DeviceSpec> resolveDevice(StringRef nameOrPath,
                                        std::string &error) {
  if (std::optional<DeviceSpec> builtin = getBuiltinDevice(nameOrPath))
    return builtin;
  if (!nameOrPath.contains('/') && !nameOrPath.contains('.')) {
    error = "unknown device '" + nameOrPath.str() +
            "' (built in: h100, a100; or a JSON device file)";
    return std::nullopt;
  }
  return parseDeviceSpec(nameOrPath, error);
}

double matmulPeak(const DeviceSpec &device, StringRef type) {
  if (type == "tf32")
    return device.matmulTF32;
  if (type == "bf16")
    return device.matmulBF16;
  if (type == "f16")
    return device.matmulF16;
  return device.matmulF32;
}

std::string describeDevice(const DeviceSpec &device) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << device.name;
  if (!device.description.empty())
    os << " (" << device.description << ")";
  os << llvm::format(": %.4g GB/s; matrix TFLOP/s f32 %.4g, tf32 %.4g, "
                     "bf16 %.4g, f16 %.4g; vector %.4g",
                     device.memoryBandwidth / 1e9, device.matmulF32 / 1e12,
                     device.matmulTF32 / 1e12, device.matmulBF16 / 1e12,
                     device.matmulF16 / 1e12, device.vectorFlops / 1e12);
  return out;
}

/// The matrix units' name for products reading `type`.
static std::string matmulTypeName(Type type, const RooflineOptions &options) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  return options.allowTF32 ? "tf32" : "f32";
}

/// The time of `op` over the links, if it is a collective over more than
/// one rank.
static std::optional<CollectiveEstimate> linkTime(Operation &op,
                                                  const DeviceSpec &device,
                                                  int64_t &worldSize,
                                                  int64_t &rankStride) {
  CollectiveKind kind;
  Type whole;
  if (auto reduce = dyn_cast<tg::AllReduceOp>(op)) {
    kind = CollectiveKind::AllReduce;
    whole = reduce.getInput().getType();
    worldSize = reduce.getWorldSize();
    rankStride = reduce.getRankStride();
  } else if (auto scatter = dyn_cast<tg::ReduceScatterOp>(op)) {
    kind = CollectiveKind::ReduceScatter;
    whole = scatter.getInput().getType();
    worldSize = scatter.getWorldSize();
    rankStride = scatter.getRankStride();
  } else if (auto gather = dyn_cast<tg::AllGatherOp>(op)) {
    kind = CollectiveKind::AllGather;
    whole = gather.getResult().getType();
    worldSize = gather.getWorldSize();
    rankStride = gather.getRankStride();
  } else {
    return std::nullopt;
  }
  if (worldSize <= 1)
    return std::nullopt;
  return estimateCollective(kind, tg::getTensorBytes(whole), worldSize, device,
                            rankStride);
}

FunctionEstimate estimateFunction(func::FuncOp function,
                                  const DeviceSpec &device,
                                  const RooflineOptions &options) {
  FunctionEstimate estimate;
  estimate.function = function.getSymName().str();
  std::map<std::string, KindEstimate> kinds;
  // The two streams' schedule: when each stream is free, and when each
  // value is ready (arguments at the start).
  double computeClock = 0, communicationClock = 0;
  llvm::DenseMap<Value, double> ready;
  auto readyAt = [&](Operation &op) {
    double at = 0;
    for (Value operand : op.getOperands())
      at = std::max(at, ready.lookup(operand));
    return at;
  };
  auto finish = [&](Operation &op, double at) {
    for (Value result : op.getResults())
      ready[result] = at;
  };
  int64_t index = 0;
  for (Operation &op : function.getBody().front()) {
    int64_t opIndex = index++;
    auto cost = dyn_cast<tg::CostOpInterface>(&op);
    // Reshapes are views of their operand's buffer: no kernel runs.
    if (!cost || isa<tg::ReshapeOp>(&op)) {
      finish(op, readyAt(op));
      continue;
    }
    OpEstimate e;
    e.op = &op;
    e.index = opIndex;
    e.flops = cost.getFlops();
    e.matmulFlops = cost.getMatmulFlops();
    e.bytesRead = cost.getBytesRead();
    e.bytesWritten = cost.getBytesWritten();
    e.scratchBytes = cost.getScratchBytes();
    e.launches = cost.getKernelLaunches();
    e.recomputed = op.hasAttr(tg::TGDialect::kRematAttr);
    double matrixSeconds = 0;
    if (e.matmulFlops > 0) {
      e.matmulType = matmulTypeName(cost.getMatmulType(), options);
      matrixSeconds = double(e.matmulFlops) / matmulPeak(device, e.matmulType);
    }
    // A kernel may execute more matrix FLOPs than the model counts (masked
    // scores); the rest of the count runs on the vector units.
    int64_t vectorFlops = std::max<int64_t>(0, e.flops - e.matmulFlops);
    e.computeSeconds = matrixSeconds + double(vectorFlops) / device.vectorFlops;
    // Operands in host memory (offloaded state, an offloaded activation)
    // cross the host link, once each way (read, then written back in
    // place), both ways at once.
    for (Value operand : op.getOperands()) {
      bool host = operand.getDefiningOp<tg::OffloadOp>() != nullptr;
      if (auto arg = dyn_cast<BlockArgument>(operand))
        host = bool(
            function.getArgAttr(arg.getArgNumber(), tg::TGDialect::kHostAttr));
      if (host)
        e.hostBytes += tg::getTensorBytes(operand.getType());
    }
    int64_t hostTraffic = std::min(2 * e.hostBytes, e.bytes());
    e.memorySeconds =
        double(e.bytes() - hostTraffic) / device.memoryBandwidth +
        double(e.hostBytes) / device.hostBandwidth;
    int64_t worldSize = 1, rankStride = 1;
    if (std::optional<CollectiveEstimate> link =
            linkTime(op, device, worldSize, rankStride)) {
      e.communication = true;
      e.worldSize = worldSize;
      e.rankStride = rankStride;
      e.linkSeconds = link->seconds;
      e.algorithm = link->algorithm;
      e.link = link->link;
      if (worldSize > estimate.worldSize) {
        estimate.worldSize = worldSize;
        estimate.link = link->link;
      }
    }
    estimate.launches += e.launches;
    if (e.flops == 0 && e.bytes() == 0 && !e.communication) {
      finish(op, readyAt(op));
      continue;
    }
    // Each stream runs its ops in IR order, each op once what it reads
    // is ready. A collective also follows the compute queued before it,
    // which first waits for the collective in flight: the runtime keeps
    // one in flight (collectiveJoins).
    if (e.communication)
      computeClock = std::max(computeClock, communicationClock);
    double &clock = e.communication ? communicationClock : computeClock;
    e.startSeconds =
        std::max(e.communication ? computeClock : clock, readyAt(op));
    clock = e.startSeconds + e.seconds();
    finish(op, clock);
    if (e.communication)
      estimate.communicationSeconds += e.seconds();
    else
      estimate.computeSeconds += e.seconds();

    std::string kind = op.getName().getStringRef().str();
    KindEstimate &k = kinds[kind];
    k.kind = kind;
    ++k.count;
    k.launches += e.launches;
    k.flops += e.flops;
    k.bytes += e.bytes();
    k.seconds += e.seconds();
    if (e.computeBound())
      k.computeBoundSeconds += e.seconds();
    if (e.linkBound())
      k.linkBoundSeconds += e.seconds();
    estimate.flops += e.flops;
    estimate.bytes += e.bytes();
    if (!e.recomputed)
      estimate.modelFlops += e.flops;
    estimate.ops.push_back(std::move(e));
  }
  estimate.seconds = std::max(computeClock, communicationClock);
  estimate.exposedSeconds = estimate.seconds - estimate.computeSeconds;
  for (auto &[name, kind] : kinds)
    estimate.kinds.push_back(kind);
  llvm::stable_sort(estimate.kinds,
                    [](const KindEstimate &a, const KindEstimate &b) {
                      return a.seconds > b.seconds;
                    });
  return estimate;
}

/// A per-execution figure of each entry, times its runs a step, summed.
template <typename T>
static T perStep(const std::vector<StepEstimate::Entry> &entries,
                 T FunctionEstimate::*figure) {
  T total = 0;
  for (const StepEstimate::Entry &entry : entries)
    total += T(entry.runs) * (entry.estimate.*figure);
  return total;
}

double StepEstimate::seconds() const {
  return perStep(entries, &FunctionEstimate::seconds);
}

double StepEstimate::communicationSeconds() const {
  return perStep(entries, &FunctionEstimate::communicationSeconds);
}

double StepEstimate::exposedSeconds() const {
  return perStep(entries, &FunctionEstimate::exposedSeconds);
}

int64_t StepEstimate::launches() const {
  return perStep(entries, &FunctionEstimate::launches);
}

int64_t StepEstimate::graphLaunches() const {
  int64_t total = 0;
  for (const Entry &entry : entries)
    total += entry.runs;
  return total;
}

int64_t StepEstimate::modelFlops() const {
  return perStep(entries, &FunctionEstimate::modelFlops);
}

std::string StepEstimate::peakType() const {
  std::map<std::string, int64_t> byType;
  for (const Entry &entry : entries)
    for (const OpEstimate &op : entry.estimate.ops)
      if (op.matmulFlops > 0)
        byType[op.matmulType] += entry.runs * op.matmulFlops;
  std::string type = "f32";
  int64_t most = 0;
  for (auto &[name, flops] : byType)
    if (flops > most) {
      most = flops;
      type = name;
    }
  return type;
}

double StepEstimate::utilisation(const DeviceSpec &device) const {
  double time = seconds();
  if (!(time > 0))
    return 0;
  return double(modelFlops()) / (time * matmulPeak(device, peakType()));
}

/// "1.234 ms" / "12.3 us".
static std::string formatSeconds(double seconds) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (seconds >= 1e-3)
    os << llvm::format("%.3f ms", seconds * 1e3);
  else
    os << llvm::format("%.2f us", seconds * 1e6);
  return out;
}

void printEstimate(const StepEstimate &step, const DeviceSpec &device,
                   llvm::raw_ostream &os, unsigned topOps) {
  os << "roofline estimate on " << describeDevice(device) << "\n";
  for (const StepEstimate::Entry &entry : step.entries) {
    const FunctionEstimate &e = entry.estimate;
    os << "  " << entry.name << " @" << e.function;
    if (entry.runs != 1)
      os << " (runs " << entry.runs << " times per step)";
    os << ": " << formatSeconds(e.seconds) << ", "
       << llvm::format("%.3f", double(e.flops) / 1e9) << " GFLOP, "
       << llvm::format("%.3f", double(e.bytes) / 1e9) << " GB moved, "
       << formatWithCommas(e.launches) << " kernels";
    if (e.communicationSeconds > 0)
      os << "; communication " << formatSeconds(e.communicationSeconds) << ", "
         << formatSeconds(e.exposedSeconds) << " of it not hidden";
    os << "\n";
    os << llvm::format("    %-26s %6s %12s %10s %12s %6s  %s\n", "op kind",
                       "count", "GFLOP", "GB", "time", "share", "bound");
    for (const KindEstimate &kind : e.kinds) {
      double share = e.seconds > 0 ? 100.0 * kind.seconds / e.seconds : 0;
      const char *bound = kind.linkBoundSeconds * 2 >= kind.seconds ? "link"
                          : kind.computeBoundSeconds * 2 >= kind.seconds
                              ? "compute"
                              : "memory";
      os << llvm::format("    %-26s %6lld %12.3f %10.3f %12s %5.1f%%  %s\n",
                         kind.kind.c_str(), (long long)kind.count,
                         double(kind.flops) / 1e9, double(kind.bytes) / 1e9,
                         formatSeconds(kind.seconds).c_str(), share, bound);
    }
    if (topOps > 0) {
      std::vector<const OpEstimate *> ops;
      for (const OpEstimate &op : e.ops)
        ops.push_back(&op);
      llvm::stable_sort(ops, [](const OpEstimate *a, const OpEstimate *b) {
        return a->seconds() > b->seconds();
      });
      os << "    most expensive ops:\n";
      for (unsigned i = 0; i < std::min<size_t>(topOps, ops.size()); ++i) {
        const OpEstimate &op = *ops[i];
        os << "      #" << op.index << " " << op.op->getName() << " "
           << formatSeconds(op.seconds()) << " (" << op.bound() << "-bound, "
           << formatWithCommas(op.flops) << " FLOPs, "
           << formatWithCommas(op.bytes()) << " bytes";
        if (op.recomputed)
          os << ", recomputed";
        os << ")\n";
      }
    }
  }
  os << "  step: " << formatSeconds(step.seconds()) << "; model FLOPs "
     << llvm::format("%.3f", double(step.modelFlops()) / 1e9)
     << " GFLOP, MFU "
     << llvm::format("%.1f%%", 100.0 * step.utilisation(device)) << " of the "
     << step.peakType() << " matrix peak\n";
  os << "  launches: " << formatWithCommas(step.launches())
     << " kernels, products and copies a step, in "
     << step.graphLaunches() << " CUDA graph launch"
     << (step.graphLaunches() == 1 ? "" : "es") << "\n";
  if (step.communicationSeconds() > 0) {
    int64_t worldSize = 1;
    std::string link;
    for (const StepEstimate::Entry &entry : step.entries)
      if (entry.estimate.worldSize > worldSize) {
        worldSize = entry.estimate.worldSize;
        link = entry.estimate.link;
      }
    os << "  communication: " << formatSeconds(step.communicationSeconds())
       << " a step over " << link << " (" << worldSize << " ranks, "
       << device.gpusPerNode << " a node), "
       << formatSeconds(step.exposedSeconds())
       << " of it not hidden by compute on a second stream\n";
  }
}

static llvm::json::Object linkToJSON(const LinkSpec &link) {
  return llvm::json::Object{{"name", link.name},
                            {"bandwidth", link.bandwidth},
                            {"latency", link.latency}};
}

llvm::json::Value estimateToJSON(const StepEstimate &step,
                                 const DeviceSpec &device) {
  llvm::json::Array entries;
  for (const StepEstimate::Entry &entry : step.entries) {
    const FunctionEstimate &e = entry.estimate;
    llvm::json::Array kinds;
    for (const KindEstimate &kind : e.kinds)
      kinds.push_back(llvm::json::Object{
          {"kind", kind.kind},
          {"count", kind.count},
          {"launches", kind.launches},
          {"flops", kind.flops},
          {"bytes", kind.bytes},
          {"seconds", kind.seconds},
          {"compute_bound_seconds", kind.computeBoundSeconds},
          {"link_bound_seconds", kind.linkBoundSeconds}});
    llvm::json::Array ops;
    for (const OpEstimate &op : e.ops) {
      llvm::json::Object object{
          {"index", op.index},
          {"op", op.op->getName().getStringRef()},
          {"flops", op.flops},
          {"matmul_flops", op.matmulFlops},
          {"bytes_read", op.bytesRead},
          {"bytes_written", op.bytesWritten},
          {"scratch_bytes", op.scratchBytes},
          {"launches", op.launches},
          {"compute_seconds", op.computeSeconds},
          {"memory_seconds", op.memorySeconds},
          {"link_seconds", op.linkSeconds},
          {"seconds", op.seconds()},
          {"start_seconds", op.startSeconds},
          {"stream", op.communication ? "communication" : "compute"},
          {"bound", op.bound()},
          {"recomputed", op.recomputed}};
      if (!op.matmulType.empty())
        object["matmul_type"] = op.matmulType;
      if (op.communication) {
        object["world_size"] = op.worldSize;
        object["rank_stride"] = op.rankStride;
        object["algorithm"] = op.algorithm;
        object["link"] = op.link;
      }
      ops.push_back(std::move(object));
    }
    entries.push_back(
        llvm::json::Object{{"name", entry.name},
                           {"function", e.function},
                           {"runs_per_step", entry.runs},
                           {"seconds", e.seconds},
                           {"compute_seconds", e.computeSeconds},
                           {"communication_seconds", e.communicationSeconds},
                           {"exposed_communication_seconds", e.exposedSeconds},
                           {"flops", e.flops},
                           {"model_flops", e.modelFlops},
                           {"bytes", e.bytes},
                           {"launches", e.launches},
                           {"kinds", std::move(kinds)},
                           {"ops", std::move(ops)}});
  }
  return llvm::json::Object{
      {"device",
       llvm::json::Object{
           {"name", device.name},
           {"description", device.description},
           {"memory_bandwidth", device.memoryBandwidth},
           {"host_bandwidth", device.hostBandwidth},
           {"vector_flops", device.vectorFlops},
           {"gpus_per_node", device.gpusPerNode},
           {"intra_node", linkToJSON(device.intraNode)},
           {"inter_node", linkToJSON(device.interNode)},
           {"matmul_flops", llvm::json::Object{{"f32", device.matmulF32},
                                               {"tf32", device.matmulTF32},
                                               {"bf16", device.matmulBF16},
                                               {"f16", device.matmulF16}}}}},
      {"entries", std::move(entries)},
      {"step_seconds", step.seconds()},
      {"communication_seconds", step.communicationSeconds()},
      {"exposed_communication_seconds", step.exposedSeconds()},
      {"model_flops", step.modelFlops()},
      {"launches", step.launches()},
      {"graph_launches", step.graphLaunches()},
      {"peak_type", step.peakType()},
      {"mfu", step.utilisation(device)}};
}

} // namespace tgc
