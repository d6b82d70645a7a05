// Placement overrides (--pin NODE_OR_OP=DEVICE): every scheduler honours
// them, the plans say so, and bad pins are clear usage errors.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"
#include "plan_test_util.h"

namespace hetsched {
namespace {

using testing::expect_plan_matches_sequential;
using testing::run_cli;
using testing::schedule;

std::string platform_file(const char* name) {
  return std::string(HETSCHED_SOURCE_DIR) + "/platforms/" + name + ".json";
}

std::string usage_error(Platform platform, const Graph& g, const std::vector<Pin>& pins) {
  try {
    apply_pins(platform, g, pins);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Pins, ParseAndBadPinsAreUsageErrors) {
  Pin pin = parse_pin("Conv=emu:little");
  EXPECT_EQ(pin.node_or_op, "Conv");
  EXPECT_EQ(pin.device, "emu:little");
  for (const char* bad : {"Conv", "=cpu:0", "Conv=", "a=b=c"}) {
    try {
      parse_pin(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUsage);
      EXPECT_NE(std::string(e.what()).find("NODE_OR_OP=DEVICE"), std::string::npos) << e.what();
    }
  }

  Graph g = load_model("zoo:squeezenet1_0");
  Platform p = make_platform("", platform_file("phone-soc"));
  EXPECT_NE(usage_error(p, g, {{"Conv", "emu:gpu"}}).find("no device 'emu:gpu'"), std::string::npos);
  EXPECT_NE(usage_error(p, g, {{"Softmax2", "emu:big"}}).find("no node or op type 'Softmax2'"), std::string::npos);
  // The NPU runs convolutions, not pooling.
  std::string npu = usage_error(p, g, {{"MaxPool", "emu:npu"}});
  EXPECT_NE(npu.find("emu:npu cannot run MaxPool"), std::string::npos) << npu;
  EXPECT_NE(npu.find("it runs only Conv"), std::string::npos) << npu;
  std::string conflict = usage_error(p, g, {{"Conv", "emu:big"}, {"Conv", "emu:little"}});
  EXPECT_NE(conflict.find("send Conv"), std::string::npos) << conflict;
  // Conv+Relu run as one kernel: they cannot be pinned apart.
  std::string split = usage_error(p, g, {{"Conv", "emu:big"}, {"Relu", "emu:little"}});
  EXPECT_NE(split.find("split one kernel"), std::string::npos) << split;
}

TEST(Pins, NodeNamePinWinsOverOpTypePin) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform p = make_platform("", platform_file("phone-soc"));
  std::string first_conv;
  for (const Node& n : g.nodes)
    if (n.op_type == "Conv" && first_conv.empty()) first_conv = n.name;
  apply_pins(p, g, {{"Conv", "emu:little"}, {first_conv, "emu:big"}});
  EXPECT_EQ(p.pinned.at(first_conv).device, "emu:big");
  int big = p.find_device("emu:big"), little = p.find_device("emu:little"), npu = p.find_device("emu:npu");
  for (const Node& n : g.nodes) {
    if (n.op_type != "Conv") {
      EXPECT_FALSE(p.pinned.count(n.name)) << n.name;
      continue;
    }
    bool on_big = n.name == first_conv;
    EXPECT_EQ(p.devices[big].supports(n), on_big) << n.name;
    EXPECT_EQ(p.devices[little].supports(n), !on_big) << n.name;
    EXPECT_FALSE(p.devices[npu].supports(n)) << n.name;
    EXPECT_NE(p.devices[npu].why_not(n).find("pinned elsewhere by"), std::string::npos);
  }
}

// The NPU would take the convolutions; with them pinned to the little
// cluster, every scheduler must put them there, say why, and still give
// the sequential plan's outputs.
TEST(Pins, EverySchedulerHonoursThem) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform unpinned = make_platform("", platform_file("phone-soc"));
  Platform p = unpinned;
  std::string last_concat;
  for (const Node& n : g.nodes)
    if (n.op_type == "Concat") last_concat = n.name;
  apply_pins(p, g, {{"Conv", "emu:little"}, {last_concat, "emu:big"}});
  auto cost = std::shared_ptr<const CostModel>(make_roofline_cost_model(p));
  int little = p.find_device("emu:little"), big = p.find_device("emu:big");
  for (const auto& [name, summary] : scheduler_names()) {
    SCOPED_TRACE(name);
    std::map<std::string, std::string> params;
    if (name == "optimal") params = {{"max_tasks", "1000"}, {"time_limit", "2"}};
    Plan plan;
    try {
      plan = schedule(name, g, p, *cost, params);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    for (NodeId id = 0; id < static_cast<NodeId>(g.nodes.size()); ++id) {
      const Node& n = g.nodes[id];
      const Placement& placed = plan.placement[id];
      if (n.op_type == "Conv") {
        EXPECT_EQ(placed.device, little) << n.name;
        EXPECT_NE(placed.reason.find("pinned by Conv=emu:little"), std::string::npos) << placed.reason;
      } else if (n.name == last_concat) {
        EXPECT_EQ(placed.device, big);
        EXPECT_NE(placed.reason.find("pinned by " + last_concat + "=emu:big"), std::string::npos) << placed.reason;
      } else if (n.op_type != "Relu") {  // a Relu runs fused with its Conv, pinned with it
        EXPECT_EQ(placed.reason.find("pinned by"), std::string::npos) << n.name << ": " << placed.reason;
      }
    }
    // The sequential reference runs on the first device: no pins there.
    if (name == "heft" || name == "auto") expect_plan_matches_sequential(g, plan, unpinned, cost, name);
  }
}

// A plan file placing a pinned node elsewhere is refused with the pin named.
TEST(Pins, PlanAgainstAPinIsRefused) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform p = make_platform("", platform_file("phone-soc"));
  auto cost = std::shared_ptr<const CostModel>(make_roofline_cost_model(p));
  Plan plan = schedule("sequential", g, p, *cost, {{"device", "emu:big"}});
  apply_pins(p, g, {{"Concat", "emu:little"}});
  try {
    validate_plan(plan, g, p);
    ADD_FAILURE() << "validated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pinned elsewhere by Concat=emu:little"), std::string::npos) << e.what();
  }
}

