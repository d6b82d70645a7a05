// Cost models: roofline numbers, launch boundaries, transfers, demand, and
// the combined model's preference for measurements.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "onnx_model_util.h"
#include "profile/profile_db.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;



// x[1,3,8,8] -> Conv(w[4,3,3,3], pads 1) -> c[1,4,8,8] -> Relu -> y
//   Conv: 2 * 256 outputs * 3 * 9 = 13824 FLOPs; reads 768 + 432 B, writes 1024 B.
//   Relu: 256 FLOPs; reads and writes 1024 B.
Graph conv_relu_graph() {
  Graph g;
  ValueId x = testing::add_float_value(g, "x", {1, 3, 8, 8});
  ValueId w = testing::add_float_value(g, "w", {4, 3, 3, 3});
  g.values[w].initializer = Tensor(DType::kFloat32, {4, 3, 3, 3});
  ValueId c = testing::add_float_value(g, "c", {1, 4, 8, 8});
  ValueId y = testing::add_float_value(g, "y", {1, 4, 8, 8});
  testing::add_op(g, "Conv", "conv", {x, w}, {c});
  testing::add_op(g, "Relu", "relu", {c}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

PlatformDevice device(const std::string& name, double gflops, double gbps, double overhead_us = 0) {
  PlatformDevice d;
  d.name = name;
  d.peak_gflops = gflops;
  d.bandwidth_gbps = gbps;
  d.launch_overhead_us = overhead_us;
  d.signature = "sig-" + name;
  return d;
}

Platform two_space_platform() {
  Platform p;
  p.name = "test";
  p.devices.push_back(device("cpu:0", 1, 1));
  p.devices.push_back(device("cpu:1", 1, 1));
  PlatformDevice gpu = device("emu:gpu", 10, 10);
  gpu.memory_space = "gpu";
  p.devices.push_back(gpu);
  PlatformDevice dsa = device("emu:dsa", 10, 10);
  dsa.memory_space = "dsa";
  p.devices.push_back(dsa);
  Link to_gpu;
  to_gpu.from_space = kHostMemory;
  to_gpu.to_space = "gpu";
  to_gpu.latency_us = 5;
  to_gpu.bandwidth_gbps = 2;  // 2000 bytes per microsecond
  p.links.push_back(to_gpu);
  return p;
}

TEST(CostModel, SourceNames) {
  EXPECT_STREQ(cost_source_name(CostSource::kMeasured), "measured");
  EXPECT_STREQ(cost_source_name(CostSource::kMeasuredSum), "measured-sum");
  EXPECT_STREQ(cost_source_name(CostSource::kRoofline), "roofline");
  EXPECT_STREQ(cost_source_name(CostSource::kLink), "link");
  EXPECT_STREQ(cost_source_name(CostSource::kFree), "free");
}

TEST(CostModel, RooflineConvComputeAndMemoryBound) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv");
  ASSERT_DOUBLE_EQ(g.nodes[conv].cost.flops, 13824);
  ASSERT_DOUBLE_EQ(g.nodes[conv].cost.bytes_read + g.nodes[conv].cost.bytes_written, 2224);
  Platform p;
  auto model = make_roofline_cost_model(p);

  // 1 GFLOP/s = 1000 FLOP/us: 13.824 us of compute against 2.224 us of traffic at 1 GB/s.
  Estimate compute_bound = model->launch(g, {conv}, device("a", 1, 1, 5));
  EXPECT_NEAR(compute_bound.us, 5 + 13.824, 1e-9);
  EXPECT_EQ(compute_bound.source, CostSource::kRoofline);

  // At 0.1 GB/s the traffic takes 22.24 us and dominates.
  Estimate memory_bound = model->launch(g, {conv}, device("b", 1, 0.1, 5));
  EXPECT_NEAR(memory_bound.us, 5 + 22.24, 1e-9);
}

TEST(CostModel, FusedLaunchCountsOnlyBoundaryBytes) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv"), relu = g.find_node("relu");
  Platform p;
  auto model = make_roofline_cost_model(p);
  PlatformDevice slow_memory = device("m", 1000, 0.001);  // 1 byte per microsecond
  // x (768) + w (432) in, y (1024) out; c stays inside the launch.
  EXPECT_NEAR(model->launch(g, {conv, relu}, slow_memory).us, 2224, 1e-6);
  // Alone, each node moves c once more: 2224 + 2048.
  EXPECT_NEAR(model->launch(g, {conv}, slow_memory).us + model->launch(g, {relu}, slow_memory).us, 4272, 1e-6);
}

