//===- Trainer.cpp - the training loop over a session ---------------------===//

#include "tgc/runtime/Trainer.h"

#include "tgc/Support/CheckedMath.h"
#include "tgc/runtime/Checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace tgc::rt {

Trainer::Trainer(Session &session, DataSource &data, DataSource *evalData,
                 TrainerOptions options)
    : session(session), program(session.program()), data(data),
      evalData(evalData), opts(std::move(options)) {}

Status Trainer::create(Session &session, DataSource &data,
                       DataSource *evalData, TrainerOptions options,
                       std::unique_ptr<Trainer> &trainer) {
  std::unique_ptr<Trainer> t(
      new Trainer(session, data, evalData, std::move(options)));
  const Program &program = session.program();
  TrainerOptions &opts = t->opts;
  t->next = opts.startStep + 1;

  // The learning rate: the executable's `optimizer.lr` tensor, which a
  // schedule rewrites before every step (it travels with the batch).
  t->lrTensor = program.findPersistent("optimizer.lr");
  if (opts.schedule) {
    if (t->lrTensor < 0 ||
        program.tensors[t->lrTensor].init != InitKind::Constant)
      return Status::failure("--lr-schedule: the executable has no "
                             "learning-rate tensor (optimizer.lr) to "
                             "schedule");
    opts.schedule->peak = program.tensors[t->lrTensor].initA;
    if (Status s = opts.schedule->validate(); !s.ok())
      return s;
    if (Status s = session.streamWithInputs(t->lrTensor); !s.ok())
      return s;
  } else if (t->lrTensor >= 0) {
    if (Status s = session.readScalar(t->lrTensor, t->fixedLr); !s.ok())
      return s;
  }

  // Gradient accumulation: the grad_step entry on each of K micro-batches,
  // then the training step applies the update.
  t->accum = program.gradAccumSteps;
  t->micro = t->accum > 1 ? program.findEntry("grad_step") : nullptr;
  if (opts.steps > kMaxCheckpointStep / t->accum)
    return Status::failure(
        "--steps " + std::to_string(opts.steps) + " of " +
        std::to_string(t->accum) +
        " micro-batches each would read more than " +
        std::to_string(kMaxCheckpointStep) + " batches");

  t->evalEntry = program.findEntry("eval_step");
  if (opts.evalEvery && (!t->evalEntry || !evalData))
    return Status::failure("validation needs the executable's eval_step "
                           "and a source of validation batches");

  // Micro-batch k of step s (0-based, s >= startStep) reads data batch
  // startBatch + K * (s - startStep) + k: every batch index this run (and
  // its last save) uses must fit.
  std::optional<int64_t> first =
      opts.startBatch < 0 ? tgc::checkedMul(opts.startStep, t->accum)
                          : std::optional<int64_t>(opts.startBatch);
  std::optional<int64_t> span = tgc::checkedMul(
      t->accum, std::max<int64_t>(0, opts.steps - opts.startStep));
  if (!first || !span || !tgc::checkedAdd(*first, *span))
    return Status::failure(
        "the data position of step " + std::to_string(opts.startStep) +
        " to " + std::to_string(opts.steps) + " (" + std::to_string(t->accum) +
        " micro-batches a step) does not fit in 64 bits");
  t->startBatch = *first;

  // Loss scaling, when the step has it: the scale and the skipped steps.
  t->scaleTensor = program.findPersistent("amp.loss_scale");
  t->updates = session.stepCount();
  if (t->scaleTensor >= 0) {
    Status read = session.readScalar(t->scaleTensor, t->scaleBefore);
    if (!read.ok())
      return read;
  }
  trainer = std::move(t);
  return Status::success();
}

double Trainer::lrOf(int64_t index) const {
  return opts.schedule ? double(float(opts.schedule->at(index))) : fixedLr;
}

Status Trainer::prepareBatch(int64_t step, int64_t k) {
  if (step >= opts.steps)
    return Status::success();
  if (opts.schedule) {
    TensorRef view = session.hostView(lrTensor);
    storeF32(view, 0, float(opts.schedule->at(step)));
  }
  BatchInfo info;
  Status prepared = data.fillBatch(session, batchOf(step, k), info);
  if (!prepared.ok())
    return prepared;
  pending.push_back(info);
  return session.stageInputs();
}

Status Trainer::launchNext() {
  if (pending.empty())
    return Status::failure("internal error: no batch is staged");
  BatchInfo info = pending.front();
  pending.pop_front();
  real += info.realTokens;
  padded += info.paddedTokens;
  predicted = predicted < 0 || info.predicted < 0 ? -1
                                                  : predicted + info.predicted;
  return session.launch(micro || !info.bucket ? micro
                                              : program.trainEntry(*info.bucket));
}

Status Trainer::evaluate(double &mean) {
  if (!evalData || !evalEntry)
    return Status::failure("the run has no validation source or step");
  double sum = 0.0;
  for (int64_t b = 0; b < opts.evalBatches; ++b) {
    float loss = 0.0f;
    BatchInfo info;
    Status done = evalData->fillBatch(session, b, info);
    const EntryPoint *entry =
        info.bucket ? program.evalEntry(*info.bucket) : evalEntry;
    if (done.ok() && !entry)
      done = Status::failure("no evaluation step at sequence length " +
                             std::to_string(info.bucket->seqLen));
    if (done.ok())
      done = session.stageInputs();
    if (done.ok())
      done = session.launch(entry);
    if (done.ok())
      done = session.finish(loss);
    if (!done.ok())
      return done;
    sum += double(loss);
  }
  mean = sum / double(opts.evalBatches);
  return Status::success();
}

