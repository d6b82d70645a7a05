// The on-chip partition pass (src/sched/onchip_partition.h): growth under
// the capacity, units the device cannot run, the acyclicity rule, properties
// on zoo models checked independently (cover, capacity, convexity, the cost
// model charging each group as one kernel); the `partition=onchip`
// parameter of heft, peft and optimal (predicted makespans and DSA launches
// against plain heft, plans run against the sequential plan, bad
// parameters); and real CPU core groups' on-chip bytes from their L2 caches.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "plan_test_util.h"
#include "kernel_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "sched/onchip_partition.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using testing::schedule;

const std::string kCpuDsa = std::string(HETSCHED_SOURCE_DIR) + "/platforms/cpu-dsa.json";
constexpr int64_t kMiB = 1 << 20;

// ---------------------------------------------------------------- helpers

// A float32 [1, n] value: 4n bytes.
ValueId add_value(Graph& g, const std::string& name, int64_t floats = kMiB / 4) {
  return testing::add_float_value(g, name, {1, floats});
}

NodeId add_op(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs,
              std::vector<ValueId> outputs) {
  return testing::add_op(g, op, name, std::move(inputs), std::move(outputs));
}

Graph finished(Graph g) {
  g.finalize();
  g.annotate_costs();
  return g;
}

// x -> a -> b -> c -> d -> y, element-wise ops (each its own fusion unit),
// every value 1 MiB.
Graph chain(const std::vector<std::string>& ops = {"Relu", "Sigmoid", "Tanh", "Relu"}) {
  Graph g;
  g.name = "chain";
  g.source = "test:chain";
  ValueId in = add_value(g, "x");
  g.inputs = {in};
  const char* names[] = {"a", "b", "c", "d"};
  for (size_t i = 0; i < ops.size(); ++i) {
    ValueId out = add_value(g, std::string(names[i]) + "_out");
    add_op(g, ops[i], names[i], {in}, {out});
    in = out;
  }
  g.outputs = {in};
  return finished(std::move(g));
}

PlatformDevice accelerator(int64_t onchip_bytes, std::vector<std::string> ops = {}) {
  PlatformDevice d;
  d.name = "emu:acc";
  d.kind = DeviceKind::kEmulated;
  d.model_kind = "dsa";
  d.peak_gflops = 1000;
  d.bandwidth_gbps = 100;
  d.launch_overhead_us = 10;
  d.onchip_bytes = onchip_bytes;
  d.ops = std::move(ops);
  d.signature = "test-acc";
  return d;
}

std::vector<std::set<std::string>> group_names(const Graph& g, const std::vector<std::vector<NodeId>>& groups) {
  std::vector<std::set<std::string>> out;
  for (const auto& group : groups) {
    std::set<std::string> names;
    for (NodeId id : group) names.insert(g.nodes[id].name);
    out.push_back(names);
  }
  return out;
}

using Names = std::vector<std::set<std::string>>;

// ---------------------------------------------------------------- the rule, on hand-built graphs

TEST(OnchipPartition, ChainGrowsUntilTheOnChipMemoryIsFull) {
  Graph g = chain();
  // a..c pass 2 MiB between them (a_out, b_out); d would add c_out, 3 MiB.
  EXPECT_EQ(group_names(g, onchip_partition(g, accelerator(5 * kMiB / 2))), (Names{{"a", "b", "c"}, {"d"}}));
  EXPECT_EQ(group_names(g, onchip_partition(g, accelerator(3 * kMiB))), (Names{{"a", "b", "c", "d"}}));
  // Less than one value: nothing can be grouped.
  EXPECT_EQ(group_names(g, onchip_partition(g, accelerator(kMiB - 1))), (Names{{"a"}, {"b"}, {"c"}, {"d"}}));
}

TEST(OnchipPartition, UnitsTheDeviceCannotRunStayAlone) {
  Graph g = chain({"Relu", "Tanh", "Relu", "Sigmoid"});
  PlatformDevice acc = accelerator(64 * kMiB, {"Relu", "Sigmoid"});
  // b (Tanh) splits the chain; nothing joins it.
  EXPECT_EQ(group_names(g, onchip_partition(g, acc)), (Names{{"a"}, {"b"}, {"c", "d"}}));
}

