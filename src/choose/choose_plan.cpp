// Choosing a plan by measurement (see hetsched/choose.h).
#include "hetsched/choose.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "choose/rounds.h"
#include "hetsched/error.h"
#include "runtime/executor.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool plan_beats_baseline(const std::vector<double>& per_round_ratios, double min_gain) {
  if (per_round_ratios.empty()) return false;
  size_t wins = static_cast<size_t>(
      std::count_if(per_round_ratios.begin(), per_round_ratios.end(), [](double x) { return x < 1; }));
  return median(per_round_ratios) <= 1 - min_gain && 3 * wins >= 2 * per_round_ratios.size();
}

MeasuredChoice choose_by_measurement(const Graph& graph, const std::vector<PlanCandidate>& candidates,
                                     const TensorMap& inputs, const ChoiceOptions& options) {
  if (options.rounds < 1 || options.max_rounds < options.rounds || options.warmups < 0 || options.burst < 1)
    throw Error(ErrorCode::kUsage, fmt::format("choosing a plan: expected 1 <= rounds <= max_rounds, warmups >= 0 and "
                                               "burst >= 1, got rounds {}, max_rounds {}, warmups {}, burst {}",
                                               options.rounds, options.max_rounds, options.warmups, options.burst));
  if (std::none_of(candidates.begin(), candidates.end(), [](const PlanCandidate& c) { return c.one_device; }))
    throw Error(ErrorCode::kUsage, "choosing a plan: no candidate runs on one device alone");

  std::vector<std::shared_ptr<Executor>> executors;
  std::vector<bool> one_device;
  for (const PlanCandidate& c : candidates) {
    executors.push_back(std::make_shared<Executor>(graph, *c.plan, *c.platform, c.cost, options.cuda_graph));
    for (int w = 0; w < options.warmups; ++w) executors.back()->run(inputs);
    one_device.push_back(c.one_device);
  }
  // A round's time: the median of a burst of runs back to back, rewarmed first.
  Rounds rounds = measure_in_rounds(
      one_device,
      [&](size_t c) {
        rewarm(*executors[c], inputs);
        std::vector<double> burst;
        for (int b = 0; b < options.burst; ++b) {
          auto start = Clock::now();
          executors[c]->run(inputs);
          burst.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
        return median(burst);
      },
      options.rounds, options.max_rounds, options.min_gain, options.undecided);

  MeasuredChoice choice;
  choice.rounds = rounds.n_rounds();
  for (const std::vector<double>& times : rounds.times) {
    Measurement m;
    m.p50_ms = median(times);
    m.min_ms = *std::min_element(times.begin(), times.end());
    m.max_ms = *std::max_element(times.begin(), times.end());
    choice.measured.push_back(m);
  }
  const PlanCandidate& base = candidates[static_cast<size_t>(rounds.baseline)];
  choice.chosen = static_cast<size_t>(rounds.baseline);
  choice.executor = executors[choice.chosen];
  if (rounds.best < 0) {
    choice.reason = fmt::format("{} measured fastest ({:.3f} ms, {} interleaved rounds)", base.name,
                                choice.measured[choice.chosen].p50_ms, choice.rounds);
    return choice;
  }
  std::vector<double> r = rounds.ratios();
  int wins = static_cast<int>(std::count_if(r.begin(), r.end(), [](double x) { return x < 1; }));
  choice.ratio = median(r);
  const PlanCandidate& best = candidates[static_cast<size_t>(rounds.best)];
  double plan_ms = choice.measured[static_cast<size_t>(rounds.best)].p50_ms;
  double base_ms = choice.measured[choice.chosen].p50_ms;
  bool keep_plan = plan_beats_baseline(r, options.min_gain);
  if (keep_plan) {
    choice.chosen = static_cast<size_t>(rounds.best);
    choice.executor = executors[choice.chosen];
  }
  choice.reason = fmt::format(
      "{} measured {:.3f} ms, {} {:.3f} ms ({} interleaved rounds; per round {:.3f}x, faster in {} of {}): {}",
      best.name, plan_ms, base.name, base_ms, choice.rounds, choice.ratio, wins, choice.rounds,
      keep_plan ? fmt::format("keeping {}", best.name)
                : fmt::format("running {} (a plan must be {:.0f}% faster, in two rounds of three)", base.name,
                              100 * options.min_gain));
  return choice;
}

void rewarm(Executor& executor, const TensorMap& inputs) {
  constexpr double kWarmMs = 20;
  auto start = Clock::now();
  do executor.run(inputs);
  while (std::chrono::duration<double, std::milli>(Clock::now() - start).count() < kWarmMs);
}

Platform platform_with_cpu_union(const Platform& platform) {
  std::string union_device = cpu_union_device(platform);
  if (union_device.empty()) return platform;
  std::string spec;
  for (const PlatformDevice& device : platform.devices) {
    if (device.kind != DeviceKind::kCpu || device.is_emulated()) return platform;
    spec += device.name + ",";
  }
  return make_platform(spec + union_device, "");
}

}  // namespace hetsched
