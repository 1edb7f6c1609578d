//===- TrainerTest.cpp - the training loop on a hand-built step -----------===//
//
// Drives the Trainer over a step small enough to follow by hand: the loss is
// sum(w * x) for a parameter w and an input x, so its gradient is x and SGD
// moves w by -lr x. A data source of known batches (one can hold a NaN)
// stands in for the real ones. Checked: each step's loss and the data
// position it reads (also from a resumed position), the learning rate a
// schedule feeds with each batch, checkpoints when due and not after a
// divergence, and the message a diverged run stops with.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Trainer.h"

#include "tgc/format/TGXFile.h"
#include "tgc/runtime/Backend.h"
#include "tgc/runtime/Checkpoint.h"

#include "TestUtil.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <unistd.h>

using namespace tgc::rt;
using namespace tgc::rt::test;

namespace {

constexpr int64_t kN = 4;

TensorInfo tensor(const char *name, DType dtype, Shape shape,
                  Storage storage, int64_t offset, Role role) {
  TensorInfo info;
  info.name = name;
  info.dtype = dtype;
  info.shape = std::move(shape);
  info.storage = storage;
  info.offset = offset;
  info.bytes = info.numElements() * int64_t(dtypeSize(dtype));
  info.role = role;
  return info;
}

Instruction op(Kernel kernel, std::vector<int32_t> operands,
               std::vector<int32_t> results) {
  Instruction inst;
  inst.kernel = kernel;
  inst.operands = std::move(operands);
  inst.results = std::move(results);
  return inst;
}

void setAttr(Instruction &inst, const char *name, AttrValue::Kind kind,
             double value, std::vector<int64_t> ints = {}) {
  AttrValue attr;
  attr.kind = kind;
  attr.i = int64_t(value);
  attr.f = value;
  attr.ints = std::move(ints);
  inst.attrs[name] = attr;
}

/// loss = sum(w * x); step += 1; w -= lr * x (tg.sgd_update, no momentum),
/// the updates in place as the planner writes them.
Program sgdStep(double lr) {
  enum : int32_t { W, Lr, Step, X, Prod, Loss, One };
  Program program;
  program.version = tgc::tgx::kFormatVersion;
  program.alignment = 256;
  program.model = "dot";
  program.tensors = {
      tensor("w", DType::F32, {kN}, Storage::Persistent, 0, Role::Param),
      tensor("optimizer.lr", DType::F32, {}, Storage::Persistent, 256,
             Role::State),
      tensor("optimizer.step", DType::I64, {}, Storage::Persistent, 512,
             Role::State),
      tensor("x", DType::F32, {kN}, Storage::Persistent, 768, Role::Input),
      tensor("prod", DType::F32, {kN}, Storage::Arena, 0, Role::Transient),
      tensor("loss", DType::F32, {}, Storage::Arena, 256, Role::Transient),
      tensor("one", DType::I64, {}, Storage::Arena, 512, Role::Transient)};
  program.tensors[W].init = InitKind::Ones;
  program.tensors[Lr].init = InitKind::Constant;
  program.tensors[Lr].initA = lr;
  program.tensors[Step].init = InitKind::Zeros;
  program.stepCounter = Step;
  program.persistentBytes = 1024;
  program.arenaBytes = 768;
  program.peakLiveBytes = 768;
  Instruction sum = op(Kernel::ReduceSum, {Prod}, {Loss});
  setAttr(sum, "axes", AttrValue::Ints, 0, {0});
  setAttr(sum, "keep_dims", AttrValue::Bool, 0);
  Instruction fill = op(Kernel::Fill, {}, {One});
  setAttr(fill, "value", AttrValue::Float, 1.0);
  Instruction update = op(Kernel::SGDUpdate, {W, X, Lr, Step}, {W});
  for (const char *name : {"momentum", "dampening", "weight_decay"})
    setAttr(update, name, AttrValue::Float, 0.0);
  setAttr(update, "nesterov", AttrValue::Bool, 0);
  program.instructions = {op(Kernel::Mul, {W, X}, {Prod}), sum, fill,
                          op(Kernel::Add, {Step, One}, {Step}), update};
  program.loss = Loss;
  program.stepReadsInputs = true;
  return program;
}

/// Batch i is x = (i + 1) * (1, 2, 3, 4); batch `nanAt` holds a NaN.
class KnownBatches : public DataSource {
public:
  explicit KnownBatches(int64_t nanAt = -1) : nanAt(nanAt) {}
  Status fill(Session &session, int64_t index) override {
    read.push_back(index);
    TensorRef x = session.hostView(session.program().findPersistent("x"));
    for (int64_t i = 0; i < kN; ++i)
      storeF32(x, i, index == nanAt && i == 2
                         ? std::numeric_limits<float>::quiet_NaN()
                         : float((index + 1) * (i + 1)));
    return Status::success();
  }
  std::string describe() const override { return "known batches"; }
  int64_t itemsPerBatch() const override { return kN; }
  std::vector<int64_t> read;
  int64_t nanAt;
};

std::unique_ptr<Session> startSession(const Program &program) {
  std::unique_ptr<Session> session;
  Status status = Session::create(program, createCpuBackend(), session);
  if (status.ok())
    status = session->initialize(0);
  EXPECT_TRUE(status.ok()) << status.error;
  return session;
}

/// The loss of each step by hand: w starts at ones and moves by -lr x.
std::vector<double> expectedLosses(int64_t firstBatch, int64_t steps,
                                   const std::vector<double> &lrs) {
  std::vector<double> w(kN, 1.0), losses;
  for (int64_t s = 0; s < steps; ++s) {
    double loss = 0.0;
    for (int64_t i = 0; i < kN; ++i) {
      double x = double((firstBatch + s + 1) * (i + 1));
      loss += w[size_t(i)] * x;
      w[size_t(i)] -= lrs[size_t(s)] * x;
    }
    losses.push_back(loss);
  }
  return losses;
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/trainer-" + std::to_string(getpid()) + "-" +
         name;
}

} // namespace

