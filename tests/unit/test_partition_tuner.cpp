// The "partition-tuner" scheduler: its dynamic program along a chain against
// brute force, fusion decided by fused-group costs, the single-device
// fallback, and its plans on zoo models run against the sequential plan.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "plan_test_util.h"
#include "kernel_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "sched/branches.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using testing::schedule;

using testing::expect_same_outputs;

using Join = ChainProblem::Join;
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms";

// ---------------------------------------------------------------- the dynamic program

// The accounting of branches.h, written out op by op for one assignment:
// +inf when the assignment breaks a rule (a fused op on another device than
// the previous one, outside a unit, after an op that neither begins the unit
// nor is fused; a kMust op not fused) or a cost is infinite.
double chain_cost(const ChainProblem& p, const std::vector<int>& device, const std::vector<bool>& fused) {
  double finish = 0;
  for (int i = 0; i < p.n_ops; ++i) {
    int d = device[i];
    if (fused[i]) {
      if (i == 0 || p.join[i] == Join::kNever || device[i - 1] != d) return kInf;
      if (p.join[i - 1] != Join::kNever && !fused[i - 1]) return kInf;
      finish = std::max(finish, p.in_ready[i]) + p.fused_step[i][d] + p.in_us[i][d];
    } else {
      if (p.join[i] == Join::kMust) return kInf;
      double start = std::max(p.free_at[d], p.in_ready[i]);
      if (i > 0) start = std::max(start, finish);
      double link = i > 0 && device[i - 1] != d ? p.link_us[i][device[i - 1]][d] : 0;
      finish = start + p.alone[i][d] + p.in_us[i][d] + link;
    }
    if (!std::isfinite(finish)) return kInf;
  }
  return finish;
}

// The least chain_cost over every device and fused flag of every op.
double brute_force(const ChainProblem& p) {
  double best = kInf;
  std::vector<int> device(p.n_ops, 0);
  std::vector<bool> fused(p.n_ops, false);
  std::function<void(int)> visit = [&](int i) {
    if (i == p.n_ops) {
      best = std::min(best, chain_cost(p, device, fused));
      return;
    }
    for (int d = 0; d < p.n_devices; ++d)
      for (bool f : {false, true}) {
        device[i] = d;
        fused[i] = f;
        visit(i + 1);
      }
  };
  visit(0);
  return best;
}

ChainProblem random_chain(std::mt19937& rng, int n, int nd) {
  std::uniform_real_distribution<double> unit(0, 1);
  auto maybe_inf = [&](double value, double p_inf) { return unit(rng) < p_inf ? kInf : value; };
  ChainProblem p;
  p.n_ops = n;
  p.n_devices = nd;
  for (int i = 0; i < n; ++i) {
    double r = unit(rng);
    p.join.push_back(i == 0 ? Join::kNever : (r < 0.4 ? Join::kNever : (r < 0.85 ? Join::kMay : Join::kMust)));
    std::vector<double> alone, fused_step, in_us;
    for (int d = 0; d < nd; ++d) {
      alone.push_back(maybe_inf(1 + 99 * unit(rng), 0.15));
      // A fused group may cost less than its first ops alone (the roofline
      // stops counting an intermediate value): steps can be negative.
      fused_step.push_back(maybe_inf(-5 + 65 * unit(rng), 0.1));
      in_us.push_back(maybe_inf(20 * unit(rng), 0.05));
    }
    p.alone.push_back(alone);
    p.fused_step.push_back(fused_step);
    p.in_us.push_back(in_us);
    p.in_ready.push_back(unit(rng) < 0.5 ? 0 : 150 * unit(rng));
    std::vector<std::vector<double>> link(nd, std::vector<double>(nd, 0));
    for (int a = 0; a < nd; ++a)
      for (int b = 0; b < nd; ++b)
        if (a != b) link[a][b] = maybe_inf(40 * unit(rng), 0.1);
    p.link_us.push_back(link);
  }
  for (int d = 0; d < nd; ++d) p.free_at.push_back(unit(rng) < 0.3 ? 0 : 100 * unit(rng));
  return p;
}

TEST(PartitionTunerDp, EqualsBruteForceOnShortChains) {
  std::mt19937 rng(20230401);
  int solved = 0, unsolvable = 0, fused_somewhere = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int n = 1 + trial % 5, nd = 1 + (trial / 5) % 3;
    ChainProblem p = random_chain(rng, n, nd);
    double best = brute_force(p);
    SCOPED_TRACE(fmt::format("trial {}: {} ops on {} devices", trial, n, nd));
    if (!std::isfinite(best)) {
      try {
        solve_chain(p);
        ADD_FAILURE() << "no finite assignment exists, yet the DP found one";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      }
      ++unsolvable;
      continue;
    }
    ChainSolution s = solve_chain(p);
    EXPECT_NEAR(s.makespan, best, 1e-9);
    EXPECT_NEAR(chain_cost(p, s.device, s.fused), s.makespan, 1e-9);
    EXPECT_DOUBLE_EQ(s.finish.back(), s.makespan);
    for (int i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(s.table[i][s.device[i]][s.fused[i]], s.finish[i]) << "op " << i;
    fused_somewhere += std::count(s.fused.begin(), s.fused.end(), true) > 0;
    ++solved;
  }
  // The draw covers both outcomes and fusion is actually chosen.
  EXPECT_GT(solved, 300);
  EXPECT_GT(unsolvable, 0);
  EXPECT_GT(fused_somewhere, 50);
}

TEST(PartitionTunerDp, FusionPaysTheGroupOnceAndSwitchingPaysTheLink) {
  // Conv then its Relu (one unit), then Sigmoid; device 0 an accelerator
  // with a 50 us launch cost, device 1 a CPU.
  ChainProblem p;
  p.n_ops = 3;
  p.n_devices = 2;
  p.join = {Join::kNever, Join::kMay, Join::kNever};
  p.alone = {{150, 10000}, {50, 6}, {kInf, 6}};
  p.fused_step = {{kInf, kInf}, {0.5, 1}, {kInf, kInf}};
  p.in_us = {{0, 0}, {0, 0}, {0, 0}};
  p.in_ready = {0, 0, 0};
  p.link_us = {{{0, 0}, {0, 0}}, {{0, 3}, {3, 0}}, {{0, 4}, {4, 0}}};
  p.free_at = {0, 0};
  ChainSolution s = solve_chain(p);
  // Fused on the accelerator: 150 + 0.5; then Sigmoid on the CPU: + 4 + 6.
  EXPECT_EQ(s.device, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(s.fused, (std::vector<bool>{false, true, false}));
  EXPECT_DOUBLE_EQ(s.makespan, 160.5);
  // The alternatives the reasons quote: Relu alone on the accelerator
  // (150 + 50) or on the CPU (150 + 3 + 6).
  EXPECT_DOUBLE_EQ(s.table[1][0][0], 200);
  EXPECT_DOUBLE_EQ(s.table[1][1][0], 159);
  // A busy accelerator moves the whole chain to the CPU.
  p.free_at = {20000, 0};
  s = solve_chain(p);
  EXPECT_EQ(s.device, (std::vector<int>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(s.makespan, 10000 + 1 + 6);
}

TEST(PartitionTunerDp, RejectsMalformedProblems) {
  ChainProblem p;
  p.n_ops = 1;
  p.n_devices = 1;
  p.join = {Join::kMay};
  p.alone = {{1}};
  p.fused_step = {{1}};
  p.in_us = {{0}};
  p.in_ready = {0};
  p.link_us = {{{0}}};
  p.free_at = {0};
  try {
    solve_chain(p);
    FAIL() << "a first op fused with nothing was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
  }
  p.join = {Join::kNever};
  p.alone = {{1}, {2}};
  EXPECT_THROW(solve_chain(p), Error);
}

// ---------------------------------------------------------------- the scheduler on hand-built graphs

ValueId add_value(Graph& g, const std::string& name, Shape shape) {
  return testing::add_float_value(g, name, std::move(shape));
}

PlatformDevice emulated(const std::string& name, double peak_gflops, double bandwidth_gbps, double overhead_us) {
  PlatformDevice d;
  d.name = name;
  d.kind = DeviceKind::kEmulated;
  d.model_kind = "cpu";
  d.peak_gflops = peak_gflops;
  d.bandwidth_gbps = bandwidth_gbps;
  d.launch_overhead_us = overhead_us;
  d.signature = "test-" + name;
  return d;
}

// x, w -> Conv 'conv' -> Relu 'relu' -> Sigmoid 'sigmoid' -> y: Conv and
// Relu are one fusion unit. FLOPs set by hand.
Graph conv_relu_sigmoid() {
  Graph g;
  g.name = "conv_relu_sigmoid";
  g.source = "test:conv_relu_sigmoid";
  ValueId x = add_value(g, "x", {1, 3, 8, 8}), w = add_value(g, "w", {4, 3, 1, 1});
  ValueId c = add_value(g, "c", {1, 4, 8, 8}), r = add_value(g, "r", {1, 4, 8, 8}), y = add_value(g, "y", {1, 4, 8, 8});
  testing::add_op(g, "Conv", "conv", {x, w}, {c});
  testing::add_op(g, "Relu", "relu", {c}, {r});
  testing::add_op(g, "Sigmoid", "sigmoid", {r}, {y});
  g.inputs = {x, w};
  g.outputs = {y};
  g.finalize();
  g.nodes[g.find_node("conv")].cost = NodeCost{1e8, 0, 0};
  g.nodes[g.find_node("relu")].cost = NodeCost{1e4, 0, 0};
  g.nodes[g.find_node("sigmoid")].cost = NodeCost{1e4, 0, 0};
  return g;
}

const std::string& device_of(const Plan& plan, const Graph& g, const std::string& node) {
  return plan.devices[plan.placement[g.find_node(node)].device];
}

// The launches of a plan, as sets of node names.
std::set<std::set<std::string>> launches_of(const Plan& plan, const Graph& g) {
  std::set<std::set<std::string>> out;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& step : lane.steps)
      if (step.kind == StepKind::kLaunch) {
        std::set<std::string> names;
        for (NodeId id : step.nodes) names.insert(g.nodes[id].name);
        out.insert(names);
      }
  return out;
}

bool has_note(const Plan& plan, const std::string& text) {
  return std::any_of(plan.notes.begin(), plan.notes.end(),
                     [&](const std::string& note) { return note.find(text) != std::string::npos; });
}

TEST(PartitionTunerScheduler, FusesConvAndReluOnTheAcceleratorWhereItRunsBoth) {
  Graph g = conv_relu_sigmoid();
  ASSERT_EQ(fusion_units(g).size(), 2u);
  Platform platform;
  platform.name = "acc-cpu";
  platform.devices = {emulated("emu:acc", 1000, 1000, 50), emulated("emu:cpu", 10, 1000, 5)};
  platform.devices[0].ops = {"Conv", "Relu"};
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("partition-tuner", g, platform, *cost);
  // Fused on the accelerator: one 50 us launch for both instead of two.
  EXPECT_EQ(launches_of(plan, g), (std::set<std::set<std::string>>{{"conv", "relu"}, {"sigmoid"}}));
  EXPECT_EQ(device_of(plan, g, "conv"), "emu:acc");
  EXPECT_EQ(device_of(plan, g, "sigmoid"), "emu:cpu");
  const std::string& why = plan.placement[g.find_node("relu")].reason;
  EXPECT_EQ(why.rfind("partition-tuner: branch 0, ops 1-2 of 3 fused on emu:acc: finish ", 0), 0u) << why;
  EXPECT_NE(why.find("on emu:cpu 0.156 ms"), std::string::npos) << why;   // the Relu moved to the CPU
  EXPECT_NE(why.find("not fused 0.200 ms"), std::string::npos) << why;    // a second accelerator launch
  EXPECT_NEAR(plan.predicted_ms, simulate(plan, g, platform, *cost).makespan_us / 1000, 1e-12);

  // An accelerator without Relu gets the Conv alone.
  platform.devices[0].ops = {"Conv"};
  auto cost2 = make_roofline_cost_model(platform);
  Plan split = schedule("partition-tuner", g, platform, *cost2);
  EXPECT_EQ(launches_of(split, g), (std::set<std::set<std::string>>{{"conv"}, {"relu"}, {"sigmoid"}}));
  EXPECT_EQ(device_of(split, g, "conv"), "emu:acc");
  EXPECT_EQ(device_of(split, g, "relu"), "emu:cpu");
  EXPECT_NE(split.placement[g.find_node("relu")].reason.find("emu:acc cannot run it"), std::string::npos)
      << split.placement[g.find_node("relu")].reason;
}

// Independent Relus reading x, each a graph output.
Graph independent(const std::vector<std::string>& nodes) {
  Graph g;
  g.name = "independent";
  g.source = "test:independent";
  ValueId x = add_value(g, "x", {1, 4});
  g.inputs = {x};
  for (const std::string& name : nodes) {
    ValueId out = add_value(g, name + "_out", {1, 4});
    testing::add_op(g, "Relu", name, {x}, {out});
    g.outputs.push_back(out);
  }
  g.finalize();
  return g;
}

TEST(PartitionTunerScheduler, ParallelBranchesSpreadOverTheDevices) {
  // Two equal independent branches on two equal devices: the second sees
  // the first device busy and takes the other.
  Graph g = independent({"p", "q"});
  for (NodeId id = 0; id < 2; ++id) g.nodes[id].cost = NodeCost{1e6, 0, 0};
  Platform platform;
  platform.name = "twins";
  platform.devices = {emulated("emu:a", 1, 1000, 0), emulated("emu:b", 1, 1000, 0)};
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("partition-tuner", g, platform, *cost);
  EXPECT_EQ(device_of(plan, g, "p"), "emu:a");
  EXPECT_EQ(device_of(plan, g, "q"), "emu:b");
  EXPECT_NEAR(plan.predicted_ms, 1.0, 1e-9);
  EXPECT_NE(plan.placement[g.find_node("q")].reason.find("(alternatives at op 1: on emu:a 2.000 ms)"),
            std::string::npos)
      << plan.placement[g.find_node("q")].reason;
}

TEST(PartitionTunerScheduler, FallsBackToTheBestSingleDevice) {
  // Memory-bound Relus of 3 MB and 2.7 MB on two CPU clusters sharing a
  // 35 GB/s bus: the DP puts the second on little (180 us, before big
  // would finish it at 190), but side by side the pair takes about 209 us.
  Graph g = independent({"first", "second"});
  g.nodes[g.find_node("first")].cost = NodeCost{0, 3e6, 0};
  g.nodes[g.find_node("second")].cost = NodeCost{0, 2.7e6, 0};
  Platform platform;
  platform.name = "shared-bus";
  platform.devices = {emulated("emu:big", 100, 30, 0), emulated("emu:little", 100, 15, 0)};
  for (PlatformDevice& d : platform.devices) d.shared_resource = "bus";
  platform.resources.push_back(SharedResource{"bus", 35});
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("partition-tuner", g, platform, *cost);
  EXPECT_EQ(device_of(plan, g, "first"), "emu:big");
  EXPECT_EQ(device_of(plan, g, "second"), "emu:big");
  EXPECT_NEAR(plan.predicted_ms, 0.190, 1e-9);
  EXPECT_EQ(plan.placement[0].reason.rfind("partition-tuner: all on emu:big: 0.190 ms alone beats the partitioned "
                                           "plan's 0.209 ms",
                                           0),
            0u)
      << plan.placement[0].reason;
  EXPECT_TRUE(has_note(plan, "0.180 ms by its own model"));
  EXPECT_TRUE(has_note(plan, "alone beats"));
}

TEST(PartitionTunerScheduler, OneDominantDeviceTakesEverything) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform;
  platform.name = "fast-slow";
  platform.devices = {emulated("emu:slow", 1, 1, 100), emulated("emu:fast", 1000, 500, 1)};
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("partition-tuner", g, platform, *cost);
  for (const Placement& p : plan.placement) EXPECT_EQ(plan.devices[p.device], "emu:fast");
  Plan sequential = schedule("sequential", g, platform, *cost);
  EXPECT_NEAR(plan.predicted_ms, simulate(sequential, g, platform, *cost).makespan_us / 1000, 1e-9);
}

TEST(PartitionTunerScheduler, GoogleNetOnAPhoneUsesTheNpuAndTheCpus) {
  Graph g = load_model("zoo:googlenet");
  Platform platform = make_platform("", kPlatforms + "/phone-soc.json");
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("partition-tuner", g, platform, *cost);
  EXPECT_EQ(plan.scheduler, "partition-tuner");
  std::set<std::string> devices;
  for (const Placement& p : plan.placement) {
    EXPECT_EQ(p.reason.rfind("partition-tuner: branch ", 0), 0u) << p.reason;
    devices.insert(plan.devices[p.device]);
  }
  EXPECT_TRUE(devices.count("emu:npu"));
  EXPECT_TRUE(devices.count("emu:big"));
  EXPECT_NEAR(plan.predicted_ms, simulate(plan, g, platform, *cost).makespan_us / 1000, 1e-9);
  Plan sequential = schedule("sequential", g, platform, *cost);
  EXPECT_LE(plan.predicted_ms, simulate(sequential, g, platform, *cost).makespan_us / 1000 * (1 + 1e-9));
  EXPECT_TRUE(has_note(plan, "branches (chains of fusion units between forks and joins)"));
}

TEST(PartitionTunerScheduler, ProfileUnitsAreTheFusedGroupsShortOfAWholeUnit) {
  Graph g = load_model("zoo:resnet18");
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  std::set<std::vector<NodeId>> expected;
  for (auto unit : fusion_units(g))
    for (size_t k = 2; k < unit.size(); ++k) expected.insert(std::vector<NodeId>(unit.begin(), unit.begin() + k));
  ASSERT_FALSE(expected.empty()) << "resnet18 has Conv + Add + Relu units";
  auto proposed = make_scheduler("partition-tuner")->profile_units(g, platform);
  EXPECT_EQ(std::set<std::vector<NodeId>>(proposed.begin(), proposed.end()), expected);
  for (const auto& group : proposed) {
    EXPECT_EQ(g.nodes[group[0]].op_type, "Conv");
    EXPECT_EQ(g.nodes[group[1]].op_type, "Add");
  }
}

// ---------------------------------------------------------------- zoo models, executed

TEST(PartitionTunerScheduler, ZooPlansRunAndMatchTheSequentialPlan) {
  testing::expect_zoo_plans_match_sequential("partition-tuner", {{"squeezenet1_0", "phone-soc", {}},
                                                                 {"squeezenet1_0", "cpu-dsa", {}},
                                                                 {"bert", "desktop-gpu", {{"layers", "2"}, {"seq", "16"}}}},
                                             9);
}

TEST(PartitionTunerScheduler, PlansBertInUnderASecond) {
  for (const char* name : {"phone-soc", "desktop-gpu"})
    EXPECT_LT(testing::seconds_to_plan_bert("partition-tuner", name), 1.0) << name;
}

TEST(PartitionTunerScheduler, RejectsParameters) {
  Graph g = independent({"p"});
  g.annotate_costs();
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  auto cost = make_roofline_cost_model(platform);
  ScheduleOptions options;
  options.params["device"] = "emu:gpu";
  try {
    make_scheduler("partition-tuner")->schedule(g, platform, *cost, options);
    FAIL() << "a parameter was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("'device'"), std::string::npos) << e.what();
  }
}

TEST(PartitionTunerScheduler, IsRegistered) {
  auto names = scheduler_names();
  EXPECT_EQ(names.count("partition-tuner"), 1u);
  EXPECT_EQ(names.count("duet"), 1u);
}

}  // namespace
}  // namespace hetsched
