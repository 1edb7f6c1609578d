//===- KernelAttrs.h - each kernel's counts and typed attributes -*- C++
//-*-===//
//
// What the tg ODS (TGOps.td) says of each op, as tgc-tblgen
// -gen-kernel-attrs writes it for the runtime: the range of its operand and
// result counts and its attributes with their kinds (`kernelSpec`, which the
// loader checks of every instruction before the kernel's own rules), and a
// struct per op of its attributes, typed, with the ODS's defaults
// (`SoftmaxAttrs::read(inst).axis`), so no kernel names an attribute by a
// string or repeats a default.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_SRC_KERNELATTRS_H
#define TGC_RUNTIME_SRC_KERNELATTRS_H

#include "tgc/runtime/Program.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tgc::rt {

/// An attribute of an op's ODS as a .tgx file holds it.
struct AttrSpec {
  const char *name;
  AttrValue::Kind kind;
  /// Neither optional nor defaulted in the ODS.
  bool required;
};

/// An op's operand and result counts (max -1: unbounded; optional and
/// variadic ones as the ODS declares them) and its attributes.
struct KernelSpec {
  int minOperands = 0, maxOperands = 0;
  int minResults = 0, maxResults = 0;
  const AttrSpec *attrs = nullptr;
  size_t numAttrs = 0;
};

#include "tgc/format/KernelAttrs.inc"

/// A collective's reduction (tgc::tg::ReduceKind's value); sum for those
/// that do not reduce.
inline int64_t reductionOf(const Instruction &inst) {
  switch (inst.kernel) {
  case Kernel::AllReduce:
    return AllReduceAttrs::read(inst).reduction;
  case Kernel::ReduceScatter:
    return ReduceScatterAttrs::read(inst).reduction;
  default:
    return 0;
  }
}

/// A collective's group: its world_size ranks, rank_stride apart.
struct CollectiveGroup {
  int64_t size = 1, stride = 1;
};
inline CollectiveGroup collectiveGroupOf(const Instruction &inst) {
  auto of = [](const auto &attrs) {
    return CollectiveGroup{attrs.worldSize, attrs.rankStride};
  };
  switch (inst.kernel) {
  case Kernel::AllReduce:
    return of(AllReduceAttrs::read(inst));
  case Kernel::ReduceScatter:
    return of(ReduceScatterAttrs::read(inst));
  case Kernel::AllGather:
    return of(AllGatherAttrs::read(inst));
  case Kernel::Shard:
    return of(ShardAttrs::read(inst));
  default:
    return {};
  }
}

} // namespace tgc::rt

#endif // TGC_RUNTIME_SRC_KERNELATTRS_H
