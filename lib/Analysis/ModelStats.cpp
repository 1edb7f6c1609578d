//===- ModelStats.cpp - statistics of a tg model --------------------------===//
//
// Walks a model function once and tallies its parameters, inputs, ops and
// the cost its ops report through CostOpInterface.
//
//===----------------------------------------------------------------------===//

#include "tgc/Analysis/ModelStats.h"
#include "tgc/Analysis/Report.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <map>

using namespace mlir;

namespace tgc {

ModelStats computeModelStats(func::FuncOp function) {
  ModelStats stats;
  stats.name = function.getSymName().str();
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    int64_t bytes = tg::getTensorBytes(function.getArgumentTypes()[i]);
    auto type = dyn_cast<RankedTensorType>(function.getArgumentTypes()[i]);
    int64_t elements = type && type.hasStaticShape() ? type.getNumElements() : 0;
    if (function.getArgAttr(i, tg::TGDialect::kParamAttr)) {
      ++stats.numParamTensors;
      stats.numParamElements += elements;
      stats.paramBytes += bytes;
      if (function.getArgAttr(i, tg::TGDialect::kFrozenAttr))
        stats.numFrozenElements += elements;
    } else if (function.getArgAttr(i, tg::TGDialect::kInputAttr)) {
      ++stats.numInputs;
      stats.inputBytes += bytes;
    }
  }

  std::map<std::string, int64_t> counts;
  function.walk([&](Operation *op) {
    if (op == function.getOperation())
      return;
    ++stats.numOps;
    ++counts[op->getName().getStringRef().str()];
    if (auto cost = dyn_cast<tg::CostOpInterface>(op)) {
      stats.flops += cost.getFlops();
      stats.bytesRead += cost.getBytesRead();
      stats.bytesWritten += cost.getBytesWritten();
      stats.bytesCommunicated += cost.getBytesCommunicated();
    }
  });
  for (auto &[name, count] : counts)
    stats.opCounts.emplace_back(name, count);
  return stats;
}

void printModelStats(const ModelStats &stats, llvm::raw_ostream &os) {
  int64_t trainable = stats.numParamElements - stats.numFrozenElements;
  os << "model @" << stats.name << "\n";
  os << "  parameters: " << formatWithCommas(stats.numParamElements) << " in "
     << stats.numParamTensors << " tensors (" << formatBytes(stats.paramBytes)
     << ")\n";
  os << "    trainable: " << formatWithCommas(trainable)
     << ", frozen: " << formatWithCommas(stats.numFrozenElements) << "\n";
  os << "  inputs: " << stats.numInputs << " (" << formatBytes(stats.inputBytes)
     << " per step)\n";
  os << "  ops: " << stats.numOps << "\n";
  for (const auto &[name, count] : stats.opCounts)
    os << llvm::format("    %-24s %8lld\n", name.c_str(), (long long)count);
  os << "  cost of one execution: " << formatWithCommas(stats.flops)
     << " FLOPs, " << formatWithCommas(stats.bytesRead) << " bytes read, "
     << formatWithCommas(stats.bytesWritten) << " bytes written\n";
  if (stats.bytesCommunicated > 0)
    os << "  sent to other ranks: "
       << formatWithCommas(stats.bytesCommunicated) << " bytes\n";
}

void printOpCosts(func::FuncOp function, llvm::raw_ostream &os) {
  os << "op costs of @" << function.getSymName() << "\n";
  unsigned index = 0;
  function.walk([&](tg::CostOpInterface cost) {
    os << "  #" << index++ << " " << cost->getName()
       << " flops=" << cost.getFlops() << " read=" << cost.getBytesRead()
       << " written=" << cost.getBytesWritten();
    if (int64_t sent = cost.getBytesCommunicated())
      os << " sent=" << sent;
    os << "\n";
  });
}

} // namespace tgc