TEST(OnchipPartition, NeverGroupsAcrossAUnitOutsideTheGroup) {
  // a -> b -> c and a -> c: {a, c} around b would depend on b and b on it.
  auto diamond = [] {
    Graph g;
    g.name = "diamond";
    g.source = "test:diamond";
    ValueId x = add_value(g, "x"), a = add_value(g, "a_out"), b = add_value(g, "b_out"), c = add_value(g, "c_out");
    add_op(g, "Relu", "a", {x}, {a});
    add_op(g, "Tanh", "b", {a}, {b});
    add_op(g, "Add", "c", {a, b}, {c});
    g.inputs = {x};
    g.outputs = {c};
    return finished(std::move(g));
  };
  Graph g = diamond();
  EXPECT_EQ(group_names(g, onchip_partition(g, accelerator(64 * kMiB, {"Relu", "Add"}))),
            (Names{{"a"}, {"b"}, {"c"}}));
  // When the device runs b too, all three are one convex group.
  EXPECT_EQ(group_names(g, onchip_partition(g, accelerator(64 * kMiB, {"Relu", "Add", "Tanh"}))),
            (Names{{"a", "b", "c"}}));
}

TEST(OnchipPartition, JoinsTheGroupItReadsTheMostFrom) {
  // a and b are independent; c reads 1 MiB from a and 4 KiB from b.
  Graph g;
  g.name = "join";
  g.source = "test:join";
  ValueId x = add_value(g, "x"), a = add_value(g, "a_out"), b = add_value(g, "b_out", 1024),
          c = add_value(g, "c_out");
  add_op(g, "Sigmoid", "b", {x}, {b});
  add_op(g, "Relu", "a", {x}, {a});
  add_op(g, "Add", "c", {b, a}, {c});
  g.inputs = {x};
  g.outputs = {c};
  g = finished(std::move(g));
  auto groups = group_names(g, onchip_partition(g, accelerator(64 * kMiB)));
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (Names{{"a", "c"}, {"b"}}));
  // With room for b's value only, c joins b instead.
  groups = group_names(g, onchip_partition(g, accelerator(kMiB - 1)));
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (Names{{"a"}, {"b", "c"}}));
}

TEST(OnchipPartition, NoOnChipMemoryGivesTheFusionUnitsBack) {
  Graph g = load_model("zoo:googlenet");
  EXPECT_EQ(onchip_partition(g, accelerator(0)), fusion_units(g));
  // Given units come back as given.
  std::vector<std::vector<NodeId>> by_node;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) by_node.push_back({id});
  EXPECT_EQ(onchip_partition(g, accelerator(0), by_node), by_node);
}

TEST(OnchipPartition, RefusesUnitsThatDoNotCoverTheGraph) {
  Graph g = chain();
  auto units = fusion_units(g);
  units.pop_back();
  try {
    onchip_partition(g, accelerator(kMiB), units);
    FAIL() << "units leaving out a node were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("'d'"), std::string::npos) << e.what();
  }
  units = fusion_units(g);
  std::swap(units[0], units[1]);
  EXPECT_THROW(onchip_partition(g, accelerator(kMiB), units), Error);
}

// ---------------------------------------------------------------- zoo models, checked independently

// Values passed between two fusion units of `group`, recomputed from the
// graph: produced in the group, read in the group by another fusion unit.
double bytes_between_units(const Graph& g, const std::vector<NodeId>& group, const std::vector<int>& fusion_of) {
  std::set<NodeId> members(group.begin(), group.end());
  double bytes = 0;
  for (NodeId id : group)
    for (ValueId v : g.nodes[id].outputs) {
      if (v == kNoValue) continue;
      for (NodeId reader : g.values[v].consumers)
        if (members.count(reader) && fusion_of[reader] != fusion_of[id]) {
          bytes += static_cast<double>(shape_numel(g.values[v].shape) * dtype_size(g.values[v].dtype));
          break;
        }
    }
  return bytes;
}

