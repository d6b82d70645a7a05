// Choosing a plan by measurement (see hetsched/choose.h).
#include "hetsched/choose.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "runtime/executor.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The fastest candidate by median among those with one_device == `one`;
// -1 when there is none.
int fastest(const std::vector<PlanCandidate>& candidates, const std::vector<std::vector<double>>& times, bool one) {
  int best = -1;
  for (size_t c = 0; c < candidates.size(); ++c)
    if (candidates[c].one_device == one && (best < 0 || median(times[c]) < median(times[static_cast<size_t>(best)])))
      best = static_cast<int>(c);
  return best;
}

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
  for (const PlanCandidate& c : candidates) {
    executors.push_back(std::make_shared<Executor>(graph, *c.plan, *c.platform, c.cost, options.cuda_graph));
    for (int w = 0; w < options.warmups; ++w) executors.back()->run(inputs);
  }
  size_t n = candidates.size();
  std::vector<std::vector<double>> times(n);
  auto run_rounds = [&](int count) {
    for (int r = 0; r < count; ++r) {
      size_t round = times[0].size();
      for (size_t k = 0; k < n; ++k) {
        size_t c = (k + round) % n;  // rotated: each candidate follows each other one in turn
        rewarm(*executors[c], inputs);
        std::vector<double> burst;
        for (int b = 0; b < options.burst; ++b) {
          auto start = Clock::now();
          executors[c]->run(inputs);
          burst.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
        times[c].push_back(median(burst));
      }
    }
  };

  MeasuredChoice choice;
  run_rounds(options.rounds);
  int baseline = fastest(candidates, times, true);
  int plan = fastest(candidates, times, false);
  auto ratios = [&] {
    std::vector<double> r;
    for (size_t i = 0; i < times[0].size(); ++i)
      r.push_back(times[static_cast<size_t>(plan)][i] / times[static_cast<size_t>(baseline)][i]);
    return r;
  };
  while (plan >= 0 && static_cast<int>(times[0].size()) < options.max_rounds &&
         std::abs(median(ratios()) - (1 - options.min_gain)) < options.undecided) {
    run_rounds(std::min(options.rounds, options.max_rounds - static_cast<int>(times[0].size())));
    baseline = fastest(candidates, times, true);
    plan = fastest(candidates, times, false);
  }

  choice.rounds = static_cast<int>(times[0].size());
  for (size_t c = 0; c < n; ++c) {
    Measurement m;
    m.p50_ms = median(times[c]);
    m.min_ms = *std::min_element(times[c].begin(), times[c].end());
    m.max_ms = *std::max_element(times[c].begin(), times[c].end());
    choice.measured.push_back(m);
  }
  const PlanCandidate& base = candidates[static_cast<size_t>(baseline)];
  choice.chosen = static_cast<size_t>(baseline);
  choice.executor = executors[choice.chosen];
  if (plan < 0) {
    choice.reason = fmt::format("{} measured fastest ({:.3f} ms, {} interleaved rounds)", base.name,
                                choice.measured[choice.chosen].p50_ms, choice.rounds);
    return choice;
  }
  std::vector<double> r = ratios();
  int wins = static_cast<int>(std::count_if(r.begin(), r.end(), [](double x) { return x < 1; }));
  choice.ratio = median(r);
  const PlanCandidate& best = candidates[static_cast<size_t>(plan)];
  double plan_ms = choice.measured[static_cast<size_t>(plan)].p50_ms;
  double base_ms = choice.measured[choice.chosen].p50_ms;
  bool keep_plan = plan_beats_baseline(r, options.min_gain);
  if (keep_plan) {
    choice.chosen = static_cast<size_t>(plan);
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
