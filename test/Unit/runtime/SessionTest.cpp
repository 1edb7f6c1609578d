//===- SessionTest.cpp - a step of a hand-built program ------------------===//
//
// Runs a small program on the CPU backend in which a result reuses the
// arena buffer of the operand that dies at its instruction, as the memory
// planner places in-place results: the step computes the right loss, and
// the arena high-water mark counts the shared buffer once, as the planner's
// peak does.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Session.h"
#include "tgc/format/TGXFile.h"

#include "TestUtil.h"

#include <cmath>

using namespace tgc::rt;
using namespace tgc::rt::test;

namespace {
TensorInfo tensor(const char *name, Shape shape, Storage storage,
                  int64_t offset) {
  TensorInfo info;
  info.name = name;
  info.dtype = DType::F32;
  info.shape = std::move(shape);
  info.storage = storage;
  info.offset = offset;
  info.bytes = info.numElements() * 4;
  return info;
}

Instruction instruction(Kernel kernel, int32_t operand, int32_t result) {
  Instruction inst;
  inst.kernel = kernel;
  inst.operands = {operand};
  inst.results = {result};
  return inst;
}

/// reduce_sum of `operand` over axis 0 into `result`.
Instruction sumOverAxis0(int32_t operand, int32_t result) {
  Instruction inst = instruction(Kernel::ReduceSum, operand, result);
  AttrValue axes;
  axes.kind = AttrValue::Ints;
  axes.ints = {0};
  inst.attrs["axes"] = axes;
  AttrValue keepDims;
  keepDims.kind = AttrValue::Bool;
  inst.attrs["keep_dims"] = keepDims;
  return inst;
}
} // namespace

TEST(Session, ResultOverADyingOperandCountsOnce) {
  // loss = sum(neg(exp(w))) with w = ones[256]; neg writes over exp's
  // buffer. Planned: that 1024-byte buffer through step 2, plus the loss.
  Program program;
  program.version = tgc::tgx::kFormatVersion;
  program.alignment = 256;
  program.tensors = {tensor("w", {256}, Storage::Persistent, 0),
                     tensor("e", {256}, Storage::Arena, 0),
                     tensor("n", {256}, Storage::Arena, 0),
                     tensor("loss", {}, Storage::Arena, 1024)};
  program.tensors[0].role = Role::Param;
  program.tensors[0].init = InitKind::Ones;
  program.persistentBytes = 1024;
  program.arenaBytes = 1280;
  program.peakLiveBytes = 1280;
  program.instructions = {instruction(Kernel::Exp, 0, 1),
                          instruction(Kernel::Neg, 1, 2), sumOverAxis0(2, 3)};
  program.loss = 3;

  std::unique_ptr<Session> session;
  ASSERT_OK(Session::create(program, createCpuBackend(), session));
  ASSERT_OK(session->initialize(0));
  float loss = 0.0f;
  ASSERT_OK(session->step(loss));
  EXPECT_NEAR(loss, -256.0 * std::exp(1.0), 1e-3);
  EXPECT_EQ(session->arenaHighWaterMark(), program.peakLiveBytes);
}

TEST(Session, LaunchWithoutStagedInputsSaysWhatIsMissing) {
  Program program;
  program.version = tgc::tgx::kFormatVersion;
  program.alignment = 256;
  program.tensors = {tensor("w", {4}, Storage::Persistent, 0),
                     tensor("loss", {}, Storage::Arena, 0)};
  program.tensors[0].role = Role::Param;
  program.tensors[0].init = InitKind::Ones;
  program.persistentBytes = 256;
  program.arenaBytes = 256;
  program.peakLiveBytes = 256;
  program.instructions = {sumOverAxis0(0, 1)};
  program.loss = 1;
  std::unique_ptr<Session> session;
  ASSERT_OK(Session::create(program, createCpuBackend(), session));
  ASSERT_OK(session->initialize(0));
  Status status = session->launch();
  EXPECT_EQ(status.error, "cannot run a step before its input batch is "
                          "staged (Session::stageInputs)");
}
