// Devices that compute in some number formats only (PlatformDevice::
// precisions): schedulers place a quantized model's int8 work on an int8
// accelerator, keep float work off it, cost it at its int8 rate, and the
// plan gives the sequential plan's outputs.
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "hetsched/quantize.h"
#include "plan_test_util.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using namespace hetsched::testing;

// A scratch folder of this test process: the quantized model and the
// platform files.
class DevicePrecisions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / fmt::format("hetsched_test_precisions_{}", getpid());
    fs::create_directories(dir_);
    QuantizeOptions options;
    options.n_random = 2;
    options.devices = "cpu:0";
    quantize_model("zoo:resnet18", (dir_ / "resnet18_int8.onnx").string(), options);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A CPU that computes in every format (first: the sequential plan's
  // device) and an accelerator of every op in `precisions` only.
  static Platform platform(const std::string& precisions, const std::string& int8_rate = "") {
    std::string file = (dir_ / fmt::format("platform_{}.json", counter_++)).string();
    std::ofstream(file) << fmt::format(R"({{
      "name": "int8-npu",
      "devices": [
        {{"name": "cpu", "kind": "cpu", "peak_gflops": 50, "bandwidth_gbps": 20, "launch_overhead_us": 2}},
        {{"name": "npu", "kind": "npu", "peak_gflops": 1000, "bandwidth_gbps": 40, "launch_overhead_us": 5,
          "precisions": [{}]{}}}
      ]
    }})",
                                       precisions, int8_rate.empty() ? "" : ", \"int8_peak_gops\": " + int8_rate);
    return make_platform("", file);
  }

  static Graph quantized() { return load_model((dir_ / "resnet18_int8.onnx").string()); }

  static inline fs::path dir_;
  static inline int counter_ = 0;
};

const std::vector<std::string> kSchedulers = {"heft", "peft", "partition-tuner", "duet", "type-based",
                                              "round-robin", "random", "auto"};

TEST_F(DevicePrecisions, NodesSayWhatTheyComputeIn) {
  Graph g = quantized();
  std::map<std::string, std::set<std::string>> by_op;
  for (const Node& n : g.nodes) by_op[n.op_type].insert(n.cost.precision);
  EXPECT_EQ(by_op["QLinearConv"], std::set<std::string>{"int8"});
  EXPECT_EQ(by_op["QuantizeLinear"], std::set<std::string>{"int8"});
  EXPECT_EQ(by_op["MaxPool"], std::set<std::string>{"int8"}) << "the pool runs on the 8-bit values";
  EXPECT_EQ(by_op["MatMulInteger"], std::set<std::string>{"int8"}) << "the classifier's Gemm, quantized";
  EXPECT_EQ(by_op["Add"], std::set<std::string>{"float32"});
  EXPECT_EQ(by_op["GlobalAveragePool"], std::set<std::string>{"float32"});
  Graph f = load_model("zoo:resnet18");
  for (const Node& n : f.nodes) EXPECT_EQ(n.cost.precision, "float32") << n.label();
}

TEST_F(DevicePrecisions, AnInt8DeviceTakesTheQuantizedWorkAndNoFloatWork) {
  Platform p = platform(R"("int8")", "4000");
  const PlatformDevice& npu = p.devices.at(p.find_device("emu:npu"));
  Graph g = quantized();
  Graph f = load_model("zoo:resnet18");
  for (const Node& n : f.nodes) {
    EXPECT_FALSE(npu.supports(n)) << n.label();
    EXPECT_EQ(npu.why_not(n), "it computes only in int8; the node computes in float32");
  }
  auto cost = make_roofline_cost_model(p);
  for (const std::string& scheduler : kSchedulers) {
    SCOPED_TRACE(scheduler);
    Plan plan = schedule(scheduler, g, p, *cost);
    int int8_convs_on_npu = 0;
    for (size_t id = 0; id < g.nodes.size(); ++id) {
      const Node& n = g.nodes[id];
      if (plan.devices[plan.placement[id].device] != "emu:npu") continue;
      // int8 work, or none (the Cast of an int32 product)
      EXPECT_TRUE(n.cost.precision == "int8" || n.cost.precision.empty()) << n.label() << " on emu:npu";
      int8_convs_on_npu += n.op_type == "QLinearConv";
    }
    if (scheduler != "random" && scheduler != "round-robin") {
      EXPECT_GT(int8_convs_on_npu, 0) << "80x the CPU's rate: its convolutions belong there";
    }
    Plan float_plan = schedule(scheduler, f, p, *cost);
    for (size_t id = 0; id < f.nodes.size(); ++id)
      EXPECT_EQ(float_plan.devices[float_plan.placement[id].device], "emu:cpu") << f.nodes[id].label();
  }
}

TEST_F(DevicePrecisions, AFloat16DeviceRunsFloat32Work) {
  Platform p = platform(R"("float16", "int8")");
  const PlatformDevice& npu = p.devices.at(p.find_device("emu:npu"));
  Graph f = load_model("zoo:resnet18");
  for (const Node& n : f.nodes) EXPECT_TRUE(npu.supports(n)) << n.label();
  Platform bf = platform(R"("bfloat16")");
  Graph g = quantized();
  const PlatformDevice& float_only = bf.devices.at(bf.find_device("emu:npu"));
  for (const Node& n : g.nodes)
    if (n.op_type == "QLinearConv")
      EXPECT_EQ(float_only.why_not(n), "it computes only in bfloat16; the node computes in int8");
}

TEST_F(DevicePrecisions, Int8WorkIsCostedAtTheInt8Rate) {
  Graph g = quantized();
  Platform fast = platform(R"("int8")", "8000"), same = platform(R"("int8")");
  auto fast_cost = make_roofline_cost_model(fast), same_cost = make_roofline_cost_model(same);
  const PlatformDevice& fast_npu = fast.devices[fast.find_device("emu:npu")];
  const PlatformDevice& same_npu = same.devices[same.find_device("emu:npu")];
  int compared = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "QLinearConv") continue;
    ASSERT_GT(n.cost.flops, 1e6) << n.label() << ": its multiply-adds count";
    std::vector<NodeId> launch = {static_cast<NodeId>(&n - g.nodes.data())};
    double at_8000 = fast_cost->launch(g, launch, fast_npu).us;
    double at_1000 = same_cost->launch(g, launch, same_npu).us;
    // 5 us of overhead each; compute-bound convolutions take 8x less beyond it.
    double compute = n.cost.flops / (1000 * 1e3);
    if (compute > 2 * n.cost.bytes_read / (40 * 1e3)) {
      EXPECT_NEAR(at_1000 - 5, compute, 1e-6 * compute) << n.label();
      EXPECT_NEAR(at_8000 - 5, std::max(compute / 8, (n.cost.bytes_read + n.cost.bytes_written) / (40 * 1e3)),
                  1e-6 * compute)
          << n.label();
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

TEST_F(DevicePrecisions, APlanOverTheInt8DeviceGivesTheSequentialOutputs) {
  Graph g = quantized();
  Platform p = platform(R"("int8")", "4000");
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(p);
  Plan plan = schedule("heft", g, p, *cost);
  std::set<int> used;
  for (const Placement& placement : plan.placement) used.insert(placement.device);
  ASSERT_EQ(used.size(), 2u);
  expect_plan_matches_sequential(g, plan, p, cost, "heft over cpu and an int8 npu");
}

}  // namespace
}  // namespace hetsched