TEST(Trainer, StepsReadTheirBatchesAndUpdate) {
  Program program = sgdStep(1.0 / 64);
  std::unique_ptr<Session> session = startSession(program);
  KnownBatches data;
  TrainerOptions options;
  options.steps = 3;
  std::unique_ptr<Trainer> trainer;
  ASSERT_OK(Trainer::create(*session, data, nullptr, options, trainer));
  std::vector<double> want = expectedLosses(0, 3, {1.0 / 64, 1.0 / 64,
                                                   1.0 / 64});
  for (int64_t s = 1; s <= 3; ++s) {
    ASSERT_FALSE(trainer->done());
    StepResult result;
    ASSERT_OK(trainer->step(result));
    EXPECT_EQ(result.step, s);
    EXPECT_TRUE(result.hasLoss);
    EXPECT_TRUE(result.diverged.empty());
    EXPECT_FLOAT_EQ(result.loss, float(want[size_t(s - 1)])) << s;
    EXPECT_FLOAT_EQ(float(result.lr), 1.0f / 64);
  }
  EXPECT_TRUE(trainer->done());
  EXPECT_EQ(trainer->stepsRun(), 3);
  EXPECT_EQ(session->stepCount(), 3);
  // The next batch is prepared while a step runs, never past the last.
  EXPECT_EQ(data.read, (std::vector<int64_t>{0, 1, 2}));
}

TEST(Trainer, AScheduleFeedsEachStepItsRate) {
  Program program = sgdStep(0.01);
  std::unique_ptr<Session> session = startSession(program);
  KnownBatches data;
  TrainerOptions options;
  options.steps = 4;
  LrSchedule schedule;
  schedule.kind = LrSchedule::Linear;
  schedule.warmupSteps = 1;
  schedule.maxSteps = 4;
  options.schedule = schedule;
  std::unique_ptr<Trainer> trainer;
  ASSERT_OK(Trainer::create(*session, data, nullptr, options, trainer));
  // The peak is the executable's rate.
  EXPECT_DOUBLE_EQ(trainer->options().schedule->peak, 0.01);
  std::vector<double> lrs;
  for (int64_t it = 0; it < 4; ++it)
    lrs.push_back(double(float(trainer->options().schedule->at(it))));
  EXPECT_LT(lrs[0], lrs[1]); // warmup, then decay
  EXPECT_GT(lrs[1], lrs[3]);
  std::vector<double> want = expectedLosses(0, 4, lrs);
  for (int64_t s = 1; s <= 4; ++s) {
    StepResult result;
    ASSERT_OK(trainer->step(result));
    EXPECT_DOUBLE_EQ(result.lr, lrs[size_t(s - 1)]);
    // The loss shows the rate of every step before it was applied.
    EXPECT_NEAR(result.loss, want[size_t(s - 1)],
                1e-5 * std::fabs(want[size_t(s - 1)]));
  }
}

