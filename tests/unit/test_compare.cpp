// The makespan lower bound, `compare_schedulers` and `hetsched compare`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "graph_test_util.h"
#include "hetsched/compare.h"
#include "hetsched/cost_model.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"
#include "sched/lower_bound.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using testing::add_float_value;
using testing::add_op;
using testing::relu_chain;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms/";

PlatformDevice emulated(const std::string& name, double gflops) {
  PlatformDevice d;
  d.name = "emu:" + name;
  d.kind = DeviceKind::kEmulated;
  d.model_kind = "cpu";
  d.peak_gflops = gflops;
  d.bandwidth_gbps = gflops;  // Relu: 1 FLOP and 8 bytes per element, so memory-bound
  d.launch_overhead_us = 1;
  d.signature = "test-" + name;
  return d;
}

Platform two_devices(double fast_gflops, double slow_gflops) {
  Platform p;
  p.name = "two";
  p.devices = {emulated("fast", fast_gflops), emulated("slow", slow_gflops)};
  return p;
}

// Puts the second device in a memory space of its own ("acc"), linked to
// host memory both ways.
void second_in_own_memory(Platform& p, double latency_us, double bandwidth_gbps) {
  p.devices[1].memory_space = "acc";
  for (auto [from, to] : {std::pair{"host", "acc"}, std::pair{"acc", "host"}})
    p.links.push_back(Link{from, to, latency_us, bandwidth_gbps, "file"});
}

TEST(LowerBound, ChainIsTheSumOfItsNodesFloors) {
  // Relu after Relu, memory-bound, on devices without on-chip memory: each
  // value between them is written and read through memory in any plan, and
  // each Relu is its own kernel with its own overhead, so every node's
  // floor is its whole cost alone, and the chain on the faster device is
  // exactly the bound: the sequential plan there meets it. (The mean of
  // FLOPs and weights at peak, the floor before the memory view, gave less
  // than a tenth of it.)
  Graph g = relu_chain(3, 1 << 16);
  Platform p = two_devices(20, 5);
  auto cost = make_roofline_cost_model(p);
  double expected = 0, mean_floors = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) {
    expected += cost->launch(g, {id}, p.devices[0]).us;
    mean_floors += p.devices[0].launch_overhead_us + g.nodes[id].cost.flops / (20 * 1e3) / 2;
  }
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, expected, 1e-9 * expected);
  EXPECT_LE(bound.capacity_us, bound.critical_path_us + 1e-9);
  EXPECT_DOUBLE_EQ(bound.us, bound.critical_path_us);
  EXPECT_GT(bound.us, 10 * mean_floors);

  ScheduleOptions on_fast;
  on_fast.params["device"] = p.devices[0].name;
  Plan sequential = make_scheduler("sequential")->schedule(g, p, *cost, on_fast);
  EXPECT_NEAR(simulate(sequential, g, p, *cost).makespan_us, bound.us, 1e-9 * bound.us);
  for (const char* name : {"heft", "peft", "duet", "ios", "auto"}) {
    Plan plan = make_scheduler(name)->schedule(g, p, *cost, ScheduleOptions{});
    EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9)) << name;
  }
}

TEST(LowerBound, AChainPassesEachValueWhole) {
  // relu0's output is read by four Relus: each reader's own floor holds a
  // quarter of that read, but the chain relu0 -> relu_i passes the whole
  // value (written, then read), so the critical path is two Relus' whole
  // cost.
  Graph g;
  ValueId x = add_float_value(g, "x", {1, 1 << 16});
  ValueId y = add_float_value(g, "y", {1, 1 << 16});
  g.inputs.push_back(x);
  add_op(g, "Relu", "relu0", {x}, {y});
  for (int i = 1; i <= 4; ++i) {
    ValueId out = add_float_value(g, "out" + std::to_string(i), {1, 1 << 16});
    g.outputs.push_back(out);
    add_op(g, "Relu", "relu" + std::to_string(i), {y}, {out});
  }
  g.finalize();
  g.annotate_costs();
  Platform p;
  p.name = "one";
  p.devices = {emulated("cpu", 10)};
  auto cost = make_roofline_cost_model(p);
  double relu_us = cost->launch(g, {0}, p.devices[0]).us;
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, 2 * relu_us, 1e-9 * relu_us);
  Plan plan = make_scheduler("sequential")->schedule(g, p, *cost, ScheduleOptions{});
  EXPECT_NEAR(simulate(plan, g, p, *cost).makespan_us, 5 * relu_us, 1e-9 * relu_us);
  EXPECT_LE(bound.us, 5 * relu_us * (1 + 1e-9));
}

TEST(LowerBound, EachDeviceOfAChainTakesItsOwnRoofline) {
  // A compute-bound MatMul that only `a` runs, then a memory-bound Relu
  // that only `b` runs: the chain is the MatMul's FLOPs on `a` plus the
  // Relu's bytes on `b` — no one mix of FLOPs and bytes for both devices
  // gets there — and the plan meets it.
  Graph g;
  ValueId x = add_float_value(g, "x", {1, 512});
  ValueId w = add_float_value(g, "w", {512, 512});
  g.values[w].initializer = Tensor(DType::kFloat32, {512, 512});
  ValueId h = add_float_value(g, "h", {1, 512});
  ValueId y = add_float_value(g, "y", {1, 512});
  g.inputs.push_back(x);
  g.outputs.push_back(y);
  add_op(g, "MatMul", "matmul", {x, w}, {h});
  add_op(g, "Relu", "relu", {h}, {y});
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(1, 1);
  p.devices[0].bandwidth_gbps = 100;  // a: 1 GFLOP/s, 100 GB/s
  p.devices[0].ops = {"MatMul"};
  p.devices[1].peak_gflops = 100;  // b: 100 GFLOP/s, 0.001 GB/s
  p.devices[1].bandwidth_gbps = 0.001;
  p.devices[1].ops = {"Relu"};
  auto cost = make_roofline_cost_model(p);
  double matmul_us = cost->launch(g, {0}, p.devices[0]).us, relu_us = cost->launch(g, {1}, p.devices[1]).us;
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, matmul_us + relu_us, 1e-9 * (matmul_us + relu_us));
  // The two nodes are one fusion unit that neither device runs whole.
  Plan plan = build_plan(g, p, {LaunchAssignment{{0}, 0, 0, ""}, LaunchAssignment{{1}, 1, 0, ""}}, "test", false);
  EXPECT_NEAR(simulate(plan, g, p, *cost).makespan_us, bound.us, 1e-9 * bound.us);
}

