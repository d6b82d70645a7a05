// Scheduling, simulating and running plans in tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hetsched/cost_model.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "kernel_test_util.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "sim/simulator.h"

namespace hetsched::testing {

// `scheduler`'s plan with `params`, which must pass validate_plan().
inline Plan schedule(const std::string& scheduler, const Graph& g, const Platform& p, const CostModel& cost,
                     std::map<std::string, std::string> params = {}) {
  ScheduleOptions options;
  options.params = std::move(params);
  Plan plan = make_scheduler(scheduler)->schedule(g, p, cost, options);
  validate_plan(plan, g, p);
  return plan;
}

inline double simulated_ms(const Plan& plan, const Graph& g, const Platform& p, const CostModel& cost) {
  return simulate(plan, g, p, cost).makespan_us / 1e3;
}

// Runs `plan` and the plan of every fusion unit in order on the platform's
// first device (which must run every node) on the same random inputs, and
// expects the same outputs.
inline void expect_plan_matches_sequential(const Graph& g, const Plan& plan, const Platform& p,
                                           std::shared_ptr<const CostModel> cost, const std::string& what,
                                           uint64_t seed = 5) {
  TensorMap inputs = random_inputs(g, seed);
  std::vector<LaunchAssignment> sequential;
  for (auto& unit : fusion_units(g)) sequential.push_back({unit, 0, 0, "sequential"});
  TensorMap want = Executor(g, build_plan(g, p, sequential, "sequential"), p, cost).run(inputs);
  expect_same_outputs(Executor(g, plan, p, cost).run(inputs), want, what);
}

// A zoo model on a shipped platform (platforms/NAME.json).
struct ZooCase {
  const char* model;
  const char* platform;
  std::map<std::string, std::string> zoo_params;
};

// For each case: `scheduler`'s plan (roofline costs) spreads over more than
// one device, so that crossings are exercised, and gives the sequential
// plan's outputs.
inline void expect_zoo_plans_match_sequential(const std::string& scheduler, const std::vector<ZooCase>& cases,
                                              uint64_t seed = 5) {
  for (const ZooCase& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " on " + c.platform);
    LoadOptions load;
    load.zoo_params = c.zoo_params;
    Graph g = load_model(std::string("zoo:") + c.model, load);
    Platform platform = make_platform("", std::string(HETSCHED_SOURCE_DIR) + "/platforms/" + c.platform + ".json");
    std::shared_ptr<const CostModel> cost = make_roofline_cost_model(platform);
    Plan plan = schedule(scheduler, g, platform, *cost);
    std::set<int> used;
    for (const Placement& p : plan.placement) used.insert(p.device);
    EXPECT_GT(used.size(), 1u) << "a one-device plan would not test the crossings";
    expect_plan_matches_sequential(g, plan, platform, cost, scheduler, seed);
  }
}

// Seconds `scheduler` takes to plan zoo:bert (12 layers) on a shipped
// platform, printed with its prediction.
inline double seconds_to_plan_bert(const std::string& scheduler, const std::string& platform_name) {
  Graph g = load_model("zoo:bert");
  Platform platform = make_platform("", std::string(HETSCHED_SOURCE_DIR) + "/platforms/" + platform_name + ".json");
  auto cost = make_roofline_cost_model(platform);
  auto begin = std::chrono::steady_clock::now();
  Plan plan = schedule(scheduler, g, platform, *cost);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf("%s on bert (%zu nodes), %s: planned in %.3f s, predicted %.3f ms\n", scheduler.c_str(),
              g.nodes.size(), platform_name.c_str(), seconds, plan.predicted_ms);
  return seconds;
}

// An emulated device "emu:NAME" whose peak compute is far above what a
// Relu needs: a chain of Relus takes its bytes / `gbps`, so which of two
// such devices is faster is known in advance.
inline PlatformDevice emulated_device(const std::string& name, double gbps) {
  PlatformDevice d;
  d.name = "emu:" + name;
  d.kind = DeviceKind::kEmulated;
  d.model_kind = "cpu";
  d.peak_gflops = 1000;
  d.bandwidth_gbps = gbps;
  d.launch_overhead_us = 1;
  d.signature = "test-" + name;
  return d;
}

}  // namespace hetsched::testing
