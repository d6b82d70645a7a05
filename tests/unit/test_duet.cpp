// The "duet" scheduler: its coarse partition (chains, forks and joins,
// small subgraphs merged to shrink the cut, an acyclic contraction), the
// greedy placement and its correction by simulation, the single-device
// fallback, and its plans on zoo models run against the sequential plan.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
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
using testing::simulated_ms;

using testing::expect_same_outputs;

const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms";

ValueId add_value(Graph& g, const std::string& name, Shape shape = {1, 64}) {
  return testing::add_float_value(g, name, std::move(shape));
}

NodeId add_op(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs,
              std::vector<ValueId> outputs) {
  return testing::add_op(g, op, name, std::move(inputs), std::move(outputs));
}

// Sets a node's FLOPs (and no bytes): the tests choose the numbers.
void set_flops(Graph& g, const std::string& node, double flops) {
  NodeCost& cost = g.nodes[g.find_node(node)].cost;
  cost = NodeCost{flops, 0, 0};
}

// x -> a -> b, then b forks into c1 -> c2 and d, joined by e -> f -> y.
Graph fork_join() {
  Graph g;
  g.name = "fork_join";
  g.source = "test:fork_join";
  ValueId x = add_value(g, "x"), a = add_value(g, "a"), b = add_value(g, "b"), c1 = add_value(g, "c1"),
          c2 = add_value(g, "c2"), d = add_value(g, "d"), e = add_value(g, "e"), y = add_value(g, "y");
  add_op(g, "Relu", "a", {x}, {a});
  add_op(g, "Sigmoid", "b", {a}, {b});
  add_op(g, "Tanh", "c1", {b}, {c1});
  add_op(g, "Exp", "c2", {c1}, {c2});
  add_op(g, "Neg", "d", {b}, {d});
  add_op(g, "Add", "e", {c2, d}, {e});
  add_op(g, "Relu", "f", {e}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

std::set<std::string> names(const Graph& g, const std::vector<NodeId>& nodes) {
  std::set<std::string> out;
  for (NodeId id : nodes) out.insert(g.nodes[id].name);
  return out;
}

std::set<std::set<std::string>> subgraph_names(const Graph& g, const DuetPartition& part) {
  std::set<std::set<std::string>> out;
  for (const auto& sg : part.subgraphs) out.insert(names(g, sg));
  return out;
}

// Each value's bytes once per subgraph other than its producer's reading it.
double cut_bytes(const Graph& g, const std::vector<int>& subgraph_of) {
  double bytes = 0;
  for (const Value& v : g.values) {
    if (v.producer == kNoNode || v.is_constant()) continue;
    std::set<int> readers;
    for (NodeId c : v.consumers)
      if (subgraph_of[c] != subgraph_of[v.producer]) readers.insert(subgraph_of[c]);
    bytes += v.nbytes() * static_cast<double>(readers.size());
  }
  return bytes;
}

// Every node in exactly one subgraph, subgraph_of agreeing, and every
// dependency between subgraphs going forward in the listed order — so the
// contraction is a DAG and the list one of its topological orders.
void expect_sound_partition(const Graph& g, const DuetPartition& part) {
  ASSERT_EQ(part.subgraph_of.size(), g.nodes.size());
  std::vector<int> seen(g.nodes.size(), 0);
  for (size_t s = 0; s < part.subgraphs.size(); ++s) {
    EXPECT_FALSE(part.subgraphs[s].empty());
    EXPECT_TRUE(std::is_sorted(part.subgraphs[s].begin(), part.subgraphs[s].end()));
    for (NodeId id : part.subgraphs[s]) {
      ++seen[id];
      EXPECT_EQ(part.subgraph_of[id], static_cast<int>(s)) << g.nodes[id].label();
    }
  }
  for (size_t id = 0; id < g.nodes.size(); ++id) EXPECT_EQ(seen[id], 1) << g.nodes[id].label();
  for (const Node& node : g.nodes)
    for (ValueId v : node.inputs) {
      if (v == kNoValue || g.values[v].producer == kNoNode) continue;
      EXPECT_LE(part.subgraph_of[g.values[v].producer], part.subgraph_of[g.find_node(node.name)])
          << g.values[v].name << " flows backwards";
    }
  EXPECT_DOUBLE_EQ(part.cut_bytes, cut_bytes(g, part.subgraph_of));
}

// Two emulated devices in host memory, no shared resource: compute-bound
// Relus take exactly flops / peak on them.
Platform two_devices(double peak_a_gflops, double peak_b_gflops) {
  Platform p;
  p.name = "two";
  for (auto [name, peak] : {std::make_pair("emu:a", peak_a_gflops), std::make_pair("emu:b", peak_b_gflops)}) {
    PlatformDevice d;
    d.name = name;
    d.kind = DeviceKind::kEmulated;
    d.model_kind = "cpu";
    d.peak_gflops = peak;
    d.bandwidth_gbps = 1000;
    d.signature = std::string("test-") + name;
    p.devices.push_back(d);
  }
  return p;
}

// Independent Relus reading x, each a graph output, with the given FLOPs.
Graph independent(const std::vector<std::pair<std::string, double>>& flops) {
  Graph g;
  g.name = "independent";
  g.source = "test:independent";
  ValueId x = add_value(g, "x", {1, 4});
  g.inputs = {x};
  for (const auto& [name, f] : flops) {
    ValueId out = add_value(g, name + "_out", {1, 4});
    add_op(g, "Relu", name, {x}, {out});
    g.outputs.push_back(out);
  }
  g.finalize();
  for (const auto& [name, f] : flops) set_flops(g, name, f);
  return g;
}

const std::string& device_of(const Plan& plan, const Graph& g, const std::string& node) {
  return plan.devices[plan.placement[g.find_node(node)].device];
}

bool has_note(const Plan& plan, const std::string& text) {
  return std::any_of(plan.notes.begin(), plan.notes.end(),
                     [&](const std::string& note) { return note.find(text) != std::string::npos; });
}

// ---------------------------------------------------------------- partition

TEST(DuetPartition, MergesChainsAndSplitsAtForksAndJoins) {
  Graph g = fork_join();
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  DuetPartition part = duet_partition(g, platform, 0);  // nothing is small
  expect_sound_partition(g, part);
  // a -> b is a chain ending at the fork b; c1 -> c2 is one branch, d the
  // other; the join e starts the last chain.
  EXPECT_EQ(subgraph_names(g, part), (std::set<std::set<std::string>>{{"a", "b"}, {"c1", "c2"}, {"d"}, {"e", "f"}}));
  EXPECT_EQ(part.n_units, 7);
  EXPECT_EQ(part.n_chains, 4);
  EXPECT_EQ(part.n_merges, 0);
  // b's 256 bytes read by two subgraphs, c2's and d's once each.
  EXPECT_DOUBLE_EQ(part.chain_cut_bytes, 4 * 256.0);
  EXPECT_DOUBLE_EQ(part.cut_bytes, part.chain_cut_bytes);
}

TEST(DuetPartition, SplitsAChainWhereTheDevicesRunningItChange) {
  Graph g = fork_join();
  // phone-soc's NPU runs Relu but not Sigmoid, Add or the branches' ops: a
  // and b go apart, so that the NPU keeps a, and so do e and f.
  Platform platform = make_platform("", kPlatforms + "/phone-soc.json");
  DuetPartition part = duet_partition(g, platform, 0);
  expect_sound_partition(g, part);
  EXPECT_NE(part.subgraph_of[g.find_node("a")], part.subgraph_of[g.find_node("b")]);
  EXPECT_NE(part.subgraph_of[g.find_node("e")], part.subgraph_of[g.find_node("f")]);
  EXPECT_EQ(part.subgraph_of[g.find_node("c1")], part.subgraph_of[g.find_node("c2")]);
}

TEST(DuetPartition, MergingSmallSubgraphsShrinksTheCut) {
  Graph g = fork_join();
  // The branch d is light, the rest heavy: d is merged into a neighbour.
  for (const char* node : {"a", "b", "c1", "c2", "e", "f"}) set_flops(g, node, 1e6);
  set_flops(g, "d", 1e3);
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  DuetPartition chains_only = duet_partition(g, platform, 0);
  DuetPartition merged = duet_partition(g, platform, 0.05);
  expect_sound_partition(g, merged);
  EXPECT_EQ(merged.n_chains, chains_only.n_chains);
  EXPECT_EQ(merged.n_merges, 1);
  EXPECT_EQ(merged.subgraphs.size(), chains_only.subgraphs.size() - 1);
  EXPECT_LT(merged.cut_bytes, chains_only.cut_bytes);
  // Merging d into its producer {a, b} saves b -> d; into {e, f} saves
  // d -> e: the same 256 bytes, and the lower index ({a, b}) wins the tie.
  EXPECT_EQ(merged.subgraph_of[g.find_node("d")], merged.subgraph_of[g.find_node("b")]);
  EXPECT_DOUBLE_EQ(merged.cut_bytes, chains_only.cut_bytes - 256);
  // Nothing under 5% but d: raising the bar to 50% merges everything.
  DuetPartition all = duet_partition(g, platform, 0.5);
  expect_sound_partition(g, all);
  EXPECT_LT(all.subgraphs.size(), merged.subgraphs.size());
  EXPECT_LE(all.cut_bytes, merged.cut_bytes);
}

TEST(DuetPartition, NeverMergesIntoACycle) {
  // s feeds x (16 bytes) and t (4 KiB); x feeds t. Merging s into t would
  // save the most bytes but close the cycle {s, t} -> x -> {s, t}: s goes
  // with x instead.
  Graph g;
  g.name = "cycle_guard";
  g.source = "test:cycle_guard";
  ValueId in = add_value(g, "in", {1, 4});
  ValueId to_x = add_value(g, "to_x", {1, 4}), to_t = add_value(g, "to_t", {1, 1024});
  ValueId x_out = add_value(g, "x_out", {1, 1024}), y = add_value(g, "y", {1, 1024});
  add_op(g, "Split", "s", {in}, {to_x, to_t});
  add_op(g, "Relu", "x", {to_x}, {x_out});
  add_op(g, "Add", "t", {x_out, to_t}, {y});
  g.inputs = {in};
  g.outputs = {y};
  g.finalize();
  set_flops(g, "s", 1);
  set_flops(g, "x", 1e6);
  set_flops(g, "t", 1e6);
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  DuetPartition part = duet_partition(g, platform, 0.1);
  expect_sound_partition(g, part);
  EXPECT_EQ(part.n_merges, 1);
  EXPECT_EQ(part.subgraph_of[g.find_node("s")], part.subgraph_of[g.find_node("x")]);
  EXPECT_NE(part.subgraph_of[g.find_node("s")], part.subgraph_of[g.find_node("t")]);
}

TEST(DuetPartition, SplitsAFusionUnitADeviceRunsOnlyInPart) {
  // BERT's projections are MatMul + bias Add fusion units; phone-soc's NPU
  // runs MatMul but not Add, so the MatMuls are taken apart from their Adds
  // (and the NPU can take them); on desktop-gpu both devices run both.
  LoadOptions load;
  load.zoo_params = {{"layers", "1"}, {"seq", "16"}};
  Graph g = load_model("zoo:bert", load);
  int matmul_add_units = 0;
  for (const auto& unit : fusion_units(g))
    if (unit.size() > 1 && g.nodes[unit[0]].op_type == "MatMul" && g.nodes[unit[1]].op_type == "Add") {
      ++matmul_add_units;
      for (const char* name : {"phone-soc", "desktop-gpu"}) {
        Platform platform = make_platform("", kPlatforms + "/" + name + ".json");
        DuetPartition part = duet_partition(g, platform, 0.02);
        bool together = part.subgraph_of[unit[0]] == part.subgraph_of[unit[1]];
        EXPECT_EQ(together, std::string(name) == "desktop-gpu") << name << ": " << g.nodes[unit[0]].label();
      }
    }
  EXPECT_GT(matmul_add_units, 0);
}

TEST(DuetPartition, ZooModelsPartitionSoundly) {
  Platform platform = make_platform("", kPlatforms + "/phone-soc.json");
  for (const char* model : {"googlenet", "inception_v3", "resnet18"}) {
    Graph g = load_model(std::string("zoo:") + model);
    DuetPartition chains_only = duet_partition(g, platform, 0);
    DuetPartition part = duet_partition(g, platform, 0.02);
    SCOPED_TRACE(model);
    expect_sound_partition(g, chains_only);
    expect_sound_partition(g, part);
    EXPECT_LT(part.subgraphs.size(), static_cast<size_t>(part.n_units)) << "no chain merged anything";
    EXPECT_LE(part.cut_bytes, part.chain_cut_bytes);
    EXPECT_EQ(chains_only.n_chains, part.n_chains);
  }
}

TEST(DuetScheduler, ProfileUnitsAreTheMultiUnitSubgraphs) {
  Graph g = load_model("zoo:googlenet");
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  DuetPartition part = duet_partition(g, platform, 0.02);
  std::set<std::vector<NodeId>> units;
  for (auto unit : fusion_units(g)) {
    std::sort(unit.begin(), unit.end());
    units.insert(unit);
  }
  std::set<std::vector<NodeId>> expected;
  for (const auto& sg : part.subgraphs)
    if (sg.size() > 1 && !units.count(sg)) expected.insert(sg);
  auto proposed = make_scheduler("duet")->profile_units(g, platform);
  EXPECT_FALSE(proposed.empty());
  EXPECT_EQ(std::set<std::vector<NodeId>>(proposed.begin(), proposed.end()), expected);
  // `hetsched profile` asks every scheduler: DUET's are among them.
  auto all = all_profile_units(g, platform);
  for (const auto& sg : proposed) EXPECT_NE(std::find(all.begin(), all.end(), sg), all.end());
}

// ---------------------------------------------------------------- placement

TEST(DuetScheduler, CorrectionSwapImprovesOnGreedy) {
  // emu:a is a little faster than emu:b. Greedy in topological order puts
  // `small` on a (500 us vs 556), then `big` on b (2222 us vs 500 + 2000 on
  // a): 2.222 ms. No single move helps, but swapping them gives b 556 us and
  // a 2000 us: 2.000 ms.
  Graph g = independent({{"small", 5e5}, {"big", 2e6}});
  Platform platform = two_devices(1, 0.9);
  auto cost = make_roofline_cost_model(platform);
  Plan greedy = schedule("duet", g, platform, *cost, {{"correction", "none"}});
  EXPECT_EQ(device_of(greedy, g, "small"), "emu:a");
  EXPECT_EQ(device_of(greedy, g, "big"), "emu:b");
  EXPECT_NEAR(greedy.predicted_ms, 2e6 / 0.9e6, 1e-6);
  EXPECT_NE(greedy.placement[g.find_node("small")].reason.find("earliest finish 0.500 ms on emu:a (emu:b would "
                                                               "finish at 0.556 ms)"),
            std::string::npos)
      << greedy.placement[g.find_node("small")].reason;

  for (const char* mode : {"first", "best"}) {
    SCOPED_TRACE(mode);
    Plan corrected = schedule("duet", g, platform, *cost, {{"correction", mode}});
    EXPECT_EQ(device_of(corrected, g, "small"), "emu:b");
    EXPECT_EQ(device_of(corrected, g, "big"), "emu:a");
    EXPECT_NEAR(corrected.predicted_ms, 2.0, 1e-6);
    EXPECT_NEAR(corrected.predicted_ms, simulated_ms(corrected, g, platform, *cost), 1e-9);
    const std::string& why = corrected.placement[g.find_node("big")].reason;
    EXPECT_NE(why.find("swapped by correction with subgraph 0 (emu:b <-> emu:a): makespan 2.222 ms -> 2.000 ms"),
              std::string::npos)
        << why;
    EXPECT_TRUE(has_note(corrected, "1 steps")) << fmt::format("{}", fmt::join(corrected.notes, "\n"));
  }
}

TEST(DuetScheduler, CorrectionNeverWorsensTheGreedyPlan) {
  struct Case {
    const char* model;
    const char* platform;
  };
  for (const Case& c : {Case{"googlenet", "phone-soc"}, Case{"squeezenet1_0", "desktop-gpu"},
                        Case{"resnet18", "cpu-dsa"}}) {
    SCOPED_TRACE(fmt::format("{} on {}", c.model, c.platform));
    Graph g = load_model(std::string("zoo:") + c.model);
    Platform platform = make_platform("", kPlatforms + "/" + c.platform + ".json");
    auto cost = make_roofline_cost_model(platform);
    Plan greedy = schedule("duet", g, platform, *cost, {{"correction", "none"}});
    double greedy_ms = simulated_ms(greedy, g, platform, *cost);
    EXPECT_NEAR(greedy.predicted_ms, greedy_ms, 1e-9);
    for (const char* mode : {"first", "best"}) {
      Plan corrected = schedule("duet", g, platform, *cost, {{"correction", mode}, {"max_evals", "60"}});
      double corrected_ms = simulated_ms(corrected, g, platform, *cost);
      EXPECT_NEAR(corrected.predicted_ms, corrected_ms, 1e-9);
      EXPECT_LE(corrected_ms, greedy_ms * (1 + 1e-9)) << mode;
    }
  }
}

TEST(DuetScheduler, ReasonsNameTheSubgraphAndTheDevices) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kPlatforms + "/phone-soc.json");
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("duet", g, platform, *cost);
  EXPECT_EQ(plan.scheduler, "duet");
  std::set<std::string> devices;
  for (const Placement& p : plan.placement) {
    EXPECT_EQ(p.reason.rfind("duet: subgraph ", 0), 0u) << p.reason;
    devices.insert(plan.devices[p.device]);
  }
  EXPECT_GT(devices.size(), 1u) << "squeezenet on a phone SoC should use its NPU and a CPU cluster";
  EXPECT_TRUE(has_note(plan, "subgraphs after")) << fmt::format("{}", fmt::join(plan.notes, "\n"));
  EXPECT_TRUE(has_note(plan, "correction (first-improvement"));
}