// One emulated device, "dsa", with on-chip memory.
Platform chip(double bandwidth_gbps, double overhead_us, double onchip_bytes) {
  Platform p;
  p.name = "chip";
  p.devices = {emulated("dsa", 1000)};
  p.devices[0].bandwidth_gbps = bandwidth_gbps;
  p.devices[0].launch_overhead_us = overhead_us;
  p.devices[0].onchip_bytes = static_cast<int64_t>(onchip_bytes);
  return p;
}

// The makespans of every split of a chain of n nodes (ids 0..n-1) into
// consecutive launches on device 0.
std::vector<double> every_split(const Graph& g, int n, const Platform& p, const CostModel& cost) {
  std::vector<double> makespans;
  for (unsigned cuts = 0; cuts < 1u << (n - 1); ++cuts) {
    std::vector<LaunchAssignment> launches(1);
    for (NodeId id = 0; id < n; ++id) {
      if (id > 0 && (cuts >> (id - 1) & 1u)) launches.emplace_back();
      launches.back().nodes.push_back(id);
    }
    makespans.push_back(simulate(build_plan(g, p, launches, "test", false), g, p, cost).makespan_us);
  }
  return makespans;
}

TEST(LowerBound, OnChipLaunchesHoldSoMuchBetweenTheirKernels) {
  // A chain of Relus on an emulated device whose on-chip memory holds two
  // of the values between them: a launch runs as one kernel (one overhead)
  // only while the values inside it fit, else it spills them. Each value
  // between two Relus costs at least overhead * bytes / onchip_bytes (half
  // an overhead here), where the floors of the nodes alone give nothing.
  constexpr int kRelus = 7;
  Graph g = relu_chain(kRelus, 1 << 16);
  double value_bytes = g.values[g.nodes[0].outputs[0]].nbytes();
  // A spill (write and read) costs more than the on-chip share.
  Platform p = chip(10, 100, 2 * value_bytes);
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  double per_value_us = p.devices[0].launch_overhead_us * value_bytes / static_cast<double>(p.devices[0].onchip_bytes);
  EXPECT_GE(bound.us, (kRelus - 1) * per_value_us);

  // Every split of the chain into consecutive launches comes in above it.
  std::vector<double> makespans = every_split(g, kRelus, p, *cost);
  for (size_t cuts = 0; cuts < makespans.size(); ++cuts)
    EXPECT_GE(makespans[cuts], bound.us * (1 - 1e-9)) << "cuts " << cuts;
  EXPECT_LT(*std::min_element(makespans.begin(), makespans.end()), 1.5 * bound.us);
}

TEST(LowerBound, CutNodesWhoseSpanOverflowsTheChipAreInDifferentLaunches) {
  // A chain of Relus (each a cut node) on an emulated device whose chip
  // holds 1.9 of the values between them: a one-kernel launch holds at
  // most two Relus, so seven take four launches and four overheads, besides
  // reading the input and writing the output. Shared per byte, the values
  // between them would pay only 6 / 1.9 overheads.
  constexpr int kRelus = 7;
  constexpr double kOverheadUs = 100;
  Graph g = relu_chain(kRelus, 1 << 16);
  double value_bytes = g.values[g.nodes[0].outputs[0]].nbytes();
  Platform p = chip(5, kOverheadUs, 1.9 * value_bytes);  // a spill costs more than an overhead
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  double in_and_out_us = 2 * value_bytes / (p.devices[0].bandwidth_gbps * 1e3);
  EXPECT_GE(bound.critical_path_us, (4 * kOverheadUs + in_and_out_us) * (1 - 1e-9));
  std::vector<double> makespans = every_split(g, kRelus, p, *cost);
  for (size_t cuts = 0; cuts < makespans.size(); ++cuts)
    EXPECT_GE(makespans[cuts], bound.us * (1 - 1e-9)) << "cuts " << cuts;
}

TEST(LowerBound, AChainPaysAnOverheadForEachLaunchItEntersOnTheChip) {
  // Relu -> Sigmoid -> Relu -> Sigmoid -> Relu, the Relus only on `dsa`
  // (on-chip memory: a launch is one kernel, its overhead in no node's
  // floor) and the Sigmoids only on `cpu`: each Relu is a launch of its
  // own on `dsa`, after a Sigmoid on `cpu`, so the chain pays three
  // overheads however the nodes are grouped.
  constexpr int kRelus = 3;
  constexpr double kOverheadUs = 100;
  Graph g;
  ValueId v = add_float_value(g, "x", {1, 1024});
  g.inputs.push_back(v);
  for (int i = 0; i < 2 * kRelus - 1; ++i) {
    ValueId next = add_float_value(g, "v" + std::to_string(i), {1, 1024});
    add_op(g, i % 2 == 0 ? "Relu" : "Sigmoid", "n" + std::to_string(i), {v}, {next});
    v = next;
  }
  g.outputs.push_back(v);
  g.finalize();
  g.annotate_costs();
  Platform p;
  p.name = "chip+cpu";
  p.devices = {emulated("dsa", 1000), emulated("cpu", 1000)};
  p.devices[0].ops = {"Relu"};
  p.devices[0].launch_overhead_us = kOverheadUs;
  p.devices[0].onchip_bytes = 1 << 20;
  p.devices[1].ops = {"Sigmoid"};
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_GE(bound.critical_path_us, kRelus * kOverheadUs);
  std::vector<LaunchAssignment> launches;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id)
    launches.push_back(LaunchAssignment{{id}, id % 2 == 0 ? 0 : 1, 0, ""});
  double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  EXPECT_LT(makespan, 1.05 * bound.us);
}