// x[64,256] -> Relu -> h -> MatMul(w[256,256]) -> y: two kernels (a Relu
// before a MatMul does not fuse), the Relu memory-bound, the MatMul
// compute-bound.
Graph relu_then_matmul() {
  Graph g;
  ValueId x = testing::add_float_value(g, "x", {64, 256});
  ValueId h = testing::add_float_value(g, "h", {64, 256});
  ValueId w = testing::add_float_value(g, "w", {256, 256});
  g.values[w].initializer = Tensor(DType::kFloat32, {256, 256});
  ValueId y = testing::add_float_value(g, "y", {64, 256});
  testing::add_op(g, "Relu", "relu", {x}, {h});
  testing::add_op(g, "MatMul", "matmul", {h, w}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

TEST(CostModel, ALaunchsKernelsRunOneAfterAnother) {
  Graph g = relu_then_matmul();
  NodeId relu = g.find_node("relu"), matmul = g.find_node("matmul");
  Platform p;
  auto model = make_roofline_cost_model(p);
  PlatformDevice d = device("d", 10, 1, 5);
  double relu_us = model->launch(g, {relu}, d).us, matmul_us = model->launch(g, {matmul}, d).us;
  const NodeCost &r = g.nodes[relu].cost, &m = g.nodes[matmul].cost;
  ASSERT_GT((r.bytes_read + r.bytes_written) / 1e3, r.flops / 1e4);  // the Relu memory-bound
  ASSERT_GT(m.flops / 1e4, (m.bytes_read + m.bytes_written) / 1e3);  // the MatMul compute-bound
  // Without on-chip memory h goes through memory: each kernel moves what
  // it moves alone, and one's arithmetic does not hide the other's traffic.
  double both_us = model->launch(g, {relu, matmul}, d).us;
  EXPECT_NEAR(both_us, relu_us + matmul_us, 1e-9 * both_us);
  double overlapped_us = 2 * 5 + std::max((r.flops + m.flops) / 1e4,
                                          (r.bytes_read + r.bytes_written + m.bytes_read + m.bytes_written) / 1e3);
  // (as if the Relu's traffic hid under the MatMul's arithmetic)
  EXPECT_GT(both_us - overlapped_us, 0.9 * (r.bytes_read + r.bytes_written) / 1e3);
  // A real core group whose caches hold h: neither kernel moves it.
  PlatformDevice cached = d;
  cached.kind = DeviceKind::kCpu;
  cached.onchip_bytes = 1 << 20;
  double h_us = g.values[g.nodes[relu].outputs[0]].nbytes() / 1e3;
  EXPECT_NEAR(model->launch(g, {relu, matmul}, cached).us, relu_us - h_us + matmul_us, 1e-9 * both_us);
  // An emulated accelerator holding h on chip runs both as one kernel.
  PlatformDevice onchip = d;
  onchip.kind = DeviceKind::kEmulated;
  onchip.onchip_bytes = 1 << 20;
  EXPECT_NEAR(model->launch(g, {relu, matmul}, onchip).us,
              5 + std::max((r.flops + m.flops) / 1e4, launch_bytes(g, {relu, matmul}) / 1e3), 1e-9 * both_us);
}

TEST(CostModel, UnsupportedNodeIsInfinite) {
  Graph g = conv_relu_graph();
  Platform p;
  auto model = make_roofline_cost_model(p);
  PlatformDevice npu = device("emu:npu", 1, 1);
  npu.ops = {"Relu"};
  EXPECT_TRUE(std::isinf(model->launch(g, {g.find_node("conv")}, npu).us));
  EXPECT_TRUE(std::isinf(model->launch(g, {g.find_node("conv"), g.find_node("relu")}, npu).us));
  EXPECT_TRUE(std::isfinite(model->launch(g, {g.find_node("relu")}, npu).us));
}

TEST(CostModel, DeviceWithoutPeaksIsAnError) {
  Graph g = conv_relu_graph();
  Platform p;
  auto model = make_roofline_cost_model(p);
  try {
    model->launch(g, {g.find_node("conv")}, device("cpu:3", 0, 0));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_THAT(e.what(), HasSubstr("device cpu:3 has no peaks: calibrate first"));
  }
}

TEST(CostModel, Transfers) {
  Platform p = two_space_platform();
  auto model = make_roofline_cost_model(p);
  const auto& cpu0 = p.devices[0];
  const auto& cpu1 = p.devices[1];
  const auto& gpu = p.devices[2];
  const auto& dsa = p.devices[3];

  Estimate same_device = model->transfer(1e6, cpu0, cpu0);
  EXPECT_EQ(same_device.us, 0);
  EXPECT_EQ(same_device.source, CostSource::kFree);

  Estimate over_link = model->transfer(4000, cpu0, gpu);
  EXPECT_NEAR(over_link.us, 5 + 2, 1e-12);
  EXPECT_EQ(over_link.source, CostSource::kLink);

  EXPECT_TRUE(std::isinf(model->transfer(4000, gpu, cpu0).us));  // no link back in this platform
  EXPECT_TRUE(std::isinf(model->transfer(4000, cpu0, dsa).us));

  // Same space, two devices, nothing measured: free.
  Estimate handover = model->transfer(4000, cpu0, cpu1);
  EXPECT_EQ(handover.us, 0);
  EXPECT_EQ(handover.source, CostSource::kFree);
}

TEST(CostModel, DemandIsAFractionOfThePeaks) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv");
  Platform p;
  auto model = make_roofline_cost_model(p);
  PlatformDevice d = device("a", 1, 1);
  // Over 27.648 us: half the compute peak, 2224 / 27648 of the bandwidth.
  ResourceDemand half = model->demand(g, {conv}, d, 27.648);
  EXPECT_NEAR(half.compute, 0.5, 1e-9);
  EXPECT_NEAR(half.memory, 2224.0 / 27648.0, 1e-9);
  // Faster than the peaks allow: clamped to 1.
  ResourceDemand clamped = model->demand(g, {conv}, d, 1);
  EXPECT_DOUBLE_EQ(clamped.compute, 1);
  EXPECT_DOUBLE_EQ(clamped.memory, 1);
  ResourceDemand none = model->demand(g, {conv}, d, 0);
  EXPECT_EQ(none.compute, 0);
  EXPECT_EQ(none.memory, 0);
}

class CostModelCombined : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir(std::string("cost_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_ = std::make_shared<ProfileDB>((dir_ / "profile.db").string());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void put(const PlatformDevice& d, const Graph& g, const std::vector<NodeId>& nodes, double us) {
    db_->put(d.signature, {{op_signature(g, nodes), launch_description(g, nodes), {us, 0.1, 10}}});
  }
  std::filesystem::path dir_;
  std::shared_ptr<ProfileDB> db_;
};

TEST_F(CostModelCombined, PrefersTheMeasurement) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv");
  Platform p = two_space_platform();
  const PlatformDevice& cpu0 = p.devices[0];
  auto model = make_combined_cost_model(p, db_);

  // Nothing stored: the roofline.
  Estimate guess = model->launch(g, {conv}, cpu0);
  EXPECT_EQ(guess.source, CostSource::kRoofline);
  EXPECT_NEAR(guess.us, 13.824, 1e-9);

  put(cpu0, g, {conv}, 42);
  auto fresh = make_combined_cost_model(p, db_);
  Estimate measured = fresh->launch(g, {conv}, cpu0);
  EXPECT_EQ(measured.source, CostSource::kMeasured);
  EXPECT_DOUBLE_EQ(measured.us, 42);
  // Another device's measurement does not count.
  EXPECT_EQ(fresh->launch(g, {conv}, p.devices[1]).source, CostSource::kRoofline);
}

