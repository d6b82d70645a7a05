// Comparing schedulers (see hetsched/compare.h).
#include "hetsched/compare.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "runtime/executor.h"
#include "sched/lower_bound.h"
#include "sim/simulator.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Plan sequential_plan(const Graph& graph, const Platform& platform, const CostModel& cost, const std::string& device) {
  ScheduleOptions options;
  options.params["device"] = device;
  return make_scheduler("sequential")->schedule(graph, platform, cost, options);
}

// One device on every core of the platform's CPU core groups, when it has
// two or more: running on all of them one launch after another is the
// baseline a split across them has to beat.
std::string cpu_union_device(const Platform& platform) {
  DeviceSpec all;
  int n_groups = 0;
  for (const PlatformDevice& device : platform.devices) {
    if (device.kind != DeviceKind::kCpu) continue;
    ++n_groups;
    all.cores.insert(all.cores.end(), device.cores.begin(), device.cores.end());
  }
  if (n_groups < 2) return "";
  std::sort(all.cores.begin(), all.cores.end());
  return all.name();
}

// A plan to run, and where its measurement goes.
struct Runnable {
  std::unique_ptr<Executor> executor;
  Measurement* result = nullptr;
  std::vector<double> times_ms;
};

// Progress counts planning each scheduler, then each measuring round.
void measure(std::vector<Runnable>& runs, const TensorMap& inputs, const CompareOptions& options, int n_planned) {
  int total = options.warmups + options.rounds;
  for (int round = 0; round < total; ++round) {
    if (options.progress)
      options.progress(n_planned + round, n_planned + total, fmt::format("measuring: round {} of {}", round + 1, total));
    for (Runnable& run : runs) {
      auto start = Clock::now();
      run.executor->run(inputs);
      if (round >= options.warmups) run.times_ms.push_back(ms_since(start));
    }
  }
  for (Runnable& run : runs) {
    std::vector<double>& t = run.times_ms;
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    run.result->p50_ms = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    run.result->min_ms = t.front();
    run.result->max_ms = t.back();
  }
}

}  // namespace

Comparison compare_schedulers(const Graph& graph, const Platform& platform, std::shared_ptr<const CostModel> cost,
                              const std::string& db_path, const CompareOptions& options) {
  if (options.measure && (options.rounds < 1 || options.warmups < 0))
    throw Error(ErrorCode::kUsage, fmt::format("compare: expected rounds >= 1 and warmups >= 0, got {} and {}",
                                               options.rounds, options.warmups));
  std::vector<std::string> names = options.schedulers;
  if (names.empty())
    for (const auto& [name, summary] : scheduler_names()) names.push_back(name);
  for (const std::string& name : names) make_scheduler(name);  // unknown names fail before any work

  Comparison comparison;
  MakespanLowerBound bound = makespan_lower_bound(graph, platform, *cost);
  comparison.lower_bound_ms = bound.us / 1e3;
  comparison.critical_path_ms = bound.critical_path_us / 1e3;
  comparison.capacity_ms = bound.capacity_us / 1e3;

  // Baselines: each device alone, and the union of the CPU core groups
  // (its own platform, with its own profile).
  std::vector<std::shared_ptr<const Plan>> baseline_plans;
  std::vector<const Platform*> baseline_platforms;
  std::vector<std::shared_ptr<const CostModel>> baseline_costs;
  for (const PlatformDevice& device : platform.devices) {
    if (!device.supports_all(graph)) continue;  // an NPU alone cannot run the model
    auto plan = std::make_shared<const Plan>(sequential_plan(graph, platform, *cost, device.name));
    comparison.sequential.push_back({device.name, simulate(*plan, graph, platform, *cost).makespan_us / 1e3, {}});
    baseline_plans.push_back(plan);
    baseline_platforms.push_back(&platform);
    baseline_costs.push_back(cost);
  }
  Platform union_platform;
  std::string union_device = cpu_union_device(platform);
  if (!union_device.empty()) {
    union_platform = make_platform(union_device, "");
    auto union_cost = open_cost_model(union_platform, db_path, nullptr);
    auto plan = std::make_shared<const Plan>(sequential_plan(graph, union_platform, *union_cost, union_device));
    comparison.sequential.push_back(
        {union_device, simulate(*plan, graph, union_platform, *union_cost).makespan_us / 1e3, {}});
    baseline_plans.push_back(plan);
    baseline_platforms.push_back(&union_platform);
    baseline_costs.push_back(union_cost);
  }
  if (comparison.sequential.empty())
    throw Error(ErrorCode::kUnsupported,
                fmt::format("compare: no device of platform '{}' runs the whole model alone", platform.name));

  for (size_t i = 0; i < names.size(); ++i) {
    int n_steps = static_cast<int>(names.size()) + (options.measure ? options.warmups + options.rounds : 0);
    if (options.progress) options.progress(static_cast<int>(i), n_steps, "planning: " + names[i]);
    SchedulerOutcome outcome;
    outcome.name = names[i];
    ScheduleOptions schedule_options;
    schedule_options.seed = options.seed;
    try {
      auto start = Clock::now();
      Plan plan = make_scheduler(names[i])->schedule(graph, platform, *cost, schedule_options);
      outcome.plan_ms = ms_since(start);
      validate_plan(plan, graph, platform);
      outcome.predicted_ms = simulate(plan, graph, platform, *cost).makespan_us / 1e3;
      outcome.plan = std::make_shared<const Plan>(std::move(plan));
    } catch (const Error& e) {
      outcome.error = e.what();
    }
    comparison.schedulers.push_back(std::move(outcome));
  }

  if (options.measure) {
    std::vector<Runnable> runs;
    for (size_t b = 0; b < baseline_plans.size(); ++b)
      runs.push_back({std::make_unique<Executor>(graph, *baseline_plans[b], *baseline_platforms[b], baseline_costs[b]),
                      &comparison.sequential[b].measured, {}});
    for (SchedulerOutcome& outcome : comparison.schedulers)
      if (outcome.plan)
        runs.push_back({std::make_unique<Executor>(graph, *outcome.plan, platform, cost), &outcome.measured, {}});
    measure(runs, random_inputs(graph, options.seed), options, static_cast<int>(names.size()));
  }

  const SequentialBaseline* best = nullptr;
  auto time_of = [](const SequentialBaseline& b) { return b.measured.p50_ms >= 0 ? b.measured.p50_ms : b.predicted_ms; };
  for (const SequentialBaseline& b : comparison.sequential)
    if (!best || time_of(b) < time_of(*best)) best = &b;
  comparison.best_sequential_device = best->device;
  comparison.best_sequential_ms = time_of(*best);
  return comparison;
}

}  // namespace hetsched
