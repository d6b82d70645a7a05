// The simulator on hand-built plans: lanes, events, copies, hand-overs,
// co-run interference, utilisation and estimate counts.
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli_test_util.h"
#include <nlohmann/json.hpp>

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;

// Launch times come from a table by node name (a sum for a group); all
// transfers but same-space hand-overs come from the roofline model.
class FixedCostModel : public CostModel {
 public:
  FixedCostModel(const Platform& platform, std::map<std::string, double> us_by_node)
      : roofline_(make_roofline_cost_model(platform)), us_by_node_(std::move(us_by_node)) {}

  Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) const override {
    double us = 0;
    for (NodeId id : nodes) us += us_by_node_.at(graph.nodes[id].name);
    return {us, CostSource::kMeasured};
  }
  Estimate transfer(double bytes, const PlatformDevice& from, const PlatformDevice& to) const override {
    if (handover_us > 0 && from.name != to.name && from.memory_space == to.memory_space)
      return {handover_us, CostSource::kLink};
    return roofline_->transfer(bytes, from, to);
  }
  double handover_us = 0;

 private:
  std::unique_ptr<CostModel> roofline_;
  std::map<std::string, double> us_by_node_;
};

// A graph of named nodes; each node reads the listed values (or the graph
// input "x") and writes one value named after it, of 1000 floats.
class GraphBuilder {
 public:
  GraphBuilder() { value("x"); }
  NodeId node(const std::string& name, std::vector<std::string> inputs = {"x"}) {
    Node n;
    n.op_type = "Relu";
    n.name = name;
    for (const auto& input : inputs) n.inputs.push_back(graph_.find_value(input));
    n.outputs.push_back(value(name));
    return graph_.add_node(std::move(n));
  }
  Graph finish(const std::vector<std::string>& outputs) {
    graph_.inputs = {graph_.find_value("x")};
    for (const auto& o : outputs) graph_.outputs.push_back(graph_.find_value(o));
    graph_.finalize();
    graph_.annotate_costs();
    return std::move(graph_);
  }

 private:
  ValueId value(const std::string& name) {
    Value v;
    v.name = name;
    v.dtype = DType::kFloat32;
    v.has_shape = true;
    v.shape = {1000};
    return graph_.add_value(std::move(v));
  }
  Graph graph_;
};

PlatformDevice device(const std::string& name, const std::string& space = kHostMemory) {
  PlatformDevice d;
  d.name = name;
  d.memory_space = space;
  d.peak_gflops = 1000;  // 1e6 FLOP per microsecond
  d.bandwidth_gbps = 10;  // 1e4 bytes per microsecond
  d.signature = "sig-" + name;
  return d;
}

PlanStep launch(const Graph& g, const std::vector<std::string>& names) {
  PlanStep s;
  s.kind = StepKind::kLaunch;
  for (const auto& n : names) s.nodes.push_back(g.find_node(n));
  return s;
}
PlanStep record(int event) {
  PlanStep s;
  s.kind = StepKind::kRecord;
  s.event = event;
  return s;
}
PlanStep wait(int event) {
  PlanStep s;
  s.kind = StepKind::kWait;
  s.event = event;
  return s;
}
PlanStep copy(const Graph& g, const std::string& value, const std::string& from, const std::string& to) {
  PlanStep s;
  s.kind = StepKind::kCopy;
  s.value = g.find_value(value);
  s.from_space = from;
  s.to_space = to;
  return s;
}

Lane lane(int device, std::vector<PlanStep> steps, int stream = 0) {
  Lane l;
  l.device = device;
  l.stream = stream;
  l.steps = std::move(steps);
  return l;
}

Plan plan_on(const Platform& p, std::vector<Lane> lanes, int n_events = 0) {
  Plan plan;
  plan.scheduler = "hand-built";
  for (const auto& d : p.devices) plan.devices.push_back(d.name);
  plan.lanes = std::move(lanes);
  plan.n_events = n_events;
  return plan;
}

