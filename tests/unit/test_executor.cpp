// The executor: any valid plan gives the sequential plan's outputs, on two
// CPU devices and on CPU + emulated devices; real runs overlap devices.
// Failures that cancel a run: test_fault_injection.cpp.
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "hetsched/device.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "hetsched/zoo.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "kernel_test_util.h"

namespace hetsched {
namespace {

using testing::expect_same_outputs;

namespace fs = std::filesystem;
using hetsched::testing::relative_error;

const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms";


std::string two_cpu_spec() {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) return "";
  return "cpu:" + std::to_string(cores[0]) + ",cpu:" + std::to_string(cores[1]);
}

class ExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_path_ = (fs::temp_directory_path() / ("hetsched-executor-test-" + std::to_string(::getpid()) + ".db")).string();
  }
  static void TearDownTestSuite() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db_path_ + suffix);
  }

  // The sequential plan's outputs on the first device.
  static TensorMap sequential_outputs(const Graph& graph, const Platform& platform, const TensorMap& inputs) {
    std::vector<LaunchAssignment> launches;
    for (auto& unit : fusion_units(graph)) launches.push_back({unit, 0, 0, "test"});
    Executor sequential(graph, build_plan(graph, platform, launches, "sequential"), platform, nullptr);
    return sequential.run(inputs);
  }

  static std::string db_path_;
};
std::string ExecutorTest::db_path_;

Graph load_test_model(const std::string& name) {
  LoadOptions options;
  if (name == "bert") options.zoo_params = {{"layers", "2"}, {"seq", "32"}};
  return load_model("zoo:" + name, options);
}

TEST_F(ExecutorTest, RandomPlansOnTwoCpuDevicesMatchSequentialOnEveryZooModel) {
  std::string spec = two_cpu_spec();
  if (spec.empty()) GTEST_SKIP() << "needs 2 usable cores";
  Platform platform = make_platform(spec, "");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  auto random = make_scheduler("random");
  for (const auto& model : zoo::zoo_models()) {
    Graph graph = load_test_model(model.name);
    Session inputs_from(graph, SessionOptions{"cpu:0", true});
    TensorMap inputs = inputs_from.random_inputs(7);
    TensorMap want = sequential_outputs(graph, platform, inputs);
    for (uint64_t seed : {1, 2}) {
      ScheduleOptions options;
      options.seed = seed;
      Plan plan = random->schedule(graph, platform, *cost, options);
      Executor executor(graph, plan, platform, cost);
      std::string what = model.name + " random seed " + std::to_string(seed);
      expect_same_outputs(executor.run(inputs), want, what);
      expect_same_outputs(executor.run(inputs), want, what + " (second run)");
    }
  }
}

// Executors share one worker per core set (CpuDevice::shared). Two runs on
// the same workers at once, each with lanes waiting on the other's device,
// must neither deadlock nor mix their values: each run holds its workers
// (lock_exclusive) while it runs.
TEST_F(ExecutorTest, ConcurrentRunsOnSharedWorkersMatchSequential) {
  std::string spec = two_cpu_spec();
  if (spec.empty()) GTEST_SKIP() << "needs 2 usable cores";
  Platform platform = make_platform(spec, "");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  Graph graph = load_test_model("googlenet");
  TensorMap inputs = random_inputs(graph, 5);
  TensorMap want = sequential_outputs(graph, platform, inputs);
  std::vector<std::unique_ptr<Executor>> executors;
  for (uint64_t seed : {1, 2, 3}) {
    ScheduleOptions options;
    options.seed = seed;
    Plan plan = make_scheduler("random")->schedule(graph, platform, *cost, options);
    executors.push_back(std::make_unique<Executor>(graph, plan, platform, cost));
  }
  std::vector<std::vector<TensorMap>> got(executors.size());
  std::vector<std::thread> threads;
  for (size_t e = 0; e < executors.size(); ++e)
    threads.emplace_back([&, e] {
      for (int run = 0; run < 5; ++run) got[e].push_back(executors[e]->run(inputs));
    });
  for (auto& t : threads) t.join();
  for (size_t e = 0; e < executors.size(); ++e)
    for (size_t run = 0; run < got[e].size(); ++run)
      expect_same_outputs(got[e][run], want, fmt::format("executor {} run {}", e, run));
}