// The groups contracted form a DAG (Kahn's algorithm consumes every group).
bool contraction_is_acyclic(const Graph& g, const std::vector<std::vector<NodeId>>& groups) {
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i)
    for (NodeId id : groups[i]) group_of[id] = static_cast<int>(i);
  std::vector<std::set<int>> succ(groups.size());
  std::vector<int> in_degree(groups.size(), 0);
  for (size_t i = 0; i < groups.size(); ++i)
    for (NodeId id : groups[i])
      for (ValueId v : g.nodes[id].outputs)
        if (v != kNoValue)
          for (NodeId reader : g.values[v].consumers)
            if (group_of[reader] != static_cast<int>(i) && succ[i].insert(group_of[reader]).second)
              ++in_degree[group_of[reader]];
  std::queue<int> ready;
  for (size_t i = 0; i < groups.size(); ++i)
    if (in_degree[i] == 0) ready.push(static_cast<int>(i));
  size_t done = 0;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop();
    ++done;
    for (int s : succ[i])
      if (--in_degree[s] == 0) ready.push(s);
  }
  return done == groups.size();
}

// No path leaves the group and comes back (node level).
bool is_convex(const Graph& g, const std::vector<NodeId>& group) {
  std::set<NodeId> members(group.begin(), group.end());
  std::vector<bool> seen(g.nodes.size(), false);
  std::vector<NodeId> stack;
  auto push_readers = [&](NodeId id) {
    for (ValueId v : g.nodes[id].outputs)
      if (v != kNoValue)
        for (NodeId reader : g.values[v].consumers)
          if (!members.count(reader) && !seen[reader]) {
            seen[reader] = true;
            stack.push_back(reader);
          }
  };
  for (NodeId id : group) push_readers(id);
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    for (ValueId v : g.nodes[id].outputs)
      if (v != kNoValue)
        for (NodeId reader : g.values[v].consumers)
          if (members.count(reader)) return false;
    push_readers(id);
  }
  return true;
}

TEST(OnchipPartition, ZooGroupsFitCoverOnceAndStayConvex) {
  Platform platform = make_platform("", kCpuDsa);
  const PlatformDevice& dsa = platform.devices[platform.find_device("emu:dsa")];
  ASSERT_EQ(dsa.onchip_bytes, 32 * kMiB);
  auto cost = make_roofline_cost_model(platform);
  LoadOptions small_bert;
  small_bert.zoo_params = {{"layers", "2"}, {"seq", "32"}};
  for (const std::string model : {"googlenet", "squeezenet1_0", "resnet18", "bert"}) {
    SCOPED_TRACE(model);
    Graph g = load_model("zoo:" + model, model == "bert" ? small_bert : LoadOptions{});
    auto units = fusion_units(g);
    std::vector<int> fusion_of(g.nodes.size(), -1);
    for (size_t u = 0; u < units.size(); ++u)
      for (NodeId id : units[u]) fusion_of[id] = static_cast<int>(u);
    auto groups = onchip_partition(g, dsa);

    std::vector<int> seen(g.nodes.size(), 0);
    for (const auto& group : groups)
      for (NodeId id : group) ++seen[id];
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; })) << "every node exactly once";
    EXPECT_TRUE(contraction_is_acyclic(g, groups));
    EXPECT_LT(groups.size(), units.size()) << "nothing was grouped";

    int multi = 0;
    for (const auto& group : groups) {
      std::set<int> members;
      for (NodeId id : group) members.insert(fusion_of[id]);
      if (members.size() < 2) continue;
      ++multi;
      std::string what = g.nodes[group[0]].label();
      EXPECT_TRUE(std::is_sorted(group.begin(), group.end())) << what;
      EXPECT_TRUE(is_convex(g, group)) << what;
      for (NodeId id : group) EXPECT_TRUE(dsa.supports(g.nodes[id])) << g.nodes[id].label();
      double between = bytes_between_units(g, group, fusion_of);
      EXPECT_GT(between, 0) << what;
      EXPECT_LE(between, static_cast<double>(dsa.onchip_bytes)) << what;
      // The cost model agrees: one kernel, one launch overhead, traffic at
      // the boundary only.
      double flops = 0;
      for (NodeId id : group) flops += g.nodes[id].cost.flops;
      double one_kernel_us = dsa.launch_overhead_us + std::max(flops / (dsa.peak_gflops * 1e3),
                                                               launch_bytes(g, group) / (dsa.bandwidth_gbps * 1e3));
      EXPECT_NEAR(cost->launch(g, group, dsa).us, one_kernel_us, 1e-9 * one_kernel_us) << what;
    }
    EXPECT_GT(multi, 0);
    std::printf("%s: %zu fusion units -> %zu on-chip groups for emu:dsa (%d of several units)\n", model.c_str(),
                units.size(), groups.size(), multi);
  }
}