Platform host_platform(int n_devices) {
  Platform p;
  p.name = "test";
  for (int i = 0; i < n_devices; ++i) p.devices.push_back(device("cpu:" + std::to_string(i)));
  return p;
}

int estimates(const SimResult& r, CostSource source) { return r.n_estimates[static_cast<int>(source)]; }

TEST(Simulator, ChainOnOneLaneIsTheSum) {
  GraphBuilder b;
  b.node("a");
  b.node("b", {"a"});
  b.node("c", {"b"});
  Graph g = b.finish({"c"});
  Platform p = host_platform(1);
  FixedCostModel cost(p, {{"a", 10}, {"b", 20}, {"c", 30}});
  Plan plan = plan_on(p, {lane(0, {launch(g, {"a"}), launch(g, {"b"}), launch(g, {"c"})})});

  SimResult r = simulate(plan, g, p, cost);
  EXPECT_DOUBLE_EQ(r.makespan_us, 60);
  ASSERT_EQ(r.busy_us.size(), 1u);
  EXPECT_DOUBLE_EQ(r.busy_us[0], 60);
  EXPECT_DOUBLE_EQ(r.utilisation[0], 1);
  EXPECT_EQ(estimates(r, CostSource::kMeasured), 3);

  EXPECT_EQ(r.trace.kind, "simulated");
  EXPECT_EQ(r.trace.devices, std::vector<std::string>{"cpu:0"});
  EXPECT_DOUBLE_EQ(r.trace.makespan_us, 60);
  ASSERT_EQ(r.trace.events.size(), 3u);
  const TraceEvent& second = r.trace.events[1];
  EXPECT_EQ(second.name, "Relu 'b'");
  EXPECT_EQ(second.category, "launch");
  EXPECT_DOUBLE_EQ(second.start_us, 10);
  EXPECT_DOUBLE_EQ(second.duration_us, 20);
  EXPECT_EQ(second.op_name, "Relu");
  EXPECT_EQ(second.provider, "cpu:0");
  EXPECT_EQ(second.node_index, g.find_node("b"));
}

TEST(Simulator, FusedLaunchNamesItsNodes) {
  GraphBuilder b;
  b.node("a");
  b.node("b", {"a"});
  Graph g = b.finish({"b"});
  Platform p = host_platform(1);
  FixedCostModel cost(p, {{"a", 1}, {"b", 2}});
  SimResult r = simulate(plan_on(p, {lane(0, {launch(g, {"a", "b"})})}), g, p, cost);
  ASSERT_EQ(r.trace.events.size(), 1u);
  EXPECT_EQ(r.trace.events[0].name, "Relu 'a' + Relu 'b'");
  EXPECT_EQ(r.trace.events[0].op_name, "Relu+Relu");
  EXPECT_DOUBLE_EQ(r.makespan_us, 3);
}

// x -> a (10 us, lane 0) and x -> b (30 us, lane 1); join (5 us) on lane 0
// after waiting for b.
TEST(Simulator, TwoBranchesTakeTheLongerOneAndRespectWaits) {
  GraphBuilder b;
  b.node("a");
  b.node("b");
  b.node("join", {"a", "b"});
  Graph g = b.finish({"join"});
  Platform p = host_platform(2);
  FixedCostModel cost(p, {{"a", 10}, {"b", 30}, {"join", 5}});
  Plan plan = plan_on(p,
                      {lane(0, {launch(g, {"a"}), wait(0), launch(g, {"join"})}),
                       lane(1, {launch(g, {"b"}), record(0)})},
                      1);

  SimResult r = simulate(plan, g, p, cost);
  EXPECT_DOUBLE_EQ(r.makespan_us, 35);
  EXPECT_DOUBLE_EQ(r.busy_us[0], 15);
  EXPECT_DOUBLE_EQ(r.busy_us[1], 30);
  EXPECT_NEAR(r.utilisation[0], 15.0 / 35.0, 1e-12);
  EXPECT_NEAR(r.utilisation[1], 30.0 / 35.0, 1e-12);

  const TraceEvent* held = nullptr;
  for (const auto& e : r.trace.events)
    if (e.category == "wait") held = &e;
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->name, "wait e0");
  EXPECT_DOUBLE_EQ(held->start_us, 10);
  EXPECT_DOUBLE_EQ(held->duration_us, 20);
  EXPECT_EQ(held->node_index, -1);
  // join reads b from another lane of the same space: one hand-over, free here.
  EXPECT_EQ(estimates(r, CostSource::kMeasured), 3);
  EXPECT_EQ(estimates(r, CostSource::kFree), 1);
}

