// The "type-based" scheduler (static op-type table) and the "nimble"
// scheduler (one chain of a minimum path cover per stream).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"

namespace hetsched {
namespace {

ValueId add_value(Graph& g, const std::string& name) { return testing::add_float_value(g, name, {1, 8}); }

void add_op(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs, ValueId output) {
  testing::add_op(g, op, name, std::move(inputs), {output});
}

const std::string kPhoneSoc = std::string(HETSCHED_SOURCE_DIR) + "/platforms/phone-soc.json";
const std::string kDesktopGpu = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";

ErrorCode error_code_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.code();
  }
  ADD_FAILURE() << "no hetsched::Error thrown";
  return ErrorCode::kRuntime;
}



// x -> Relu 'fork' -> `branches` branches of `length` unary ops each -> Sum
// 'join' -> y. Its width (largest set of mutually independent nodes) is
// `branches`.
Graph fork_join(int branches, int length) {
  Graph g;
  g.name = "fork_join";
  g.source = "test:fork_join";
  ValueId x = add_value(g, "x"), forked = add_value(g, "forked"), y = add_value(g, "y");
  add_op(g, "Relu", "fork", {x}, forked);
  std::vector<ValueId> ends;
  const char* ops[] = {"Sigmoid", "Tanh", "Exp"};
  for (int b = 0; b < branches; ++b) {
    ValueId in = forked;
    for (int k = 0; k < length; ++k) {
      std::string name = fmt::format("b{}_{}", b, k);
      ValueId out = add_value(g, name);
      add_op(g, ops[k % 3], name, {in}, out);
      in = out;
    }
    ends.push_back(in);
  }
  add_op(g, "Sum", "join", ends, y);
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  return g;
}

// Largest antichain of the fusion units' DAG by brute force (small graphs).
int width_of(const Graph& graph) {
  std::vector<std::vector<NodeId>> units = fusion_units(graph);
  const size_t n = units.size();
  std::vector<int> unit_of(graph.nodes.size());
  for (size_t u = 0; u < n; ++u)
    for (NodeId id : units[u]) unit_of[id] = static_cast<int>(u);
  std::vector<std::vector<bool>> reaches(n, std::vector<bool>(n, false));
  for (size_t u = n; u-- > 0;)
    for (NodeId id : units[u])
      for (ValueId out : graph.nodes[id].outputs)
        for (NodeId consumer : graph.values[out].consumers) {
          size_t v = unit_of[consumer];
          if (v == u) continue;
          reaches[u][v] = true;
          for (size_t w = 0; w < n; ++w)
            if (reaches[v][w]) reaches[u][w] = true;
        }
  int best = 0;
  for (uint32_t subset = 1; subset < (1u << n); ++subset) {
    bool independent = true;
    for (size_t a = 0; a < n && independent; ++a)
      for (size_t b = 0; b < n && independent; ++b)
        if ((subset >> a & 1) && (subset >> b & 1) && reaches[a][b]) independent = false;
    if (independent) best = std::max(best, __builtin_popcount(subset));
  }
  return best;
}

std::set<int> lanes_used(const Plan& plan) {
  std::set<int> lanes;
  for (const Placement& p : plan.placement) lanes.insert(p.lane);
  return lanes;
}

// ---------------------------------------------------------------- type-based

TEST(TypeBasedScheduler, PutsConvOnTheNpuAndTheRestOnACpu) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kPhoneSoc);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = make_scheduler("type-based")->schedule(graph, platform, *cost, {});
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  EXPECT_EQ(plan.scheduler, "type-based");
  ASSERT_EQ(plan.placement.size(), graph.nodes.size());
  std::set<std::string> accelerated = {"Conv", "ConvTranspose", "Gemm", "MatMul"};
  int n_conv = 0;
  for (const auto& unit : fusion_units(graph)) {
    const Node& head = graph.nodes[unit[0]];
    for (NodeId id : unit) {
      const std::string& device = plan.devices[plan.placement[id].device];
      if (graph.nodes[id].op_type == "Conv") {
        ++n_conv;
        EXPECT_EQ(device, "emu:npu") << graph.nodes[id].label();
      }
      if (!accelerated.count(head.op_type)) {
        EXPECT_EQ(device, "emu:big") << graph.nodes[id].label();
        EXPECT_EQ(plan.placement[id].reason, "type-based: " + head.op_type + " -> emu:big (the table's choice)");
      }
    }
  }
  EXPECT_GT(n_conv, 0);
}

