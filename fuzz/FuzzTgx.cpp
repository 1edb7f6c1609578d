//===- FuzzTgx.cpp - fuzzing the .tgx loader and one CPU step -------------===//
//
// The input is a FlatBuffers program (the checksum trailer is not required:
// mutated programs must reach the verifier, not stop at the hash). When it
// verifies and its regions fit a small memory cap, one training step (then
// each other entry point) runs on the CPU backend with synthetic data:
// whatever the verifier accepts,
// the kernels must execute without reading or writing out of bounds.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Data.h"
#include "tgc/runtime/Program.h"
#include "tgc/runtime/Session.h"

#include <cstddef>
#include <cstdint>

using namespace tgc::rt;

/// A step runs only when its memory fits here, so that each input takes
/// milliseconds.
static constexpr int64_t kMemoryCap = 256 << 10;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Program program;
  if (!parseProgram(data, size, program).ok())
    return 0;
  if (program.persistentBytes + program.arenaBytes > kMemoryCap)
    return 0;
  std::unique_ptr<Session> session;
  if (!Session::create(program, createCpuBackend(), session).ok() ||
      !session->initialize(0).ok())
    return 0;
  std::unique_ptr<DataSource> source;
  if (!createDataSource(program, "synthetic", 0, source).ok() ||
      !source->fill(*session, 0).ok())
    return 0;
  float loss = 0.0f;
  (void)session->step(loss);
  // And every other entry point (eval_step) on the next batch.
  for (const EntryPoint &entry : session->program().entries) {
    if (!source->fill(*session, 1).ok() || !session->stageInputs().ok() ||
        !session->launch(&entry).ok())
      break;
    (void)session->finish(loss);
  }
  return 0;
}