// ---------------------------------------------------------------- the partition parameter

int launches_on(const Plan& plan, const std::string& device) {
  int n = 0;
  for (const Lane& lane : plan.lanes)
    if (plan.devices[lane.device] == device)
      for (const PlanStep& step : lane.steps) n += step.kind == StepKind::kLaunch;
  return n;
}

bool has_note(const Plan& plan, const std::string& text) {
  return std::any_of(plan.notes.begin(), plan.notes.end(),
                     [&](const std::string& note) { return note.find(text) != std::string::npos; });
}

TEST(OnchipPartition, HeftWithOnChipGroupsIsNoSlowerAndLaunchesLessOnTheDsa) {
  Platform platform = make_platform("", kCpuDsa);
  auto cost = make_roofline_cost_model(platform);
  for (const std::string model : {"googlenet", "inception_v3"}) {
    SCOPED_TRACE(model);
    Graph g = load_model("zoo:" + model);
    Plan plain = schedule("heft", g, platform, *cost);
    Plan grouped = schedule("heft", g, platform, *cost, {{"partition", "onchip"}});
    double plain_ms = simulate(plain, g, platform, *cost).makespan_us / 1000;
    double grouped_ms = simulate(grouped, g, platform, *cost).makespan_us / 1000;
    int plain_dsa = launches_on(plain, "emu:dsa"), grouped_dsa = launches_on(grouped, "emu:dsa");
    std::printf("%s on cpu-dsa: heft %.3f ms simulated, %d launches (%d on emu:dsa); heft partition=onchip "
                "%.3f ms, %d launches (%d on emu:dsa)\n",
                model.c_str(), plain_ms, plain.n_launches(), plain_dsa, grouped_ms, grouped.n_launches(),
                grouped_dsa);
    EXPECT_LE(grouped_ms, plain_ms);
    EXPECT_GT(grouped_dsa, 0);
    EXPECT_LT(grouped_dsa, plain_dsa);
    EXPECT_LT(grouped.n_launches(), plain.n_launches());
  }

  Graph g = load_model("zoo:googlenet");
  Plan plain = schedule("heft", g, platform, *cost);
  Plan grouped = schedule("heft", g, platform, *cost, {{"partition", "onchip"}});
  // The plan says which partition made its launch units.
  EXPECT_TRUE(has_note(grouped, "on-chip groups for emu:dsa")) << fmt::format("{}", fmt::join(grouped.notes, "\n"));
  EXPECT_FALSE(has_note(plain, "on-chip groups"));
  bool reason_names_group = std::any_of(grouped.placement.begin(), grouped.placement.end(), [](const Placement& p) {
    return p.reason.find("on-chip group of") != std::string::npos;
  });
  EXPECT_TRUE(reason_names_group);
  // partition=none is the plain plan.
  Plan none = schedule("heft", g, platform, *cost, {{"partition", "none"}});
  EXPECT_EQ(plan_to_json(none, g), plan_to_json(plain, g));
}

TEST(OnchipPartition, PeftAndOptimalTakeTheGroupsToo) {
  Platform platform = make_platform("", kCpuDsa);
  auto cost = make_roofline_cost_model(platform);
  Graph g = load_model("zoo:googlenet");
  const PlatformDevice& dsa = platform.devices[platform.find_device("emu:dsa")];
  size_t n_groups = onchip_partition(g, dsa).size();
  Plan peft = schedule("peft", g, platform, *cost, {{"partition", "onchip"}});
  EXPECT_TRUE(has_note(peft, fmt::format("-> {} launch units", n_groups)));
  EXPECT_EQ(static_cast<size_t>(peft.n_launches()), n_groups);

  // optimal: a chain of element-wise units on a DSA with 2.5 MiB on chip is
  // two groups, so two tasks (within max_tasks=2, which the four fusion
  // units are not).
  Graph c = chain();
  Platform two;
  two.name = "two";
  two.devices.push_back(accelerator(5 * kMiB / 2));
  PlatformDevice cpu = accelerator(0);
  cpu.name = "emu:cpu";
  cpu.signature = "test-cpu";
  cpu.peak_gflops = 10;
  two.devices.push_back(cpu);
  auto two_cost = make_roofline_cost_model(two);
  EXPECT_THROW(schedule("optimal", c, two, *two_cost, {{"max_tasks", "2"}}), Error);
  Plan optimal = schedule("optimal", c, two, *two_cost, {{"max_tasks", "2"}, {"partition", "onchip"}});
  EXPECT_EQ(optimal.n_launches(), 2);
  EXPECT_TRUE(has_note(optimal, "4 fusion units -> 2 launch units"));
}

TEST(OnchipPartition, PlansWithGroupsRunAndMatchTheSequentialPlan) {
  Platform platform = make_platform("", kCpuDsa);
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(platform);
  Graph g = load_model("zoo:squeezenet1_0");
  std::set<std::vector<NodeId>> fusion;
  for (auto unit : fusion_units(g)) {
    std::sort(unit.begin(), unit.end());
    fusion.insert(unit);
  }
  TensorMap inputs = random_inputs(g, 5);
  std::vector<LaunchAssignment> sequential;
  for (auto& unit : fusion_units(g)) sequential.push_back({unit, 0, 0, "test"});
  TensorMap want = Executor(g, build_plan(g, platform, sequential, "sequential"), platform, cost).run(inputs);

  // heft puts squeezenet's groups on the CPU (the Concats between them
  // would cross PCIe each time), peft some on the DSA.
  int grouped_on_dsa = 0;
  for (const std::string scheduler : {"heft", "peft"}) {
    SCOPED_TRACE(scheduler);
    Plan plan = schedule(scheduler, g, platform, *cost, {{"partition", "onchip"}});
    for (const Lane& lane : plan.lanes)
      for (const PlanStep& step : lane.steps) {
        if (step.kind != StepKind::kLaunch || plan.devices[lane.device] != "emu:dsa") continue;
        std::vector<NodeId> nodes = step.nodes;
        std::sort(nodes.begin(), nodes.end());
        grouped_on_dsa += !fusion.count(nodes);
      }
    TensorMap got = Executor(g, plan, platform, cost).run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      ASSERT_EQ(got.at(name).shape(), t.shape()) << name;
      EXPECT_LE(testing::relative_error(got.at(name), t), 1e-5) << name;
    }
  }
  // A group of several fusion units ran on the DSA as one launch, or the
  // test would not exercise one.
  EXPECT_GT(grouped_on_dsa, 0);
}