TEST(LowerBound, CopiesIntoAnotherMemorySpaceTakeALaneOfEitherDevice) {
  // Pairs Sigmoid -> Relu where only the host device runs Sigmoid and only
  // the accelerator, in its own memory, runs Relu, each with one lane: every
  // Relu output goes back to host on the accelerator's lane (a graph
  // output, copied by its producer), every Sigmoid output is copied in on
  // either lane (the reader's by default, or pushed by the host's). The
  // critical path sees one pair; the capacity bound sees every copy, the
  // copies in spread over both lanes.
  constexpr int kPairs = 4;
  Graph g;
  for (int i = 0; i < kPairs; ++i) {
    std::string n = std::to_string(i);
    ValueId x = add_float_value(g, "x" + n, {1, 1 << 12});
    ValueId s = add_float_value(g, "s" + n, {1, 1 << 12});
    ValueId y = add_float_value(g, "y" + n, {1, 1 << 12});
    g.inputs.push_back(x);
    g.outputs.push_back(y);
    add_op(g, "Sigmoid", "sigmoid" + n, {x}, {s});
    add_op(g, "Relu", "relu" + n, {s}, {y});
  }
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(10, 10);
  p.devices[0].ops = {"Sigmoid"};
  p.devices[1].ops = {"Relu"};
  second_in_own_memory(p, 50, 1);
  auto cost = make_roofline_cost_model(p);
  double copy_us = cost->transfer(g.values[g.nodes[0].outputs[0]].nbytes(), p.devices[0], p.devices[1]).us;
  ASSERT_EQ(g.nodes[0].op_type, "Sigmoid");
  ASSERT_EQ(g.nodes[1].op_type, "Relu");
  double host_us = kPairs * cost->launch(g, {0}, p.devices[0]).us;
  double acc_us = kPairs * (cost->launch(g, {1}, p.devices[1]).us + copy_us);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  double balanced_us = std::max(std::max(host_us, acc_us), (host_us + acc_us + kPairs * copy_us) / 2);
  EXPECT_NEAR(bound.capacity_us, balanced_us, 1e-6 * bound.capacity_us);
  EXPECT_LT(bound.critical_path_us, 2 * (acc_us / kPairs + copy_us));
  for (const char* name : {"heft", "peft", "auto"}) {
    Plan plan = make_scheduler(name)->schedule(g, p, *cost, ScheduleOptions{});
    EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9)) << name;
  }
  // Every Sigmoid pushing its output: the accelerator's lane no longer
  // holds the copies in, and the plan beats a bound that put them there.
  std::vector<LaunchAssignment> pushing;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) {
    pushing.push_back(LaunchAssignment{{id}, g.nodes[id].op_type == "Sigmoid" ? 0 : 1, 0, ""});
    if (g.nodes[id].op_type == "Sigmoid") pushing.back().push_stream = 0;
  }
  double pushed_us = simulate(build_plan(g, p, pushing, "test", false), g, p, *cost).makespan_us;
  EXPECT_LT(pushed_us, acc_us + kPairs * copy_us);
  EXPECT_GE(pushed_us, bound.us * (1 - 1e-9));
}

TEST(LowerBound, BranchesBeforeAJoinShareTheLanesOfTheirDevice) {
  // Eight Relus of one input, joined by a Concat only the host device runs
  // (one lane). The accelerator also runs Relu, but in its own memory, a
  // long copy away each way. Per path, each branch runs on the host beside
  // the others; the capacity LP spreads them over both devices. Any real
  // plan runs them one after another on the host's lane (or pays two
  // copies), which the critical path counts at the Concat.
  constexpr int kBranches = 8;
  Graph g;
  ValueId x = add_float_value(g, "x", {1, 1 << 12});
  g.inputs.push_back(x);
  std::vector<ValueId> branches;
  for (int i = 0; i < kBranches; ++i) {
    branches.push_back(add_float_value(g, "r" + std::to_string(i), {1, 1 << 12}));
    add_op(g, "Relu", "relu" + std::to_string(i), {x}, {branches.back()});
  }
  ValueId y = add_float_value(g, "y", {1, kBranches << 12});
  g.outputs.push_back(y);
  add_op(g, "Concat", "concat", branches, {y});
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(10, 100);
  p.devices[1].ops = {"Relu"};
  p.devices[1].n_streams = 16;
  second_in_own_memory(p, 15, 100);
  auto cost = make_roofline_cost_model(p);
  std::vector<LaunchAssignment> on_host;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id)
    on_host.push_back(LaunchAssignment{{id}, 0, 0, ""});
  double makespan = simulate(build_plan(g, p, on_host, "test", false), g, p, *cost).makespan_us;
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  // Per path one Relu and the Concat; at the join, all eight Relus (at
  // their floors, which share the input they all read: at least half
  // their cost alone). Neither LP sees it.
  double relu_us = cost->launch(g, {0}, p.devices[0]).us;
  double concat_us = cost->launch(g, {kBranches}, p.devices[0]).us;
  ASSERT_EQ(g.nodes[kBranches].op_type, "Concat");
  EXPECT_GT(bound.critical_path_us, concat_us + kBranches * relu_us / 2);
  EXPECT_LT(std::max(bound.capacity_us, bound.combined_us), concat_us + kBranches * relu_us / 2);
  for (const char* name : {"heft", "auto"}) {
    Plan plan = make_scheduler(name)->schedule(g, p, *cost, ScheduleOptions{});
    EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9)) << name;
  }
}

