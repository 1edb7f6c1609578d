//===- Report.cpp - what tgc-run prints about a run -----------------------===//

#include "Report.h"

#include "tgc/runtime/Threads.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace tgc::rt;

namespace tgc::run {

/// Prints the profile of every profiled entry point (time per op kind,
/// then the `top` slowest ops, in ms per run) and returns it as JSON.
nlohmann::ordered_json reportProfile(const Program &program,
                                     const Session &session, int64_t top,
                                     const char *timer) {
  nlohmann::ordered_json report = nlohmann::ordered_json::object();
  for (const auto &[name, profile] : session.profile()) {
    if (!profile.runs || !profile.instructions)
      continue;
    double runs = double(profile.runs), total = 0.0;
    std::map<std::string, std::pair<double, int64_t>> kinds;
    for (size_t i = 0; i < profile.seconds.size(); ++i) {
      auto &kind = kinds[kernelName((*profile.instructions)[i].kernel)];
      kind.first += profile.seconds[i] / runs;
      ++kind.second;
      total += profile.seconds[i] / runs;
    }
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> byTime(
        kinds.begin(), kinds.end());
    std::stable_sort(byTime.begin(), byTime.end(),
                     [](const auto &a, const auto &b) {
                       return a.second.first > b.second.first;
                     });
    std::printf("tgc-run: profile of %s over %lld runs (%s): %.2f ms a run\n",
                name.c_str(), (long long)profile.runs, timer, total * 1e3);
    std::printf("  %-22s %10s %7s %5s\n", "op kind", "ms/run", "share",
                "ops");
    nlohmann::ordered_json kindRows = nlohmann::ordered_json::array();
    for (const auto &[kind, value] : byTime) {
      std::printf("  %-22s %10.3f %6.1f%% %5lld\n", kind.c_str(),
                  value.first * 1e3,
                  total > 0 ? 100.0 * value.first / total : 0.0,
                  (long long)value.second);
      kindRows.push_back({{"kind", kind},
                          {"ms", value.first * 1e3},
                          {"share", total > 0 ? value.first / total : 0.0},
                          {"ops", value.second}});
    }
    std::vector<size_t> order(profile.seconds.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return profile.seconds[a] > profile.seconds[b];
    });
    order.resize(std::min(order.size(), size_t(top)));
    std::printf("  slowest ops:\n");
    nlohmann::ordered_json topRows = nlohmann::ordered_json::array();
    for (size_t i : order) {
      const Instruction &inst = (*profile.instructions)[i];
      std::string result = "-", shape;
      std::vector<int64_t> dims;
      for (int32_t index : inst.results)
        if (index != kNotComputed) {
          result = program.tensors[index].name;
          dims = program.tensors[index].shape;
          break;
        }
      for (size_t d = 0; d < dims.size(); ++d)
        shape += (d ? "x" : "") + std::to_string(dims[d]);
      double ms = profile.seconds[i] / runs * 1e3;
      std::printf("  #%-5zu %-18s %10.3f ms  %s [%s]\n", i,
                  kernelName(inst.kernel), ms, result.c_str(),
                  shape.c_str());
      topRows.push_back({{"index", i},
                         {"kind", kernelName(inst.kernel)},
                         {"ms", ms},
                         {"result", result},
                         {"shape", dims}});
    }
    report[name] = {{"runs", profile.runs},
                    {"timer", timer},
                    {"ms", total * 1e3},
                    {"kinds", kindRows},
                    {"top", topRows}};
  }
  return report;
}

Status Progress::onStep(const StepReport &report) {
  const StepResult &result = report.result;
  const char *cr = tty ? "\r" : "";
  if (!std::isnan(report.firstStepAt) && !options.quiet)
    std::printf("%stgc-run: first step done %.2f s after start (%.2f s to "
                "set up: executable, memory, initialisation, weights)\n",
                cr, report.firstStepAt, report.setup);
  // A batch with nothing to predict (no token masked) has no loss: the
  // step computes 0 (and zero gradients), PyTorch NaN; neither is a loss.
  if (!result.hasLoss)
    std::fprintf(stderr,
                 "%stgc-run: warning: step %lld: its batch has no "
                 "token to predict (no token was masked), so it has no "
                 "loss\n",
                 cr, (long long)result.step);
  if (!result.diverged.empty() && tty)
    std::printf("\n");
  if (!result.diverged.empty() || options.quiet)
    return Status::success();
  int64_t step = result.step, steps = options.steps;
  std::string line = "loss " + lossText(result) + " | " +
                     number("%.1f", report.itemsPerSecond) + " " +
                     report.itemName + "/s | ETA " +
                     formatDuration(report.eta) + extras(result);
  if (tty) {
    std::string bar(size_t(30.0 * double(step) / double(steps)), '=');
    bar.resize(30, ' ');
    std::printf("\r  step %lld/%lld [%s] %s ", (long long)step,
                (long long)steps, bar.c_str(), line.c_str());
    if (result.evaluated && step != steps)
      std::printf("\n"); // keep the line with the validation loss
  } else if (result.evaluated ||
             (options.logEvery ? step % options.logEvery == 0
                               : (step == steps || step % 10 == 0 ||
                                  step == startStep + 1))) {
    std::printf("  step %lld/%lld %s\n", (long long)step, (long long)steps,
                line.c_str());
  }
  std::fflush(stdout);
  return Status::success();
}

/// What the run set up: notes on loading, the CPU's kernels, warnings on
/// the environment, then (unless --quiet) the header.
void printSetUp(rt::Run &run, const Options &options) {
  for (const std::string &note : run.notes())
    std::fprintf(stderr, "tgc-run: note: %s\n", note.c_str());
  if (!options.quiet && run.session().backend().hostAccessible())
    std::printf(
        "tgc-run: %d thread%s; OpenBLAS %s kernels%s; vector math "
        "%s\n",
        run.threads(), run.threads() == 1 ? "" : "s", blasCoreName().c_str(),
        blasCoreChosenByRuntime() ? " (chosen from the CPU's instruction sets)"
                                  : "",
        vectorMathIsa().c_str());
  if (const char *asked = std::getenv("TGC_VECMATH"))
    if (vectorMathIsa() != asked)
      std::fprintf(stderr,
                   "tgc-run: warning: TGC_VECMATH=%s is not a vector math "
                   "instruction set this CPU runs (avx512f, avx2, sse2 or "
                   "libm, as the CPU has them); using %s\n",
                   asked, vectorMathIsa().c_str());
  if (const char *gemm = std::getenv("TGC_GEMM"))
    if (std::strcmp(gemm, "openblas") != 0)
      std::fprintf(stderr,
                   "tgc-run: warning: TGC_GEMM=%s is not known (only "
                   "'openblas', OpenBLAS's own threading, is); GEMMs run in "
                   "tiles on tgc's threads\n",
                   gemm);
}

} // namespace tgc::run