TEST(Simulator, AWaitDelaysAnIndependentLaunch) {
  GraphBuilder b;
  b.node("slow");
  b.node("quick");
  Graph g = b.finish({"slow", "quick"});
  Platform p = host_platform(2);
  FixedCostModel cost(p, {{"slow", 50}, {"quick", 10}});
  Plan held = plan_on(p, {lane(0, {wait(0), launch(g, {"quick"})}), lane(1, {launch(g, {"slow"}), record(0)})}, 1);
  EXPECT_DOUBLE_EQ(simulate(held, g, p, cost).makespan_us, 60);
  Plan free = plan_on(p, {lane(0, {launch(g, {"quick"})}), lane(1, {launch(g, {"slow"}), record(0)})}, 1);
  EXPECT_DOUBLE_EQ(simulate(free, g, p, cost).makespan_us, 50);
}

TEST(Simulator, LaunchesOnOverlappingDevicesRunOneAtATime) {
  // Three independent launches of 100 us: a on cpu:0, b on cpu:1, c on their
  // union cpu:0-1. a and b run side by side; c shares their cores, so the
  // plan's exclusion Waits hold it until both are done.
  GraphBuilder b;
  for (const char* name : {"a", "b", "c"}) b.node(name);
  Graph g = b.finish({"a", "b", "c"});
  Platform p = host_platform(2);
  p.devices.push_back(device("cpu:0-1"));
  p.devices[0].overlaps = {"cpu:0-1"};
  p.devices[1].overlaps = {"cpu:0-1"};
  p.devices[2].overlaps = {"cpu:0", "cpu:1"};
  FixedCostModel cost(p, {{"a", 100}, {"b", 100}, {"c", 100}});
  std::vector<LaunchAssignment> launches = {
      {{g.find_node("a")}, 0, 0, ""}, {{g.find_node("b")}, 1, 0, ""}, {{g.find_node("c")}, 2, 0, ""}};
  SimResult r = simulate(build_plan(g, p, launches, "t"), g, p, cost);
  EXPECT_NEAR(r.makespan_us, 200, 1e-6);
  for (const TraceEvent& x : r.trace.events)
    for (const TraceEvent& y : r.trace.events)
      if (x.category == "launch" && y.category == "launch" && x.device == 2 && y.device != 2) {
        EXPECT_GE(std::max(x.start_us, y.start_us), std::min(x.start_us + x.duration_us, y.start_us + y.duration_us))
            << x.name << " overlaps " << y.name;
      }
  // The same devices, nothing overlapping: all three at once.
  Platform disjoint = p;
  for (PlatformDevice& d : disjoint.devices) d.overlaps.clear();
  EXPECT_NEAR(simulate(build_plan(g, disjoint, launches, "t"), g, disjoint, cost).makespan_us, 100, 1e-6);
}

TEST(Simulator, CrossLaneHandOverAddsToTheReader) {
  GraphBuilder b;
  b.node("a");
  b.node("b", {"a"});
  Graph g = b.finish({"b"});
  Platform p = host_platform(2);
  FixedCostModel cost(p, {{"a", 10}, {"b", 10}});
  cost.handover_us = 7;
  Plan plan = plan_on(p, {lane(0, {launch(g, {"a"}), record(0)}), lane(1, {wait(0), launch(g, {"b"})})}, 1);
  SimResult r = simulate(plan, g, p, cost);
  EXPECT_DOUBLE_EQ(r.makespan_us, 27);
  EXPECT_EQ(estimates(r, CostSource::kLink), 1);
  // On one lane nothing is handed over.
  Plan one_lane = plan_on(p, {lane(0, {launch(g, {"a"}), launch(g, {"b"})})});
  EXPECT_DOUBLE_EQ(simulate(one_lane, g, p, cost).makespan_us, 20);
}