TEST(LowerBound, AKernelOfItsOwnTakesItsLongerViewWithTheValuesItPasses) {
  // A compute-bound MatMul whose output two memory-bound Softmaxes read,
  // each node a kernel of its own. Node by node the floors share that
  // output between its readers, and a chain's one view per device counts
  // the MatMul or the Softmax at less than it takes; each kernel counted
  // whole, with every value it reads and writes, the critical path is the
  // MatMul and a Softmax end to end.
  constexpr int64_t kSide = 128;
  Graph g;
  auto value = [&](const std::string& name) { return add_float_value(g, name, {kSide, kSide}); };
  ValueId x = value("x"), w = value("w"), h = value("h"), y0 = value("y0"), y1 = value("y1");
  g.values[w].initializer = Tensor(DType::kFloat32, {kSide, kSide});
  g.inputs.push_back(x);
  g.outputs = {y0, y1};
  NodeId matmul = add_op(g, "MatMul", "matmul", {x, w}, {h});
  NodeId softmax = add_op(g, "Softmax", "softmax0", {h}, {y0});
  add_op(g, "Softmax", "softmax1", {h}, {y1});
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(10, 10);
  p.devices.resize(1);
  auto cost = make_roofline_cost_model(p);
  double chain_us = cost->launch(g, {matmul}, p.devices[0]).us + cost->launch(g, {softmax}, p.devices[0]).us;
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, chain_us, 1e-9 * chain_us);
  Plan plan = make_scheduler("sequential")->schedule(g, p, *cost, ScheduleOptions{});
  EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9));
}

TEST(LowerBound, IndependentWorkSplitsOverTheDevices) {
  // Four equal independent Relus on two equal devices: at best two each.
  Graph g;
  for (int i = 0; i < 4; ++i) {
    ValueId x = add_float_value(g, "x" + std::to_string(i), {1, 1 << 16});
    ValueId y = add_float_value(g, "y" + std::to_string(i), {1, 1 << 16});
    g.inputs.push_back(x);
    g.outputs.push_back(y);
    add_op(g, "Relu", "relu" + std::to_string(i), {x}, {y});
  }
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(10, 10);
  auto cost = make_roofline_cost_model(p);
  // Each Relu reads a graph input and writes a graph output: its floor is
  // its whole cost alone.
  auto floor_on = [&](const PlatformDevice& d) { return cost->launch(g, {0}, d).us; };
  double c = floor_on(p.devices[0]);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, c, 1e-9 * c);
  EXPECT_NEAR(bound.capacity_us, 2 * c, 1e-6 * c);
  EXPECT_NEAR(bound.us, 2 * c, 1e-6 * c);

  // A device three times as fast takes three quarters of the work: T = 3c/4 * ... solved by the LP.
  Platform uneven = two_devices(30, 10);
  auto uneven_cost = make_roofline_cost_model(uneven);
  double fast = floor_on(uneven.devices[0]), slow = floor_on(uneven.devices[1]);
  // Fractions f on the fast device: 4 f fast = 4 (1 - f) slow.
  double f = slow / (fast + slow);
  EXPECT_NEAR(makespan_lower_bound(g, uneven, *uneven_cost).capacity_us, 4 * f * fast, 1e-6 * fast);
}

TEST(LowerBound, EachSegmentBetweenCutNodesTakesItsOwnTime) {
  // Two Relus only `a` runs, their sum, two Sigmoids of it only `b` runs,
  // and their sum: every path passes both Adds (cut nodes), so `b` cannot
  // start its Sigmoids while `a` runs the Relus. The devices' loads alone
  // would overlap the two pairs; segment by segment they follow each other.
  Graph g;
  auto value = [&](const std::string& name) { return add_float_value(g, name, {1, 1 << 16}); };
  ValueId x = value("x"), r0 = value("r0"), r1 = value("r1"), sum = value("sum"), s0 = value("s0"),
          s1 = value("s1"), y = value("y");
  g.inputs.push_back(x);
  g.outputs.push_back(y);
  add_op(g, "Relu", "relu0", {x}, {r0});
  add_op(g, "Relu", "relu1", {x}, {r1});
  add_op(g, "Add", "add0", {r0, r1}, {sum});
  add_op(g, "Sigmoid", "sigmoid0", {sum}, {s0});
  add_op(g, "Sigmoid", "sigmoid1", {sum}, {s1});
  add_op(g, "Add", "add1", {s0, s1}, {y});
  g.finalize();
  g.annotate_costs();
  Platform p = two_devices(10, 10);
  p.devices[0].ops = {"Relu", "Add"};
  p.devices[1].ops = {"Sigmoid", "Add"};
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  std::vector<LaunchAssignment> launches;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id)
    launches.push_back(LaunchAssignment{{id}, g.nodes[id].op_type == "Sigmoid" ? 1 : 0, 0, ""});
  double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  // The pairs' floors share the value both read (a launch reading it once
  // could exist), so the bound stays 14% under this plan; without the
  // segments, 57%. (The critical path sees each pair on its device's one
  // lane, not the segments: 86%.)
  EXPECT_GT(bound.capacity_us, 0.85 * makespan);
}

