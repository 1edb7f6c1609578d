//===- Report.cpp - what tgc-run prints about a run -----------------------===//

#include "Report.h"

#include <algorithm>
#include <cstdio>
#include <map>
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

/// The training hyper-parameters the executable was compiled with, from
/// the compile options it records ("name=value ..."), as one line.
std::string describeTraining(const Program &program) {
  std::map<std::string, std::string> options;
  size_t at = 0;
  const std::string &text = program.options;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(at, end - at);
    size_t eq = item.find('=');
    if (eq != std::string::npos)
      options[item.substr(0, eq)] = item.substr(eq + 1);
    at = end + 1;
  }
  auto number = [&](const std::string &name) {
    char *end = nullptr;
    double value = std::strtod(options[name].c_str(), &end);
    char out[32];
    std::snprintf(out, sizeof(out), "%g", value);
    return std::string(out);
  };
  if (!options.count("optimizer") || !options.count("lr"))
    return "";
  const std::string optimizer = options["optimizer"];
  std::string out = optimizer + ", lr " + number("lr");
  bool defaultDecay = options["weight-decay"].rfind("-1", 0) == 0;
  std::string decay = defaultDecay ? (optimizer == "adamw" ? "0.01" : "0")
                                   : number("weight-decay");
  if (optimizer == "adamw")
    out += ", betas (" + number("beta1") + ", " + number("beta2") +
           "), eps " + number("eps");
  if (optimizer == "sgd")
    out += ", momentum " + number("momentum") +
           (options["nesterov"] == "true" ? " (nesterov)" : "");
  out += ", weight decay " + decay;
  if (options["optimizer-state"] == "8bit")
    out += ", 8-bit state";
  if (options["optimizer-state"] == "4bit")
    out += ", 4-bit state";
  if (options.count("clip-grad-norm") && number("clip-grad-norm") != "0")
    out += "; clip-grad-norm " + number("clip-grad-norm");
  if (options.count("amp") && options["amp"] != "none")
    out += "; amp " + options["amp"];
  if (options.count("remat") && options["remat"] != "none")
    out += "; remat " + options["remat"];
  return out;
}

std::string formatDuration(double seconds) {
  int64_t s = int64_t(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%02lld:%02lld:%02lld",
                (long long)(s / 3600), (long long)(s / 60 % 60),
                (long long)(s % 60));
  return text;
}

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%lld B", (long long)bytes);
  else
    std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

} // namespace tgc::run