TEST(Simulator, CopyOverALinkAddsLatencyAndBytesOverBandwidth) {
  GraphBuilder b;
  b.node("a");
  Graph g = b.finish({"a"});
  Platform p;
  p.name = "test";
  p.devices.push_back(device("cpu:0"));
  p.devices.push_back(device("emu:gpu", "gpu"));
  Link to_gpu{kHostMemory, "gpu", 5, 1, "file"};  // 5 us + 1000 bytes per microsecond
  Link to_host{"gpu", kHostMemory, 2, 4, "file"};
  p.links = {to_gpu, to_host};
  FixedCostModel cost(p, {{"a", 10}});
  // x (4000 bytes) goes over, a runs on the GPU, its output comes back.
  Plan plan = plan_on(p, {lane(1, {copy(g, "x", kHostMemory, "gpu"), launch(g, {"a"}), copy(g, "a", "gpu", kHostMemory)})});

  SimResult r = simulate(plan, g, p, cost);
  EXPECT_DOUBLE_EQ(r.makespan_us, (5 + 4) + 10 + (2 + 1));
  EXPECT_EQ(estimates(r, CostSource::kLink), 2);
  EXPECT_DOUBLE_EQ(r.busy_us[1], r.makespan_us);
  EXPECT_DOUBLE_EQ(r.busy_us[0], 0);
  ASSERT_EQ(r.trace.events.size(), 3u);
  EXPECT_EQ(r.trace.events[0].category, "copy");
  EXPECT_EQ(r.trace.events[0].name, "copy 'x' host->gpu");
  EXPECT_DOUBLE_EQ(r.trace.events[0].duration_us, 9);
  EXPECT_EQ(r.trace.events[0].provider, "emu:gpu");
}

TEST(Simulator, CopyWithoutALinkIsRefused) {
  GraphBuilder b;
  b.node("a");
  Graph g = b.finish({"a"});
  Platform p;
  p.devices = {device("cpu:0"), device("emu:dsa", "dsa")};
  FixedCostModel cost(p, {{"a", 10}});
  Plan plan = plan_on(p, {lane(1, {copy(g, "x", kHostMemory, "dsa"), launch(g, {"a"})})});
  try {
    simulate(plan, g, p, cost);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_THAT(e.what(), HasSubstr("no link moves 'x' from host to dsa"));
  }
}

TEST(Simulator, AWaitOnAnEventNeverRecordedIsRefused) {
  GraphBuilder b;
  b.node("a");
  Graph g = b.finish({"a"});
  Platform p = host_platform(1);
  FixedCostModel cost(p, {{"a", 10}});
  Plan plan = plan_on(p, {lane(0, {wait(0), launch(g, {"a"})})}, 1);
  try {
    simulate(plan, g, p, cost);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_THAT(e.what(), HasSubstr("event 0"));
  }
}

// Two devices on one DRAM: its bandwidth equals each device's own.
class SimulatorInterference : public ::testing::Test {
 protected:
  void SetUp() override {
    platform_.name = "shared dram";
    for (const char* name : {"cpu:0", "cpu:1"}) {
      PlatformDevice d = device(name);
      d.shared_resource = "dram";
      platform_.devices.push_back(d);
    }
    platform_.resources.push_back({"dram", 10});
  }

  // Sets a node's work so that over `us` alone it uses these fractions of
  // its device's peaks (1e6 FLOP and 1e4 bytes per microsecond).
  static void set_work(Graph& g, const std::string& node, double us, double compute, double memory) {
    NodeCost& c = g.nodes[g.find_node(node)].cost;
    c.flops = compute * us * 1e6;
    c.bytes_read = memory * us * 1e4;
    c.bytes_written = 0;
  }