TEST(LowerBound, AFusionUnitPaysItsOverheadWholeOnEachDeviceItUses) {
  // Four independent MatMul+Relu units (each one fusion unit). `acc` runs
  // both ops with a 1 ms overhead per kernel, `cpu` only the Relu for
  // almost nothing. Whichever device runs a Relu, each MatMul is a kernel
  // on `acc` and pays the whole overhead: `acc` is busy for at least four
  // of them. (Sharing the overhead over the unit's nodes would let each
  // Relu on `cpu` take half a MatMul's overhead with it.)
  constexpr int kUnits = 4;
  constexpr double kOverheadUs = 1000;
  Graph g;
  for (int i = 0; i < kUnits; ++i) {
    std::string n = std::to_string(i);
    ValueId x = add_float_value(g, "x" + n, {1, 64});
    ValueId w = add_float_value(g, "w" + n, {64, 64});
    g.values[w].initializer = Tensor(DType::kFloat32, {64, 64});
    ValueId h = add_float_value(g, "h" + n, {1, 64});
    ValueId y = add_float_value(g, "y" + n, {1, 64});
    g.inputs.push_back(x);
    g.outputs.push_back(y);
    add_op(g, "MatMul", "matmul" + n, {x, w}, {h});
    add_op(g, "Relu", "relu" + n, {h}, {y});
  }
  g.finalize();
  g.annotate_costs();
  ASSERT_EQ(fusion_units(g).size(), static_cast<size_t>(kUnits));
  Platform p;
  p.name = "acc+cpu";
  p.devices = {emulated("acc", 1000), emulated("cpu", 1000)};
  p.devices[0].launch_overhead_us = kOverheadUs;
  p.devices[0].ops = {"MatMul", "Relu"};
  p.devices[1].ops = {"Relu"};
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_GE(bound.capacity_us, kUnits * kOverheadUs);
  // Every unit as one launch on `acc`: the overheads and a little more.
  std::vector<LaunchAssignment> launches;
  for (const std::vector<NodeId>& unit : fusion_units(g)) launches.push_back(LaunchAssignment{unit, 0, 0, ""});
  double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  EXPECT_LT(makespan, 1.01 * bound.us);
}

TEST(LowerBound, EachKernelTakesTheLongerOfItsTwoViews) {
  // Two independent x -> Relu -> MatMul+Relu -> y on one device without
  // on-chip memory: the first Relu is memory-bound and a kernel of its own
  // (a Relu before a MatMul does not fuse), the MatMul+Relu unit
  // compute-bound. Each kernel takes the longer of its two views, so a
  // chain takes the two kernels' times, and the device both chains'. Each
  // view alone undercounts: the Relu's traffic does not hide under the
  // MatMul's arithmetic.
  Graph g;
  for (int i = 0; i < 2; ++i) {
    std::string n = std::to_string(i);
    ValueId x = add_float_value(g, "x" + n, {64, 256});
    ValueId h = add_float_value(g, "h" + n, {64, 256});
    ValueId w = add_float_value(g, "w" + n, {256, 256});
    g.values[w].initializer = Tensor(DType::kFloat32, {256, 256});
    ValueId m = add_float_value(g, "m" + n, {64, 256});
    ValueId y = add_float_value(g, "y" + n, {64, 256});
    g.inputs.push_back(x);
    g.outputs.push_back(y);
    add_op(g, "Relu", "relu" + n, {x}, {h});
    add_op(g, "MatMul", "matmul" + n, {h, w}, {m});
    add_op(g, "Relu", "act" + n, {m}, {y});
  }
  g.finalize();
  g.annotate_costs();
  std::vector<std::vector<NodeId>> units = fusion_units(g);
  ASSERT_EQ(units.size(), 4u);  // relu0, matmul0+act0, relu1, matmul1+act1
  Platform p;
  p.name = "one";
  p.devices = {emulated("d", 10)};
  p.devices[0].bandwidth_gbps = 1;
  auto cost = make_roofline_cost_model(p);
  double chain_us = cost->launch(g, units[0], p.devices[0]).us + cost->launch(g, units[1], p.devices[0]).us;
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, chain_us, 1e-3 * chain_us);
  EXPECT_NEAR(bound.capacity_us, 2 * chain_us, 1e-3 * chain_us);
  std::vector<LaunchAssignment> launches;
  for (const std::vector<NodeId>& unit : units) launches.push_back(LaunchAssignment{unit, 0, 0, ""});
  double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  EXPECT_LT(makespan, 1.01 * bound.us);
}

// relu0 -> relu1 on `fast` or `slow` (one memory space, no copies), beside
// two Sigmoids only `fast` runs.
Graph chain_beside_sigmoids() {
  Graph g;
  constexpr int64_t kWidth = 1 << 16;
  ValueId x = add_float_value(g, "x", {1, kWidth});
  ValueId h = add_float_value(g, "h", {1, kWidth});
  ValueId y = add_float_value(g, "y", {1, kWidth});
  g.inputs.push_back(x);
  g.outputs.push_back(y);
  add_op(g, "Relu", "relu0", {x}, {h});
  add_op(g, "Relu", "relu1", {h}, {y});
  for (int i = 0; i < 2; ++i) {
    std::string n = std::to_string(i);
    ValueId in = add_float_value(g, "in" + n, {1, kWidth});
    ValueId out = add_float_value(g, "out" + n, {1, kWidth});
    g.inputs.push_back(in);
    g.outputs.push_back(out);
    add_op(g, "Sigmoid", "sigmoid" + n, {in}, {out});
  }
  g.finalize();
  g.annotate_costs();
  return g;
}