TEST(TypeBasedScheduler, HonoursTheTableAndTheCpuParameter) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kPhoneSoc);
  auto cost = make_roofline_cost_model(platform);
  ScheduleOptions options;
  options.params = {{"cpu", "emu:little"}, {"table", "Conv=emu:big, MaxPool=emu:npu"}};
  Plan plan = make_scheduler("type-based")->schedule(graph, platform, *cost, options);
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  bool saw_max_pool = false;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const std::string& device = plan.devices[plan.placement[n].device];
    const std::string& op = graph.nodes[n].op_type;
    if (op == "Conv") {
      EXPECT_EQ(device, "emu:big") << graph.nodes[n].label();
    }
    if (op == "Concat") {
      EXPECT_EQ(device, "emu:little") << graph.nodes[n].label();
    }
    if (op == "MaxPool") {
      // The NPU does not run MaxPool: the table's choice falls back to the CPU device.
      saw_max_pool = true;
      EXPECT_EQ(device, "emu:little");
      EXPECT_EQ(plan.placement[n].reason,
                "type-based: MaxPool -> emu:little (MaxPool not supported on emu:npu, fell back to emu:little)");
    }
  }
  EXPECT_TRUE(saw_max_pool);
}

TEST(TypeBasedScheduler, RejectsUnknownParametersAndDevices) {
  Graph graph = fork_join(2, 1);
  Platform platform = make_platform("", kPhoneSoc);
  auto cost = make_roofline_cost_model(platform);
  auto scheduler = make_scheduler("type-based");
  for (auto params : std::vector<std::map<std::string, std::string>>{
           {{"devcie", "emu:npu"}}, {{"accelerator", "emu:tpu"}}, {{"table", "Conv"}}, {{"table", "Conv=nowhere"}}}) {
    ScheduleOptions options;
    options.params = params;
    EXPECT_EQ(error_code_of([&] { scheduler->schedule(graph, platform, *cost, options); }), ErrorCode::kUsage)
        << params.begin()->first << "=" << params.begin()->second;
  }
}

// ---------------------------------------------------------------- nimble

TEST(NimbleScheduler, OneChainPerIndependentBranch) {
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  for (auto [branches, length] : std::vector<std::pair<int, int>>{{2, 1}, {3, 2}, {4, 3}}) {
    Graph graph = fork_join(branches, length);
    ASSERT_EQ(width_of(graph), branches);
    Plan plan = make_scheduler("nimble")->schedule(graph, platform, *cost, {});
    ASSERT_NO_THROW(validate_plan(plan, graph, platform));
    EXPECT_EQ(static_cast<int>(lanes_used(plan).size()), branches) << branches << " branches";
    for (const Placement& p : plan.placement) {
      EXPECT_EQ(plan.devices[p.device], "emu:gpu");
      EXPECT_NE(p.reason.find(" of " + std::to_string(branches) + " on stream "), std::string::npos) << p.reason;
    }
    // The fork opens chain 1 on stream 0.
    EXPECT_EQ(plan.placement[graph.find_node("fork")].reason,
              "nimble: chain 1 of " + std::to_string(branches) + " on stream 0");
  }
}

TEST(NimbleScheduler, SharesStreamsWhenChainsOutnumberThem) {
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  Graph graph = fork_join(6, 2);
  Plan plan = make_scheduler("nimble")->schedule(graph, platform, *cost, {});
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  EXPECT_EQ(lanes_used(plan).size(), 4u);
  bool noted = false;
  for (const std::string& note : plan.notes) noted |= note.find("stream k mod 4") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(NimbleScheduler, GoogleNetUsesSeveralStreamsOfTheGpu) {
  Graph graph = load_model("zoo:googlenet");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = make_scheduler("nimble")->schedule(graph, platform, *cost, {});
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  ASSERT_EQ(plan.placement.size(), graph.nodes.size());
  std::set<int> streams;
  for (const Placement& p : plan.placement) {
    ASSERT_GE(p.device, 0);
    EXPECT_EQ(plan.devices[p.device], "emu:gpu");
    EXPECT_EQ(p.reason.rfind("nimble: chain ", 0), 0u) << p.reason;
    streams.insert(plan.lanes[p.lane].stream);
  }
  EXPECT_GT(streams.size(), 1u);
}

TEST(NimbleScheduler, RejectsUnknownParametersAndDevices) {
  Graph graph = fork_join(2, 1);
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  auto scheduler = make_scheduler("nimble");
  for (auto params : std::vector<std::map<std::string, std::string>>{{{"streams", "2"}}, {{"device", "emu:tpu"}}}) {
    ScheduleOptions options;
    options.params = params;
    EXPECT_EQ(error_code_of([&] { scheduler->schedule(graph, platform, *cost, options); }), ErrorCode::kUsage);
  }
  ScheduleOptions on_cpu;
  on_cpu.params = {{"device", "emu:cpu"}};
  Plan plan = scheduler->schedule(graph, platform, *cost, on_cpu);
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  EXPECT_EQ(lanes_used(plan).size(), 1u);  // one stream: both chains share it
}

}  // namespace
}  // namespace hetsched
