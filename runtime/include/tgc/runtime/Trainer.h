//===- Trainer.h - the training loop over a session --------------*- C++ -*-===//
//
// What a training run does between loading an executable and saving its
// result, without the command line around it: optimizer steps of K
// micro-batches (gradient accumulation), each batch on the step of the
// shape bucket it was written for, the next batch prepared while the
// device runs this one, the learning rate of a schedule fed with each
// batch, validation and checkpoints when due, loss scaling's skipped steps
// counted, and a run that diverged stopped. tgc-run parses flags, loads,
// prints and records around it; tests drive it directly.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAINER_H
#define TGC_RUNTIME_TRAINER_H

#include "tgc/runtime/Data.h"
#include "tgc/runtime/Schedule.h"
#include "tgc/runtime/Session.h"

#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace tgc::rt {

struct TrainerOptions {
  /// The last step to run (1-based), and the steps already done (a resumed
  /// run's saved step): the run takes steps startStep + 1 ... steps.
  int64_t steps = 0;
  int64_t startStep = 0;
  /// The data batch step startStep + 1 starts at (a resumed run's saved
  /// position), or -1: K batches per step from batch 0.
  int64_t startBatch = -1;
  /// The seed the run was initialised with, recorded in checkpoints.
  uint64_t seed = 0;
  /// A learning-rate schedule to feed (its peak is the executable's
  /// `optimizer.lr`, filled in by create()).
  std::optional<LrSchedule> schedule;
  /// Validation every N steps on the first evalBatches batches of the
  /// evaluation source (0: never).
  int64_t evalEvery = 0;
  int64_t evalBatches = 10;
  /// Where checkpoints go (empty: none) and every how many steps one is
  /// written besides the one at the end (0: only at the end).
  std::string save;
  int64_t saveEvery = 0;
  /// The checkpoint the run resumed from, for messages.
  std::string resume;
  /// Time every op of the steps after the first (Session::setProfiling).
  bool profile = false;
};

/// What one optimizer step did.
struct StepResult {
  int64_t step = 0;
  /// The step's loss; none when its batches had nothing to predict (a
  /// masked-LM batch without a masked token), where the kernels compute 0
  /// and PyTorch NaN.
  float loss = 0.0f;
  bool hasLoss = true;
  /// The training step's metrics (Program::metrics), by name.
  std::vector<std::pair<std::string, double>> metrics;
  /// The learning rate the step used (NaN: the executable has none).
  double lr = NAN;
  /// The validation loss, when this step validated.
  bool evaluated = false;
  double evalLoss = NAN;
  /// Loss scaling: the scale after the step, whether it skipped its update,
  /// and the steps skipped so far.
  bool lossScaled = false;
  double scale = 0.0;
  bool skipped = false;
  int64_t skippedTotal = 0;
  /// Non-empty when training diverged at this step: the run must stop, and
  /// this says why and what was saved.
  std::string diverged;
};

class Trainer {
public:
  /// Checks `options` against the session's program: a schedule needs the
  /// executable's learning-rate tensor, validation its eval_step and
  /// `evalData`, and every batch position the run reads must fit in 64
  /// bits. Nothing runs yet.
  static Status create(Session &session, DataSource &data,
                       DataSource *evalData, TrainerOptions options,
                       std::unique_ptr<Trainer> &trainer);

  const TrainerOptions &options() const { return opts; }
  /// The next step to run, and whether none is left.
  int64_t nextStep() const { return next; }
  bool done() const { return next > opts.steps; }
  /// Steps run by this trainer, and those loss scaling skipped.
  int64_t stepsRun() const { return ran; }
  int64_t skippedSteps() const { return skipped; }

  /// Runs the next optimizer step: its K micro-batches and the update, and
  /// validation when due. Fails on an error of the session or the data.
  Status step(StepResult &result);
  /// Writes the checkpoint due after `result`'s step (every saveEvery
  /// steps; the last step's is the caller's, and a diverged step's never
  /// is). Separate from step() so that the step is reported before a save
  /// that may take a while.
  Status checkpointIfDue(const StepResult &result);

  /// The mean validation loss over the first evalBatches batches.
  Status evaluate(double &mean);

  /// Writes a checkpoint of step `step` to options().save, with the run's
  /// position and seed.
  Status save(int64_t step);
  /// What the run leaves saved so far, for a run that stops early.
  std::string savedSoFar() const;

  /// Gradient accumulation: micro-batches per step, and the micro-step
  /// entry point (null without accumulation).
  int64_t accumSteps() const { return accum; }
  const EntryPoint *microStep() const { return micro; }
  /// The learning rate of the step that reads batch iteration `index`
  /// (the step's 0-based number), as the f32 the step computes with.
  double lrOf(int64_t index) const;
  /// Token positions run, real and padded (sources of examples).
  int64_t realTokens() const { return real; }
  int64_t paddedTokens() const { return padded; }

  /// Loss scaling gives up on a step skipped at a scale below this: f16's
  /// largest value over f32's (65504 / 3.4e38, about 2^-112). The backward
  /// pass is linear in its seed, so each scaled value is the scale times
  /// the unscaled one; below this scale, every unscaled value finite in
  /// f32 is finite scaled in f16 (and in bf16 and f32, whose ranges are
  /// wider), so a gradient that is still not finite is not finite in f32
  /// at all: no overflow of the scaled values explains it. (The floor is
  /// far above f32's smallest normal, 1.2e-38: the scale never reaches
  /// the subnormals or zero, whose reciprocal would lose bits or be Inf.)
  static constexpr double kMinExplainingScale =
      65504.0 / 3.4028234663852886e38;

private:
  Trainer(Session &session, DataSource &data, DataSource *evalData,
          TrainerOptions options);
  /// The data batch micro-batch `k` of step `step` (0-based) reads.
  int64_t batchOf(int64_t step, int64_t k) const {
    return startBatch + accum * (step - opts.startStep) + k;
  }
  /// Fills and stages micro-batch `k` of 0-based step `step`, with its
  /// learning rate (nothing past the last step).
  Status prepareBatch(int64_t step, int64_t k);
  /// Launches the oldest staged batch on its step.
  Status launchNext();

  Session &session;
  const Program &program;
  DataSource &data;
  DataSource *evalData;
  TrainerOptions opts;
  int64_t next = 1;
  int64_t startBatch = 0;
  int64_t accum = 1;
  const EntryPoint *micro = nullptr;
  const EntryPoint *evalEntry = nullptr;
  int32_t lrTensor = -1, scaleTensor = -1;
  double fixedLr = NAN;
  bool started = false;
  int64_t ran = 0, lastSaved = -1;
  int64_t updates = 0, skipped = 0;
  /// The loss scale the next step runs at (the last step's new scale).
  double scaleBefore = 0.0;
  int64_t real = 0, padded = 0;
  /// Positions the current step's loss predicts (-1: every position).
  int64_t predicted = 0;
  /// The batches staged and not yet run, oldest first.
  std::deque<BatchInfo> pending;
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_TRAINER_H
