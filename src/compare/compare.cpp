// Comparing schedulers (see hetsched/compare.h).
#include "hetsched/compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "hetsched/choose.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/profile.h"
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

}  // namespace

namespace {

// The real devices alone that measured more than `tolerance` off their
// prediction, each with the fraction it was off (measured / predicted - 1).
std::vector<std::pair<const SequentialBaseline*, double>> drifted_baselines(const Comparison& comparison,
                                                                            const Platform& platform,
                                                                            double tolerance) {
  std::vector<std::pair<const SequentialBaseline*, double>> drifted;
  for (const SequentialBaseline& b : comparison.sequential) {
    int d = platform.find_device(b.device);  // -1: the union of the CPU core groups, a real device
    if ((d >= 0 && platform.devices[d].is_emulated()) || b.predicted_ms <= 0 || b.measured.p50_ms <= 0) continue;
    double off = b.measured.p50_ms / b.predicted_ms - 1;
    if (std::abs(off) > tolerance) drifted.emplace_back(&b, off);
  }
  return drifted;
}

}  // namespace

std::vector<std::string> prediction_drift_notes(const Comparison& comparison, const Platform& platform,
                                                double tolerance) {
  std::vector<std::string> notes;
  for (auto [b, off] : drifted_baselines(comparison, platform, tolerance))
    notes.push_back(fmt::format(
        "{} alone measured {:.3f} ms where {:.3f} ms was predicted ({:+.0f}%), so its predictions here are off by "
        "about as much: its profile is incomplete, or the machine runs {} than when it was profiled (`hetsched "
        "profile` measures what is missing, with --force everything again)",
        b->device, b->measured.p50_ms, b->predicted_ms, 100 * off, off > 0 ? "slower" : "faster"));
  return notes;
}

namespace {

// Comparison::marked_stale: each device prediction_drift_notes names gets
// its entries for the graph's units marked stale (mark_profile_stale).
void mark_drifted_profiles_stale(Comparison& comparison, const Graph& graph, const Platform& platform,
                                 const Platform& union_platform, const std::string& db_path) {
  for (auto [b, off] : drifted_baselines(comparison, platform, kPredictionDriftTolerance)) {
    const Platform& home = platform.find_device(b->device) >= 0 ? platform : union_platform;
    if (mark_profile_stale(db_path, home, b->device, graph) > 0) comparison.marked_stale.push_back(b->device);
  }
}

}  // namespace

// No union when nodes are pinned: a device the user did not name would run
// them.
std::string cpu_union_device(const Platform& platform) {
  if (!platform.pinned.empty()) return "";
  DeviceSpec all;
  int n_groups = 0;
  for (const PlatformDevice& device : platform.devices) {
    if (device.kind != DeviceKind::kCpu) continue;
    ++n_groups;
    all.cores.insert(all.cores.end(), device.cores.begin(), device.cores.end());
  }
  if (n_groups < 2) return "";
  std::sort(all.cores.begin(), all.cores.end());
  all.cores.erase(std::unique(all.cores.begin(), all.cores.end()), all.cores.end());
  // A platform holding the union device already measures it alone.
  if (platform.find_device(all.name()) >= 0) return "";
  return all.name();
}

namespace {

// A plan to run, and where its measurement (and with keep_traces its
// timeline) goes.
struct Runnable {
  std::unique_ptr<Executor> executor;
  Measurement* result = nullptr;
  std::vector<double> times_ms;  // per timed round, in round order
  const Graph* graph = nullptr;
  const Platform* platform = nullptr;
  Trace* trace = nullptr;             // null: keep no timeline
  std::vector<RunTimeline> timelines;  // per timed round, when `trace` is set
};

// Progress counts planning each scheduler, then each measuring round.
void measure(std::vector<Runnable>& runs, const TensorMap& inputs, const CompareOptions& options, int n_planned) {
  int total = options.warmups + options.rounds;
  for (int round = 0; round < total; ++round) {
    if (options.progress)
      options.progress(n_planned + round, n_planned + total, fmt::format("measuring: round {} of {}", round + 1, total));
    bool timed = round >= options.warmups;
    for (size_t k = 0; k < runs.size(); ++k) {
      // Rotated: each plan runs after each other one in turn, not always
      // after the same one (whose caches and threads it would inherit).
      Runnable& run = runs[(k + static_cast<size_t>(round)) % runs.size()];
      // A timed run comes right after untimed ones of the same plan, as in
      // a session's back-to-back runs (rewarm, choose.h): timed right after
      // another plan, every plan ran 15-25% slower than alone.
      if (timed) rewarm(*run.executor, inputs);
      // Every plan records its steps' times or none does, so that the
      // (small) cost of recording hits all alike.
      RunTimeline timeline;
      auto start = Clock::now();
      run.executor->run(inputs, options.keep_traces ? &timeline : nullptr);
      if (!timed) continue;
      run.times_ms.push_back(ms_since(start));
      if (run.trace) run.timelines.push_back(std::move(timeline));
    }
  }
  for (Runnable& run : runs) {
    std::vector<double> t = run.times_ms;
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    run.result->p50_ms = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    run.result->min_ms = t.front();
    run.result->max_ms = t.back();
    if (!run.trace) continue;
    // The timeline kept is the median round's (with an even count, the
    // round closest to the median): a typical run, not the luckiest.
    size_t median_round = 0;
    for (size_t r = 1; r < n; ++r)
      if (std::abs(run.times_ms[r] - run.result->p50_ms) < std::abs(run.times_ms[median_round] - run.result->p50_ms))
        median_round = r;
    *run.trace = timeline_trace(run.timelines[median_round], run.executor->plan(), *run.graph, *run.platform);
    run.timelines.clear();
  }
}

Runnable runnable(const Graph& graph, const Plan& plan, const Platform& platform,
                  std::shared_ptr<const CostModel> cost, Measurement& result, Trace& trace,
                  const CompareOptions& options) {
  Runnable run;
  run.executor = std::make_unique<Executor>(graph, plan, platform, std::move(cost));
  run.result = &result;
  run.graph = &graph;
  run.platform = &platform;
  if (options.keep_traces) run.trace = &trace;
  return run;
}

SequentialBaseline simulated_baseline(const std::string& device, const Plan& plan, const Graph& graph,
                                      const Platform& platform, const CostModel& cost, const CompareOptions& options) {
  SimOptions sim_options;
  sim_options.trace = options.keep_traces;
  SimResult predicted = simulate(plan, graph, platform, cost, sim_options);
  SequentialBaseline baseline;
  baseline.device = device;
  baseline.predicted_ms = predicted.makespan_us / 1e3;
  if (options.keep_traces) baseline.predicted_trace = std::move(predicted.trace);
  return baseline;
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

  // Baselines: each device alone, and the union of the CPU core groups
  // (its own platform, with its own profile).
  std::vector<std::shared_ptr<const Plan>> baseline_plans;
  std::vector<const Platform*> baseline_platforms;
  std::vector<std::shared_ptr<const CostModel>> baseline_costs;
  for (const PlatformDevice& device : platform.devices) {
    if (!device.supports_all_unpinned(graph)) continue;  // an NPU alone cannot run the model
    auto plan = std::make_shared<const Plan>(sequential_plan(graph, platform, *cost, device.name));
    comparison.sequential.push_back(simulated_baseline(device.name, *plan, graph, platform, *cost, options));
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
        simulated_baseline(union_device, *plan, graph, union_platform, *union_cost, options));
    baseline_plans.push_back(plan);
    baseline_platforms.push_back(&union_platform);
    baseline_costs.push_back(union_cost);
  }
  if (comparison.sequential.empty())
    throw Error(ErrorCode::kUnsupported,
                fmt::format("compare: no device of platform '{}' runs the whole model alone", platform.name));