TEST(Pins, SessionOnRealCoreGroups) {
  SessionOptions options("cpu:0,cpu:1");
  options.scheduler = "heft";
  options.pins = {"Conv=cpu:1"};
  auto db = std::filesystem::temp_directory_path() / "hetsched_test_pins.db";
  options.profile_db = db.string();
  Session s = Session::load("zoo:squeezenet1_0", {}, options);
  ASSERT_NE(s.plan(), nullptr);
  int cpu1 = s.platform().find_device("cpu:1");
  for (NodeId id = 0; id < static_cast<NodeId>(s.graph().nodes.size()); ++id)
    if (s.graph().nodes[id].op_type == "Conv") {
      EXPECT_EQ(s.plan()->placement[id].device, cpu1);
    }
  Session reference = Session::load("zoo:squeezenet1_0", {}, SessionOptions("cpu:0"));
  TensorMap inputs = s.random_inputs(3);
  testing::expect_same_outputs(s.run(inputs), reference.run(inputs), "pinned heft");
  std::filesystem::remove(db);
}

TEST(Pins, CliExplainShowsThemAndBadPinIsUsage) {
  std::string plan_file = (std::filesystem::temp_directory_path() / "hetsched_test_pins_plan.json").string();
  std::string platform = platform_file("phone-soc");
  auto made = run_cli("plan zoo:squeezenet1_0 --platform " + platform + " --scheduler heft --pin Conv=emu:little -o " +
                      plan_file);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto explained = run_cli("explain " + plan_file + " --platform " + platform);
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  EXPECT_NE(explained.output.find("pinned by Conv=emu:little"), std::string::npos) << explained.output;
  auto bad = run_cli("plan zoo:squeezenet1_0 --platform " + platform + " --pin Conv=emu:nowhere -o " + plan_file);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--pin Conv=emu:nowhere: no device 'emu:nowhere'"), std::string::npos) << bad.output;
  std::filesystem::remove(plan_file);
}

}  // namespace
}  // namespace hetsched