TEST_F(CostModelCombined, SumsPartsOfAGroupNeverRunAsOne) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv"), relu = g.find_node("relu");
  Platform p = two_space_platform();
  const PlatformDevice& cpu0 = p.devices[0];

  put(cpu0, g, {conv}, 40);
  // One part measured only: the roofline for the group.
  EXPECT_EQ(make_combined_cost_model(p, db_)->launch(g, {conv, relu}, cpu0).source, CostSource::kRoofline);

  put(cpu0, g, {relu}, 2);
  Estimate sum = make_combined_cost_model(p, db_)->launch(g, {conv, relu}, cpu0);
  EXPECT_EQ(sum.source, CostSource::kMeasuredSum);
  EXPECT_DOUBLE_EQ(sum.us, 42);

  put(cpu0, g, {conv, relu}, 35);
  Estimate whole = make_combined_cost_model(p, db_)->launch(g, {conv, relu}, cpu0);
  EXPECT_EQ(whole.source, CostSource::kMeasured);
  EXPECT_DOUBLE_EQ(whole.us, 35);
}

TEST_F(CostModelCombined, CorunTimeIsTheStoredCorunEntry) {
  Graph g = conv_relu_graph();
  NodeId conv = g.find_node("conv"), relu = g.find_node("relu");
  Platform p = two_space_platform();
  const PlatformDevice& cpu0 = p.devices[0];
  EXPECT_FALSE(make_roofline_cost_model(p)->corun_us(g, {conv, relu}, cpu0).has_value());

  put(cpu0, g, {conv, relu}, 35);
  EXPECT_FALSE(make_combined_cost_model(p, db_)->corun_us(g, {conv, relu}, cpu0).has_value());

  db_->put(cpu0.signature, {{op_signature(g, {conv, relu}) + "|corun", "Conv+Relu (co-run)", {44, 0.5, 10}}});
  auto model = make_combined_cost_model(p, db_);
  std::optional<double> corun = model->corun_us(g, {conv, relu}, cpu0);
  ASSERT_TRUE(corun.has_value());
  EXPECT_DOUBLE_EQ(*corun, 44);
  // The time alone is unchanged; another launch or device has none.
  EXPECT_DOUBLE_EQ(model->launch(g, {conv, relu}, cpu0).us, 35);
  EXPECT_FALSE(model->corun_us(g, {conv}, cpu0).has_value());
  EXPECT_FALSE(model->corun_us(g, {conv, relu}, p.devices[1]).has_value());
}

TEST_F(CostModelCombined, MeasuredHandOverWithinOneSpace) {
  Platform p = two_space_platform();
  const PlatformDevice& cpu0 = p.devices[0];
  const PlatformDevice& cpu1 = p.devices[1];
  db_->put_link(cpu0.signature, cpu1.signature, {3, 1});  // 3 us + 1000 bytes per microsecond
  auto model = make_combined_cost_model(p, db_);

  Estimate handover = model->transfer(5000, cpu0, cpu1);
  EXPECT_EQ(handover.source, CostSource::kLink);
  EXPECT_NEAR(handover.us, 8, 1e-12);
  // The reverse direction was not measured: free.
  EXPECT_EQ(model->transfer(5000, cpu1, cpu0).source, CostSource::kFree);
  // Links between spaces still come from the platform.
  EXPECT_NEAR(model->transfer(4000, cpu0, p.devices[2]).us, 7, 1e-12);
  EXPECT_EQ(model->transfer(4000, cpu0, cpu0).source, CostSource::kFree);
}

}  // namespace
}  // namespace hetsched