TEST(Trainer, AResumedRunContinuesAtItsDataPosition) {
  Program program = sgdStep(1.0 / 64);
  std::unique_ptr<Session> session = startSession(program);
  KnownBatches data;
  TrainerOptions options;
  options.startStep = 5;
  options.startBatch = 7; // a run that skipped batches (loss scaling)
  options.steps = 7;
  std::unique_ptr<Trainer> trainer;
  ASSERT_OK(Trainer::create(*session, data, nullptr, options, trainer));
  EXPECT_EQ(trainer->nextStep(), 6);
  std::vector<double> want = expectedLosses(7, 2, {1.0 / 64, 1.0 / 64});
  for (int64_t s = 6; s <= 7; ++s) {
    StepResult result;
    ASSERT_OK(trainer->step(result));
    EXPECT_EQ(result.step, s);
    EXPECT_FLOAT_EQ(result.loss, float(want[size_t(s - 6)]));
  }
  EXPECT_EQ(data.read, (std::vector<int64_t>{7, 8}));
}

TEST(Trainer, ADivergedRunStopsAndSavesNothingMore) {
  Program program = sgdStep(1.0 / 64);
  std::unique_ptr<Session> session = startSession(program);
  KnownBatches data(/*nanAt=*/2);
  TrainerOptions options;
  options.steps = 5;
  options.save = tempPath("diverged.st");
  options.saveEvery = 1;
  std::unique_ptr<Trainer> trainer;
  ASSERT_OK(Trainer::create(*session, data, nullptr, options, trainer));
  for (int64_t s = 1; s <= 2; ++s) {
    StepResult result;
    ASSERT_OK(trainer->step(result));
    ASSERT_TRUE(result.diverged.empty());
    ASSERT_OK(trainer->checkpointIfDue(result));
  }
  EXPECT_EQ(trainer->savedSoFar(), "the last checkpoint saved is step 2, in '" +
                                       options.save + "'");
  StepResult result;
  ASSERT_OK(trainer->step(result));
  EXPECT_TRUE(std::isnan(result.loss));
  EXPECT_EQ(result.diverged,
            "step 3 has a non-finite loss (NaN): training diverged (a "
            "learning rate too high? NaN or Inf in the data?); stopping "
            "without saving: the last checkpoint saved is step 2, in '" +
                options.save + "'");
  ASSERT_OK(trainer->checkpointIfDue(result));
  EXPECT_EQ(trainer->savedSoFar(), "the last checkpoint saved is step 2, in '" +
                                       options.save + "'");
  std::remove(options.save.c_str());
}

TEST(Trainer, RefusesWhatTheExecutableCannotDo) {
  Program program = sgdStep(0.1);
  program.tensors[1].init = InitKind::Zeros; // not a compiled rate
  std::unique_ptr<Session> session = startSession(program);
  KnownBatches data;
  std::unique_ptr<Trainer> trainer;
  TrainerOptions scheduled;
  scheduled.steps = 2;
  scheduled.schedule = LrSchedule();
  Status status =
      Trainer::create(*session, data, nullptr, scheduled, trainer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error.find("no learning-rate tensor"), std::string::npos);
  TrainerOptions validating;
  validating.steps = 2;
  validating.evalEvery = 1;
  status = Trainer::create(*session, data, nullptr, validating, trainer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error.find("eval_step"), std::string::npos);
}