void expect_usage_error(const std::string& scheduler, const Graph& g, const Platform& p, const CostModel& cost,
                        std::map<std::string, std::string> params, const std::string& message) {
  try {
    schedule(scheduler, g, p, cost, params);
    ADD_FAILURE() << scheduler << ": bad parameters accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(OnchipPartition, BadPartitionParametersAreUsageErrors) {
  Platform platform = make_platform("", kCpuDsa);
  auto cost = make_roofline_cost_model(platform);
  Graph g = chain();
  for (const std::string scheduler : {"heft", "peft", "optimal"}) {
    SCOPED_TRACE(scheduler);
    expect_usage_error(scheduler, g, platform, *cost, {{"partition", "greedy"}}, "partition='greedy'");
    expect_usage_error(scheduler, g, platform, *cost, {{"partition", "onchip"}, {"partition_device", "emu:npu"}},
                       "partition_device='emu:npu' is not a device");
    expect_usage_error(scheduler, g, platform, *cost, {{"partition", "onchip"}, {"partition_device", "emu:cpu"}},
                       "no on-chip memory");
    expect_usage_error(scheduler, g, platform, *cost, {{"partition_device", "emu:dsa"}}, "needs partition=onchip");
    expect_usage_error(scheduler, g, platform, *cost, {{"partition", "onchip"}, {"grouping", "x"}},
                       "unknown parameter 'grouping'");
  }
}

TEST(OnchipPartition, WithoutOnChipMemoryTheFusionUnitsStayAndTheNotesSaySo) {
  Platform platform = make_platform("", std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json");
  auto cost = make_roofline_cost_model(platform);
  Graph g = load_model("zoo:squeezenet1_0");
  Plan grouped = schedule("heft", g, platform, *cost, {{"partition", "onchip"}});
  EXPECT_EQ(grouped.n_launches(), schedule("heft", g, platform, *cost).n_launches());
  EXPECT_TRUE(has_note(grouped, "no device of this platform has on-chip memory"));
  EXPECT_TRUE(make_scheduler("heft")->profile_units(g, platform).empty());
}

TEST(OnchipPartition, HeftProposesItsGroupsForProfiling) {
  Platform platform = make_platform("", kCpuDsa);
  Graph g = load_model("zoo:squeezenet1_0");
  std::set<std::vector<NodeId>> fusion;
  for (auto unit : fusion_units(g)) {
    std::sort(unit.begin(), unit.end());
    fusion.insert(unit);
  }
  std::set<std::vector<NodeId>> expected;
  for (const auto& group : onchip_partition(g, platform.devices[platform.find_device("emu:dsa")]))
    if (!fusion.count(group)) expected.insert(group);
  ASSERT_FALSE(expected.empty());
  auto proposed = make_scheduler("heft")->profile_units(g, platform);
  EXPECT_EQ(std::set<std::vector<NodeId>>(proposed.begin(), proposed.end()), expected);
  auto all = all_profile_units(g, platform);
  for (const auto& group : proposed) EXPECT_NE(std::find(all.begin(), all.end(), group), all.end());
}

// ---------------------------------------------------------------- real CPU core groups

TEST(OnchipPartition, CpuCoreGroupsGetTheL2CachesTheirCoresCover) {
  MachineInfo machine = describe_machine();
  const CacheInfo* l2 = nullptr;
  for (const CacheInfo& cache : machine.caches)
    if (cache.level == 2) l2 = &cache;
  int first = machine.usable_cores.at(0);
  Platform one = make_platform("cpu:" + std::to_string(first), "");
  Platform all = make_platform("cpu", "");
  if (!l2) {
    EXPECT_EQ(one.devices[0].onchip_bytes, 0);
    GTEST_SKIP() << "hwloc reports no L2 cache here";
  }
  // Each usable core is served by exactly one instance.
  for (int core : machine.usable_cores) {
    int serving = 0;
    for (const auto& served : l2->instances) serving += static_cast<int>(std::count(served.begin(), served.end(), core));
    EXPECT_EQ(serving, 1) << "core " << core;
  }
  // One core: exactly one L2 instance.
  EXPECT_EQ(one.devices[0].onchip_bytes, l2->size_bytes);
  // Every usable core: each instance serving one of them, counted once.
  std::set<int> instances_used;
  for (int core : machine.usable_cores)
    for (size_t i = 0; i < l2->instances.size(); ++i)
      if (std::count(l2->instances[i].begin(), l2->instances[i].end(), core)) instances_used.insert(static_cast<int>(i));
  ASSERT_FALSE(instances_used.empty());
  EXPECT_EQ(all.devices[0].onchip_bytes, static_cast<int64_t>(instances_used.size()) * l2->size_bytes);
  int64_t sharing = std::max(1, l2->n_sharing_cores);
  EXPECT_GE(static_cast<int64_t>(instances_used.size()),
            (static_cast<int64_t>(machine.usable_cores.size()) + sharing - 1) / sharing);
  std::printf("L2 %lld bytes, %zu instances over %zu usable cores; cpu:%d has %lld on-chip bytes, cpu %lld\n",
              l2->size_bytes, l2->instances.size(), machine.usable_cores.size(), first,
              static_cast<long long>(one.devices[0].onchip_bytes), static_cast<long long>(all.devices[0].onchip_bytes));

  // Derived from the machine: neither the device's nor the platform's
  // signature depends on it (stored profiles and plans stay valid).
  Platform changed = one;
  changed.devices[0].onchip_bytes = 0;
  EXPECT_EQ(changed.signature(), one.signature());
  EXPECT_EQ(one.devices[0].signature.find("onchip"), std::string::npos);
}

}  // namespace
}  // namespace hetsched