TEST_F(ExecutorTest, RandomPlansWithEmulatedDevicesMatchSequential) {
  Platform platform = make_platform("cpu:0,emu:npu,emu:little", kPlatforms + "/phone-soc.json");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  auto random = make_scheduler("random");
  for (const std::string name : {"squeezenet1_0", "googlenet"}) {
    Graph graph = load_test_model(name);
    Session inputs_from(graph, SessionOptions{"cpu:0", true});
    TensorMap inputs = inputs_from.random_inputs(3);
    TensorMap want = sequential_outputs(graph, platform, inputs);
    for (uint64_t seed : {11, 12}) {
      ScheduleOptions options;
      options.seed = seed;
      Executor executor(graph, random->schedule(graph, platform, *cost, options), platform, cost);
      EXPECT_TRUE(executor.summary().emulated);
      expect_same_outputs(executor.run(inputs), want, name + " emulated seed " + std::to_string(seed));
    }
  }
}

TEST_F(ExecutorTest, CopiesIntoAnotherMemorySpaceKeepOutputs) {
  // The DSA has its own memory: every value it reads or produces crosses a link.
  Platform platform = make_platform("cpu:0,emu:dsa", kPlatforms + "/cpu-dsa.json");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  Graph graph = load_test_model("squeezenet1_0");
  Session inputs_from(graph, SessionOptions{"cpu:0", true});
  TensorMap inputs = inputs_from.random_inputs(5);
  TensorMap want = sequential_outputs(graph, platform, inputs);
  std::vector<LaunchAssignment> launches;
  int i = 0;
  for (auto& unit : fusion_units(graph)) {
    int device = (i++ % 2 == 1 && platform.devices[1].supports(graph.nodes[unit[0]])) ? 1 : 0;
    launches.push_back({unit, device, 0, "alternate"});
  }
  Plan plan = build_plan(graph, platform, launches, "alternate");
  ASSERT_GT(plan.n_copies(), 0);
  Executor executor(graph, plan, platform, cost);
  expect_same_outputs(executor.run(inputs), want, "squeezenet over cpu + dsa");
}

// Which input of a Concat the unit's result flows into (following first
// consumers), or -1: googlenet's inception branches.
int concat_branch(const Graph& graph, const std::vector<NodeId>& unit) {
  ValueId v = graph.nodes[unit.back()].outputs[0];
  for (int hop = 0; hop < 8; ++hop) {
    if (graph.values[v].consumers.empty()) return -1;
    const Node& next = graph.nodes[graph.values[v].consumers[0]];
    if (next.op_type == "Concat") {
      for (size_t i = 0; i < next.inputs.size(); ++i)
        if (next.inputs[i] == v) return static_cast<int>(i);
    }
    v = next.outputs[0];
  }
  return -1;
}

TEST_F(ExecutorTest, TraceShowsTwoDevicesBusyAtOnce) {
  std::string spec = two_cpu_spec();
  if (spec.empty()) GTEST_SKIP() << "needs 2 usable cores";
  // googlenet's inception blocks: the two 3x3 branches on the second device.
  Graph graph = load_test_model("googlenet");
  Platform platform = make_platform(spec, "");
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(graph)) {
    int branch = concat_branch(graph, unit);
    launches.push_back({unit, branch == 1 || branch == 2 ? 1 : 0, 0, "by branch"});
  }
  Plan plan = build_plan(graph, platform, launches, "by-branch");
  std::string path = (fs::temp_directory_path() / ("hetsched-branch-" + std::to_string(::getpid()) + ".json")).string();
  write_plan_file(plan, graph, path);
  SessionOptions options;
  options.devices = spec;
  options.plan = path;
  Session session(graph, options);
  fs::remove(path);
  ASSERT_NE(session.plan(), nullptr);
  EXPECT_EQ(session.summary().n_lanes, 2);
  TensorMap inputs = session.random_inputs(2);
  // Any clear overlap proves the lanes run concurrently; on a shared 2-core
  // machine a busy neighbour can serialise a run, so a few tries are allowed.
  double best_overlap = 0;
  for (int attempt = 0; attempt < 10 && best_overlap <= 0.05; ++attempt) {
    Trace trace;
    session.run(inputs, &trace);
    EXPECT_EQ(trace.kind, "measured");
    ASSERT_EQ(trace.devices.size(), 2u);
    double overlap = 0;
    for (const auto& a : trace.events)
      for (const auto& b : trace.events)
        if (a.category == "launch" && b.category == "launch" && a.device == 0 && b.device == 1)
          overlap += std::max(0.0, std::min(a.start_us + a.duration_us, b.start_us + b.duration_us) -
                                       std::max(a.start_us, b.start_us));
    best_overlap = std::max(best_overlap, overlap / trace.makespan_us);
  }
  EXPECT_GT(best_overlap, 0.05) << "launches on the two devices hardly overlapped";
}

// The union of the first two usable cores over the two one-core devices
// ("cpu:0,cpu:1,cpu:0-1"), or "" without two consecutive cores.
std::string wide_and_narrow_spec() {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2 || cores[1] != cores[0] + 1) return "";
  return fmt::format("cpu:{},cpu:{},cpu:{}-{}", cores[0], cores[1], cores[0], cores[1]);
}

// Measured time launches on overlapping devices ran at once, in a trace.
double overlapping_launch_us(const Trace& trace, const Platform& platform) {
  double overlap = 0;
  for (const auto& a : trace.events)
    for (const auto& b : trace.events) {
      if (a.category != "launch" || b.category != "launch" || a.device >= b.device) continue;
      if (!platform.overlapping(platform.find_device(trace.devices[a.device]),
                                platform.find_device(trace.devices[b.device])))
        continue;
      overlap += std::max(0.0, std::min(a.start_us + a.duration_us, b.start_us + b.duration_us) -
                                   std::max(a.start_us, b.start_us));
    }
  return overlap;
}

TEST_F(ExecutorTest, WideAndNarrowLaunchesMatchSequentialAndNeverOverlap) {
  std::string spec = wide_and_narrow_spec();
  if (spec.empty()) GTEST_SKIP() << "needs two consecutive usable cores";
  Platform platform = make_platform(spec, "");
  ASSERT_TRUE(platform.has_overlaps());
  auto cost = open_cost_model(platform, db_path_, nullptr);
  for (const std::string name : {"googlenet", "squeezenet1_0"}) {
    Graph graph = load_test_model(name);
    Session inputs_from(graph, SessionOptions{"cpu:0", true});
    TensorMap inputs = inputs_from.random_inputs(9);
    TensorMap want = sequential_outputs(graph, platform, inputs);
    // Serial stretches on the union device (index 2), inception branches one
    // per core; and random placements over all three devices.
    std::vector<LaunchAssignment> by_branch;
    for (auto& unit : fusion_units(graph)) {
      int branch = concat_branch(graph, unit);
      by_branch.push_back({unit, branch < 0 ? 2 : branch % 2, 0, "by branch"});
    }
    std::vector<Plan> plans = {build_plan(graph, platform, by_branch, "wide-by-branch")};
    for (uint64_t seed : {3, 4}) {
      ScheduleOptions options;
      options.seed = seed;
      plans.push_back(make_scheduler("random")->schedule(graph, platform, *cost, options));
    }
    for (const Plan& plan : plans) {
      std::string what = name + " " + plan.scheduler;
      std::set<int> used;
      for (const Placement& p : plan.placement) used.insert(p.device);
      EXPECT_EQ(used.size(), 3u) << what;
      Executor executor(graph, plan, platform, cost);
      RunTimeline timeline;
      expect_same_outputs(executor.run(inputs, &timeline), want, what);
      Trace trace = timeline_trace(timeline, executor.plan(), graph, platform);
      EXPECT_EQ(overlapping_launch_us(trace, platform), 0) << what << ": launches sharing cores ran at once";
      expect_same_outputs(executor.run(inputs), want, what + " (second run)");
    }
  }
}

TEST_F(ExecutorTest, RefusesAnInvalidPlan) {
  Platform platform = make_platform("cpu:0", "");
  Graph graph = load_test_model("squeezenet1_0");
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(graph)) launches.push_back({unit, 0, 0, "test"});
  Plan plan = build_plan(graph, platform, launches, "sequential");
  plan.lanes[0].steps.pop_back();  // the last node is never launched
  try {
    Executor executor(graph, plan, platform, nullptr);
    ADD_FAILURE() << "an incomplete plan was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
  }
}

TEST_F(ExecutorTest, SessionRunsAPlanFile) {
  std::string spec = two_cpu_spec();
  if (spec.empty()) GTEST_SKIP() << "needs 2 usable cores";
  Graph graph = load_test_model("resnet18");
  Platform platform = make_platform(spec, "");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  Plan plan = make_scheduler("round-robin")->schedule(graph, platform, *cost, {});
  std::string path = (fs::temp_directory_path() / ("hetsched-plan-" + std::to_string(::getpid()) + ".json")).string();
  write_plan_file(plan, graph, path);
  SessionOptions options;
  options.devices = spec;
  options.plan = path;
  Session session(graph, options);
  fs::remove(path);
  EXPECT_EQ(session.summary().scheduler, "round-robin");
  Session sequential(graph, SessionOptions{"cpu:0", false});
  TensorMap inputs = sequential.random_inputs(4);
  expect_same_outputs(session.run(inputs), sequential.run(inputs), "resnet18 from a plan file");
}

}  // namespace
}  // namespace hetsched