Status Trainer::step(StepResult &result) {
  if (done())
    return Status::failure("internal error: no step is left to run");
  Status status;
  if (!started) {
    started = true;
    status = prepareBatch(opts.startStep, 0);
    if (!status.ok())
      return status;
  }
  int64_t step = next;
  result = StepResult();
  result.step = step;
  // Validation after this step uses the staging slots: the next batch is
  // then prepared after it, not during this step. So is the batch after an
  // apply step's micro-batches: on the CPU it would overwrite the learning
  // rate the apply step is about to read.
  bool evalNow = opts.evalEvery && step % opts.evalEvery == 0;
  float loss = 0.0f;
  predicted = 0;
  for (int64_t k = 0; k < accum && status.ok(); ++k) {
    status = launchNext();
    bool last = k + 1 == accum;
    if (status.ok() && !last)
      status = prepareBatch(step - 1, k + 1);
    else if (status.ok() && !micro && !evalNow)
      status = prepareBatch(step, 0);
    if (status.ok())
      status = session.finish(loss);
  }
  if (status.ok() && micro) {
    status = session.launch(); // the update, on the accumulated sums
    if (status.ok() && !evalNow)
      status = prepareBatch(step, 0);
    if (status.ok())
      status = session.finish(loss);
  }
  // The step's metrics, before validation runs in the same arena.
  for (const auto &[name, index] : program.metrics) {
    double value = 0.0;
    if (status.ok())
      status = session.readScalar(index, value);
    result.metrics.push_back({name, value});
  }
  if (status.ok() && evalNow) {
    status = evaluate(result.evalLoss);
    result.evaluated = status.ok();
    if (status.ok())
      status = prepareBatch(step, 0);
  }
  if (!status.ok())
    return status;
  ++ran;
  ++next;
  if (ran == 1 && opts.profile)
    // Profile the steps after the first, whose page faults and cold caches
    // are start-up's.
    session.setProfiling(true);

  result.loss = loss;
  result.hasLoss = predicted != 0;
  result.lr = lrOf(step - 1);
  if (scaleTensor >= 0) {
    status = session.readScalar(scaleTensor, result.scale);
    if (!status.ok())
      return status;
    int64_t now = session.stepCount();
    result.lossScaled = true;
    result.skipped = now == updates;
    skipped += result.skipped;
    updates = now;
  }
  result.skippedTotal = skipped;

  // Loss scaling skips the update of a step whose gradients overflow and
  // lowers the scale; a skip is the scaler's business as long as overflow
  // of the scaled values can explain it. Two things prove divergence
  // instead, with or without scaling:
  // - a non-finite loss: the forward pass computes it before the scale is
  //   applied (the scale multiplies only the backward seed), so no scale
  //   made it overflow;
  // - a step skipped at a scale below kMinExplainingScale: there every
  //   gradient finite in f32 is finite scaled in f16 (see its comment).
  // Not a count of skipped steps: a large initial scale (GradScaler takes
  // any) halves down for as many steps as it needs.
  double scaleRanAt = scaleBefore;
  if (scaleTensor >= 0)
    scaleBefore = result.scale;
  std::string why;
  if (result.hasLoss && !std::isfinite(loss))
    why = "step " + std::to_string(step) + " has a non-finite loss (" +
          (std::isnan(loss) ? "NaN" : "Inf") +
          "): training diverged (a learning rate too high? NaN or Inf in "
          "the data?)";
  else if (result.skipped && scaleRanAt < kMinExplainingScale) {
    char scale[32];
    std::snprintf(scale, sizeof(scale), "%g", scaleRanAt);
    why = "step " + std::to_string(step) +
          " has non-finite gradients at loss scale " + scale +
          ", below 65504 / 3.4e38 (f16's largest value over f32's), where "
          "no gradient finite in f32 overflows when scaled: the gradients "
          "are not finite at any scale, training diverged";
  }
  if (!why.empty()) {
    // Nothing is saved after a divergence: the weights are no longer
    // worth a checkpoint, and the last one written stays as it is.
    result.diverged = opts.save.empty()
                          ? why
                          : why + "; stopping without saving: " + savedSoFar();
    return Status::success();
  }
  return Status::success();
}

Status Trainer::checkpointIfDue(const StepResult &result) {
  if (result.diverged.empty() && opts.saveEvery &&
      result.step % opts.saveEvery == 0 && result.step != opts.steps)
    return save(result.step);
  return Status::success();
}

Status Trainer::save(int64_t step) {
  std::map<std::string, std::string> metadata = {
      {"tgc.model", program.model},
      {"tgc.step", std::to_string(step)},
      {"tgc.batch", std::to_string(batchOf(step, 0))},
      {"tgc.seed", std::to_string(opts.seed)}};
  Status saved = saveCheckpoint(session, opts.save, metadata);
  if (saved.ok())
    lastSaved = step;
  return saved;
}

std::string Trainer::savedSoFar() const {
  if (lastSaved >= 0)
    return "the last checkpoint saved is step " + std::to_string(lastSaved) +
           ", in '" + opts.save + "'";
  if (!opts.resume.empty())
    return "nothing was saved; '" + opts.resume + "' is as it was";
  return "nothing was saved";
}

} // namespace tgc::rt