TEST(LowerBound, ChainsAndCapacityShareOnePlacement) {
  // Every node is memory-bound and its own fusion unit, reading graph
  // inputs or writing graph outputs or passing a value to a node of
  // another unit: its floor is its whole cost alone (f: a Relu on `fast`,
  // s on `slow`, g: a Sigmoid on `fast`). Apart, the chain wants `fast`
  // (critical path 2f) and the capacity LP puts a share A / 2 of each Relu
  // there, the Sigmoids filling the rest: A f + 2g = (2 - A) s. On one
  // placement the chain takes A f + (2 - A) s, more than `slow`'s load, and
  // it meets `fast`'s load A f + 2g at A = 2 (s - g) / s.
  Graph g = chain_beside_sigmoids();
  ASSERT_EQ(fusion_units(g).size(), g.nodes.size());
  Platform p = two_devices(20, 10);
  p.devices[1].ops = {"Relu"};
  auto cost = make_roofline_cost_model(p);
  double f = cost->launch(g, {0}, p.devices[0]).us, s = cost->launch(g, {0}, p.devices[1]).us;
  double sigmoid = cost->launch(g, {2}, p.devices[0]).us;
  ASSERT_EQ(g.nodes[2].op_type, "Sigmoid");
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, 2 * f, 1e-9 * f);
  EXPECT_NEAR(bound.capacity_us, 2 * s * (f + sigmoid) / (f + s), 1e-6 * s);
  double shared = 2 * (s - sigmoid) / s;
  EXPECT_NEAR(bound.combined_us, shared * f + 2 * sigmoid, 1e-6 * s);
  EXPECT_GT(bound.combined_us, 1.1 * std::max(bound.critical_path_us, bound.capacity_us));
  EXPECT_DOUBLE_EQ(bound.us, bound.combined_us);

  // The best plan: relu0, then the Sigmoids on `fast`, relu1 on `slow`, in
  // max(f + 2g, f + s); about the bound.
  Plan plan = build_plan(g, p,
                         {LaunchAssignment{{0}, 0, 0, ""}, LaunchAssignment{{2}, 0, 0, ""},
                          LaunchAssignment{{3}, 0, 0, ""}, LaunchAssignment{{1}, 1, 0, ""}},
                         "test", false);
  double makespan = simulate(plan, g, p, *cost).makespan_us;
  EXPECT_NEAR(makespan, std::max(f + 2 * sigmoid, f + s), 1e-9 * makespan);
  EXPECT_GE(makespan, bound.us * (1 - 1e-9));
  EXPECT_LT(makespan, 1.01 * bound.us);
}

TEST(LowerBound, CombinedChainsPayTheCopiesBetweenMemorySpaces) {
  // sigmoid0 -> relu -> output, beside two more Sigmoids: `fast` (host
  // memory) runs all, `slow`, in its own memory, only the Relu. On `fast`
  // the chain is 2f; on `slow` it is f + P, P = s + copy in + copy out.
  // `fast` carries 3f + a f with a share a of the Relu; the chain,
  // f + a f + (1 - a) P with its copies. They meet at (1 - a) P = 2f:
  // T = 4f - 2f^2 / P, above the critical path (2f) and the capacity bound
  // (3f, with the Relu on `fast`) since P > 2f. Without the copies on the
  // chain (P = s < 2f) the combined bound would be 3f too.
  Graph g = chain_beside_sigmoids();
  g.nodes[0].op_type = "Sigmoid";  // sigmoid0 -> relu1
  g.annotate_costs();
  Platform p = two_devices(20, 10);
  p.devices[1].ops = {"Relu"};
  second_in_own_memory(p, 5, 50);
  auto cost = make_roofline_cost_model(p);
  double bytes = g.values[g.nodes[0].outputs[0]].nbytes();
  double f = cost->launch(g, {0}, p.devices[0]).us, s = cost->launch(g, {1}, p.devices[1]).us;
  double copy_in = cost->transfer(bytes, p.devices[0], p.devices[1]).us;
  double copy_out = cost->transfer(bytes, p.devices[1], p.devices[0]).us;
  double chain_on_slow = s + copy_in + copy_out;
  ASSERT_NEAR(cost->launch(g, {1}, p.devices[0]).us, f, 1e-9 * f);
  ASSERT_LT(s, 2 * f);
  ASSERT_GT(chain_on_slow, 2 * f);
  ASSERT_LT(chain_on_slow, 3 * f);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_NEAR(bound.critical_path_us, 2 * f, 1e-9 * f);
  EXPECT_NEAR(bound.capacity_us, 3 * f, 1e-6 * f);
  EXPECT_NEAR(bound.combined_us, 4 * f - 2 * f * f / chain_on_slow, 1e-6 * f);
  EXPECT_DOUBLE_EQ(bound.us, bound.combined_us);
  for (int relu_on = 0; relu_on < 2; ++relu_on) {
    Plan plan = build_plan(g, p,
                           {LaunchAssignment{{0}, 0, 0, ""}, LaunchAssignment{{1}, relu_on, 0, ""},
                            LaunchAssignment{{2}, 0, 0, ""}, LaunchAssignment{{3}, 0, 0, ""}},
                           "test", false);
    EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9)) << "relu on " << relu_on;
  }
}

TEST(LowerBound, CombinedChainsCarryTheValuesTheyPass) {
  // bert's attention values are read by several nodes, each of whose floors
  // holds a share of the read; a chain passes such a value whole. On
  // phone-soc the combined LP with the floors alone comes 1.01x above the
  // capacity LP whose rows it holds; with its edges carrying the values,
  // 1.07x. (The critical path, which counts each kernel of its own whole,
  // is above both.)
  Graph g = load_model("zoo:bert");
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  auto cost = make_roofline_cost_model(p);
  MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
  EXPECT_GT(bound.combined_us, 1.05 * bound.capacity_us);
  for (const char* name : {"heft", "partition-tuner"}) {
    Plan plan = make_scheduler(name)->schedule(g, p, *cost, ScheduleOptions{});
    EXPECT_GE(simulate(plan, g, p, *cost).makespan_us, bound.us * (1 - 1e-9)) << name;
  }
}