// A shared memory bus: two memory-bound launches side by side slow each
// other down, which the greedy model does not see.
Platform shared_bus() {
  Platform p;
  p.name = "shared-bus";
  for (auto [name, bandwidth] : {std::make_pair("emu:big", 30.0), std::make_pair("emu:little", 15.0)}) {
    PlatformDevice d;
    d.name = name;
    d.kind = DeviceKind::kEmulated;
    d.model_kind = "cpu";
    d.peak_gflops = 100;
    d.bandwidth_gbps = bandwidth;
    d.shared_resource = "bus";
    d.signature = std::string("test-") + name;
    p.devices.push_back(d);
  }
  p.resources.push_back(SharedResource{"bus", 35});
  return p;
}

// Two memory-bound Relus reading 3 MB and 2.7 MB.
Graph memory_bound_pair() {
  Graph g = independent({{"first", 0}, {"second", 0}});
  g.nodes[g.find_node("first")].cost.bytes_read = 3e6;
  g.nodes[g.find_node("second")].cost.bytes_read = 2.7e6;
  return g;
}

TEST(DuetScheduler, FallsBackToTheBestSingleDevice) {
  // Greedy: first on big (100 us), second on little (180 us, before big
  // would finish it at 190). Side by side on the bus (45 of 35 GB/s) the
  // pair takes about 209 us: big alone, 190 us, is better.
  Graph g = memory_bound_pair();
  Platform platform = shared_bus();
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("duet", g, platform, *cost, {{"correction", "none"}});
  EXPECT_EQ(device_of(plan, g, "first"), "emu:big");
  EXPECT_EQ(device_of(plan, g, "second"), "emu:big");
  EXPECT_NEAR(plan.predicted_ms, 0.190, 1e-9);
  EXPECT_NEAR(plan.predicted_ms, simulated_ms(plan, g, platform, *cost), 1e-9);
  EXPECT_NE(plan.placement[0].reason.find("duet: all on emu:big: 0.190 ms alone beats the partitioned plan's"),
            std::string::npos)
      << plan.placement[0].reason;
  EXPECT_TRUE(has_note(plan, "alone beats"));
  EXPECT_TRUE(has_note(plan, "0.180 ms by its own model"));  // the greedy's view

  // With the correction on, moving `second` to big is found by simulation.
  Plan corrected = schedule("duet", g, platform, *cost);
  EXPECT_EQ(device_of(corrected, g, "second"), "emu:big");
  EXPECT_NEAR(corrected.predicted_ms, 0.190, 1e-9);
}