  // auto plans with the union device beside the core groups, as a Session
  // gives it: serial stretches on all cores, branches on the groups.
  auto compared = std::make_shared<const Platform>(platform);
  std::shared_ptr<const Platform> auto_platform = compared;
  std::shared_ptr<const CostModel> auto_cost = cost;
  if (std::find(names.begin(), names.end(), "auto") != names.end() && !union_device.empty()) {
    Platform wide = platform_with_cpu_union(platform);
    if (wide.devices.size() > platform.devices.size()) {
      auto_cost = open_cost_model(wide, db_path, nullptr);
      auto_platform = std::make_shared<const Platform>(std::move(wide));
    }
  }
  // The bound covers what any plan compared may use: with auto, the union.
  MakespanLowerBound bound = makespan_lower_bound(graph, *auto_platform, *auto_cost);
  comparison.lower_bound_ms = bound.us / 1e3;
  comparison.critical_path_ms = bound.critical_path_us / 1e3;
  comparison.capacity_ms = bound.capacity_us / 1e3;
  comparison.combined_ms = bound.combined_us / 1e3;

  for (size_t i = 0; i < names.size(); ++i) {
    int n_steps = static_cast<int>(names.size()) + (options.measure ? options.warmups + options.rounds : 0);
    if (options.progress) options.progress(static_cast<int>(i), n_steps, "planning: " + names[i]);
    SchedulerOutcome outcome;
    outcome.name = names[i];
    outcome.platform = names[i] == "auto" ? auto_platform : compared;
    const Platform& on = *outcome.platform;
    outcome.cost = names[i] == "auto" ? auto_cost : cost;
    const CostModel& outcome_cost = *outcome.cost;
    ScheduleOptions schedule_options;
    schedule_options.seed = options.seed;
    try {
      auto start = Clock::now();
      Plan plan = make_scheduler(names[i])->schedule(graph, on, outcome_cost, schedule_options);
      outcome.plan_ms = ms_since(start);
      validate_plan(plan, graph, on);
      SimOptions sim_options;
      sim_options.trace = options.keep_traces;
      SimResult predicted = simulate(plan, graph, on, outcome_cost, sim_options);
      outcome.predicted_ms = predicted.makespan_us / 1e3;
      if (options.keep_traces) outcome.predicted_trace = std::move(predicted.trace);
      outcome.plan = std::make_shared<const Plan>(std::move(plan));
    } catch (const Error& e) {
      outcome.error = e.what();
    }
    comparison.schedulers.push_back(std::move(outcome));
  }

  if (options.measure) {
    std::vector<Runnable> runs;
    for (size_t b = 0; b < baseline_plans.size(); ++b)
      runs.push_back(runnable(graph, *baseline_plans[b], *baseline_platforms[b], baseline_costs[b],
                              comparison.sequential[b].measured, comparison.sequential[b].measured_trace, options));
    for (SchedulerOutcome& outcome : comparison.schedulers)
      if (outcome.plan)
        runs.push_back(runnable(graph, *outcome.plan, *outcome.platform, outcome.cost, outcome.measured,
                                outcome.measured_trace, options));
    measure(runs, random_inputs(graph, options.seed), options, static_cast<int>(names.size()));
    mark_drifted_profiles_stale(comparison, graph, platform, union_platform, db_path);
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