TEST(LowerBound, NeverAboveTheOptimalPlans) {
  // `optimal` proves its plans best among its own (fusion units, list
  // scheduled; graphs of at most 40 units); the bound must lie under them
  // all the same.
  std::vector<std::pair<std::string, Graph>> graphs;
  graphs.emplace_back("chain beside sigmoids", chain_beside_sigmoids());
  graphs.emplace_back("zoo:squeezenet1_0", load_model("zoo:squeezenet1_0"));
  LoadOptions small;
  small.zoo_params = {{"layers", "1"}, {"seq", "16"}};
  graphs.emplace_back("zoo:bert", load_model("zoo:bert", small));
  for (const char* file : {"desktop-gpu.json", "phone-soc.json", "cpu-dsa.json"}) {
    Platform p = make_platform("", kPlatforms + file);
    auto cost = make_roofline_cost_model(p);
    for (const auto& [name, g] : graphs) {
      MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
      ScheduleOptions options;
      options.params["time_limit"] = "2";
      Plan plan = make_scheduler("optimal")->schedule(g, p, *cost, options);
      double makespan = simulate(plan, g, p, *cost).makespan_us;
      EXPECT_GE(makespan, bound.us * (1 - 1e-9)) << name << " on " << file;
      std::printf("%s on %s: optimal %.4f ms, bound %.4f ms (critical path %.4f, capacity %.4f, combined %.4f)\n",
                  name.c_str(), file, makespan / 1e3, bound.us / 1e3, bound.critical_path_us / 1e3,
                  bound.capacity_us / 1e3, bound.combined_us / 1e3);
    }
  }
}

TEST(LowerBound, NoPlanOfAnySchedulerBeatsIt) {
  // Coarse launches included: duet's subgraphs, ios's merges, whole groups
  // kept on the DSA's chip.
  Graph g = load_model("zoo:googlenet");
  for (const char* file : {"desktop-gpu.json", "phone-soc.json", "cpu-dsa.json"}) {
    Platform p = make_platform("", kPlatforms + file);
    auto cost = make_roofline_cost_model(p);
    MakespanLowerBound bound = makespan_lower_bound(g, p, *cost);
    EXPECT_GT(bound.us, 0);
    for (const char* name : {"heft", "peft", "opara", "nimble", "type-based", "round-robin", "duet", "partition-tuner",
                             "ios", "auto"}) {
      Plan plan = make_scheduler(name)->schedule(g, p, *cost, ScheduleOptions{});
      double makespan = simulate(plan, g, p, *cost).makespan_us;
      EXPECT_GE(makespan, bound.us * (1 - 1e-9)) << name << " on " << file;
    }
  }
}

TEST(LowerBound, CoarseLaunchesOnTheChipComeInAboveIt) {
  // Launches far coarser than any scheduler's: the DSA's nodes in
  // topological order, each joining the open launch while the cost model
  // says that is no slower than launching it apart (one kernel while the
  // values inside fit on chip), the ops the DSA does not run on the CPU.
  Platform p = make_platform("", kPlatforms + "cpu-dsa.json");
  auto cost = make_roofline_cost_model(p);
  int dsa = p.find_device("emu:dsa"), cpu = p.find_device("emu:cpu");
  for (const char* model : {"zoo:mobilenet_v2", "zoo:resnet50", "zoo:randwire"}) {
    Graph g = load_model(model);
    std::vector<LaunchAssignment> launches;
    std::vector<NodeId> open;
    auto close = [&] {
      if (!open.empty()) launches.push_back(LaunchAssignment{open, dsa, 0, ""});
      open.clear();
    };
    for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) {
      if (!p.devices[dsa].supports(g.nodes[id])) {
        close();
        launches.push_back(LaunchAssignment{{id}, cpu, 0, ""});
        continue;
      }
      std::vector<NodeId> grown = open;
      grown.push_back(id);
      const PlatformDevice& device = p.devices[dsa];
      bool join = open.empty() || cost->launch(g, grown, device).us <=
                                      cost->launch(g, open, device).us + cost->launch(g, {id}, device).us;
      if (!join) close();
      open.push_back(id);
    }
    close();
    ASSERT_LT(launches.size(), g.nodes.size() / 10) << model;
    double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
    EXPECT_GE(makespan, makespan_lower_bound(g, p, *cost).us * (1 - 1e-9)) << model;
  }
}

TEST(LowerBound, RandomCoarsePlansComeInAboveIt) {
  // Plans no scheduler makes: the nodes in topological order cut into runs
  // of random length (one launch each), on a random device that runs them
  // (mostly the fastest) and a random stream, with their copies on random
  // streams.
  for (const char* file : {"desktop-gpu.json", "phone-soc.json", "cpu-dsa.json"}) {
    Platform p = make_platform("", kPlatforms + file);
    auto cost = make_roofline_cost_model(p);
    for (const char* model : {"zoo:googlenet", "zoo:mobilenet_v2"}) {
      Graph g = load_model(model);
      double bound = makespan_lower_bound(g, p, *cost).us;
      std::mt19937 rng(1);
      std::uniform_real_distribution<double> uniform(0, 1);
      for (double cut : {0.02, 0.1, 0.3, 0.7}) {
        for (int fastest_first = 0; fastest_first < 2; ++fastest_first) {
          std::vector<LaunchAssignment> launches(1);
          launches[0].device = -1;
          for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) {
            LaunchAssignment& open = launches.back();
            bool runs = open.device >= 0 && p.devices[open.device].supports(g.nodes[id]);
            if (!runs || uniform(rng) < cut) {
              if (!open.nodes.empty()) launches.emplace_back();
              std::vector<int> devices;
              for (size_t d = 0; d < p.devices.size(); ++d)
                if (p.devices[d].supports(g.nodes[id])) devices.push_back(static_cast<int>(d));
              int device = devices[std::uniform_int_distribution<size_t>(0, devices.size() - 1)(rng)];
              if (fastest_first && uniform(rng) < 0.8)
                for (int d : devices)
                  if (p.devices[d].peak_gflops > p.devices[device].peak_gflops) device = d;
              launches.back().device = device;
              std::uniform_int_distribution<int> stream(0, p.devices[device].n_streams - 1), copy_stream(-1, stream.max());
              launches.back().stream = stream(rng);
              launches.back().push_stream = copy_stream(rng);
              launches.back().pull_stream = copy_stream(rng);
            }
            launches.back().nodes.push_back(id);
          }
          double makespan = simulate(build_plan(g, p, launches, "test", false), g, p, *cost).makespan_us;
          EXPECT_GE(makespan, bound * (1 - 1e-9)) << model << " on " << file << ", cut " << cut;
        }
      }
    }
  }
}