TEST(DuetScheduler, OneDominantDeviceTakesEverything) {
  Graph g = independent({{"p", 1e6}, {"q", 1e6}, {"r", 1e6}});
  Platform platform = two_devices(10, 0.1);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule("duet", g, platform, *cost);
  for (const Placement& p : plan.placement) EXPECT_EQ(plan.devices[p.device], "emu:a");
  EXPECT_NEAR(plan.predicted_ms, 0.3, 1e-9);
}

// ---------------------------------------------------------------- zoo models, executed

TEST(DuetScheduler, ZooPlansRunAndMatchTheSequentialPlan) {
  testing::expect_zoo_plans_match_sequential(
      "duet", {{"squeezenet1_0", "cpu-dsa", {}}, {"bert", "phone-soc", {{"layers", "2"}, {"seq", "16"}}}});
}

TEST(DuetScheduler, PlansBertInUnderASecond) {
  for (const char* name : {"phone-soc", "desktop-gpu"}) EXPECT_LT(testing::seconds_to_plan_bert("duet", name), 1.0) << name;
}

// ---------------------------------------------------------------- parameters

TEST(DuetScheduler, RejectsBadParameters) {
  Graph g = fork_join();
  Platform platform = make_platform("", kPlatforms + "/desktop-gpu.json");
  auto cost = make_roofline_cost_model(platform);
  auto duet = make_scheduler("duet");
  std::vector<std::pair<std::string, std::string>> bad = {{"small", "abc"},       {"small", "1"},
                                                          {"small", "-0.1"},      {"small", "0.1x"},
                                                          {"correction", "some"}, {"max_evals", "-3"},
                                                          {"max_evals", "ten"},   {"streams", "2"}};
  for (const auto& [key, value] : bad) {
    ScheduleOptions options;
    options.params[key] = value;
    try {
      duet->schedule(g, platform, *cost, options);
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  Plan plan = schedule("duet", g, platform, *cost, {{"small", "0.5"}, {"correction", "best"}, {"max_evals", "0"}});
  EXPECT_TRUE(has_note(plan, "0 simulations"));
}

}  // namespace
}  // namespace hetsched
