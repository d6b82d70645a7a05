// Choosing a plan by measurement (hetsched/choose.h): on emulated devices,
// whose steps are held to their modeled times, so that which candidate is
// faster is known in advance.
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "plan_test_util.h"
#include "hetsched/compare.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"
#include "hetsched/choose.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "plan/plan_builder.h"

namespace hetsched {
namespace {

struct Fixture {
  Graph graph = testing::relu_chain(3, 1 << 16);  // 512 KiB through each Relu
  std::shared_ptr<const Platform> platform;
  std::shared_ptr<const CostModel> cost;

  Fixture() {
    Platform p;
    p.name = "two";
    // About 5 ms and 20 ms per Relu.
    p.devices = {testing::emulated_device("fast", 0.1), testing::emulated_device("slow", 0.025)};
    platform = std::make_shared<const Platform>(p);
    cost = make_roofline_cost_model(*platform);
  }

  PlanCandidate on(const std::string& device, bool one_device) const {
    auto plan = one_device_plan(graph, *platform, platform->find_device(device), "test", "test");
    return {device, std::make_shared<const Plan>(std::move(plan)), platform, cost, one_device};
  }
};

ChoiceOptions quick() {
  ChoiceOptions o;
  o.warmups = 1;
  o.rounds = 3;
  o.max_rounds = 9;
  return o;
}

TEST(ChooseByMeasurement, KeepsAPlanClearlyFasterThanTheBestDeviceAlone) {
  Fixture f;
  std::vector<PlanCandidate> candidates{f.on("emu:fast", false), f.on("emu:slow", true)};
  MeasuredChoice choice = choose_by_measurement(f.graph, candidates, random_inputs(f.graph, 1), quick());
  EXPECT_EQ(choice.chosen, 0u) << choice.reason;
  EXPECT_LT(choice.ratio, 0.5) << choice.reason;
  EXPECT_NE(choice.reason.find("keeping emu:fast"), std::string::npos) << choice.reason;
  ASSERT_EQ(choice.measured.size(), 2u);
  EXPECT_LT(choice.measured[0].p50_ms, choice.measured[1].p50_ms);
}

TEST(ChooseByMeasurement, RunsTheDeviceAloneWhenThePlanIsSlower) {
  Fixture f;
  std::vector<PlanCandidate> candidates{f.on("emu:slow", false), f.on("emu:fast", true)};
  MeasuredChoice choice = choose_by_measurement(f.graph, candidates, random_inputs(f.graph, 1), quick());
  EXPECT_EQ(choice.chosen, 1u) << choice.reason;
  EXPECT_NE(choice.reason.find("running emu:fast"), std::string::npos) << choice.reason;
}

// A plan within the noise of the device alone is not kept: it must be
// min_gain faster by the median ratio, and faster in two rounds of three.
TEST(ChooseByMeasurement, APlanWithinTheNoiseLosesToTheDeviceAlone) {
  EXPECT_TRUE(plan_beats_baseline({0.95, 0.96, 0.97, 0.94, 1.01, 0.95}, 0.01));
  EXPECT_FALSE(plan_beats_baseline({1.0, 0.995, 1.003, 0.998, 1.001}, 0.01)) << "a tie";
  EXPECT_FALSE(plan_beats_baseline({0.9, 0.9, 0.9, 0.9, 0.9, 1.2, 1.2, 1.2, 1.2}, 0.01)) << "faster in 5 of 9 rounds";
  EXPECT_FALSE(plan_beats_baseline({}, 0.01));
}

TEST(ChooseByMeasurement, NeedsADeviceAloneAmongTheCandidates) {
  Fixture f;
  std::vector<PlanCandidate> candidates{f.on("emu:fast", false)};
  try {
    choose_by_measurement(f.graph, candidates, random_inputs(f.graph, 1), quick());
    ADD_FAILURE() << "chose without a baseline";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
  }
}

TEST(PlatformWithCpuUnion, AddsOneDeviceOnAllTheCoresOfTheGroups) {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  Platform narrow = make_platform(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]), "");
  Platform wide = platform_with_cpu_union(narrow);
  ASSERT_EQ(wide.devices.size(), 3u);
  int all = wide.find_device(cpu_union_device(narrow));
  ASSERT_GE(all, 0);
  EXPECT_TRUE(wide.overlapping(all, wide.find_device(narrow.devices[0].name)));
  // Nothing to add: one group, or the union already there.
  EXPECT_EQ(platform_with_cpu_union(wide).devices.size(), 3u);
  EXPECT_EQ(platform_with_cpu_union(make_platform(narrow.devices[0].name, "")).devices.size(), 1u);
}

// compare plans auto on the platform with the union device added, as a
// Session does, and the other schedulers on the platform compared.
TEST(PlatformWithCpuUnion, CompareGivesAutoTheUnionDevice) {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  auto dir = testing::temp_dir("compare_union");
  std::string db = (dir / "p.db").string();
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform narrow = make_platform(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]), "");
  auto cost = open_cost_model(narrow, db, nullptr);
  CompareOptions options;
  options.schedulers = {"auto", "heft"};
  Comparison c = compare_schedulers(graph, narrow, cost, db, options);
  ASSERT_EQ(c.schedulers.size(), 2u);
  const SchedulerOutcome& automatic = c.schedulers[0];
  ASSERT_TRUE(automatic.plan) << automatic.error;
  EXPECT_GE(automatic.platform->find_device(cpu_union_device(narrow)), 0);
  EXPECT_EQ(automatic.platform->devices.size(), 3u);
  EXPECT_EQ(c.schedulers[1].platform->devices.size(), 2u) << "heft";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetsched
