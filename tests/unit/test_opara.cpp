// The "opara" scheduler: stream assignment along chains, compute/memory
// classification by arithmetic intensity, and the alternating launch order.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"

namespace hetsched {
namespace {

ValueId add_float_value(Graph& g, const std::string& name) {
  return testing::add_float_value(g, name, {1, 64});
}

void add_op(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs, ValueId output) {
  testing::add_op(g, op, name, std::move(inputs), {output});
}

const std::string kDesktopGpu = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";



Plan schedule_opara(const Graph& graph, const Platform& platform, ScheduleOptions options = {}) {
  auto cost = make_roofline_cost_model(platform);
  Plan plan = make_scheduler("opara")->schedule(graph, platform, *cost, options);
  validate_plan(plan, graph, platform);
  return plan;
}

int stream_of(const Plan& plan, const Graph& graph, const std::string& node) {
  return plan.lanes[plan.placement[graph.find_node(node)].lane].stream;
}

// The order launches appear in on one lane.
std::vector<std::string> launched_on(const Plan& plan, const Graph& graph, int lane) {
  std::vector<std::string> names;
  for (const PlanStep& step : plan.lanes[lane].steps)
    if (step.kind == StepKind::kLaunch) names.push_back(graph.nodes[step.nodes.front()].name);
  return names;
}

// x -> a -> {b -> b2, c} -> d: a chain with a side branch joined at the end.
Graph fork_join() {
  Graph g;
  g.name = "fork_join";
  g.source = "test:fork_join";
  ValueId x = add_float_value(g, "x"), a = add_float_value(g, "a"), b = add_float_value(g, "b"),
          b2 = add_float_value(g, "b2"), c = add_float_value(g, "c"), y = add_float_value(g, "y");
  add_op(g, "Relu", "a", {x}, a);
  add_op(g, "Sigmoid", "b", {a}, b);
  add_op(g, "Tanh", "b2", {b}, b2);
  add_op(g, "Exp", "c", {a}, c);
  add_op(g, "Add", "d", {b2, c}, y);
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

struct UnitCost {
  std::string name;
  double flops;
  double bytes;
};

// Independent Relu nodes reading x, each a graph output, with the given
// costs: the op type is the same for all, so only the numbers can tell them apart.
Graph independent_units(const std::vector<UnitCost>& costs) {
  Graph g;
  g.name = "independent";
  g.source = "test:independent";
  ValueId x = add_float_value(g, "x");
  g.inputs = {x};
  for (const UnitCost& unit : costs) {
    ValueId out = add_float_value(g, unit.name + "_out");
    add_op(g, "Relu", unit.name, {x}, out);
    g.outputs.push_back(out);
  }
  g.finalize();
  for (const UnitCost& unit : costs) {
    NodeCost& cost = g.nodes[g.find_node(unit.name)].cost;
    cost.flops = unit.flops;
    cost.bytes_read = unit.bytes;
    cost.bytes_written = 0;
  }
  return g;
}

TEST(OparaScheduler, GoogLeNetUsesSeveralStreamsOfTheGpu) {
  Platform platform = make_platform("", kDesktopGpu);
  Graph graph = load_model("zoo:googlenet");
  Plan plan = schedule_opara(graph, platform);
  int gpu = platform.find_device("emu:gpu");
  ASSERT_GE(gpu, 0);
  std::set<int> streams;
  for (const Lane& lane : plan.lanes) {
    bool launches = false;
    for (const PlanStep& step : lane.steps) launches |= step.kind == StepKind::kLaunch;
    if (!launches) continue;
    EXPECT_EQ(plan.devices[lane.device], "emu:gpu");
    streams.insert(lane.stream);
  }
  EXPECT_GT(streams.size(), 1u);
  ASSERT_EQ(plan.placement.size(), graph.nodes.size());
  for (const Placement& placement : plan.placement) {
    EXPECT_EQ(plan.devices[placement.device], "emu:gpu");
    EXPECT_EQ(placement.reason.rfind("opara: stream ", 0), 0u) << placement.reason;
  }
  // GoogLeNet's inception modules open more branches than the GPU's 4 streams.
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes.front().find("least-loaded"), std::string::npos) << plan.notes.front();
}

TEST(OparaScheduler, ChainKeepsItsStreamAndBranchOpensAnother) {
  Platform platform = make_platform("", kDesktopGpu);
  Graph graph = fork_join();
  Plan plan = schedule_opara(graph, platform);
  // a's first successor in topological order continues its stream; the
  // second branch finds a no longer at the tail and opens a new one.
  EXPECT_EQ(stream_of(plan, graph, "a"), 0);
  EXPECT_EQ(stream_of(plan, graph, "b"), 0);
  EXPECT_EQ(stream_of(plan, graph, "b2"), 0);
  EXPECT_EQ(stream_of(plan, graph, "c"), 1);
  // The join reuses the stream of its first input still at a tail: b2's.
  EXPECT_EQ(stream_of(plan, graph, "d"), 0);
  EXPECT_NE(plan.placement[graph.find_node("b")].reason.find("reuses Relu 'a''s stream"), std::string::npos)
      << plan.placement[graph.find_node("b")].reason;
  EXPECT_NE(plan.placement[graph.find_node("c")].reason.find("new stream"), std::string::npos);
  EXPECT_TRUE(plan.notes.empty());
}

TEST(OparaScheduler, ClassifiesByIntensityAgainstTheRidgePoint) {
  Platform platform = make_platform("", kDesktopGpu);
  // desktop-gpu's GPU: 15000 GFLOP/s over 400 GB/s, a ridge of 37.5 FLOP/byte.
  Graph graph = independent_units({{"dense", 4e7, 1e6}, {"sparse", 3e7, 1e6}});
  Plan plan = schedule_opara(graph, platform);
  const std::string& dense = plan.placement[graph.find_node("dense")].reason;
  const std::string& sparse = plan.placement[graph.find_node("sparse")].reason;
  EXPECT_NE(dense.find("compute-bound (intensity 40.0 >= ridge 37.5)"), std::string::npos) << dense;
  EXPECT_NE(sparse.find("memory-bound (intensity 30.0 < ridge 37.5)"), std::string::npos) << sparse;
}

TEST(OparaScheduler, LaunchOrderAlternatesClassesLightestFirst) {
  Platform platform = make_platform("", kDesktopGpu);
  int gpu = platform.find_device("emu:gpu");
  // One stream: every launch lands on one lane, in launch order.
  platform.devices[gpu].n_streams = 1;
  Graph graph = independent_units({{"heavy_compute", 1.5e9, 1e6},
                                   {"light_compute", 1.5e8, 1e6},
                                   {"heavy_memory", 1e6, 4e7},
                                   {"light_memory", 1e5, 4e6}});
  ScheduleOptions on_gpu;
  on_gpu.params["device"] = "emu:gpu";
  Plan plan = schedule_opara(graph, platform, on_gpu);
  int lane = plan.placement[graph.find_node("heavy_compute")].lane;
  EXPECT_EQ(launched_on(plan, graph, lane),
            (std::vector<std::string>{"light_compute", "light_memory", "heavy_compute", "heavy_memory"}));
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("emu:gpu runs at most 1 stream(s); 3 units"), std::string::npos) << plan.notes[0];
}

TEST(OparaScheduler, RejectsUnknownParametersAndDevices) {
  Platform platform = make_platform("", kDesktopGpu);
  Graph graph = fork_join();
  auto cost = make_roofline_cost_model(platform);
  auto opara = make_scheduler("opara");
  ScheduleOptions unknown_param;
  unknown_param.params["streams"] = "2";
  try {
    opara->schedule(graph, platform, *cost, unknown_param);
    FAIL() << "an unknown parameter was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("'streams'"), std::string::npos) << e.what();
  }
  ScheduleOptions unknown_device;
  unknown_device.params["device"] = "emu:tpu";
  try {
    opara->schedule(graph, platform, *cost, unknown_device);
    FAIL() << "an unknown device was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
  }
  ScheduleOptions on_cpu;
  on_cpu.params["device"] = "emu:cpu";
  Plan plan = opara->schedule(graph, platform, *cost, on_cpu);
  validate_plan(plan, graph, platform);
  for (const Placement& placement : plan.placement) EXPECT_EQ(plan.devices[placement.device], "emu:cpu");
}

}  // namespace
}  // namespace hetsched
