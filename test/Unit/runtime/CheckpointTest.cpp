//===- CheckpointTest.cpp - what a save refuses to write ------------------===//
//
// A save never writes non-finite values over a file (issue 30): the
// previous checkpoint keeps its bytes, and the error names the tensor and
// the element. Then the same save, once the value is finite again, works.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Checkpoint.h"
#include "tgc/format/TGXFile.h"

#include "TestUtil.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace tgc::rt;

namespace {
std::string contents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
} // namespace

TEST(Checkpoint, ANonFiniteValueIsNeverSavedOverAFile) {
  // One parameter w[4] and a loss of sum(w).
  Program program;
  program.version = tgc::tgx::kFormatVersion;
  program.alignment = 256;
  TensorInfo w, loss;
  w.name = "w";
  w.dtype = loss.dtype = DType::F32;
  w.shape = {4};
  w.bytes = 16;
  w.storage = Storage::Persistent;
  w.role = Role::Param;
  w.init = InitKind::Ones;
  loss.name = "loss";
  loss.bytes = 4;
  loss.storage = Storage::Arena;
  program.tensors = {w, loss};
  program.persistentBytes = program.arenaBytes = program.peakLiveBytes = 256;
  Instruction sum;
  sum.kernel = Kernel::ReduceSum;
  sum.operands = {0};
  sum.results = {1};
  AttrValue axes;
  axes.kind = AttrValue::Ints;
  axes.ints = {0};
  sum.attrs["axes"] = axes;
  program.instructions = {sum};
  program.loss = 1;

  std::unique_ptr<Session> session;
  ASSERT_OK(Session::create(program, createCpuBackend(), session));
  ASSERT_OK(session->initialize(0));
  std::string path = ::testing::TempDir() + "tgc-checkpoint-test.st";
  ASSERT_OK(saveCheckpoint(*session, path, {}));
  std::string good = contents(path);

  TensorRef view = session->hostView(0);
  storeF32(view, 2, NAN);
  Status refused = saveCheckpoint(*session, path, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("'w' holds a non-finite value (NaN or Inf) at "
                               "element 2; the previous file is intact"),
            std::string::npos)
      << refused.error;
  EXPECT_EQ(contents(path), good);

  storeF32(view, 2, 5.0f);
  ASSERT_OK(saveCheckpoint(*session, path, {}));
  EXPECT_NE(contents(path), good);
  ::unlink(path.c_str());
}