  SimResult run(const Graph& g, const Plan& plan, const CostModel& cost, bool interference) {
    SimOptions options;
    options.interference = interference;
    return simulate(plan, g, platform_, cost, options);
  }

  Platform platform_;
};

TEST_F(SimulatorInterference, TwoMemoryBoundLaunchesSlowEachOther) {
  GraphBuilder b;
  b.node("m1");
  b.node("m2");
  Graph g = b.finish({"m1", "m2"});
  set_work(g, "m1", 100, 0.01, 1);
  set_work(g, "m2", 50, 0.01, 1);
  FixedCostModel cost(platform_, {{"m1", 100}, {"m2", 50}});
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"m1"})}), lane(1, {launch(g, {"m2"})})});

  EXPECT_DOUBLE_EQ(run(g, plan, cost, false).makespan_us, 100);
  // Both at half speed until m2 ends at 100 us; m1 then has 50 us left alone.
  SimResult shared = run(g, plan, cost, true);
  EXPECT_NEAR(shared.makespan_us, 150, 1e-9);
  EXPECT_NEAR(shared.busy_us[1], 100, 1e-9);
}

TEST_F(SimulatorInterference, ComputeBoundAndMemoryBoundHardlySlow) {
  GraphBuilder b;
  b.node("c");
  b.node("m");
  Graph g = b.finish({"c", "m"});
  set_work(g, "c", 100, 1, 0.05);
  set_work(g, "m", 100, 0.05, 1);
  FixedCostModel cost(platform_, {{"c", 100}, {"m", 100}});
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"c"})}), lane(1, {launch(g, {"m"})})});
  double alone = run(g, plan, cost, false).makespan_us;
  double together = run(g, plan, cost, true).makespan_us;
  EXPECT_DOUBLE_EQ(alone, 100);
  EXPECT_GT(together, alone);
  EXPECT_LE(together, 1.06 * alone);
}

TEST_F(SimulatorInterference, DevicesWithoutASharedResourceDoNotInterfere) {
  for (auto& d : platform_.devices) d.shared_resource.clear();
  GraphBuilder b;
  b.node("m1");
  b.node("m2");
  Graph g = b.finish({"m1", "m2"});
  set_work(g, "m1", 100, 0, 1);
  set_work(g, "m2", 100, 0, 1);
  FixedCostModel cost(platform_, {{"m1", 100}, {"m2", 100}});
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"m1"})}), lane(1, {launch(g, {"m2"})})});
  EXPECT_DOUBLE_EQ(run(g, plan, cost, true).makespan_us, 100);
}

TEST_F(SimulatorInterference, TwoStreamsOfOneDeviceShareItsCompute) {
  platform_.devices.resize(1);
  platform_.devices[0].n_streams = 2;
  GraphBuilder b;
  b.node("c1");
  b.node("c2");
  Graph g = b.finish({"c1", "c2"});
  set_work(g, "c1", 100, 1, 0);
  set_work(g, "c2", 100, 1, 0);
  FixedCostModel cost(platform_, {{"c1", 100}, {"c2", 100}});
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"c1"})}, 0), lane(0, {launch(g, {"c2"})}, 1)});

  SimResult apart = run(g, plan, cost, false);
  EXPECT_DOUBLE_EQ(apart.makespan_us, 100);
  SimResult shared = run(g, plan, cost, true);
  EXPECT_NEAR(shared.makespan_us, 200, 1e-9);
  // The device's streams overlap: busy is their union, utilisation at most 1.
  ASSERT_EQ(shared.busy_us.size(), 1u);
  EXPECT_NEAR(shared.busy_us[0], 200, 1e-9);
  EXPECT_NEAR(shared.utilisation[0], 1, 1e-12);
  ASSERT_EQ(shared.trace.events.size(), 2u);
  EXPECT_EQ(shared.trace.events[0].stream + shared.trace.events[1].stream, 1);
}

// FixedCostModel whose launches, under co-run, take `corun_ratio` times
// their time alone.
class CorunCostModel : public FixedCostModel {
 public:
  CorunCostModel(const Platform& platform, std::map<std::string, double> us_by_node, double corun_ratio)
      : FixedCostModel(platform, std::move(us_by_node)), corun_ratio_(corun_ratio) {}
  std::optional<double> corun_us(const Graph& graph, const std::vector<NodeId>& nodes,
                                 const PlatformDevice& device) const override {
    return corun_ratio_ * launch(graph, nodes, device).us;
  }

 private:
  double corun_ratio_;
};

TEST_F(SimulatorInterference, MeasuredCorunSlowsOverlappingLaunchesOfTwoDevices) {
  GraphBuilder b;
  b.node("a");
  b.node("b");
  Graph g = b.finish({"a", "b"});
  // Light enough that the fluid model sees no interference at all.
  set_work(g, "a", 100, 0.1, 0.1);
  set_work(g, "b", 50, 0.1, 0.1);
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"a"})}), lane(1, {launch(g, {"b"})})});
  FixedCostModel fluid_only(platform_, {{"a", 100}, {"b", 50}});
  EXPECT_NEAR(run(g, plan, fluid_only, true).makespan_us, 100, 1e-9);

  // Both at 1/1.5 speed until b ends at 75 us, with a half done; a then runs alone.
  CorunCostModel corun(platform_, {{"a", 100}, {"b", 50}}, 1.5);
  SimResult shared = run(g, plan, corun, true);
  EXPECT_NEAR(shared.makespan_us, 125, 1e-9);
  EXPECT_NEAR(shared.busy_us[1], 75, 1e-9);
  EXPECT_NEAR(run(g, plan, corun, false).makespan_us, 100, 1e-9);
}

TEST_F(SimulatorInterference, MeasuredCorunNeedsAnotherDeviceOfTheResourceBusy) {
  GraphBuilder b;
  b.node("a");
  b.node("b", {"a"});
  Graph g = b.finish({"b"});
  set_work(g, "a", 100, 0.1, 0.1);
  set_work(g, "b", 100, 0.1, 0.1);
  CorunCostModel corun(platform_, {{"a", 100}, {"b", 100}}, 1.5);

  // A launch alone on the machine.
  Plan alone = plan_on(platform_, {lane(0, {launch(g, {"a"}), launch(g, {"b"})})});
  EXPECT_NEAR(run(g, alone, corun, true).makespan_us, 200, 1e-9);
  // On two devices but one after the other: never at once.
  Plan in_turn = plan_on(platform_, {lane(0, {launch(g, {"a"}), record(0)}), lane(1, {wait(0), launch(g, {"b"})})}, 1);
  EXPECT_NEAR(run(g, in_turn, corun, true).makespan_us, 200, 1e-9);
  // Two devices that share no resource.
  for (auto& d : platform_.devices) d.shared_resource.clear();
  GraphBuilder pb;
  pb.node("a");
  pb.node("b");
  Graph parallel = pb.finish({"a", "b"});
  Plan apart = plan_on(platform_, {lane(0, {launch(parallel, {"a"})}), lane(1, {launch(parallel, {"b"})})});
  EXPECT_NEAR(run(parallel, apart, corun, true).makespan_us, 100, 1e-9);
}

TEST_F(SimulatorInterference, FluidSlowdownWinsOverASmallerCorunRatio) {
  GraphBuilder b;
  b.node("m1");
  b.node("m2");
  Graph g = b.finish({"m1", "m2"});
  set_work(g, "m1", 100, 0.01, 1);
  set_work(g, "m2", 50, 0.01, 1);
  Plan plan = plan_on(platform_, {lane(0, {launch(g, {"m1"})}), lane(1, {launch(g, {"m2"})})});
  // Fluid: half speed each, as in TwoMemoryBoundLaunchesSlowEachOther.
  CorunCostModel mild(platform_, {{"m1", 100}, {"m2", 50}}, 1.25);
  EXPECT_NEAR(run(g, plan, mild, true).makespan_us, 150, 1e-9);
  // A co-run time below the time alone is noise: no speed-up.
  set_work(g, "m1", 100, 0.1, 0.1);
  set_work(g, "m2", 50, 0.1, 0.1);
  CorunCostModel faster(platform_, {{"m1", 100}, {"m2", 50}}, 0.5);
  EXPECT_NEAR(run(g, plan, faster, true).makespan_us, 100, 1e-9);
}

TEST(Simulator, RooflineCountsAndUtilisationOfAnIdleDevice) {
  GraphBuilder b;
  b.node("a");
  b.node("b", {"a"});
  Graph g = b.finish({"b"});
  Platform p = host_platform(2);
  auto roofline = make_roofline_cost_model(p);
  Plan plan = plan_on(p, {lane(0, {launch(g, {"a"}), launch(g, {"b"})})});
  SimResult r = simulate(plan, g, p, *roofline);
  EXPECT_EQ(estimates(r, CostSource::kRoofline), 2);
  EXPECT_EQ(estimates(r, CostSource::kMeasured), 0);
  // Each Relu moves 8000 bytes at 1e4 bytes per microsecond.
  EXPECT_NEAR(r.makespan_us, 1.6, 1e-9);
  ASSERT_EQ(r.utilisation.size(), 2u);
  EXPECT_DOUBLE_EQ(r.utilisation[1], 0);
}

// A bert-sized plan (several thousand launches over four lanes with events
// between them) is simulated in well under 100 ms.
TEST(Simulator, LargePlansAreFast) {
  constexpr int kLayers = 500, kLanes = 4;
  GraphBuilder b;
  std::string previous = "x";
  std::vector<std::string> outputs;
  for (int layer = 0; layer < kLayers; ++layer) {
    std::vector<std::string> branch_outputs;
    for (int l = 0; l < kLanes; ++l) {
      std::string name = "n" + std::to_string(layer) + "_" + std::to_string(l);
      b.node(name, {previous});
      branch_outputs.push_back(name);
    }
    std::string join = "join" + std::to_string(layer);
    b.node(join, branch_outputs);
    previous = join;
  }
  Graph g = b.finish({previous});
  Platform p = host_platform(kLanes);
  for (auto& d : p.devices) d.shared_resource = "dram";
  p.resources.push_back({"dram", 20});
  auto roofline = make_roofline_cost_model(p);

  Plan plan = plan_on(p, {});
  for (int l = 0; l < kLanes; ++l) plan.lanes.push_back(lane(l, {}));
  int event = 0;
  for (int layer = 0; layer < kLayers; ++layer) {
    std::string join = "join" + std::to_string(layer);
    for (int l = 0; l < kLanes; ++l) {
      if (layer > 0 && l > 0) plan.lanes[l].steps.push_back(wait(event - 1));
      plan.lanes[l].steps.push_back(launch(g, {"n" + std::to_string(layer) + "_" + std::to_string(l)}));
      if (l > 0) plan.lanes[l].steps.push_back(record(event + l - 1));
    }
    for (int l = 1; l < kLanes; ++l) plan.lanes[0].steps.push_back(wait(event + l - 1));
    plan.lanes[0].steps.push_back(launch(g, {join}));
    plan.lanes[0].steps.push_back(record(event + kLanes - 1));
    event += kLanes;
  }
  plan.n_events = event;

  auto start = std::chrono::steady_clock::now();
  SimResult r = simulate(plan, g, p, *roofline);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 100);
  EXPECT_EQ(estimates(r, CostSource::kRoofline), kLayers * (kLanes + 1));
  EXPECT_GT(r.makespan_us, 0);
  EXPECT_GT(r.trace.events.size(), static_cast<size_t>(kLayers * (kLanes + 1)));  // launches and waits
}

// ---------------------------------------------------------------- CLI

using hetsched::testing::CliResult;
using hetsched::testing::run_cli;

// Two emulated devices on one DRAM: nothing to calibrate, so the CLI's cost
// model is the roofline of these numbers.
constexpr const char* kTwoDevicePlatform = R"({
  "name": "sim-test",
  "devices": [
    {"name": "a", "kind": "cpu", "streams": 1, "peak_gflops": 0.01, "bandwidth_gbps": 0.005,
     "launch_overhead_us": 2, "shared_resource": "dram"},
    {"name": "b", "kind": "cpu", "streams": 1, "peak_gflops": 0.02, "bandwidth_gbps": 0.005,
     "launch_overhead_us": 3, "shared_resource": "dram"}
  ],
  "resources": [{"name": "dram", "bandwidth_gbps": 0.006}]
})";

class SimulatorCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir(std::string("simcli_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    model_ = (dir_ / "model.onnx").string();
    testing::write_model(testing::relu_add_model(), model_);
    platform_ = (dir_ / "platform.json").string();
    std::ofstream(platform_) << kTwoDevicePlatform;
    common_ = model_ + " --platform " + platform_ + " --db " + (dir_ / "profile.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string model_, platform_, common_;
};

TEST_F(SimulatorCli, PredictsAPlanFileAsTheLibraryDoes) {
  Graph g = load_model(model_);
  Platform p = make_platform("", platform_);
  auto roofline = make_roofline_cost_model(p);
  Plan plan = make_scheduler("round-robin")->schedule(g, p, *roofline, {});
  std::string plan_path = (dir_ / "plan.json").string();
  write_plan_file(plan, g, plan_path);
  SimResult expected = simulate(plan, g, p, *roofline);

  std::string json_path = (dir_ / "sim.json").string(), trace_path = (dir_ / "trace.json").string();
  CliResult r = run_cli("simulate " + common_ + " --plan " + plan_path + " --json " + json_path + " --trace " +
                        trace_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(fmt::format("predicted makespan: {:.3f} ms (simulated)", expected.makespan_us / 1e3)));
  EXPECT_THAT(r.output, HasSubstr("emu:a"));
  EXPECT_THAT(r.output, HasSubstr("estimates: roofline 2"));

  nlohmann::json j = nlohmann::json::parse(std::ifstream(json_path));
  EXPECT_EQ(j["model"], model_);
  EXPECT_EQ(j["scheduler"], "round-robin");
  EXPECT_NEAR(j["predicted_ms"].get<double>(), expected.makespan_us / 1e3, 1e-9);
  ASSERT_EQ(j["devices"].size(), plan.devices.size());
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    EXPECT_EQ(j["devices"][d]["name"], plan.devices[d]);
    EXPECT_NEAR(j["devices"][d]["busy_ms"].get<double>(), expected.busy_us[d] / 1e3, 1e-9);
    EXPECT_NEAR(j["devices"][d]["utilisation"].get<double>(), expected.utilisation[d], 1e-9);
  }
  EXPECT_EQ(j["estimates"]["roofline"], 2);
  EXPECT_EQ(j["estimates"]["measured"], 0);

  nlohmann::json trace = nlohmann::json::parse(std::ifstream(trace_path));
  int launches = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "launch") ++launches;
  EXPECT_EQ(launches, 2);
}

TEST_F(SimulatorCli, SchedulesWhenGivenAScheduler) {
  CliResult r = run_cli("simulate " + common_ + " --scheduler sequential --no-interference");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("plan: sequential"));
  EXPECT_THAT(r.output, HasSubstr("(simulated)"));
  EXPECT_THAT(r.output, HasSubstr("interference: off"));
}

TEST_F(SimulatorCli, SchedulerAndPlanTogetherAreAUsageError) {
  CliResult r = run_cli("simulate " + common_ + " --scheduler sequential --plan " + (dir_ / "p.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("either --scheduler NAME or --plan FILE"));
  EXPECT_EQ(run_cli("simulate " + common_ + " --scheduler no-such-scheduler").exit_code, 2);
}

}  // namespace
}  // namespace hetsched