TEST(Compare, EmulatedPlatformPredictsEverySchedulerAgainstTheBestDevice) {
  Graph g = load_model("zoo:googlenet");
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(p);
  CompareOptions options;
  options.schedulers = {"sequential", "heft", "opara"};
  Comparison c = compare_schedulers(g, p, cost, "", options);

  // The NPU runs only some ops: it is no baseline; the CPU clusters are.
  ASSERT_EQ(c.sequential.size(), 2u);
  for (const auto& b : c.sequential) EXPECT_NE(b.device, "emu:npu");
  double best = std::min(c.sequential[0].predicted_ms, c.sequential[1].predicted_ms);
  EXPECT_DOUBLE_EQ(c.best_sequential_ms, best);
  EXPECT_GT(c.lower_bound_ms, 0);
  EXPECT_LE(c.lower_bound_ms, best);

  ASSERT_EQ(c.schedulers.size(), 3u);
  for (const SchedulerOutcome& s : c.schedulers) {
    ASSERT_TRUE(s.error.empty()) << s.name << ": " << s.error;
    ASSERT_TRUE(s.plan);
    // Predicted by the simulator, whatever the scheduler said itself.
    EXPECT_DOUBLE_EQ(s.predicted_ms, simulate(*s.plan, g, p, *cost).makespan_us / 1e3) << s.name;
    EXPECT_LT(s.measured.p50_ms, 0) << "nothing was run";
  }
  EXPECT_LT(c.schedulers[1].predicted_ms, best) << "heft uses the NPU and beats one cluster alone";
}

TEST(Compare, UnknownSchedulerIsAUsageError) {
  Graph g = load_model("zoo:resnet18");
  Platform p = make_platform("", kPlatforms + "desktop-gpu.json");
  CompareOptions options;
  options.schedulers = {"sequential", "no-such"};
  try {
    compare_schedulers(g, p, make_roofline_cost_model(p), "", options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("no-such"), std::string::npos);
  }
}

TEST(Compare, SaysWhereARealDeviceNoLongerRunsAsProfiled) {
  Platform p;
  PlatformDevice cpu0;
  cpu0.name = "cpu:0";
  cpu0.kind = DeviceKind::kCpu;
  p.devices = {cpu0, emulated("npu", 10)};
  Comparison c;
  auto baseline = [](const std::string& device, double predicted_ms, double measured_ms) {
    SequentialBaseline b;
    b.device = device;
    b.predicted_ms = predicted_ms;
    b.measured.p50_ms = measured_ms;
    return b;
  };
  // cpu:0 within 20%; the union cpu:0-1 (not a platform device, real) 50%
  // slower; the emulated npu's overrun and an unmeasured device say nothing.
  c.sequential = {baseline("cpu:0", 10, 11.9), baseline("cpu:0-1", 4, 6), baseline("emu:npu", 1, 3),
                  baseline("cpu:1", 10, -1)};
  std::vector<std::string> notes = prediction_drift_notes(c, p);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("cpu:0-1 alone measured 6.000 ms where 4.000 ms was predicted (+50%)", 0), 0u) << notes[0];
  EXPECT_NE(notes[0].find("the machine runs slower"), std::string::npos) << notes[0];
  c.sequential = {baseline("cpu:0", 10, 7)};
  notes = prediction_drift_notes(c, p);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("(-30%)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("the machine runs faster"), std::string::npos) << notes[0];
}

TEST(CompareCli, MeasuresPlansAndTheUnionOfTheCoresOnARealMachine) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs two cores";
  auto dir = testing::temp_dir("compare_cli");
  std::string json_path = (dir / "c.json").string();
  auto r = testing::run_cli("compare zoo:squeezenet1_0 --devices cpu:0,cpu:1 --schedulers heft,sequential --measure "
                            "-n 1 -w 0 --db " + (dir / "p.db").string() + " --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("best sequential:"), std::string::npos) << r.output;
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["measured"].get<bool>());
  EXPECT_GT(j["lower_bound_ms"].get<double>(), 0);
  EXPECT_GT(j["best_sequential_ms"].get<double>(), 0);
  std::vector<std::string> baselines;
  for (const auto& b : j["sequential"]) {
    baselines.push_back(b["device"]);
    EXPECT_GT(b["measured_p50_ms"].get<double>(), 0);
  }
  EXPECT_EQ(baselines, (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:0-1"}));
  ASSERT_EQ(j["schedulers"].size(), 2u);
  for (const auto& s : j["schedulers"]) {
    EXPECT_GT(s["predicted_ms"].get<double>(), 0) << s;
    EXPECT_GT(s["measured_p50_ms"].get<double>(), 0) << s;
    EXPECT_LE(s["measured_min_ms"].get<double>(), s["measured_p50_ms"].get<double>()) << s;
    EXPECT_GE(s["measured_max_ms"].get<double>(), s["measured_p50_ms"].get<double>()) << s;
    EXPECT_GE(s["plan_ms"].get<double>(), 0) << s;
    // Each device's share of the work adds up to the whole model.
    int nodes = 0;
    double flops = 0;
    for (const auto& d : s["devices"]) {
      nodes += d["nodes"].get<int>();
      flops += d["flops"].get<double>();
    }
    EXPECT_EQ(nodes, j["nodes"].get<int>()) << s;
    EXPECT_NEAR(flops, j["total_flops"].get<double>(), 1e-6 * flops) << s;
    int used = 0;
    for (const auto& d : s["devices"]) used += d["nodes"].get<int>() > 0 ? 1 : 0;
    EXPECT_EQ(used, s["name"] == "sequential" ? 1 : 2) << s;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetsched
